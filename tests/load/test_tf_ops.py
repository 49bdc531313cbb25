"""TensorFlow ops called on Keras tensors: tf.keras' TensorFlowOpLayer (TF 1.15, 2.0-2.3) and TFOpLambda (tf_keras)
load in Keras 3 as mgpu-io's TFOp layer and predict what the writer predicted (fixtures/tfops, written by the real
writers: fixtures/generate/tfops/). A node_def is data: an op outside the table is refused by name. A TFOpLambda's
function is called by name on TensorFlow, as tf_keras does, behind the policy of
``mgpu_io.format.conversions.tfops.tensorflow_function_refusal`` and ``mgpu_io.keras.tfops.tensorflow_function``.
"""

import copy
import json
import re
from pathlib import Path

import numpy as np
import pytest

from mgpu_io.errors import UnsupportedModel
from mgpu_io.format.conversions import Context, convert_config
from mgpu_io.format.conversions.tfops import FUNCTIONS, OPS

FIXTURES = Path(__file__).parents[2] / "fixtures" / "tfops"
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
    inputs = _inputs(data)
    predicted = model.predict(inputs, verbose=0, batch_size=len(data["x0"]))
    predicted = predicted if isinstance(predicted, list) else [predicted]
    expected = [data[f"y{i}"] for i in range(len([k for k in data.files if k.startswith("y")]))]
    assert len(predicted) == len(expected)
    for ours, theirs in zip(predicted, expected):
        assert np.max(np.abs(np.asarray(ours) - theirs)) <= BOUND


def _inputs(data):
    inputs = [data[f"x{i}"] for i in range(len([k for k in data.files if k.startswith("x")]))]
    return inputs if len(inputs) > 1 else inputs[0]


COMPILED = [entry for entry in MANIFEST if entry.get("compiled")]


@pytest.mark.parametrize("entry", COMPILED, ids=_ids)
def test_add_loss_and_add_metric_evaluate_and_train_as_the_writer_did(entry):
    """tf.keras 2.4+'s AddLoss and AddMetric (a VAE's add_loss graph; model.add_loss/add_metric of a tensor): the
    loaded model's evaluate gives the writer's loss and metrics by name, and one step of SGD on the same batch gives
    the writer's predictions after its step."""
    pytest.importorskip("keras")
    import mgpu_io

    model = mgpu_io.load_model(FIXTURES / entry["file"])
    data = np.load(FIXTURES / entry["data"])
    x, labels = data["x0"], data["t0"] if "t0" in data.files else None
    theirs = {key[len("eval_"):]: float(data[key]) for key in data.files if key.startswith("eval_")}
    ours = model.evaluate(x, labels, batch_size=len(x), verbose=0, return_dict=True)
    assert sorted(ours) == sorted(theirs)
    for name, value in theirs.items():
        assert abs(float(ours[name]) - value) <= BOUND * max(1.0, abs(value)), name
    model.fit(x, labels, batch_size=len(x), epochs=1, shuffle=False, verbose=0)
    assert np.max(np.abs(model.predict(x, verbose=0) - data["step_y0"])) <= BOUND


#: The writers whose manifest lists TensorFlow functions (TFOpLambda) rather than ops (TensorFlowOpLayer).
FUNCTION_WRITERS = ("tfkeras", "tf25", "tf28", "tf215")


def _functions(entry):
    """The functions of a TFOpLambda writer's entry (tf_keras' manifest names them bare, the others `tf.NAME`)."""
    if entry["writer"] == "tfkeras":
        return set(entry["ops"])
    return {op[len("tf."):] for op in entry["ops"] if op.startswith("tf.")}


def test_every_op_of_the_table_is_proven_on_a_real_writers_file():
    written = {op for entry in MANIFEST if entry["writer"] not in FUNCTION_WRITERS for op in entry["ops"]}
    functions = {name for entry in MANIFEST if entry["writer"] in FUNCTION_WRITERS for name in _functions(entry)}
    by_name = functions - set(FUNCTIONS)  # called by name on TensorFlow (the movenet and outside_the_table cases)
    assert {"compat.v1.size", "broadcast_to", "compat.v1.norm", "math.cumsum"} <= by_name
    functions &= set(FUNCTIONS)
    assert written - set(OPS) == set(), "ops in the fixtures that the table lacks"
    sliced = {"GetItem"} if any("SlicingOpLambda" in entry["ops"] for entry in MANIFEST) else set()
    proven = written | {FUNCTIONS[name].op for name in functions} | sliced
    assert set(OPS) - proven == set(), "ops of the table that no fixture calls"
    assert len(functions) > 45


def test_the_tf_2_4_to_2_15_writers_store_each_new_class():
    classes = {(entry["writer"], op) for entry in MANIFEST for op in entry["ops"]}
    for writer in ("tf25", "tf28", "tf215"):
        for cls in ("SlicingOpLambda", "TFOpLambda", "AddLoss", "AddMetric", "tf.compat.v1.gather",
                    "tf.math.l2_normalize", "tf.nn.leaky_relu", "tf.convert_to_tensor"):
            assert (writer, cls) in classes, (writer, cls)


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


def test_a_tensorflow_function_outside_the_table_is_called_by_name_on_tensorflow():
    keras = pytest.importorskip("keras")
    config = _config("tfkeras_op_lambdas_config.json")
    layer = next(layer for layer in config["config"]["layers"] if layer["config"].get("function") == "math.tanh")
    layer["config"]["function"] = "math.erf"
    converted, changes = convert_config(config, Context())
    assert "tf-function-by-name" in changes
    rebuilt = next(layer for layer in converted["config"]["layers"] if layer["config"].get("function") == "math.erf")
    assert rebuilt["class_name"] == "mgpu_io>TFOp" and rebuilt["config"]["call"] == {"args": [{"__input__": 0}],
                                                                                        "kwargs": {}}
    if keras.backend.backend() == "tensorflow":
        from mgpu_io.keras.tfops import TFOp

        x = np.array([[0.5, -1.0]], "float32")
        got = TFOp.from_config(rebuilt["config"])(x)
        np.testing.assert_allclose(np.asarray(got), [[0.5204999, -0.8427008]], atol=1e-6)


@pytest.mark.parametrize("function", ["io.write_file", "compat.v1.io.read_file", "print", "py_function",
                                      "compat.v1.py_func", "raw_ops.WriteFile", "summary.scalar", "os.system()",
                                      "math._private", "random.set_seed", "compat.v1.assign"])
def test_a_function_that_reaches_outside_the_computation_is_refused_by_name(function):
    config = _config("tfkeras_op_lambdas_config.json")
    layer = next(layer for layer in config["config"]["layers"] if layer["config"].get("function") == "math.tanh")
    layer["config"]["function"] = function
    with pytest.raises(UnsupportedModel, match=rf"^Layer 'tf.math.tanh' is a TFOpLambda that calls tf.{re.escape(function)}, "
                                               r"which mgpu-io does not call: .*Received: function="):
        convert_config(config, Context())


@pytest.mark.parametrize("name", ["print", "py_function", "io.read_file", "Variable", "while_loop", "compat.v1.assign",
                                  "debugging.assert_equal", "linalg.no_such_function", "os.system"])
def test_the_tensorflow_side_of_the_policy_refuses_what_the_name_resolves_to(name):
    keras = pytest.importorskip("keras")
    if keras.backend.backend() != "tensorflow":
        pytest.skip("the TensorFlow side of the policy")
    from mgpu_io.keras.tfops import tensorflow_function

    with pytest.raises(UnsupportedModel, match=rf"^A TFOpLambda calls tf.{re.escape(name)}, which mgpu-io does not "
                                               r"call: "):
        tensorflow_function(name)


def test_the_rewrite_names_its_rules_and_keeps_the_writers_config_for_tf_keras():
    config = _config("tf21_images_config.json")
    converted, changes = convert_config(config, Context())
    assert "tf-op-layer" in changes
    assert {layer["class_name"] for layer in converted["config"]["layers"]} == {"InputLayer", "Conv2D", "mgpu_io>TFOp"}
    untouched, _ = convert_config(copy.deepcopy(config), Context(target="tf_keras"))
    assert "TensorFlowOpLayer" in {layer["class_name"] for layer in untouched["config"]["layers"]}
