"""Shared test helpers: the project's fixtures (fixtures/files, written by the real old writers), the independent
reference set in ../shared/reference when it is present, and the comparisons every parity test makes.

Tests import what they need from here (``from helpers import FIXTURES``); conftest.py only sets up pytest."""

import contextlib
import hashlib
import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
from jax_env import JAX_PYTHON, jax_environment  # noqa: F401 - the tests import them from here

ROOT = Path(__file__).resolve().parents[2]


def newcomer_environment():
    """This process's environment without the quiet the root conftest.py sets for the suite (TensorFlow's C++ log
    level, absl's, no CUDA devices): a user's shell, for the tests of what a user's terminal shows."""
    return {k: v for k, v in os.environ.items() if not k.startswith(("TF_CPP", "ABSL", "CUDA_VISIBLE"))}

# JAX's float32 kernels round differently from TF 1.15's: 1.4e-5 measured on k231_mobilenet_x2_full.h5 (outputs
# up to 0.73), 6.3e-6 or less on every other fixture; TensorFlow's backend stays within 1e-5 (test_load_model.py).
JAX_TOLERANCE = 2e-5
FIXTURES = ROOT / "fixtures" / "files"
REFERENCE = ROOT.parent / "shared" / "reference"
MANIFEST = json.loads((FIXTURES / "manifest.json").read_text())
# Templates with Lambda layers, custom objects and keras.applications models (fixtures/applications/README.md).
APPLICATIONS = ROOT / "fixtures" / "applications"
APP_MANIFEST = [dict(entry, folder="applications") for entry in
                json.loads((APPLICATIONS / "manifest.json").read_text())]
# TF 2.0-2.3's tf.keras, Keras 2.3.1 on TF 2, Keras 2.0.9: HDF5, JSON, YAML, SavedModel, TF checkpoints
# (fixtures/tf2/README.md, docs/tf2-writers.md).
TF2 = ROOT / "fixtures" / "tf2"
TF2_MANIFEST = [dict(entry, folder="tf2") for entry in json.loads((TF2 / "manifest.json").read_text())]
# The era's habits (legacy Merge in Keras 2.0-2.1, numpy payloads, shapes on wrapped layers, double-encoded JSON,
# UnifiedLSTM), written by Keras 1.2.2, 2.0.5, 2.0.8, 2.1.2, 2.2.4 and TF 1.13's tf.keras (fixtures/habits/README.md).
HABITS = ROOT / "fixtures" / "habits"
HABITS_MANIFEST = [dict(entry, folder="habits") for entry in json.loads((HABITS / "manifest.json").read_text())]

# Predictions must match the old Keras within this bound. The depth-3 nested save is trained three times over
# BatchNormalization, and TF 1.15 vs TF 2.21 arithmetic differs there by up to 3.8e-6 (measured); still < 1e-5.
TOLERANCE = 1e-5


def fixtures(*file_types, where=None, manifest=None):
    """pytest params over the manifest entries of the given file types (fixtures/files unless ``manifest``)."""
    entries = [e for e in (MANIFEST if manifest is None else manifest) if not file_types or e["file_type"] in file_types]
    if where:
        entries = [e for e in entries if where(e)]
    return [pytest.param(e, id=e["file"]) for e in entries]


def has_user_lambda(entry):
    """The template has the user's own Lambda layer: Keras' safe mode refuses to load it, by design."""
    return "template-lambda" in (entry.get("findings") or [])


def fixture_folder(entry):
    return ROOT / "fixtures" / entry["folder"] if "folder" in entry else FIXTURES


def fixture_path(entry):
    return fixture_folder(entry) / entry["file"]


def fixture_batch(entry):
    """The input batch and the old Keras' predictions recorded for a fixture: (list of x, list of y)."""
    data = np.load(fixture_folder(entry) / entry["data"])
    def numbered(prefix):
        keys = [k for k in data.files if k.startswith(prefix) and k[1:].isdigit()]
        return [data[k] for k in sorted(keys, key=lambda k: int(k[1:]))]

    xs, ys = numbered("x"), numbered("y")
    return xs, ys


def assert_predictions_match(outputs, expected, tolerance=TOLERANCE):
    """Compare model outputs with the old Keras' predictions; NaN where the old Keras gave NaN."""
    outputs = outputs if isinstance(outputs, (list, tuple)) else [outputs]
    assert len(outputs) == len(expected)
    for got, want in zip(outputs, expected):
        got = np.asarray(got).reshape(np.shape(want))
        np.testing.assert_array_equal(np.isnan(got), np.isnan(want))
        finite = ~np.isnan(want)
        if finite.any():
            assert np.abs(got[finite] - want[finite]).max() <= tolerance


def predict(model, xs):
    """The model's predictions of the inputs ``xs`` (NumPy arrays, a list for several outputs), as ``predict`` gives
    them. On TensorFlow the model is called eagerly: tracing a ``predict`` function for each small model cost
    five times the call (measured: 29 s against 6 s for 12 fixtures, 6e-8 apart); on JAX ``predict``'s compiled
    function is the faster (44 s against 110 s)."""
    import keras

    inputs = xs if len(xs) > 1 else xs[0]
    if keras.backend.backend() != "tensorflow":
        return model.predict(inputs, verbose=0)
    outputs = model(inputs, training=False)
    if isinstance(outputs, (list, tuple)):
        return [keras.ops.convert_to_numpy(output) for output in outputs]
    if isinstance(outputs, dict):
        return {name: keras.ops.convert_to_numpy(output) for name, output in outputs.items()}
    return keras.ops.convert_to_numpy(outputs)


# --- the independent reference set (../shared/reference, see its MANIFEST.md) ----------------------------------

needs_reference = pytest.mark.skipif(not REFERENCE.is_dir(), reason="../shared/reference is not present")

# What MANIFEST.md says each file is. Batches and predictions: one .npy per input; predictions flattened per output
# in C order and concatenated in output order.
REFERENCE_FILES = {
    "k224_functional_2out_full.h5": dict(file_type="model", depth=1, replicas=2, template="template",
                                         outputs=["out_a", "out_b"], has_optimizer_weights=True,
                                         data="k224_functional_2out", ref="k224_functional_2out_ref_pred.npy"),
    "k224_functional_2out_weights.h5": dict(file_type="weights", depth=1, replicas=2, template="template",
                                            data="k224_functional_2out", ref="k224_functional_2out_ref_pred.npy"),
    "k224_sequential_cpu_reloc_full.h5": dict(file_type="model", depth=1, replicas=2, template="sequential_1",
                                              outputs=["dense_2"], data="k224_sequential_cpu_reloc_full"),
    "k224_siamese_full.h5": dict(file_type="model", depth=1, replicas=2, template="siamese",
                                 outputs=["add", "nested", "nested"], data="k224_siamese_full"),
    "tfk115_functional_full.h5": dict(file_type="model", depth=1, replicas=2, template="template",
                                      variant="tf.keras", data="tfk115_functional_full"),
    "tfk115_functional_weights.h5": dict(file_type="weights", depth=1, replicas=2, template="template",
                                         data="tfk115_functional_weights"),
    "k216_weights.h5": dict(file_type="weights", depth=1, replicas=2, template="template", data="k216_weights"),
    "k216_kuza_full.h5": dict(file_type="model", depth=1, replicas=2, template="template", variant="kuza55",
                              outputs=["out"], data="k216_kuza_full"),
    "k216_kuza_weights.h5": dict(file_type="weights", depth=1, replicas=2, template="template",
                                 data="k216_kuza_weights"),
    "k122_kuza_full.h5": dict(file_type="model", depth=1, replicas=2, template="template", variant="kuza55",
                              outputs=["out"], data="k122_kuza_full"),
    "k122_kuza_weights.h5": dict(file_type="weights", depth=1, replicas=2, template="template",
                                 data="k122_kuza_weights"),
}


def reference_params(*file_types):
    return [pytest.param(name, facts, id=name) for name, facts in REFERENCE_FILES.items()
            if not file_types or facts["file_type"] in file_types]


def reference_batch(facts):
    """(list of x, flat reference predictions) of a reference file."""
    stem = facts["data"]
    xs = sorted(REFERENCE.glob(f"{stem}_x*.npy"))
    ref = facts.get("ref") or f"{stem}_ref.npy"
    return [np.load(p) for p in xs], np.load(REFERENCE / ref)


def assert_flat_predictions_match(outputs, reference, tolerance=TOLERANCE):
    outputs = outputs if isinstance(outputs, (list, tuple)) else [outputs]
    flat = np.concatenate([np.asarray(o).reshape(-1) for o in outputs])
    assert flat.shape == reference.shape
    assert np.abs(flat - reference).max() <= tolerance


def digest(path):
    """A file's SHA-256: an input is never modified, an output is the same bytes as another run's."""
    return hashlib.sha256(Path(path).read_bytes()).hexdigest()


def digests(folder):
    """``{relative path: SHA-256}`` of every file under ``folder``, hidden ones too (a leftover temporary file
    shows)."""
    return {p.relative_to(folder): digest(p) for p in Path(folder).rglob("*") if p.is_file()}


def epoch_checkpoints(folder, count):
    """A folder of ``count`` wrapper checkpoints in three sub-folders, full models and weights-only files by turns
    (copies of fixtures written by Keras 2.2.4)."""
    for index in range(count):
        name = ("k224_functional_bn_x2_full.h5", "k224_functional_bn_x2_weights.h5")[index % 2]
        target = Path(folder) / f"part{index % 3}" / f"{index:03d}-{name}"
        target.parent.mkdir(parents=True, exist_ok=True)
        shutil.copyfile(FIXTURES / name, target)


def run_python(code):
    """``python -c code`` in this environment, from the repository root: its stdout (it must succeed)."""
    result = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, cwd=ROOT)
    assert result.returncode == 0, result.stderr
    return result.stdout.strip()


def fork_here(monkeypatch):
    """The sandbox's children forked from this process (a small one's way), so that they see what the test changed
    here (a module's setting, a function replaced): a fork server's child would not (format/sandbox/fork_server.py)."""
    from mgpu_io.format.sandbox import fork_server

    monkeypatch.setattr(fork_server, "SERVER_FROM", 1 << 62)


@contextlib.contextmanager
def workers_from_an_early_server(monkeypatch):
    """A fork server forked from this process now, as the command line's ``unwrap FOLDER`` forks its own as it starts
    (``mgpu_io.cli._start_early``): a folder's workers are forked by it, and carry what the test changed here
    before. Yields the server's workers as they are asked for (each a ``_ServedWorker``, or ``None`` where one was
    forked here); the server is ended after."""
    from mgpu_io.format.sandbox import fork_server

    monkeypatch.setattr(fork_server._ForkServer, "_current", None)
    fork_server.start_early(("mgpu_io.format.batch", "mgpu_io.format.unwrap"))
    server = fork_server._ForkServer._current[1]
    assert server and server.serving(fork_server.SERVER_WAIT)
    asked, fork_worker = [], fork_server._ForkServer.fork_worker.__func__
    monkeypatch.setattr(fork_server._ForkServer, "fork_worker",
                        classmethod(lambda cls, *args: asked.append(fork_worker(cls, *args)) or asked[-1]))
    try:
        yield asked
    finally:
        server.end()


def _runner():
    from typer.testing import CliRunner

    return CliRunner()


#: The one CLI runner the tests share (typer's ``CliRunner``: ``runner.invoke(app, [...])``), instead of one per file.
runner = _runner()
