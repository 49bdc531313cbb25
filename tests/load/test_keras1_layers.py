"""Keras 1 layers in Keras 2's spelling and layout: the pure config and weight conversions of conversions/keras1.py
and keras1_weights.py.

Small dicts and arrays only, no Keras: each conversion is checked against what Keras 1.2.2's own source computes
(``.venv-legacy/keras-1.2.2/keras``); the layer sweep (tests/load/test_layer_sweep.py) checks them on its real files.
"""

import numpy as np
import pytest

from mgpu_io.errors import UnsupportedModel
from mgpu_io.format.conversions import RULES, Context, weight_conversion
from mgpu_io.format.conversions import keras1, keras1_weights
from mgpu_io.format.conversions.keras1 import MERGE_MODES, convert_keras1_config

KERAS1 = Context(keras1=True)


def functional(*layers, inputs=("x",), outputs=None):
    """A Keras 1 functional config: an InputLayer per name in ``inputs``, then ``layers`` (name, class, config,
    inbound layer names), outputs the last layer unless named."""
    entries = [{"name": name, "class_name": "InputLayer", "inbound_nodes": [],
                "config": {"name": name, "batch_input_shape": [None, 3], "input_dtype": "float32"}}
               for name in inputs]
    for name, cls, config, inbound in layers:
        entries.append({"name": name, "class_name": cls, "config": dict(config, name=name),
                        "inbound_nodes": [[[source, 0, 0] for source in inbound]]})
    outputs = outputs or [layers[-1][0]]
    return {"class_name": "Model", "config": {"name": "m", "layers": entries,
                                              "input_layers": [[name, 0, 0] for name in inputs],
                                              "output_layers": [[name, 0, 0] for name in outputs]}}


def converted(config):
    """The converted config and the rules the keras1 family reports for it."""
    changes = keras1.FAMILY.rewrite_config(config, KERAS1)
    return config, changes


def layer(config, name):
    return next(entry for entry in config["config"]["layers"] if entry["name"] == name)


def steps(cls, config, arrays):
    """Apply the planned weight conversion of one layer (final config) to ``arrays``."""
    conversion = weight_conversion({"class_name": cls, "config": dict(config, name="l")},
                                   [a.shape for a in arrays], KERAS1)
    return conversion.notes, conversion.apply([f"w{i}" for i in range(len(arrays))], arrays)


# --- convolutions --------------------------------------------------------------------------------------------


def test_convolution1d_gets_keras2_arguments_and_its_kernel_loses_the_dummy_axis():
    config = convert_keras1_config(functional(("c", "Convolution1D", {
        "nb_filter": 4, "filter_length": 3, "init": "glorot_uniform", "activation": "relu", "border_mode": "same",
        "subsample_length": 2, "W_regularizer": None, "b_regularizer": None, "activity_regularizer": None,
        "W_constraint": None, "b_constraint": None, "bias": True, "input_dim": None, "input_length": None}, ["x"])))
    conv = layer(config, "c")
    assert conv["class_name"] == "Conv1D"
    assert conv["config"] == {"name": "c", "filters": 4, "kernel_size": [3], "kernel_initializer": "glorot_uniform",
                              "activation": "relu", "padding": "same", "strides": [2], "kernel_regularizer": None,
                              "bias_regularizer": None, "activity_regularizer": None, "kernel_constraint": None,
                              "bias_constraint": None, "use_bias": True}
    kernel = np.arange(3 * 2 * 4, dtype="float32").reshape(3, 1, 2, 4)  # Keras 1.2: (length, 1, input, filters)
    notes, (_, (new, bias)) = steps("Conv1D", conv["config"], [kernel, np.zeros(4)])
    assert notes == ["keras1-kernels-transposed"] and new.shape == (3, 2, 4)
    np.testing.assert_array_equal(new, kernel[:, 0])
    legacy = np.transpose(kernel, (3, 2, 0, 1))  # Keras 1.1: (filters, input, length, 1)
    _, (_, (from_legacy, _)) = steps("Conv1D", conv["config"], [legacy, np.zeros(4)])
    np.testing.assert_array_equal(from_legacy, kernel[:, 0])


def test_atrous_convolutions_become_dilated_ones():
    config = convert_keras1_config(functional(
        ("a1", "AtrousConvolution1D", {"nb_filter": 2, "filter_length": 2, "atrous_rate": 2, "border_mode": "valid",
                                       "subsample_length": 1}, ["x"]),
        ("a2", "AtrousConvolution2D", {"nb_filter": 2, "nb_row": 2, "nb_col": 3, "atrous_rate": [2, 2],
                                       "border_mode": "valid", "subsample": [1, 1], "dim_ordering": "tf"}, ["x"])))
    assert layer(config, "a1")["class_name"] == "Conv1D" and layer(config, "a1")["config"]["dilation_rate"] == [2]
    assert layer(config, "a2")["class_name"] == "Conv2D"
    assert layer(config, "a2")["config"]["kernel_size"] == [2, 3]
    assert layer(config, "a2")["config"]["dilation_rate"] == [2, 2]


def test_th_convolutions_are_channels_first_with_keras2_kernels():
    config, changes = converted(functional(("c", "Convolution2D", {
        "nb_filter": 4, "nb_row": 3, "nb_col": 2, "border_mode": "valid", "subsample": [1, 1],
        "dim_ordering": "th", "bias": True}, ["x"])))
    conv = layer(config, "c")["config"]
    assert conv["data_format"] == "channels_first" and conv["kernel_size"] == [3, 2]
    assert "keras1-channels-first" in changes
    kernel = np.random.default_rng(0).normal(size=(4, 2, 3, 2))  # 'th': (filters, input, rows, cols)
    _, (_, (new, _)) = steps("Conv2D", conv, [kernel, np.zeros(4)])
    assert new.shape == (3, 2, 2, 4)
    assert new[1, 0, 1, 3] == kernel[3, 1, 1, 0]
    conv3d = {"filters": 3, "kernel_size": [2, 2, 2], "data_format": "channels_first"}
    _, (_, (new3d, _)) = steps("Conv3D", conv3d, [np.zeros((3, 2, 2, 2, 2)), np.zeros(3)])
    assert new3d.shape == (2, 2, 2, 2, 3)


def test_tf_convolution_kernels_are_kept_as_stored():
    notes, _ = steps("Conv2D", {"filters": 4, "kernel_size": [3, 3], "data_format": "channels_last"},
                     [np.zeros((3, 3, 2, 4)), np.zeros(4)])
    assert notes == []


def test_separable_th_kernels_are_both_transposed_and_init_sets_both_initializers():
    config = convert_keras1_config(functional(("s", "SeparableConvolution2D", {
        "nb_filter": 4, "nb_row": 3, "nb_col": 3, "init": "he_normal", "border_mode": "valid", "subsample": [1, 1],
        "depth_multiplier": 1, "dim_ordering": "th", "depthwise_regularizer": None, "pointwise_regularizer": None,
        "b_regularizer": None, "bias": True}, ["x"])))
    settings = layer(config, "s")["config"]
    assert layer(config, "s")["class_name"] == "SeparableConv2D"
    assert settings["depthwise_initializer"] == settings["pointwise_initializer"] == "he_normal"
    _, (_, (depthwise, pointwise, _)) = steps("SeparableConv2D", settings,
                                              [np.zeros((1, 2, 3, 3)), np.zeros((4, 2, 1, 1)), np.zeros(4)])
    assert depthwise.shape == (3, 3, 2, 1) and pointwise.shape == (1, 1, 2, 4)


def test_deconvolution_kernels_swap_their_channel_axes():
    kernel = np.random.default_rng(1).normal(size=(3, 3, 2, 5))  # Keras 1 'tf': (rows, cols, input, filters)
    _, (_, (new, _)) = steps("Conv2DTranspose", {"filters": 5, "data_format": "channels_last"},
                             [kernel, np.zeros(5)])
    np.testing.assert_array_equal(new, np.transpose(kernel, (0, 1, 3, 2)))  # Keras 2: (rows, cols, filters, input)
    th = np.random.default_rng(2).normal(size=(5, 2, 3, 3))  # 'th': (filters, input, rows, cols)
    _, (_, (new_th, _)) = steps("Conv2DTranspose", {"filters": 5, "data_format": "channels_first"},
                                [th, np.zeros(5)])
    np.testing.assert_array_equal(new_th, np.transpose(th, (2, 3, 0, 1)))


@pytest.mark.parametrize("output, border, subsample, padding", [
    ([None, 8, 8, 3], "valid", [1, 1], None),  # 6 -> 8: Keras 3's own output
    ([None, 13, 13, 3], "valid", [2, 2], None),  # 6 -> 13
    ([None, 14, 13, 3], "valid", [2, 2], [1, 0]),  # TensorFlow accepted 14 too: one more row
    ([None, 12, 12, 3], "same", [2, 2], None),  # 6 -> 12
    ([None, 11, 12, 3], "same", [2, 2], [0, 1]),  # 11 rows from 6: output_padding 0 (and 1 for the 12 columns)
])
def test_deconvolution_output_shape_becomes_output_padding(output, border, subsample, padding):
    config = convert_keras1_config(functional(("d", "Deconvolution2D", {
        "nb_filter": 3, "nb_row": 3, "nb_col": 3, "border_mode": border, "subsample": subsample,
        "dim_ordering": "tf", "output_shape": output}, ["x"])))
    settings = layer(config, "d")["config"]
    assert "output_shape" not in settings and settings.get("output_padding") == padding


def test_full_border_mode_is_refused_by_name():
    with pytest.raises(UnsupportedModel, match=r"'c' \(Convolution2D\) pads with border_mode='full'"):
        convert_keras1_config(functional(("c", "Convolution2D", {"nb_filter": 1, "nb_row": 1, "nb_col": 1,
                                                          "border_mode": "full", "dim_ordering": "tf"}, ["x"])))


# --- dim_ordering that Keras 1.2.2 did not save -------------------------------------------------------------


def test_a_missing_dim_ordering_is_the_one_the_other_layers_state():
    config, changes = converted(functional(
        ("pad", "ZeroPadding2D", {"padding": [1, 0, 2, 1]}, ["x"]),
        ("conv", "Convolution2D", {"nb_filter": 2, "nb_row": 3, "nb_col": 3, "dim_ordering": "th"}, ["pad"])))
    pad = layer(config, "pad")["config"]
    assert pad == {"name": "pad", "padding": [[1, 0], [2, 1]], "data_format": "channels_first"}
    assert "keras1-dim-ordering-inferred" in changes


def test_a_missing_dim_ordering_with_none_stated_is_refused_by_name():
    with pytest.raises(UnsupportedModel) as error:
        convert_keras1_config(functional(("up", "UpSampling2D", {"size": [2, 2]}, ["x"])))
    assert str(error.value) == (
        "The Keras 1 layer 'up' (UpSampling2D) has no dim_ordering in its config: Keras 1.2.2 did not save it for "
        "this class, and the layer used the image_dim_ordering of the keras.json on the machine that built it "
        "('tf' or 'th'), which the file does not say. Expected another layer of the model stating one "
        "dim_ordering (a convolution or pooling layer), which mgpu-io then applies to this one. Received: "
        "dim_ordering missing, and the other layers state none. Rebuild the model in code with that layer's "
        "data_format and load the weights with mgpu_io.transfer_weights, or pass keep_config=True for Keras 1 "
        "with the keras.json it was made with.")


def test_spatial_dropout_without_dim_ordering_loads_since_it_only_changes_training():
    config = convert_keras1_config(functional(("d", "SpatialDropout2D", {"p": 0.5}, ["x"])))
    assert layer(config, "d")["config"] == {"name": "d", "rate": 0.5}


# --- Merge --------------------------------------------------------------------------------------------------


@pytest.mark.parametrize("mode", ["sum", "mul", "ave", "max", "concat"])
def test_each_merge_mode_becomes_its_keras2_layer(mode):
    merge = {"mode": mode, "mode_type": "raw", "concat_axis": 1, "dot_axes": -1, "output_shape": None,
             "output_shape_type": "raw", "output_mask": None, "output_mask_type": "raw", "arguments": {}}
    config, changes = converted(functional(("m", "Merge", merge, ["x", "y"]), inputs=("x", "y")))
    merged = layer(config, "m")
    assert merged["class_name"] == MERGE_MODES[mode] and "keras1-merge" in changes
    assert merged["config"] == ({"name": "m", "axis": 1} if mode == "concat" else {"name": "m"})


def test_dot_merges_of_rank_2_or_3_become_dot():
    merge = {"mode": "dot", "mode_type": "raw", "dot_axes": [1, 1]}
    config = convert_keras1_config(functional(("m", "Merge", merge, ["x", "y"]), inputs=("x", "y")))
    assert layer(config, "m")["class_name"] == "Dot"
    assert layer(config, "m")["config"] == {"name": "m", "axes": [1, 1], "normalize": False}
    sequences = functional(("rx", "RepeatVector", {"n": 4}, ["x"]), ("ry", "RepeatVector", {"n": 4}, ["y"]),
                           ("m", "Merge", dict(merge, dot_axes=[2, 2]), ["rx", "ry"]), inputs=("x", "y"))
    assert layer(convert_keras1_config(sequences), "m")["config"]["axes"] == [2, 2]


def test_a_dot_merge_of_inputs_of_unknown_rank_is_refused():
    config = functional(("l", "Lambda", {"function": ["code", None, None], "function_type": "lambda"}, ["x"]),
                        ("m", "Merge", {"mode": "dot", "mode_type": "raw", "dot_axes": [1, 1]}, ["l", "x"]))
    with pytest.raises(UnsupportedModel, match=r"'m' \(Merge\) merges with mode='dot'.*input ranks unknown"):
        convert_keras1_config(config)


def test_a_cos_merge_is_refused_with_the_reason_and_the_fix():
    merge = {"mode": "cos", "mode_type": "raw", "dot_axes": [1, 1]}
    with pytest.raises(UnsupportedModel) as error:
        convert_keras1_config(functional(("cos", "Merge", merge, ["x", "y"]), inputs=("x", "y")))
    assert str(error.value) == (
        "The Keras 1 layer 'cos' (Merge) merges with mode='cos', which divides by max(sqrt(dot(a, a) * dot(b, b)), "
        "1e-7) where Keras 3's Dot(normalize=True) l2-normalises each input first: the results differ. Expected a "
        "merge mode of ['ave', 'concat', 'dot', 'max', 'mul', 'sum']. Received: mode='cos'. Rebuild that layer in "
        "code and load the weights with mgpu_io.transfer_weights, or pass keep_config=True to write the Keras 1 "
        "config as it is (Keras 1 and 2 can load it).")


def test_a_merge_with_a_function_of_its_own_becomes_the_lambda_that_calls_it_on_the_list_of_inputs():
    merge = {"mode": ["bytecode", None, None], "mode_type": "lambda", "output_shape": [1], "output_shape_type": "raw",
             "output_mask": None, "output_mask_type": "raw", "arguments": {}, "concat_axis": -1, "dot_axes": -1}
    config, changes = converted(functional(("f", "Merge", merge, ["x", "y"]), inputs=("x", "y")))
    layer = config["config"]["layers"][-1]
    assert layer["class_name"] == "Lambda" and "merge-function-as-lambda" in changes
    assert layer["config"] == {"name": "f", "function": ["bytecode", None, None], "function_type": "lambda",
                               "output_shape": [1], "output_shape_type": "raw", "arguments": {}}


def test_a_merge_with_a_function_and_an_output_mask_of_its_own_is_refused_by_name():
    merge = {"mode": ["bytecode", None, None], "mode_type": "lambda", "output_mask": ["mask", None, None],
             "output_mask_type": "lambda"}
    with pytest.raises(UnsupportedModel, match=r"'f' \(Merge\) merges with a Python function and computes its own "
                                               r"output mask.*Received: output_mask_type='lambda'"):
        convert_keras1_config(functional(("f", "Merge", merge, ["x", "y"]), inputs=("x", "y")))


def test_a_sequential_that_merges_sequential_branches_becomes_the_functional_model_keras1_built():
    def dense(name, units, shape=None):
        settings = {"name": name, "output_dim": units, "init": "glorot_uniform", "activation": "linear",
                    "bias": True, "input_dim": None}
        if shape:
            settings.update(batch_input_shape=[None, shape], input_dtype="float32")
        return {"class_name": "Dense", "config": settings}

    branches = [{"class_name": "Sequential", "config": [dense("a", 4, 3)]},
                {"class_name": "Sequential", "config": [dense("b", 3, 2), dense("b2", 3)]}]
    config, changes = converted({"class_name": "Sequential", "config": [
        {"class_name": "Merge", "config": {"name": "merge_1", "mode": "concat", "mode_type": "raw",
                                           "concat_axis": -1, "layers": branches}},
        dense("out", 2)]})
    assert "keras1-sequential-merge" in changes and config["class_name"] == "Model"
    layers = {entry["name"]: entry for entry in config["config"]["layers"]}
    assert config["config"]["input_layers"] == [["a_input", 0, 0], ["b_input", 0, 0]]
    assert config["config"]["output_layers"] == [["out", 0, 0]]
    assert layers["b_input"]["config"] == {"name": "b_input", "batch_input_shape": [None, 2], "dtype": "float32",
                                           "sparse": False}
    assert layers["merge_1"]["class_name"] == "Concatenate"
    assert layers["merge_1"]["inbound_nodes"] == [[["a", 0, 0, {}], ["b2", 0, 0, {}]]]
    assert layers["out"]["inbound_nodes"] == [[["merge_1", 0, 0, {}]]]


# --- inputs that Keras 1 recorded as layers -----------------------------------------------------------------


def test_an_input_recorded_as_a_linear_activation_is_the_input_layer_beneath_it():
    config = functional(("linear", "Activation", {"activation": "linear"}, ["x"]),
                        ("relu", "Activation", {"activation": "relu"}, ["linear"]), outputs=["linear", "relu"])
    config["config"]["input_layers"] = [["linear", 0, 0]]  # as Keras 1.2.2 saved it: linear returned its input
    config, changes = converted(config)
    assert config["config"]["input_layers"] == [["x", 0, 0]] and "keras1-identity-input" in changes
    assert config["config"]["output_layers"] == [["linear", 0, 0], ["relu", 0, 0]]


def test_an_input_recorded_as_a_layer_that_computes_something_is_refused():
    config = functional(("dense", "Dense", {"output_dim": 2}, ["x"]))
    config["config"]["input_layers"] = [["dense", 0, 0]]
    with pytest.raises(UnsupportedModel, match=r"'dense' \(Dense\) is recorded as a model input"):
        convert_keras1_config(config)


# --- other layers --------------------------------------------------------------------------------------------


def test_keras1_regularizers_and_constraints_get_keras2_configs():
    config, changes = converted(functional(("d", "Dense", {
        "output_dim": 4, "W_regularizer": {"name": "L1L2Regularizer", "l1": 0.0, "l2": 0.01},
        "activity_regularizer": {"name": "L1L2Regularizer", "l1": 0.01, "l2": 0.01},
        "W_constraint": {"name": "MaxNorm", "m": 2, "axis": 0}, "b_constraint": {"name": "NonNeg"}}, ["x"])))
    settings = layer(config, "d")["config"]
    assert settings["kernel_regularizer"] == {"class_name": "L1L2", "config": {"l1": 0.0, "l2": 0.01}}
    assert settings["activity_regularizer"] == {"class_name": "L1L2", "config": {"l1": 0.01, "l2": 0.01}}
    assert settings["kernel_constraint"] == {"class_name": "MaxNorm", "config": {"max_value": 2, "axis": 0}}
    assert settings["bias_constraint"] == {"class_name": "NonNeg", "config": {}}
    assert "keras1-regularizers" in changes


def test_an_unknown_keras1_regularizer_is_refused_by_name():
    with pytest.raises(UnsupportedModel, match=r"'d' \(Dense\) has a kernel_regularizer that Keras 3 does not "
                                               r"have.*EigenvalueRegularizer"):
        convert_keras1_config(functional(("d", "Dense", {"output_dim": 4, "W_regularizer": {
            "name": "EigenvalueRegularizer", "k": 0.1}}, ["x"])))


@pytest.mark.parametrize("cls", ["Highway", "MaxoutDense", "SReLU", "ParametricSoftplus", "LocallyConnected1D",
                                 "LocallyConnected2D"])
def test_layers_without_a_keras3_equivalent_are_refused_by_name(cls):
    with pytest.raises(UnsupportedModel) as error:
        convert_keras1_config(functional(("h", cls, {}, ["x"])))
    message = str(error.value)
    assert message.startswith(f"The Keras 1 layer 'h' ({cls}) cannot be converted: Keras 3 has no {cls} layer")
    assert f"Received: class_name='{cls}'" in message and "mgpu_io.transfer_weights" in message


def test_highways_refusal_reads_as_the_keras_idiom():
    with pytest.raises(UnsupportedModel) as error:
        convert_keras1_config(functional(("highway_1", "Highway", {"activation": "tanh"}, ["x"])))
    assert str(error.value) == (
        "The Keras 1 layer 'highway_1' (Highway) cannot be converted: Keras 3 has no Highway layer (Keras 2.2 "
        "removed it). Expected a Keras 1 layer that Keras 3 has. Received: class_name='Highway'. Rebuild that "
        "layer in code and load the weights with mgpu_io.transfer_weights, or pass keep_config=True to write the "
        "Keras 1 config as it is (Keras 1 and 2 can load it).")


@pytest.mark.parametrize("mode", [1, 2])
def test_batchnormalization_modes_1_and_2_are_refused(mode):
    with pytest.raises(UnsupportedModel, match=rf"'bn' \(BatchNormalization\) uses mode={mode}.*Received: "
                                               rf"mode={mode}"):
        convert_keras1_config(functional(("bn", "BatchNormalization", {"mode": mode, "axis": -1}, ["x"])))


def test_embedding_recurrent_and_activation_layers_get_keras2_arguments():
    config = convert_keras1_config(functional(
        ("e", "Embedding", {"input_dim": 10, "output_dim": 3, "init": "uniform", "input_length": 5,
                            "mask_zero": True, "W_regularizer": None, "W_constraint": None, "dropout": 0.0,
                            "batch_input_shape": [None, 5], "input_dtype": "int32"}, ["x"]),
        ("r", "SimpleRNN", {"output_dim": 4, "init": "glorot_uniform", "inner_init": "orthogonal",
                            "activation": "tanh", "U_regularizer": None, "dropout_W": 0.0, "dropout_U": 0.0,
                            "consume_less": "cpu", "input_dim": 3, "input_length": None, "stateful": True}, ["e"]),
        ("l", "LeakyReLU", {"alpha": 0.2}, ["r"]),
        ("n", "GaussianNoise", {"sigma": 0.3}, ["l"]),
        ("u", "UpSampling1D", {"length": 2}, ["n"]),
        ("p", "MaxPooling1D", {"pool_length": 3, "stride": 1, "border_mode": "same"}, ["u"])))
    assert layer(config, "e")["config"] == {"name": "e", "input_dim": 10, "output_dim": 3,
                                            "embeddings_initializer": "uniform", "mask_zero": True,
                                            "embeddings_regularizer": None, "embeddings_constraint": None,
                                            "batch_input_shape": [None, 5]}
    assert layer(config, "r")["config"] == {"name": "r", "units": 4, "kernel_initializer": "glorot_uniform",
                                            "recurrent_initializer": "orthogonal", "activation": "tanh",
                                            "recurrent_regularizer": None, "dropout": 0.0, "recurrent_dropout": 0.0,
                                            "stateful": True}
    assert layer(config, "l")["config"] == {"name": "l", "negative_slope": 0.2}
    assert layer(config, "n")["config"] == {"name": "n", "stddev": 0.3}
    assert layer(config, "u")["config"] == {"name": "u", "size": 2}
    assert layer(config, "p")["config"] == {"name": "p", "pool_size": 3, "strides": 1, "padding": "same"}


def test_time_distributed_dense_is_dense_and_wrapped_layers_are_converted_too():
    config = convert_keras1_config(functional(
        ("tdd", "TimeDistributedDense", {"output_dim": 4, "bias": False, "input_dim": None, "input_length": None},
         ["x"]),
        ("td", "TimeDistributed", {"layer": {"class_name": "Convolution2D", "config": {
            "name": "c", "nb_filter": 2, "nb_row": 3, "nb_col": 3, "dim_ordering": "th"}}}, ["tdd"]),
        ("bi", "Bidirectional", {"merge_mode": "sum", "layer": {"class_name": "GRU", "config": {
            "name": "g", "output_dim": 2, "inner_activation": "sigmoid"}}}, ["td"])))
    assert layer(config, "tdd")["class_name"] == "Dense"
    assert layer(config, "tdd")["config"] == {"name": "tdd", "units": 4, "use_bias": False}
    wrapped = layer(config, "td")["config"]["layer"]
    assert wrapped["class_name"] == "Conv2D" and wrapped["config"]["data_format"] == "channels_first"
    kernel = np.zeros((2, 5, 3, 3))
    notes, (_, (new, _)) = steps("TimeDistributed", {"layer": wrapped}, [kernel, np.zeros(2)])
    assert notes == ["keras1-kernels-transposed"] and new.shape == (3, 3, 5, 2)
    gru = layer(config, "bi")["config"]["layer"]
    assert gru["class_name"] == "GRU" and gru["config"]["reset_after"] is False
    assert gru["config"]["recurrent_activation"] == "sigmoid"


def test_a_bidirectionals_two_copies_keep_distinct_weight_names():
    arrays = [np.full((1, 1), i, "float32") for i in range(9)] * 2
    names = [f"{side}_gru_1_{kind}_{gate}:0" for side in ("forward", "backward") for gate in "zrh"
             for kind in "WUb"]
    layer_config = {"class_name": "Bidirectional", "config": {"name": "bi", "layer": {
        "class_name": "GRU", "config": {"name": "gru_1", "recurrent_activation": "sigmoid"}}}}
    conversion = weight_conversion(layer_config, [a.shape for a in arrays], KERAS1)
    new_names, merged = conversion.apply(names, arrays)
    assert new_names == ["forward_gru_1/kernel:0", "forward_gru_1/recurrent_kernel:0", "forward_gru_1/bias:0",
                         "backward_gru_1/kernel:0", "backward_gru_1/recurrent_kernel:0", "backward_gru_1/bias:0"]
    assert merged[0].ravel().tolist() == [0, 3, 6]


def test_convlstm2d_gates_merge_in_keras2_order_and_th_kernels_are_transposed():
    config = convert_keras1_config(functional(("c", "ConvLSTM2D", {
        "nb_filter": 3, "nb_row": 3, "nb_col": 3, "init": "glorot_uniform", "inner_init": "orthogonal",
        "forget_bias_init": "one", "activation": "tanh", "inner_activation": "sigmoid", "dim_ordering": "th",
        "border_mode": "same", "return_sequences": False, "go_backwards": False, "stateful": False}, ["x"])))
    settings = layer(config, "c")["config"]
    assert settings == {"name": "c", "return_sequences": False, "go_backwards": False, "stateful": False,
                        "filters": 3, "kernel_size": [3, 3], "kernel_initializer": "glorot_uniform",
                        "recurrent_initializer": "orthogonal", "activation": "tanh",
                        "recurrent_activation": "sigmoid", "data_format": "channels_first", "padding": "same",
                        "unit_forget_bias": True}
    gates = []
    for gate in range(4):  # Keras 1 order: i, c, f, o, each (W, U, b); 'th' kernels (filters, input, rows, cols)
        gates += [np.full((3, 2, 3, 3), gate), np.full((3, 3, 3, 3), gate), np.full(3, gate)]
    notes, (_, (kernel, recurrent, bias)) = steps("ConvLSTM2D", settings, gates)
    assert notes == ["keras1-gates-merged"]
    assert kernel.shape == (3, 3, 2, 12) and recurrent.shape == (3, 3, 3, 12)
    assert bias.tolist() == [0] * 3 + [2] * 3 + [1] * 3 + [3] * 3  # i, f, c, o


def test_prelu_gets_the_shared_axes_its_alphas_have():
    settings = convert_keras1_config(functional(("p", "PReLU", {"init": "zero"}, ["x"])))["config"]["layers"][1]
    assert settings["config"] == {"name": "p", "alpha_initializer": "zero"}
    conversion = weight_conversion(settings, [(1, 1, 2)], KERAS1)
    assert conversion.notes == ["keras1-prelu-shared-axes"] and settings["config"]["shared_axes"] == [1, 2]
    unshared = {"class_name": "PReLU", "config": {"name": "q"}}
    assert not weight_conversion(unshared, [(6, 6, 2)], KERAS1) and "shared_axes" not in unshared["config"]


def test_weights_of_keras2_files_are_not_touched():
    notes = weight_conversion({"class_name": "Conv1D", "config": {"name": "c", "filters": 4, "kernel_size": [3]}},
                              [(3, 1, 2, 4), (4,)], Context()).notes
    assert notes == []


def test_every_keras1_rule_is_registered():
    names = {rule.name for rule in keras1.FAMILY.rules + keras1_weights.FAMILY.rules}
    assert names <= set(RULES)
    assert {"keras1-merge", "keras1-sequential-merge", "keras1-identity-input", "keras1-regularizers",
            "keras1-channels-first", "keras1-dim-ordering-inferred", "keras1-kernels-transposed",
            "keras1-prelu-shared-axes"} <= names
