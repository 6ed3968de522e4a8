"""Every shipped YAML data and rule file has each mapping key once.

PyYAML keeps the last of two equal keys silently, so a format (or GPU, engine, rule field) defined twice after a merge
loads as whichever definition comes last, with no error. formats.yaml held two `nvfp4` entries this way twice (the
catalog and catalog2 merges).
"""

from __future__ import annotations

import pytest
import yaml

from infer_advisor._paths import shipped


class _StrictLoader(yaml.SafeLoader):
    pass


def _mapping(loader: _StrictLoader, node: yaml.MappingNode, deep: bool = False):
    seen: dict = {}
    for key_node, _ in node.value:
        key = loader.construct_object(key_node, deep=deep)
        if key in seen:
            raise yaml.constructor.ConstructorError(
                None, None, f"key {key!r} defined twice (first at line {seen[key] + 1})", key_node.start_mark
            )
        seen[key] = key_node.start_mark.line
    return yaml.SafeLoader.construct_mapping(loader, node, deep)


_StrictLoader.add_constructor(yaml.resolver.BaseResolver.DEFAULT_MAPPING_TAG, _mapping)

FILES = sorted(shipped("data").rglob("*.yaml")) + sorted(shipped("rules").rglob("*.yaml"))


def test_the_shipped_files_are_found():
    names = {p.name for p in FILES}
    assert {"formats.yaml", "gpus.yaml", "engines.yaml", "published_checkpoints.yaml", "quantization.yaml"} <= names


@pytest.mark.parametrize("path", FILES, ids=lambda p: f"{p.parent.name}/{p.name}")
def test_no_key_is_defined_twice(path):
    list(yaml.load_all(path.read_text(encoding="utf-8"), Loader=_StrictLoader))


def test_the_strict_loader_catches_a_second_definition():
    with pytest.raises(yaml.constructor.ConstructorError, match="'nvfp4' defined twice"):
        yaml.load("formats:\n  nvfp4: {bits: 4}\n  int8: {bits: 8}\n  nvfp4: {bits: 4}\n", Loader=_StrictLoader)
