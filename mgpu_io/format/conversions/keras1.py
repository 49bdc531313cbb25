"""Keras 1: configs in the Keras 2 spelling and recurrent weights in the Keras 2 layout, as Keras 2 itself did.

Keras 2 read Keras 1 configs through ``keras/legacy/interfaces.py`` (argument renames such as ``output_dim`` ->
``units``, ``init`` -> ``kernel_initializer``); Keras 3 and tf_keras read none of them. This family applies the same
renames to the layers it knows, and refuses the others by name rather than guessing. A Keras 1 ``LSTM`` stored 12
arrays (``W_i, U_i, b_i, W_c, U_c, b_c, W_f, ...``) and a ``GRU`` 9; Keras 2 concatenates them per kind in the gate
order ``i, f, c, o`` (``z, r, h`` for GRU).
"""

import copy

import numpy as np

from mgpu_io.errors import UnsupportedModel
from mgpu_io.format.config import is_model, layer_name, walk_layers
from mgpu_io.format.conversions.base import Family, Rule

_REGULARIZED = {
    "init": "kernel_initializer",
    "W_regularizer": "kernel_regularizer",
    "b_regularizer": "bias_regularizer",
    "W_constraint": "kernel_constraint",
    "b_constraint": "bias_constraint",
    "bias": "use_bias",
}
_RECURRENT = {
    "output_dim": "units",
    "init": "kernel_initializer",
    "inner_init": "recurrent_initializer",
    "inner_activation": "recurrent_activation",
    "W_regularizer": "kernel_regularizer",
    "U_regularizer": "recurrent_regularizer",
    "b_regularizer": "bias_regularizer",
    "dropout_W": "dropout",
    "dropout_U": "recurrent_dropout",
}
_POOLING = {"border_mode": "padding", "dim_ordering": "data_format"}
_VALUES = {"data_format": {"tf": "channels_last", "th": "channels_first", "default": "channels_last"}}

# Keras 1 class name -> (Keras 2 class name, renamed arguments, arguments Keras 2 dropped). Only classes whose
# conversion is checked against files written by Keras 1.2.2 (fixtures/files/k122_*) are listed.
_CONVERSIONS = {
    "InputLayer": ("InputLayer", {"input_dtype": "dtype"}, ()),
    "Dense": ("Dense", dict(_REGULARIZED, output_dim="units"), ("input_dim",)),
    "Dropout": ("Dropout", {"p": "rate"}, ()),
    "Activation": ("Activation", {}, ()),
    "Flatten": ("Flatten", {}, ()),
    "Reshape": ("Reshape", {}, ()),
    "Convolution2D": ("Conv2D", dict(_REGULARIZED, nb_filter="filters", subsample="strides",
                                     border_mode="padding", dim_ordering="data_format"), ()),
    "MaxPooling2D": ("MaxPooling2D", _POOLING, ()),
    "AveragePooling2D": ("AveragePooling2D", _POOLING, ()),
    "BatchNormalization": ("BatchNormalization", {"beta_init": "beta_initializer",
                                                  "gamma_init": "gamma_initializer"}, ("mode",)),
    "LSTM": ("LSTM", _RECURRENT, ("input_dim", "input_length", "consume_less", "forget_bias_init")),
    "GRU": ("GRU", _RECURRENT, ("input_dim", "input_length", "consume_less")),
}


# Argument names only Keras 1 wrote, and only Keras 2 and later: a config without `keras_version` (a bare
# `model_config` saved to a file) is told apart by them, never by the missing key.
_KERAS1_ARGUMENTS = frozenset({"output_dim", "init", "inner_init", "inner_activation", "nb_filter", "nb_row",
                               "nb_col", "border_mode", "subsample", "dim_ordering", "W_regularizer", "b_regularizer",
                               "W_constraint", "b_constraint", "input_dtype", "consume_less", "dropout_W",
                               "dropout_U", "beta_init", "gamma_init"})
_KERAS2_ARGUMENTS = frozenset({"units", "kernel_initializer", "recurrent_initializer", "recurrent_activation",
                               "filters", "kernel_size", "data_format", "kernel_regularizer", "bias_regularizer",
                               "rate", "use_bias"})  # not `padding` or `strides`: Keras 1 pooling had them too
_KERAS1_CLASSES = frozenset({"Merge", "Convolution1D", "Convolution2D", "Convolution3D", "AtrousConvolution2D",
                             "TimeDistributedDense", "MaxoutDense", "Highway"})


def is_keras1(keras_version, config=None):
    """Whether a file was written by Keras 1.

    By its ``keras_version`` where it has one; otherwise by the config's own structure (Keras 1 argument names and
    classes, such as ``output_dim`` or ``Merge``). A weights-only file without ``keras_version`` and without a
    config is Keras 1's: every later writer recorded the version.

    Example:
        >>> is_keras1("2.2.4"), is_keras1(None)
        (False, True)
        >>> conv = {"class_name": "Sequential", "config": [{"class_name": "Conv1D", "config": {"name": "c",
        ...     "filters": 4, "kernel_size": [3], "padding": "valid"}}]}
        >>> is_keras1(None, conv)
        False
    """
    if keras_version:
        return str(keras_version).startswith("1.")
    if config is None:
        return True
    old = new = False
    for layer in walk_layers(config, wrapped=True):
        arguments = set(layer.get("config") or {}) if isinstance(layer.get("config"), dict) else set()
        old = old or bool(arguments & _KERAS1_ARGUMENTS) or layer.get("class_name") in _KERAS1_CLASSES
        new = new or bool(arguments & _KERAS2_ARGUMENTS)
    return old and not new


def convert_config(model_config):
    """Return a Keras 2 spelling of a Keras 1 model config.

    Raises:
        UnsupportedModel: a layer class has no known conversion.

    Example:
        >>> config = convert_config({"class_name": "Sequential", "config": [{"class_name": "Dense",
        ...     "config": {"name": "d", "output_dim": 2, "init": "glorot_uniform", "input_dim": 3}}]})
        >>> config["config"][0]["config"]
        {'name': 'd', 'units': 2, 'kernel_initializer': 'glorot_uniform'}
    """
    config = copy.deepcopy(model_config)
    _convert_model(config)
    return config


def _convert_model(model):
    for layer in walk_layers(model):
        if not is_model(layer):
            _convert_layer(layer)
        for node in layer.get("inbound_nodes") or []:
            for entry in node:
                if len(entry) == 3:
                    entry.append({})


def _convert_layer(layer):
    name, cls = layer_name(layer), layer["class_name"]
    config = layer["config"]
    if cls not in _CONVERSIONS:
        raise UnsupportedModel(
            f"The Keras 1 layer {name!r} cannot be converted for Keras 3 yet. Expected one of "
            f"{sorted(_CONVERSIONS)}. Received: class_name={cls!r}. Pass --keep-config to write the Keras 1 "
            f"config as it is (Keras 1 and 2 can load it)."
        )
    if config.get("dim_ordering") == "th" or config.get("mode", 0) != 0:
        what = "dim_ordering='th'" if config.get("dim_ordering") == "th" else f"mode={config['mode']}"
        raise UnsupportedModel(
            f"The Keras 1 layer {name!r} uses {what}, which mgpu-io does not convert. Expected "
            f"dim_ordering='tf' and BatchNormalization mode=0. Received: {cls} with {what}. Pass --keep-config "
            f"to write the Keras 1 config as it is."
        )
    new_class, renames, dropped = _CONVERSIONS[cls]
    if cls == "Convolution2D":
        config["kernel_size"] = [config.pop("nb_row"), config.pop("nb_col")]
    if cls == "LSTM":
        config["unit_forget_bias"] = config.get("forget_bias_init") == "one"
    if cls == "GRU":
        config["reset_after"] = False  # Keras 1 and 2 computed GRU this way; Keras 3's default differs
    for old in list(config):
        if old in dropped:
            del config[old]
        elif old in renames:
            config[renames[old]] = config.pop(old)
    for key, values in _VALUES.items():
        if key in config:
            config[key] = values.get(config[key], config[key])
    if "batch_input_shape" in config and cls != "InputLayer":
        config.pop("input_dtype", None)
    layer["class_name"] = new_class


_KERAS1_GATE_ORDER = {  # positions of (kernels, recurrent kernels, biases) in Keras 1's per-gate weight list
    ("LSTM", 12): ([0, 6, 3, 9], [1, 7, 4, 10], [2, 8, 5, 11]),  # i, c, f, o -> i, f, c, o
    ("GRU", 9): ([0, 3, 6], [1, 4, 7], [2, 5, 8]),
}
_STANDARD_NAMES = ("kernel:0", "recurrent_kernel:0", "bias:0")


def merge_gates(cls, count, name):
    """The step that merges Keras 1's per-gate arrays of an LSTM (12) or GRU (9) into Keras 2's three.

    Example:
        >>> arrays = [np.full((1, 1), i) for i in range(9)]
        >>> names, merged = merge_gates("GRU", 9, "g")(None, arrays)
        >>> names, [m.tolist() for m in merged]
        (['g/kernel:0', 'g/recurrent_kernel:0', 'g/bias:0'], [[[0, 3, 6]], [[1, 4, 7]], [[2, 5, 8]]])
    """
    kernels, recurrents, biases = _KERAS1_GATE_ORDER[(cls, count)]

    def merge(names, arrays):
        merged = [np.concatenate([arrays[i] for i in part], axis=-1) for part in (kernels, recurrents, biases)]
        return [f"{name}/{leaf}" for leaf in _STANDARD_NAMES], merged

    return merge


def _rewrite_config(config, context):
    if not context.keras1:
        return []
    _convert_model(config)
    return ["keras1-to-keras2"]


def _weight_steps(layer, shapes, context):
    key = (layer["class_name"], len(shapes))
    if context.keras1 and key in _KERAS1_GATE_ORDER:
        return [("keras1-gates-merged", merge_gates(*key, layer.get("config", {}).get("name")))]
    return []


FAMILY = Family(
    name="keras1",
    summary="Keras 1 configs and recurrent weights in the Keras 2 spelling and layout",
    rules=(
        Rule("keras1-to-keras2", "Keras 1 layers (" + ", ".join(f"`{c}`" for c in sorted(_CONVERSIONS)) + ") "
             "with Keras 1 argument names (`output_dim`, `init`, `nb_filter`, `border_mode`, `inner_activation`, "
             "...) get Keras 2's names; other Keras 1 layers, `dim_ordering='th'` and BatchNormalization "
             "`mode != 0` are refused by name", "not readable by Keras 3 or tf_keras", ("keras122",)),
        Rule("keras1-gates-merged", "Keras 1 LSTM/GRU weights as 12/9 per-gate arrays (`W_i, U_i, b_i, W_c, "
             "...`) become one kernel, recurrent kernel and bias, gates in order `i, f, c, o` (`z, r, h`); Keras 1 "
             "GRUs get `reset_after=False`", "Keras 2 and 3 hold three arrays: a weight-count mismatch",
             ("keras122",)),
    ),
    rewrite_config=_rewrite_config,
    weight_steps=_weight_steps,
)
