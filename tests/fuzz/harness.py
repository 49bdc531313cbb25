"""Fuzzing harness: run hostile and broken input files through every entry point of mgpu-io (issue 9).

The contract for every input file, through every entry point: either a correct result, or ONE clean typed error
(an ``mgpu_io.MgpuIOError`` from the Python API; from the command line exit code 1, nothing on stdout and exactly one
line on stderr starting with ``Error: ``); never a raw exception or a traceback, never a hang, bounded memory, the
input byte-for-byte unchanged, and nothing left over in the output folder.

Inputs of every kind the readers take: HDF5 model and weights files and JSON configs (:mod:`mutate`), YAML configs,
SavedModel folders and TF-format checkpoints with the architecture given beside them (:mod:`mutate_kinds`, issue 21).
A checkpoint's entry points get ``config=`` (``--config``); ``load_model`` loads it as the weights of that
architecture. Stored bytecode (issue 22's Lambda functions, :mod:`mutate_bytecode`) also goes through the entry
points of the Lambdas below.

How it runs. The parent makes each mutated input (:mod:`mutate`, seeded and deterministic) and hands it to a worker
SUBPROCESS, which runs the entry points one by one and reports each result on a pipe. A worker runs under a memory
cap (``RLIMIT_AS``: its size after start-up plus ``--mem-mb``), and each entry point under a wall-clock timeout: a
worker that does not answer in time is made to dump its Python stacks (faulthandler, SIGUSR1), then killed and
replaced, and the entry point counts as a ``hang`` at the frame it was stuck in; a worker that dies counts as a
``crash`` (or a ``bomb`` when killed for memory). ``--jobs`` workers run side by side.

Entry points:

* ``api.inspect``, ``api.unwrap.dry_run``, ``api.unwrap``: the Python API (``mgpu_io.inspect(p)``,
  ``mgpu_io.unwrap(p, out, dry_run=True)``, ``mgpu_io.unwrap(p, out)``); a successful unwrap's output must itself
  be readable by ``mgpu_io.inspect``.
* ``cli.inspect``, ``cli.inspect_json``, ``cli.unwrap``: the command line in-process (typer's ``CliRunner``);
  ``inspect --json`` must print strict JSON.
* ``keras.load_model``, ``keras.transfer_weights``: when Keras imports (``load_model(p, compile=False)``, and
  ``transfer_weights(p, model)`` into the clean template of the input's fixture).
* ``proc.inspect``, ``proc.inspect_json``, ``proc.unwrap``: the real ``mgpu-io`` console script in a subprocess,
  for every ``--proc-every``-th input, to prove no traceback reaches a terminal.
* ``api.lambda_sources``, ``cli.lambdas``, ``keras.load_model_trusted``: for stored bytecode only, the recovered
  sources written as a module (``mgpu_io.lambda_sources(p, out)``, ``mgpu-io lambdas p -o out``; the module must
  parse) and the load of a caller who trusts the file (``load_model(p, safe_mode=False, custom_objects=...)`` with
  the module globals the writer's functions use), which compiles and runs what was recovered.

Outcomes: ``ok``, ``typed`` (a clean typed error), ``raw`` (another exception from the API), ``traceback`` (an
uncaught exception in the CLI), ``bad-cli-output`` (exit code, stdout or stderr not as the contract says), ``hang``,
``crash``, ``bomb`` (MemoryError, killed for memory). Flags on any outcome: ``input-modified``, ``leftover`` (a file
left in the output folder, or beside the input), ``bad-output`` (success, but the output is unreadable or missing, or
``--json`` printed invalid JSON), ``high-memory`` (peak RSS grew by more than ``--bomb-mb``).

Usage::

    .venv/bin/python tests/fuzz/harness.py --seed 0 --count 2000 --jobs 2 --json out.json
    .venv/bin/python tests/fuzz/harness.py --quick                 # the slice the pytest test runs
    .venv/bin/python tests/fuzz/harness.py --case 123 --keep DIR   # one input again, kept for a closer look

Standard library, NumPy, h5py and typer's CliRunner only.
"""

import argparse
import ast
import collections
import faulthandler
import hashlib
import importlib.util
import json
import os
import queue
import re
import resource
import select
import shutil
import signal
import subprocess
import sys
import tempfile
import threading
import time
import traceback
from pathlib import Path

HERE = Path(__file__).resolve().parent
ROOT = HERE.parents[1]
if str(HERE) not in sys.path:
    sys.path.insert(0, str(HERE))

import mutate  # noqa: E402  (h5py and NumPy; the parent makes the inputs)
import mutate_bytecode  # noqa: E402

API_ENTRIES = ("api.inspect", "api.unwrap.dry_run", "api.unwrap")
CLI_ENTRIES = ("cli.inspect", "cli.inspect_json", "cli.unwrap")
KERAS_ENTRIES = ("keras.load_model", "keras.transfer_weights")
PROC_ENTRIES = ("proc.inspect", "proc.inspect_json", "proc.unwrap")
#: For stored bytecode only: the recovered sources as a module, and the trusted load that compiles them.
LAMBDA_ENTRIES = ("api.lambda_sources", "cli.lambdas")
TRUSTED_ENTRIES = ("keras.load_model_trusted",)
ALL_ENTRIES = API_ENTRIES + CLI_ENTRIES + KERAS_ENTRIES + PROC_ENTRIES + LAMBDA_ENTRIES + TRUSTED_ENTRIES
#: Entry points that write an output file when they succeed.
WRITERS = ("api.unwrap", "cli.unwrap", "proc.unwrap", "api.lambda_sources", "cli.lambdas")

OK, TYPED, RAW, TRACEBACK, BAD_CLI, HANG, CRASH, BOMB = (
    "ok", "typed", "raw", "traceback", "bad-cli-output", "hang", "crash", "bomb")
OUTCOMES = (OK, TYPED, RAW, TRACEBACK, BAD_CLI, HANG, CRASH, BOMB)
BAD_OUTCOMES = (RAW, TRACEBACK, BAD_CLI, HANG, CRASH, BOMB)
FLAGS = ("input-modified", "leftover", "bad-output", "high-memory")

#: The slice the pytest test runs: the first QUICK_COUNT inputs of seed 0 (one per mutator class; `make fuzz` runs 2,000).
QUICK_SEED = 0
QUICK_COUNT = len(mutate.MUTATORS)

_MEMORY_WORDS = ("memory allocation failed", "out of memory", "unable to allocate", "cannot allocate memory")


# =================================================================================================================
# the worker (a subprocess): runs the entry points of one input at a time


def _qualname(exc_type):
    module = exc_type.__module__
    return exc_type.__qualname__ if module in ("builtins", None) else f"{module}.{exc_type.__qualname__}"


def _short_path(filename):
    filename = filename.replace("\\", "/")
    if "/mgpu_io/" in filename:
        return "mgpu_io/" + filename.rsplit("/mgpu_io/", 1)[1]
    if "/site-packages/" in filename:
        return filename.rsplit("/site-packages/", 1)[1]
    return filename


def _frames(tb):
    """``(last mgpu_io frame, last frame)`` of a traceback, as ``path:line function``."""
    frames = traceback.extract_tb(tb)
    ours = [f for f in frames if "/mgpu_io/" in f.filename.replace("\\", "/")]
    fmt = lambda f: f"{_short_path(f.filename)}:{f.lineno} {f.name}"  # noqa: E731
    return (fmt(ours[-1]) if ours else None), (fmt(frames[-1]) if frames else None)


def _exception_record(exc):
    frame, last = _frames(exc.__traceback__)
    text = "".join(traceback.format_exception(type(exc), exc, exc.__traceback__))
    return {
        "exc_type": _qualname(type(exc)),
        "message": _clip(str(exc), 600),
        "frame": frame,
        "last_frame": last,
        "traceback": "\n".join(text.splitlines()[-40:]),
    }


def _clip(text, limit):
    text = str(text)
    return text if len(text) <= limit else text[:limit] + f"... [{len(text)} chars]"


def _is_memory(exc):
    return isinstance(exc, MemoryError) or any(w in str(exc).lower() for w in _MEMORY_WORDS)


def _status():
    values = {}
    with open("/proc/self/status") as handle:
        for line in handle:
            key, _, rest = line.partition(":")
            if key in ("VmSize", "VmRSS", "VmHWM"):
                values[key] = int(rest.split()[0]) // 1024  # MiB
    return values


def _reset_peak():
    try:
        with open("/proc/self/clear_refs", "w") as handle:
            handle.write("5")  # resets VmHWM (Linux >= 4.0)
        return True
    except OSError:
        return False


def _sha256(path):
    digest = hashlib.sha256()
    with open(path, "rb") as handle:
        for block in iter(lambda: handle.read(1 << 20), b""):
            digest.update(block)
    return digest.hexdigest()


def _snapshot(folder):
    """sha256 of every plain file in ``folder`` and its subfolders (the input, a SavedModel folder's files, a
    checkpoint's shards, link targets), the entry points' output folders left out."""
    folder = Path(folder)
    found = {}
    for p in sorted(folder.rglob("*")):
        relative = p.relative_to(folder)
        if relative.parts[0].startswith("out-") or p.is_symlink() or not p.is_file():
            continue
        found[str(relative)] = _sha256(p)
    return found


def _strict_json(text):
    def refuse(constant):
        raise ValueError(f"{constant} is not JSON")

    json.loads(text, parse_constant=refuse)


class _Context:
    """What the worker imports once: mgpu_io, the CLI app and its runner, Keras and the template models."""

    def __init__(self, keras, proc_timeout, mem_mb):
        import warnings

        import mgpu_io
        from mgpu_io.cli import app
        from mgpu_io.errors import MgpuIOError
        from typer.testing import CliRunner

        warnings.simplefilter("always")  # as in a fresh process: every warning shows, however often it was seen
        self.mgpu_io, self.app, self.MgpuIOError = mgpu_io, app, MgpuIOError
        self.runner = CliRunner()
        self.proc_timeout, self.mem_mb = proc_timeout, mem_mb
        self.cli = _cli_command()
        self.keras = None
        self.models = {}
        if keras:
            import keras as keras_module

            self.keras = keras_module
            # warm up: Keras builds, assigns and compiles once before the memory cap and the measurements
            clean = mutate.FIXTURES / "k224_functional_bn_x2_full.h5"
            model = mgpu_io.load_model(clean, compile=False)
            mgpu_io.transfer_weights(clean, model)
        self.runner.invoke(self.app, ["inspect", str(mutate.FIXTURES / "k224_functional_bn_x2_full.h5")])
        if importlib.util.find_spec("tensorflow") is not None:  # TF's readers of SavedModels and checkpoints, warm
            tf2 = mutate.ROOT / "fixtures" / "tf2"
            mgpu_io.inspect(tf2 / "tf23_functional_bn_x2_savedmodel")
            mgpu_io.inspect(tf2 / "tf23_functional_bn_x2_ckpt.index", config=tf2 / "tf23_functional_bn_x2_config.json")
            mgpu_io.inspect(tf2 / "tf23_functional_bn_x2_config.yaml")

    def template_model(self, fixture):
        """A clean Keras model of the fixture's template (for transfer_weights), or a small stand-in."""
        if fixture not in self.models:
            stem = re.sub(r"_(full|weights)\.h5$|_config\.(json|yaml)$|_savedmodel$|_ckpt\.index$", "", fixture)
            model = None
            for candidate in (mutate.FIXTURES / f"{stem}_full.h5", mutate.ROOT / "fixtures" / "tf2" / f"{stem}_full.h5"):
                if not candidate.exists():
                    continue
                try:
                    model = self.mgpu_io.load_model(candidate, compile=False)
                except Exception:  # e.g. the template's own Lambda under safe mode
                    model = None
                break
            if model is None:
                keras = self.keras
                inp = keras.Input((4,))
                model = keras.Model(inp, keras.layers.Dense(3)(keras.layers.Dense(8)(inp)))
            self.models[fixture] = model
        return self.models[fixture]


def _cli_command():
    script = Path(sys.executable).parent / "mgpu-io"
    if script.exists():
        return [str(script)]
    found = shutil.which("mgpu-io")
    return [found] if found else [sys.executable, "-m", "mgpu_io"]


#: Exceptions that mean a bug in mgpu-io's own reading when a catch-all turns them into a typed error (an h5py
#: OSError/RuntimeError or a JSON decoding error is what damaged bytes make, and is not counted).
_INTERNAL_TYPES = (KeyError, TypeError, AttributeError, IndexError, AssertionError, RecursionError, MemoryError,
                   UnicodeError, ZeroDivisionError, OverflowError, StopIteration, NameError)


_SAFE_MODE_REFUSAL = "Requested the deserialization of a `Lambda` layer"


def _api(ctx, call):
    try:
        call()
    except ctx.MgpuIOError as error:
        record = {"outcome": TYPED, "exc_type": _qualname(type(error)), "message": _clip(str(error), 600)}
        inner = error.__context__  # what a catch-all turned into this error (``raise ... from None`` keeps it)
        if inner is not None and not isinstance(inner, ctx.MgpuIOError) and isinstance(inner, _INTERNAL_TYPES):
            frame, last = _frames(inner.__traceback__)
            record.update(wrapped_type=_qualname(type(inner)), wrapped_message=_clip(str(inner), 300),
                          wrapped_frame=frame, wrapped_last_frame=last)
        return record
    except BaseException as error:  # noqa: BLE001 - everything else breaks the contract
        if isinstance(error, ValueError) and str(error).startswith(_SAFE_MODE_REFUSAL):
            # By design (tests/load/test_load_model.py): Keras' safe mode refuses a template's own Lambda layer.
            return {"outcome": TYPED, "exc_type": "ValueError (Keras safe mode, by design)",
                    "message": _clip(str(error), 300)}
        record = _exception_record(error)
        record["outcome"] = BOMB if _is_memory(error) else RAW
        return record
    return {"outcome": OK}


_TERMINAL_CONTROL = re.compile(r"[\x00-\x08\x0b-\x1f\x7f]")


def _one_error_line(exit_code, stdout, stderr):
    """None if the output is one clean error as the contract says, else what is wrong with it.

    Lines are counted as a terminal shows them (``\\n``); a carriage return, an escape sequence or another control
    character from the file counts too: it rewrites what the terminal shows.
    """
    lines = stderr.rstrip("\n").split("\n") if stderr else []
    problems = []
    control = _TERMINAL_CONTROL.search(stderr.rstrip("\n"))
    if control:
        problems.append(f"stderr holds control character {control.group()!r}: {_clip(stderr.strip(), 200)!r}")
    if exit_code != 1:
        problems.append(f"exit code {exit_code}")
    if stdout.strip():
        problems.append(f"stdout not empty: {_clip(stdout.strip(), 120)!r}")
    if len(lines) != 1:
        problems.append(f"stderr has {len(lines)} lines: {_clip(stderr.strip(), 300)!r}")
    elif not lines[0].startswith("Error: "):
        problems.append(f"stderr does not start with 'Error: ': {_clip(lines[0], 200)!r}")
    return "; ".join(problems) or None


#: The command line's last-resort line for a bug of its own ("Error: internal error (KeyError: ...)"): one line, but a
#: raw exception all the same.
_INTERNAL = re.compile(r"internal error \((?P<type>[\w.]+)(?:: (?P<message>.*?))?\)(?:\. |$)")
#: A typed error whose message carries the type of the exception it was made from: a catch-all translation.
_WRAPPED = re.compile(r"\b(KeyError|TypeError|AttributeError|IndexError|ValueError|LookupError|OSError|RuntimeError|"
                      r"OverflowError|AssertionError|UnicodeDecodeError|UnicodeEncodeError|RecursionError|MemoryError|"
                      r"ZeroDivisionError|StopIteration)\b")


def _internal_error(ctx, args, stderr, rerun):
    """A raw-exception record for an ``Error: internal error (...)`` line; ``rerun`` finds where it is raised."""
    match = _INTERNAL.search(stderr)
    record = {"outcome": RAW, "exc_type": match.group("type"), "message": _clip(match.group("message") or "", 600),
              "cli_line": _clip(stderr.strip(), 600), "internal_error": True}
    record.update({k: v for k, v in rerun().items() if k in ("frame", "last_frame", "traceback")})
    return record


def _check_terminal(record, text):
    """A successful command must not pass a file's escape sequences to the terminal (output is not a terminal
    here, so neither rich nor click adds any of their own)."""
    if "\x1b" in text:
        at = text.index("\x1b")
        shown = text[max(0, at - 40):at + 20]
        record["bad_output"] = f"an escape sequence from the file reaches the terminal: {shown!r}"


def _json_error(stdout, stderr, json_mode):
    """With ``--json`` an error is one JSON object on stdout, ``{"error": {"type", "message"}}``, and nothing on
    stderr: checked here, then returned as the one ``Error:`` line the other checks read. Anything else is returned
    as it was (and fails those checks)."""
    if not json_mode or stderr.strip():
        return stdout, stderr
    try:
        error = json.loads(stdout)["error"]
        message = error["message"]
        if set(error) != {"type", "message"} or not isinstance(message, str) or "\n" in message:
            return stdout, stderr
    except (ValueError, KeyError, TypeError):
        return stdout, stderr
    return "", f"Error: {message}\n"


def _cli(ctx, args, strict_json=False):
    result = ctx.runner.invoke(ctx.app, args)
    stdout, stderr = result.stdout, result.stderr
    if result.exit_code == 1:
        stdout, stderr = _json_error(stdout, stderr, strict_json)
    if result.exit_code == 1 and _INTERNAL.search(stderr):
        def rerun():  # the same command with the traceback let through, for its frames
            again = ctx.runner.invoke(ctx.app, args, env={"MGPU_IO_TRACEBACK": "1"})
            if again.exception is not None and not isinstance(again.exception, SystemExit):
                return _exception_record(again.exception)
            return {}
        return _internal_error(ctx, args, stderr, rerun)
    if result.exception is not None and not isinstance(result.exception, SystemExit):
        record = _exception_record(result.exception)
        record["outcome"] = BOMB if _is_memory(result.exception) else TRACEBACK
        # An exception through the command line can leave module-level state half-done (rich's console keeps the
        # unwritten buffer); a real terminal would start a fresh process: so does the harness, for what follows.
        record["tainted"] = True
        return record
    if "Traceback (most recent call last)" in stdout + stderr:
        return {"outcome": TRACEBACK, "message": _clip(stderr or stdout, 600), "exc_type": "(printed traceback)"}
    if result.exit_code == 0:
        record = {"outcome": OK}
        _check_terminal(record, stdout + stderr)
        if strict_json:
            try:
                _strict_json(stdout)
            except ValueError as error:
                record["bad_output"] = f"--json printed invalid JSON: {error}"
        return record
    problem = _one_error_line(result.exit_code, stdout, stderr)
    if problem is None:
        return {"outcome": TYPED, "message": _clip(stderr.strip(), 600)}
    return {"outcome": BAD_CLI, "exc_type": "(cli output)", "message": problem}


_FAULT_FRAME = re.compile(r'File "(?P<file>[^"]+)", line (?P<line>\d+) in (?P<func>\S+)')


def frame_from_dump(text):
    """The innermost mgpu_io frame of a faulthandler dump (the main thread's, most recent call first)."""
    sections = re.split(r"\n(?=(?:Current thread|Thread) 0x)", text)
    best = None
    for section in sections:
        frames = [m for m in _FAULT_FRAME.finditer(section)]
        ours = [m for m in frames if "/mgpu_io/" in m.group("file")]
        if ours and (best is None or "harness.py" in section or "mgpu-io" in section):
            m = ours[0]
            best = f"{_short_path(m.group('file'))}:{m.group('line')} {m.group('func')}"
            if "harness.py" in section or "Current thread" in section:
                break
    return best


def innermost_from_dump(text):
    """The innermost frame of the first thread in a faulthandler dump (the current one), whatever its module."""
    match = _FAULT_FRAME.search(text)
    return f"{_short_path(match.group('file'))}:{match.group('line')} {match.group('func')}" if match else None


_TB_LINE = re.compile(r'File "(?P<file>[^"]+)", line (?P<line>\d+), in (?P<func>\S+)')


def _frame_from_traceback_text(text):
    frames = list(_TB_LINE.finditer(text))
    ours = [m for m in frames if "/mgpu_io/" in m.group("file")]
    fmt = lambda m: f"{_short_path(m.group('file'))}:{m.group('line')} {m.group('func')}"  # noqa: E731
    return (fmt(ours[-1]) if ours else None), (fmt(frames[-1]) if frames else None)


def _proc(ctx, args, folder, strict_json=False):
    """The real console script in a subprocess, under the same memory cap, with a timeout."""
    # PYTHONIOENCODING=utf-8: stdout as on a usual UTF-8 desktop locale (strict errors); the C/C.UTF-8 locale of a
    # container would hide encoding errors behind surrogateescape.
    env = dict(os.environ, PYTHONFAULTHANDLER="1", COLUMNS="120", OPENBLAS_NUM_THREADS="1",
               PYTHONIOENCODING="utf-8")
    env.pop("PYTHONWARNINGS", None)
    limit = (ctx.mem_mb + 1024) << 20  # the worker's budget plus the console script's own start-up

    def cap():
        resource.setrlimit(resource.RLIMIT_AS, (limit, limit))

    with tempfile.TemporaryFile() as out, tempfile.TemporaryFile() as err:
        child = subprocess.Popen(ctx.cli + args, stdin=subprocess.DEVNULL, stdout=out, stderr=err, env=env,
                                 cwd=folder, preexec_fn=cap)
        deadline, status, usage, hung = time.monotonic() + ctx.proc_timeout, None, None, False
        while status is None:
            pid, raw_status, ru = os.wait4(child.pid, os.WNOHANG)
            if pid:
                status, usage = os.waitstatus_to_exitcode(raw_status), ru
                break
            if time.monotonic() > deadline and not hung:
                hung = True
                child.send_signal(signal.SIGABRT)  # faulthandler dumps the stacks, then it dies
                deadline = time.monotonic() + 3
            elif hung and time.monotonic() > deadline:
                child.kill()
                deadline = float("inf")
            time.sleep(0.01)
        child.returncode = status
        out.seek(0)
        err.seek(0)
        stdout = out.read().decode("utf8", "replace")
        stderr = err.read().decode("utf8", "replace")
    if status == 1:
        stdout, stderr = _json_error(stdout, stderr, strict_json)
    record = {"proc_peak_rss_mb": usage.ru_maxrss // 1024 if usage else None}
    frame, last = _frame_from_traceback_text(stderr)
    if hung:
        record.update(outcome=HANG, exc_type="(timeout)", message=f"no answer in {ctx.proc_timeout} s",
                      frame=frame_from_dump(stderr), traceback=_clip(stderr[-3000:], 3000))
        return record
    if status < 0:
        name = signal.Signals(-status).name
        record.update(outcome=BOMB if -status == signal.SIGKILL else CRASH, exc_type=f"(signal {name})",
                      message=_clip(stderr.strip()[-600:], 600), frame=frame_from_dump(stderr),
                      traceback=_clip(stderr[-3000:], 3000))
        return record
    if "Traceback (most recent call last)" in stderr or "Traceback (most recent call last)" in stdout:
        exc_line = [line for line in stderr.strip().splitlines() if line and not line.startswith(" ")]
        memory = "MemoryError" in stderr
        record.update(outcome=BOMB if memory else TRACEBACK, exc_type=(exc_line[-1].split(":")[0] if exc_line else "?"),
                      message=_clip(exc_line[-1] if exc_line else stderr, 600), frame=frame, last_frame=last,
                      traceback="\n".join(stderr.splitlines()[-40:]))
        return record
    if status == 0:
        record["outcome"] = OK
        _check_terminal(record, stdout + stderr)
        if strict_json:
            try:
                _strict_json(stdout)
            except ValueError as error:
                record["bad_output"] = f"--json printed invalid JSON: {error}"
        return record
    if status == 1 and _INTERNAL.search(stderr):
        def rerun():
            traced = subprocess.run(ctx.cli + args, stdin=subprocess.DEVNULL, capture_output=True, cwd=folder,
                                    env=dict(env, MGPU_IO_TRACEBACK="1"), preexec_fn=cap, timeout=ctx.proc_timeout)
            text = traced.stderr.decode("utf8", "replace")
            frame, last = _frame_from_traceback_text(text)
            return {"frame": frame, "last_frame": last, "traceback": "\n".join(text.splitlines()[-40:])}
        record.update(_internal_error(ctx, args, stderr, rerun))
        return record
    problem = _one_error_line(status, stdout, stderr)
    if problem is None:
        record.update(outcome=TYPED, message=_clip(stderr.strip(), 600))
    else:
        record.update(outcome=BAD_CLI, exc_type="(cli output)", message=problem)
    return record


def run_entry(ctx, case, entry):
    """Run one entry point on one input; check the input, the output folder and the memory."""
    source = Path(case["path"])
    folder = Path(case["folder"])
    config = case.get("config")  # the architecture beside a TF checkpoint (config=, --config)
    with_config = dict(config=config) if config else {}
    flags = ["--config", config] if config else []
    out_dir = folder / f"out-{entry}"
    shutil.rmtree(out_dir, ignore_errors=True)
    out_dir.mkdir()
    out = out_dir / ("out.json" if source.suffix in (".json", ".yaml") else "out.h5")
    if entry in LAMBDA_ENTRIES:
        out = out_dir / "out_lambdas.py"
    before = _snapshot(folder)
    names_before = set(os.listdir(folder))
    mg = ctx.mgpu_io
    model = ctx.template_model(case["fixture"]) if entry == "keras.transfer_weights" else None
    _reset_peak()
    rss_before = _status().get("VmRSS", 0)
    started = time.monotonic()
    os.chdir(out_dir)  # anything written to the working folder shows up as a leftover
    try:
        if entry == "api.inspect":
            record = _api(ctx, lambda: mg.inspect(source, **with_config))
        elif entry == "api.unwrap.dry_run":
            record = _api(ctx, lambda: mg.unwrap(source, out, dry_run=True, **with_config))
        elif entry == "api.unwrap":
            record = _api(ctx, lambda: mg.unwrap(source, out, **with_config))
        elif entry == "cli.inspect":
            record = _cli(ctx, ["inspect", str(source), *flags])
        elif entry == "cli.inspect_json":
            record = _cli(ctx, ["inspect", "--json", str(source), *flags], strict_json=True)
        elif entry == "cli.unwrap":
            record = _cli(ctx, ["unwrap", str(source), str(out), *flags])
        elif entry == "keras.load_model" and config:  # a checkpoint loads as the weights of its architecture
            record = _api(ctx, lambda: mg.load_model(config, weights=source, compile=False))
        elif entry == "keras.load_model":
            record = _api(ctx, lambda: mg.load_model(source, compile=False))
        elif entry == "keras.transfer_weights":
            record = _api(ctx, lambda: mg.transfer_weights(source, model, **with_config))
        elif entry == "api.lambda_sources":
            record = _api(ctx, lambda: mg.lambda_sources(source, out))
        elif entry == "cli.lambdas":
            record = _cli(ctx, ["lambdas", str(source), "-o", str(out)])
        elif entry == "keras.load_model_trusted":  # the caller trusts the file and gives the writer's globals
            fixture = mutate_bytecode.entry_of(case["fixture"]) or {}
            record = _api(ctx, lambda: mg.load_model(source, compile=False, safe_mode=False,
                                                     custom_objects=dict(fixture.get("globals") or {})))
        elif entry == "proc.inspect":
            record = _proc(ctx, ["inspect", str(source), *flags], out_dir)
        elif entry == "proc.inspect_json":
            record = _proc(ctx, ["inspect", "--json", str(source), *flags], out_dir, strict_json=True)
        elif entry == "proc.unwrap":
            record = _proc(ctx, ["unwrap", str(source), str(out), *flags], out_dir)
        else:
            raise ValueError(f"unknown entry point {entry}")
    finally:
        os.chdir(ROOT)
    record["entry"] = entry
    record["seconds"] = round(time.monotonic() - started, 3)
    if record["outcome"] == TYPED:
        wrapped = _WRAPPED.search(record.get("message") or "")
        if wrapped:
            record["wraps"] = wrapped.group(1)
    status = _status()
    record["peak_rss_mb"] = status.get("VmHWM")
    record["rss_growth_mb"] = max(0, status.get("VmHWM", 0) - rss_before)
    if entry.startswith("proc.") and record.get("proc_peak_rss_mb"):
        record["rss_growth_mb"] = record["proc_peak_rss_mb"]  # the console script's own peak (start-up included)
    after = _snapshot(folder)
    modified = sorted(name for name in before if after.get(name) != before[name])
    if modified:
        record["input_modified"] = modified
    expected = {out.name} if entry in WRITERS and record["outcome"] == OK else set()
    present = sorted(os.listdir(out_dir))
    leftovers = [name for name in present if name not in expected]
    leftovers += sorted(set(os.listdir(folder)) - names_before)
    if leftovers:
        record["leftovers"] = leftovers
    if expected and out.name not in present:
        record["bad_output"] = "reported success but wrote no output file"
    elif expected and "bad_output" not in record and out.suffix == ".py":
        try:
            ast.parse(out.read_text(encoding="utf-8"))  # parsed, never run
        except (SyntaxError, ValueError, UnicodeDecodeError) as error:
            record["bad_output"] = f"the module written does not parse: {_qualname(type(error))}: {_clip(error, 300)}"
    elif expected and "bad_output" not in record:
        try:
            mg.inspect(out)
        except BaseException as error:  # noqa: BLE001
            record["bad_output"] = f"the output cannot be inspected: {_qualname(type(error))}: {_clip(error, 300)}"
    shutil.rmtree(out_dir, ignore_errors=True)
    return record


def worker_main(options):
    """Read one job (a case and its entry points) per line on stdin; answer one JSON line per entry point."""
    protocol = os.fdopen(os.dup(1), "w", buffering=1)
    devnull = os.open(os.devnull, os.O_WRONLY)
    os.dup2(devnull, 1)  # stray prints (TF, Keras) must not reach the protocol pipe
    log = os.open(options.log, os.O_WRONLY | os.O_CREAT | os.O_APPEND, 0o644)
    os.dup2(log, 2)
    sys.stdout = open(os.devnull, "w")
    sys.stderr = os.fdopen(2, "w", buffering=1)
    faulthandler.enable(file=sys.stderr, all_threads=True)
    faulthandler.register(signal.SIGUSR1, file=sys.stderr, all_threads=True)
    ctx = _Context(options.keras, options.proc_timeout, options.mem_mb)
    status = _status()
    limit = (status["VmSize"] + options.mem_mb) << 20
    _, hard = resource.getrlimit(resource.RLIMIT_AS)
    resource.setrlimit(resource.RLIMIT_AS, (limit, hard))  # soft only: the console script sets its own
    protocol.write(json.dumps({"ready": True, "pid": os.getpid(), "baseline_rss_mb": status["VmRSS"],
                               "vm_limit_mb": limit >> 20}) + "\n")
    for line in sys.stdin:
        job = json.loads(line)
        for entry in job["entries"]:
            try:
                record = run_entry(ctx, job["case"], entry)
            except BaseException as error:  # noqa: BLE001 - a harness failure, reported as such
                record = dict(_exception_record(error), entry=entry, outcome="harness-error")
            protocol.write(json.dumps(record) + "\n")


# =================================================================================================================
# the parent: makes the inputs, drives the workers, counts


class _Worker:
    """One worker subprocess and the line protocol to it."""

    def __init__(self, options, log):
        self.log = log
        command = [sys.executable, str(HERE / "harness.py"), "--worker", "--log", str(log), "--mem-mb",
                   str(options.mem_mb), "--proc-timeout", str(options.proc_timeout)]
        if not options.keras:
            command.append("--no-keras")
        env = dict(os.environ, TF_CPP_MIN_LOG_LEVEL="3", CUDA_VISIBLE_DEVICES="", OPENBLAS_NUM_THREADS="1",
                   MALLOC_ARENA_MAX="2", PYTHONHASHSEED="0")
        self.proc = subprocess.Popen(command, stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                                     stderr=subprocess.DEVNULL, cwd=ROOT, env=env, start_new_session=True)
        self.buffer = b""
        self.ready = None
        self.killed = False

    def wait_ready(self, timeout):
        message = self.read(timeout)
        if not isinstance(message, dict) or not message.get("ready"):
            raise RuntimeError(f"worker did not start: {message!r}; see {self.log}")
        self.ready = message
        return message

    def send(self, obj):
        try:
            self.proc.stdin.write((json.dumps(obj) + "\n").encode())
            self.proc.stdin.flush()
            return True
        except (BrokenPipeError, OSError):
            return False

    def read(self, timeout):
        """The next message, ``"timeout"``, or ``"eof"``."""
        deadline = time.monotonic() + timeout
        fd = self.proc.stdout.fileno()
        while b"\n" not in self.buffer:
            left = deadline - time.monotonic()
            if left <= 0:
                return "timeout"
            ready, _, _ = select.select([fd], [], [], left)
            if not ready:
                continue
            chunk = os.read(fd, 1 << 16)
            if not chunk:
                return "eof"
            self.buffer += chunk
        line, _, self.buffer = self.buffer.partition(b"\n")
        return json.loads(line)

    def stacks(self):
        """Ask the worker to dump its Python stacks (faulthandler) and return them."""
        size = self.log.stat().st_size if self.log.exists() else 0
        try:
            os.kill(self.proc.pid, signal.SIGUSR1)
        except ProcessLookupError:
            return ""
        time.sleep(1.0)
        with open(self.log, "rb") as handle:
            handle.seek(size)
            return handle.read().decode("utf8", "replace")

    def log_tail(self, size=6000):
        try:
            data = self.log.read_bytes()
        except OSError:
            return ""
        return data[-size:].decode("utf8", "replace")

    def kill(self):
        self.killed = True
        try:
            os.killpg(self.proc.pid, signal.SIGKILL)  # the worker and any console script it started
        except ProcessLookupError:
            pass
        self.proc.wait()

    def close(self):
        try:
            self.proc.stdin.close()
        except OSError:
            pass
        try:
            self.proc.wait(timeout=20)
        except subprocess.TimeoutExpired:
            self.kill()


class Run:
    """A fuzzing run: its options, its results (one record per input) and what it found."""

    def __init__(self, options):
        self.options = options
        self.results = []
        self.generation_failures = []
        self.lock = threading.Lock()
        self.started = self.finished = None
        self.workers_started = 0
        self.logs = Path(options.workdir) / "logs"
        self.fingerprint = code_fingerprint()

    # -- driving ---------------------------------------------------------------------------------------------

    def entries_for(self, index, kind=None):
        options = self.options
        entries = list(API_ENTRIES + CLI_ENTRIES)
        if options.keras:
            entries += KERAS_ENTRIES
        if kind == mutate_bytecode.BYTECODE:
            entries += LAMBDA_ENTRIES + (TRUSTED_ENTRIES if options.keras else ())
        if options.proc_every and index % options.proc_every == 0:
            entries += PROC_ENTRIES
        if options.entries:
            entries = [e for e in entries if e in options.entries]
        return entries

    def _new_worker(self, slot):
        with self.lock:
            self.workers_started += 1
            number = self.workers_started
        self.logs.mkdir(parents=True, exist_ok=True)
        worker = _Worker(self.options, self.logs / f"worker-{slot}-{number}.log")
        worker.wait_ready(self.options.start_timeout)
        return worker

    def _slot(self, slot, indices):
        options = self.options
        worker = None
        while True:
            try:
                index = indices.get_nowait()
            except queue.Empty:
                break
            try:
                case = mutate.make_case(options.seed, index, options.workdir / "cases")
            except Exception as error:  # noqa: BLE001 - a mutator that cannot make this input
                with self.lock:
                    self.generation_failures.append({"index": index, "error": f"{type(error).__name__}: {error}"})
                continue
            record = case.to_dict()
            record["results"] = []
            pending = self.entries_for(index, case.fixture_type)
            while pending:
                if worker is None:
                    try:
                        worker = self._new_worker(slot)
                    except (RuntimeError, OSError, json.JSONDecodeError) as error:  # count it, go on
                        record["results"] += [{"entry": e, "outcome": "harness-error", "exc_type": "(worker start)",
                                               "message": _clip(error, 600)} for e in pending]
                        pending = []
                        break
                if not worker.send({"case": case.to_dict(), "entries": pending}):
                    worker.kill()
                    worker = None
                    continue
                while pending:
                    entry = pending[0]
                    timeout = options.timeout + (options.proc_timeout + 10 if entry.startswith("proc.") else 0)
                    message = worker.read(timeout)
                    if isinstance(message, dict):
                        if message.get("entry") == entry:
                            record["results"].append(message)
                            pending.pop(0)
                            if message.get("tainted"):  # start the rest of this input in a fresh worker
                                worker.kill()
                                worker = None
                                break
                        continue
                    if message == "timeout":
                        dump = worker.stacks()
                        worker.kill()
                        record["results"].append({
                            "entry": entry, "outcome": HANG, "exc_type": "(timeout)",
                            "message": f"no answer in {timeout} s", "frame": frame_from_dump(dump),
                            "last_frame": innermost_from_dump(dump),
                            "traceback": _clip(dump[-4000:], 4000)})
                    else:  # eof: the worker died
                        code = worker.proc.wait()
                        tail = worker.log_tail()
                        killed_for_memory = code == -signal.SIGKILL
                        name = signal.Signals(-code).name if code < 0 else f"exit {code}"
                        record["results"].append({
                            "entry": entry, "outcome": BOMB if killed_for_memory else CRASH,
                            "exc_type": f"(worker {name})", "message": _clip(tail.strip()[-600:], 600),
                            "frame": frame_from_dump(tail), "traceback": _clip(tail[-4000:], 4000)})
                    pending.pop(0)
                    worker = None
                    break
            record["seconds"] = round(sum(r.get("seconds", 0) for r in record["results"]), 3)
            with self.lock:
                self.results.append(record)
                done = len(self.results)
            if options.progress and (done % options.progress == 0):
                print(f"  {done}/{options.count} inputs, {time.monotonic() - self.started:.0f} s", file=sys.stderr,
                      flush=True)
            if not options.keep and not self._violations_of(record):
                shutil.rmtree(case.folder, ignore_errors=True)
        if worker is not None:
            worker.close()

    def run(self):
        options = self.options
        options.workdir.mkdir(parents=True, exist_ok=True)
        indices = queue.Queue()
        for index in options.indices:
            indices.put(index)
        self.started = time.monotonic()
        threads = [threading.Thread(target=self._slot, args=(slot, indices), daemon=True)
                   for slot in range(max(1, options.jobs))]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join()
        self.finished = time.monotonic()
        self.results.sort(key=lambda r: r["index"])
        return self

    # -- counting ----------------------------------------------------------------------------------------------

    @staticmethod
    def _kinds(result):
        """The contract violations of one entry point's result (empty: it kept the contract)."""
        kinds = [result["outcome"]] if result["outcome"] in BAD_OUTCOMES + ("harness-error",) else []
        if result.get("input_modified"):
            kinds.append("input-modified")
        if result.get("leftovers"):
            kinds.append("leftover")
        if result.get("bad_output"):
            kinds.append("bad-output")
        return kinds

    def _high_memory(self, result):
        return (result.get("rss_growth_mb") or 0) > self.options.bomb_mb and result["outcome"] != BOMB

    def _violations_of(self, record):
        return [(kind, r) for r in record["results"] for kind in
                self._kinds(r) + (["high-memory"] if self._high_memory(r) else [])]

    def violations(self):
        """Every ``(kind, record, result)`` that breaks the contract."""
        return [(kind, record, result) for record in self.results for kind, result in self._violations_of(record)]

    def counts(self):
        """``{kind: count}`` of the violations (outcomes and flags), every kind present (zeros included)."""
        counts = collections.Counter({kind: 0 for kind in BAD_OUTCOMES + FLAGS})
        counts.update(kind for kind, _, _ in self.violations())
        return dict(counts)

    def grouped(self):
        """Violations deduplicated by (kind, exception type, last mgpu_io frame)."""
        groups = {}
        for kind, record, result in self.violations():
            if kind in (RAW, TRACEBACK, BOMB, CRASH, HANG, "harness-error"):
                family = "exception" if kind in (RAW, TRACEBACK) else kind
                key = (family, result.get("exc_type") if kind != HANG else "(timeout)", result.get("frame"))
            elif kind == BAD_CLI:
                key = (kind, _normalise(result.get("message", "")), None)
            elif kind == "bad-output":
                key = (kind, result.get("bad_output", "").split(":")[0], None)
            elif kind == "leftover":
                key = (kind, ", ".join(sorted({_normalise(n) for n in result["leftovers"]})), result["outcome"])
            elif kind == "high-memory":
                key = (kind, result.get("exc_type") or result["outcome"], result.get("frame"))
            else:
                key = (kind, None, None)
            group = groups.setdefault(key, {
                "kind": kind, "kinds": collections.Counter(), "exc_type": key[1], "frame": key[2],
                "count": 0, "mutators": collections.Counter(), "entries": collections.Counter(),
                "example": None})
            group["count"] += 1
            group["kinds"][kind] += 1
            group["mutators"][record["mutator"]] += 1
            group["entries"][result["entry"]] += 1
            if group["example"] is None:
                group["example"] = {
                    "index": record["index"], "fixture": record["fixture"], "description": record["description"],
                    "entry": result["entry"], "outcome": result["outcome"], "exc_type": result.get("exc_type"),
                    "message": _clip(result.get("message") or result.get("bad_output") or "", 400),
                    "frame": result.get("frame"), "last_frame": result.get("last_frame"),
                    "leftovers": result.get("leftovers"), "rss_growth_mb": result.get("rss_growth_mb"),
                }
        return sorted(groups.values(), key=lambda g: (-g["count"], str(g["exc_type"])))

    def wrapped(self):
        """Typed errors made by a catch-all from an internal exception, by (type, frame): not violations, hints."""
        groups = {}
        for record in self.results:
            for result in record["results"]:
                if not result.get("wrapped_type"):
                    continue
                key = (result["wrapped_type"], result.get("wrapped_frame"))
                group = groups.setdefault(key, {"wrapped_type": key[0], "wrapped_frame": key[1], "count": 0,
                                                "exc_type": result.get("exc_type"),
                                                "mutators": collections.Counter(), "example": None})
                group["count"] += 1
                group["mutators"][record["mutator"]] += 1
                if group["example"] is None:
                    group["example"] = {"index": record["index"], "description": record["description"],
                                        "entry": result["entry"], "wrapped_type": result["wrapped_type"],
                                        "wrapped_message": result.get("wrapped_message") or ""}
        return sorted(groups.values(), key=lambda g: -g["count"])

    # -- reporting --------------------------------------------------------------------------------------------

    def summary(self):
        options = self.options
        lines = []
        results = [r for record in self.results for r in record["results"]]
        elapsed = (self.finished or time.monotonic()) - self.started
        lines.append(f"mgpu-io fuzz: seed {options.seed}, {len(self.results)} inputs tried "
                     f"({len(self.generation_failures)} could not be made), {len(results)} entry-point runs, "
                     f"{elapsed:.0f} s with {options.jobs} job(s), keras {'on' if options.keras else 'off'}, "
                     f"{self.workers_started} worker(s) started")
        peak = max((r.get("peak_rss_mb") or 0 for r in results), default=0)
        lines.append(f"peak worker RSS {peak} MiB; memory cap: worker size + {options.mem_mb} MiB; timeout "
                     f"{options.timeout} s per entry point; mgpu_io sources {self.fingerprint}")
        columns = OUTCOMES + FLAGS

        def table(title, key_of, keys):
            cells = collections.defaultdict(collections.Counter)
            for record in self.results:
                for result in record["results"]:
                    row = key_of(record, result)
                    cells[row][result["outcome"]] += 1
                    for kind in self._kinds(result):
                        if kind in FLAGS:
                            cells[row][kind] += 1
                    if self._high_memory(result):
                        cells[row]["high-memory"] += 1
            width = max([len(title)] + [len(k) for k in keys])
            header = f"{title:<{width}} " + " ".join(f"{c[:9]:>9}" for c in columns)
            out = [header, "-" * len(header)]
            for row in keys:
                if row in cells:
                    out.append(f"{row:<{width}} " + " ".join(f"{cells[row][c] or '':>9}" for c in columns))
            total = collections.Counter()
            for counter in cells.values():
                total.update(counter)
            out.append(f"{'total':<{width}} " + " ".join(f"{total[c] or '':>9}" for c in columns))
            return out

        lines.append("")
        lines += table("mutator class", lambda rec, res: rec["mutator"], [m.name for m in mutate.MUTATORS])
        lines.append("")
        lines += table("entry point", lambda rec, res: res["entry"], list(ALL_ENTRIES))
        lines.append("")
        counts = self.counts()
        lines.append("contract violations: " + ", ".join(f"{k} {v}" for k, v in counts.items()))
        groups = self.grouped()
        if groups:
            lines.append("")
            lines.append(f"{len(groups)} distinct violations (deduplicated by kind, exception type and last mgpu_io "
                         f"frame), most frequent first:")
            for number, group in enumerate(groups, 1):
                example = group["example"]
                kinds = ", ".join(f"{k} {n}" for k, n in group["kinds"].most_common())
                lines.append(f"{number:3d}. [{kinds}] {group['exc_type']}  at {group['frame'] or '(no mgpu_io frame)'}")
                lines.append(f"     entry points: {_counter(group['entries'])}")
                lines.append(f"     mutators:     {_counter(group['mutators'])}")
                lines.append(f"     e.g. input {example['index']} ({example['fixture']}: {example['description'][:90]})"
                             f" via {example['entry']}")
                message = (example["message"] or "").replace("\n", " | ")
                lines.append(f"     message: {message[:300]}")
                if example.get("last_frame") and example["last_frame"] != example.get("frame"):
                    lines.append(f"     deepest frame: {example['last_frame']}")
                if example.get("leftovers"):
                    lines.append(f"     leftovers: {example['leftovers']}")
        wrapped = self.wrapped()
        if wrapped:
            lines.append("")
            total = sum(g["count"] for g in wrapped)
            lines.append(f"not counted as violations: {total} typed errors (Python API) made "
                         f"by a catch-all from an internal exception, by the exception's type and last mgpu_io frame:")
            for number, group in enumerate(wrapped, 1):
                example = group["example"]
                lines.append(f"{number:3d}. {group['wrapped_type']} at {group['wrapped_frame'] or '(no mgpu_io frame)'}"
                             f" -> {group['exc_type']} ({group['count']}x; {_counter(group['mutators'])})")
                lines.append(f"     e.g. input {example['index']} ({example['description'][:80]}) via "
                             f"{example['entry']}: {example['wrapped_type']}: {example['wrapped_message'][:150]}")
        if self.generation_failures:
            lines.append("")
            lines.append(f"inputs that could not be made: {len(self.generation_failures)} (first: "
                         f"{self.generation_failures[0]})")
        return "\n".join(lines)

    def to_json(self):
        return {
            "seed": self.options.seed,
            "mgpu_io_sources": self.fingerprint,
            "count": len(self.results),
            "jobs": self.options.jobs,
            "keras": self.options.keras,
            "seconds": round((self.finished or time.monotonic()) - self.started, 1),
            "counts": self.counts(),
            "violations": [dict(g, kinds=dict(g["kinds"]), mutators=dict(g["mutators"]), entries=dict(g["entries"]))
                           for g in self.grouped()],
            "wrapped_internal_errors": [dict(g, mutators=dict(g["mutators"])) for g in self.wrapped()],
            "generation_failures": self.generation_failures,
            "results": self.results,
        }


def _counter(counter):
    return ", ".join(f"{k} {n}" for k, n in counter.most_common())


def _normalise(text):
    roots = [tempfile.gettempdir(), str(Path(__file__).resolve().parents[2].parent)]  # scratch and the checkout
    text = re.sub("|".join(re.escape(root) + r"/\S+" for root in roots), "<path>", str(text))
    text = re.sub(r"\.mgpu-io-\w+\.tmp", ".mgpu-io-XXXX.tmp", text)
    return re.sub(r"\d+", "N", text)[:160]


def code_fingerprint():
    """sha256 of mgpu_io's sources (the library changes while the fuzzer runs: say which code a run saw)."""
    digest = hashlib.sha256()
    for path in sorted((ROOT / "mgpu_io").rglob("*.py")):
        digest.update(str(path.relative_to(ROOT)).encode() + b"\0" + path.read_bytes())
    return digest.hexdigest()[:16]


def keras_available():
    return importlib.util.find_spec("keras") is not None


def make_options(seed=0, count=200, jobs=2, quick=False, keras=None, timeout=None, proc_every=None, workdir=None,
                 keep=False, mem_mb=3072, bomb_mb=1024, indices=None, entries=None, progress=0, proc_timeout=None,
                 start_timeout=600):
    """Options of a run, with the defaults of the command line (``quick``: the slice the pytest test runs)."""
    if quick:
        seed, count = QUICK_SEED, QUICK_COUNT
    options = argparse.Namespace(
        seed=seed, count=count, jobs=jobs, keras=keras_available() if keras is None else keras,
        timeout=timeout or (20 if quick else 30),
        proc_every=(20 if quick else 8) if proc_every is None else proc_every,
        workdir=Path(workdir) if workdir else Path(tempfile.mkdtemp(prefix="mgpu-fuzz-")), keep=keep, mem_mb=mem_mb,
        bomb_mb=bomb_mb, entries=entries, progress=progress, proc_timeout=proc_timeout or (20 if quick else 30),
        start_timeout=start_timeout,
    )
    options.indices = list(indices) if indices is not None else list(range(count))
    options.count = len(options.indices)
    return options


def run_fuzz(**kwargs):
    """Make and run the inputs; return the finished :class:`Run` (see :func:`make_options` for the arguments)."""
    return Run(make_options(**kwargs)).run()


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--count", type=int, default=200, help="inputs to make and run (default 200)")
    parser.add_argument("--jobs", type=int, default=2, help="worker processes side by side (default 2)")
    parser.add_argument("--json", type=Path, help="write every result here")
    parser.add_argument("--quick", action="store_true", help=f"the pytest slice: seed {QUICK_SEED}, {QUICK_COUNT} "
                        f"inputs (one per mutator class)")
    parser.add_argument("--case", type=str,
                        help="only these input numbers (e.g. 12,40-45): inputs kept, tracebacks printed")
    parser.add_argument("--entries", type=str, help="only these entry points, comma-separated")
    parser.add_argument("--no-keras", dest="keras", action="store_false", default=None,
                        help="leave out load_model and transfer_weights")
    parser.add_argument("--timeout", type=float, help="seconds per entry point before it counts as a hang "
                        "(default 30; 20 with --quick)")
    parser.add_argument("--proc-every", type=int, help="run the real console script on every N-th input "
                        "(default 8; 20 with --quick; 0: never)")
    parser.add_argument("--proc-timeout", type=float, help="seconds per console-script run (default 30)")
    parser.add_argument("--mem-mb", type=int, default=3072, help="memory cap per worker above its start-up size "
                        "(RLIMIT_AS, default 3072)")
    parser.add_argument("--bomb-mb", type=int, default=1024, help="peak RSS growth that counts as high-memory "
                        "(default 1024)")
    parser.add_argument("--workdir", type=Path, help="where inputs are made (default: a new temporary folder)")
    parser.add_argument("--keep", action="store_true", help="keep every input (inputs that break the contract "
                        "are always kept)")
    parser.add_argument("--progress", type=int, default=50, help="report progress every N inputs (0: never)")
    # the worker side
    parser.add_argument("--worker", action="store_true", help=argparse.SUPPRESS)
    parser.add_argument("--log", type=str, help=argparse.SUPPRESS)
    options = parser.parse_args(argv)
    if options.worker:
        options.keras = options.keras is not False
        options.proc_timeout = options.proc_timeout or 30
        worker_main(options)
        return 0
    indices = None
    if options.case:
        indices = []
        for part in options.case.split(","):
            low, _, high = part.partition("-")
            indices += list(range(int(low), int(high or low) + 1))
    run = Run(make_options(
        seed=options.seed, count=options.count, jobs=options.jobs, quick=options.quick, keras=options.keras,
        timeout=options.timeout, proc_every=options.proc_every, workdir=options.workdir,
        keep=options.keep or bool(options.case), mem_mb=options.mem_mb, bomb_mb=options.bomb_mb, indices=indices,
        entries=options.entries.split(",") if options.entries else None, progress=options.progress,
        proc_timeout=options.proc_timeout))
    print(f"inputs in {run.options.workdir}", file=sys.stderr)
    run.run()
    print(run.summary())
    if options.json:
        options.json.write_text(json.dumps(run.to_json(), indent=1, default=str))
        print(f"\nevery result: {options.json}")
    if options.case:
        for record in run.results:
            for result in record["results"]:
                if result.get("traceback"):
                    print(f"\n--- input {record['index']} {result['entry']} ({result['outcome']}):\n"
                          f"{result['traceback']}")
    return 1 if run.violations() else 0


if __name__ == "__main__":
    sys.exit(main())
