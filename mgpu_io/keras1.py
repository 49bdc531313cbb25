"""Convert Keras 1 layer configs to the Keras 2 spelling, as Keras 2's own legacy interfaces did.

Keras 2 read Keras 1 configs through ``keras/legacy/interfaces.py`` (argument renames such as ``output_dim`` ->
``units``, ``init`` -> ``kernel_initializer``); Keras 3 and tf_keras read none of them. This module applies the same
renames to the layers it knows, and refuses the others by name rather than guessing.
"""

import copy

from mgpu_io.errors import UnsupportedModel
from mgpu_io.graph import MODEL_CLASSES, layer_name, model_layers

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


def is_keras1(keras_version):
    """Whether a file's ``keras_version`` attribute says Keras 1 (Keras 1 weights-only files have none at all)."""
    return keras_version is None or str(keras_version).startswith("1.")


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
    for layer in model_layers(model):
        if layer["class_name"] in MODEL_CLASSES:
            _convert_model(layer)
        else:
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
