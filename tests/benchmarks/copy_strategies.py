"""How a large output's bytes reach the disk: `cp` + `sync` against the repair's copy with its pages kept in the page
cache and with them dropped behind it (format/write.py's `_WriteBehind`), in turn, on one file (issue 50).

Each run copies FILE whole to a new file beside it (`copy_file_range` in 16 MiB ranges, at a destination offset
unlike the source's within a page, as a repair's are), makes it durable (`fsync`) and removes it; `sync` before
each. Prints each run, and each way's median (min-max) with its ratio to `cp` + `sync` (the median of the rounds'
own ratios), and how much of FILE was in the page cache before each run.

Usage: python tests/benchmarks/copy_strategies.py FILE [--rounds 4] [--window-mib 1024]
(run_benchmarks.py writes build/bench/wrapper-10GB.h5; `make bench BENCH_ARGS=--reuse` keeps it)
"""

import argparse
import os
import statistics
import subprocess
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))
from mgpu_io.format import write  # the repository's own, whatever is installed

SKEW = 2048  # bytes: the destination's offset, unlike the source's within a page


def copy(source, destination, window):
    """The repair's copy of ``source`` into ``destination`` (``window``: ranges kept in the page cache, or None:
    every range's writing started and its pages kept), then ``fsync``."""
    size = os.path.getsize(source)
    saved = write._WriteBehind.WINDOW
    write._WriteBehind.WINDOW = window if window is not None else 1 << 62
    try:
        with open(source, "rb") as read, open(destination, "wb") as out:
            out.write(b"\0" * SKEW)
            out.flush()
            write._read_sequentially(read.fileno())
            behind = write._WriteBehind(out.fileno())
            write._copy_range(read.fileno(), 0, out.fileno(), SKEW, size, behind=behind)
            os.fsync(out.fileno())
    finally:
        write._WriteBehind.WINDOW = saved


def cached(path):
    """GiB of ``path`` in the page cache (util-linux's fincore), or None."""
    try:
        answer = subprocess.run(["fincore", "-b", "-n", "-o", "RES", str(path)], capture_output=True, text=True)
        return int(answer.stdout.split()[0]) / 2**30
    except (OSError, ValueError, IndexError):
        return None


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("file", type=Path)
    parser.add_argument("--rounds", type=int, default=4)
    parser.add_argument("--window-mib", type=int, default=1024, help="what stays in the page cache behind the copy")
    args = parser.parse_args()
    target = args.file.with_name(args.file.name + ".copy")
    window = max(1, (args.window_mib << 20) // write._COPY_CHUNK)
    ways = {
        "cp + sync": lambda: subprocess.run(["/bin/sh", "-c", f"cp '{args.file}' '{target}' && sync '{target}'"],
                                            check=True),
        "pages kept": lambda: copy(args.file, target, None),
        f"dropped behind {args.window_mib} MiB": lambda: copy(args.file, target, window),
    }
    times = {name: [] for name in ways}
    try:
        for round_ in range(args.rounds):
            for name in (list(ways) if round_ % 2 == 0 else list(ways)[::-1]):
                target.unlink(missing_ok=True)
                subprocess.run(["sync"], check=True)
                before = cached(args.file)
                began = time.perf_counter()
                ways[name]()
                times[name].append(time.perf_counter() - began)
                shown = f", {before:.1f} GiB of the input cached before" if before is not None else ""
                print(f"round {round_ + 1}: {name}: {times[name][-1]:.2f} s{shown}", flush=True)
    finally:
        target.unlink(missing_ok=True)
    reference = times["cp + sync"]
    for name, runs in times.items():
        ratio = statistics.median(ours / theirs for ours, theirs in zip(runs, reference))
        print(f"{name}: {statistics.median(runs):.2f} s ({min(runs):.2f}-{max(runs):.2f}), {ratio:.2f}x cp + sync")


if __name__ == "__main__":
    main()
