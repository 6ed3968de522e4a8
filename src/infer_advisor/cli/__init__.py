"""The `infer-advisor` command. Each subcommand lives in its own module and is imported only when run.

A subcommand module ``cli/<name>_cmd.py`` exposes::

    HELP = "one line for `infer-advisor --help`"
    def configure(parser: argparse.ArgumentParser) -> None   # add its arguments
    def run(ns: argparse.Namespace) -> int                    # do the work, return the exit code

Exit codes (README "Exit codes"): 0 success; 1 an infeasible plan (or a sized plan that misses a target), an
engine that would refuse to start (``plan --startup-check``), a diagnosis that the engine does not start (``doctor``),
or a quantized output that did not load;
2 bad input, one line on stderr (:class:`infer_advisor.errors.InferAdvisorError`, or an argparse usage error);
3 an unexpected internal error (a bug): one line, and ``--debug`` (or ``INFER_ADVISOR_DEBUG=1``) shows the
traceback; 130 interrupted (Ctrl-C, SIGTERM); 141 stdout closed early (``| head``), quietly, as a shell
reports SIGPIPE.
"""

from __future__ import annotations

import argparse
import contextlib
import functools
import gc
import importlib
import os
import sys

EXIT_OK, EXIT_INFEASIBLE, EXIT_BAD_INPUT, EXIT_INTERNAL, EXIT_INTERRUPTED, EXIT_BROKEN_PIPE = 0, 1, 2, 3, 130, 141

# name -> (module, one-line help). Kept here so `--help` needs no subcommand import.
COMMANDS: dict[str, tuple[str, str]] = {
    "plan": ("plan_cmd", "Recommend engine, quantization, dtype and parallelism; emit launch artifacts."),
    "gpus": ("gpus_cmd", "List the GPUs probed on this machine and the GPU catalog."),
    "models": ("models_cmd", "List the embedded model catalog."),
    "schema": ("schema_cmd", "Print the JSON Schema of the plan (or another result) model."),
    "quantize": ("quantize_cmd", "Quantize a model (AWQ, CTranslate2, GGUF) into a new directory."),
    "bench": ("bench_cmd", "Benchmark an engine or an OpenAI-compatible server; compare with the plan."),
    "calibrate": ("calibrate_cmd", "Benchmark at several batch sizes and fit a speed profile for the plan."),
    "doctor": ("doctor_cmd", "Why a vLLM start-up fails (log or command line): memory ledger, the error, edits that start."),
}


# Commands that finish in well under a second on their usual input. The cyclic garbage collector stays off while
# they run: on `plan` it took about 15 ms of 0.2 s of CPU collecting next to nothing (pydantic's class and schema
# building allocates many objects and frees few), and the process ends soon after. `plan --rate` (a sizing search
# that simulates many options) turns it back on (plan_cmd.run).
QUICK_COMMANDS = frozenset({"plan", "gpus", "models", "schema"})


def _terminal_columns() -> int:
    """What ``shutil.get_terminal_size().columns`` gives ($COLUMNS, else the terminal on stdout, else 80), without
    importing shutil (which imports bz2, lzma and zlib for its archive functions: a millisecond or two per start)."""
    try:
        columns = int(os.environ["COLUMNS"])
    except (KeyError, ValueError):
        columns = 0
    if columns <= 0:
        try:
            columns = os.get_terminal_size(sys.__stdout__.fileno()).columns
        except (AttributeError, ValueError, OSError):
            columns = 0
        columns = columns or 80
    return columns


class _HelpFormatter(argparse.HelpFormatter):
    """argparse's formatter at the width it would pick (argparse itself imports shutil to find it)."""

    def __init__(self, prog: str, indent_increment: int = 2, max_help_position: int = 24, width: int | None = None):
        super().__init__(prog, indent_increment, max_help_position, _terminal_columns() - 2 if width is None else width)


class _Parser(argparse.ArgumentParser):
    """argparse with one-line usage errors (exit 2), like every other bad input."""

    def __init__(self, *args, **kwargs):
        kwargs.setdefault("formatter_class", _HelpFormatter)
        super().__init__(*args, **kwargs)

    def error(self, message: str):
        hint = f"see `{self.prog} --help`"
        self.exit(EXIT_BAD_INPUT, f"error: {_one_line(message)}; {hint}\n")


def _top_parser() -> argparse.ArgumentParser:
    from .._version import __version__

    parser = _Parser(
        prog="infer-advisor",
        description="Plan, emit, quantize and benchmark LLM inference deployments (offline-first).",
        epilog="Run `infer-advisor COMMAND --help` for a command's options.",
    )
    parser.add_argument("--version", action="version", version=f"infer-advisor {__version__}")
    parser.add_argument(
        "--debug",
        action="store_true",
        help="Show the full traceback of an unexpected error (exit code 3) instead of one line. Also accepted after "
        "the command, and as INFER_ADVISOR_DEBUG=1.",
    )
    sub = parser.add_subparsers(dest="command", metavar="COMMAND")
    for name, (_, help_) in COMMANDS.items():
        sub.add_parser(name, help=help_, add_help=False)
    return parser


def main(argv: list[str] | None = None) -> int:
    """Entry point of the console script; returns the exit code (see the module docstring)."""
    _no_pydantic_plugins()
    from ..constants import debug_enabled

    args = list(sys.argv[1:] if argv is None else argv)
    debug = "--debug" in args or debug_enabled()
    args = [a for a in args if a != "--debug"]
    previous = _sigterm_as_interrupt()
    _warnings_as_lines()
    if sys.stdout is None or sys.stderr is None:  # started with stdout or stderr closed (`>&-`)
        _reopen_closed_streams()
    try:
        os.getcwd()
    except FileNotFoundError:
        print("error: the working directory no longer exists (it was deleted); cd to a folder that does.", file=sys.stderr)
        return EXIT_BAD_INPUT
    try:
        code = _run(args)
        sys.stdout.flush()
        return code
    except BrokenPipeError:
        return _closed_pipe()

    except KeyboardInterrupt:
        print("interrupted", file=sys.stderr)
        return EXIT_INTERRUPTED
    except Exception as err:  # noqa: BLE001 - the last line of defence: one line, its own exit code
        from ..errors import InferAdvisorError

        if isinstance(err, InferAdvisorError):
            if debug:
                import traceback

                traceback.print_exc()
            print(f"error: {_one_line(str(err))}", file=sys.stderr)
            return EXIT_BAD_INPUT
        if isinstance(err, OSError) and _environment_error(err):
            where = getattr(err, "filename", None)
            print(_one_line(f"error: cannot write{f' {where}' if where else ''}: {err.strerror} (the disk, the output "
                            "stream or a file-size limit; nothing half-written is left marked complete)."), file=sys.stderr)
            return EXIT_BAD_INPUT
        if debug:
            raise
        detail = _one_line(str(err))[:300]
        print(
            f"internal error: {type(err).__name__}{': ' + detail if detail else ''}. This is a bug in infer-advisor; "
            "rerun with --debug for the traceback and report it.",
            file=sys.stderr,
        )
        return EXIT_INTERNAL
    finally:
        if previous is not None:
            import signal

            signal.signal(signal.SIGTERM, previous)


def _no_pydantic_plugins() -> None:
    """pydantic plugins (observability hooks for applications) have nothing to watch in this CLI: turn them off.

    Finding them scans every installed distribution's entry points on the first model built, so the CLI sets
    ``PYDANTIC_DISABLE_PLUGINS`` (pydantic's documented switch). pydantic still imports its plugin loader, and with it
    ``importlib.metadata`` (email, zipfile, csv: about a tenth of a plan's start-up CPU), only to read that switch; when
    it says ``__all__`` the CLI answers the loader's one question itself (no plugins). Anything else asked of the
    loader imports the real one. A user who names plugins to disable (not all) gets pydantic's own loader.
    """
    os.environ.setdefault("PYDANTIC_DISABLE_PLUGINS", "__all__")
    name = "pydantic.plugin._loader"
    if os.environ["PYDANTIC_DISABLE_PLUGINS"] != "__all__" or name in sys.modules:
        return
    import types

    loader = types.ModuleType(name, "PYDANTIC_DISABLE_PLUGINS=__all__: no plugins (infer_advisor.cli._no_pydantic_plugins).")

    def real(attr: str):
        if attr.startswith("__"):  # the import system asks for __path__, __spec__ ...: a plain module has none
            raise AttributeError(attr)
        sys.modules.pop(name, None)
        return getattr(importlib.import_module(name), attr)

    loader.get_plugins = lambda: ()  # what pydantic's own loader returns for __all__
    loader.__getattr__ = real  # PEP 562: any other name comes from pydantic's loader
    sys.modules[name] = loader


def _interrupt(signum, frame):
    raise KeyboardInterrupt


def _sigterm_as_interrupt():
    """`kill` cleans up as Ctrl-C does (staging folders removed, bench results marked); the old handler."""
    import signal

    try:
        return signal.signal(signal.SIGTERM, _interrupt)
    except ValueError:  # not the main thread (main() called from a worker): leave signals alone
        return None


def _run(args: list[str]) -> int:
    command = next((a for a in args if not a.startswith("-")), None)
    if command not in COMMANDS:
        parser = _top_parser()
        if command is None:
            parser.parse_args(args)  # handles --help / --version
            parser.print_help()
            return EXIT_OK if not args else EXIT_BAD_INPUT
        parser.error(f"unknown command '{command}' (choose from {', '.join(COMMANDS)})")
    with _collector_paused(command in QUICK_COMMANDS):
        module = importlib.import_module(f"{__name__}.{COMMANDS[command][0]}")
        parser = _Parser(prog=f"infer-advisor {command}", description=COMMANDS[command][1])
        module.configure(parser)
        rest = list(args)
        rest.remove(command)
        ns = parser.parse_args(rest)
        return int(module.run(ns) or 0)


@contextlib.contextmanager
def _collector_paused(pause: bool):
    """Python's cyclic garbage collector off while a quick command runs (``QUICK_COMMANDS``), back on after.

    On the way out, what the command allocated is moved to the oldest generation unscanned (``freeze`` then
    ``unfreeze``): turning the collector back on with it all in the youngest one made the next allocation scan every
    object the command made (10-20 ms, collecting next to nothing); a later full collection still sees it. At
    interpreter exit the heap is frozen first (``atexit``), so the final collections skip it as well (another 20 ms of
    CPU after the output was written: the process ends, and a cycle left unreachable costs nothing)."""
    paused = pause and gc.isenabled()
    if paused:
        gc.disable()
    try:
        yield
    finally:
        if paused:
            gc.freeze()
            gc.unfreeze()
            gc.enable()
            _freeze_heap_at_exit()


@functools.cache
def _freeze_heap_at_exit() -> None:
    import atexit

    atexit.register(gc.freeze)


def _closed_pipe() -> int:
    """The reader went away (``| head``): stop quietly, and keep Python's exit-time flush from complaining."""
    try:
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.stdout.fileno())
        os.close(devnull)
    except (OSError, ValueError, AttributeError):  # no real fd 1 (embedded, captured): nothing will flush
        pass
    return EXIT_BROKEN_PIPE


def _warnings_as_lines() -> None:
    """Python warnings (a template for an earlier engine version, a library's deprecation) print as one
    ``warning: ...`` line each, once, instead of Python's two-line file:line form."""
    import warnings

    shown: set[str] = set()

    def show(message, category, filename, lineno, file=None, line=None):  # noqa: ANN001, ARG001
        text = _one_line(str(message))
        if text not in shown:
            shown.add(text)
            print(f"warning: {text}", file=sys.stderr)

    warnings.showwarning = show


def _environment_error(err: OSError) -> bool:
    """A full disk, a file-size limit, a closed or unwritable stream: the environment, not a bug (exit 2, one line)."""
    import errno

    return err.errno in (errno.ENOSPC, errno.EDQUOT, errno.EFBIG, errno.EBADF, errno.EIO, errno.EROFS)


def _reopen_closed_streams() -> None:
    """Give a closed stdout/stderr a sink (``os.devnull``) so printing cannot raise AttributeError; errors still
    reach stderr when it is open."""
    if sys.stdout is None:
        sys.stdout = open(os.devnull, "w", encoding="utf-8")  # noqa: SIM115 - lives for the process
    if sys.stderr is None:
        sys.stderr = open(os.devnull, "w", encoding="utf-8")  # noqa: SIM115


def _one_line(text: str) -> str:
    """``text`` as one terminal line: whitespace runs (newlines, NEL, U+2028 included) become one space, and every
    other unsafe character (ESC, C1, bidi controls) is written as a visible escape (the terminal's escaper,
    :func:`infer_advisor.untrusted.escape_unsafe`): an error or usage line that quotes a user's value (a path, an
    option, a log's GPU name) cannot colour, retitle or rewrite the terminal."""
    from ..untrusted import escape_unsafe

    return escape_unsafe(" ".join(text.split()))


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
