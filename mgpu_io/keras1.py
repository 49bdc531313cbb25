"""Convert Keras 1 layer configs to the Keras 2 spelling, as Keras 2's own legacy interfaces did.

Keras 2 read Keras 1 configs through ``keras/legacy/interfaces.py`` (argument renames such as ``output_dim`` ->
``units``, ``init`` -> ``kernel_initializer``); Keras 3 and tf_keras read none of them. This module applies the same
renames to the layers it knows, and refuses the others by name rather than guessing.
"""

import copy

from mgpu_io.errors import UnsupportedModel
from mgpu_io.graph import MODEL_CLASSES, layer_name, model_layers

_DENSE = {
    "output_dim": "units",
    "init": "kernel_initializer",
    "W_regularizer": "kernel_regularizer",
    "b_regularizer": "bias_regularizer",
    "W_constraint": "kernel_constraint",
    "b_constraint": "bias_constraint",
    "bias": "use_bias",
}
# class name -> (renamed arguments, arguments Keras 2 dropped)
_RENAMES = {
    "InputLayer": ({"input_dtype": "dtype"}, ()),
    "Dense": (_DENSE, ("input_dim",)),
    "Dropout": ({"p": "rate"}, ()),
    "Activation": ({}, ()),
    "Flatten": ({}, ()),
    "Reshape": ({}, ()),
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
    if layer["class_name"] not in _RENAMES:
        raise UnsupportedModel(
            f"The Keras 1 layer {layer_name(layer)!r} cannot be converted for Keras 3 yet. Expected one of "
            f"{sorted(_RENAMES)}. Received: class_name={layer['class_name']!r}. Pass --keep-config to write the "
            f"Keras 1 config as it is (Keras 1 and 2 can load it)."
        )
    renames, dropped = _RENAMES[layer["class_name"]]
    config = layer["config"]
    for old in list(config):
        if old in dropped:
            del config[old]
        elif old in renames:
            config[renames[old]] = config.pop(old)
    if "batch_input_shape" in config and layer["class_name"] != "InputLayer":
        config.pop("input_dtype", None)
