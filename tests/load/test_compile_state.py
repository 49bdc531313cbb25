"""A user loads a compiled model from 2017-2024 to evaluate it on their data, fine-tune it or resume training.

Every file in fixtures/compile was written by its real writer (Keras 1.2.2, Keras 2.2.4 and tf.keras on TF 1.15,
tf.keras on TF 2.3, tf_keras 2.x), compiled with losses and metrics by name, by function and as objects, one output
or two, loss weights and weighted metrics (fixtures/generate/compile). The writer's own ``evaluate`` on the stored
data and the weights after its next ``train_on_batch`` are stored beside each file: the loaded model must give the
same numbers.
"""

import json
import re
import warnings

import numpy as np
import pytest
from helpers import ROOT

import mgpu_io
from mgpu_io import MgpuIOWarning

keras = pytest.importorskip("keras")

COMPILE = ROOT / "fixtures" / "compile"
ENTRIES = json.loads((COMPILE / "manifest.json").read_text())
WRITERS = sorted({entry["writer"] for entry in ENTRIES})
# Metric names as the writers spelled them, and as the user wrote them (which Keras 3 keeps).
_SPELLINGS = {"acc": "accuracy", "mae": "mean_absolute_error", "mse": "mean_squared_error"}


def _data(entry):
    data = np.load(COMPILE / entry["data"])
    ys = [data[f"y{i}"] for i in range(entry["outputs"])]
    sws = [data[f"sw{i}"] for i in range(entry["outputs"])] if entry["weighted"] else None
    one = entry["outputs"] == 1
    return data, data["x0"], ys[0] if one else ys, (sws[0] if one else sws) if sws else None


def _load(entry):
    with warnings.catch_warnings():
        warnings.simplefilter("error", MgpuIOWarning)  # everything the writer stored is rebuilt: no warning
        return mgpu_io.load_model(COMPILE / entry["file"])


def _canonical(name):
    """``out_b_weighted_mean_absolute_error`` (Keras 2) and ``out_b_mae`` (Keras 3) are the same metric."""
    name = name.replace("weighted_", "")
    return re.sub(r"(^|_)(acc|mae|mse)$", lambda m: m.group(1) + _SPELLINGS[m.group(2)], name)


@pytest.mark.parametrize("entry", ENTRIES, ids=[e["file"] for e in ENTRIES])
def test_evaluate_gives_the_writers_own_loss_and_metrics(entry):
    model = _load(entry)
    data, x, y, sw = _data(entry)
    ours = model.evaluate(x, y, sample_weight=sw, batch_size=len(x), verbose=0, return_dict=True)
    ours = {_canonical(name): float(value) for name, value in ours.items()}
    names = [str(n) for n in data["eval_names"]]
    if "weighted_metrics" not in entry["training_config"]:  # Keras 1.2.2 and 2.2.4 evaluate them, but never store them
        names = [n for n in names if "weighted_" not in n]
    theirs = {_canonical(n): float(v) for n, v in zip(data["eval_names"], data["eval_values"]) if str(n) in names}
    assert sorted(ours) == sorted(theirs)
    for name, value in theirs.items():
        assert ours[name] == pytest.approx(value, rel=1e-5, abs=1e-7), name


@pytest.mark.parametrize("entry", ENTRIES, ids=[e["file"] for e in ENTRIES])
def test_the_next_training_step_resumes_the_writers_optimizer_state(entry):
    model = _load(entry)
    data, x, y, sw = _data(entry)
    before = [w.copy() for w in model.get_weights()]
    model.train_on_batch(x, y, sample_weight=sw)
    after = model.get_weights()
    expected = [data[k] for k in sorted(k for k in data.files if k.startswith("next_"))]
    assert len(after) == len(expected)
    for mine, theirs, start in zip(after, expected, before):
        assert not np.array_equal(mine, start)  # the step moved every weight
        np.testing.assert_allclose(mine, theirs, rtol=1e-5, atol=2e-6)


@pytest.mark.parametrize("writer", WRITERS)
def test_fit_trains_a_loaded_model_of_each_writer(writer):
    entry = next(e for e in ENTRIES if e["writer"] == writer and e["outputs"] == 2)
    model = _load(entry)
    _, x, y, sw = _data(entry)
    before = [w.copy() for w in model.get_weights()]
    history = model.fit(x, y, sample_weight=sw, batch_size=8, epochs=1, verbose=0)
    assert np.isfinite(history.history["loss"]).all()
    assert all(not np.array_equal(a, b) for a, b in zip(model.get_weights(), before))


def _with_training(tmp_path, source, change):
    import shutil

    import h5py

    path = tmp_path / source
    shutil.copyfile(COMPILE / source, path)
    with h5py.File(path, "r+") as h5:
        training = json.loads(h5.attrs["training_config"])
        change(training)
        h5.attrs["training_config"] = json.dumps(training)
    return path


def test_metrics_keras3_cannot_rebuild_are_dropped_with_one_warning_and_evaluate_runs(tmp_path):
    def add_unknown(training):
        training["metrics"][0] += [{"class_name": "F1Macro", "config": {"name": "f1_macro"}}, "my_custom_metric"]

    path = _with_training(tmp_path, "tfk2_objects.h5", add_unknown)
    with pytest.warns(MgpuIOWarning) as caught:
        model = mgpu_io.load_model(path)
    messages = [str(w.message) for w in caught if issubclass(w.category, MgpuIOWarning)]
    assert len(messages) == 1
    assert messages[0].startswith("The saved metrics f1_macro (Could not locate class 'F1Macro'")
    assert "my_custom_metric (Could not interpret metric identifier: my_custom_metric)" in messages[0]
    entry = next(e for e in ENTRIES if e["file"] == "tfk2_objects.h5")
    data, x, y, sw = _data(entry)
    ours = model.evaluate(x, y, batch_size=len(x), verbose=0, return_dict=True)
    assert set(ours) == {"loss", "cat_acc", "categorical_accuracy", "mae", "auc", "precision"}
    assert ours["loss"] == pytest.approx(float(data["eval_values"][0]), rel=1e-5)


def test_the_callers_own_metric_and_loss_functions_are_used_by_their_stored_names(tmp_path):
    def custom(training):
        training["loss"] = "my_loss"
        training["metrics"] = ["my_metric"]

    path = _with_training(tmp_path, "k224_names.h5", custom)
    calls = []

    def my_loss(y_true, y_pred):
        calls.append("loss")
        return keras.losses.categorical_crossentropy(y_true, y_pred)

    def my_metric(y_true, y_pred):
        calls.append("metric")
        return keras.metrics.categorical_accuracy(y_true, y_pred)

    model = _load_with(path, {"my_loss": my_loss, "my_metric": my_metric})
    entry = next(e for e in ENTRIES if e["file"] == "k224_names.h5")
    data, x, y, _ = _data(entry)
    ours = model.evaluate(x, y, batch_size=len(x), verbose=0, return_dict=True)
    theirs = dict(zip(map(str, data["eval_names"]), data["eval_values"]))
    assert ours["loss"] == pytest.approx(theirs["loss"], rel=1e-5)
    assert ours["my_metric"] == pytest.approx(theirs["categorical_accuracy"], rel=1e-5)
    assert {"loss", "metric"} <= set(calls)


def _load_with(path, custom_objects):
    with warnings.catch_warnings():
        warnings.simplefilter("error", MgpuIOWarning)
        return mgpu_io.load_model(path, custom_objects=custom_objects)


@pytest.mark.parametrize("keras_version,expected", [("2.2.4-tf", 0.46875), ("2.4.0", 0.3125)])
def test_acc_on_a_two_unit_sigmoid_output_is_what_its_writer_computed(keras_version, expected):
    """Keras 1/2 and tf.keras <= 2.1 took `acc` with binary cross-entropy as binary accuracy; tf.keras 2.2+ by the
    output's shape (categorical for two units). The stored files say which: their own evaluate gave these."""
    entry = next(e for e in ENTRIES if e["file"] == ("tfk115" if keras_version == "2.2.4-tf" else "tfk23")
                 + "_two_outputs.h5")
    data, x, y, sw = _data(entry)
    theirs = dict(zip(map(str, data["eval_names"]), data["eval_values"]))["out_b_acc"]
    ours = _load(entry).evaluate(x, y, sample_weight=sw, batch_size=len(x), verbose=0, return_dict=True)["out_b_acc"]
    assert ours == pytest.approx(theirs) and theirs == pytest.approx(expected, abs=0.07)


def test_a_tf_keras_2_3_0_file_whose_acc_two_writers_computed_differently_drops_it_with_the_reason(tmp_path):
    import h5py

    path = _with_training(tmp_path, "tfk115_two_outputs.h5", lambda training: None)
    with h5py.File(path, "r+") as h5:
        h5.attrs["keras_version"] = "2.3.0-tf"  # TF 2.1 and TF 2.2 both wrote this version
    with pytest.warns(MgpuIOWarning, match=r"The saved metrics acc \(binary or categorical accuracy: TF 2.1 and "
                                           r"TF 2.2 both wrote this file's keras_version 2.3.0-tf"):
        model = mgpu_io.load_model(path)
    entry = next(e for e in ENTRIES if e["file"] == "tfk115_two_outputs.h5")
    _, x, y, sw = _data(entry)
    ours = model.evaluate(x, y, sample_weight=sw, batch_size=len(x), verbose=0, return_dict=True)
    assert "out_b_acc" not in ours and "out_a_accuracy" in ours
