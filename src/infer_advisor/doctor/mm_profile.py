"""vLLM V0's multimodal profile run (docfix20, retrospective: batch 17's sf332, where the first edit was --max-num-seqs 128
for a profile run that already ran one sequence).

Read at vLLM 0.8.x: V0 worker/model_runner.py ``profile_run`` / ``_dummy_run`` sets, for a multimodal model,
``max_num_seqs = min(max_num_seqs, max_num_batched_tokens // max_mm_tokens)`` and, below 1, warns "Computed max_num_seqs
(...) to be less than 1. Setting it to the minimum value of 1."; each dummy sequence's length is
``max_num_batched_tokens // max_num_seqs``. multimodal/profiling.py ``get_decoder_dummy_data`` builds the dummy prompt
from the worst-case items (``limit_mm_per_prompt`` items per modality, each at its largest size) and, where their tokens
exceed that length, warns "The sequence length used for profiling (max_num_batched_tokens / max_num_seqs = S) is too short
to hold the multi-modal embeddings in the worst case (T tokens in total, out of which {...} are reserved ...)" and keeps
ALL T tokens (it pads up to S, never truncates). So when that warning is printed the profile is one sequence of T tokens
whose size is set by the multimodal limits alone: --max-num-seqs (already 1 there) and max_num_batched_tokens (already
under T) change nothing; fewer items per prompt (--limit-mm-per-prompt) or smaller items (--mm-processor-kwargs,
e.g. max_pixels) shrink it. The profile precedes CUDA-graph capture (llm_engine._initialize_kv_caches, then
warm_up_model), so --enforce-eager does not reach it.
"""

from __future__ import annotations

import re

from .edits import Edit, undecided_edit

_TOO_SHORT = re.compile(r"max_num_batched_tokens / max_num_seqs = (\d+)\) is too short to hold the multi-modal embeddings in the "
                        r"worst case \((\d+) tokens in total, out of which (\{[^}]{0,200}\})")


def mm_profile_edit(text: str) -> Edit | None:
    m = _TOO_SHORT.search(text[:2_000_000])
    if not m or int(m.group(2)) <= int(m.group(1)):
        return None
    seq, total, parts = int(m.group(1)), int(m.group(2)), m.group(3)
    return undecided_edit("fewer multimodal items per prompt (--limit-mm-per-prompt, e.g. image=1,video=1) or smaller ones "
                          "(--mm-processor-kwargs max_pixels)", [], "fewer or smaller images/videos per request", 0.05,
                          f"V0's profile run is ONE sequence carrying the worst-case multimodal tokens ({total:,}: {parts}), "
                          f"over its {seq:,}-token length and kept whole (multimodal/profiling.py get_decoder_dummy_data); "
                          "max_num_seqs is already 1 there (model_runner._dummy_run), so only the multimodal limits shrink it")


def mm_profile_first(diag, text: str) -> None:
    """Put the multimodal limit first, and drop --max-num-seqs, where vLLM printed the worst-case warning for its profile."""
    if diag.engine != "vllm" or any(e.starts for e in diag.edits):
        return
    if (edit := mm_profile_edit(text)) is not None:
        diag.edits = [edit] + [e for e in diag.edits if e.argv[:1] != ["--max-num-seqs"]]
