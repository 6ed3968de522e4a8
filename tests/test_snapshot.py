"""Validated data kept between runs (infer_advisor/_snapshot.py): never older than the file, never from a stranger."""

from __future__ import annotations

import os

import pytest
from pydantic import BaseModel, ConfigDict

from infer_advisor import _snapshot
from infer_advisor._data import load_validated
from infer_advisor.errors import DataFileError


class Thing(BaseModel):
    model_config = ConfigDict(extra="forbid")
    size: int


@pytest.fixture
def cache(tmp_path, monkeypatch):
    monkeypatch.setenv("INFER_ADVISOR_CACHE", str(tmp_path / "cache"))
    monkeypatch.delenv("INFER_ADVISOR_NO_SNAPSHOT", raising=False)
    return tmp_path / "cache" / "validated"


def _counting(monkeypatch) -> list[int]:
    calls: list[int] = []
    real = _snapshot.validated_snapshot

    def counted(path, raw, kind, validate):
        return real(path, raw, kind, lambda: (calls.append(1), validate())[1])

    monkeypatch.setattr("infer_advisor._snapshot.validated_snapshot", counted)
    return calls


def test_a_second_read_comes_from_the_snapshot_and_equals_the_validated_value(tmp_path, cache, monkeypatch):
    path = tmp_path / "t.yaml"
    path.write_text("size: 3\n")
    calls = _counting(monkeypatch)
    first = load_validated(path, Thing)
    second = load_validated(path, Thing)
    assert first == second == Thing(size=3) and len(calls) == 1
    assert len(list(cache.glob("*.pickle"))) == 1


def test_a_changed_file_is_validated_again(tmp_path, cache, monkeypatch):
    path = tmp_path / "t.yaml"
    path.write_text("size: 3\n")
    assert load_validated(path, Thing).size == 3
    path.write_text("size: 4\n")
    assert load_validated(path, Thing).size == 4
    path.write_text("size: four\n")
    with pytest.raises(DataFileError, match="size"):
        load_validated(path, Thing)
    assert len(list(cache.glob("*.pickle"))) == 2  # the invalid file is never kept


def test_a_snapshot_others_may_write_is_not_read(tmp_path, cache, monkeypatch):
    path = tmp_path / "t.yaml"
    path.write_text("size: 3\n")
    load_validated(path, Thing)
    (snap,) = cache.glob("*.pickle")
    assert snap.stat().st_mode & 0o077 == 0  # written for this user only
    os.chmod(snap, 0o666)
    calls = _counting(monkeypatch)
    assert load_validated(path, Thing).size == 3
    assert len(calls) == 1  # validated again, not unpickled


def test_a_torn_snapshot_costs_only_a_validation(tmp_path, cache):
    path = tmp_path / "t.yaml"
    path.write_text("size: 3\n")
    load_validated(path, Thing)
    (snap,) = cache.glob("*.pickle")
    snap.write_bytes(b"\x80\x05garbage")
    assert load_validated(path, Thing).size == 3


def test_it_can_be_turned_off(tmp_path, cache, monkeypatch):
    monkeypatch.setenv("INFER_ADVISOR_NO_SNAPSHOT", "1")
    path = tmp_path / "t.yaml"
    path.write_text("size: 3\n")
    assert load_validated(path, Thing).size == 3
    assert not cache.exists()


def test_the_key_follows_the_code(tmp_path, cache, monkeypatch):
    path, raw = tmp_path / "t.yaml", b"size: 3\n"
    before = _snapshot._target(path, raw, "k")
    monkeypatch.setattr(_snapshot, "_code_fingerprint", lambda: "another build")
    assert _snapshot._target(path, raw, "k") != before
    assert _snapshot._target(path, raw, "other kind") != _snapshot._target(path, raw, "k")
