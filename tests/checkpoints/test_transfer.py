"""A user has the code that builds the base model and a checkpoint of the wrapper: `transfer_weights`."""

import re

import numpy as np
import pytest
from helpers import FIXTURES, assert_predictions_match, fixture_batch, fixture_path, fixtures, predict

import mgpu_io
from mgpu_io import WeightsMismatch

keras = pytest.importorskip("keras")
from templates import BUILDERS, functional_bn  # noqa: E402


@pytest.mark.parametrize("entry", fixtures("weights"))
def test_weights_only_checkpoints_load_into_the_model_built_in_code(entry):
    model = BUILDERS[entry["file"]](keras)
    report = mgpu_io.transfer_weights(fixture_path(entry), model)
    assert report.ok and report.loaded == len([l for l in model.layers if l.weights])
    xs, ys = fixture_batch(entry)
    assert_predictions_match(predict(model, xs), ys)


@pytest.mark.parametrize("entry", fixtures("model", where=lambda e: e["file"].replace("_full", "_weights")
                                           in BUILDERS))
def test_full_wrapper_files_transfer_too(entry):
    model = BUILDERS[entry["file"].replace("_full", "_weights")](keras)
    assert mgpu_io.transfer_weights(fixture_path(entry), model).ok
    xs, ys = fixture_batch(entry)
    assert_predictions_match(predict(model, xs), ys)


def test_conversions_are_reported():
    model = BUILDERS["k224_cudnn_x2_weights.h5"](keras)
    report = mgpu_io.transfer_weights(FIXTURES / "k224_cudnn_x2_weights.h5", model)
    assert {c["layer"]: c["conversions"] for c in report.converted} == {
        "bilstm": ["cudnn-weights"], "gru": ["cudnn-weights"]}


def test_an_in_memory_wrapper_transfers_to_a_fresh_template():
    template = functional_bn(keras)
    mgpu_io.transfer_weights(FIXTURES / "k224_functional_bn_x2_weights.h5", template)
    inp = keras.Input((6,), name="inp")
    halves = [keras.layers.Lambda(lambda x, i=i: x[i * 8:(i + 1) * 8])(inp) for i in range(2)]
    towers = [template(h) for h in halves]
    wrapper = keras.Model(inp, [keras.layers.Concatenate(axis=0, name=name)([t[k] for t in towers])
                                for k, name in enumerate(["out_a", "out_b"])])
    fresh = functional_bn(keras)
    report = mgpu_io.transfer_weights(wrapper, fresh)
    assert report.ok and report.source == f"in-memory model {wrapper.name!r}"
    for a, b in zip(template.weights, fresh.weights):
        np.testing.assert_array_equal(np.asarray(a), np.asarray(b))


def test_a_wrong_base_model_is_refused_naming_the_first_mismatching_layer():
    wrong = functional_bn(keras, inputs=5)  # the user's code builds the first Dense for 5 features, not 6
    before = [np.asarray(v).copy() for v in wrong.weights]
    with pytest.raises(WeightsMismatch) as error:
        mgpu_io.transfer_weights(FIXTURES / "k224_functional_bn_x2_weights.h5", wrong)
    assert str(error.value).startswith(
        "The weights do not fit the model: layer #0 (named d1 in the model, d1 in the source) expects 2 weight(s) "
        "of shapes (5, 8) (8,); received 2 of shapes (6, 8) (8,). Expected the template that was wrapped, built by "
        "the same code.")
    assert all(np.array_equal(a, np.asarray(b)) for a, b in zip(before, wrong.weights))  # nothing was loaded


def test_non_strict_loads_what_matches_and_reports_the_rest():
    wrong = functional_bn(keras, inputs=5)
    report = mgpu_io.transfer_weights(FIXTURES / "k224_functional_bn_x2_weights.h5", wrong, strict=False)
    assert not report.ok and report.loaded == 3
    assert [m["target"] for m in report.mismatched] == ["d1"]
    assert report.to_dict()["ok"] is False


def test_missing_and_unexpected_layers_are_listed():
    inp = keras.Input((6,), name="inp")
    short = keras.Model(inp, keras.layers.Dense(8, name="d1")(inp))
    with pytest.raises(WeightsMismatch, match=re.escape("the source has weights for more layers than the model: "
                                                        "#1 bn, #2 out_a, #3 out_b")):
        mgpu_io.transfer_weights(FIXTURES / "k224_functional_bn_x2_weights.h5", short)


def test_the_report_prints_as_a_table():
    model = functional_bn(keras)
    report = mgpu_io.transfer_weights(FIXTURES / "k224_functional_bn_x2_weights.h5", model)
    lines = str(report).splitlines()
    assert lines[0].endswith("k224_functional_bn_x2_weights.h5 -> template: 4 layers loaded")
    assert lines[1].split() == ["#", "model", "layer", "source", "layer", "shapes", "status"]
    assert lines[2].split() == ["0", "d1", "d1", "(6,", "8)", "(8,)", "matched"]
    assert "TransferReport(" not in str(report)
