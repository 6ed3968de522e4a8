"""llm-compressor backend: ``awq`` (AWQModifier + QuantizationModifier) and ``w4a16`` (round-to-nearest).

Both write a compressed-tensors checkpoint (``pack-quantized``, 4-bit groups) that vLLM and SGLang serve and
transformers loads (with the compressed-tensors package). ``lm_head`` stays unquantized, as in llm-compressor's
own W4A16 examples. Needs the ``awq`` extra, in a venv of its own: llm-compressor 0.14 pins transformers 5.15-5.17.

CPU workaround: llm-compressor 0.14's AWQModifier pins its cached activations (``IntermediatesCache.pin_memory``)
unconditionally, and ``Tensor.pin_memory()`` raises "Cannot access accelerator device when none is available" on a
machine without an accelerator. Only then, and only for the duration of the run, that method is replaced by a
no-op (pinning only speeds up host-to-device copies, so skipping it changes no result); the notes say so.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path

from .methods import MethodSpec
from .results import QuickCheck

# Longest calibration sample in tokens: llm-compressor's examples use 2048 for 7B models; 512 keeps CPU runs short
# and still spans several sentences of the built-in text.
MAX_SEQ_LENGTH = 512


@contextmanager
def _no_pinning_without_accelerator(spec: MethodSpec, notes: list[str]) -> Iterator[None]:
    """Make ``IntermediatesCache.pin_memory`` a no-op while no accelerator exists; restored on exit."""
    import torch
    from llmcompressor.pipelines.cache import IntermediatesCache

    if spec.name != "awq" or torch.accelerator.is_available():  # only AWQModifier pins
        yield
        return
    original = IntermediatesCache.__dict__["pin_memory"]
    IntermediatesCache.pin_memory = lambda self, *args, **kwargs: None
    notes.append(
        "No accelerator: llm-compressor's IntermediatesCache.pin_memory (which fails without one) was made a no-op "
        "for this run; pinning only speeds up host-to-device copies."
    )
    try:
        yield
    finally:
        IntermediatesCache.pin_memory = original


def _recipe(spec: MethodSpec) -> list:
    from llmcompressor.modifiers.quantization import QuantizationModifier

    weights = {
        "num_bits": spec.bits,
        "type": "int",
        "strategy": "group",
        "group_size": spec.group_size,
        # AWQ keeps a zero point per group (asymmetric), as AutoAWQ does; plain W4A16 is symmetric.
        "symmetric": spec.name != "awq",
        "dynamic": False,
    }
    quant = QuantizationModifier(
        ignore=["lm_head"], config_groups={"group_0": {"targets": ["Linear"], "weights": weights}}
    )
    if spec.name != "awq":
        return [quant]
    from llmcompressor.modifiers.transform.awq import AWQModifier

    return [AWQModifier(), quant]


def run(source: Path, work_dir: Path, spec: MethodSpec, calibration: list[str], progress: Callable[[str], None]) -> list[str]:
    """Quantize ``source`` with llm-compressor's ``oneshot`` and save compressed into ``work_dir``."""
    import llmcompressor
    import torch
    from llmcompressor import oneshot
    from transformers import AutoModelForCausalLM, AutoTokenizer

    notes = [f"llm-compressor {llmcompressor.__version__}: {spec.name}, {spec.bits}-bit groups of {spec.group_size}."]
    progress(f"loading {source.name} with transformers")
    model = AutoModelForCausalLM.from_pretrained(source, dtype="auto")
    tokenizer = AutoTokenizer.from_pretrained(source)
    kwargs: dict = {}
    if spec.name == "awq":
        from datasets import Dataset

        kwargs = {
            "dataset": Dataset.from_dict({"text": calibration}),
            "max_seq_length": MAX_SEQ_LENGTH,
            "num_calibration_samples": len(calibration),
        }
        notes.append(f"AWQ calibrated on {len(calibration)} samples (at most {MAX_SEQ_LENGTH} tokens each).")
    progress(f"running llm-compressor oneshot ({spec.name}; this is the long step)")
    with _no_pinning_without_accelerator(spec, notes), torch.no_grad():
        oneshot(model=model, processor=tokenizer, recipe=_recipe(spec), **kwargs)
    progress("saving compressed-tensors checkpoint")
    model.save_pretrained(work_dir, save_compressed=True)
    tokenizer.save_pretrained(work_dir)
    return notes


def check(
    model_dir: Path, spec: MethodSpec, *, prompt: str, max_new_tokens: int, eval_texts: list[str] | None
) -> QuickCheck:
    """Load the compressed-tensors checkpoint with transformers, verify packed 4-bit weights, generate."""
    import compressed_tensors
    import torch
    import transformers
    from transformers import AutoModelForCausalLM

    from ._torch_eval import load_tokenizer, torch_generate, torch_perplexity

    cuda = torch.cuda.is_available()
    model = AutoModelForCausalLM.from_pretrained(model_dir, device_map="cuda" if cuda else None)
    model.eval()
    tokenizer = load_tokenizer(model_dir)
    packed = sorted({n.rsplit(".", 1)[0] for n, _ in model.named_parameters() if n.endswith("weight_packed")})
    runtime = (
        f"transformers {transformers.__version__} + compressed-tensors {compressed_tensors.__version__} "
        f"({'cuda' if cuda else 'cpu'})"
    )
    if not packed:
        return QuickCheck(status="failed", loaded=True, runtime=runtime, detail="no layer holds packed 4-bit weights")
    text, count = torch_generate(model, tokenizer, prompt, max_new_tokens)
    result = QuickCheck(
        status="passed",
        loaded=True,
        runtime=runtime,
        prompt=prompt,
        sample_text=text,
        tokens_generated=count,
        detail=f"{len(packed)} Linear layers loaded as packed {spec.bits}-bit weights (weight_packed).",
    )
    if eval_texts:
        result.perplexity_after, result.eval_tokens = torch_perplexity(model, tokenizer, eval_texts)
    return result
