"""Run inside the vLLM venv: vLLM's own per-GPU defaults for the OpenAI server, for devices described on the command line.

    python vllm_defaults_harness.py '[{"name": "NVIDIA H100 80GB HBM3", "memory_bytes": 85029615043, "capability": [9, 0]}, ...]'

For each device, vLLM's `current_platform` is made to report that name, total memory and compute capability (the
CPU platform it runs on here would otherwise answer), and `EngineArgs.get_batch_defaults` is asked for the
OPENAI_API_SERVER values. Prints one JSON line: {"gpu_memory_utilization": <CacheConfig default>, "devices": [[tokens, seqs], ...]}.
"""

import json
import sys
from unittest import mock


def main() -> int:
    devices = json.loads(sys.argv[1])
    from vllm.engine.arg_utils import EngineArgs
    from vllm.platforms import current_platform
    from vllm.usage.usage_lib import UsageContext

    out = []
    for d in devices:
        with (
            mock.patch.object(type(current_platform), "get_device_total_memory", lambda *a, **k: d["memory_bytes"], create=True),
            mock.patch.object(type(current_platform), "get_device_name", lambda *a, **k: d["name"], create=True),
            mock.patch.object(type(current_platform), "is_device_capability", lambda self, cap, *a, **k: tuple(cap) == tuple(d["capability"]), create=True),
            mock.patch.object(type(current_platform), "is_cpu", lambda *a, **k: False, create=True),
            mock.patch.object(type(current_platform), "is_tpu", lambda *a, **k: False, create=True),
        ):
            tokens, seqs = EngineArgs.get_batch_defaults(world_size=1)
        out.append([tokens[UsageContext.OPENAI_API_SERVER], seqs[UsageContext.OPENAI_API_SERVER]])
    import dataclasses

    default = {f.name: f.default for f in dataclasses.fields(EngineArgs)}["gpu_memory_utilization"]
    print(json.dumps({"gpu_memory_utilization": default, "devices": out}))
    return 0


if __name__ == "__main__":
    sys.exit(main())
