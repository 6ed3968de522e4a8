"""The shared writer (infer_advisor/_output.py): nothing of the user's lost, one winner among concurrent writers,
no leftovers after a kill, one clean error for a path that cannot be written."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import textwrap
import threading
import time
from pathlib import Path

import pytest

from infer_advisor._output import MANIFEST, read_manifest, write_file
from infer_advisor._output_folders import claim_folder, staged
from infer_advisor.errors import InferAdvisorError, OutputExistsError, OutputPathError

ROOT = Path(__file__).resolve().parents[1]


def _write(out, files: dict[str, str], force: bool = False) -> None:
    with staged(out, force=force, kind="emit") as work:
        for name, text in files.items():
            (work / name).parent.mkdir(parents=True, exist_ok=True)
            (work / name).write_text(text)


def test_new_folder_gets_its_files_and_a_manifest(tmp_path):
    _write(tmp_path / "out", {"a.txt": "1", "sub/b.txt": "2"})
    assert (tmp_path / "out" / "sub" / "b.txt").read_text() == "2"
    manifest = read_manifest(tmp_path / "out")
    assert manifest["files"] == ["a.txt", "sub/b.txt"] and manifest["complete"] and manifest["kind"] == "emit"
    assert [p.name for p in tmp_path.iterdir()] == ["out"]  # no staging folder left beside it


def test_force_replaces_only_what_we_wrote(tmp_path):
    out = tmp_path / "out"
    _write(out, {"a.txt": "1", "sub/b.txt": "2"})
    _write(out, {"c.txt": "3"}, force=True)
    assert sorted(p.relative_to(out).as_posix() for p in out.rglob("*")) == [MANIFEST, "c.txt"]


def test_force_refuses_a_folder_holding_other_files_and_removes_nothing(tmp_path):
    """The probe: `plan --emit all --out "$PWD" --force` in a project folder deleted its src/ and notes."""
    project = tmp_path / "project"
    (project / "src").mkdir(parents=True)
    (project / "src" / "main.py").write_text("print('mine')")
    (project / "notes.md").write_text("my notes")
    with pytest.raises(OutputPathError, match=r"did not write \(notes.md, src/main.py\).*--force replaces only"):
        _write(project, {"serve.sh": "x"}, force=True)
    assert (project / "src" / "main.py").read_text() == "print('mine')" and (project / "notes.md").is_file()
    assert sorted(p.name for p in project.iterdir()) == ["notes.md", "src"]  # no staging folder left inside
    # A user file added beside our files is protected the same way.
    _write(tmp_path / "deploy", {"serve.sh": "x"})
    (tmp_path / "deploy" / "my-values.yaml").write_text("mine")
    with pytest.raises(OutputPathError, match="my-values.yaml"):
        _write(tmp_path / "deploy", {"serve.sh": "y"}, force=True)
    assert (tmp_path / "deploy" / "serve.sh").read_text() == "x"


def test_out_dot_works_and_the_current_directory_survives(tmp_path, monkeypatch):
    """The probe: `--out . --force` ended in EBUSY and left an empty `..old.*` folder."""
    here = tmp_path / "here"
    here.mkdir()
    monkeypatch.chdir(here)
    _write(".", {"serve.sh": "1"})
    _write(".", {"serve.sh": "2", "README.md": "r"}, force=True)
    assert Path.cwd() == here and os.path.samefile(".", here)
    assert sorted(p.name for p in here.iterdir()) == [MANIFEST, "README.md", "serve.sh"]
    assert (here / "serve.sh").read_text() == "2"
    assert [p.name for p in tmp_path.iterdir()] == ["here"]


def test_home_directory_with_user_files_is_never_cleared(tmp_path, monkeypatch):
    home = tmp_path / "home"
    home.mkdir()
    (home / ".bashrc").write_text("mine")
    monkeypatch.setenv("HOME", str(home))
    with pytest.raises(OutputPathError):
        _write("~", {"serve.sh": "x"}, force=True)
    assert sorted(p.name for p in home.iterdir()) == [".bashrc"]


def test_a_file_in_the_way_is_not_a_folder(tmp_path):
    (tmp_path / "f").write_text("mine")
    for force in (False, True):
        with pytest.raises(OutputPathError, match="is a file, not a folder"):
            _write(tmp_path / "f", {"a": "1"}, force=force)
    assert (tmp_path / "f").read_text() == "mine"


@pytest.mark.parametrize(
    ("where", "why"),
    [
        ("/proc/x", "No such file or directory"),
        ("/sys/x", "Operation not permitted"),
        ("FILE/sub", "a part of the path is a file"),
        ("FILE/a/b", "a part of the path is a file"),
        ("LONG", "too long"),
    ],
)
def test_an_out_that_cannot_be_created_is_one_clean_error(tmp_path, where, why):
    if where.startswith("/sys") and not os.path.isdir("/sys/kernel"):
        pytest.skip("no sysfs here")
    (tmp_path / "FILE").write_text("x")
    path = str(tmp_path / where) if where.startswith("FILE") else where
    path = str(tmp_path / ("n" * 300)) if where == "LONG" else path
    for call in (
        lambda: _write(path, {"a": "1"}),
        lambda: claim_folder(path, force=False, kind="bench"),
        lambda: write_file(Path(path) / "cal.json", b"{}", force=False, ours=lambda p: True),
    ):
        with pytest.raises(OutputPathError, match=why) as info:
            call()
        assert isinstance(info.value, InferAdvisorError) and "\n" not in str(info.value)
    assert sorted(p.name for p in tmp_path.iterdir()) == ["FILE"]


def test_read_only_parent(tmp_path):
    """A read-only parent is one OutputPathError line. Root writes anywhere, so as root the write runs in a forked
    child that has dropped to an unprivileged user (CI runs as root)."""
    ro = tmp_path / "ro"
    ro.mkdir(mode=0o555)
    for parent in (tmp_path, *tmp_path.parents):
        if parent == Path("/"):
            break
        os.chmod(parent, os.stat(parent).st_mode | 0o005)  # the unprivileged child must reach the folder
    read_end, write_end = os.pipe()
    pid = os.fork()
    if pid == 0:  # child
        os.close(read_end)
        status = 2
        try:
            if os.geteuid() == 0:
                os.setgid(65534)
                os.setuid(65534)
            try:
                claim_folder(ro / "out", force=False, kind="bench")
                status = 1
            except OutputPathError as err:
                os.write(write_end, str(err).encode())
                status = 0
        finally:
            os._exit(status)
    os.close(write_end)
    _, status = os.waitpid(pid, 0)
    message = os.read(read_end, 4096).decode()
    os.close(read_end)
    assert os.waitstatus_to_exitcode(status) == 0, message
    assert "Permission denied" in message and "\n" not in message
    assert not (ro / "out").exists()


def _race(n_trials: int, writer) -> list[tuple[str, str]]:
    """Run two writers on the same target ``n_trials`` times, released together; each trial's two outcomes."""
    outcomes = []
    for trial in range(n_trials):
        barrier = threading.Barrier(2)
        results: list[str] = ["", ""]

        def run(i: int) -> None:
            barrier.wait()
            try:
                writer(trial, i)
                results[i] = "ok"
            except OutputExistsError:
                results[i] = "exists"
            except BaseException as err:  # noqa: BLE001 - any other outcome fails the test below
                results[i] = f"{type(err).__name__}: {err}"

        threads = [threading.Thread(target=run, args=(i,)) for i in range(2)]
        for t in threads:
            t.start()
        for t in threads:
            t.join()
        outcomes.append((results[0], results[1]))
    return outcomes


def test_two_concurrent_writers_one_wins_the_other_gets_exists(tmp_path):
    """The probe: in 140 of 150 synchronised trials both reported success; 4 crashed with 'Directory not empty'."""

    def writer(trial: int, i: int) -> None:
        _write(tmp_path / f"out{trial}", {"who.txt": str(i), f"only-{i}.txt": "x"})

    outcomes = _race(60, writer)
    assert all(sorted(o) == ["exists", "ok"] for o in outcomes), outcomes
    for trial, o in enumerate(outcomes):
        winner = o.index("ok")
        out = tmp_path / f"out{trial}"
        assert (out / "who.txt").read_text() == str(winner)
        assert sorted(p.name for p in out.iterdir()) == [MANIFEST, f"only-{winner}.txt", "who.txt"]
    assert sorted(p.name for p in tmp_path.iterdir()) == sorted(f"out{t}" for t in range(60))


def test_concurrent_writers_into_an_existing_empty_folder(tmp_path):
    def writer(trial: int, i: int) -> None:
        _write(tmp_path / f"out{trial}", {"who.txt": str(i)})

    for trial in range(50):
        (tmp_path / f"out{trial}").mkdir()
    outcomes = _race(50, writer)
    assert all(sorted(o) == ["exists", "ok"] for o in outcomes), outcomes


def test_concurrent_bench_claims_and_calibration_files(tmp_path):
    def claim(trial: int, i: int) -> None:
        claim_folder(tmp_path / f"bench{trial}", force=False, kind="bench").write("bench.json", str(i).encode())

    def calibrate(trial: int, i: int) -> None:
        write_file(tmp_path / f"cal{trial}.json", str(i).encode(), force=False, ours=lambda p: True)

    for writer in (claim, calibrate):
        outcomes = _race(50, writer)
        assert all(sorted(o) == ["exists", "ok"] for o in outcomes), outcomes
    assert not [p for p in tmp_path.iterdir() if p.name.startswith(".")]  # no temp files left


_CHILD = textwrap.dedent(
    """
    import sys, time
    from infer_advisor._output_folders import staged
    with staged(sys.argv[1], force=False, kind="quantize") as work:
        (work / "model.bin").write_bytes(b"half")
        print("staging", flush=True)
        time.sleep(60)
    """
)


def _child(out: Path) -> subprocess.Popen:
    env = {**os.environ, "PYTHONPATH": str(ROOT / "src")}
    proc = subprocess.Popen([sys.executable, "-c", _CHILD, str(out)], stdout=subprocess.PIPE, text=True, env=env)
    assert proc.stdout.readline().strip() == "staging"
    return proc


def test_a_killed_writer_leaves_a_staging_folder_the_next_run_removes(tmp_path):
    out = tmp_path / "model-q"
    proc = _child(out)
    proc.send_signal(signal.SIGKILL)
    proc.wait()
    left = [p.name for p in tmp_path.iterdir()]
    assert len(left) == 1 and left[0].startswith(".model-q.partial-")
    cleaned: list[Path] = []
    with staged(out, force=False, kind="quantize", cleaned=cleaned) as work:
        (work / "model.bin").write_bytes(b"whole")
    assert [p.name for p in cleaned] == left
    assert sorted(p.name for p in tmp_path.iterdir()) == ["model-q"]


def test_a_live_writer_keeps_its_staging_folder_and_foreign_folders_stay(tmp_path):
    out = tmp_path / "model-q"
    stranger = tmp_path / ".model-q.partial-notours"  # same pattern, no marker: not ours
    stranger.mkdir()
    proc = _child(out)
    try:
        live = [p for p in tmp_path.iterdir() if p.name.startswith(".model-q.partial-") and p != stranger]
        with pytest.raises(OutputExistsError):  # the live writer's folder is not touched; the file race is ours
            with staged(out, force=False, kind="quantize") as work:
                (work / "x").write_text("x")
                out.mkdir()
                (out / "someone").write_text("else")
        assert all(p.exists() for p in live) and stranger.exists()
    finally:
        proc.kill()
        proc.wait()


def test_interrupted_merge_is_listed_in_the_manifest(tmp_path):
    """An existing folder is updated file by file; the manifest lists old and new files until the end."""
    out = tmp_path / "out"
    _write(out, {"a": "1"})
    with pytest.raises(KeyboardInterrupt):
        with staged(out, force=True, kind="emit") as work:
            (work / "b").write_text("2")
            raise KeyboardInterrupt
    assert sorted(p.name for p in out.iterdir()) == [MANIFEST, "a"]  # untouched, staging removed
    assert json.loads((out / MANIFEST).read_text())["files"] == ["a"]


def test_claimed_folder_lists_each_file_before_writing_it(tmp_path):
    folder = claim_folder(tmp_path / "b", force=False, kind="bench")
    folder.write("bench.json", b"{}")
    assert read_manifest(tmp_path / "b")["files"] == ["bench.json"] and not read_manifest(tmp_path / "b")["complete"]
    folder.finish()
    assert read_manifest(tmp_path / "b")["complete"]
    with pytest.raises(OutputExistsError):
        claim_folder(tmp_path / "b", force=False, kind="bench")
    claim_folder(tmp_path / "b", force=True, kind="bench")  # ours: the old files go at once
    assert sorted(p.name for p in (tmp_path / "b").iterdir()) == [MANIFEST]


def test_single_file_force_replaces_only_our_files(tmp_path):
    target = tmp_path / "cal.json"
    target.write_text("user data")
    with pytest.raises(OutputExistsError):
        write_file(target, b"new", force=False, ours=lambda p: False)
    with pytest.raises(OutputPathError, match="was not written by infer-advisor"):
        write_file(target, b"new", force=True, ours=lambda p: False)
    assert target.read_text() == "user data"
    write_file(target, b"new", force=True, ours=lambda p: True)
    assert target.read_text() == "new"
    assert sorted(p.name for p in tmp_path.iterdir()) == ["cal.json"]


def test_force_keeps_a_nested_output_of_ours(tmp_path):
    """An emitted folder's README has `infer-advisor quantize --out models/...` run inside it; --force keeps it."""
    out = tmp_path / "deploy"
    _write(out, {"serve.sh": "1", "README.md": "r"})
    with staged(out / "models" / "tiny-awq", force=False, kind="quantize") as work:
        (work / "model.safetensors").write_bytes(b"w")
    _write(out, {"serve.sh": "2"}, force=True)
    assert (out / "models" / "tiny-awq" / "model.safetensors").read_bytes() == b"w"
    assert sorted(p.name for p in out.iterdir()) == [MANIFEST, "models", "serve.sh"]


_KILLED_FILE_WRITER = textwrap.dedent(
    """
    import sys, time
    from infer_advisor import _output

    def stuck(fd, data):
        print("writing", flush=True)
        time.sleep(60)
    _output._write_all = stuck
    _output.write_file(sys.argv[1], b"{}", force=False, ours=lambda p: True)
    """
)


def test_a_killed_single_file_writer_leaves_a_temp_the_next_run_removes(tmp_path, monkeypatch):
    import infer_advisor._output as output

    env = {**os.environ, "PYTHONPATH": str(ROOT / "src")}
    target = tmp_path / "cal.json"
    proc = subprocess.Popen([sys.executable, "-c", _KILLED_FILE_WRITER, str(target)], stdout=subprocess.PIPE, text=True, env=env)
    assert proc.stdout.readline().strip() == "writing"
    (left,) = [p.name for p in tmp_path.iterdir()]
    assert left.startswith(".cal.json.partial-") and left.endswith(".tmp")
    monkeypatch.setattr(output, "_TEMP_GRACE_S", 0.0)
    write_file(target, b"{}", force=False, ours=lambda p: True)  # the writer lives: its temp file stays
    assert sorted(p.name for p in tmp_path.iterdir()) == sorted([left, "cal.json"])
    proc.kill()
    proc.wait()
    write_file(target, b"{}", force=True, ours=lambda p: True)
    assert sorted(p.name for p in tmp_path.iterdir()) == ["cal.json"]
