"""The layer sweep: every public layer class of every writer (fixtures/layers), loaded by ``mgpu_io.load_model`` in
Keras 3 and compared with the old Keras' own predictions.

Each case is one small model saved whole by the real writer (``fixtures/generate/layers``). Its outcome is one of

- ``loads``: Keras 3 builds it as written and predicts what the writer did (max abs difference ≤ :data:`BOUND`);
- ``converted``: it loads and predicts the same after the named conversion rules;
- ``refused``: ``load_model`` raises a typed error that names the layer class, the reason and the fix;
- ``DIFFERS`` or ``ERROR``: a failure of mgpu-io (different predictions; a raw exception).

``python tests/support/layer_sweep.py`` writes docs/layers.md, the class × writer table; ``tests/load/test_layer_sweep.py``
checks every case and that the page is current. Running it imports Keras 3.
"""

import sys
import json
import warnings
from dataclasses import dataclass, field
from functools import lru_cache
from pathlib import Path
from typing import List, Optional

import numpy as np
from jax_env import JAX_PYTHON, jax_environment  # Keras 3 on JAX: where channels_first convolutions are checked

ROOT = Path(__file__).resolve().parents[2]
SWEEP = ROOT / "fixtures" / "layers"
PAGE = ROOT / "docs" / "layers.md"
#: The largest difference from the writer's predictions that counts as the same model.
BOUND = 1e-5
#: Writers in the order of their releases, as the table shows them.
WRITERS = ("k122", "k216", "k224", "k231", "tfk115", "tf20", "tf21", "tf22", "tf23", "tf24", "tf28", "tf210", "tf215",
           "tfkeras")
WRITER_NAMES = {"k122": "Keras 1.2.2", "k216": "Keras 2.1.6", "k224": "Keras 2.2.4", "k231": "Keras 2.3.1",
                "tfk115": "tf.keras 1.15", "tf20": "tf.keras 2.0", "tf21": "tf.keras 2.1", "tf22": "tf.keras 2.2",
                "tf23": "tf.keras 2.3", "tf24": "tf.keras 2.4", "tf28": "tf.keras 2.8", "tf210": "tf.keras 2.10",
                "tf215": "tf.keras 2.15", "tfkeras": "tf_keras 2.21"}


def _double_plus_one(x):
    return x * 2.0 + 1.0


def _scale_shift(x, scale=1.0, shift=0.5):
    return x * scale + shift


#: The generator's Lambda functions, by the name its bytecode records (the user's side of ``lambdas=``).
FUNCTIONS = {"<lambda>": _double_plus_one, "scale_shift": _scale_shift}


@dataclass
class Outcome:
    """What ``load_model`` did with one case."""

    writer: str
    case: str
    cls: str
    status: str
    detail: str = ""
    difference: Optional[float] = None
    rules: List[str] = field(default_factory=list)
    backend: str = "tensorflow"


def writers():
    """The writers whose sweep is in fixtures/layers, in release order."""
    return [w for w in WRITERS if (SWEEP / w / "manifest.json").is_file()]


@lru_cache(maxsize=None)
def manifest(writer):
    return json.loads((SWEEP / writer / "manifest.json").read_text())


def cases(writer):
    """``(case, entry)`` of every saved case of a writer."""
    return [(case, entry) for case, entry in sorted(manifest(writer)["cases"].items())
            if entry.get("status", "saved") == "saved"]


@lru_cache(maxsize=None)
def _arrays(writer):
    """Every array of a writer's data.npz, read once: opening the archive again for each of its cases (some 360
    compressed arrays) cost about 10 ms a case, 13 CPU-seconds over the sweep."""
    with np.load(SWEEP / writer / "data.npz") as data:
        return {key: data[key] for key in data.files}


def _batch(writer, case):
    data = _arrays(writer)
    def numbered(prefix):
        keys = sorted((k for k in data if k.startswith(f"{case}/{prefix}")),
                      key=lambda k: int(k.rsplit("/", 1)[1][1:]))
        return [data[k] for k in keys]
    return numbered("x"), numbered("y")


@lru_cache(maxsize=None)
def looked(path):
    """What the sweep reads from a case's file before loading it, from one plan made in this process (the fixtures
    are the project's own, written by the real writers): ``(rules, functions, channels_first)``, the conversion
    rules ``unwrap`` names, the generator's functions for its Lambda layers (``lambdas=``, or ``None``), and whether
    a convolution is computed channels_first. A file the plan refuses has no rules and no convolution: ``load_model``
    then says why, in the words its user sees."""
    import mgpu_io
    from mgpu_io.format.config import walk_layers
    from mgpu_io.format.plan import make_plan
    from mgpu_io.format.read import open_stored

    functions = {}
    if _has_lambda(path):  # inspect also names a Keras 1 Merge's stored function, which the plan refuses
        functions = {lam["layer"]: FUNCTIONS[name] for lam in mgpu_io.inspect(path).lambdas
                     if (name := (lam.get("code") or {}).get("function_name")) in FUNCTIONS}
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            with open_stored(path) as stored:  # planned here, without the child a user's call reads it in
                plan = make_plan(stored, allow_plain=True)
                config, rules = plan.config, list(plan.report.config_changes)
    except mgpu_io.MgpuIOError:
        return [], functions or None, False
    channels_first = any((layer.get("config") or {}).get("data_format") == "channels_first"
                         for layer in walk_layers(config or {}, wrapped=True))
    return rules, functions or None, channels_first


def evaluate(writer, case, entry, train=False):
    """Load one case with ``mgpu_io.load_model`` and compare its predictions with the writer's; ``train``: then
    run one SGD step on the writer's batch, which must give a finite loss."""
    import mgpu_io

    path = SWEEP / writer / entry["file"]
    outcome = Outcome(writer, case, entry["class"], "ERROR")
    rules, functions, _ = looked(path)
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            model = mgpu_io.load_model(path, compile=False, lambdas=functions)
        outcome.rules = rules
        xs, ys = _batch(writer, case)
        got = model(xs, training=False)
        got = [np.asarray(g) for g in (got if isinstance(got, (list, tuple)) else [got])]
        if [g.shape for g in got] != [y.shape for y in ys]:
            outcome.status, outcome.detail = "DIFFERS", f"output shapes {[g.shape for g in got]}"
            return outcome
        outcome.difference = max((float(np.max(np.abs(g.astype("float64") - y))) if y.size else 0.0)
                                 for g, y in zip(got, ys))
        if not outcome.difference <= BOUND:
            outcome.status, outcome.detail = "DIFFERS", f"max abs difference {outcome.difference:.2g}"
            return outcome
        if train:
            loss = _one_training_step(model, xs, ys)
            if not np.isfinite(loss):
                outcome.detail = f"one SGD step gave the loss {loss}"
                return outcome
        outcome.status = "converted" if outcome.rules else "loads"
    except mgpu_io.MgpuIOError as error:
        outcome.status, outcome.detail = "refused", f"{type(error).__name__}: {error}"
    except Exception as error:  # noqa: BLE001 - recorded as a failure of mgpu-io, for the test to show
        outcome.detail = f"{type(error).__name__}: {str(error).splitlines()[0] if str(error) else ''}"
    return outcome




def _one_training_step(model, xs, ys):
    """One SGD step of ``model`` towards the writer's outputs (mean squared error); the loss, as a float."""
    model.compile(optimizer="sgd", loss="mse")
    loss = model.train_on_batch(xs if len(xs) > 1 else xs[0], ys if len(ys) > 1 else ys[0])
    return float(np.asarray(loss if np.ndim(loss) == 0 else np.ravel(loss)[0]))


def channels_first(path):
    """Whether the repaired model has a layer that computes channels_first (``data_format``), which TensorFlow's
    CPU kernels without oneDNN cannot run as they are (``mgpu_io.load_model`` runs them transposed there); the
    sweep runs these on TensorFlow with oneDNN off, and on Keras 3's JAX backend."""
    return looked(path)[2]


#: What the channels_first cases run on beside the sweep's own process: TensorFlow's CPU kernels without oneDNN,
#: whatever this machine's CPU (an AMD CPU has none; an Intel one turns it on unless told).
NO_ONEDNN = {"TF_ENABLE_ONEDNN_OPTS": "0"}


def cpu_only_tensorflow():
    """Whether this process's Keras runs on TensorFlow with CPUs only."""
    import keras

    if keras.backend.backend() != "tensorflow":
        return False
    import tensorflow as tf

    return not tf.config.list_physical_devices("GPU")


def partition(only=None):
    """``(here, there)``: the ``(writer, case, entry)`` of the writers ``only`` (default: all) that the sweep's own
    process evaluates, and its channels_first cases, which run in a TensorFlow process with oneDNN off
    (:data:`NO_ONEDNN`) and in a JAX one."""
    here, there = [], []
    for writer in only or writers():
        for case, entry in cases(writer):
            (there if channels_first(SWEEP / writer / entry["file"]) else here).append((writer, case, entry))
    return here, there


def tensorflow_label():
    """How the sweep names this process's TensorFlow in an outcome: ``tensorflow`` or ``tensorflow (oneDNN
    off)``."""
    import os

    return "tensorflow (oneDNN off)" if os.environ.get("TF_ENABLE_ONEDNN_OPTS") == "0" else "tensorflow"


def summary(outcomes):
    """``"N (n1 status1, n2 status2)"``: the outcomes counted by status."""
    counts = {}
    for outcome in outcomes:
        counts[outcome.status] = counts.get(outcome.status, 0) + 1
    return f"{len(outcomes)} (" + ", ".join(f"{n} {status}" for status, n in sorted(counts.items())) + ")"


def evaluate_keys(keys):
    """The outcomes of these ``writer/case`` keys in this process's backend, each trained a step (they are the
    channels_first cases: see :func:`partition`), each named by its backend (:func:`tensorflow_label`)."""
    import keras

    done = []
    for key in keys:
        writer, case = key.split("/", 1)
        outcome = evaluate(writer, case, manifest(writer)["cases"][case], train=True)
        backend = keras.backend.backend()
        outcome.backend = tensorflow_label() if backend == "tensorflow" else backend
        done.append(outcome)
        keras.backend.clear_session(free_memory=False)
    return done


def results(jobs=()):
    """Every case of every writer, evaluated (several hundred small models: a few minutes on 2 cores).

    The channels_first cases are evaluated in a TensorFlow process with oneDNN off, which gives their outcomes, and
    in a JAX one, whose outcomes are returned second; ``jobs`` are other processes started beside (their output is
    not read here)."""
    import subprocess

    import keras

    here, there = partition()
    keys = [f"{w}/{c}" for w, c, _ in there]
    started = {"tensorflow": subprocess.Popen([sys.executable, __file__, "--evaluate", *keys], stdout=subprocess.PIPE,
                                              text=True, env=_env(**NO_ONEDNN))}
    if JAX_PYTHON.exists():
        started["jax"] = subprocess.Popen([str(JAX_PYTHON), __file__, "--evaluate", *keys], stdout=subprocess.PIPE,
                                          text=True, env=jax_environment(TF_CPP_MIN_LOG_LEVEL="3"))
    outcomes = []
    for writer, case, entry in here:
        outcomes.append(evaluate(writer, case, entry))
        keras.backend.clear_session(free_memory=False)  # gc.collect() would take a second a case
    answers = {name: [Outcome(**fields) for fields in json.loads(process.communicate()[0].strip().splitlines()[-1])]
               for name, process in started.items()}
    order = {(w, c): i for i, (w, c, _) in enumerate((w, c, e) for w in writers() for c, e in cases(w))}
    return sorted(outcomes + answers["tensorflow"], key=lambda o: order[(o.writer, o.case)]), answers.get("jax", [])


def _env(**values):
    import os

    return dict(os.environ, TF_CPP_MIN_LOG_LEVEL="3", **values)


def tf_keras_outcomes(only=None, keys=None):
    """``{(writer, case): status}`` as tf_keras 2.x loads each case of the writers ``only`` (default: all)
    (or only the case ``keys``, ``"writer/case"``) (``tf_keras.models.load_model``, uncompiled) and predicts: ``loads``, ``DIFFERS`` or ``fails``. Cases with a
    Lambda layer are not tried: tf_keras would unmarshal their stored bytecode (``not tried``). Run in its own
    process: ``python tests/support/layer_sweep.py --tf-keras`` prints the JSON."""
    import tf_keras

    found = {}
    for writer in only or writers():
        for case, entry in cases(writer):
            path = SWEEP / writer / entry["file"]
            key = f"{writer}/{case}"
            if keys is not None and key not in keys:
                continue
            if _has_lambda(path):
                found[key] = "not tried"
                continue
            try:
                with warnings.catch_warnings():
                    warnings.simplefilter("ignore")
                    model = tf_keras.models.load_model(path, compile=False)
                    xs, ys = _batch(writer, case)
                    got = model(xs if len(xs) > 1 else xs[0], training=False)
                got = [np.asarray(g) for g in (got if isinstance(got, (list, tuple)) else [got])]
                same = [g.shape for g in got] == [y.shape for y in ys] and all(
                    float(np.max(np.abs(g.astype("float64") - y))) <= BOUND for g, y in zip(got, ys) if y.size)
                found[key] = "loads" if same else "DIFFERS"
            except Exception:  # noqa: BLE001 - whatever tf_keras raises, it did not load
                found[key] = "fails"
            tf_keras.backend.clear_session()
    return found


#: tf_keras' outcomes as recorded (``python tests/support/layer_sweep.py --record-tf-keras``): what does not change
#: between runs is not recomputed. A writer's record is used only where it was made by the same tf_keras and
#: TensorFlow on the same files, by the same code; tests/load/test_layer_sweep.py asks tf_keras itself otherwise,
#: and checks a sample of the record against tf_keras on every run.
TF_KERAS_RECORD = Path(__file__).with_name("layer_sweep_tf_keras.json")


def _tf_keras_key(writer):
    """What a writer's tf_keras outcomes depend on: the versions, the bound, the code that asks, the case files."""
    import hashlib
    import importlib.metadata
    import inspect

    digest = hashlib.sha256()
    for function in (tf_keras_outcomes, _batch, _arrays, _has_lambda):
        digest.update(inspect.getsource(function).encode())
    digest.update(repr(BOUND).encode())
    for case, entry in cases(writer):
        digest.update(case.encode())
        digest.update(hashlib.sha256((SWEEP / writer / entry["file"]).read_bytes()).digest())
    digest.update(hashlib.sha256((SWEEP / writer / "data.npz").read_bytes()).digest())
    versions = {name: importlib.metadata.version(name) for name in ("tf_keras", "tensorflow")}
    return {**versions, "inputs_sha256": digest.hexdigest()}


def recorded_tf_keras(writer):
    """The recorded ``{case key: status}`` of ``writer`` if it still holds (same versions, code and files), else
    ``None``."""
    if not TF_KERAS_RECORD.is_file():
        return None
    entry = json.loads(TF_KERAS_RECORD.read_text()).get(writer)
    if entry is None or entry["key"] != _tf_keras_key(writer):
        return None
    return entry["outcomes"]


def record_tf_keras():
    """Ask tf_keras about every writer's cases and write :data:`TF_KERAS_RECORD`."""
    record = {writer: {"key": _tf_keras_key(writer), "outcomes": tf_keras_outcomes([writer])} for writer in writers()}
    TF_KERAS_RECORD.write_text(json.dumps(record, indent=1, sort_keys=True) + "\n")


def _has_lambda(path):
    """Whether the file stores code (a Lambda layer, a Keras 1 Merge with a function mode), read as text only."""
    import h5py

    with h5py.File(path, "r") as handle:
        config = handle.attrs.get("model_config", b"")
    config = config.decode("utf8") if isinstance(config, bytes) else str(config)
    return '"Lambda"' in config or '"mode_type": "lambda"' in config or "Merge" in path.name


def _first_sentence(text):
    return text.split(". ")[0].rstrip(".")


def cell(writer, cls, outcomes):
    """The table's cell for one class and writer."""
    info = manifest(writer)["classes"].get(cls)
    if info is None:
        return ""
    if info["status"] != "saved":
        return f"n/a ({info['status'].split(':')[0]})"
    mine = [o for o in outcomes if o.writer == writer and o.cls == cls]
    bad = [o for o in mine if o.status in ("DIFFERS", "ERROR")]
    if bad:
        return f"**{bad[0].status}** ({bad[0].case}: {bad[0].detail})"
    refused = [o for o in mine if o.status == "refused"]
    rules = sorted({rule for o in mine for rule in o.rules})
    loaded = "loads" + (f" ({', '.join(f'`{r}`' for r in rules)})" if rules else "")
    if any(o.backend == "tensorflow (oneDNN off)" and o.status in ("loads", "converted") for o in mine):
        loaded += " [channels_first: run and trained on TensorFlow with oneDNN off]"
    if not refused:
        return loaded
    reason = _first_sentence(refused[0].detail.split(": ", 1)[1])
    if len(refused) == len(mine):
        return f"refused: {reason}"
    return f"{loaded}; refused in {len(refused)} of {len(mine)} cases ({', '.join(o.case for o in refused)}): {reason}"


def table(outcomes):
    present = writers()
    classes = sorted({cls for w in present for cls in manifest(w)["classes"]})
    lines = ["| class | " + " | ".join(WRITER_NAMES[w] for w in present) + " |",
             "|---|" + "---|" * len(present)]
    for cls in classes:
        cells = [cell(w, cls, outcomes).replace("|", "\\|") for w in present]
        lines.append(f"| `{cls}` | " + " | ".join(cells) + " |")
    return "\n".join(lines)


def writer_line(writer, outcomes):
    """The page's line of one writer's cases, counted by status (the tests check each writer's apart)."""
    return f"- {WRITER_NAMES[writer]}: {summary([o for o in outcomes if o.writer == writer])}"


def render(outcomes):
    return "\n".join([
        "# Every layer of the era: what `mgpu_io.load_model` does with each",
        "",
        "Generated by `python tests/support/layer_sweep.py` from the layer sweep in `fixtures/layers/` (one small model per "
        "public layer class of each writer, and per option that changes the stored config or the weight layout, "
        "saved whole by the real writer with its own predictions: `fixtures/generate/layers/`). "
        "`tests/load/test_layer_sweep.py` fails when this page is stale.",
        "",
        f"Each case is loaded with `mgpu_io.load_model(path, compile=False)` in Keras 3 and its predictions compared "
        f"with the writer's (bound {BOUND:g}). **loads**: as written, or after the named conversion rules "
        f"(docs/cli.md lists them); **refused**: a typed error naming the reason and the fix; **n/a**: the class "
        f"cannot be saved by that writer, is abstract, or is out of scope (the manifest says why); empty: the class "
        f"is not in that version. No cell may load with different predictions.",
        "",
        f"Cases: {summary(outcomes)}, by writer:",
        "",
        *[writer_line(writer, outcomes) for writer in writers()],
        "",
        table(outcomes),
        "",
    ])


if __name__ == "__main__":
    import os
    import sys

    os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "3")
    if "--record-tf-keras" in sys.argv or "--tf-keras" in sys.argv:  # tf_keras' outcomes, not the CPU's (oneDNN)
        os.environ.update(NO_ONEDNN)
    if "--record-tf-keras" in sys.argv:
        record_tf_keras()
        print(f"wrote {TF_KERAS_RECORD}")
        sys.exit(0)
    if "--tf-keras" in sys.argv:
        print(json.dumps(tf_keras_outcomes()))
        sys.exit(0)
    if "--evaluate" in sys.argv:  # these writer/case keys, in this process's Keras backend
        from dataclasses import asdict

        print(json.dumps([asdict(o) for o in evaluate_keys(sys.argv[sys.argv.index("--evaluate") + 1:])]))
        sys.exit(0)
    if "--from" in sys.argv:  # the outcomes that tests/load/test_layer_sweep.py kept (LAYER_SWEEP_KEEP=FOLDER), by writer
        kept = Path(sys.argv[sys.argv.index("--from") + 1])
        done = [Outcome(**fields) for w in writers() for fields in json.loads((kept / f"{w}.json").read_text())]
    else:
        done, on_jax = results()
        for outcome in on_jax:
            if outcome.status not in ("loads", "converted", "refused"):
                print("on JAX:", outcome.writer, outcome.case, outcome.status, outcome.detail[:200])
    PAGE.write_text(render(done))
    for outcome in done:
        if outcome.status in ("DIFFERS", "ERROR", "refused") and "-v" in sys.argv:
            print(outcome.writer, outcome.case, outcome.status, outcome.detail[:200])
    print(f"wrote {PAGE}")
