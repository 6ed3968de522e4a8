"""The package version, imported by modules that stamp it on what they write (must match pyproject.toml's ``version``)."""

__version__ = "0.1.0"
