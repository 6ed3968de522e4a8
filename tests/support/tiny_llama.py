"""A tiny random-weight Llama with a tokenizer trained here: nothing is downloaded.

    path = build_tiny_llama(tmp_path / "tiny")   # config.json, model.safetensors, tokenizer files

Sizes are multiples of 128 so 4-bit group-128 quantizers accept every Linear layer.
"""

from __future__ import annotations

from pathlib import Path

CORPUS = [
    "The quick brown fox jumps over the lazy dog.",
    "A platform engineer deploys a language model on a GPU server.",
    "Inference engines batch requests to use memory bandwidth well.",
    "Quantization stores weights in fewer bits so larger models fit.",
    "The key value cache grows with context length and concurrency.",
    "Benchmarks measure time to first token and tokens per second.",
    "Tensor parallelism splits each layer across several devices.",
    "Hello world! Numbers like 12345 and symbols like $ % & also appear.",
]


def calibration_texts() -> list[str]:
    """A few sentences for quantizer calibration and perplexity checks."""
    return [" ".join(CORPUS[i:] + CORPUS[:i]) for i in range(len(CORPUS))]


def build_tokenizer(path: Path, vocab_size: int = 512):
    from tokenizers import Tokenizer, decoders, models, pre_tokenizers, trainers
    from transformers import PreTrainedTokenizerFast

    tok = Tokenizer(models.BPE(unk_token=None))
    tok.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False)
    tok.decoder = decoders.ByteLevel()
    trainer = trainers.BpeTrainer(
        vocab_size=vocab_size,
        special_tokens=["<s>", "</s>", "<unk>"],
        initial_alphabet=pre_tokenizers.ByteLevel.alphabet(),
        show_progress=False,
    )
    tok.train_from_iterator(CORPUS * 20, trainer=trainer)
    fast = PreTrainedTokenizerFast(tokenizer_object=tok, bos_token="<s>", eos_token="</s>", unk_token="<unk>")
    fast.save_pretrained(path)
    return fast


def build_tiny_llama(
    path: Path,
    *,
    hidden_size: int = 128,
    intermediate_size: int = 256,
    num_hidden_layers: int = 2,
    num_attention_heads: int = 4,
    num_key_value_heads: int = 2,
    max_position_embeddings: int = 512,
    seed: int = 0,
    dtype: str = "float32",
) -> Path:
    """Write a random-weight LlamaForCausalLM and its tokenizer to ``path``; return ``path``."""
    import torch
    from transformers import LlamaConfig, LlamaForCausalLM

    path = Path(path)
    path.mkdir(parents=True, exist_ok=True)
    tokenizer = build_tokenizer(path)
    torch.manual_seed(seed)
    config = LlamaConfig(
        vocab_size=len(tokenizer),
        hidden_size=hidden_size,
        intermediate_size=intermediate_size,
        num_hidden_layers=num_hidden_layers,
        num_attention_heads=num_attention_heads,
        num_key_value_heads=num_key_value_heads,
        max_position_embeddings=max_position_embeddings,
        bos_token_id=tokenizer.bos_token_id,
        eos_token_id=tokenizer.eos_token_id,
        tie_word_embeddings=False,
    )
    model = LlamaForCausalLM(config).to(getattr(torch, dtype))
    model.eval()
    model.save_pretrained(path, safe_serialization=True)
    return path
