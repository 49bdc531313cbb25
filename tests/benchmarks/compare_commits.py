"""Start-up and small-file figures of two or more commits, measured side by side (a change's "no new cost" check).

``make bench`` measures one tree against its goals; a change that must cost nothing on the normal path needs the
same figures before and after it, on the same machine at the same time. This script exports each commit's
``mgpu_io`` (``git archive``) into a folder of its own, compiles its bytecode (as ``pip install`` does), and then
measures, in rounds that alternate the commits so that any load on the machine falls on all of them alike:

- ``mgpu-io --help`` and ``mgpu-io inspect FILE`` (start-up: neither imports TensorFlow or Keras);
- ``mgpu-io -q unwrap SMALL OUT --jobs 2 --allow-plain`` on the folder of 425 small files ``make bench`` uses, in
  files per second;
- with ``--wrapper FILE`` (for example ``make bench BENCH_ARGS=--reuse``'s build/bench/wrapper-1GB.h5), ``mgpu-io -q
  unwrap FILE OUT.h5`` in seconds, each output a new file made durable, as ``make bench`` times it.

Each command runs in a fresh process of this environment's Python (``python -m mgpu_io``) in the commit's folder,
which puts that folder first on the path, ahead of an editable install; the figure is the median over the rounds.

Usage: python tests/benchmarks/compare_commits.py COMMIT COMMIT [...] [--rounds 7] [--workdir build/compare]
           [--wrapper FILE]
"""

import argparse
import os
import shutil
import statistics
import subprocess
import sys
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))

from run_benchmarks import ROOT, small_folder  # noqa: E402

INSPECTED = ROOT / "fixtures" / "files" / "k224_functional_bn_x2_full.h5"


def export(commit, folder):
    """The commit's ``mgpu_io`` package under ``folder``, bytecode compiled; returns its name as git says it."""
    folder.mkdir(parents=True)
    archive = subprocess.run(["git", "-C", str(ROOT), "archive", commit, "mgpu_io"], check=True, capture_output=True)
    subprocess.run(["tar", "-x", "-C", str(folder)], input=archive.stdout, check=True)
    subprocess.run([sys.executable, "-m", "compileall", "-q", str(folder / "mgpu_io")], check=True)
    return subprocess.run(["git", "-C", str(ROOT), "rev-parse", "--short", commit], check=True, capture_output=True,
                          text=True).stdout.strip()


def run(folder, args):
    """Wall seconds of ``python -m mgpu_io ARGS`` with ``folder`` first on the path (the run must succeed)."""
    env = dict(os.environ, PYTHONPATH=str(folder), TF_CPP_MIN_LOG_LEVEL="3", CUDA_VISIBLE_DEVICES="")
    start = time.perf_counter()
    subprocess.run([sys.executable, "-m", "mgpu_io", *args], env=env, cwd=folder, check=True,
                   stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    return time.perf_counter() - start


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("commits", nargs="+")
    parser.add_argument("--rounds", type=int, default=7)
    parser.add_argument("--workdir", type=Path, default=ROOT / "build" / "compare")
    parser.add_argument("--wrapper", type=Path, help="also time the unwrap of this (large) wrapper file")
    args = parser.parse_args()
    work = args.workdir
    shutil.rmtree(work, ignore_errors=True)
    work.mkdir(parents=True)
    trees = {}
    for index, commit in enumerate(args.commits):
        folder = work / f"tree-{index}"
        trees[export(commit, folder)] = folder
    small, _ = small_folder(work)
    count = len(list(small.iterdir()))
    out = work / "small-out"
    measures = {
        "--help (s)": lambda folder: run(folder, ["--help"]),
        "inspect (s)": lambda folder: run(folder, ["inspect", str(INSPECTED)]),
        "small files (files/s)": lambda folder: count / run(folder, ["-q", "unwrap", str(small), str(out), "--jobs",
                                                                     "2", "--allow-plain"]),
    }
    if args.wrapper:
        clean = work / "clean.h5"
        measures[f"unwrap {args.wrapper.name} (s)"] = lambda folder: run(folder, ["-q", "unwrap", str(args.wrapper.resolve()),
                                                                                  str(clean), "--force"])
    figures = {(name, label): [] for name in measures for label in trees}
    for label, folder in trees.items():  # one unmeasured warm-up of each (page cache, first compile of TF's own)
        for measure in measures.values():
            shutil.rmtree(out, ignore_errors=True)
            (work / "clean.h5").unlink(missing_ok=True)
            measure(folder)
    for round_ in range(args.rounds):
        order = list(trees.items()) if round_ % 2 == 0 else list(reversed(trees.items()))
        for name, measure in measures.items():
            for label, folder in order:
                shutil.rmtree(out, ignore_errors=True)
                (work / "clean.h5").unlink(missing_ok=True)  # every write to a new file, as make bench's
                subprocess.run(["sync"], check=True)
                figures[name, label].append(measure(folder))
        print(f"round {round_ + 1}/{args.rounds} done", file=sys.stderr, flush=True)
    shutil.rmtree(out, ignore_errors=True)
    print(f"medians of {args.rounds} alternating rounds ({count} small files, --jobs 2); inspect of {INSPECTED.name}")
    print("| measure | " + " | ".join(trees) + " |")
    print("|---|" + "---|" * len(trees))
    for name in measures:
        cells = []
        for label in trees:
            values = figures[name, label]
            cells.append(f"{statistics.median(values):.3f} (range {min(values):.3f}-{max(values):.3f})")
        print(f"| {name} | " + " | ".join(cells) + " |")
    shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    main()
