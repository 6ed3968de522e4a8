"""Engine profiles (data/engines.yaml) name only engines that exist."""

from infer_advisor.engines.profiles import engine_profiles


def test_every_alternative_is_another_known_engine():
    profiles = engine_profiles()
    for name, profile in profiles.items():
        if profile.alternative is not None:
            assert profile.alternative in profiles and profile.alternative != name, name


def test_the_engine_choices_users_can_name_are_the_engine_profiles():
    """`--engine` (request.EngineChoice, published in the JSON schema) lists exactly the engines of data/engines.yaml:
    a new engine is one profile plus this one literal, and forgetting either fails here."""
    from typing import get_args

    from infer_advisor.request import EngineChoice

    assert set(get_args(EngineChoice)) == {"auto", *engine_profiles()}
