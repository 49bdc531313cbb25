"""A TF-format checkpoint (TF 1.15 and 2.0-2.3 save_weights('ckpt'), ModelCheckpoint('ckpt-{epoch}')) of a
multi-GPU wrapper goes into a freshly built template with no config: the fresh model is the architecture, and the
template is found inside the wrapper's object graph by its weighted layers (fixtures/tf2, real writers)."""

import json

import numpy as np
import pytest

import mgpu_io
from mgpu_io.errors import WeightsMismatch

keras = pytest.importorskip("keras")
pytest.importorskip("tensorflow")

from helpers import ROOT  # noqa: E402

TF2 = ROOT / "fixtures" / "tf2"
CHECKPOINTS = sorted(e["file"] for e in json.loads((TF2 / "manifest.json").read_text()) if e["file"].endswith(
    "_ckpt.index"))


def _fresh(name):
    """The template built anew in Keras 3 (its architecture, new variables), as a user's build_template() does."""
    built = mgpu_io.load_model(TF2 / name.replace("_ckpt.index", "_full.h5"), compile=False)
    return keras.models.clone_model(built)


def _batch(name):
    data = np.load(TF2 / name.replace("_ckpt.index", ".npz"))
    xs = [data[k] for k in sorted(k for k in data.files if k.startswith("x"))]
    return (xs if len(xs) > 1 else xs[0]), [data[k] for k in sorted(k for k in data.files if k.startswith("y"))]


def _predict(model, x):
    ys = model.predict(x, verbose=0)
    return ys if isinstance(ys, list) else [ys]


@pytest.mark.parametrize("name", CHECKPOINTS)
def test_a_wrapper_checkpoint_goes_into_a_freshly_built_template_and_predicts_like_the_writer(name):
    fresh = _fresh(name)
    x, expected = _batch(name)
    assert max(float(np.max(np.abs(y - e))) for y, e in zip(_predict(fresh, x), expected)) > 1e-3  # fresh weights
    report = mgpu_io.transfer_weights(TF2 / name, fresh)
    assert report.ok and report.loaded == len([layer for layer in fresh.layers if layer.weights])
    assert max(float(np.max(np.abs(y - e))) for y, e in zip(_predict(fresh, x), expected)) <= 1e-5


def test_transfer_writes_the_fresh_template_from_a_checkpoint(tmp_path):
    name = "tf23_nested_depth2_ckpt.index"
    result = mgpu_io.transfer(TF2 / name, tmp_path / "base.keras", lambda: _fresh(name))
    x, expected = _batch(name)
    saved = keras.models.load_model(tmp_path / "base.keras")
    assert result.written and max(float(np.max(np.abs(y - e))) for y, e in zip(_predict(saved, x), expected)) <= 1e-5


def test_a_model_the_checkpoint_does_not_hold_is_refused_with_the_closest_model_named():
    inp = keras.Input((6,))
    other = keras.Model(inp, keras.layers.Dense(3)(keras.layers.Dense(5)(inp)))
    with pytest.raises(WeightsMismatch, match=r"^The TF checkpoint holds no model with the weights of the freshly "
                                              r"built model\. .* Received: the closest, root/layer-"):
        mgpu_io.transfer_weights(TF2 / "tf21_functional_bn_x2_ckpt.index", other)


# --- Sequential templates (fixtures/tf2ckpt): the wrapper's JSON, the template's JSON, or a fresh template -------

SEQUENTIAL = ROOT / "fixtures" / "tf2ckpt"
SEQUENTIAL_CASES = json.loads((SEQUENTIAL / "manifest.json").read_text())


def _sequential_template():
    return keras.Sequential([keras.Input((6,)), keras.layers.Dense(8, activation="relu"),
                             keras.layers.BatchNormalization(), keras.layers.Dense(3)])


@pytest.mark.parametrize("entry", SEQUENTIAL_CASES, ids=lambda e: e["file"])
@pytest.mark.parametrize("how", ["wrapper's JSON", "template's JSON", "freshly built template"])
def test_a_sequential_template_wrappers_checkpoint_loads_every_way_a_user_has(entry, how):
    data = np.load(SEQUENTIAL / entry["data"])
    checkpoint = SEQUENTIAL / entry["file"]
    if how == "freshly built template":
        model = _sequential_template()
        assert mgpu_io.transfer_weights(checkpoint, model).ok
    else:
        config = entry["config"] if how == "wrapper's JSON" else entry["template_config"]
        model = mgpu_io.load_model(SEQUENTIAL / config, weights=checkpoint, compile=False)
    assert float(np.max(np.abs(model.predict(data["x0"], verbose=0) - data["y0"]))) <= 1e-5


def test_inspect_without_config_says_what_the_checkpoint_holds_and_what_config_would_add():
    report = mgpu_io.inspect(SEQUENTIAL / "tf20_sequential_x2_ckpt.index")
    assert (report.file_type, report.is_wrapper, report.depth, report.weights, report.has_optimizer_weights) == (
        "weights", True, 1, 8, True)
    held, needed = report.findings
    assert held.kind == "tensorflow-format" and (
        "models root: 5 layers, 1 with weights; root/layer-3: 4 layers, 3 with weights; the weights of root/layer-3: "
        "d1/kernel (6, 8), d1/bias (8,), bn/gamma (8,)") in held.message
    assert "optimizer: 17 variables (12 slots)" in held.message
    assert needed.kind == "config-needed" and needed.message.startswith("pass config= the JSON saved beside")
