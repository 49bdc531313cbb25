"""What one sandboxed read costs a large process: forked from itself, or from its fork server (issue 34).

A probe's child is forked to read a possibly hostile file (format/sandbox/probe.py). A fork copies the page tables
of all that the forking process maps, and the child's exit tears them down: in a process that has imported
TensorFlow (about 550 MB resident) that is kernel time on every file. A process with
:data:`~mgpu_io.format.sandbox.fork_server.SERVER_FROM` or more resident forks from its fork server instead (once it
has read SERVER_AFTER files: the server's start, about half a CPU-second, is not part of these figures), a small
process that holds the reading floor only (format/sandbox/fork_server.py).

This script imports Keras (TensorFlow) in a fresh process, then runs ``door.describe`` and ``load_model`` of FILE
ROUNDS times each way, interleaved, and prints per call: the wall-clock time and the CPU time of this process, of
its forked children and of the server (with the children it forked), from ``getrusage`` and ``/proc``.

Usage: python tests/benchmarks/probe_cost.py [FILE] [--rounds N] [--json]
"""

import argparse
import json
import os
import resource
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
DEFAULT = ROOT / "fixtures" / "files" / "k224_functional_bn_x2_full.h5"


def _server_cpu(fork_server):
    current = fork_server._ForkServer._current
    if not current or not current[1]:
        return 0.0
    with open(f"/proc/{current[1].process.pid}/stat") as stat:
        fields = stat.read().rsplit(")", 1)[1].split()
    return sum(int(x) for x in fields[11:15]) / os.sysconf("SC_CLK_TCK")  # utime, stime, cutime, cstime


def _measure(call, fork_server, server, rounds):
    fork_server.SERVER_FROM = 0 if server else 1 << 62
    if server:
        fork_server._ForkServer.start_now()  # as after SERVER_AFTER reads: its start is not measured here
    call()  # the modules imported
    before = time.perf_counter(), resource.getrusage(resource.RUSAGE_SELF), resource.getrusage(
        resource.RUSAGE_CHILDREN), _server_cpu(fork_server)
    for _ in range(rounds):
        call()
    wall, own, children, served = before
    own_after, children_after = resource.getrusage(resource.RUSAGE_SELF), resource.getrusage(resource.RUSAGE_CHILDREN)
    per = 1000 / rounds
    return {
        "wall_ms": (time.perf_counter() - wall) * per,
        "process_cpu_ms": (own_after.ru_utime + own_after.ru_stime - own.ru_utime - own.ru_stime) * per,
        "children_cpu_ms": (children_after.ru_utime + children_after.ru_stime - children.ru_utime - children.ru_stime)
        * per,
        "server_cpu_ms": (_server_cpu(fork_server) - served) * per,
    }


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("file", nargs="?", default=str(DEFAULT))
    parser.add_argument("--rounds", type=int, default=20)
    parser.add_argument("--json", action="store_true")
    args = parser.parse_args()
    os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "3")
    import keras  # noqa: F401 - what makes the process large

    import mgpu_io
    from mgpu_io.format import door
    from mgpu_io.format.sandbox import fork_server

    with open("/proc/self/statm") as statm:
        resident = int(statm.read().split()[1]) * os.sysconf("SC_PAGE_SIZE")
    calls = {"door.describe": lambda: door.describe(args.file),
             "load_model(compile=False)": lambda: mgpu_io.load_model(args.file, compile=False)}
    results = {"file": args.file, "resident_mib": resident >> 20, "rounds": args.rounds, "calls": {}}
    for name, call in calls.items():
        runs = {"forked here": [], "fork server": []}
        for _ in range(3):  # interleaved
            for way in runs:
                runs[way].append(_measure(call, fork_server, way == "fork server", args.rounds))
        results["calls"][name] = {way: {key: sorted(r[key] for r in found)[1] for key in found[0]}
                                  for way, found in runs.items()}  # the median of 3
    if args.json:
        print(json.dumps(results, indent=2))
        return
    print(f"{results['file']}: a process with Keras imported, {results['resident_mib']} MiB resident; "
          f"per call, the median of 3 interleaved runs of {args.rounds}")
    print(f"{'call':28} {'way':12} {'wall ms':>8} {'this ms':>8} {'forked ms':>9} {'server ms':>9} {'CPU ms':>7}")
    for name, ways in results["calls"].items():
        for way, r in ways.items():
            cpu = r["process_cpu_ms"] + r["children_cpu_ms"] + r["server_cpu_ms"]
            print(f"{name:28} {way:12} {r['wall_ms']:8.1f} {r['process_cpu_ms']:8.1f} {r['children_cpu_ms']:9.1f} "
                  f"{r['server_cpu_ms']:9.1f} {cpu:7.1f}")


if __name__ == "__main__":
    sys.exit(main())
