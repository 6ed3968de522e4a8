"""Run inside the vLLM venv: parse a `vllm serve` command line with vLLM's own CLI parser, then build the
engine config (EngineArgs -> VllmConfig), which checks flags against the model's config.json.

    python vllm_harness.py '["serve", "/tmp/model", "--tensor-parallel-size", "2", ...]' ['{"name": ..., "memory_bytes": ..., "capability": [9, 0]}']

Prints one JSON line: {"ok": true, ...facts of the built config} or {"ok": false, "stage", "error"}; exit 0 / 1.
Run with VLLM_TARGET_DEVICE=cpu HF_HUB_OFFLINE=1: vLLM picks its CPU platform, so CUDA-only checks
(kernel availability for a GPU's compute capability) are not exercised here.

The optional second argument describes the plan's GPU: vLLM's per-GPU defaults (EngineArgs.get_batch_defaults,
what a launch script relies on when it leaves --max-num-seqs / --max-num-batched-tokens out) are then computed for
that GPU instead of the CPU platform's, with the platform patched only while get_batch_defaults runs.
"""

import json
import sys


def _defaults_for(device: dict) -> None:
    from unittest import mock

    from vllm.engine.arg_utils import EngineArgs
    from vllm.platforms import current_platform

    original = EngineArgs.get_batch_defaults.__func__
    cls = type(current_platform)

    def patched(engine_args_cls, world_size):  # noqa: ANN001, ANN202
        with (
            mock.patch.object(cls, "get_device_total_memory", lambda *a, **k: device["memory_bytes"], create=True),
            mock.patch.object(cls, "get_device_name", lambda *a, **k: device["name"], create=True),
            mock.patch.object(cls, "is_device_capability", lambda self, cap, *a, **k: tuple(cap) == tuple(device["capability"]), create=True),
            mock.patch.object(cls, "is_cpu", lambda *a, **k: False, create=True),
            mock.patch.object(cls, "is_tpu", lambda *a, **k: False, create=True),
        ):
            return original(engine_args_cls, world_size)

    EngineArgs.get_batch_defaults = classmethod(patched)


def main() -> int:
    argv = json.loads(sys.argv[1])
    if len(sys.argv) > 2:
        _defaults_for(json.loads(sys.argv[2]))
    from vllm.entrypoints.cli.serve import ServeSubcommand
    from vllm.utils.argparse_utils import FlexibleArgumentParser

    top = FlexibleArgumentParser(prog="vllm")
    sub = top.add_subparsers(dest="subcommand")
    ServeSubcommand().subparser_init(sub)
    try:
        ns = top.parse_args(argv)
    except SystemExit as err:  # argparse reports unknown flags / bad choices this way
        print(json.dumps({"ok": False, "stage": "parse", "error": f"argparse exit {err.code}"}))
        return 1
    if getattr(ns, "model_tag", None):
        ns.model = ns.model_tag
    from vllm.engine.arg_utils import AsyncEngineArgs
    from vllm.usage.usage_lib import UsageContext

    try:  # `vllm serve` builds its config for the OpenAI server usage context (its per-GPU defaults depend on it)
        config = AsyncEngineArgs.from_cli_args(ns).create_engine_config(usage_context=UsageContext.OPENAI_API_SERVER)
    except Exception as err:  # noqa: BLE001 - report whatever vLLM rejects
        print(json.dumps({"ok": False, "stage": "config", "error": f"{type(err).__name__}: {err}"[:2000]}))
        return 1
    m, p, c = config.model_config, config.parallel_config, config.cache_config
    print(json.dumps({
        "ok": True,
        "tensor_parallel_size": p.tensor_parallel_size,
        "pipeline_parallel_size": p.pipeline_parallel_size,
        "distributed_executor_backend": str(p.distributed_executor_backend),
        "max_model_len": m.max_model_len,
        "dtype": str(m.dtype),
        "quantization": m.quantization,
        "kv_cache_dtype": c.cache_dtype,
        "gpu_memory_utilization": c.gpu_memory_utilization,
        "max_num_seqs": config.scheduler_config.max_num_seqs,
        "max_num_batched_tokens": config.scheduler_config.max_num_batched_tokens,
        "served_model_name": m.served_model_name,
        "data_parallel_size": p.data_parallel_size,
        "enable_expert_parallel": bool(getattr(p, "enable_expert_parallel", False)),
    }))
    return 0


if __name__ == "__main__":
    sys.exit(main())
