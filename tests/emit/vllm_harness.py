"""Run inside the vLLM venv: parse a `vllm serve` command line with vLLM's own CLI parser, then build the
engine config (EngineArgs -> VllmConfig), which checks flags against the model's config.json.

    python vllm_harness.py '["serve", "/tmp/model", "--tensor-parallel-size", "2", ...]'

Prints one JSON line: {"ok": true, ...facts of the built config} or {"ok": false, "stage", "error"}; exit 0 / 1.
Run with VLLM_TARGET_DEVICE=cpu HF_HUB_OFFLINE=1: vLLM picks its CPU platform, so CUDA-only checks
(kernel availability for a GPU's compute capability) are not exercised here.
"""

import json
import sys


def main() -> int:
    argv = json.loads(sys.argv[1])
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

    try:
        config = AsyncEngineArgs.from_cli_args(ns).create_engine_config()
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
        "served_model_name": m.served_model_name,
        "data_parallel_size": p.data_parallel_size,
    }))
    return 0


if __name__ == "__main__":
    sys.exit(main())
