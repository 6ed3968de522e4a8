"""`infer-advisor models`: the embedded model catalog, or one model's facts.

    infer-advisor models                          # catalog by family: type, params, context, weight format
    infer-advisor models --family qwen3           # only the families whose name contains 'qwen3'
    infer-advisor models --json                   # the same as JSON (ModelsReport)
    infer-advisor models meta-llama/Llama-2-7b-hf # one model: local folder, Hub or catalog
    infer-advisor models ./my-model --json        # ModelFacts as JSON
    infer-advisor models add config.json --id OWNER/NAME [--family F] [--alias A] [--variant ID[=KIND]]
                                                  # validate a config.json, compute its counts, write the catalog file

Parameter counts are computed from config.json (analytic, equal to what transformers builds); the
source column says where the config came from (catalog, hub or local).
"""

from __future__ import annotations

import argparse
import json
from pathlib import Path
from typing import Literal

from pydantic import BaseModel, ConfigDict, Field

HELP = "List the embedded model catalog, or show one model's facts."

BILLION = 1e9  # parameters per billion, for display


class ModelsOptions(BaseModel):
    """Options of `infer-advisor models`."""

    model_config = ConfigDict(extra="forbid")

    name: str | None = Field(
        default=None, description="Show this model's facts (local folder, Hub id, catalog name or alias)."
    )
    json_output: bool = Field(default=False, description="Print JSON instead of a table.")
    source: Literal["auto", "local", "hub", "catalog"] = Field(
        default="auto",
        description="Where to look for NAME: auto tries local, then the Hub when online, then the catalog.",
    )
    revision: str | None = Field(default=None, description="Hub branch, tag or commit of NAME.")
    family: str | None = Field(
        default=None, description="List only the catalog families whose name contains this text (any case)."
    )


class CatalogRow(BaseModel):
    """One line of the catalog listing."""

    model_config = ConfigDict(extra="forbid")

    name: str = Field(description="Canonical Hugging Face id.")
    family: str = Field(default="", description="Model family (Llama 3.1, Qwen3, gpt-oss ...).")
    variants: list[str] = Field(default_factory=list, description="Other Hub ids sized by the same config.")
    architecture: str = Field(description="config.json architectures[0].")
    params_billions: float = Field(description="Total parameters in billions (computed from the catalog config).")
    active_params_billions: float = Field(
        description="Parameters per token in billions (MoE: routed top-k only), the input embedding included."
    )
    context: int = Field(description="max_position_embeddings from the catalog config.")
    pre_quantized: str | None = Field(default=None, description="Quantization already in the checkpoint, if any.")
    source: str = Field(description="URL of the config.json the catalog entry was copied from.")
    model_type: str = Field(default="", description="The model type it is sized as (config.json model_type).")
    weight_format: str | None = Field(
        default=None, description="Weight format of a pre-quantized checkpoint (data/formats.yaml key), else None."
    )
    active_params_billions_without_embedding: float = Field(
        default=0.0,
        description="Parameters per token in billions without the input embedding, as model cards count "
        "(gpt-oss-120b 5.13).",
    )


class ModelsReport(BaseModel):
    """What `infer-advisor models --json` prints."""

    model_config = ConfigDict(extra="forbid")

    models: list[CatalogRow] = Field(description="Every catalog model (figures: computed from catalog configs).")


def configure(parser: argparse.ArgumentParser) -> None:
    from ._derive import add_model_arguments

    parser.description = (
        "List the embedded model catalog by family, show one model's facts, or `add CONFIG.json --id OWNER/NAME` "
        "a model to your catalog (validates the config, computes its counts, writes OWNER--NAME.json and the name index "
        "in the user catalog folder, $INFER_ADVISOR_HOME/models or the XDG data dir, which a reinstall keeps)."
    )
    parser.add_argument("name", nargs="?", default=None, help=ModelsOptions.model_fields["name"].description)
    parser.add_argument("config", nargs="?", default=None, help="With `add`: the config.json to add.")
    add = parser.add_argument_group("models add")
    add.add_argument("--id", dest="model_id", help="Hub id of the model being added (default: the config's _name_or_path).")
    add.add_argument(
        "--family", default=None,
        help="With `add`: the family shown in the listing, e.g. 'Qwen3'. Listing: " + ModelsOptions.model_fields["family"].description,
    )
    add.add_argument("--alias", action="append", default=[], help="A short name (repeatable).")
    add.add_argument("--variant", action="append", default=[], help="Another Hub id with the same config, ID[=KIND] (repeatable).")
    add.add_argument("--config-source", dest="config_source", help="URL of the published config.json (default: its Hub URL).")
    add.add_argument("--retrieved-from", dest="retrieved_from", help="Where this copy was read, when not the Hub.")
    add.add_argument(
        "--catalog-dir", dest="catalog_dir", type=Path,
        help="Catalog folder to write (default: the user catalog folder, $INFER_ADVISOR_HOME/models, else "
        "$XDG_DATA_HOME/infer_advisor/models or ~/.local/share/infer_advisor/models).",
    )
    add.add_argument("--force", action="store_true", help="Replace an existing entry of the same id.")
    from ._format import add_format_option

    field = ModelsOptions.model_fields["json_output"]
    add_format_option(parser, ("table", "json"), json_dest="json_output", json_help=field.description + " Same as --format json.")
    add_model_arguments(parser, ModelsOptions, exclude={"name", "json_output", "family"})


def catalog_report() -> ModelsReport:
    from ..model_facts import facts_from_config
    from ..model_facts.catalog import load_catalog

    rows = []
    for entry in load_catalog():
        f = facts_from_config(entry.name, entry.config, "catalog")
        rows.append(
            CatalogRow(
                name=entry.name,
                family=entry.family,
                variants=[v.name for v in entry.variants],
                architecture=f.architecture,
                params_billions=round(f.num_parameters / BILLION, 2),
                active_params_billions=round(f.num_active_parameters / BILLION, 2),
                context=f.max_position_embeddings,
                pre_quantized=f.pre_quantized,
                source=entry.source,
                model_type=f.model_type,
                weight_format=f.weight_format,
                active_params_billions_without_embedding=round(f.num_active_parameters_without_embedding / BILLION, 2),
            )
        )
    return ModelsReport(models=rows)


def run(ns: argparse.Namespace) -> int:
    from ._derive import model_from_namespace

    if ns.name == "add":
        return _add(ns)
    if ns.config is not None:
        from ..errors import RequestError

        raise RequestError(f"unexpected argument '{ns.config}' (did you mean `infer-advisor models add {ns.config}`?)")
    from ._format import output_format

    ns.json_output = output_format(ns, json_dest="json_output") == "json"
    opts = model_from_namespace(ModelsOptions, ns)
    if opts.name is None:
        report = catalog_report()
        if opts.family:
            report = ModelsReport(models=[r for r in report.models if opts.family.lower() in r.family.lower()])
        if opts.json_output:
            print(json.dumps(report.model_dump(mode="json"), indent=2))
        else:
            _print_catalog(report)
        return 0
    from ..model_facts import resolve_model

    facts = resolve_model(opts.name, revision=opts.revision, source=opts.source)
    if opts.json_output:
        print(json.dumps(facts.model_dump(mode="json"), indent=2))
    else:
        _print_facts(facts)
    return 0


def _add(ns: argparse.Namespace) -> int:
    from ..errors import RequestError
    from ..model_facts.add import add_model
    from ..model_facts.catalog import entry_path, user_folder

    if ns.config is None:
        raise RequestError("usage: infer-advisor models add CONFIG.json --id OWNER/NAME")
    entry, facts = add_model(
        Path(ns.config), ns.model_id, family=ns.family or "", aliases=ns.alias, variants=ns.variant,
        source=ns.config_source, retrieved_from=ns.retrieved_from, catalog_dir=ns.catalog_dir, force=ns.force,
    )
    from ..untrusted import escape_unsafe

    print(escape_unsafe(
        f"added {entry.name} ({facts.architecture}): {facts.num_parameters:,} parameters "
        f"({facts.num_active_parameters_without_embedding:,} active per token without the input embedding), "
        f"{facts.num_layers} layers {dict(facts.layer_counts)}, "
        f"context {facts.max_position_embeddings:,}"
    ))
    from ..untrusted import escape_unsafe as terminal_text  # the one sanitiser (markup=False below)
    from ._console import make_console

    # The folder comes from the user (--catalog-dir, INFER_ADVISOR_HOME): through the terminal escaper, printed as text
    where = terminal_text(str(entry_path(entry.name, ns.catalog_dir or user_folder())))
    make_console().print(f"wrote {where}", markup=False, soft_wrap=True)
    return 0


def _print_catalog(report: ModelsReport) -> None:
    from rich import box
    from ..untrusted import safe_table

    from ._console import fit_width, make_console

    ids = len(report.models) + sum(len(r.variants) for r in report.models)
    table = safe_table(
        title=f"Model catalog by family: {len(report.models)} configs, {ids} Hub ids; params computed from each config.json",
        caption="source: catalog (config.json copied from the Hub; URLs in --json). active B: parameters per token "
        "without the input embedding, as model cards count. Variants (+) share their entry's config. `--family TEXT` lists one family; `infer-advisor models NAME` shows one model.",
        box=box.SIMPLE_HEAD,
    )
    table.add_column("family", no_wrap=True)
    table.add_column("name (+ variants)", no_wrap=True)
    table.add_column("type", no_wrap=True)
    for col in ("params B", "active B", "context"):
        table.add_column(col, justify="right", no_wrap=True)
    table.add_column("weights", no_wrap=True)
    rows = sorted(report.models, key=lambda r: (r.family.lower() or "~", r.params_billions, r.name.lower()))
    last = None
    for r in rows:
        if last is not None and r.family != last:
            table.add_section()
        names = "\n".join([r.name, *(f"  + {v}" for v in r.variants)])
        table.add_row(
            r.family if r.family != last else "",
            names,
            r.model_type,
            f"{r.params_billions:.2f}",
            f"{r.active_params_billions_without_embedding:.2f}",
            f"{r.context:,}",
            r.weight_format or r.pre_quantized or "-",
        )
        last = r.family
    console = make_console()
    fit_width(console, table)  # a file or pipe: as wide as the rows need, so no figure is cut
    console.print(table)


def _print_facts(facts) -> None:
    from ._console import make_console
    from ..untrusted import safe_table

    origin = {"catalog": "catalog config.json", "hub": "Hub config.json", "local": "local config.json"}[facts.source]
    table = safe_table(title=f"{facts.name}  (source: {facts.source})")
    table.add_column("fact")
    table.add_column("value", justify="right")
    table.add_column("from")
    computed = f"computed from {origin}"
    rows = [
        ("architecture", facts.architecture, origin),
        ("model_type / family / attention", f"{facts.model_type} / {facts.family} / {facts.attention}", origin),
        ("parameters", f"{facts.num_parameters:,}", computed),
        (
            "active parameters / token",
            f"{facts.num_active_parameters_without_embedding:,} ({facts.num_active_parameters:,} with the input embedding)",
            computed,
        ),
        ("  embedding / lm_head", f"{facts.params.embedding:,} / {facts.params.lm_head:,}", computed),
        (
            "  linear (experts) / other",
            f"{facts.params.linear:,} ({facts.params.expert_linear:,}) / {facts.params.other:,}",
            computed,
        ),
        (
            "layers / hidden / intermediate",
            f"{facts.num_layers} / {facts.hidden_size} / {facts.intermediate_size}",
            origin,
        ),
        (
            "heads / kv heads / head_dim",
            f"{facts.num_attention_heads} / {facts.num_kv_heads} / {facts.head_dim}",
            origin,
        ),
        ("vocab / context", f"{facts.vocab_size:,} / {facts.max_position_embeddings:,}", origin),
        ("KV elements / token (full attn)", f"{facts.kv_cache_elements_per_token:,}", computed),
        ("KV bytes / token at 16-bit", f"{facts.kv_cache_bytes_per_token(2):,.0f}", computed),
    ]
    if facts.sliding_window:
        rows.append(
            (
                "sliding window",
                f"{facts.sliding_window:,}" + (" (all layers)" if facts.uniform_sliding_window else ""),
                origin,
            )
        )
        rows.append(("KV elements / token (window)", f"{facts.sliding_kv_elements_per_token:,}", computed))
    if facts.num_experts:
        rows.append(
            (
                "experts (top-k, shared)",
                f"{facts.num_experts} ({facts.num_experts_per_token}, {facts.num_shared_experts})",
                origin,
            )
        )
    rows.append(("dtype", facts.torch_dtype, origin))
    if facts.pre_quantized:
        # The weight format names what the bytes are (nvidia/DeepSeek-V4-*-NVFP4 say quant_method fp8 but store NVFP4
        # experts: fp8-block-nvfp4-experts); quant_method alone would call them fp8.
        value = facts.weight_format or facts.pre_quantized
        if facts.weight_format and facts.weight_format != facts.pre_quantized:
            value += f" (quant_method {facts.pre_quantized})"
        rows.append(("pre-quantized weights", value, f"{origin} quantization_config"))
    if facts.safetensors:
        st = facts.safetensors
        rows.append(
            ("safetensors tensors / files", f"{st.num_tensors:,} / {st.num_files}", "measured: safetensors headers")
        )
        rows.append(("safetensors parameters", f"{st.num_parameters:,}", "measured: safetensors headers"))
        by = ", ".join(f"{k} {v / 2**30:.2f} GiB" for k, v in st.bytes_by_dtype.items())
        rows.append(("safetensors bytes", by, "measured: safetensors headers"))
    for row in rows:
        table.add_row(*row)
    make_console().print(table)
