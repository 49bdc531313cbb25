"""Benchmarks of mgpu-io against its references, written to docs/benchmarks.md (`make bench`, not `make test`).

Files: data-parallel wrappers of about 1 GB and 10 GB (weights plus Adam state), and nested saves of depth 1 and
10 over the same 100 MB of weights, written by tf_keras on current TensorFlow (the same legacy HDF5 layout the old
writers used; its slice Lambdas are real marshalled code); and a folder of 425 small files, the repository's
fixtures written by the old writers. Each figure is the median of several runs, each run a fresh process, on the
same file and disk as its reference, and is reported against its goal (:data:`GOALS`, set by issue 13; the small files' by issue 24); each goal met is kept
as a guard against a regression:

- `mgpu-io unwrap` wall time vs a durable copy (`cp`, then `sync`), at 1 GB and 10 GB, and its peak RSS;
- a folder of small files with `--jobs 2`, in files per second, against the HDF5 work alone (hdf5_floor.py): the
  rate two workers would reach if a file cost only its HDF5 calls;
- `mgpu_io.load_model` of the wrapper vs `keras.models.load_model` of the equivalent clean file (the load call only);
- `mgpu-io inspect` of the 1 GB file and `mgpu-io --help` wall time (neither imports TensorFlow or Keras);
- the naive recovery people used (tf_keras `load_model` of the wrapper, `layers[-2]`, `save`), for comparison;
- what a sandboxed read costs a process with Keras imported, forked from itself or from its fork server
  (probe_cost.py), for comparison.

Usage: python tests/benchmarks/run_benchmarks.py [--runs N] [--workdir build/bench] [--quick] [--reuse]
           [--only NAME[,NAME...]]

``--only`` takes some of the measurements (names in :data:`ONLY`: ``unwrap-1GB``, ``load``, ``inspect``, ...) and
prints their figures without writing docs/benchmarks.md; with ``--reuse`` it reuses the written wrappers, so that one
figure can be measured again in a minute instead of the whole run's quarter of an hour.
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
from importlib import metadata
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
BIN = Path(sys.executable).parent
MIB = 1 << 20
#: The sections of docs/benchmarks.md that other scripts write (rnn_speed.py, phases.py), which this script keeps.
KEPT_SECTIONS = (("<!-- rnn_speed.py -->", "<!-- /rnn_speed.py -->"), ("<!-- phases.py -->", "<!-- /phases.py -->"))

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


def python_call(script, timeout=900):
    wall, stdout = run([sys.executable, "-c", script], timeout=timeout)
    if wall is None:
        return None
    return float(stdout.strip().splitlines()[-1])


def write_wrapper(path, width, depth, nesting, train=True):
    """Write a wrapper with tf_keras, or keep the one a previous ``--reuse`` run wrote with the same parameters
    (its ``.params`` file beside it says which, and is written only after the file is complete)."""
    params = Path(f"{path}.params")
    writer = {name: metadata.version(name) for name in ("tensorflow", "tf_keras", "h5py", "numpy")}
    wanted = json.dumps(dict(width=width, depth=depth, nesting=nesting, train=train, writer=writer))
    if path.exists() and params.exists() and params.read_text() == wanted:
        return path
    params.unlink(missing_ok=True)
    script = WRITE.format(tests=str(ROOT / "tests" / "support"), width=width, depth=depth, nesting=nesting,
                          train=train, path=str(path))
    run([sys.executable, "-c", textwrap.dedent(script)], timeout=1800)
    params.write_text(wanted)
    return path


#: What ``--only`` selects: each a part of the run (``load`` is both load_model figures).
ONLY = ("unwrap-1GB", "unwrap-10GB", "load", "naive", "inspect", "help", "small", "checkpoints", "nested", "probe")

#: The goals of issue 13, each against its reference; ``ratio`` goals divide by the reference.
GOALS = {
    "unwrap 1 GB": ("`unwrap` of the 1 GB wrapper vs a durable copy (`cp` + `sync`)", 1.25, "ratio"),
    "unwrap 10 GB": ("`unwrap` of the 10 GB wrapper vs a durable copy (`cp` + `sync`)", 1.05, "ratio"),
    # Issue 24 retired the 300 files/s goal (below what the HDF5 calls alone allow once start-up is counted): the
    # small files' rate is measured against the floor's, two workers at the floor's cost a file.
    "small files": ("a folder of small wrappers, `--jobs 2`, vs the HDF5 calls alone (the floor)", 0.6, "floor"),
    # Issue 50: one training run's checkpoints, one model config shared by every file.
    "checkpoints": ("a folder of 100 checkpoints of one model, `--jobs 2`, vs the HDF5 calls alone (the floor)", 0.6,
                    "floor"),
    "load compiled": ("`load_model()` compiled vs `keras.models.load_model` of the clean file", 1.2, "ratio"),
    "load weights": ("`load_model(compile=False)` vs Keras' load of the clean file (compile=False)", 1.2, "ratio"),
    "help": ("`mgpu-io --help`", 0.1, "seconds"),  # issue 50: 0.1 s (0.3 s before)
    "inspect small": ("`mgpu-io inspect` of a small wrapper (34 KB)", 0.2, "seconds"),  # issue 50
    "inspect": ("`mgpu-io inspect --json` of the 1 GB wrapper", 0.3, "seconds"),
    "rss": ("`unwrap` peak RSS, 10 GB wrapper", 150, "MiB"),
    "nested": ("`unwrap` of a depth-10 nested save vs depth 1 (same weights)", 1.1, "ratio"),
}


def consecutive(runs, measure):
    """Median seconds and peak RSS of ``runs`` runs of ``measure()`` in a row, after one unmeasured warm-up run,
    each after ``sync`` (as hyperfine runs a command): each run follows one of its own kind, so that no command
    inherits another's page-cache and disk state (see the notes in docs/benchmarks.md)."""
    subprocess.run(["sync"], check=True)
    measure()
    values = []
    for _ in range(runs):
        subprocess.run(["sync"], check=True)  # start each run with no dirty pages of the previous one
        values.append(measure())
    return _summary(values)


def _summary(values):
    """``(median seconds, peak RSS, [fastest, slowest] seconds)`` of measured ``(seconds, RSS)`` pairs."""
    seconds = [v[0] for v in values]
    return statistics.median(seconds), max(v[1] or 0 for v in values), [min(seconds), max(seconds)]


def interleaved(runs, first, second):
    """Median seconds and peak RSS of ``runs`` runs of each of two measures, taken in turn and counterbalanced
    (A B, B A, A B, ...) after one unmeasured warm-up run of each, each after ``sync``: a machine whose speed drifts
    during the benchmark (other work, the disk's own write-back) weighs on both alike, and each command follows
    itself and the other alike (a gigabyte write was measured slower right after another tool's). The third value
    is the median of the turns' own ratios (first / second), as farm-bench takes it: a turn's two runs saw the same
    machine, where the two medians may each come from another hour's disk."""
    subprocess.run(["sync"], check=True)
    first()
    second()
    values = ([], [])
    for turn in range(runs):
        pairs = ((first, values[0]), (second, values[1]))
        for measure, into in pairs if turn % 2 == 0 else pairs[::-1]:
            subprocess.run(["sync"], check=True)
            into.append(measure())
    ratios = [a[0] / b[0] for a, b in zip(*values)]
    return _summary(values[0]), _summary(values[1]), statistics.median(ratios)


def fresh(path, command):
    """Run ``command`` (which writes ``path``) with ``path`` absent before, and remove it after: every write goes to
    a new file, as the reference's does (freeing the blocks of a file replaced costs as much as writing some)."""
    def measure():
        Path(path).unlink(missing_ok=True)
        subprocess.run(["sync"], check=True)
        try:
            return timed(command)
        finally:
            Path(path).unlink(missing_ok=True)
    return measure


def small_folder(work, count=425):
    """A folder of ``count`` small files: the repository's wrapper fixtures, written by the real old writers,
    copied round-robin."""
    folder = work / "small"
    folder.mkdir()
    # Error cases would fail the run, not repair: the failed-save stub holds no model, and a CuDNN weights-only file
    # needs its architecture (--config) since issue 27, which a folder of files cannot give each file.
    sources = sorted(p for p in (ROOT / "fixtures" / "files").glob("*.h5")
                     if "stub" not in p.name and not ("cudnn" in p.name and p.name.endswith("_weights.h5")))
    for index in range(count):
        shutil.copyfile(sources[index % len(sources)], folder / f"{index:04d}-{sources[index % len(sources)].name}")
    return folder, len(sources)


#: The checkpoints folder's model: MobileNetV2 inside `multi_gpu_model` (2 replicas), written by Keras 2.3.1 with its
#: Adam state (fixtures/applications): 160 layers, a 0.8 MB file, the config a training run's checkpoints share.
CHECKPOINT = ROOT / "fixtures" / "applications" / "k231_mobilenet_v2_x2_full.h5"


def checkpoint_folder(work, count=100):
    """A folder of ``count`` checkpoints of one model (copies of :data:`CHECKPOINT`), as one training run's
    ``ModelCheckpoint`` leaves them."""
    folder = work / "checkpoints"
    folder.mkdir()
    for index in range(count):
        shutil.copyfile(CHECKPOINT, folder / f"weights.{index + 1:03d}.h5")
    return folder


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=3)
    parser.add_argument("--workdir", default=str(ROOT / "build" / "bench"))
    parser.add_argument("--quick", action="store_true", help="small files only (a smoke run)")
    parser.add_argument("--reuse", action="store_true",
                        help="keep the written wrappers in --workdir for the next run (about 17 GB) and reuse them")
    parser.add_argument("--only", type=lambda text: set(text.split(",")), default=None,
                        help="comma-separated measurements to take (" + ", ".join(ONLY) + "); their figures are "
                        "printed, docs/benchmarks.md is not written")
    args = parser.parse_args()
    if args.only and not args.only <= set(ONLY):
        parser.error(f"--only takes {', '.join(ONLY)}; received {', '.join(sorted(args.only - set(ONLY)))}")

    def wanted(name):
        return args.only is None or name in args.only

    work = Path(args.workdir)
    if not args.reuse:
        shutil.rmtree(work, ignore_errors=True)
    remove_outputs(work)  # what a stopped run may have left
    work.mkdir(parents=True, exist_ok=True)
    # Time the package as pip installs it, with its bytecode compiled: an editable install under
    # PYTHONDONTWRITEBYTECODE (set on the project's machines) would compile changed modules on every start instead.
    subprocess.run([sys.executable, "-m", "compileall", "-q", str(ROOT / "mgpu_io")], check=True)
    mgpu = str(BIN / "mgpu-io")
    tests = str(ROOT / "tests" / "support")

    # Dense(width) x depth, float32, plus Adam's two slots: a file of about 3 * 4 * width^2 * depth bytes.
    sizes = {"1 GB": (4096, 5), "10 GB": (8192, 13)} if not args.quick else {"1 GB": (512, 4), "10 GB": (1024, 4)}
    print("writing the benchmark files with tf_keras ...", flush=True)
    files = {label: write_wrapper(work / f"wrapper-{label.replace(' ', '')}.h5", w, d, 1)
             for label, (w, d) in sizes.items()
             if label == "1 GB" or wanted(f"unwrap-{label.replace(' ', '')}")}
    small_w, small_d = (2560, 4) if not args.quick else (512, 4)
    nested = {depth: write_wrapper(work / f"nested-{depth}.h5", small_w, small_d, depth, train=False)
              for depth in (1, 10) if wanted("nested")}
    results = {"sizes": {label: path.stat().st_size for label, path in files.items()}}
    copy, clean = work / "copy.h5", work / "clean.h5"

    for label, path in files.items():
        if not wanted(f"unwrap-{label.replace(' ', '')}"):
            continue
        durable_copy = ["/bin/sh", "-c", f"/bin/cp '{path}' '{copy}' && sync '{copy}'"]
        (ours, rss, spread), (reference, _, reference_spread), pair_ratio = interleaved(
            args.runs, fresh(clean, [mgpu, "-q", "unwrap", str(path), str(clean)]), fresh(copy, durable_copy))
        results[f"unwrap {label}"] = dict(ours=ours, reference=reference, rss=rss, spread=spread,
                                          reference_spread=reference_spread, pair_ratio=pair_ratio)
        print(label, results[f"unwrap {label}"], flush=True)
    if "unwrap 10 GB" in results:
        results["rss"] = dict(ours=results["unwrap 10 GB"]["rss"])

    one = files["1 GB"]
    if wanted("load"):
        subprocess.run([mgpu, "-q", "unwrap", str(one), str(clean)], check=True)
    def load(call):
        return lambda: (python_call(LOAD.format(tests=tests, call=call)), None)

    def paired(ours, reference):  # in turn, as the unwraps: the loads were 0.85x one day and 1.23x another in a row
        (ours, _, spread), (reference, _, reference_spread), pair_ratio = interleaved(args.runs, load(ours),
                                                                                     load(reference))
        return dict(ours=ours, reference=reference, spread=spread, reference_spread=reference_spread,
                    pair_ratio=pair_ratio)

    if wanted("load"):
        results["load compiled"] = paired(f"mgpu_io.load_model({str(one)!r})",
                                          f"keras.models.load_model({str(clean)!r})")
        results["load weights"] = paired(f"mgpu_io.load_model({str(one)!r}, compile=False)",
                                         f"keras.models.load_model({str(clean)!r}, compile=False)")
    if wanted("naive"):
        results["naive"] = dict(ours=python_call(NAIVE.format(tests=tests, path=str(one),
                                                              out=str(work / "naive.h5")), timeout=600))
    def alone(command):
        ours, _, spread = consecutive(args.runs, lambda: timed(command))
        return dict(ours=ours, spread=spread)

    if wanted("inspect"):
        results["inspect"] = alone([mgpu, "inspect", str(one), "--json"])
        results["inspect small"] = alone([mgpu, "inspect", str(ROOT / "fixtures" / "files" / "k224_functional_bn_x2_full.h5")])
    if wanted("help"):
        results["help"] = alone([mgpu, "--help"])

    if wanted("small"):
        small_files(results, args, work, mgpu)
    if wanted("checkpoints"):
        folder_rate(results, "checkpoints", args, work, mgpu, checkpoint_folder(work))
    if wanted("nested"):
        (deep, _, spread), (shallow, _, reference_spread), pair_ratio = interleaved(
            args.runs, *(fresh(clean, [mgpu, "-q", "unwrap", str(nested[d]), str(clean)]) for d in (10, 1)))
        results["nested"] = dict(ours=deep, reference=shallow, spread=spread, reference_spread=reference_spread,
                                 pair_ratio=pair_ratio)
    if wanted("probe"):  # no goal: what the fork server saves a process with TensorFlow per file (probe_cost.py)
        _, printed = run([sys.executable, str(ROOT / "tests" / "benchmarks" / "probe_cost.py"), "--json"])
        results["probe"] = json.loads(printed)
    finish(results, args, work)


def finish(results, args, work):
    """Print the figures; write docs/benchmarks.md from a whole run (not from ``--only``'s part of one)."""
    print(json.dumps(results, indent=1), flush=True)
    if args.only is None:
        write_report(results, args.runs)
    if not args.reuse:
        shutil.rmtree(work, ignore_errors=True)
    remove_outputs(work)


def small_files(results, args, work, mgpu):
    """The folder of small files, ``--jobs 2``, and the HDF5 floor of their repairs."""
    folder, kinds = small_folder(work)
    folder_rate(results, "small files", args, work, mgpu, folder)
    results["small files"]["kinds"] = kinds


def folder_rate(results, key, args, work, mgpu, folder):
    """``results[key]``: files a second of ``unwrap FOLDER OUT --jobs 2 --allow-plain``; ``results[key + " floor"]``:
    the HDF5 floor of the same repairs (hdf5_floor.py). The two are measured in turn and counterbalanced (A B, B A,
    ...), each after ``sync``, as issue 50 asks its goals to be: the machine's speed drifts by tens of percent within
    the hour here, and measured one after the other the two saw different machines. The ratio takes the median of
    each; the floor's best run is kept beside it (the round before issue 50's third, the ratio took the floor's best
    run against our median)."""
    count = len(list(folder.iterdir()))
    out = work / f"{folder.name}-out"

    def batch():
        shutil.rmtree(out, ignore_errors=True)
        try:
            return timed([mgpu, "-q", "unwrap", str(folder), str(out), "--jobs", "2", "--allow-plain"])
        finally:
            shutil.rmtree(out, ignore_errors=True)

    def floor():
        printed = run([sys.executable, str(ROOT / "tests" / "benchmarks" / "hdf5_floor.py"), str(folder)], timeout=600)
        return json.loads(printed[1].strip().splitlines()[-1])

    subprocess.run(["sync"], check=True)
    batch()  # the warm-up: the files in the page cache, as for the floor's own untimed first pass
    ours, floors = [], []
    for turn in range(args.runs):
        for measure in (batch, floor) if turn % 2 == 0 else (floor, batch):
            subprocess.run(["sync"], check=True)
            (ours if measure is batch else floors).append(measure())
    seconds, _, spread = _summary(ours)
    results[key] = dict(ours=count / seconds, seconds=seconds, spread=spread, count=count,
                        bytes=sum(p.stat().st_size for p in folder.iterdir()))
    floors.sort(key=lambda floor: floor["total"])
    results[f"{key} floor"] = dict(floors[(len(floors) - 1) // 2], best=floors[0]["total"],
                                   spread=[floors[0]["total"], floors[-1]["total"]])


def remove_outputs(work):
    """Remove what a run writes beside the input wrappers (kept by ``--reuse``)."""
    for name in ("small", "small-out", "checkpoints", "checkpoints-out"):
        shutil.rmtree(work / name, ignore_errors=True)
    for name in ("copy.h5", "clean.h5", "naive.h5"):
        (work / name).unlink(missing_ok=True)


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

- `unwrap` writes a fresh file (no bytes of the source's slice payloads survive in it): HDF5 writes its structure,
  the weight bytes are copied by the kernel (`copy_file_range`, as `cp` does, whatever the offsets: on this machine
  2 GiB at unlike offsets took 1.3-1.4 s so against 2.3-5.2 s through a 16 MiB buffer) and the kernel is asked to
  start writing each range to disk as it is copied (`sync_file_range`); beyond the last gigabyte, each range is
  waited for and its pages dropped from the page cache (`_WriteBehind` in format/write.py, as `dd oflag=nocache`
  does), so that the weight bytes an output copies never hold more than 1 GiB of it (what HDF5 writes itself,
  the structure and the weights under 1 MiB, is left to the kernel). The file is made durable (`fsync`) before
  it is renamed into place. The like-for-like reference is `cp` followed by `sync`. Both write a new file: replacing an
  existing gigabyte file also frees its blocks, which costs either tool the same.
- Dropping the output's pages is what brought the 10 GB unwrap beside its durable copy: with every range's writing
  started but its pages kept (the round before), 10 GB of output filled the page cache beside the 10 GB input,
  and the kernel wrote back and reclaimed as it went. In 3 rounds in turn on this machine, `unwrap` of the 10 GB
  wrapper took 9.1-9.6 s with 1 GiB kept behind the copy, against 7.9-18.6 s by `cp` + `sync`; in 4 other rounds
  8.1-9.3 s with 64 MiB kept, against 8.9-14.4 s with the pages kept and 7.4-20.2 s by `cp` + `sync`.
  tests/benchmarks/copy_strategies.py
  compares the three ways of copying a file on its own. An output up to 1 GiB keeps its pages: dropping them cost
  more than it saved there (1.14 s against 0.90 s by `cp` + `sync` for the 1 GB wrapper with every range dropped).
- The unwraps and their copies are taken in turn, counterbalanced (A B, B A, A B): the 10 GB ratio was 0.96x on
  one day and 1.18x on another with runs in a row, and a gigabyte write right after another tool's gigabyte write
  was measured slower, not alike for both tools (`unwrap` of the 1 GB wrapper took 2.9 s right after a `cp` +
  `sync` of it, 2.1 s after another `unwrap`; `cp` + `sync` took 1.72 s after either). In turn, a drift weighs on
  both; counterbalanced, each follows itself and the other alike.
- The durable copy is bound by the disk; `unwrap`'s difference from it is its fixed cost (interpreter, imports,
  reading the structure in a child process, planning), which a 10 GB file spreads thinner than a 1 GB one. The
  command line's `unwrap` of one file forks its fork server as it starts: the server imports the repair (h5py,
  NumPy) while the command line imports itself, and the file is repaired in the server's child (phases.py's table
  below). h5py's import ran `uname -p` in a subprocess (a fork of the server: h5py 3.12+ reads
  `platform.uname()[4]`); mgpu-io's own processes import it without (`format/h5py_import.py`), which took the
  1 GB unwrap from 0.85-0.87 s to 0.78-0.81 s in paired runs. This machine's disk is the spread: 4 GiB copied as `unwrap` copies (`copy_file_range`, `sync_file_range`,
  `fsync`) took 2.7-7.8 s, and by `cp` + `sync` 3.1-5.2 s, four runs each in turn; the 10 GB figures fall within it.
- Keras' own load of the clean file reads no optimizer state: it builds a fresh optimizer, then drops the saved one
  ("Error in loading the saved optimizer state"). `mgpu_io.load_model` reads the saved state (twice the weights'
  bytes for Adam: three times Keras' bytes in all) and restores it, so that training resumes as the writer's did; with `compile=False` it reads the weights alone. It creates the model's and the optimizer's variables without filling them from
  their initializers first (Keras' own load fills them with random numbers, then overwrites them). The sandbox's
  child reads the file and hands the weights over in memory shared with this process: the kernel copies each
  weight stored as one plain block there (`sendfile`, from the page cache: 0.39-0.53 s a gigabyte against
  0.76-1.03 s read through HDF5 into the same memory), and TensorFlow takes each array as its variable's buffer
  without a copy (docs/architecture.md).
- A small file's repair costs the same few dozen HDF5 calls whatever its size. Measured in one process on this
  machine (`MGPU_IO_PROBE=0`, the 425 files once), in CPU time a file for the whole repair, 4 rounds in turn each:
  4.4-5.2 ms once the kept plans no longer hold their files' HDF5 objects (which h5py went through at every file's
  close) against 4.7-5.4 ms before, then 4.2-4.5 ms once string attributes are read with their types made once
  against 4.5-5.0 ms before; the floor's own HDF5 calls take about 4-5 ms. What separates the folder's rate from the floor's two workers is not the
  file's own work: the command's start-up (interpreter and imports, listing the folder: about 0.19 s before the
  first worker starts), and two workers on this machine's two processors (a worker's CPU time a file was 5.7 ms
  alone and 6.3-6.7 ms beside another, and its `fsync` waits for a disk the other writes to). A worker therefore
  holds its next file before it is done with one, makes each output durable and names it in a thread while it
  reads the next, and shows its supervisor how far it is in shared memory instead of a message at each step. The
  command line's fork server, forked as the command starts, imports the repair (0.2 s: NumPy, h5py, `format/`)
  while the command imports itself and lists the folder (0.12 s), and forks the workers: a folder of 4 files took
  0.300 s against 0.328 s with workers forked by the command itself (12 rounds in turn).
- The checkpoints share one config, and a worker plans it once (`make_plan`'s `reuse`): a later checkpoint whose
  stored configs, versions and layers are the first one's takes its plan once its own 422 weights and optimizer
  slots are opened and checked and found to have the same names, shapes and types. Each weight's HDF5 handle is
  closed as soon as its type, shape and offset are read, and it is copied by its name (holding 421 handles open cost
  libhdf5 28-30 ms against 24-26 ms for the same opening, checking and copying). In one process, 48-56 ms a file
  against 67-72 ms with the code before this round (3 rounds in turn); what is left is the HDF5 work on the 422
  datasets that the floor does too (opening and checking each, writing each, closing the two files).
- The naive recovery (tf_keras `load_model` of the wrapper, `layers[-2]`, `save`) works here only because
  tf_keras runs the slice Lambdas' stored bytecode, which these files hold for the same Python; files of the old
  writers fail there (`bad marshal data`, `EOFError`), and running stored code is what mgpu-io never does. It also
  saves the template without its optimizer state (two thirds of these files' bytes) and without `fsync`."""


def _ratio(ratio, goal):
    """``ratio`` to two decimals, or three where two would read as the goal itself."""
    return f"{ratio:.3f}" if f"{ratio:.2f}" == f"{goal:.2f}" and ratio != goal else f"{ratio:.2f}"


def _probe_lines(probe):
    """What one sandboxed read costs a process with Keras imported, forked from itself or from its fork server."""
    if not probe:
        return []
    lines = [f"For comparison (no goal): what reading a file in the sandbox costs a process that has imported Keras "
             f"({probe['resident_mib']} MiB resident; tests/benchmarks/probe_cost.py, per call, CPU time of the "
             f"process, its children and its fork server):", "",
             "| call | forked here | from the fork server |", "|---|---|---|"]
    for call, ways in probe["calls"].items():
        cells = [f"{w['wall_ms']:.1f} ms ({w['process_cpu_ms'] + w['children_cpu_ms'] + w['server_cpu_ms']:.1f} ms CPU)"
                 for w in (ways["forked here"], ways["fork server"])]
        lines.append(f"| `{call}` | {cells[0]} | {cells[1]} |")
    return [*lines, ""]


def _spread(result, key="spread", bare=False):
    """The runs' spread of a figure, fastest to slowest, as `` (0.70-0.75 s)`` (``bare``: ``; runs 0.70-0.75 s``)."""
    spread = result.get(key)
    if not spread:
        return ""
    return f"; runs {spread[0]:.2f}-{spread[1]:.2f} s" if bare else f" ({spread[0]:.2f}-{spread[1]:.2f})"


def write_report(results, runs):
    memory = os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES") / 2 ** 30
    sizes = ", ".join(f"{label}: {size / 1e9:.2f} GB" for label, size in results["sizes"].items())
    small = results["small files"]
    lines = [
        "# Benchmarks",
        "",
        "Generated by `make bench` (tests/benchmarks/run_benchmarks.py); do not edit by hand.",
        "",
        f"- Machine: {os.cpu_count()} cores ({_cpu()}), {memory:.0f} GiB memory, {platform.system()} "
        f"{platform.release()}",
        "- Versions: " + ", ".join(f"{k} {v}" for k, v in _versions().items()),
        f"- Each figure is the median of {runs} runs after one warm-up run (the fastest and slowest run in brackets), "
        "each a fresh process started after "
        "`sync`, on the same file and disk as its reference. The unwraps and their durable copies, the two loads and "
        "Keras' own, the two nested saves, and each folder and its HDF5 floor are measured in turn, counterbalanced "
        "(A B, B A, ...), so that a machine whose speed drifts weighs on both alike; their ratio is the median of the "
        "turns' own ratios, as farm-bench takes it (the ratio of the two medians beside it), and a folder's the ratio "
        "of the two medians. The other figures are runs in a row (as hyperfine measures). Input files sit in the page "
        "cache for both (warm; the 10 GB one as far as memory allows beside the output: 5.8 to 9.8 of its 9.8 GiB "
        "were seen there before a run). "
        "Every write goes to a new file, removed after the run.",
        f"- Files ({sizes}): wrappers of `multi_gpu_model`'s shape (2 replicas) around a stack of Dense layers, "
        "compiled with Adam, one training step taken, saved by tf_keras in the legacy HDF5 layout: a third weights, "
        "two thirds Adam state. The nested saves hold 100 MB of weights and no optimizer state. The small files are "
        f"{small['count']} copies of the repository's {small['kinds']} fixture files (written by Keras 1.2.2 to "
        f"tf.keras 2.3; {small['bytes'] / small['count'] / 1024:.0f} KiB on average), repaired with "
        "`--allow-plain`.",
        "",
        "| goal | measured | reference | ratio | goal | met |",
        "|---|---|---|---|---|---|",
    ]
    for key, (what, goal, unit) in GOALS.items():
        r = results[key]
        if unit == "ratio":
            ratio = r.get("pair_ratio", r["ours"] / r["reference"])  # taken in turn: the turns' own ratios
            medians = f" ({r['ours'] / r['reference']:.2f}x of the medians)" if "pair_ratio" in r else ""
            lines.append(f"| {what} | {r['ours']:.2f} s{_spread(r)} | {r['reference']:.2f} s"
                         f"{_spread(r, 'reference_spread')} | {_ratio(ratio, goal)}x{medians} | ≤ {goal}x | "
                         f"{'yes' if ratio <= goal else 'NO'} |")
        elif unit == "floor":
            floor = results[f"{key} floor"]
            floor_rate = 2000 / floor["total"]  # files/s: two workers at the floor's ms a file (its median run)
            ratio = r["ours"] / floor_rate
            best = f"; {r['ours'] / (2000 / floor['best']):.2f}x its best run" if "best" in floor else ""
            lines.append(f"| {what} | {r['ours']:.0f} files/s ({r['count']} files in {r['seconds']:.2f} s"
                         f"{_spread(r, bare=True)}) | "
                         f"{floor_rate:.0f} files/s | {_ratio(ratio, goal)}x{best} | ≥ {goal}x | "
                         f"{'yes' if ratio >= goal else 'NO'} |")
        elif unit == "MiB":
            lines.append(f"| {what} | {r['ours']:.0f} MiB | - | - | ≤ {goal} MiB | "
                         f"{'yes' if r['ours'] <= goal else 'NO'} |")
        else:
            lines.append(f"| {what} | {r['ours']:.2f} s{_spread(r)} | - | - | < {goal} s | "
                         f"{'yes' if r['ours'] < goal else 'NO'} |")
    naive = results["naive"]["ours"]
    floor = results["small files floor"]
    checkpoints = results["checkpoints floor"]
    lines += ["", "For comparison (no goal): the naive recovery of the 1 GB wrapper takes "
              + (f"{naive:.2f} s" if naive is not None else "more than 600 s")
              + f" against `unwrap`'s {results['unwrap 1 GB']['ours']:.2f} s.", "",
              "The floor for the small files: the HDF5 calls of their repairs alone (the same reads and "
              "writes), made through h5py's low-level API with no planning, no checking logic and no worker "
              f"processes (tests/benchmarks/hdf5_floor.py, the median of {runs} runs taken in turn with ours; "
              f"{floor.get('best', floor['total']):.1f} ms in its best), take {floor['total']:.1f} ms a "
              f"file: reading {floor['read']:.1f} ms, writing {floor['write']:.1f} ms, `fsync` {floor['sync']:.1f} "
              f"ms. Two workers at that cost, with no start-up and no time lost between them, would repair "
              f"{2000 / floor['total']:.0f} files/s. For the checkpoints (MobileNetV2 wrappers of Keras 2.3.1, "
              f"{results['checkpoints']['bytes'] / results['checkpoints']['count'] / 2**20:.1f} MiB each, "
              f"one config): {checkpoints['total']:.1f} ms a file (reading {checkpoints['read']:.1f} ms, writing "
              f"{checkpoints['write']:.1f} ms, `fsync` {checkpoints['sync']:.1f} ms).", "", *_probe_lines(results.get("probe")), NOTES]
    page = ROOT / "docs" / "benchmarks.md"
    kept = page.read_text() if page.exists() else ""
    sections = []
    for begin, finish in KEPT_SECTIONS:  # each between its markers, as its script wrote it
        start, end = kept.find(begin), kept.find(finish)
        if start != -1 and end != -1:
            sections.append(kept[start:end + len(finish)])
    page.write_text("\n".join(lines) + "\n" + "".join(f"\n{section}\n" for section in sections))
    print("wrote docs/benchmarks.md")


if __name__ == "__main__":
    main()
