"""Write a random-weight f16 GGUF with the shapes of a catalog Llama-family model and a real tokenizer.

    python benchmarks/gpu/random_gguf.py --model meta-llama/Llama-3.1-8B --vocab ggml-vocab-llama-bpe.gguf \
        --out /tmp/llama-3.1-8b-f16.gguf

For timing a real engine (llama.cpp's ``llama-server`` on the lent H200) on a model of a known shape without
downloading weights. Layer shapes come from the project's catalog entry (``data/models/*.json``); the tokenizer
(tokens, types, merges, pre-tokenizer) is copied from one of the vocabulary-only GGUFs that llama.cpp ships in
``models/`` (``ggml-vocab-llama-bpe.gguf`` is Llama 3's 128,256-token BPE), so prompts tokenize as they would on
the real model. The weights are a 64 MiB block of N(0, 0.02) values tiled over every tensor: their values do not
change the time of a step, only its arithmetic and bytes do.

Greedy decoding of random weights can pick any token; tokens whose text is not plain ASCII (byte tokens, special
tokens) would be held back or dropped by the server's streaming, so a streamed answer would show fewer chunks than
tokens. Their rows of ``output.weight`` are zero: with ~100k random logits above them they are never the argmax.
Needs numpy and gguf-py only (the one vendored in llama.cpp's source).
"""

from __future__ import annotations

import argparse
import json
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[2]
TILE_VALUES = 32 * 1024 * 1024  # 64 MiB of f16 random values, tiled over each tensor


def _catalog_config(model: str) -> dict:
    path = ROOT / "src" / "infer_advisor" / "data" / "models" / (model.replace("/", "--") + ".json")
    return json.loads(path.read_text())["config"]


def _byte_decoder() -> dict[str, int]:
    """GPT-2's byte-level alphabet, reversed: the byte each character of a BPE token stands for."""
    printable = [*range(ord("!"), ord("~") + 1), *range(ord("¡"), ord("¬") + 1), *range(ord("®"), ord("ÿ") + 1)]
    out, extra = {}, 0
    for b in range(256):
        if b in printable:
            out[chr(b)] = b
        else:
            out[chr(256 + extra)] = b
            extra += 1
    return out


def _ascii_tokens(tokens: list[str], types: list[int]) -> np.ndarray:
    """Mask of tokens that are NORMAL (type 1) and decode to printable ASCII only."""
    dec = _byte_decoder()
    mask = np.zeros(len(tokens), dtype=bool)
    for i, (tok, typ) in enumerate(zip(tokens, types)):
        if typ != 1:
            continue
        try:
            raw = bytes(dec[c] for c in tok)
        except KeyError:
            continue
        mask[i] = all(0x20 <= b < 0x7F for b in raw) and len(raw) > 0
    return mask


def _tokenizer_fields(vocab_path: Path):
    import gguf

    reader = gguf.GGUFReader(str(vocab_path))
    fields = {}
    for name, field in reader.fields.items():
        if name.startswith("tokenizer."):
            fields[name] = (field.contents(), field.types)
    return fields


def write(model: str, vocab_path: Path, out: Path, seed: int = 0) -> dict:
    import gguf

    cfg = _catalog_config(model)
    n_layers, hidden = int(cfg["num_hidden_layers"]), int(cfg["hidden_size"])
    n_head, n_kv = int(cfg["num_attention_heads"]), int(cfg.get("num_key_value_heads") or cfg["num_attention_heads"])
    head_dim = int(cfg.get("head_dim") or hidden // n_head)
    ffn, vocab = int(cfg["intermediate_size"]), int(cfg["vocab_size"])
    tok = _tokenizer_fields(vocab_path)
    tokens = tok["tokenizer.ggml.tokens"][0]
    types = tok["tokenizer.ggml.token_type"][0]
    if len(tokens) != vocab:
        raise SystemExit(f"vocabulary {vocab_path} has {len(tokens)} tokens, the model {vocab}")

    w = gguf.GGUFWriter(str(out), arch="llama")
    w.add_name(f"random-{model}")
    w.add_context_length(int(cfg.get("max_position_embeddings", 8192)))
    w.add_embedding_length(hidden)
    w.add_block_count(n_layers)
    w.add_feed_forward_length(ffn)
    w.add_head_count(n_head)
    w.add_head_count_kv(n_kv)
    w.add_layer_norm_rms_eps(float(cfg.get("rms_norm_eps", 1e-5)))
    w.add_rope_freq_base(float(cfg.get("rope_theta", 10000.0)))
    w.add_rope_dimension_count(head_dim)
    w.add_vocab_size(vocab)
    w.add_file_type(gguf.LlamaFileType.MOSTLY_F16)
    for name, (value, ftypes) in tok.items():
        if ftypes[0] == gguf.GGUFValueType.ARRAY:
            w.add_array(name, value)
        elif ftypes[0] == gguf.GGUFValueType.STRING:
            w.add_string(name, value)
        elif ftypes[0] == gguf.GGUFValueType.BOOL:
            w.add_bool(name, bool(value))
        else:
            w.add_uint32(name, int(value))

    rng = np.random.default_rng(seed)
    tile = (rng.standard_normal(TILE_VALUES, dtype=np.float32) * 0.02).astype(np.float16)

    def rand(*shape):
        return np.resize(tile, shape)

    ones = lambda n: np.ones(n, dtype=np.float32)  # noqa: E731
    w.add_tensor("token_embd.weight", rand(vocab, hidden))
    for i in range(n_layers):
        p = f"blk.{i}."
        w.add_tensor(p + "attn_norm.weight", ones(hidden))
        w.add_tensor(p + "attn_q.weight", rand(n_head * head_dim, hidden))
        w.add_tensor(p + "attn_k.weight", rand(n_kv * head_dim, hidden))
        w.add_tensor(p + "attn_v.weight", rand(n_kv * head_dim, hidden))
        w.add_tensor(p + "attn_output.weight", rand(hidden, n_head * head_dim))
        w.add_tensor(p + "ffn_norm.weight", ones(hidden))
        w.add_tensor(p + "ffn_gate.weight", rand(ffn, hidden))
        w.add_tensor(p + "ffn_up.weight", rand(ffn, hidden))
        w.add_tensor(p + "ffn_down.weight", rand(hidden, ffn))
    w.add_tensor("output_norm.weight", ones(hidden))
    head = rand(vocab, hidden)
    keep = _ascii_tokens(list(tokens), [int(t) for t in types])
    head[~keep] = 0
    w.add_tensor("output.weight", head)
    w.write_header_to_file()
    w.write_kv_data_to_file()
    w.write_tensors_to_file()
    w.close()
    return {"model": model, "path": str(out), "bytes": out.stat().st_size, "ascii_tokens": int(keep.sum()),
            "layers": n_layers, "hidden": hidden, "ffn": ffn, "heads": n_head, "kv_heads": n_kv, "vocab": vocab}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--model", required=True)
    ap.add_argument("--vocab", type=Path, required=True)
    ap.add_argument("--out", type=Path, required=True)
    ap.add_argument("--seed", type=int, default=0)
    args = ap.parse_args()
    print(json.dumps(write(args.model, args.vocab, args.out, args.seed)))


if __name__ == "__main__":
    main()
