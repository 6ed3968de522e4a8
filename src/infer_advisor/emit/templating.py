"""Jinja environment, quoting filters and per-engine-version template lookup.

Templates live in ``templates/<engine>/<artifact>.<version><ext>.j2`` (``templates/vllm/serve.0.33.sh.j2``).
The exact version is chosen when present (``0.33`` matches engine version ``0.33.0``), else the closest earlier
one with a :class:`TemplateVersionWarning`; there is never a later one.
"""

from __future__ import annotations

import json
import re
import warnings
from functools import cache
from typing import Any

from markupsafe import Markup

from ..errors import EmitError
from ..untrusted import escape_unsafe, json_text, markdown_cell, markdown_code, unsafe_chars
from .quote import sh_join, sh_quote


class TemplateVersionWarning(UserWarning):
    """The templates target an earlier engine version than the plan's."""


def _version_key(text: str) -> tuple[int, ...]:
    return tuple(int(n) for n in re.findall(r"\d+", text))


def _done(text: str) -> Markup:
    """A filter's output: already escaped for its target, so :func:`_finalize` leaves it as it is."""
    return Markup(text)


def _finalize(value: Any) -> Any:
    """Every ``{{ ... }}`` that did not go through a quoting filter (a comment, a README line, a number) has its
    unsafe characters written as visible escapes: a raw value cannot start a line, a YAML key or a document.
    Filter and macro outputs are :class:`Markup` and pass as they are (autoescape is on only to mark them)."""
    if isinstance(value, Markup) or not isinstance(value, str):
        return value
    return Markup(escape_unsafe(value))


def sh(value: Any) -> str:
    """One shell word."""
    return _done(sh_quote(value))


def shjoin(values: list[Any]) -> str:
    return _done(sh_join(values))


def shlines(values: list[Any], indent: str = "  ", head: int = 1) -> str:
    """A quoted command over several lines: the first ``head`` words (the executable) and its positional
    arguments on the first line, then a new line before each ``-flag`` (joined by `` \\``)."""
    lines: list[list[str]] = [[]]
    for i, v in enumerate(map(str, values)):
        if i >= head and v.startswith("-") and lines[-1]:
            lines.append([])
        lines[-1].append(sh_quote(v))
    return _done(f" \\\n{indent}".join(" ".join(line) for line in lines))


def json_value(value: Any) -> str:
    """JSON (Dockerfile exec form arrays, HEALTHCHECK CMD). Backslashes are written ``\\u005c``: the same JSON
    string, but no ``\\"`` that hadolint's parser (and a reader) could take for an escaped quote."""
    text = json.dumps(value, ensure_ascii=False).replace("\\\\", "\\u005c")
    return _done(json_text(text))  # NEL, U+2028, bidi controls (json.dumps keeps them raw): JSON escapes


def _has_unsafe(value: Any) -> bool:
    if isinstance(value, str):
        return bool(unsafe_chars(value))
    if isinstance(value, (list, tuple)):
        return any(_has_unsafe(v) for v in value)
    if isinstance(value, dict):
        return any(_has_unsafe(k) or _has_unsafe(v) for k, v in value.items())
    return False


@cache
def _quoting_dumper():
    """A SafeDumper that writes every string double-quoted: with ``allow_unicode=False`` every character outside
    printable ASCII (NEL, U+2028, bidi controls, newlines) becomes an escape, so the value stays on its line."""
    import yaml

    class QuotingDumper(yaml.SafeDumper):
        pass

    def represent_str(dumper, data):
        return dumper.represent_scalar("tag:yaml.org,2002:str", data, style='"')

    QuotingDumper.add_representer(str, represent_str)
    return QuotingDumper


def yaml_value(value: Any) -> str:
    """A YAML flow value (one line) for ``value``; one holding unsafe characters is written double-quoted and escaped."""
    import yaml

    if _has_unsafe(value):
        text = yaml.dump(value, Dumper=_quoting_dumper(), default_flow_style=True, allow_unicode=False, width=1_000_000,
                         sort_keys=False)
    else:
        text = yaml.safe_dump(value, default_flow_style=True, allow_unicode=True, width=1_000_000, sort_keys=False)
    return _done(text.removesuffix("\n...\n").rstrip("\n"))


def _escape_dollars(value: Any) -> Any:
    if isinstance(value, str):
        return value.replace("$", "$$")
    if isinstance(value, list):
        return [_escape_dollars(v) for v in value]
    if isinstance(value, dict):
        return {k: _escape_dollars(v) for k, v in value.items()}
    return value


def dollar_yaml(value: Any) -> str:
    """YAML for fields that Compose interpolates (``${VAR}``) or Kubernetes expands (``$(VAR)``): ``$`` -> ``$$``."""
    return yaml_value(_escape_dollars(value))


def md(value: Any) -> str:
    """Markdown prose (a README heading, list item or sentence holding a model name, a path or a warning): the
    project's Markdown escaper (:func:`infer_advisor.untrusted.markdown_cell`), so a value can open no link, image,
    code span, table cell or raw HTML."""
    return _done(markdown_cell(value))


def mdcode(value: Any) -> str:
    """A Markdown inline code span (a command or path in README prose): :func:`infer_advisor.untrusted.markdown_code`."""
    return _done(markdown_code(value))


def py(value: Any) -> str:
    """A Python literal (``repr`` escapes every non-printable character)."""
    return _done(repr(value))


@cache
def environment():
    import jinja2

    from .._paths import shipped

    env = jinja2.Environment(
        loader=jinja2.FileSystemLoader(str(shipped("templates"))),
        undefined=jinja2.StrictUndefined,
        # autoescape only marks filter and macro outputs as escaped (Markup); _finalize escapes everything else.
        autoescape=True,
        finalize=_finalize,
        keep_trailing_newline=True,
        trim_blocks=True,
        lstrip_blocks=True,
    )
    env.filters.update(sh=sh, shjoin=shjoin, shlines=shlines, json=json_value, yaml=yaml_value, dyaml=dollar_yaml, py=py, md=md, mdcode=mdcode)
    return env


def template_name(engine: str, artifact: str, ext: str, version: str) -> str:
    """``<engine>/<artifact>.<v><ext>.j2`` for the exact or closest earlier version ``v``."""
    from .._paths import shipped

    folder = shipped("templates") / engine
    pattern = re.compile(rf"^{re.escape(artifact)}\.(?P<v>[^/]+?){re.escape(ext)}\.j2$")
    found = {m.group("v"): p.name for p in folder.glob("*.j2") if (m := pattern.match(p.name))}
    if not found:
        raise EmitError(f"No '{artifact}{ext}' template for {engine} in {folder}.")
    want = _version_key(version)
    for v, name in found.items():
        key = _version_key(v)
        if key and want[: len(key)] == key:
            return f"{engine}/{name}"
    earlier = sorted((k, v) for v in found if (k := _version_key(v)) < want)
    if not earlier:
        raise EmitError(
            f"{engine} {version} is older than every '{artifact}{ext}' template ({', '.join(sorted(found))}); "
            "use a newer engine version or add a template."
        )
    chosen = earlier[-1][1]
    warnings.warn(
        f"No {engine} {version} template for {artifact}{ext}; using the one for {chosen} (closest earlier).",
        TemplateVersionWarning,
        stacklevel=3,
    )
    return f"{engine}/{found[chosen]}"


def render_template(name: str, **values: Any) -> str:
    import jinja2

    try:
        return environment().get_template(name).render(**values)
    except jinja2.TemplateError as err:
        raise EmitError(f"Template {name} failed to render: {err}") from err
