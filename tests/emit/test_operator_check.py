"""An operator's check of every artifact kind (issue 22): would the files start, as they are, on the platform they name?

For each plan of the golden set: the repository the init container downloads is the one the server loads, the cache
volume holds the download with margin, the startup probe covers loading at the stated bandwidth, nothing is requested
that the plan did not ask for (RDMA devices and resources only with --network rdma), and the checkpoint's format is one
the engine loads on that platform according to data/formats_by_platform.yaml (read from the engines' own source).
Then one test per finding of the issue, each failing on the code before it.
"""

from __future__ import annotations

import re

import pytest
import yaml

from infer_advisor.engines.checkpoint_formats import loadable
from infer_advisor.emit import render
from infer_advisor.emit.context import build_context
from infer_advisor.engines.launch_facts import emit_facts
from infer_advisor.plan.checkpoint import platform_of

from tests.emit.plans import GOLDEN, make_plan

GIB = 2**30
MARGIN = 1.1  # the volume holds the download plus 10%


def _docs(text: str) -> list[dict]:
    return [d for d in yaml.safe_load_all(text) if d]


def _storage_bytes(k8s: str) -> int | None:
    for doc in _docs(k8s):
        if doc.get("kind") == "PersistentVolumeClaim" and doc["metadata"]["name"].endswith("hf-cache"):
            return int(doc["spec"]["resources"]["requests"]["storage"].removesuffix("Gi")) * GIB
    return None


def _pod_specs(k8s: str) -> list[dict]:
    out = []
    for doc in _docs(k8s):
        spec = doc.get("spec", {})
        if doc.get("kind") == "LeaderWorkerSet":
            out += [spec["leaderWorkerTemplate"][r]["spec"] for r in ("leaderTemplate", "workerTemplate")]
        elif "template" in spec:
            out.append(spec["template"]["spec"])
    return out


def _served_format(plan) -> str | None:
    from infer_advisor.plan.checkpoint import served_format
    from tests.emit.plans import catalog_facts

    q = plan.quantization
    ckpt = q.published_checkpoint
    if ckpt is not None:
        return ckpt.format
    facts = catalog_facts(plan.model.name)
    return served_format(facts, q.method, None, engine=plan.engine.name, online=q.engine_flag is not None)


@pytest.mark.parametrize("case", sorted(GOLDEN))
def test_operator_check(case):
    plan = make_plan(**GOLDEN[case])
    ctx = build_context(plan)
    files = render(plan, "all")
    k8s = files.get("k8s.yaml", "")
    # 1. the init container downloads the repository the server loads
    if ctx.init_download and ctx.init_download[0] in ("hf", "text-generation-server"):
        repo = ctx.init_download[2]
        loaded = [*ctx.argv_k8s, *(f.text for f in ctx.config_files)]  # Triton names the model in its model.yaml
        assert repo == ctx.served_repo and any(repo in w for w in loaded), (repo, ctx.argv_k8s)
        if ctx.init_download[:2] == ["hf", "download"]:
            assert "original/*" in ctx.init_download and "metal/*" in ctx.init_download
    # 2. the volume holds the download, with margin
    storage = _storage_bytes(k8s)
    if storage is not None and ctx.ref.mount_source is None:
        assert storage >= ctx.download_bytes * MARGIN, (storage / GIB, ctx.download_bytes / GIB)
    # 3. the startup probe covers loading (and the download when no init container did it) at the stated bandwidth
    facts = emit_facts()
    if ctx.http_server and not plan.request.startup_timeout:
        from infer_advisor.emit.startup import read_bytes

        assert read_bytes(plan) <= ctx.download_bytes  # a quantize/convert step only ever shrinks what is read
        need = read_bytes(plan) / (facts.load_speed_mb_s * 1e6)
        if not ctx.init_download and ctx.ref.mount_source is None:  # the server downloads at start
            need += ctx.download_bytes / (facts.download_speed_mb_s * 1e6)
        assert ctx.probe_period * ctx.startup_failures >= need + facts.startup_seconds_base
        assert ctx.startup_seconds >= read_bytes(plan) / (facts.load_speed_mb_s * 1e6)  # compose / Docker too
    # 4. nothing requested that the plan did not ask for
    if plan.request.network != "rdma":
        for name, text in files.items():
            assert "/dev/infiniband" not in text and "rdma/" not in text and "IPC_LOCK" not in text, name
    for pod in _pod_specs(k8s):
        assert not pod.get("hostNetwork")
    # 5. the engine loads this checkpoint format on this platform (the compatibility table)
    gpu = plan.hardware.gpus[0] if plan.hardware.kind == "gpu" else None
    fmt = _served_format(plan)
    if fmt is not None:
        answer = loadable(plan.engine.name, platform_of(plan.hardware.kind, gpu.vendor if gpu else None), fmt,
                          version=plan.engine.version, compute_capability=gpu.compute_capability if gpu and gpu.vendor == "nvidia" else None,
                          gfx=gpu.gfx_arch if gpu else None)
        assert answer is None or answer.loads, answer


# ---- the findings, one test each (each failed before this change) ----
# These plan through the public advise() (offline: the catalog), which keeps the requested Hub id (an -Instruct model's
# published checkpoints are listed under that id; tests/emit/plans.make_plan names the catalog entry instead).


def _advise(model: str, gpu: str, **options):
    from infer_advisor import advise

    return advise(model=model, gpu=gpu, **options)

def test_finding1_amd_plan_serves_a_rocm_checkpoint_with_the_rocm_image_and_amd_words():
    from infer_advisor.cli.render_plan import _hardware

    plan = _advise(model="meta-llama/Llama-3.1-70B-Instruct", gpu="MI300X")
    ckpt = plan.quantization.published_checkpoint
    assert ckpt is None or ckpt.format in ("quark", "compressed-tensors", "fp8-block", "fp8-tensor")
    assert "rocm" in plan.engine.image
    files = render(plan, "all")
    assert "nvidia" not in files["k8s.yaml"].lower() and "--gpus" not in files["README.md"]
    assert "CC 0.0" not in _hardware(plan)[1] and "gfx942" in _hardware(plan)[1]


def test_finding1_the_amd_plan_printed_by_the_cli_has_no_cuda_words():
    import os
    import subprocess
    import sys

    env = {**os.environ, "INFER_ADVISOR_NO_NVML": "1", "COLUMNS": "200"}
    out = subprocess.run([sys.executable, "-m", "infer_advisor.cli", "plan", "--model", "meta-llama/Llama-3.1-70B-Instruct",
                          "--gpu", "MI300X", "--explain"], capture_output=True, text=True, env=env, timeout=120)
    assert out.returncode == 0, out.stderr
    table = out.stdout.split("decisions")[0]  # the plan's table (rule reasons below may name CUDA GPUs they compare)
    assert "vllm-openai-rocm" in table and "gfx942" in table
    assert not any(w in table.lower() for w in ("cuda", "nvidia", "cc 0.0"))


def test_finding1_rocm_plans_never_serve_a_modelopt_checkpoint(monkeypatch):
    """Even where the AMD checkpoint is missing (the entry removed here), vLLM on MI300X does not fall back to
    nvidia/Llama-3.1-70B-Instruct-FP8: it serves bf16 or quantizes while loading."""
    from infer_advisor.model_facts import published as pub

    table = pub.published()
    entries = table.checkpoints["meta-llama/Llama-3.1-70B-Instruct"]
    monkeypatch.setitem(table.checkpoints, "meta-llama/Llama-3.1-70B-Instruct", [c for c in entries if c.format != "quark"])
    plan = _advise(model="meta-llama/Llama-3.1-70B-Instruct", gpu="MI300X", engine="vllm")
    ckpt = plan.quantization.published_checkpoint
    assert ckpt is None or not (ckpt.format or "").startswith("modelopt"), ckpt
    nvidia = _advise(model="meta-llama/Llama-3.1-70B-Instruct", gpu="H100-80GB:2", engine="vllm", quantization="fp8")
    assert nvidia.quantization.published_checkpoint.repo == "nvidia/Llama-3.1-70B-Instruct-FP8"  # still served on CUDA


def test_finding1_sglang_on_rocm_never_gets_a_modelopt_checkpoint():
    plan = _advise(model="meta-llama/Llama-3.1-70B-Instruct", gpu="MI300X", engine="sglang")
    ckpt = plan.quantization.published_checkpoint
    assert ckpt is None or not (ckpt.format or "").startswith("modelopt")


def test_finding2_init_container_downloads_the_served_awq_repository():
    plan = _advise(model="meta-llama/Llama-3.1-70B-Instruct", gpu="L40S:2")
    repo = plan.quantization.published_checkpoint.repo
    ctx = build_context(plan)
    assert ctx.init_download[:3] == ["hf", "download", repo]
    assert _storage_bytes(render(plan, "k8s")["k8s.yaml"]) < 60 * GIB  # 37 GiB of AWQ, not Meta's 131 GiB


def test_finding3_download_patterns_skip_duplicate_formats():
    """huggingface_hub's own filter (the one `hf download --include/--exclude` applies) on the repositories' file lists."""
    from huggingface_hub.utils import filter_repo_objects

    from infer_advisor.engines.launch_facts import download_args

    args = download_args()
    include = [args[i + 1] for i, a in enumerate(args) if a == "--include"]
    exclude = [args[i + 1] for i, a in enumerate(args) if a == "--exclude"]
    llama = ["config.json", "generation_config.json", "model-00001-of-00004.safetensors", "model.safetensors.index.json",
             "original/consolidated.00.pth", "original/params.json", "original/tokenizer.model", "special_tokens_map.json",
             "tokenizer.json", "tokenizer_config.json", "LICENSE", "README.md", "USE_POLICY.md"]
    gpt_oss = ["config.json", "generation_config.json", "model-00000-of-00014.safetensors", "model.safetensors.index.json",
               "original/model--00001-of-00007.safetensors", "original/config.json", "metal/model.bin", "tokenizer.json",
               "tokenizer_config.json", "special_tokens_map.json", "chat_template.jinja"]
    for files in (llama, gpt_oss):
        kept = list(filter_repo_objects(files, allow_patterns=include, ignore_patterns=exclude))
        assert not any(f.startswith(("original/", "metal/")) or f.endswith((".pth", ".bin")) for f in kept), kept
        assert "config.json" in kept and "tokenizer.json" in kept and any(f.endswith(".safetensors") for f in kept)


# Real checkpoint sizes, as issue 22 states them (GiB): gpt-oss-120b ~61 (MXFP4), DeepSeek-V3 ~640 (FP8), the 70B AWQ ~37.
@pytest.mark.parametrize("model, gpu, real_gib", [
    ("openai/gpt-oss-120b", "H100-80GB", 61),
    ("deepseek-ai/DeepSeek-V3", "H200:8", 640),
    ("meta-llama/Llama-3.1-70B-Instruct", "L40S:2", 37),
])
def test_finding4_sizes_are_real_bytes_within_5_percent(model, gpu, real_gib):
    ctx = build_context(_advise(model=model, gpu=gpu))
    assert abs(ctx.download_bytes / GIB - real_gib) / real_gib < 0.05, ctx.download_bytes / GIB
    assert f"{ctx.download_bytes / GIB:.1f} GiB" in ctx.startup_assumption


def test_finding5_startup_probe_grows_with_the_model():
    small = build_context(make_plan(model="meta-llama/Llama-3.1-8B", gpu="H100-80GB"))
    big = build_context(make_plan(model="deepseek-ai/DeepSeek-V3", gpu="H200:8"))
    facts = emit_facts()
    assert big.probe_period * big.startup_failures > 300
    assert big.probe_period * big.startup_failures >= big.download_bytes / (facts.load_speed_mb_s * 1e6)
    assert big.startup_failures > small.startup_failures
    compose = render(make_plan(model="deepseek-ai/DeepSeek-V3", gpu="H200:8"), "all")["docker-compose.yml"]
    assert int(re.search(r"start_period: (\d+)s", compose).group(1)) == big.startup_seconds


def test_finding6_multinode_asks_for_rdma_only_with_network_rdma():
    tcp = render(make_plan(model="meta-llama/Llama-3.1-405B", gpu="H100-80GB:8x2"), "all")
    assert all("rdma/" not in t and "/dev/infiniband" not in t for t in tcp.values())
    rdma = render(make_plan(model="meta-llama/Llama-3.1-405B", gpu="H100-80GB:8x2", network="rdma"), "all")
    assert "rdma/rdma_shared_device_a" in rdma["k8s.yaml"] and "/dev/infiniband" in rdma["docker-compose.yml"]


def test_finding7_official_fp8_checkpoint_is_served():
    plan = _advise(model="Qwen/Qwen3-32B", gpu="H100-80GB")
    if plan.quantization.method in ("fp8", "fp8-block"):
        assert plan.quantization.published_checkpoint.repo == "Qwen/Qwen3-32B-FP8"
        assert plan.quantization.engine_flag is None  # nothing quantized on the fly
        assert "Qwen/Qwen3-32B-FP8" in render(plan, "script")["serve.sh"]


@pytest.mark.parametrize("model, engine, quantization, words", [
    ("meta-llama/Llama-3.1-8B-Instruct", "tgi", "awq", "tgi 3.3.6 on ROCm does not load awq checkpoints"),
    ("openai/gpt-oss-120b", "sglang", "auto", "loads mxfp4 only on gfx950 (this GPU: gfx942)"),
])
def test_finding1_a_format_the_engine_cannot_load_on_rocm_is_refused_with_the_engines_reason(model, engine, quantization, words):
    plan = _advise(model, "MI300X", engine=engine, quantization=quantization)
    assert not plan.feasible and words in plan.infeasible_reason
