"""Recurrent models' speed after ``mgpu_io.load_model``, against tf_keras on the same file and machine (issue 46).

The files: a Keras 2.3.1-shaped ``Embedding -> Bidirectional(GRU(16, reset_after=False)) -> TimeDistributed(Dense)``
tagger and a two-layer ``LSTM`` stack, saved whole by tf_keras in the legacy HDF5 layout (the layout the old writers
used). Each figure is one fresh process that loads the file and then times, on 2 samples of 100 and of 8,801
timesteps: the first ``predict`` (tracing included: what a user waits for), a second ``predict``, and an eager
``model(x)``; each figure the median of ``--runs`` processes (single runs of the first ``predict`` were measured
0.72 s and 1.34 s apart on the same file). Rows: tf_keras; mgpu-io as loaded today; mgpu-io without :mod:`mgpu_io.keras.runtime`'s changes
(``before``: Keras 3's own TimeDistributed and eager loop); mgpu-io on Keras 3's JAX backend (.venv-jax). A figure
over ``--limit`` seconds is reported as such.

Usage: python tests/benchmarks/rnn_speed.py [--steps 100 8801] [--runs 3] [--limit 90] [--write]

``--write`` puts the table into docs/benchmarks.md (its own section, which run_benchmarks.py keeps).
"""

import argparse
import json
import os
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT / "tests" / "support"))
from jax_env import JAX_PYTHON, jax_environment  # noqa: E402

SECTION = ("<!-- rnn_speed.py -->", "<!-- /rnn_speed.py -->")

WRITE = """
import os
os.environ["TF_USE_LEGACY_KERAS"] = "1"
import tf_keras as K
inp = K.Input((None,), dtype="int32")
x = K.layers.Embedding(50, 8)(inp)
x = K.layers.Bidirectional(K.layers.GRU(16, reset_after=False, return_sequences=True))(x)
out = K.layers.TimeDistributed(K.layers.Dense(5, activation="softmax"))(x)
K.Model(inp, out).save({gru!r})
inp = K.Input((None,), dtype="int32")
x = K.layers.Embedding(50, 8)(inp)
x = K.layers.LSTM(16, return_sequences=True)(x)
x = K.layers.LSTM(16)(x)
K.Model(inp, K.layers.Dense(3)(x)).save({lstm!r})
"""

MEASURE = """
import json, os, sys, time, warnings
import numpy as np
who, path, steps = sys.argv[1], sys.argv[2], int(sys.argv[3])
warnings.simplefilter("ignore")
if who == "tf_keras":
    import tf_keras
    model = tf_keras.models.load_model(path, compile=False)
else:
    if who == "before":
        import mgpu_io.keras.runtime as runtime
        runtime.adapt = lambda model, keras: []
        import mgpu_io.keras.load as load
        load.adapt = runtime.adapt
    import mgpu_io
    model = mgpu_io.load_model(path, compile=False)
x = np.random.RandomState(0).randint(0, 50, (2, steps))
found = {}
for name, call in (("predict", lambda: model.predict(x, verbose=0)), ("predict again", lambda: model.predict(x, verbose=0)),
                   ("model(x)", lambda: model(x))):
    start = time.perf_counter()
    call()
    found[name] = time.perf_counter() - start
    print(json.dumps(found), flush=True)
"""


def measured(python, env, who, path, steps, limit, runs):
    """``{figure: seconds}``: the median of ``runs`` fresh processes (one where a run did not reach a figure: the
    slow rows are not repeated); a figure not reached is ``None``."""
    import statistics

    found = [measure(python, env, who, path, steps, limit)]
    while len(found) < runs and None not in found[-1].values():
        found.append(measure(python, env, who, path, steps, limit))
    return {key: statistics.median(f[key] for f in found) if all(f[key] is not None for f in found) else None
            for key in found[0]}


def measure(python, env, who, path, steps, limit):
    """``{figure: seconds}`` from one fresh process; a figure it did not reach within ``limit`` is ``None``."""
    try:
        done = subprocess.run([str(python), "-c", MEASURE, who, str(path), str(steps)], capture_output=True,
                              text=True, env=env, timeout=limit + 90)
        out = done.stdout
    except subprocess.TimeoutExpired as error:
        out = error.stdout.decode() if isinstance(error.stdout, bytes) else (error.stdout or "")
    lines = [line for line in out.splitlines() if line.startswith("{")]
    found = json.loads(lines[-1]) if lines else {}
    return {name: found.get(name) for name in ("predict", "predict again", "model(x)")}


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--steps", type=int, nargs="+", default=[100, 8801])
    parser.add_argument("--limit", type=float, default=90.0, help="seconds after which a process is not waited for (its figures so far are kept)")
    parser.add_argument("--runs", type=int, default=3, help="fresh processes a row (the median of each figure)")
    parser.add_argument("--workdir", default=str(ROOT / "build" / "bench"))
    parser.add_argument("--write", action="store_true", help="write the table into docs/benchmarks.md")
    args = parser.parse_args()
    work = Path(args.workdir)
    work.mkdir(parents=True, exist_ok=True)
    files = {"Bidirectional GRU tagger": work / "rnn_gru.h5", "LSTM stack": work / "rnn_lstm.h5"}
    env = dict(os.environ, TF_CPP_MIN_LOG_LEVEL="3", CUDA_VISIBLE_DEVICES="")
    subprocess.run([sys.executable, "-c", WRITE.format(gru=str(files["Bidirectional GRU tagger"]),
                                                      lstm=str(files["LSTM stack"]))], check=True, env=env,
                   capture_output=True)
    who = [("tf_keras", sys.executable, env), ("mgpu-io", sys.executable, env), ("before", sys.executable, env)]
    if JAX_PYTHON.exists():
        who.append(("mgpu-io on JAX", JAX_PYTHON, jax_environment(TF_CPP_MIN_LOG_LEVEL="3")))
    rows = []
    for label, path in files.items():
        for steps in args.steps:
            for name, python, environment in who:
                figures = measured(python, environment, "before" if name == "before" else name.split()[0], path,
                                   steps, args.limit, args.runs)
                rows.append((label, steps, name, figures))
                print(label, steps, name, figures, flush=True)
    table = render(rows, args.limit)
    print(table)
    if args.write:
        page = ROOT / "docs" / "benchmarks.md"
        page.write_text(with_section(page.read_text(), table))
        print("wrote docs/benchmarks.md")


def render(rows, limit):
    def seconds(value):
        return f"{value:.2f} s" if value is not None else f"not within {limit + 90:.0f} s"

    by_case = {}
    for label, steps, name, figures in rows:
        by_case.setdefault((label, steps), {})[name] = figures
    lines = [
        SECTION[0],
        "## Recurrent models after `load_model`, against tf_keras (tests/benchmarks/rnn_speed.py)",
        "",
        "The median of up to three fresh processes a row on this machine (one where a figure was not reached), 2 "
        "samples; `predict` is the first call (tracing included), `model(x)` "
        "an eager call. `before`: mgpu-io without `mgpu_io/keras/runtime.py`'s TimeDistributed and eager-loop changes. "
        "Goal: mgpu-io within 1.5x of tf_keras on TensorFlow.",
        "",
        "| model | steps | run by | predict | predict again | model(x) | vs tf_keras (predict, model(x)) |",
        "|---|---|---|---|---|---|---|",
    ]
    for (label, steps), found in by_case.items():
        reference = found.get("tf_keras", {})
        for name, figures in found.items():
            ratios = []
            for key in ("predict", "model(x)"):
                ours, theirs = figures.get(key), reference.get(key)
                ratios.append(f"{ours / theirs:.2f}x" if ours is not None and theirs else "-")
            lines.append(f"| {label} | {steps:,} | {name} | {seconds(figures['predict'])} | "
                         f"{seconds(figures['predict again'])} | {seconds(figures['model(x)'])} | "
                         f"{', '.join(ratios) if name != 'tf_keras' else '-'} |")
    return "\n".join(lines + ["", SECTION[1]])


def with_section(page, table):
    """``page`` with its rnn_speed section replaced by ``table`` (or ``table`` added at its end)."""
    start, end = page.find(SECTION[0]), page.find(SECTION[1])
    if start != -1 and end != -1:
        return page[:start] + table + page[end + len(SECTION[1]):]
    return page.rstrip("\n") + "\n\n" + table + "\n"


if __name__ == "__main__":
    main()
