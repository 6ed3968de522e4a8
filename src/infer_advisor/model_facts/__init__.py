"""Model facts: what the rest of the pipeline may know about a model, from a local folder, the Hub or the catalog.

    >>> from infer_advisor.model_facts import resolve_model
    >>> facts = resolve_model("llama-2-7b", source="catalog")
    >>> facts.name, facts.num_parameters, facts.kv_cache_bytes_per_token(2)
    ('meta-llama/Llama-2-7b-hf', 6738415616, 524288)

``resolve_model`` is the entry point; ``facts_from_config`` is the one place a config.json becomes
:class:`ModelFacts` (use it for a config you already hold).
"""

from __future__ import annotations

from .catalog import catalog_names
from .facts import ModelFacts, ParamBreakdown, SafetensorsSummary
from .resolve import resolve_model

__all__ = ["resolve_model", "ModelFacts", "ParamBreakdown", "SafetensorsSummary", "catalog_names", "facts_from_config"]


def __getattr__(name: str):
    if name == "facts_from_config":  # the architecture reader, imported when a config is read (not for a kept one)
        from .build import facts_from_config

        return facts_from_config
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
