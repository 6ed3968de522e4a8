"""Derive argparse options from a pydantic model's fields, so the Python API and the CLI cannot drift.

After vLLM's EngineArgs: ``bool`` becomes ``--x/--no-x``, a ``Literal`` becomes choices, ``list[...]``
takes comma-separated values, and each field's ``description`` is its help text (a test fails any
field without one). Field ``foo_bar`` becomes ``--foo-bar``.
"""

from __future__ import annotations

import argparse
import types
import typing
from pathlib import Path
from typing import Any, Literal, Union, get_args, get_origin

from pydantic import BaseModel, ValidationError

from ..errors import RequestError


def _unwrap_optional(tp: Any) -> Any:
    if get_origin(tp) in (Union, types.UnionType):
        args = [a for a in get_args(tp) if a is not type(None)]
        if len(args) == 1:
            return args[0]
    return tp


def _parse_list(item: Any):
    def parse(text: str) -> list:
        parts = [p.strip() for p in text.split(",") if p.strip()]
        if item in (int, float):
            try:
                return [item(p) for p in parts]
            except ValueError:
                raise argparse.ArgumentTypeError(f"expected comma-separated numbers, got '{text}'") from None
        return parts

    return parse


def add_model_arguments(
    parser: argparse.ArgumentParser | argparse._ArgumentGroup,
    model: type[BaseModel],
    *,
    exclude: set[str] = frozenset(),
    positional: set[str] = frozenset(),
) -> None:
    """Add one option per field of ``model`` (fields in ``positional`` become positional arguments)."""
    hints: dict[str, Any] | None = None  # typing.get_type_hints, only for an annotation pydantic left unresolved
    for name, field in model.model_fields.items():
        if name in exclude:
            continue
        annotation = field.annotation  # evaluated by pydantic, Annotated metadata stripped, as get_type_hints gives it
        if annotation is None or isinstance(annotation, (str, typing.ForwardRef)):
            hints = typing.get_type_hints(model) if hints is None else hints
            annotation = hints.get(name, annotation)
        tp = _unwrap_optional(annotation)
        flag = "--" + name.replace("_", "-")
        help_ = field.description or ""
        kwargs: dict[str, Any] = {"dest": name, "help": help_, "default": argparse.SUPPRESS}
        if name in positional:
            parser.add_argument(name, help=help_)
            continue
        origin = get_origin(tp)
        if tp is bool:
            parser.add_argument(flag, action=argparse.BooleanOptionalAction, **kwargs)
            continue
        if origin is Literal:
            choices = [str(c) for c in get_args(tp)]
            kwargs["choices"] = choices
            kwargs["metavar"] = "{" + ",".join(choices) + "}"
        elif origin in (list, tuple):
            item = get_args(tp)[0] if get_args(tp) else str
            kwargs["type"] = _parse_list(item)
            kwargs["metavar"] = "A,B,..."
        elif tp in (int, float):
            kwargs["type"] = tp
            kwargs["metavar"] = "N"
        elif tp is Path:
            kwargs["metavar"] = "PATH"
        if not field.is_required():
            default = field.get_default(call_default_factory=True)
            if default is not None and default != [] and default != {}:
                shown = ",".join(map(str, default)) if isinstance(default, (list, tuple)) else default
                kwargs["help"] = f"{help_} (default: {shown})"
        if field.is_required():
            kwargs["required"] = True
            kwargs.pop("default")
        parser.add_argument(flag, **kwargs)


def model_from_namespace(model: type[BaseModel], ns: argparse.Namespace, **extra: Any):
    """Build ``model`` from the parsed options; a validation problem becomes one RequestError line."""
    values = {k: v for k, v in vars(ns).items() if k in model.model_fields}
    values.update(extra)
    try:
        return model(**values)
    except ValidationError as err:
        first = err.errors()[0]
        loc = ".".join(str(p) for p in first.get("loc", ()))
        opt = "--" + loc.replace("_", "-") if loc else "input"
        msg = str(first.get("msg")).removeprefix("Value error, ")
        raise RequestError(msg if msg.startswith(opt + " ") or msg.startswith("--") else f"{opt}: {msg}") from None
