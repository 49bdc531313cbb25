"""A user fine-tunes a Keras 2.2.4 (or tf.keras 1.15) LSTM or GRU that was compiled with input dropout: after
mgpu_io.load_model it predicts and evaluates as the writer did, and its training step runs, with dropout.

Both writers default to `implementation=1`; Keras 3.x's LSTM and GRU build one input-dropout mask per gate for it
and then broadcast them as one mask, so every training step failed ("Exception encountered when calling
LSTM.call(). Shape must be at most rank 3 but is rank 4") while predict and evaluate ran. The files are written by
the real writers (fixtures/generate/rnn_dropout)."""

import json
import warnings

import h5py
import numpy as np
import pytest
from helpers import ROOT, TOLERANCE

import mgpu_io
from mgpu_io import MgpuIOWarning
from plans import planned

keras = pytest.importorskip("keras")
FOLDER = ROOT / "fixtures" / "rnn_dropout"
ENTRIES = json.loads((FOLDER / "manifest.json").read_text())
IDS = [entry["file"] for entry in ENTRIES]


def _load(entry):
    with warnings.catch_warnings():
        warnings.simplefilter("error", MgpuIOWarning)  # loss, metric and optimizer state: all rebuilt
        return mgpu_io.load_model(FOLDER / entry["file"])


@pytest.mark.parametrize("entry", ENTRIES, ids=IDS)
def test_the_writer_stored_implementation_1_with_input_dropout_only(entry):
    with h5py.File(FOLDER / entry["file"], "r") as f:
        config = json.loads(f.attrs["model_config"])
    rnn = next(layer["config"] for layer in config["config"]["layers"] if layer["config"]["name"] == "rnn")
    assert (rnn["implementation"], rnn["dropout"], rnn["recurrent_dropout"]) == (1, 0.3, 0.0)
    with planned(FOLDER / entry["file"], allow_plain=True) as plan:
        assert "rnn-dropout-implementation" in plan.report.config_changes


@pytest.mark.parametrize("entry", ENTRIES, ids=IDS)
def test_predict_and_evaluate_give_the_writers_numbers(entry):
    model = _load(entry)
    data = np.load(FOLDER / entry["data"])
    diff = np.abs(model.predict(data["x0"], verbose=0) - data["p0"]).max()
    assert diff <= TOLERANCE, diff
    ours = model.evaluate(data["x0"], data["y0"], batch_size=len(data["x0"]), verbose=0, return_dict=True)
    theirs = dict(zip([str(n) for n in data["eval_names"]], data["eval_values"]))
    assert sorted(ours) == sorted(theirs)
    for name, value in theirs.items():
        assert ours[name] == pytest.approx(value, rel=1e-5), name


@pytest.mark.parametrize("entry", ENTRIES, ids=IDS)
def test_a_training_step_runs_moves_every_weight_and_still_drops_inputs(entry):
    model = _load(entry)
    data = np.load(FOLDER / entry["data"])
    x = data["x0"]
    rnn = model.get_layer("rnn")
    assert rnn.dropout == pytest.approx(0.3)  # the writer's dropout is kept, not removed to make training run
    trained = [np.asarray(model([x], training=True)) for _ in range(2)]
    assert not np.allclose(trained[0], trained[1])  # a fresh dropout mask per call
    before = [w.copy() for w in model.get_weights()]
    loss = model.train_on_batch(x, data["y0"])
    loss = loss[0] if isinstance(loss, list) else loss
    assert np.isfinite(loss)
    assert all(not np.array_equal(a, b) for a, b in zip(model.get_weights(), before, strict=True))
