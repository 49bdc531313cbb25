"""TensorFlow ops called on Keras tensors: tf.keras' TensorFlowOpLayer (TF 1.15, 2.0-2.3) and TFOpLambda (tf_keras)
load in Keras 3 as mgpu-io's TFOp layer and predict what the writer predicted (fixtures/tfops, written by the real
writers: fixtures/generate/tfops/). A node_def is data: an op outside the table is refused by name.
"""

import copy
import json
from pathlib import Path

import numpy as np
import pytest

from mgpu_io.errors import UnsupportedModel
from mgpu_io.format.conversions import Context, convert_config
from mgpu_io.format.conversions.tfops import FUNCTIONS, OPS

FIXTURES = Path(__file__).parent.parent / "fixtures" / "tfops"
MANIFEST = json.loads((FIXTURES / "manifest.json").read_text()) if (FIXTURES / "manifest.json").exists() else []
BOUND = 1e-5


def _ids(entry):
    return entry["file"]


@pytest.mark.parametrize("entry", MANIFEST, ids=_ids)
def test_a_model_calling_tensorflow_ops_loads_with_the_writers_predictions(entry):
    pytest.importorskip("keras")
    import mgpu_io

    path = FIXTURES / entry["file"]
    weights = {"weights": FIXTURES / entry["weights"]} if entry["kind"] == "config" else {}
    model = mgpu_io.load_model(path, compile=False, **weights)
    data = np.load(FIXTURES / entry["data"])
    predicted = model.predict(data["x0"], verbose=0)
    predicted = predicted if isinstance(predicted, list) else [predicted]
    expected = [data[f"y{i}"] for i in range(len([k for k in data.files if k.startswith("y")]))]
    assert len(predicted) == len(expected)
    for ours, theirs in zip(predicted, expected):
        assert np.max(np.abs(np.asarray(ours) - theirs)) <= BOUND


def test_every_op_of_the_table_is_proven_on_a_real_writers_file():
    written = {op for entry in MANIFEST if entry["writer"] != "tfkeras" for op in entry["ops"]}
    assert set(OPS) - written == set(), "ops of the table that no fixture calls"
    assert written - set(OPS) == set(), "ops in the fixtures that the table lacks"
    functions = {op for entry in MANIFEST if entry["writer"] == "tfkeras" for op in entry["ops"]}
    assert functions <= set(FUNCTIONS) and len(functions) > 30


def test_the_keras_side_computes_exactly_the_ops_of_the_table():
    pytest.importorskip("keras")
    from mgpu_io.keras.tfops import COMPUTE

    assert set(COMPUTE) == set(OPS)
    assert {function.op for function in FUNCTIONS.values()} <= set(OPS)


def _config(name):
    return json.loads((FIXTURES / name).read_text())


def _op_layer(config, op):
    return next(layer for layer in config["config"]["layers"] if layer["class_name"] == "TensorFlowOpLayer"
                and layer["config"]["node_def"]["op"] == op)


def test_an_op_outside_the_table_is_refused_by_name():
    config = _config("tf23_arithmetic_config.json")
    _op_layer(config, "Tanh")["config"]["node_def"]["op"] = "Erf"
    with pytest.raises(UnsupportedModel) as error:
        convert_config(config, Context())
    assert str(error.value).startswith(
        "Layer 'tf_op_layer_Tanh' is a TensorFlowOpLayer: it runs the TensorFlow op 'Erf', which mgpu-io does not "
        "compute. Expected one of the TensorFlow ops that mgpu-io computes in Keras 3 (Abs, Add, AddN, ")
    assert "Received: op='Erf'. Rebuild the template in code" in str(error.value)


def test_a_shape_that_comes_from_another_layer_is_refused_not_guessed():
    config = _config("tfk115_arithmetic_config.json")
    reshape = _op_layer(config, "Reshape")
    reshape["config"]["constants"] = {}
    reshape["inbound_nodes"][0].append(["dense", 0, 0, {}])
    with pytest.raises(UnsupportedModel, match=r"^Layer 'tf_op_layer_Reshape' is a TensorFlowOpLayer: its op Reshape "
                                               r"takes its input 'shape' from another layer's output"):
        convert_config(config, Context())


def test_a_tensorflow_function_outside_the_table_is_refused_by_name():
    config = _config("tfkeras_op_lambdas_config.json")
    layer = next(layer for layer in config["config"]["layers"] if layer["config"].get("function") == "math.tanh")
    layer["config"]["function"] = "math.erf"
    with pytest.raises(UnsupportedModel, match=r"^Layer 'tf.math.tanh' is a TFOpLambda: it calls the TensorFlow "
                                               r"function tf.math.erf, which mgpu-io does not compute"):
        convert_config(config, Context())


def test_the_rewrite_names_its_rules_and_keeps_the_writers_config_for_tf_keras():
    config = _config("tf21_images_config.json")
    converted, changes = convert_config(config, Context())
    assert "tf-op-layer" in changes
    assert {layer["class_name"] for layer in converted["config"]["layers"]} == {"InputLayer", "Conv2D", "mgpu_io>TFOp"}
    untouched, _ = convert_config(copy.deepcopy(config), Context(target="tf_keras"))
    assert "TensorFlowOpLayer" in {layer["class_name"] for layer in untouched["config"]["layers"]}
