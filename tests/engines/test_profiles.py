"""Engine profiles (data/engines.yaml) name only engines that exist."""

from infer_advisor.engines.profiles import engine_profiles


def test_every_alternative_is_another_known_engine():
    profiles = engine_profiles()
    for name, profile in profiles.items():
        if profile.alternative is not None:
            assert profile.alternative in profiles and profile.alternative != name, name
