"""Where one command's time goes: `mgpu-io inspect` and `mgpu-io unwrap` of a small file and of the 1 GB wrapper,
phase by phase (issue 50): the interpreter's start, the imports, the CLI, the sandbox's fork and its child, reading
the structure, planning, writing, `fsync`, and what is left.

Each run is a fresh process of the console script's own interpreter. The phases are measured inside it by wrapping
the functions that do them (in the parent and in the forked child, on the one monotonic clock the two share) and
written as lines to a log; nothing in mgpu-io changes for it. The modules the command imports lazily are imported
first, in a calibration run's order, so that "imports" is all of them and the phases after it are work.

Usage: python tests/benchmarks/phases.py [--runs N] [--big build/bench/wrapper_1GB.h5] [--write]

Prints one table per command and file: each phase's median over the runs, with its min-max. ``--big`` adds the
1 GB wrapper ``run_benchmarks.py`` writes (``build/bench/wrapper-1GB.h5``; ``make bench BENCH_ARGS=--reuse`` keeps
it; without it, the small file only). ``--write`` puts the tables
in docs/benchmarks.md between ``<!-- phases.py -->`` markers.
"""

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
SMALL = ROOT / "fixtures" / "files" / "k224_siamese_x2_full.h5"
MARKERS = ("<!-- phases.py -->", "<!-- /phases.py -->")
INTRO = (
    "Each phase's median over the runs, min-max beside it, in fresh processes of the console script's interpreter."
    " \"imports\" is every module the command imports, imported first; \"command\" is what follows until the exit"
    " begins; the sandbox's row is its whole time in the parent (the fork, the child's work, the answer), the child's"
    " phases are inside it; \"rest\" is the interpreter's start and exit and this script's own wrapping. `inspect`,"
    " and `unwrap` of one file into a `.h5`, fork their fork server as they start: the server imports the reader or"
    " the repair while the command imports itself (its row overlaps \"imports\"), and the sandbox's row includes the"
    " wait for it."
)

#: The functions each phase is, by module and name (wrapped wherever the name is bound, so from-imports count too).
TIMED = {
    "sandbox (parent: fork, wait, answer)": ("mgpu_io.format.sandbox.probe", "probed"),
    "reading the structure": ("mgpu_io.format.read", "_read_hdf5"),
    "planning": ("mgpu_io.format.plan", "make_plan"),
    "writing": ("mgpu_io.format.write", "write_plan"),
    "fsync": ("os", "fsync"),
}

PRELUDE = r"""
import atexit, json, os, sys, time
START = time.perf_counter()
LOG = os.environ["PHASES_LOG"]
TIMED = json.loads(os.environ["PHASES_TIMED"])
ARGV = json.loads(os.environ["PHASES_ARGV"])

def note(name, start, end):
    with open(LOG, "a") as handle:
        handle.write(json.dumps([os.getpid(), name, start, end]) + "\n")

def timed(module_name, attribute, label):
    module = sys.modules.get(module_name)
    original = getattr(module, attribute, None) if module is not None else None
    if original is None or getattr(original, "timed", False):
        return
    def wrapper(*args, **kwargs):
        began = time.perf_counter()
        try:
            return original(*args, **kwargs)
        finally:
            note(label, began, time.perf_counter())
    wrapper.timed = True
    for other in list(sys.modules.values()):  # every binding of the function: module globals and from-imports
        if getattr(other, attribute, None) is original:
            setattr(other, attribute, wrapper)

def time_everything():  # here, and in a fork server once it has imported what it reads with
    for label, (module_name, attribute) in TIMED.items():
        timed(module_name, attribute, label)
    import mgpu_io.format.sandbox.inside as inside
    child = inside._child
    if getattr(child, "timed", False):
        return
    def started(*args, **kwargs):  # the forked child's first step
        note("child started", time.perf_counter(), time.perf_counter())
        return child(*args, **kwargs)
    started.timed = True
    inside._child = started

# A command that forks its fork server as it starts (mgpu_io.format.early.READERS) does so here, as the console script
# does: before the command line's imports, which the server's own run beside. The server times its phases once its
# imports are done.
import mgpu_io.cli as cli
import mgpu_io.format.sandbox.fork_server as fork_server
timed("mgpu_io.format.sandbox.fork_server", "start_early", "fork server forked (parent)")
preload = fork_server._preload
def preload_then_time(*args, **kwargs):
    began = time.perf_counter()
    preload(*args, **kwargs)
    note("fork server's imports (in it, beside the parent's)", began, time.perf_counter())
    time_everything()
fork_server._preload = preload_then_time
cli._start_early(ARGV)

for name in json.loads(os.environ["PHASES_IMPORTS"]):
    try:
        __import__(name)
    except Exception:
        pass
IMPORTED = time.perf_counter()
note("imports", START, IMPORTED)
time_everything()
atexit.register(lambda: note("command", IMPORTED, time.perf_counter()))
sys.argv = ["mgpu-io"] + ARGV
cli.run()
"""

CALIBRATE = r"""
import json, sys
sys.argv = ["mgpu-io"] + json.loads(sys.argv[1])
import atexit
atexit.register(lambda: print("\n" + json.dumps([m for m in sys.modules if m.split(".")[0] in
    ("mgpu_io", "h5py", "numpy", "typer", "rich", "yaml", "click")]), file=sys.stderr))
from mgpu_io.cli import run
run()
"""


def python():
    return str(Path(sys.executable))


def imported_by(argv):
    """The modules ``mgpu-io ARGV`` imports, in order (a calibration run)."""
    done = subprocess.run([python(), "-c", CALIBRATE, json.dumps(argv)], capture_output=True, text=True, cwd=ROOT)
    return json.loads(done.stderr.strip().splitlines()[-1])


def bare_start(runs):
    times = []
    for _ in range(runs):
        began = time.perf_counter()
        subprocess.run([python(), "-c", "pass"], check=True)
        times.append(time.perf_counter() - began)
    return times


def one_run(argv, modules, cleanup=None):
    with tempfile.TemporaryDirectory(prefix="phases-") as folder:
        log = Path(folder) / "log"
        env = dict(os.environ, PHASES_LOG=str(log), PHASES_IMPORTS=json.dumps(modules),
                   PHASES_TIMED=json.dumps(TIMED), PHASES_ARGV=json.dumps(argv))
        began = time.perf_counter()
        done = subprocess.run([python(), "-c", PRELUDE], env=env, capture_output=True, text=True, cwd=ROOT)
        wall = time.perf_counter() - began
        if cleanup is not None:
            cleanup()
        if done.returncode != 0:
            raise SystemExit(f"mgpu-io {' '.join(argv)} failed: {done.stderr[-2000:]}")
        lines = [json.loads(line) for line in log.read_text().splitlines()]
    return wall, lines


def phases(wall, lines):
    """``{phase: seconds}`` of one run, from its log lines."""
    found = {"total (wall, from outside)": wall}
    parent = next(pid for pid, name, _, _ in lines if name == "imports")
    sums = {}
    for pid, name, start, end in lines:
        if name.startswith("sandbox") and pid != parent:
            continue  # a probe inside the child runs there, unprobed: the parent's wait is the sandbox's time
        sums[name] = sums.get(name, 0.0) + (end - start)
    found["imports"] = sums.get("imports", 0.0)
    found["command (after the imports)"] = sums.get("command", 0.0)
    probe = [(start, end) for pid, name, start, end in lines if name.startswith("sandbox") and pid == parent]
    child = [start for pid, name, start, _ in lines if name == "child started" and pid != parent]
    if probe and child:
        found["fork to the child's first step"] = child[0] - probe[0][0]
    for label in ("fork server forked (parent)", "fork server's imports (in it, beside the parent's)", *TIMED):
        if label in sums:
            found[label] = sums[label]
    found["interpreter start and exit (rest)"] = wall - found["imports"] - found["command (after the imports)"]
    return found


def table(title, runs):
    names = list(dict.fromkeys(name for run in runs for name in run))
    rows = [f"**{title}** (median of {len(runs)} runs; min-max)", "", "| phase | seconds |", "|---|---|"]
    for name in names:
        values = [run[name] for run in runs if name in run]
        rows.append(f"| {name} | {statistics.median(values):.3f} ({min(values):.3f}-{max(values):.3f}) |")
    return "\n".join(rows)


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--runs", type=int, default=5)
    parser.add_argument("--big", type=Path, default=None, help="the 1 GB wrapper (run_benchmarks.py writes it)")
    parser.add_argument("--write", action="store_true", help="write the tables into docs/benchmarks.md")
    args = parser.parse_args()
    if args.big is not None and not args.big.exists():
        print(f"{args.big} is not there (run_benchmarks.py --reuse keeps it): the small file only", flush=True)
        args.big = None
    files = [("a 34 KB wrapper", SMALL)] + ([("the 1 GB wrapper", args.big)] if args.big else [])
    out = Path(tempfile.mkdtemp(prefix="phases-out-"))
    tables = [table("`python -c pass`", [{"interpreter start and exit": t} for t in bare_start(args.runs)])]
    for label, path in files:
        commands = {
            "inspect": ["inspect", str(path)],
            "unwrap to .h5": ["unwrap", str(path), str(out / "out.h5"), "--force"],
        }
        for command, argv in commands.items():
            modules = imported_by(argv)
            runs = []
            for _ in range(args.runs):
                wall, lines = one_run(argv, modules, cleanup=lambda: (out / "out.h5").unlink(missing_ok=True))
                runs.append(phases(wall, lines))
            tables.append(table(f"`mgpu-io {command}` of {label}", runs))
            print(tables[-1] + "\n", flush=True)
    text = "\n\n".join(tables)
    if args.write:
        page = ROOT / "docs" / "benchmarks.md"
        content = page.read_text()
        heading = (f"## Where a command's time goes (phases.py, {time.strftime('%Y-%m-%d')}, "
                   f"{os.cpu_count()} cores)\n\n{INTRO}\n\n")
        block = f"{MARKERS[0]}\n{heading}{text}\n{MARKERS[1]}"
        if MARKERS[0] in content:
            before, rest = content.split(MARKERS[0], 1)
            content = before + block + rest.split(MARKERS[1], 1)[1]
        else:
            content = content.rstrip("\n") + "\n\n" + block + "\n"
        page.write_text(content)


if __name__ == "__main__":
    main()
