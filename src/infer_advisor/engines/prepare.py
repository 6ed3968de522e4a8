"""Steps an engine needs before it can serve, for engines whose own tools convert the weights (MLC LLM, ExLlamaV2).

    >>> from infer_advisor import advise
    >>> from infer_advisor.engines.argv import model_ref
    >>> plan = advise(model="meta-llama/Llama-2-7b-hf", gpu="A100-80GB", engine="mlc")
    >>> [s.argv[:2] for s in mlc_steps(plan, model_ref(plan), "host")]
    [['hf', 'download'], ['mlc_llm', 'convert_weight'], ['mlc_llm', 'gen_config'], ['mlc_llm', 'compile']]

Each step names the file it creates; the launch script and the container entrypoint skip a step whose file exists, so
a restart reuses the download and the conversion kept on the cache volume. Paths on the host are relative to the
output folder; in containers they live under the engine's cache folder (a volume).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from pydantic import BaseModel, Field

from .argv import ModelRef, Where, slug, user_value
from .launch_facts import download_args, emit_facts, engine_facts

if TYPE_CHECKING:  # the plan is read, never built here (engines sit below plan; see tests/test_import_graph.py)
    from ..plan.models import DeploymentPlan


# The Hugging Face CLI in the engine images the Dockerfiles build (its own venv, so its pins never meet the engine's).
HF_CLI = "/opt/hf/bin/hf"


class PrepareStep(BaseModel):
    creates: str = Field(description="File the step writes; the step is skipped when it exists.")
    argv: list[str]
    what: str = Field(description="One line for comments and the README.")


def _base(plan: DeploymentPlan, where: Where) -> str:
    return "." if where == "host" else engine_facts(plan).cache_dir


def _name(plan: DeploymentPlan) -> str:
    return slug(plan.model.name.rstrip("/").split("/")[-1])


def _source(plan: DeploymentPlan, ref: ModelRef, where: Where) -> tuple[list[PrepareStep], str]:
    """The local folder of the checkpoint, downloading it from the Hub first when the plan names a Hub id."""
    if ref.mount_source:
        return [], ref.host if where == "host" else ref.container
    folder = f"{_base(plan, where)}/hf/{_name(plan)}"
    step = PrepareStep(
        creates=f"{folder}/config.json",
        argv=["hf" if where == "host" else HF_CLI, "download", plan.model.name, *download_args(),
              *user_value(plan, "--local-dir", folder)],
        what=f"download {plan.model.name} from the Hugging Face Hub (hf_xet high-performance mode)",
    )
    return [step], folder


def prepared_model(plan: DeploymentPlan, ref: ModelRef, where: Where) -> str:
    """The folder the engine serves after the steps."""
    base = _base(plan, where)
    if plan.engine.name == "mlc":
        quant = "q0f16" if plan.quantization.method == "none" else plan.quantization.method.removeprefix("mlc-")
        return f"{base}/mlc/{_name(plan)}-{quant}"
    if plan.quantization.method == "exl2":
        return f"{base}/exl2/{_name(plan)}-{plan.quantization.bits}bpw"
    return _source(plan, ref, where)[1]


def mlc_steps(plan: DeploymentPlan, ref: ModelRef, where: Where) -> list[PrepareStep]:
    """mlc_llm convert_weight, gen_config and compile (MLC LLM v0.20.0 CLI)."""
    steps, source = _source(plan, ref, where)
    out = prepared_model(plan, ref, where)
    quant = out.rsplit("-", 1)[-1]
    facts = emit_facts()
    template = facts.mlc_conv_templates.get(plan.model.model_type or "", "LM")
    if template == "llama-3" and plan.model.max_position_embeddings <= 4096:
        template = "llama-2"  # Llama-2 checkpoints (4k context) use the llama-2 chat template
    e = plan.engine
    chunk = e.max_num_batched_tokens or e.max_model_len
    steps += [
        PrepareStep(
            creates=f"{out}/params_shard_0.bin",
            argv=["mlc_llm", "convert_weight", source, "--quantization", quant, *user_value(plan, "--output", out)],
            what=f"convert the weights to MLC {quant}",
        ),
        PrepareStep(
            creates=f"{out}/mlc-chat-config.json",
            argv=[
                "mlc_llm", "gen_config", source, "--quantization", quant, "--conv-template", template,
                "--context-window-size", str(e.max_model_len), "--prefill-chunk-size", str(chunk),
                "--max-batch-size", str(e.max_num_seqs), "--tensor-parallel-shards", str(plan.parallelism.tensor_parallel_size),
                *user_value(plan, "--output", out),
            ],
            what=f"write mlc-chat-config.json (conversation template {template})",
        ),
        PrepareStep(
            creates=f"{out}/lib.so",
            argv=["mlc_llm", "compile", f"{out}/mlc-chat-config.json", "--device", "cuda", *user_value(plan, "--output", f"{out}/lib.so")],
            what="compile the model library for this GPU",
        ),
    ]
    return steps


def exllamav2_steps(plan: DeploymentPlan, ref: ModelRef, where: Where) -> list[PrepareStep]:
    """Download, then convert to EXL2 with exllamav2's own converter (exllamav2 0.3.2, conversion/convert_exl2.py)."""
    steps, source = _source(plan, ref, where)
    if plan.quantization.method != "exl2":
        return steps  # GPTQ checkpoints are served as downloaded
    out = prepared_model(plan, ref, where)
    work = f"{_base(plan, where)}/exl2-work/{_name(plan)}"
    python = "python3" if where == "host" else "/opt/venv/bin/python"
    steps.append(
        PrepareStep(
            creates=f"{out}/config.json",
            argv=[
                python, "-m", "exllamav2.conversion.convert_exl2", *user_value(plan, "--in_dir", source),
                *user_value(plan, "--out_dir", work), *user_value(plan, "--compile_full", out), "--bits", str(plan.quantization.bits),
            ],
            what=f"convert to EXL2 at {plan.quantization.bits} bits per weight (measurement + quantization on this GPU)",
        )
    )
    return steps
