"""Several engines named in words and no engine's line (docfix18, retrospective: batch 15's sf294, an SGLang question
that compares with vLLM, answered with vLLM's flag because vLLM's name is checked first).

    >>> engines_in_words("on vLLM I can set 0.9 ... in sglang I got out of memory")
    ['vllm', 'sglang']

docfix17's rule is that an engine's own log lines decide the engine over words (engines/startup_log.detect_engine). Where
there is no such line and the text names two or more engines, which one printed the error is not in the text: the
doctor reads it as not named (each edit names the engine whose flag it is, as for a bare torch out-of-memory) and puts
first one line with each named engine's own first try, so no engine's flag goes first by the order of a check.
"""

from __future__ import annotations

import re

from .edits import Edit, undecided_edit

_WORDS = (("vllm", r"\bvllm\b"), ("sglang", r"\bsglang\b"), ("tgi", r"text-generation-inference|\btgi\b"),
          ("llama.cpp", r"llama\.cpp|\bollama\b|llama-server"))
_ANY = re.compile("|".join(p for _, p in _WORDS), re.I)
_LABEL = {"vllm": "vLLM", "sglang": "SGLang", "tgi": "TGI", "llama.cpp": "llama.cpp"}


def engines_in_words(text: str) -> list[str]:
    """The engines the text names in words, where it names two or more and none of their lines (nor their own
    identifiers) is there: with the names taken out, no engine is detected."""
    from ..engines.startup_log import detect_engine

    text = text[:2_000_000]
    named = [engine for engine, pattern in _WORDS if re.search(pattern, text, re.I)]
    return named if len(named) >= 2 and detect_engine(_ANY.sub(" ", text)) is None else []


def unnamed_source(named: list[str]) -> str:
    """Diagnosis.engine_source where no line names the engine."""
    what = f"the text names {' and '.join(_LABEL[e] for e in named)}" if named else "a bare torch out-of-memory: vLLM, SGLang or TGI"
    return f"not named by any line ({what}); each edit names the engine whose flag it is"


def named_engines_first(edits: list[Edit], named: list[str]) -> list[Edit]:
    """One line with each named engine's first try (from the per-engine edits), before them."""
    firsts = [next((e.change for e in edits if e.change.endswith(f"({_LABEL[n]})")), None) for n in named]
    firsts = [f for f in firsts if f]
    if len(firsts) < 2:
        return edits
    return [undecided_edit(f"by the engine that printed the error: {'; '.join(firsts)}", [], "as each engine's own edit", 0.05,
                           basis="not decided: the text names several engines and no line of any engine's log says which one "
                           "failed; each engine's first try in its own flag")] + edits


def unnamed_edits(diag, text: str, first_try) -> list[Edit]:
    """No line names the engine: each engine's edits in its own flag (hardware_rank.for_each_engine), the CUDA runtime's
    bare string's one remedy first (docfix15, sf221), or one line with each named engine's first try (sf294)."""
    from .hardware_rank import for_each_engine, unnamed_engine_first
    from .sglang_fraction import pool_failed_up

    diag.edits = for_each_engine(diag.edits, first_try, diag.error, diag.max_model_len, diag.tp)
    pool_failed_up(diag, text)  # docfix22 (sf112): SGLang's pool could not be sized, so no smaller fraction (SGLang's edit)
    edits = [e for e in [unnamed_engine_first(diag.error)] if e] + diag.edits
    return named_engines_first(edits, engines_in_words(text))
