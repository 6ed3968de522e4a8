"""Greedy generation and perplexity with transformers: the reference the quantized runtimes are compared to."""

from __future__ import annotations

import json
import math
from pathlib import Path

# Each evaluation text is cut to this many tokens so `--eval` stays quick on CPU (tiny test models use 512).
EVAL_MAX_TOKENS = 256


def load_tokenizer(source: Path):
    """The model's tokenizer; files saved by transformers 5 ('TokenizersBackend') load as a fast tokenizer."""
    from transformers import AutoTokenizer, PreTrainedTokenizerFast

    try:
        return AutoTokenizer.from_pretrained(source)
    except ValueError:
        if not (source / "tokenizer.json").is_file():
            raise
    config = json.loads((source / "tokenizer_config.json").read_text()) if (source / "tokenizer_config.json").is_file() else {}
    specials = {k: v for k, v in config.items() if k.endswith("_token") and isinstance(v, str)}
    return PreTrainedTokenizerFast(tokenizer_file=str(source / "tokenizer.json"), **specials)


def eval_token_ids(tokenizer, texts: list[str]) -> list[list[int]]:
    """Token ids of each text, cut to EVAL_MAX_TOKENS; texts of fewer than 2 tokens are dropped."""
    ids = [tokenizer(t)["input_ids"][:EVAL_MAX_TOKENS] for t in texts]
    return [i for i in ids if len(i) >= 2]


def perplexity_from_nll(total_nll: float, tokens: int) -> float:
    """exp(mean negative log-likelihood per scored token): the one place perplexity is computed."""
    return math.exp(total_nll / tokens) if tokens else float("nan")


def torch_perplexity(model, tokenizer, texts: list[str]) -> tuple[float, int]:
    """(perplexity, scored tokens) of a transformers causal LM over ``texts``."""
    import torch

    total, count = 0.0, 0
    device = next(model.parameters()).device
    with torch.no_grad():
        for ids in eval_token_ids(tokenizer, texts):
            x = torch.tensor([ids], device=device)
            logits = model(input_ids=x).logits.float()
            logp = torch.log_softmax(logits[0, :-1], dim=-1)
            nll = -logp.gather(1, x[0, 1:, None]).sum().item()
            total, count = total + nll, count + len(ids) - 1
    return perplexity_from_nll(total, count), count


def torch_generate(model, tokenizer, prompt: str, max_new_tokens: int) -> tuple[str, int]:
    """(text, tokens generated) greedily after ``prompt``."""
    import torch

    device = next(model.parameters()).device
    inputs = tokenizer(prompt, return_tensors="pt").to(device)
    with torch.no_grad():
        out = model.generate(
            **inputs,
            max_new_tokens=max_new_tokens,
            min_new_tokens=max_new_tokens,
            do_sample=False,
            pad_token_id=tokenizer.pad_token_id if tokenizer.pad_token_id is not None else tokenizer.eos_token_id,
        )
    new = out[0, inputs["input_ids"].shape[1] :]
    return tokenizer.decode(new, skip_special_tokens=True), int(new.numel())


def dtype_kwarg() -> str:
    """transformers renamed `torch_dtype` to `dtype` in 4.56; AutoAWQ's venv has 4.51."""
    import transformers

    major, minor = (int(p) for p in transformers.__version__.split(".")[:2])
    return "dtype" if (major, minor) >= (4, 56) else "torch_dtype"


def source_perplexity(source: Path, texts: list[str]) -> float:
    """Perplexity of the unquantized source model (float32 on CPU, or its dtype on CUDA)."""
    import torch
    from transformers import AutoModelForCausalLM

    cuda = torch.cuda.is_available()
    dtype = {dtype_kwarg(): "auto" if cuda else torch.float32}
    model = AutoModelForCausalLM.from_pretrained(source, device_map="cuda" if cuda else None, **dtype)
    model.eval()
    tokenizer = load_tokenizer(source)
    return torch_perplexity(model, tokenizer, texts)[0]
