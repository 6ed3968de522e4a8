"""'Did you mean' for model names: the same family and size first.

A name splits into a family ("meta-llama/llama-3.1"), a size ("8b", "30b-a3b", "8x7b") and variant words
("instruct", "it", "thinking"). Candidates score by family similarity, plus a large bonus for the same size
and a small one for shared variant words, so `meta-llama/Llama-3.1-8B-Chat` suggests the 8B Instruct and
base models before any 70B.

    rank_names("llama-3.1-8b-chat", ["meta-llama/llama-3.1-70b", "meta-llama/llama-3.1-8b-instruct"])
"""

from __future__ import annotations

import difflib
import re

_SIZE = re.compile(r"(?<![a-z0-9.])(\d+x)?\d+(?:\.\d+)?[bm](?:-a\d+(?:\.\d+)?b)?(?![a-z0-9])")
_VARIANT_WORDS = {"instruct", "it", "chat", "base", "hf", "thinking", "reasoning", "coder", "fp8", "awq", "gptq", "nvfp4"}
SAME_SIZE_BONUS = 1.0  # outweighs any family-similarity difference (ratios are 0..1)
VARIANT_BONUS = 0.1


def _parts(name: str) -> tuple[str, str, set[str]]:
    low = name.lower().strip()
    tail = low.split("/")[-1]
    found = _SIZE.search(tail)
    words = set(re.split(r"[-_./ ]+", low)) & _VARIANT_WORDS
    if found:
        size = found.group(0)
        family = _SIZE.sub(" ", low)
    else:  # 'llama-2-7': a trailing bare number after a version is the size
        numbers = re.findall(r"(?<=[-_ ])\d+(?:\.\d+)?$", tail)
        size = numbers[-1] + "b" if numbers and re.search(r"\d.*[-_ ]\d+(?:\.\d+)?$", tail) else ""
        family = low[: len(low) - len(numbers[-1])] if size else low
    family = " ".join(w for w in re.split(r"[-_ ]+", family) if w and w not in _VARIANT_WORDS)
    return family, size, words


def score(query: str, candidate: str) -> float:
    qf, qs, qw = _parts(query)
    cf, cs, cw = _parts(candidate)
    ratio = max(
        difflib.SequenceMatcher(None, qf, cf).ratio(),
        difflib.SequenceMatcher(None, qf.split("/")[-1], cf.split("/")[-1]).ratio(),
    )
    return ratio + (SAME_SIZE_BONUS if qs and qs == cs else 0.0) + VARIANT_BONUS * len(qw & cw)


def rank_names(query: str, candidates: list[str], n: int = 3, cutoff: float = 0.45) -> list[str]:
    """The ``n`` candidates closest to ``query``, same family and size first."""
    scored = sorted(((score(query, c), c) for c in candidates), key=lambda t: (-t[0], t[1]))
    return [c for s, c in scored if s >= cutoff][:n]
