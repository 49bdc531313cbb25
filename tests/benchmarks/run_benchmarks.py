"""Benchmarks of mgpu-io against its references, written to docs/benchmarks.md (`make bench`, not `make test`).

Files: data-parallel wrappers of about 100 MB and 1 GB of weights plus Adam state, and nested saves of depth 1, 3
and 10 over the same 100 MB of weights, written by tf_keras on current TensorFlow (the same legacy HDF5 layout the
old writers used; its slice Lambdas are real marshalled code). Each figure is the median of several runs, each run a
fresh process, on the same file and disk as its reference:

- `mgpu-io unwrap` wall time and peak RSS vs `cp` of the same file;
- `mgpu-io inspect` of the 1 GB file and `mgpu-io --help` wall time (neither imports TensorFlow or Keras);
- `mgpu_io.load_model` of the wrapper vs `keras.models.load_model` of the equivalent clean file (the load call only);
- the naive recovery people used (tf_keras `load_model` of the wrapper, `layers[-2]`, `save`), where it finishes.

Usage: python tests/benchmarks/run_benchmarks.py [--runs N] [--workdir build/bench] [--quick]
"""

import argparse
import json
import os
import platform
import shutil
import statistics
import subprocess
import sys
import textwrap
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
BIN = Path(sys.executable).parent
MIB = 1 << 20

WRITE = """
import sys, os
sys.path.insert(0, {tests!r})
import numpy as np, tensorflow as tf, tf_keras as keras
from parallel import make_parallel

def template(width, depth):
    inp = keras.Input((width,), name="inp")
    x = inp
    for i in range(depth):
        x = keras.layers.Dense(width, name="dense_%d" % i)(x)
    return keras.Model(inp, keras.layers.Dense(10, activation="softmax", name="out")(x), name="template")

width, depth, nesting, train, path = {width}, {depth}, {nesting}, {train}, {path!r}
model = template(width, depth)
for _ in range(nesting):
    model = make_parallel(keras, model, 2)
model.compile(optimizer=keras.optimizers.Adam(1e-3), loss="categorical_crossentropy")
if train:  # one step creates the Adam state (nested saves skip it: depth 10 calls the template 1024 times)
    x = np.random.RandomState(0).standard_normal((4, width)).astype("float32")
    model.train_on_batch(x, np.eye(10, dtype="float32")[[0, 1, 2, 3]])
model.save(path)
"""

LOAD = """
import sys, time, os
sys.path.insert(0, {tests!r})
import keras, mgpu_io
start = time.perf_counter()
{call}
print(time.perf_counter() - start)
"""

NAIVE = """
import sys, time
sys.path.insert(0, {tests!r})
import tf_keras as keras
start = time.perf_counter()
wrapper = keras.models.load_model({path!r}, compile=False)
wrapper.layers[-2].save({out!r})
print(time.perf_counter() - start)
"""


def run(command, timeout=900):
    """Run a command in a fresh process: (wall seconds, stdout), or (None, "timeout")."""
    start = time.perf_counter()
    process = subprocess.Popen(command, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                               env=dict(os.environ, TF_CPP_MIN_LOG_LEVEL="3", CUDA_VISIBLE_DEVICES=""))
    try:
        stdout, stderr = process.communicate(timeout=timeout)
    except subprocess.TimeoutExpired:
        process.kill()
        process.communicate()
        return None, "timeout"
    if process.returncode != 0:
        raise RuntimeError(f"{command[:3]} failed: {stderr.decode()[-2000:]}")
    return time.perf_counter() - start, stdout.decode()


def timed(command):
    """Run a command in a fresh process: (wall seconds, peak RSS in MiB) from wait4, which Popen would hide."""
    start = time.perf_counter()
    pid = os.fork()
    if pid == 0:  # child: exec the command with its output discarded
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, 1)
        os.dup2(devnull, 2)
        os.environ.update(TF_CPP_MIN_LOG_LEVEL="3", CUDA_VISIBLE_DEVICES="")
        try:
            os.execv(command[0], command)
        finally:
            os._exit(127)
    _, status, usage = os.wait4(pid, 0)
    wall = time.perf_counter() - start
    if os.waitstatus_to_exitcode(status) != 0:
        raise RuntimeError(f"{command} exited with {os.waitstatus_to_exitcode(status)}")
    return wall, usage.ru_maxrss / 1024


def median_of(runs, measure):
    values = []
    for _ in range(runs):
        subprocess.run(["sync"], check=True)  # start each run with no dirty pages of the previous one
        values.append(measure())
    return statistics.median(v[0] for v in values), max((v[1] or 0) for v in values)


def python_call(script, timeout=900):
    wall, stdout = run([sys.executable, "-c", script], timeout=timeout)
    if wall is None:
        return None
    return float(stdout.strip().splitlines()[-1])


def write_wrapper(path, width, depth, nesting, train=True):
    script = WRITE.format(tests=str(ROOT / "tests"), width=width, depth=depth, nesting=nesting, train=train,
                          path=str(path))
    run([sys.executable, "-c", textwrap.dedent(script)], timeout=1800)
    return path


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=3)
    parser.add_argument("--workdir", default=str(ROOT / "build" / "bench"))
    parser.add_argument("--quick", action="store_true", help="small files only (a smoke run)")
    args = parser.parse_args()
    work = Path(args.workdir)
    shutil.rmtree(work, ignore_errors=True)
    work.mkdir(parents=True)
    mgpu = str(BIN / "mgpu-io")

    # Dense(width) x depth: width*width*depth float32 weights.
    sizes = {"100 MB": (2560, 4), "1 GB": (5120, 10)} if not args.quick else {"4 MB": (512, 4)}
    results = {}
    print("writing the benchmark files with tf_keras ...", flush=True)
    files = {label: write_wrapper(work / f"wrapper-{label.replace(' ', '')}.h5", w, d, 1)
             for label, (w, d) in sizes.items()}
    small_w, small_d = next(iter(sizes.values()))
    nested = {depth: write_wrapper(work / f"nested-{depth}.h5", small_w, small_d, depth, train=False)
              for depth in (1, 3, 10)}

    for label, path in files.items():
        size = path.stat().st_size
        copy = str(work / "copy.h5")
        cp_time, _ = median_of(args.runs, lambda: timed(["/bin/cp", str(path), copy]))
        # unwrap makes its output durable (fsync, then rename): the like-for-like reference is cp, then sync.
        cp_sync_time, _ = median_of(args.runs, lambda: timed(
            ["/bin/sh", "-c", f"/bin/cp '{path}' '{copy}' && sync '{copy}'"]))
        unwrap_time, unwrap_rss = median_of(args.runs, lambda: timed(
            [mgpu, "unwrap", str(path), str(work / "clean.h5"), "--force"]))
        inspect_time, _ = median_of(args.runs, lambda: timed([mgpu, "inspect", str(path), "--json"]))
        def load(call):
            return statistics.median(python_call(LOAD.format(tests=str(ROOT / "tests"), call=call))
                                     for _ in range(args.runs))

        clean = str(work / "clean.h5")
        load_ours = load(f"mgpu_io.load_model({str(path)!r})")
        load_keras = load(f"keras.models.load_model({clean!r})")
        load_ours_weights = load(f"mgpu_io.load_model({str(path)!r}, compile=False)")
        load_keras_weights = load(f"keras.models.load_model({clean!r}, compile=False)")
        naive = python_call(NAIVE.format(tests=str(ROOT / "tests"), path=str(path), out=str(work / "naive.h5")),
                            timeout=600)
        results[label] = dict(size_mib=size / MIB, cp=cp_time, cp_sync=cp_sync_time, unwrap=unwrap_time, unwrap_rss=unwrap_rss,
                              inspect=inspect_time, load_ours=load_ours, load_keras=load_keras, naive=naive,
                              load_ours_weights=load_ours_weights, load_keras_weights=load_keras_weights)
        print(label, json.dumps(results[label]), flush=True)
    help_time, help_rss = median_of(args.runs, lambda: timed([mgpu, "--help"]))
    depth_times = {depth: median_of(args.runs, lambda p=path: timed(
        [mgpu, "unwrap", str(p), str(work / "clean-nested.h5"), "--force"]))[0] for depth, path in nested.items()}
    print("help", help_time, "depths", depth_times, flush=True)
    write_report(results, help_time, depth_times, args.runs, nested)
    shutil.rmtree(work, ignore_errors=True)


def _versions():
    versions = {"python": platform.python_version()}
    for package in ("tensorflow", "keras", "tf_keras", "h5py", "numpy"):
        try:
            module = __import__(package)
            versions[package] = module.__version__
        except ImportError:
            pass
    return versions


def _cpu():
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or "unknown CPU"


NOTES = """Notes:

- The naive recovery works here only because tf_keras runs the slice Lambdas' stored bytecode, which these files hold
  for the same Python 3.11; files of the old writers fail there (`bad marshal data`, `EOFError`), and running stored
  code is what mgpu-io never does. It also saves the template without its optimizer state (a third of the bytes)
  and without `fsync`.
- `unwrap` writes a fresh file (no bytes of the source's slice payloads survive in it), copies the weight bytes in the
  kernel (`copy_file_range`) and makes the file durable (`fsync`) before renaming it over the output: the
  like-for-like reference is `cp` followed by `sync`. Gigabyte writes on this machine vary by up to 2x with the
  kernel's writeback from run to run, which is as large as the difference being measured; see the closing note of
  the issue for a controlled sequence."""


def write_report(results, help_time, depth_times, runs, nested):
    memory = os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES") / 2 ** 30
    lines = [
        "# Benchmarks",
        "",
        "Generated by `make bench` (tests/benchmarks/run_benchmarks.py); do not edit by hand.",
        "",
        f"- Machine: {os.cpu_count()} cores ({_cpu()}), {memory:.0f} GiB memory, {platform.system()} "
        f"{platform.release()}",
        "- Versions: " + ", ".join(f"{k} {v}" for k, v in _versions().items()),
        f"- Each figure is the median of {runs} runs, each run a fresh process started after `sync`; input files sit "
        "in the page cache for every command alike (warm), and `cp` writes the same disk as `unwrap`. Writes of "
        "gigabytes vary by up to 2x from run to run with the kernel's writeback, hence medians.",
        "- Files: wrappers of `multi_gpu_model`'s shape (2 replicas) around a stack of Dense layers, compiled with Adam, "
        "one training step taken, saved by tf_keras in the legacy HDF5 layout: the file holds the weights and twice "
        "as much Adam state. The nested saves (depth 1, 3, 10: a wrapper wrapped again) hold the same 100 MB of "
        "weights without optimizer state (a step at depth 10 calls the template 1024 times).",
        "",
        "| file (size) | figure | mgpu-io | reference | ratio | target | met |",
        "|---|---|---|---|---|---|---|",
    ]

    def row(label, figure, ours, reference, target, met, unit="s"):
        ratio = f"{ours / reference:.2f}x" if reference else "-"
        reference_text = f"{reference:.2f} {unit}" if reference is not None else "-"
        lines.append(f"| {label} | {figure} | {ours:.2f} {unit} | {reference_text} | {ratio} | {target} | "
                     f"{'yes' if met else 'NO'} |")

    for label, r in results.items():
        name = f"{label} ({r['size_mib']:.0f} MiB)"
        row(name, "`unwrap` (durable: fsync, rename) vs `cp` + `sync`", r["unwrap"], r["cp_sync"],
            "≤ 1.5x cp (1 GB)", r["unwrap"] <= 1.5 * r["cp_sync"])
        row(name, "`unwrap` vs plain `cp` (not durable: data may still be in the page cache)", r["unwrap"], r["cp"],
            "-", True)
        lines.append(f"| {name} | `unwrap` peak RSS | {r['unwrap_rss']:.0f} MiB | - | - | ≤ 150 MiB | "
                     f"{'yes' if r['unwrap_rss'] <= 150 else 'NO'} |")
        row(name, "`inspect --json`", r["inspect"], None, "< 0.5 s (1 GB)", r["inspect"] < 0.5)
        row(name, "`load_model(compile=False)` of the wrapper vs Keras' load of the clean file", r["load_ours_weights"],
            r["load_keras_weights"], "≤ 1.2x", r["load_ours_weights"] <= 1.2 * r["load_keras_weights"])
        row(name, "`load_model()` compiled, optimizer state restored (Keras' own load reads it, then drops it: "
            "\"Error in loading the saved optimizer state\")", r["load_ours"], r["load_keras"], "-", True)
        if r["naive"] is not None:
            row(name, "naive recovery (tf_keras load, `layers[-2]`, save) vs `unwrap`", r["naive"], r["unwrap"],
                "-", True)
        else:
            lines.append(f"| {name} | naive recovery | did not finish in 600 s | - | - | - | - |")
    lines.append(f"| - | `mgpu-io --help` | {help_time:.2f} s | - | - | < 0.5 s | {'yes' if help_time < 0.5 else 'NO'} |")
    base = depth_times[1]
    for depth, value in depth_times.items():
        size = nested[depth].stat().st_size / MIB
        met = value <= 1.1 * base
        lines.append(f"| nested depth {depth} ({size:.0f} MiB) | `unwrap` | {value:.2f} s | {base:.2f} s (depth 1) | "
                     f"{value / base:.2f}x | ≤ 1.1x depth 1 | {'yes' if met else 'NO'} |")
    lines += ["", NOTES]
    (ROOT / "docs" / "benchmarks.md").write_text("\n".join(lines) + "\n")
    print("wrote docs/benchmarks.md")


if __name__ == "__main__":
    main()
