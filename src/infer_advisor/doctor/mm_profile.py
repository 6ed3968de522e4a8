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


# docfix23 (retrospective, batch 19's sf338, where the text shows no sign of this): V0's encoder-decoder runner
# (worker/enc_dec_model_runner.py ``profile_run``, read at vllm-project/vllm 01b9fe6; the same loop in the 0.6.x tree)
# logs "Starting profile run for multi-modal models." and builds ``for group_id in range(max_num_seqs)`` dummy sequences,
# each with its own worst-case encoder input (``dummy_data_for_profiling(..., is_encoder_data=True)``: the images), with
# no clamp by max_num_batched_tokens // max_mm_tokens (the decoder-only runner's); the decoder text shares
# max_num_batched_tokens. So the image work scales with max_num_seqs and not with --max-model-len.
_ENC_DEC_MM = re.compile(r"enc_dec_model_runner\.py:\d+\] Starting profile run for multi-modal models\.")


def _enc_dec_seqs_first(diag, text: str) -> None:
    seqs = next((e for e in diag.edits if e.argv[:1] == ["--max-num-seqs"]), None)
    if seqs is None or diag.error is None or diag.error.kind != "cuda_oom_profile" or not _ENC_DEC_MM.search(text[:2_000_000]):
        return
    seqs = seqs.model_copy(update={"basis": "not decided by the log's figures: V0's encoder-decoder profile run is max_num_seqs "
                                            "dummy sequences, each with its own worst-case multimodal encoder input "
                                            "(enc_dec_model_runner.profile_run); fewer sequences, fewer images; a shorter "
                                            "--max-model-len shortens only the decoder text"})
    diag.edits = [seqs] + [e for e in diag.edits if e.argv[:1] != ["--max-num-seqs"]]


def mm_profile_first(diag, text: str) -> None:
    """Put the multimodal limit first, and drop --max-num-seqs, where vLLM printed the worst-case warning for its profile;
    --max-num-seqs first where V0's encoder-decoder runner says its profile run is a multimodal one (docfix23)."""
    if any(e.starts for e in diag.edits):  # vLLM only (its passes, engine_passes)
        return
    if (edit := mm_profile_edit(text)) is not None:
        diag.edits = [edit] + [e for e in diag.edits if e.argv[:1] != ["--max-num-seqs"]]
        return
    _enc_dec_seqs_first(diag, text)
