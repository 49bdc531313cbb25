"""The pure logic of the format core, rule by rule, on small configs: detection (and what it must not detect),
weight attribution, every conversion family, optimizer layouts, re-keying, findings, the CLI's flag wording."""

import collections
import copy
import re

import h5py
import numpy as np
import pytest

from mgpu_io.errors import NotAModelFile, UnsupportedModel, WeightsMismatch
from mgpu_io.format import conversions
from mgpu_io.format.config import copy_config, walk_layers
from mgpu_io.format.conversions import Context, convert_config, convert_training, weight_conversion
from mgpu_io.format.detect import detect_wrapper, detect_weights_only, unroll
from mgpu_io.format.non_finite import non_finite_message, split_non_finite
from mgpu_io.format.optimizer import read_optimizer_state
from mgpu_io.format.output_keys import rekey
from mgpu_io.format.read import cached, json_depth
from mgpu_io.format.weights import check_shapes, split_by_layer, split_without_config
from mgpu_io.format.wrapper_writers import identify


def layer(cls, name, inbound=(), **config):
    return {"class_name": cls, "name": name, "config": dict(config, name=name),
            "inbound_nodes": [[[source, node, tensor, {}] for source, node, tensor in inbound]] if inbound else []}


def template(name="template"):
    return {"class_name": "Model", "name": name, "config": {
        "name": name,
        "layers": [layer("InputLayer", "x"), layer("Dense", "d", [("x", 0, 0)], units=2)],
        "input_layers": [["x", 0, 0]], "output_layers": [["d", 0, 0]]}}


def wrapper(replicas=2, arguments=None, merge_axis=0, extra=None, module="keras.utils.multi_gpu_utils"):
    slices = [layer("Lambda", f"lambda_{r + 1}", [("inp", 0, 0)], module=module,
                    arguments=(arguments or (lambda r: {"i": r, "parts": replicas}))(r)) for r in range(replicas)]
    nested = dict(template(), inbound_nodes=[[[f"lambda_{r + 1}", 0, 0, {}]] for r in range(replicas)])
    merge = layer("Concatenate", "out", [("template", r + 1, 0) for r in range(replicas)], axis=merge_axis)
    layers = [layer("InputLayer", "inp"), *slices, nested, merge] + (extra or [])
    return {"class_name": "Model", "config": {"name": "model_1", "layers": layers,
                                               "input_layers": [["inp", 0, 0]], "output_layers": [["out", 0, 0]]}}


# --- detection -----------------------------------------------------------------------------------------------


def test_a_wrapper_is_found_by_its_graph_and_its_writer_named_by_the_slice_arguments():
    level = detect_wrapper(wrapper(3))
    assert (level.variant, level.replicas, level.template_layer, level.slice_layers, level.merge_layers) == \
        ("keras", 3, "template", ["lambda_1", "lambda_2", "lambda_3"], ["out"])
    assert detect_wrapper(wrapper(module="tensorflow.python.keras.utils.multi_gpu_utils")).variant == "tf.keras"
    assert detect_wrapper(wrapper(arguments=lambda r: {"idx": r, "parts": 2})).variant == "kuza55"
    assert detect_wrapper(wrapper(arguments=lambda r: {"ngpus": 2, "part": r, "dev": "/gpu:0"})).variant == "avolkov1"
    assert detect_wrapper(wrapper(arguments=lambda r: {"shard": r})).variant == "generic"


@pytest.mark.parametrize("broken, why", [
    (lambda c: wrapper(merge_axis=1), "a merge along another axis is a model's own concatenation"),
    (lambda c: wrapper(arguments=lambda r: {"i": 0, "parts": 2}), "both slices take the same part"),
    (lambda c: wrapper(arguments=lambda r: {"i": r, "parts": 3}), "parts contradicts the replica count"),
    (lambda c: wrapper(extra=[layer("Dense", "head", [("out", 0, 0)], units=1)]), "something else computes"),
    (lambda c: template(), "a plain functional model"),
    (lambda c: {"class_name": "Sequential", "config": []}, "a bare Keras 2.0 Sequential list"),
])
def test_what_is_not_a_wrapper_is_not_detected(broken, why):
    assert detect_wrapper(broken(None)) is None, why


def test_nested_wrappers_unroll_level_by_level():
    inner = wrapper()
    outer = wrapper()
    nested = next(l for l in outer["config"]["layers"] if l["name"] == "template")
    nested["config"] = inner["config"]
    nested["class_name"] = "Model"
    unrolled = unroll(outer)
    assert unrolled.depth == 2 and unrolled.template["config"]["name"] == "template"


def test_a_weights_only_wrapper_is_the_one_weighted_group_between_slices_and_merges():
    names = {"template": ["d/kernel:0", "d/bias:0"]}
    level = detect_weights_only(["input_1", "lambda_1", "lambda_2", "template", "concatenate_1"],
                                lambda n: names.get(n, []))
    assert (level.template_layer, level.replicas, level.input_layers, level.merge_layers, level.writer) == \
        ("template", 2, ["input_1"], ["concatenate_1"], None)
    # a plain model whose one weighted layer names its own weights is no wrapper
    assert detect_weights_only(["in", "a", "b", "dense", "act"], lambda n: ["dense/kernel:0"] if n == "dense" else []) \
        is None
    assert detect_weights_only(["in", "dense", "other"], lambda n: ["x/kernel:0"] if n != "in" else []) is None


def test_writer_identification_checks_the_replica_split():
    assert identify([{"arguments": {"idx": 0, "parts": 2}}, {"arguments": {"idx": 1, "parts": 2}}], 2).name == \
        "kuza55"
    assert identify([{"arguments": {"idx": 1, "parts": 2}}, {"arguments": {"idx": 0, "parts": 2}}], 2) is None
    assert identify([{"arguments": {"i": 0, "parts": 2}}, {"arguments": {"idx": 1, "parts": 2}}], 2) is None


# --- weight attribution --------------------------------------------------------------------------------------


def bn_template():
    return {"class_name": "Model", "config": {"name": "t", "layers": [
        layer("InputLayer", "x"), layer("Dense", "d1", units=4), layer("BatchNormalization", "bn"),
        layer("Dense", "out", units=2)]}}


def test_flat_weights_split_by_layer_trainable_then_non_trainable():
    names = ["d1_1/kernel:0", "d1_1/bias:0", "bn/gamma:0", "bn/beta:0", "out/kernel:0", "out/bias:0",
             "bn/moving_mean:0", "bn/moving_variance:0"]
    split = {lw.layer: lw.names for lw in split_by_layer(bn_template(), names)}
    assert split["bn"] == ["bn/gamma:0", "bn/beta:0", "bn/moving_mean:0", "bn/moving_variance:0"]
    assert split["d1"] == ["d1_1/kernel:0", "d1_1/bias:0"] and split["x"] == []


def test_attribution_that_contradicts_the_structure_is_refused():
    with pytest.raises(WeightsMismatch, match="belongs to no layer"):
        split_by_layer(bn_template(), ["elsewhere/kernel:0"])
    with pytest.raises(WeightsMismatch, match="does not follow the template's layer order"):
        split_by_layer(bn_template(), ["out/kernel:0", "d1/kernel:0", "bn/moving_mean:0", "d1/bias:0"])


def test_without_a_config_layers_come_back_in_model_order():
    names = ["d1/kernel:0", "bn/gamma:0", "out/kernel:0", "bn/moving_mean:0", "bn/moving_variance:0"]
    assert [(lw.layer, len(lw.names)) for lw in split_without_config(names)] == [("d1", 1), ("bn", 3), ("out", 1)]
    assert [lw.layer for lw in split_without_config(["d1_W:0", "d1_b:0", "lstm_1_U_i:0"])] == ["d1", "lstm_1"]


def test_shapes_fixed_by_the_config_are_checked():
    check_shapes(layer("Dense", "d", units=3), ["k", "b"], [(5, 3), (3,)], "here")
    with pytest.raises(WeightsMismatch, match=r"Expected shape \(\?, 3\)"):
        check_shapes(layer("Dense", "d", units=3), ["k", "b"], [(5, 4), (3,)], "here")
    check_shapes(layer("GRU", "g", units=2), ["k", "r", "b"], [(4, 6), (2, 6), (2, 6)], "here")


def test_a_size_the_shapes_follow_must_be_a_whole_number():
    # Found by the fuzzer: a Keras 1 GRU's output_dim of 1e308 became units=1e308 in an output that no reader takes.
    check_shapes(layer("Dense", "d", units=3.0), ["k", "b"], [(5, 3), (3,)], "here")  # Dense(n / 2) on Python 3
    for bad in (1e308, float("inf"), 0, -2, 2.5, "3", True, None):
        with pytest.raises(NotAModelFile, match=re.escape(
                f"The config of GRU layer 'g' is damaged: its units is not a positive whole number. Expected units "
                f"like Keras writes it (e.g. 64). Received: units={bad!r} in here.")):
            check_shapes(layer("GRU", "g", units=bad), ["k", "r", "b"], [(4, 6), (2, 6), (2, 6)], "here")
    with pytest.raises(NotAModelFile, match=r"its kernel_size is not a positive whole number"):
        check_shapes(layer("Conv2D", "c", filters=2, kernel_size=[3, -1]), ["k", "b"], [(3, 3, 1, 2), (2,)], "here")


# --- conversion families -------------------------------------------------------------------------------------


def test_structure_rules_rewrite_only_what_keras3_misreads():
    config, changes = convert_config({"class_name": "Model", "config": {"name": "m", "layers": [
        layer("InputLayer", "x", batch_input_shape=[None, 3]),
        layer("Dense", "d", [("x", 0, 0)], units=1, batch_input_shape=[None, 3],
              kernel_initializer={"class_name": "GlorotUniform", "config": {"seed": None, "dtype": "float32"}}),
        layer("Bidirectional", "b", [("d", 0, 0)], layer={"class_name": "LSTM", "config": {"name": "l"}})],
        "input_layers": [["x", 0, 0]], "output_layers": [["b", 0, 0]]}}, Context())
    assert changes == ["functional-drop-batch-input-shape", "initializer-dtype", "nested-layer-module"]
    dense = config["config"]["layers"][1]["config"]
    assert "batch_input_shape" not in dense and "dtype" not in dense["kernel_initializer"]["config"]
    assert config["config"]["layers"][2]["config"]["layer"]["module"] == "keras.layers"


def test_cudnn_layers_become_standard_ones_inside_bidirectional_too():
    config = {"class_name": "Sequential", "config": {"name": "s", "layers": [
        layer("Bidirectional", "b", layer={"class_name": "CuDNNGRU", "config": {"name": "g", "units": 2}})]}}
    converted, changes = convert_config(config, Context(cpu_only=True))
    inner = converted["config"]["layers"][0]["config"]["layer"]
    assert (inner["class_name"], inner["config"]["reset_after"], changes) == ("GRU", True, ["cudnn-to-standard-rnn"])
    assert config["config"]["layers"][0]["config"]["layer"]["class_name"] == "CuDNNGRU", "the input is not modified"
    assert [f.finding for f, _, names in conversions.checks(config, Context()) if names == ["g"]] == ["cudnn-layers"]


def test_cudnn_lstm_weights_convert_as_keras2_did():
    units, features = 2, 3
    rng = np.random.RandomState(0)
    kernel, recurrent, bias = rng.rand(features, 4 * units), rng.rand(units, 4 * units), rng.rand(8 * units)
    lstm = {"class_name": "LSTM", "config": {"name": "l", "recurrent_activation": "sigmoid"}}
    conversion = weight_conversion(lstm, [kernel.shape, recurrent.shape, bias.shape], Context())
    assert conversion.notes == ["cudnn-weights"]
    _, (k, r, b) = conversion.apply(["k", "r", "b"], [kernel, recurrent, bias])
    np.testing.assert_allclose(b, bias[:4 * units] + bias[4 * units:])
    np.testing.assert_allclose(r[:, :units], recurrent[:, :units].T)  # per gate: transposed
    np.testing.assert_allclose(k[:, :units], kernel[:, :units].T.reshape((features, units), order="F"))


def test_keras1_configs_are_renamed_and_unknown_classes_refused_by_name():
    config, changes = convert_config({"class_name": "Sequential", "config": [
        {"class_name": "Dense", "config": {"name": "d", "output_dim": 2, "init": "glorot_uniform",
                                           "batch_input_shape": [None, 3]}}]}, Context(keras1=True))
    assert changes[0] == "keras1-to-keras2" and config["config"]["layers"][1]["config"]["units"] == 2
    with pytest.raises(UnsupportedModel, match="Received: class_name='MyLayer'"):
        convert_config({"class_name": "Sequential", "config": [{"class_name": "MyLayer", "config": {
            "name": "e"}}]}, Context(keras1=True))


def test_keras1_gru_gates_merge_in_keras2_order():
    gru = {"class_name": "GRU", "config": {"name": "g", "recurrent_activation": "sigmoid"}}
    arrays = [np.full((1, 1), i, "float32") for i in range(9)]
    conversion = weight_conversion(gru, [a.shape for a in arrays], Context(keras1=True))
    names, merged = conversion.apply([None] * 9, arrays)
    assert conversion.notes == ["keras1-gates-merged"] and names[0] == "g/kernel:0"
    assert [m.ravel().tolist() for m in merged] == [[0, 3, 6], [1, 4, 7], [2, 5, 8]]


def test_hard_sigmoid_is_rescaled_for_keras3_only_and_inexact_uses_are_reported():
    lstm = {"class_name": "LSTM", "config": {"name": "l", "recurrent_activation": "hard_sigmoid"}}
    shapes = [(2, 4), (1, 4), (4,)]
    assert weight_conversion(lstm, shapes, Context()).notes == ["hard-sigmoid-gates-rescaled"]
    assert not weight_conversion(lstm, shapes, Context(target="tf_keras"))
    dense = {"class_name": "Dense", "config": {"name": "d", "activation": "hard_sigmoid"}}
    _, (k,) = weight_conversion(dense, [(1,)], Context()).apply(["k"], [np.ones(1)])
    assert k.tolist() == [1.2]
    # hard_sigmoid 3 (1.2 z) == hard_sigmoid 2 (z): the rescaling is exact
    z = np.linspace(-5, 5, 101)
    np.testing.assert_allclose(np.clip(1.2 * z / 6 + 0.5, 0, 1), np.clip(0.2 * z + 0.5, 0, 1), atol=1e-12)
    model = {"class_name": "Sequential", "config": {"name": "s", "layers": [
        layer("Activation", "a", activation="hard_sigmoid")]}}
    assert [family.name for family, _, _ in conversions.checks(model, Context())] == ["hard_sigmoid"]


def test_training_configs_get_keras3_spellings():
    training, changes = convert_training({"loss": "mse", "optimizer_config": {"class_name": "SGD", "config": {
        "lr": 0.1, "decay": 0.0, "momentum": 0.9}}}, Context())
    assert training == {"loss": "mean_squared_error", "optimizer_config": {"class_name": "SGD", "config": {
        "learning_rate": 0.1, "momentum": 0.9}}}
    assert changes == ["optimizer-arguments", "loss-names"]


def test_registry_runs_families_in_order_and_leaves_its_input_alone():
    config = {"class_name": "Sequential", "config": [layer("CuDNNLSTM", "c", units=1, batch_input_shape=[None, 2, 3])]}
    before = copy.deepcopy(config)
    _, changes = convert_config(config, Context())
    assert changes == ["sequential-list-config", "sequential-explicit-input", "cudnn-to-standard-rnn"]
    assert config == before


def test_walk_layers_reaches_any_depth_without_recursion():
    deepest = {"class_name": "Dense", "config": {"name": "leaf"}}
    model = deepest
    for depth in range(3000):
        model = {"class_name": "Sequential", "config": {"name": f"m{depth}", "layers": [model]}}
    assert [l["config"]["name"] for l in walk_layers(model)][-1] == "leaf"


def test_a_copied_config_equals_the_original_and_shares_nothing_mutable():
    original = wrapper()
    original["config"]["extra"] = (1, [2])  # not JSON: copied as copy.deepcopy would
    copied = copy_config(original)
    assert copied == copy.deepcopy(original)
    mutable = lambda tree: [id(v) for v in walk_json(tree) if isinstance(v, (dict, list))]
    assert not set(mutable(copied)) & set(mutable(original))


def walk_json(value):
    yield value
    children = value.values() if isinstance(value, dict) else value if isinstance(value, (list, tuple)) else []
    for child in children:
        yield from walk_json(child)


@pytest.mark.parametrize("value, depth", [(3, 0), ([], 1), ({"a": [1, {"b": []}]}, 4), ([[[[]]]] * 2, 4)])
def test_json_depth_counts_nested_containers(value, depth):
    assert json_depth(value) == depth


def test_json_depth_reaches_any_depth_without_recursion():
    value = []
    for _ in range(5000):
        value = [value]
    assert json_depth(value) == 5001


# --- optimizer layouts ---------------------------------------------------------------------------------------


@pytest.mark.parametrize("optimizer, arrays, iterations, roles", [
    ("Adam", [np.int64(3), np.ones(2), np.ones(3), np.zeros(2), np.zeros(3)], 3, ["momentum", "velocity"]),
    ("Adam", [np.int64(3), np.ones(2), np.ones(3), np.zeros(2), np.zeros(3), np.zeros(1), np.zeros(1)], 3,
     ["momentum", "velocity"]),  # + vhat dummies (Keras 2.2, amsgrad off)
    ("SGD", [np.int64(5), np.ones(2), np.ones(3)], 5, ["momentum"]),
    ("SGD", [np.int64(5)], 5, []),  # tf.keras v2 SGD without momentum
    ("RMSprop", [np.ones(2), np.ones(3)], None, ["velocity"]),  # Keras 2.2: accumulators only
    ("RMSprop", [np.int64(1), np.ones(2), np.ones(3)], 1, ["velocity"]),  # Keras 2.3: iterations first
    ("Adadelta", [np.ones(2), np.ones(3), np.zeros(2), np.zeros(3)], None,
     ["accumulated_grad", "accumulated_delta_var"]),  # Keras 1/2.2: accumulators, then delta accumulators
    ("Adamax", [np.int64(4), np.ones(2), np.ones(3), np.zeros(2), np.zeros(3)], 4, ["momentum", "norm"]),
    ("Nadam", [np.int64(4), np.ones(2), np.ones(3), np.zeros(2), np.zeros(3)], 4, ["momentum", "velocity"]),
])
def test_each_stored_optimizer_layout_maps_to_keras3_roles(optimizer, arrays, iterations, roles):
    state = read_optimizer_state(optimizer, arrays, [(2,), (3,)])
    assert (state.problem, state.iterations, list(state.slots)) == (None, iterations, roles)


def test_an_optimizer_state_that_fits_nothing_says_why():
    assert "fits no known layout" in read_optimizer_state("Adam", [np.ones(2)] * 5, [(2,)]).problem
    assert "has shape (3,)" in read_optimizer_state("SGD", [np.int64(1), np.ones(3)], [(2,)]).problem
    assert "does not translate" in read_optimizer_state("Lion", [], [(2,)]).problem


def test_tf_keras_slot_names_say_each_role_per_optimizer():
    adamax = read_optimizer_state("Adamax", [np.int64(2), np.ones(2), np.zeros(2)], [(2,)],
                                  names=["Adamax/iter:0", "Adamax/d/kernel/m:0", "Adamax/d/kernel/v:0"])
    assert (adamax.iterations, list(adamax.slots)) == (2, ["momentum", "norm"])  # tf.keras' Adamax: v is the norm
    nadam = read_optimizer_state("Nadam", [np.int64(2), np.float32(0.5), np.ones(2), np.zeros(2)], [(2,)],
                                 names=["Nadam/iter:0", "Nadam/momentum_cache:0", "Nadam/d/kernel/m:0",
                                        "Nadam/d/kernel/v:0"])
    assert (nadam.scalars, list(nadam.slots)) == ({"u_product": 0.5}, ["momentum", "velocity"])
    rms = read_optimizer_state("RMSprop", [np.int64(2), np.ones(2), np.zeros(2), np.ones(2)], [(2,)],
                               names=["RMSprop/iter:0", "RMSprop/d/kernel/rms:0", "RMSprop/d/kernel/momentum:0",
                                      "RMSprop/d/kernel/mg:0"])
    assert list(rms.slots) == ["velocity", "momentum", "average_gradient"]


# --- re-keying, findings, flags ------------------------------------------------------------------------------


def test_per_output_values_are_rekeyed_by_position_once():
    assert rekey({"merge_1": "mse", "merge_2": "mae"}, ["merge_1", "merge_2"], ["a", "b"]) == \
        ({"a": "mse", "b": "mae"}, {"merge_1": "a", "merge_2": "b"})
    assert rekey("mse", ["m"], ["a"]) == ("mse", {})
    assert rekey({"unknown": 1}, ["m"], ["a"]) == ({"unknown": 1}, {})


def test_non_finite_weights_are_explained_once_statistics_apart_from_learned_weights():
    assert split_non_finite(["bn/moving_mean:0", "bn/gamma:0", "bn_running_std:0"]) == \
        (["bn/moving_mean:0", "bn_running_std:0"], ["bn/gamma:0"])
    message = non_finite_message(["bn/moving_variance:0"], "x.h5")
    assert "uneven-last-batch" in message and "recalibrate_batchnorm" in message and "Lost" not in message


def test_library_parameters_become_cli_flags():
    from mgpu_io.cli.render import in_flags
    from mgpu_io.errors import Param, Text

    words = Text("Pass ", Param("overwrite", True), ", ", Param("allow_plain", True), ", ",
                 Param("keep_config", True), " or ", Param("strict", False), "; ", Param("target", "tf_keras"),
                 "; leave out ", Param("config"), ".")
    assert str(words) == "Pass overwrite=True, allow_plain=True, keep_config=True or strict=False; " \
        "target='tf_keras'; leave out config=."
    assert in_flags(words) == "Pass --force, --allow-plain, --keep-config or --no-strict; --target tf_keras; " \
        "leave out --config."
    # plain words are never read: a name that looks like a parameter stays as it is
    assert in_flags("in keep_config mode, the my_config=1 and overwrite=True") == \
        "in keep_config mode, the my_config=1 and overwrite=True"


# --- configs without keras_version: Keras 1 told from Keras 2 by structure -------------------------------------


def bare_configs():
    from helpers import FIXTURES, MANIFEST

    for entry in MANIFEST:
        if entry["file_type"] == "model":
            yield pytest.param(FIXTURES / entry["file"], entry["keras_version"].startswith("1."), id=entry["file"])


@pytest.mark.parametrize("path, written_by_keras1", list(bare_configs()))
def test_a_bare_model_config_is_read_as_the_keras_that_wrote_it(path, written_by_keras1, tmp_path):
    import json

    import h5py

    import mgpu_io
    from mgpu_io.format.conversions.keras1 import is_keras1

    with h5py.File(path, "r") as h5:
        text = h5.attrs["model_config"]
    bare = tmp_path / "model_config.json"  # what users save with h5py: the attribute alone, no keras_version
    bare.write_bytes(text if isinstance(text, bytes) else text.encode())
    assert is_keras1(None, json.loads(bare.read_text())) == written_by_keras1
    report = mgpu_io.unwrap(bare, tmp_path / "out.json", allow_plain=True)
    assert ("keras1-to-keras2" in report.config_changes) == written_by_keras1


# --- conversions/arguments.py: arguments Keras 3 dropped, renamed or re-defaulted ---------------------------------


def _one_layer(cls, settings):
    return {"class_name": "Sequential", "config": {"name": "s", "layers": [
        {"class_name": "InputLayer", "config": {"batch_input_shape": [None, 4, 3], "name": "i"}},
        {"class_name": cls, "config": dict(settings, name="l")}]}}


@pytest.mark.parametrize("cls, settings, rule, expected", [
    ("LSTM", {"units": 2, "time_major": False}, "rnn-time-major", {"units": 2, "name": "l"}),
    ("GRU", {"units": 2}, "gru-reset-before", {"units": 2, "reset_after": False, "name": "l"}),
    ("LSTM", {"units": 2, "implementation": 1, "dropout": 0.3, "recurrent_dropout": 0.0},
     "rnn-dropout-implementation",
     {"units": 2, "implementation": 2, "dropout": 0.3, "recurrent_dropout": 0.0, "name": "l"}),
    ("SpatialDropout1D", {"rate": 0.1, "trainable": True, "noise_shape": None, "seed": None},
     "spatial-dropout-arguments", {"rate": 0.1, "seed": None, "name": "l"}),
    ("DepthwiseConv2D", {"kernel_size": [3, 3], "groups": 1}, "depthwise-groups", {"kernel_size": [3, 3], "name": "l"}),
    ("ThresholdedReLU", {"theta": 0.5}, "thresholded-relu",
     {"threshold": 0.5, "negative_slope": 0.0, "max_value": None, "name": "l"}),
    ("Dense", {"units": 2, "W_regularizer": None, "kernel_regularizer": {"class_name": "WeightRegularizer",
                                                                          "config": {"l1": 0, "l2": 0.01}}},
     "weight-regularizer", {"units": 2, "W_regularizer": None,
                            "kernel_regularizer": {"class_name": "L1L2", "config": {"l1": 0.0, "l2": 0.01}}, "name": "l"}),
])
def test_each_argument_rule_writes_what_keras3_reads(cls, settings, rule, expected):
    from mgpu_io.format.conversions import Context, convert_config

    config, changes = convert_config(_one_layer(cls, settings), Context())
    assert rule in changes
    assert config["config"]["layers"][1]["config"] == expected


@pytest.mark.parametrize("settings", [
    {"implementation": 1, "dropout": 0.3, "recurrent_dropout": 0.2},  # Keras 3 takes 1 for recurrent dropout
    {"implementation": 1, "dropout": 0.0},  # no dropout: no training step to fail
    {"implementation": 2, "dropout": 0.3},
])
def test_an_rnns_implementation_changes_only_where_keras3_cannot_train_it(settings):
    from mgpu_io.format.conversions import Context, convert_config

    config, changes = convert_config(_one_layer("LSTM", dict(settings, units=2)), Context())
    assert "rnn-dropout-implementation" not in changes
    assert config["config"]["layers"][1]["config"]["implementation"] == settings["implementation"]


def test_a_grus_stored_reset_after_is_kept():
    from mgpu_io.format.conversions import Context, convert_config

    config, changes = convert_config(_one_layer("GRU", {"units": 2, "reset_after": True}), Context())
    assert "gru-reset-before" not in changes and config["config"]["layers"][1]["config"]["reset_after"] is True


@pytest.mark.parametrize("cls, settings, message", [
    ("LSTM", {"units": 2, "time_major": True}, "Layer 'l' (LSTM) has time_major=True, which Keras 3 cannot express "
                                               "(Keras 3's RNN layers take batch-major input)."),
    ("DepthwiseConv2D", {"kernel_size": [3, 3], "groups": 3}, "Layer 'l' (DepthwiseConv2D) has groups=3, which "
                                                              "Keras 3 cannot express"),
])
def test_an_argument_keras3_cannot_express_is_refused_by_name(cls, settings, message):
    from mgpu_io.errors import UnsupportedModel
    from mgpu_io.format.conversions import Context, convert_config

    with pytest.raises(UnsupportedModel) as error:
        convert_config(_one_layer(cls, settings), Context())
    assert str(error.value).startswith(message)


def test_a_tf_op_lambda_flat_node_is_read_and_a_function_outside_the_computation_refused_by_name():
    """tf.keras 2.4+ writes TFOpLambda layers with one flat inbound node ([name, 0, 0, kwargs]); a function that
    mgpu-io computes becomes its TFOp layer, with its name and call for TensorFlow; one that reaches outside the
    computation is refused by name."""
    from mgpu_io.errors import UnsupportedModel
    from mgpu_io.format.config import inbound_nodes
    from mgpu_io.format.conversions import Context, convert_config

    op = {"class_name": "TFOpLambda", "name": "tf.math.multiply",
          "config": {"name": "tf.math.multiply", "function": "math.multiply"},
          "inbound_nodes": [["inp", 0, 0, {"y": 2.0}]]}
    assert inbound_nodes(op) == [[("inp", 0, 0)]]
    config = {"class_name": "Model", "config": {"name": "m", "layers": [
        {"class_name": "InputLayer", "name": "inp", "config": {"name": "inp", "batch_input_shape": [None, 2]},
         "inbound_nodes": []}, op], "input_layers": [["inp", 0, 0]], "output_layers": [["tf.math.multiply", 0, 0]]}}
    converted, changes = convert_config(config, Context())
    layer = converted["config"]["layers"][1]
    assert (changes, layer["class_name"], layer["config"]["op"], layer["config"]["constants"]) == (
        ["tf-op-lambda"], "mgpu_io>TFOp", "Mul", {"1": 2.0})
    assert layer["inbound_nodes"] == [[["inp", 0, 0, {}]]]
    assert layer["config"]["function"] == "math.multiply"  # TensorFlow calls it by name, the op serves elsewhere
    assert layer["config"]["call"] == {"args": [{"__input__": 0}], "kwargs": {"y": 2.0}}
    config["config"]["layers"][1]["config"]["function"] = "io.write_file"
    with pytest.raises(UnsupportedModel, match=r"^Layer 'tf.math.multiply' is a TFOpLambda that calls "
                                               r"tf.io.write_file, which mgpu-io does not call: it reaches outside "
                                               r"the computation \(the namespace tf.io\)"):
        convert_config(config, Context())


def test_hard_sigmoid_inside_time_distributed_is_rescaled_like_the_layer_alone():
    dense = {"class_name": "Dense", "config": {"name": "d", "units": 2, "activation": "hard_sigmoid"}}
    wrapped = {"class_name": "TimeDistributed", "config": {"name": "t", "layer": dense}}
    conversion = conversions.weight_conversion(wrapped, [(3, 2), (2,)], Context())
    assert conversion.notes == ["hard-sigmoid-rescaled"]
    _, (kernel, bias) = conversion.apply(["k", "b"], [np.ones((3, 2)), np.ones(2)])
    np.testing.assert_allclose(kernel, 1.2)
    np.testing.assert_allclose(bias, 1.2)


def test_a_separable_convolutions_hard_sigmoid_scales_its_pointwise_kernel_and_bias_only():
    separable = {"class_name": "SeparableConv2D", "config": {"name": "s", "filters": 2, "activation": "hard_sigmoid"}}
    conversion = conversions.weight_conversion(separable, [(3, 3, 1, 1), (1, 1, 1, 2), (2,)], Context())
    _, (depthwise, pointwise, bias) = conversion.apply(
        ["d", "p", "b"], [np.ones((3, 3, 1, 1)), np.ones((1, 1, 1, 2)), np.ones(2)])
    assert (depthwise == 1.0).all() and np.allclose(pointwise, 1.2) and np.allclose(bias, 1.2)


def test_a_keras2_decoders_initial_state_becomes_a_keyword_of_its_call():
    """Keras 2 stored `LSTM(...)(x, initial_state=[h, c])` as a node of three inputs; Keras 3 reads keywords."""
    model = {"class_name": "Model", "config": {"name": "s2s", "layers": [
        {"name": "dec_in", "class_name": "InputLayer", "config": {"name": "dec_in"}, "inbound_nodes": []},
        {"name": "encoder", "class_name": "LSTM", "config": {"name": "encoder"}, "inbound_nodes": []},
        {"name": "decoder", "class_name": "LSTM", "config": {"name": "decoder"}, "inbound_nodes": [
            [["dec_in", 0, 0, {}], ["encoder", 0, 1, {}], ["encoder", 0, 2, {}]]]}],
        "input_layers": [["dec_in", 0, 0]], "output_layers": [["decoder", 0, 0]]}}
    converted, changes = convert_config(model, Context())
    (node,) = converted["config"]["layers"][2]["inbound_nodes"]
    history = lambda tensor: tensor["config"]["keras_history"]  # noqa: E731
    assert "node-tensor-keywords" in changes
    assert history(node["args"][0]) == ["dec_in", 0, 0]
    assert [history(state) for state in node["kwargs"]["initial_state"]] == [["encoder", 0, 1], ["encoder", 0, 2]]
    untouched, _ = convert_config(model, Context(target="tf_keras"))
    assert untouched["config"]["layers"][2]["inbound_nodes"] == model["config"]["layers"][2]["inbound_nodes"]


# --- reading: the cached views of a file read like h5py's own -----------------------------------------------------

@pytest.fixture
def stored_file(tmp_path):
    path = tmp_path / "datasets.h5"
    with h5py.File(path, "w") as f:
        f["contiguous"] = np.arange(12, dtype="float32").reshape(3, 4)
        f["scalar"] = np.float64(2.5)
        f["half"] = np.ones(5, dtype="float16")
        f.create_dataset("empty", data=h5py.Empty("float32"))
        f.create_dataset("compressed", data=np.arange(100.0), compression="gzip", chunks=(10,))
    with h5py.File(path, "r") as f:
        yield f


@pytest.mark.parametrize("name", ["contiguous", "scalar", "half", "empty", "compressed"])
def test_a_stored_dataset_reads_like_h5pys_own(stored_file, name):
    ours, theirs = cached(stored_file)[name], stored_file[name]
    assert isinstance(ours, h5py.Dataset)
    assert (ours.shape, ours.size, ours.dtype, ours.chunks, ours.compression, ours.fillvalue) == \
        (theirs.shape, theirs.size, theirs.dtype, theirs.chunks, theirs.compression, theirs.fillvalue)
    if theirs.shape is None:
        assert ours[()] == theirs[()]
    else:
        np.testing.assert_array_equal(ours[()], theirs[()])
        assert ours.id.get_offset() == theirs.id.get_offset()
    assert ours.offset == theirs.id.get_offset() and ours.name == theirs.name


def test_a_stored_dataset_holds_no_handle_open_until_its_values_are_read(stored_file):
    # Open handles cost libhdf5 at each later lookup and at the file's close: a checkpoint's hundreds of weights are
    # checked and copied by their facts and names alone.
    def open_datasets():
        return h5py.h5f.get_obj_count(stored_file.id, h5py.h5f.OBJ_DATASET)

    group = cached(stored_file)
    weights = [group[name] for name in ("contiguous", "scalar", "half", "compressed")]
    assert [w.shape for w in weights] == [(3, 4), (), (5,), (100,)] and weights[0].offset is not None
    assert open_datasets() == 0
    assert weights[3][5] == 5.0  # read through its filters: opened again, where it is
    assert open_datasets() == 1


# --- keras2_legacy: the era's habits (real files: tests/load/test_habits.py) -------------------------------------------


def _lstm(name, **shape):
    return {"class_name": "LSTM", "config": dict({"name": name, "units": 2}, **shape)}


def test_a_wrapped_layers_input_shape_moves_to_the_wrapper_that_starts_a_sequential():
    sequential = {"class_name": "Sequential", "config": {"name": "s", "layers": [
        {"class_name": "TimeDistributed", "config": {"name": "td", "layer": {
            "class_name": "Dense", "config": {"name": "d", "units": 2, "batch_input_shape": [None, 3]}}}},
        {"class_name": "Bidirectional", "config": {"name": "b", "layer": _lstm("l", input_dim=4, input_length=5)}}]}}
    config, changes = convert_config(sequential, Context(keras_version="2.2.4"))
    layers = config["config"]["layers"]
    assert "wrapped-input-shape" in changes
    assert layers[0] == {"class_name": "InputLayer", "config": {"batch_input_shape": [None, None, 3],
                                                                "dtype": "float32", "sparse": False,
                                                                "name": "td_input"}}
    assert "batch_input_shape" not in layers[1]["config"]["layer"]["config"]
    assert not {"input_dim", "input_length"} & set(layers[2]["config"]["layer"]["config"])  # not first: dropped


def test_a_wrapped_layers_input_shape_is_dropped_where_the_wrapper_has_one():
    bidirectional = {"class_name": "Bidirectional", "config": {
        "name": "b", "batch_input_shape": [None, 5, 3], "layer": _lstm("l", batch_input_shape=[None, 5, 3])}}
    config, _ = convert_config({"class_name": "Sequential", "config": [bidirectional]}, Context(keras_version="2.0.5"))
    first, wrapper = config["config"]["layers"]
    assert first["config"]["batch_input_shape"] == [None, 5, 3]
    assert "batch_input_shape" not in wrapper["config"]["layer"]["config"]


def test_unified_gru_is_a_gru_too_though_no_released_tensorflow_wrote_one():
    unified = {"class_name": "Sequential", "config": {"name": "s", "layers": [
        {"class_name": "UnifiedGRU", "config": {"name": "g", "units": 2, "reset_after": True,
                                                "batch_input_shape": [None, 5, 3]}}]}}
    config, changes = convert_config(unified, Context(keras_version="2.2.4-tf"))
    assert config["config"]["layers"][1]["class_name"] == "GRU" and "unified-rnn-names" in changes


def test_a_legacy_merge_dot_after_a_convolution_knows_its_inputs_rank():
    def layer(name, cls, inbound, **settings):
        return {"name": name, "class_name": cls, "config": dict(settings, name=name),
                "inbound_nodes": [[[source, 0, 0, {}] for source in inbound]] if inbound else []}

    model = {"class_name": "Model", "config": {"name": "m", "layers": [
        layer("x", "InputLayer", [], batch_input_shape=[None, 6, 2]),
        layer("c", "Conv1D", ["x"], filters=3, kernel_size=[3]),
        layer("dot", "Merge", ["c", "c"], mode="dot", mode_type="raw", dot_axes=[2, 2])],
        "input_layers": [["x", 0, 0]], "output_layers": [["dot", 0, 0]]}}
    config, changes = convert_config(model, Context(keras_version="2.0.8"))
    dot = config["config"]["layers"][-1]
    assert (dot["class_name"], dot["config"]["axes"], changes[0]) == ("Dot", [2, 2], "keras2-merge")


def test_a_merge_whose_mode_is_a_named_function_becomes_a_lambda_referring_to_that_name():
    from mgpu_io.lambdas.stored import lambda_layers

    def layer(name, cls, inbound, **settings):
        return {"name": name, "class_name": cls, "config": dict(settings, name=name),
                "inbound_nodes": [[[source, 0, 0, {}] for source in inbound]] if inbound else []}

    model = {"class_name": "Model", "config": {"name": "m", "layers": [
        layer("a", "InputLayer", [], batch_input_shape=[None, 3]),
        layer("b", "InputLayer", [], batch_input_shape=[None, 3]),
        layer("distance", "Merge", ["a", "b"], mode="euclidean", mode_type="function", output_shape=[1],
              output_shape_type="raw", output_mask=None, output_mask_type="raw", arguments={})],
        "input_layers": [["a", 0, 0], ["b", 0, 0]], "output_layers": [["distance", 0, 0]]}}
    (listed,) = lambda_layers(model)  # as stored: reported with its name, like a Lambda
    assert (listed.layer, listed.reference, listed.inbound) == ("distance", "euclidean", ["a", "b"])
    config, changes = convert_config(model, Context(keras_version="2.0.8"))
    lam = config["config"]["layers"][-1]
    assert lam["class_name"] == "Lambda" and lam["config"]["function"]["config"] == "euclidean"
    assert {"merge-function-as-lambda", "lambda-function-name"} <= set(changes)


def _dense_model(name, units=3):
    return {"class_name": "Sequential", "config": [{"class_name": "Dense", "config": {
        "name": name, "units": units, "batch_input_shape": [None, 7]}}]}


def test_a_folder_of_many_models_in_turn_converts_each_config_once(monkeypatch):
    """The benchmark's folder of small files cycles through 45 models: each stays kept until it comes round again,
    and what is kept stays within its bound of characters."""
    from mgpu_io.format import conversions

    monkeypatch.setattr(conversions, "_CONVERTED", collections.OrderedDict())
    models = [_dense_model(f"model_{index}") for index in range(45)]
    for model in models:
        conversions.convert_config(model, conversions.Context())
    assert all(conversions.converted_before(model, conversions.Context()) for model in models)
    monkeypatch.setattr(conversions, "_CONVERTED_CHARACTERS", 2000)
    conversions.convert_config(_dense_model("one_more"), conversions.Context())
    kept = sum(len(before) + len(after) for (before, _), (after, _) in conversions._CONVERTED.items())
    assert 0 < kept <= 2000 and conversions.converted_before(_dense_model("one_more"), conversions.Context())
    assert not conversions.converted_before(models[0], conversions.Context())


def test_a_config_converted_before_comes_back_as_a_copy_of_the_same_conversion():
    """convert_config reuses a conversion of the same config and context (a folder's checkpoints of one model):
    equal to the first, and the caller's own copy, so that changing one answer changes no later one."""
    from mgpu_io.format import conversions

    config = {"class_name": "Sequential", "config": [{"class_name": "Dense", "config": {
        "name": "reused", "units": 3, "batch_input_shape": [None, 7], "init": "glorot_uniform"}}]}
    conversions._CONVERTED.clear()
    first, first_changes = conversions.convert_config(config, conversions.Context(keras1=True))
    assert conversions.converted_before(config, conversions.Context(keras1=True))
    assert not conversions.converted_before(config, conversions.Context())  # another context converts anew
    first["config"]["layers"][1]["config"]["units"] = 99
    first_changes.append("changed by the caller")
    again, again_changes = conversions.convert_config(config, conversions.Context(keras1=True))
    assert again["config"]["layers"][1]["config"]["units"] == 3
    assert "changed by the caller" not in again_changes
    conversions._CONVERTED.clear()
    assert (again, again_changes) == conversions.convert_config(config, conversions.Context(keras1=True))
