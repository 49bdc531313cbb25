"""An interrupted-then-resumed folder repair against an uninterrupted one: timings, and the trees compared.

    PYTHONPATH=. python tests/benchmarks/batch_resume.py [FILES] [--jobs N]

Makes a folder of FILES small wrappers (copies of five fixtures, full models, weights and a JSON config), repairs
it once without a break, then again into a fresh folder with Ctrl-C (SIGINT) sent halfway, and resumes that with a
second run. Prints the three timings, what the second run skipped and repaired, and whether the two output trees
are byte for byte the same. The command line is run as a user runs it (``python -m mgpu_io unwrap IN OUT``).
"""

import argparse
import hashlib
import json
import os
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
FIXTURES = ROOT / "fixtures" / "files"
SOURCES = ["k224_functional_bn_x2_full.h5", "k224_functional_bn_x2_weights.h5", "k216_kuza55_x2_full.h5",
           "k224_sequential_x3_full.h5", "k224_siamese_x2_config.json"]


def make_folder(folder, count):
    for index in range(count):
        name = SOURCES[index % len(SOURCES)]
        target = folder / f"run{index % 10}" / f"{index:05d}-{name}"
        target.parent.mkdir(parents=True, exist_ok=True)
        shutil.copyfile(FIXTURES / name, target)


def command(source, output, jobs):
    return [sys.executable, "-m", "mgpu_io", "unwrap", str(source), str(output), "--json", "--jobs", str(jobs)]


def run(source, output, jobs):
    start = time.perf_counter()
    result = subprocess.run(command(source, output, jobs), capture_output=True, text=True, cwd=ROOT)
    return time.perf_counter() - start, result


def interrupted(source, output, jobs, count):
    """Run until half of the outputs exist, then send SIGINT; return the seconds it ran and its exit code."""
    start = time.perf_counter()
    process = subprocess.Popen(command(source, output, jobs), stdout=subprocess.DEVNULL, stderr=subprocess.PIPE,
                               cwd=ROOT)
    while process.poll() is None:
        if output.is_dir() and sum(1 for p in output.rglob("*") if p.is_file()) >= count // 2:
            process.send_signal(signal.SIGINT)
            break
        time.sleep(0.02)
    process.wait()
    return time.perf_counter() - start, process.returncode


def digests(folder):
    return {str(p.relative_to(folder)): hashlib.sha256(p.read_bytes()).hexdigest()
            for p in sorted(folder.rglob("*")) if p.is_file()}


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("files", nargs="?", type=int, default=1000)
    parser.add_argument("--jobs", type=int, default=os.cpu_count() or 1)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as scratch:
        scratch = Path(scratch)
        make_folder(scratch / "in", args.files)
        whole_seconds, whole = run(scratch / "in", scratch / "whole", args.jobs)
        cut_seconds, cut_code = interrupted(scratch / "in", scratch / "resumed", args.jobs, args.files)
        written_before = sum(1 for p in (scratch / "resumed").rglob("*") if p.is_file())
        resume_seconds, resumed = run(scratch / "in", scratch / "resumed", args.jobs)
        report = json.loads(resumed.stdout)
        same = digests(scratch / "whole") == digests(scratch / "resumed")
        print(json.dumps({
            "files": args.files,
            "jobs": args.jobs,
            "uninterrupted_s": round(whole_seconds, 2),
            "uninterrupted_exit": whole.returncode,
            "interrupted_s": round(cut_seconds, 2),
            "interrupted_exit": cut_code,
            "outputs_when_interrupted": written_before,
            "resume_s": round(resume_seconds, 2),
            "resume_exit": resumed.returncode,
            "resume_counts": report["counts"],
            "interrupted_plus_resume_s": round(cut_seconds + resume_seconds, 2),
            "trees_identical": same,
            "outputs": len(digests(scratch / "whole")),
        }, indent=2))


if __name__ == "__main__":
    main()
