"""CTranslate2 backend: ``TransformersConverter`` with ``quantization`` (methods ``ct2-*``).

The output is a CTranslate2 model directory (``model.bin``, ``config.json``, vocabulary, tokenizer files) that
``ctranslate2.Generator`` loads. Types a device cannot compute are converted on load (CPU: float16/bfloat16 to
float32, int8_float16 to int8), so every ``ct2-*`` output is checked on CPU here.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

from .methods import MethodSpec
from .results import QuickCheck


def run(source: Path, work_dir: Path, spec: MethodSpec, calibration: list[str], progress: Callable[[str], None]) -> list[str]:
    """Convert ``source`` into ``work_dir`` with ``spec.ct2_quantization``; return notes."""
    import ctranslate2
    from ctranslate2.converters import TransformersConverter

    progress(f"converting with CTranslate2 {ctranslate2.__version__} (quantization={spec.ct2_quantization})")
    converter = TransformersConverter(str(source), low_cpu_mem_usage=True)
    # force=True: work_dir exists (empty) because the shared code created it; the converter refuses otherwise.
    converter.convert(str(work_dir), quantization=spec.ct2_quantization, force=True)
    notes = [f"Converted with CTranslate2 {ctranslate2.__version__}, quantization={spec.ct2_quantization}."]
    cpu_types = ctranslate2.get_supported_compute_types("cpu")
    if spec.ct2_quantization not in cpu_types:
        notes.append(
            f"CPU cannot compute {spec.ct2_quantization}; on CPU CTranslate2 converts it on load "
            f"(supported here: {', '.join(sorted(cpu_types))}). Use a GPU for the stored type."
        )
    return notes


def _device() -> str:
    import ctranslate2

    return "cuda" if ctranslate2.get_cuda_device_count() > 0 else "cpu"


def check(
    model_dir: Path, spec: MethodSpec, *, prompt: str, max_new_tokens: int, eval_texts: list[str] | None
) -> QuickCheck:
    """Load with ``ctranslate2.Generator``, generate greedily, and score ``eval_texts`` for perplexity."""
    import ctranslate2

    from ._torch_eval import load_tokenizer

    device = _device()
    generator = ctranslate2.Generator(str(model_dir), device=device, compute_type="default")
    runtime = f"ctranslate2 {ctranslate2.__version__} ({device}, compute_type={generator.compute_type})"
    tokenizer = load_tokenizer(model_dir)
    start = tokenizer.convert_ids_to_tokens(tokenizer(prompt)["input_ids"])
    step = generator.generate_batch(
        [start], max_length=max_new_tokens, min_length=max_new_tokens, sampling_topk=1, include_prompt_in_result=False
    )[0]
    ids = step.sequences_ids[0]
    result = QuickCheck(
        status="passed",
        loaded=True,
        runtime=runtime,
        prompt=prompt,
        sample_text=tokenizer.decode(ids, skip_special_tokens=True),
        tokens_generated=len(ids),
    )
    if eval_texts:
        from ._torch_eval import eval_token_ids, perplexity_from_nll

        batches = [tokenizer.convert_ids_to_tokens(ids) for ids in eval_token_ids(tokenizer, eval_texts)]
        scored = generator.score_batch(batches)
        total = -sum(sum(r.log_probs) for r in scored)
        count = sum(len(r.log_probs) for r in scored)
        result.perplexity_after = perplexity_from_nll(total, count)
        result.eval_tokens = count
    return result
