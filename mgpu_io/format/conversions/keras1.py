"""Keras 1: configs in the Keras 2 spelling and weights in the Keras 2 layout, as Keras 2 itself read them, and more.

Keras 2 read Keras 1 configs through ``keras/legacy/interfaces.py`` (argument renames such as ``output_dim`` ->
``units``, ``init`` -> ``kernel_initializer``) and converted their weights in ``preprocess_weights_for_loading``;
Keras 3 and tf_keras read none of them. This family applies the same renames, layer by layer, checked against
Keras 1.2.2's own source (``layers/*.py``, ``engine/topology.py``) and its files (fixtures/layers/k122), and refuses
by name whatever has no exact Keras 3 equivalent, rather than guessing:

- configs: argument renames; the functional ``merge`` (the ``Merge`` layer) as ``Add``, ``Multiply``, ``Average``,
  ``Maximum``, ``Concatenate`` or ``Dot``; a ``Sequential`` that starts with a ``Merge`` of ``Sequential`` branches
  as the equivalent functional model; ``dim_ordering='th'`` as ``data_format='channels_first'``; Keras 1's
  regularizer and constraint configs; a model input that Keras 1 recorded as the output of a layer returning its
  input unchanged (``Activation('linear')``) as the ``InputLayer`` it is;
- weights: an ``LSTM``/``ConvLSTM2D`` stored as 12 per-gate arrays and a ``GRU`` as 9 become Keras 2's three, gates
  in the order ``i, f, c, o`` (``z, r, h``); ``'th'`` kernels are transposed to Keras' one kernel layout;
  ``Convolution1D`` kernels lose their dummy axis; ``Deconvolution2D`` kernels swap their channel axes.

Keras 1 computed ``'th'`` convolutions on TensorFlow by transposing to ``'tf'`` and back; Keras 3 computes
``channels_first`` directly, which TensorFlow's CPU kernels cannot (``mgpu_io.load_model`` warns there).
"""

import re
from dataclasses import dataclass, field

import numpy as np

from mgpu_io.errors import UnsupportedModel
from mgpu_io.format.config import copy_config, is_model, layer_name, model_layers, walk_layers
from mgpu_io.format.conversions.base import Family, Rule

_DATA_FORMAT = {"tf": "channels_last", "th": "channels_first"}
_FIX = (
    "Rebuild that layer in code and load the weights with mgpu_io.transfer_weights, or pass keep_config=True "
    "to write the Keras 1 config as it is (Keras 1 and 2 can load it)."
)

# --- argument renames, per Keras 1 class (keras/legacy/interfaces.py of Keras 2.1.6, checked against 1.2.2) ---------

_WEIGHTED = {
    "init": "kernel_initializer",
    "W_regularizer": "kernel_regularizer",
    "b_regularizer": "bias_regularizer",
    "W_constraint": "kernel_constraint",
    "b_constraint": "bias_constraint",
    "bias": "use_bias",
}
_CONV = dict(_WEIGHTED, nb_filter="filters", subsample="strides", border_mode="padding", dim_ordering="data_format")
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
_POOLING1D = {"pool_length": "pool_size", "stride": "strides", "border_mode": "padding"}
_ORDERED = {"dim_ordering": "data_format"}
_RNN_DROPPED = ("input_dim", "input_length", "consume_less")

#: Keras 1 class -> (Keras 2/3 class, renamed arguments, arguments dropped). Each is exact: what it drops is
#: Keras 1 bookkeeping (``input_dim``, ``consume_less``: the same arithmetic) or training-only.
_CONVERSIONS = {
    "InputLayer": ("InputLayer", {"input_dtype": "dtype"}, ()),
    "Dense": ("Dense", dict(_WEIGHTED, output_dim="units"), ("input_dim",)),
    "TimeDistributedDense": ("Dense", dict(_WEIGHTED, output_dim="units"), ("input_dim", "input_length")),
    "Dropout": ("Dropout", {"p": "rate"}, ()),
    "SpatialDropout1D": ("SpatialDropout1D", {"p": "rate"}, ()),
    "SpatialDropout2D": ("SpatialDropout2D", {"p": "rate", "dim_ordering": "data_format"}, ()),
    "SpatialDropout3D": ("SpatialDropout3D", {"p": "rate", "dim_ordering": "data_format"}, ()),
    "GaussianNoise": ("GaussianNoise", {"sigma": "stddev"}, ()),
    "GaussianDropout": ("GaussianDropout", {"p": "rate"}, ()),
    "ActivityRegularization": ("ActivityRegularization", {}, ()),
    "Activation": ("Activation", {}, ()),
    "Masking": ("Masking", {}, ()),
    "Flatten": ("Flatten", {}, ()),
    "Reshape": ("Reshape", {}, ()),
    "Permute": ("Permute", {}, ()),
    "RepeatVector": ("RepeatVector", {}, ()),
    "Lambda": ("Lambda", {}, ()),  # Keras 1 and Keras <= 2.1.1 wrote the same keys (legacy-format.md §3.4)
    "Embedding": (
        "Embedding",
        {
            "init": "embeddings_initializer",
            "W_regularizer": "embeddings_regularizer",
            "W_constraint": "embeddings_constraint",
        },
        ("input_length", "dropout"),
    ),
    "LeakyReLU": ("LeakyReLU", {"alpha": "negative_slope"}, ()),
    "PReLU": ("PReLU", {"init": "alpha_initializer"}, ()),
    "ELU": ("ELU", {}, ()),
    "ThresholdedReLU": ("ThresholdedReLU", {}, ()),  # the arguments family makes it ReLU(threshold=theta)
    "BatchNormalization": (
        "BatchNormalization",
        {"beta_init": "beta_initializer", "gamma_init": "gamma_initializer"},
        ("mode",),
    ),
    "Convolution1D": (
        "Conv1D",
        dict(
            _WEIGHTED,
            nb_filter="filters",
            filter_length="kernel_size",
            subsample_length="strides",
            border_mode="padding",
        ),
        ("input_dim", "input_length"),
    ),
    "AtrousConvolution1D": (
        "Conv1D",
        dict(
            _WEIGHTED,
            nb_filter="filters",
            filter_length="kernel_size",
            subsample_length="strides",
            border_mode="padding",
            atrous_rate="dilation_rate",
        ),
        ("input_dim", "input_length"),
    ),
    "Convolution2D": ("Conv2D", _CONV, ()),
    "AtrousConvolution2D": ("Conv2D", dict(_CONV, atrous_rate="dilation_rate"), ()),
    "Deconvolution2D": ("Conv2DTranspose", _CONV, ()),
    "SeparableConvolution2D": (
        "SeparableConv2D",
        {
            "nb_filter": "filters",
            "subsample": "strides",
            "border_mode": "padding",
            "dim_ordering": "data_format",
            "b_regularizer": "bias_regularizer",
            "b_constraint": "bias_constraint",
            "bias": "use_bias",
        },
        (),
    ),
    "Convolution3D": ("Conv3D", _CONV, ()),
    "UpSampling1D": ("UpSampling1D", {"length": "size"}, ()),
    "UpSampling2D": ("UpSampling2D", _ORDERED, ()),
    "UpSampling3D": ("UpSampling3D", _ORDERED, ()),
    "ZeroPadding1D": ("ZeroPadding1D", {}, ()),
    "ZeroPadding2D": ("ZeroPadding2D", _ORDERED, ()),
    "ZeroPadding3D": ("ZeroPadding3D", _ORDERED, ()),
    "Cropping1D": ("Cropping1D", {}, ()),
    "Cropping2D": ("Cropping2D", _ORDERED, ()),
    "Cropping3D": ("Cropping3D", _ORDERED, ()),
    "MaxPooling1D": ("MaxPooling1D", _POOLING1D, ()),
    "AveragePooling1D": ("AveragePooling1D", _POOLING1D, ()),
    "MaxPooling2D": ("MaxPooling2D", _POOLING, ()),
    "AveragePooling2D": ("AveragePooling2D", _POOLING, ()),
    "MaxPooling3D": ("MaxPooling3D", _POOLING, ()),
    "AveragePooling3D": ("AveragePooling3D", _POOLING, ()),
    "GlobalMaxPooling1D": ("GlobalMaxPooling1D", {}, ()),
    "GlobalAveragePooling1D": ("GlobalAveragePooling1D", {}, ()),
    "GlobalMaxPooling2D": ("GlobalMaxPooling2D", _ORDERED, ()),
    "GlobalAveragePooling2D": ("GlobalAveragePooling2D", _ORDERED, ()),
    "GlobalMaxPooling3D": ("GlobalMaxPooling3D", _ORDERED, ()),
    "GlobalAveragePooling3D": ("GlobalAveragePooling3D", _ORDERED, ()),
    "SimpleRNN": ("SimpleRNN", _RECURRENT, _RNN_DROPPED),
    "LSTM": ("LSTM", _RECURRENT, (*_RNN_DROPPED, "forget_bias_init")),
    "GRU": ("GRU", _RECURRENT, _RNN_DROPPED),
    "ConvLSTM2D": (
        "ConvLSTM2D",
        dict(_CONV, **{k: v for k, v in _RECURRENT.items() if k != "output_dim"}),
        ("forget_bias_init",),
    ),
    "TimeDistributed": ("TimeDistributed", {}, ()),
    "Bidirectional": ("Bidirectional", {}, ()),
    "Merge": ("Merge", {}, ()),  # becomes Add, Multiply, Average, Maximum, Concatenate or Dot by its mode
}

#: Keras 1 classes that Keras 3 cannot compute exactly, and why.
_NO_EQUIVALENT = {
    "Highway": "Keras 3 has no Highway layer (Keras 2.2 removed it)",
    "MaxoutDense": "Keras 3 has no MaxoutDense layer (Keras 2.2 removed it)",
    "SReLU": "Keras 3 has no SReLU layer (Keras 2 moved it to keras-contrib)",
    "ParametricSoftplus": "Keras 3 has no ParametricSoftplus layer (Keras 2 moved it to keras-contrib)",
    "LocallyConnected1D": "Keras 3 has no LocallyConnected1D layer (Keras 3 removed it)",
    "LocallyConnected2D": "Keras 3 has no LocallyConnected2D layer (Keras 3 removed it)",
}

#: Keras 1 classes whose config never stored ``dim_ordering`` (their ``get_config`` left it out): the layer took
#: ``image_dim_ordering()`` from the keras.json of whichever machine built it.
_ORDERING_NOT_STORED = (
    "UpSampling2D",
    "UpSampling3D",
    "ZeroPadding2D",
    "ZeroPadding3D",
    "Cropping2D",
    "Cropping3D",
    "SpatialDropout2D",
    "SpatialDropout3D",
)
_DROPOUT_ONLY = ("SpatialDropout2D", "SpatialDropout3D")  # the ordering changes training only, never predictions

#: Keras 1 merge modes and the Keras 2/3 layer that computes each exactly.
MERGE_MODES = {
    "sum": "Add",
    "mul": "Multiply",
    "ave": "Average",
    "max": "Maximum",
    "concat": "Concatenate",
    "dot": "Dot",
}
_MERGE_KEYS = (
    "mode",
    "mode_type",
    "concat_axis",
    "dot_axes",
    "output_shape",
    "output_shape_type",
    "output_mask",
    "output_mask_type",
    "arguments",
    "node_indices",
    "tensor_indices",
    "layers",
)

#: Keras 1 regularizer and constraint configs (``{"name": ..., ...}``) in Keras 2's spelling.
_KERAS1_OBJECTS = {
    "L1L2Regularizer": ("L1L2", {"l1": "l1", "l2": "l2"}),
    "WeightRegularizer": ("L1L2", {"l1": "l1", "l2": "l2"}),  # Keras 1.0 and 1.1: the same penalty
    "ActivityRegularizer": ("L1L2", {"l1": "l1", "l2": "l2"}),
    "MaxNorm": ("MaxNorm", {"m": "max_value", "axis": "axis"}),
    "NonNeg": ("NonNeg", {}),
    "UnitNorm": ("UnitNorm", {"axis": "axis"}),
    "MinMaxNorm": ("MinMaxNorm", {"low": "min_value", "high": "max_value", "rate": "rate", "axis": "axis"}),
}

# Argument names only Keras 1 wrote, and only Keras 2 and later: a config without `keras_version` (a bare
# `model_config` saved to a file) is told apart by them, never by the missing key.
_KERAS1_ARGUMENTS = frozenset(
    {
        "output_dim",
        "init",
        "inner_init",
        "inner_activation",
        "nb_filter",
        "nb_row",
        "nb_col",
        "border_mode",
        "subsample",
        "dim_ordering",
        "W_regularizer",
        "b_regularizer",
        "W_constraint",
        "b_constraint",
        "input_dtype",
        "consume_less",
        "dropout_W",
        "dropout_U",
        "beta_init",
        "gamma_init",
    }
)
_KERAS2_ARGUMENTS = frozenset(
    {
        "units",
        "kernel_initializer",
        "recurrent_initializer",
        "recurrent_activation",
        "filters",
        "kernel_size",
        "data_format",
        "kernel_regularizer",
        "bias_regularizer",
        "rate",
        "use_bias",
    }
)  # not `padding` or `strides`: Keras 1 pooling had them too
_KERAS1_CLASSES = frozenset(
    {
        "Merge",
        "Convolution1D",
        "Convolution2D",
        "Convolution3D",
        "AtrousConvolution2D",
        "TimeDistributedDense",
        "MaxoutDense",
        "Highway",
    }
)


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
        UnsupportedModel: a layer has no exact conversion (named in the message, with the reason and the fix).

    Example:
        >>> config = convert_config({"class_name": "Sequential", "config": [{"class_name": "Dense",
        ...     "config": {"name": "d", "output_dim": 2, "init": "glorot_uniform", "input_dim": 3}}]})
        >>> config["config"][0]["config"]
        {'name': 'd', 'units': 2, 'kernel_initializer': 'glorot_uniform'}
    """
    config = copy_config(model_config)
    _convert_model(config)
    return config


def refusal(name, cls, problem, expected, received, fix=_FIX):
    """The :class:`UnsupportedModel` for one Keras 1 layer, in the Keras idiom.

    Example:
        >>> print(refusal("h", "Highway", "is gone", "a layer Keras 3 has", "class_name='Highway'", "Rebuild it."))
        The Keras 1 layer 'h' (Highway) is gone. Expected a layer Keras 3 has. Received: class_name='Highway'. ...
    """
    return UnsupportedModel(
        f"The Keras 1 layer {name!r} ({cls}) {problem}. Expected {expected}. Received: {received}. {fix}"
    )


def _convert_model(config):
    """Convert a Keras 1 model config in place; return the names of the rules applied."""
    changes = ["keras1-to-keras2"]
    if config.get("class_name") == "Sequential" and _starts_with_merge(config):
        _merged_sequential_as_functional(config)
        changes.append("keras1-sequential-merge")
    for model in [config] + [layer for layer in walk_layers(config) if is_model(layer)]:
        if model.get("class_name") == "Sequential" and _starts_with_merge(model):
            first = model_layers(model)[0]
            raise refusal(
                layer_name(first),
                "Merge",
                "merges the branches of a nested Sequential",
                "a Merge of branches only at the start of the outermost Sequential",
                f"a Sequential {model.get('name') or ''!r} inside the model, starting with a Merge",
            )
        if model.get("class_name") == "Model" and _inputs_through_identity(model):
            changes.append("keras1-identity-input")
    scope = _Scope(orderings=_stated_orderings(config), ranks=_dot_input_ranks(config))
    for layer in walk_layers(config):
        if not is_model(layer):
            _convert_layer(layer, scope)
        for node in layer.get("inbound_nodes") or []:
            for entry in node:
                if len(entry) == 3:
                    entry.append({})
    return list(dict.fromkeys(changes + scope.changes))


@dataclass
class _Scope:
    """What converting one layer may need to know about the whole model, and the rules it applied.

    Attributes:
        orderings: the ``dim_ordering`` values that the model's layers state (``{"th"}``, ``{"tf"}``, ...).
        ranks: ``{Merge layer name: [rank of each input]}`` of the ``dot`` merges whose input ranks are known.
        changes: the names of the rules applied, in order.
    """

    orderings: set
    ranks: dict
    changes: list = field(default_factory=list)


def _convert_layer(layer, scope):
    name, cls = layer_name(layer), layer["class_name"]
    config = layer["config"]
    if cls in _NO_EQUIVALENT:
        raise refusal(
            name,
            cls,
            f"cannot be converted: {_NO_EQUIVALENT[cls]}",
            "a Keras 1 layer that Keras 3 has",
            f"class_name={cls!r}",
        )
    if cls not in _CONVERSIONS:
        raise UnsupportedModel(
            f"The Keras 1 layer {name!r} ({cls}) cannot be converted for Keras 3: mgpu-io knows no such Keras 1 "
            f"class (a custom layer?). Expected one of {sorted(_CONVERSIONS)}. Received: class_name={cls!r}. "
            f"{_FIX}"
        )
    new_class, renames, dropped = _CONVERSIONS[cls]
    _check_modes(name, cls, config)
    _ordering(name, cls, config, scope)
    if cls == "Merge":
        new_class = _merge(name, config, scope)
    elif cls in ("Convolution2D", "AtrousConvolution2D", "Deconvolution2D", "SeparableConvolution2D", "ConvLSTM2D"):
        config["kernel_size"] = [config.pop("nb_row"), config.pop("nb_col")]
    elif cls == "Convolution3D":
        config["kernel_size"] = [config.pop(f"kernel_dim{i}") for i in (1, 2, 3)]
    elif cls in ("Convolution1D", "AtrousConvolution1D"):  # Keras 2 wrote 1-tuples
        for key in ("filter_length", "subsample_length", "atrous_rate"):
            if isinstance(config.get(key), int):
                config[key] = [config[key]]
    if cls == "Deconvolution2D":
        _deconvolution_output(name, config)
    if cls == "SeparableConvolution2D":
        init = config.pop("init", "glorot_uniform")
        config.update(depthwise_initializer=init, pointwise_initializer=init)
    if cls in ("LSTM", "ConvLSTM2D"):
        config["unit_forget_bias"] = config.get("forget_bias_init") == "one"
    if cls == "GRU":
        config["reset_after"] = False  # Keras 1 and 2 computed GRU this way; Keras 3's default differs
    if cls == "ZeroPadding1D" and isinstance(config.get("padding"), dict):
        config["padding"] = [config["padding"].get("left_pad", 0), config["padding"].get("right_pad", 0)]
    if cls == "ZeroPadding2D":
        config["padding"] = _padding2d(config.get("padding", [1, 1]))
    for old in list(config):
        if old in dropped:
            del config[old]
        elif old in renames and renames[old] != old:
            config[renames[old]] = config.pop(old)
    if "data_format" in config:
        config["data_format"] = _DATA_FORMAT.get(config["data_format"], config["data_format"])
    if config.get("data_format") == "channels_first":
        scope.changes.append("keras1-channels-first")
    if "batch_input_shape" in config and cls != "InputLayer":
        config.pop("input_dtype", None)
    _keras2_objects(name, cls, config, scope)
    for key in ("layer",):  # TimeDistributed and Bidirectional: the wrapped layer is a Keras 1 layer too
        if isinstance(config.get(key), dict) and "class_name" in config[key]:
            _convert_layer(config[key], scope)
    layer["class_name"] = new_class


def _check_modes(name, cls, config):
    """Refuse Keras 1 options that Keras 3 cannot compute."""
    if cls == "BatchNormalization" and config.get("mode", 0) != 0:
        why = (
            (
                "normalises each sample by its own mean and (std + epsilon): Keras 3's LayerNormalization divides "
                "by sqrt(var + epsilon)"
            )
            if config["mode"] == 1
            else "normalises with the statistics of each batch, at prediction too: Keras 3 uses its moving averages"
        )
        raise refusal(
            name,
            cls,
            f"uses mode={config['mode']}, which {why}",
            "mode=0 (feature-wise, moving averages at prediction)",
            f"mode={config['mode']}",
        )
    if config.get("border_mode") == "full":
        raise refusal(
            name,
            cls,
            "pads with border_mode='full' (Theano only), which Keras 3 does not have",
            "border_mode='valid' or 'same'",
            "border_mode='full'",
        )
    if cls == "Bidirectional" and config.get("merge_mode") not in ("sum", "mul", "ave", "concat", None):
        raise refusal(
            name,
            cls,
            "has an unknown merge_mode",
            "one of 'sum', 'mul', 'ave', 'concat' or None",
            f"merge_mode={config.get('merge_mode')!r}",
        )


def _ordering(name, cls, config, scope):
    """Fill in ``dim_ordering`` where Keras 1 left it out of the config, or refuse where it cannot be known."""
    if "dim_ordering" not in _CONVERSIONS[cls][1] or config.get("dim_ordering") in _DATA_FORMAT:
        return
    config.pop("dim_ordering", None)
    if len(scope.orderings) == 1:
        config["dim_ordering"] = next(iter(scope.orderings))
        scope.changes.append("keras1-dim-ordering-inferred")
    elif cls not in _DROPOUT_ONLY:
        stated = sorted(scope.orderings) or "none"
        saved = (
            "Keras 1.2.2 did not save it for this class"
            if cls in _ORDERING_NOT_STORED
            else "the writer did not save it"
        )
        raise refusal(
            name,
            cls,
            f"has no dim_ordering in its config: {saved}, and the layer used the image_dim_ordering of "
            "the keras.json on the machine that built it ('tf' or 'th'), which the file does not say",
            "another layer of the model stating one dim_ordering (a convolution or pooling layer), which mgpu-io "
            "then applies to this one",
            f"dim_ordering missing, and the other layers state {stated}",
            "Rebuild the model in code with that layer's data_format and load the weights with "
            "mgpu_io.transfer_weights, or pass keep_config=True for Keras 1 with the keras.json it was made with.",
        )


def _stated_orderings(config):
    return {
        layer["config"]["dim_ordering"]
        for layer in walk_layers(config, wrapped=True)
        if isinstance(layer.get("config"), dict) and layer["config"].get("dim_ordering") in _DATA_FORMAT
    }


def _padding2d(padding):
    """Keras 1's ZeroPadding2D ``padding`` (2 or 4 numbers, or a dict) as Keras 2's ``((top, bottom), (left, right))``.

    Example:
        >>> _padding2d([1, 0, 2, 1]), _padding2d([1, 2]), _padding2d({"top_pad": 1, "right_pad": 3})
        ([[1, 0], [2, 1]], [[1, 1], [2, 2]], [[1, 0], [0, 3]])
    """
    if isinstance(padding, dict):
        return [
            [padding.get("top_pad", 0), padding.get("bottom_pad", 0)],
            [padding.get("left_pad", 0), padding.get("right_pad", 0)],
        ]
    if len(padding) == 4:
        return [[padding[0], padding[1]], [padding[2], padding[3]]]
    return [[padding[0], padding[0]], [padding[1], padding[1]]]


def _keras2_objects(name, cls, config, scope):
    """Keras 1's regularizer and constraint configs (``{"name": "L1L2Regularizer", ...}``) in Keras 2's spelling."""
    for key, value in list(config.items()):
        if not (key.endswith(("_regularizer", "_constraint")) and isinstance(value, dict) and "name" in value):
            continue
        known = _KERAS1_OBJECTS.get(value["name"])
        extra = set(value) - {"name"} - set(known[1] if known else ())
        if known is None or extra:
            raise refusal(
                name,
                cls,
                f"has a {key} that Keras 3 does not have",
                f"one of {sorted(_KERAS1_OBJECTS)}",
                f"{key}={value!r}",
                "Rebuild that layer in code with a Keras 3 "
                "regularizer or constraint and load the weights with mgpu_io.transfer_weights, or pass "
                "keep_config=True to write the Keras 1 config as it is.",
            )
        new_class, arguments = known
        config[key] = {"class_name": new_class, "config": {arguments[k]: v for k, v in value.items() if k != "name"}}
        scope.changes.append("keras1-regularizers")


# --- Merge ------------------------------------------------------------------------------------------------------


def _merge(name, config, scope):
    """The Keras 2/3 class of a Keras 1 ``Merge`` layer; its config is rewritten for that class."""
    mode, mode_type = config.get("mode", "sum"), config.get("mode_type", "raw")
    if mode_type != "raw":
        raise refusal(
            name,
            "Merge",
            f"merges with a Python function of its own (mode_type={mode_type!r}), which Keras 3 has no merge layer for",
            f"a merge mode of {sorted(MERGE_MODES)}",
            f"mode_type={mode_type!r}",
            "Rebuild that layer in code (a "
            "Lambda on the list of inputs, or a Keras 3 merge layer) and load the weights with "
            "mgpu_io.transfer_weights, or pass keep_config=True to write the Keras 1 config as it is.",
        )
    if mode not in MERGE_MODES:
        why = (
            (
                "divides by max(sqrt(dot(a, a) * dot(b, b)), 1e-7) where Keras 3's Dot(normalize=True) "
                "l2-normalises each input first: the results differ"
            )
            if mode == "cos"
            else "is not a Keras 1 mode"
        )
        raise refusal(
            name,
            "Merge",
            f"merges with mode={mode!r}, which {why}",
            f"a merge mode of {sorted(MERGE_MODES)}",
            f"mode={mode!r}",
        )
    settings = {"name": config["name"]}
    if mode == "concat":
        settings["axis"] = config.get("concat_axis", -1)
    if mode == "dot":
        settings.update(axes=_dot_axes(name, config, scope), normalize=False)
    for key in _MERGE_KEYS:
        config.pop(key, None)
    config.update(settings)
    scope.changes.append("keras1-merge")
    return MERGE_MODES[mode]


def _dot_axes(name, config, scope):
    """Keras 1's ``dot_axes`` where Keras 3's ``Dot`` contracts the same axes: inputs of rank 2 or 3 only.

    Keras 1 computed ``dot`` with ``tf.matmul`` and adjoint flags, which contracts the named axes of rank-2 and
    rank-3 inputs only; on rank 4 and above it contracts other axes than Keras 3's ``batch_dot``.
    """
    axes = config.get("dot_axes", -1)
    ranks = scope.ranks.get(name)
    if not ranks or any(rank not in (2, 3) for rank in ranks) or len(set(ranks)) != 1:
        raise refusal(
            name,
            "Merge",
            "merges with mode='dot', which Keras 1 computed with tf.matmul: equal to "
            "Keras 3's Dot for inputs of rank 2 or 3 only, and the rank of these inputs cannot be told "
            "from the config",
            "inputs of rank 2 or 3 whose shapes the config fixes",
            f"mode='dot', dot_axes={axes!r}, input ranks {ranks or 'unknown'}",
        )
    if isinstance(axes, int):
        axes = [axes % ranks[0], axes % ranks[1]] if axes < 0 else [axes, axes]
    return list(axes)


_SAME_RANK = frozenset(
    {
        "Dense",
        "Activation",
        "Dropout",
        "SpatialDropout1D",
        "SpatialDropout2D",
        "SpatialDropout3D",
        "GaussianNoise",
        "GaussianDropout",
        "ActivityRegularization",
        "Masking",
        "BatchNormalization",
        "LeakyReLU",
        "PReLU",
        "ELU",
        "ThresholdedReLU",
        "Highway",
        "MaxoutDense",
        "TimeDistributedDense",
        "Convolution1D",
        "AtrousConvolution1D",
        "Convolution2D",
        "AtrousConvolution2D",
        "Deconvolution2D",
        "SeparableConvolution2D",
        "Convolution3D",
        "UpSampling1D",
        "UpSampling2D",
        "UpSampling3D",
        "ZeroPadding1D",
        "ZeroPadding2D",
        "ZeroPadding3D",
        "Cropping1D",
        "Cropping2D",
        "Cropping3D",
        "MaxPooling1D",
        "AveragePooling1D",
        "MaxPooling2D",
        "AveragePooling2D",
        "MaxPooling3D",
        "AveragePooling3D",
    }
)


def _dot_input_ranks(config):
    """``{Merge layer name: [rank of each input]}`` for the ``dot`` merges of a functional config (Keras 1 form)."""
    if config.get("class_name") != "Model":
        return {}
    layers = {layer_name(layer): layer for layer in model_layers(config)}
    ranks = {}
    for name, layer in layers.items():
        settings = layer.get("config") or {}
        if layer.get("class_name") == "Merge" and settings.get("mode") == "dot" and layer.get("inbound_nodes"):
            ranks[name] = [_rank(layers, entry, set()) for entry in layer["inbound_nodes"][0]]
    return {name: found for name, found in ranks.items() if None not in found}


def _rank(layers, entry, seen):
    """The rank of the tensor ``entry`` (``[layer, node, tensor]``) of a Keras 1 functional config, or ``None``."""
    name, node = entry[0], entry[1]
    layer = layers.get(name)
    if layer is None or (name, node) in seen:
        return None
    seen.add((name, node))
    cls, settings = layer.get("class_name"), layer.get("config") or {}
    if cls == "InputLayer":
        return len(settings.get("batch_input_shape") or []) or None
    if cls in (
        "Flatten",
        "GlobalMaxPooling1D",
        "GlobalAveragePooling1D",
        "GlobalMaxPooling2D",
        "GlobalAveragePooling2D",
        "GlobalMaxPooling3D",
        "GlobalAveragePooling3D",
    ):
        return 2
    if cls == "RepeatVector":
        return 3
    if cls == "Reshape":
        return len(settings.get("target_shape") or []) + 1
    if cls == "Permute":
        return len(settings.get("dims") or []) + 1
    if cls in ("SimpleRNN", "LSTM", "GRU"):
        return 3 if settings.get("return_sequences") else 2
    nodes = layer.get("inbound_nodes") or []
    if node >= len(nodes) or not nodes[node]:
        return None
    below = _rank(layers, nodes[node][0], seen)
    if below is None:
        return None
    if cls in _SAME_RANK or (cls == "Merge" and settings.get("mode") in ("sum", "mul", "ave", "max", "concat")):
        return below
    if cls == "Embedding":
        return below + 1
    return None


# --- the Keras 1 Sequential that starts with a Merge of Sequential branches ----------------------------------


def _starts_with_merge(model):
    layers = model_layers(model)
    return (
        bool(layers) and layers[0].get("class_name") == "Merge" and bool((layers[0].get("config") or {}).get("layers"))
    )


def _merged_sequential_as_functional(model):
    """Rewrite ``Sequential([Merge([branch, ...]), layer, ...])`` as the functional model Keras 1 built from it.

    Keras 1 fed such a model one input per branch, in branch order, and kept every layer's weights under its own
    name (the branches' layers at the top level), as the functional model's layers are.
    """
    layers, inputs = [], []

    def chain(entries):
        first = entries[0]
        if first.get("class_name") == "Merge" and (first.get("config") or {}).get("layers"):
            sources = []
            for branch in first["config"]["layers"]:
                if branch.get("class_name") != "Sequential" or not model_layers(branch):
                    raise refusal(
                        layer_name(first),
                        "Merge",
                        "merges a branch that is not a Sequential model",
                        "Sequential branches",
                        f"a branch of class_name={branch.get('class_name')!r}",
                    )
                sources.append(chain(model_layers(branch)))
            merge = {
                "name": layer_name(first),
                "class_name": "Merge",
                "config": first["config"],
                "inbound_nodes": [[[source, 0, 0] for source in sources]],
            }
            layers.append(merge)
            previous, rest = merge["name"], entries[1:]
        else:
            settings = first.get("config") or {}
            if "batch_input_shape" not in settings:
                raise refusal(
                    layer_name(first),
                    first.get("class_name"),
                    "starts a branch of a Merge without an input shape",
                    "batch_input_shape on the first layer of each branch",
                    "no batch_input_shape",
                )
            previous = f"{layer_name(first)}_input"
            layers.append(
                {
                    "name": previous,
                    "class_name": "InputLayer",
                    "inbound_nodes": [],
                    "config": {
                        "name": previous,
                        "batch_input_shape": settings.pop("batch_input_shape"),
                        "input_dtype": settings.pop("input_dtype", "float32"),
                        "sparse": False,
                    },
                }
            )
            inputs.append([previous, 0, 0])
            rest = entries
        for entry in rest:
            if entry.get("class_name") in ("Merge", "Sequential", "Model"):
                raise refusal(
                    layer_name(entry),
                    entry.get("class_name"),
                    "follows the start of a merged Sequential branch",
                    "a Merge only as the first layer of a Sequential",
                    f"class_name={entry.get('class_name')!r}",
                )
            layer = dict(entry, name=layer_name(entry), inbound_nodes=[[[previous, 0, 0]]])
            layers.append(layer)
            previous = layer["name"]
        return previous

    output = chain(model_layers(model))
    name = model.get("name") or (model["config"].get("name") if isinstance(model["config"], dict) else None)
    model["class_name"] = "Model"
    model["config"] = {
        "name": name or "sequential",
        "layers": layers,
        "input_layers": inputs,
        "output_layers": [[output, 0, 0]],
    }


# --- inputs that Keras 1 recorded as the output of a layer that returned its input ---------------------------


_IDENTITY_AT_PREDICTION = (
    "ActivityRegularization",
    "Dropout",
    "SpatialDropout1D",
    "SpatialDropout2D",
    "SpatialDropout3D",
    "GaussianNoise",
    "GaussianDropout",
)


def _identity_at_prediction(layer):
    """Whether the layer predicts its input unchanged. Keras 1's ``call`` of such a layer could return the very
    tensor it was given (``Activation('linear')``, ``ActivityRegularization``; any of them under a fixed learning
    phase), and Keras 1 then overwrote that tensor's ``_keras_history``: a model built on the tensor records the
    layer as its input."""
    cls, settings = layer.get("class_name"), layer.get("config") or {}
    return cls in _IDENTITY_AT_PREDICTION or (cls == "Activation" and settings.get("activation") == "linear")


def _inputs_through_identity(model):
    """Point every model input that Keras 1 recorded as such a layer's output at the InputLayer beneath it.

    Returns whether any was changed. Exact: the layers passed over predict their input unchanged, and stay in
    the graph.
    """
    layers = {layer_name(layer): layer for layer in model_layers(model)}
    changed = False
    refs = model["config"].get("input_layers") or []
    for index, ref in enumerate(refs):
        current, path = list(ref[:3]), []
        while layers.get(current[0], {}).get("class_name") not in ("InputLayer", None):
            layer = layers[current[0]]
            nodes = layer.get("inbound_nodes") or []
            if (
                not _identity_at_prediction(layer)
                or current[1] >= len(nodes)
                or len(nodes[current[1]]) != 1
                or len(path) > len(layers)
            ):
                raise refusal(
                    current[0],
                    layer.get("class_name"),
                    "is recorded as a model input, which only an InputLayer can be in Keras 3",
                    "model inputs that are InputLayers, or layers that "
                    "Keras 1 let return their input unchanged (Activation('linear'))",
                    f"input_layers={refs!r}",
                    "Rebuild the model in code with an Input there and load "
                    "the weights with mgpu_io.transfer_weights, or pass keep_config=True for Keras 1.",
                )
            path.append(current[0])
            current = list(nodes[current[1]][0][:3])
        if path:
            refs[index] = current
            changed = True
    return changed


# --- Deconvolution2D's output shape -------------------------------------------------------------------------


def _deconvolution_output(name, config):
    """Keras 1's explicit ``output_shape`` as Keras 3's ``output_padding``, where it is not Keras 3's default.

    TensorFlow's transposed convolution, which Keras 1 called with ``output_shape``, requires the forward
    convolution of that shape to give the input, so the input size follows from ``output_shape``; Keras 3 computes
    the output from the input and ``output_padding`` (``keras/src/backend/common/backend_utils.py``).
    """
    shape = config.pop("output_shape", None)
    if not shape:
        return
    spatial = shape[2:4] if config.get("dim_ordering") == "th" else shape[1:3]
    kernel, strides = config["kernel_size"], list(config.get("subsample") or (1, 1))
    padding, defaults, paddings = config.get("border_mode", "valid"), [], []
    for out, k, s in zip(spatial, kernel, strides):
        if out is None:
            raise refusal(
                name,
                "Deconvolution2D",
                "has an output_shape without its spatial size",
                "an output_shape fixing rows and columns",
                f"output_shape={shape!r}",
            )
        size = (out - k + 1) if padding == "valid" else out
        size = (size + s - 1) // s  # the input size that TensorFlow accepted for this output
        if padding == "valid":
            defaults.append((size - 1) * s + max(k, s))
            paddings.append(out - ((size - 1) * s + k))
        else:
            defaults.append(size * s)
            paddings.append(out - ((size - 1) * s + k % 2))
    if list(spatial) == defaults:
        return
    if not all(0 <= p < s for p, s in zip(paddings, strides)):
        raise refusal(
            name,
            "Deconvolution2D",
            "has an output_shape that Keras 3 cannot produce",
            "an output size that Keras 3 reaches with an output_padding below the stride",
            f"output_shape={shape!r}, kernel {kernel}, strides {strides}, border_mode={padding!r}",
        )
    config["output_padding"] = paddings


# --- weights ----------------------------------------------------------------------------------------------------

_KERAS1_GATE_ORDER = {  # positions of (kernels, recurrent kernels, biases) in Keras 1's per-gate weight list
    ("LSTM", 12): ([0, 6, 3, 9], [1, 7, 4, 10], [2, 8, 5, 11]),  # i, c, f, o -> i, f, c, o
    ("ConvLSTM2D", 12): ([0, 6, 3, 9], [1, 7, 4, 10], [2, 8, 5, 11]),
    ("GRU", 9): ([0, 3, 6], [1, 4, 7], [2, 5, 8]),
}
_STANDARD_NAMES = ("kernel:0", "recurrent_kernel:0", "bias:0")
_TH_KERNEL = {4: (2, 3, 1, 0), 5: (2, 3, 4, 1, 0)}  # Keras 1 'th' (out, in, *spatial) -> (*spatial, in, out)


def merge_gates(cls, count, name, transpose=None):
    """The step that merges Keras 1's per-gate arrays of an LSTM or ConvLSTM2D (12) or GRU (9) into Keras 2's three.

    ``transpose`` (a ConvLSTM2D with ``dim_ordering='th'``) reorders the axes of each kernel first.

    Example:
        >>> arrays = [np.full((1, 1), i) for i in range(9)]
        >>> names, merged = merge_gates("GRU", 9, "g")(None, arrays)
        >>> names, [m.tolist() for m in merged]
        (['g/kernel:0', 'g/recurrent_kernel:0', 'g/bias:0'], [[[0, 3, 6]], [[1, 4, 7]], [[2, 5, 8]]])
    """
    kernels, recurrents, biases = _KERAS1_GATE_ORDER[(cls, count)]

    def merge(names, arrays):
        arrays = [np.transpose(a, transpose) if transpose and a.ndim == len(transpose) else a for a in arrays]
        merged = [np.concatenate([arrays[i] for i in part], axis=-1) for part in (kernels, recurrents, biases)]
        stored = re.fullmatch(r"(.+)_W_[a-z](:\d+)?", str(names[kernels[0]])) if names else None
        prefix = stored.group(1) if stored else name  # a Bidirectional's two copies: forward_..., backward_...
        return [f"{prefix}/{leaf}" for leaf in _STANDARD_NAMES], merged

    return merge


def transpose_kernels(axes, count=1):
    """The step that reorders the axes of the first ``count`` arrays (kernels), leaving the rest (bias) as stored.

    Example:
        >>> names, (kernel, bias) = transpose_kernels((2, 3, 1, 0))(["w", "b"], [np.zeros((4, 2, 3, 3)), np.zeros(4)])
        >>> kernel.shape, bias.shape
        ((3, 3, 2, 4), (4,))
    """

    def transpose(names, arrays):
        return names, [np.transpose(a, axes) if i < count else a for i, a in enumerate(arrays)]

    return transpose


def conv1d_kernel(kernel_size, filters):
    """The step that gives a Keras 1 ``Convolution1D`` kernel Keras 2's shape ``(length, input_dim, filters)``.

    Keras 1.2 stored ``(length, 1, input_dim, filters)`` (a 2-D convolution over a dummy axis), Keras 1.1
    ``(filters, input_dim, length, 1)``; Keras 2's loader told them apart the same way.

    Example:
        >>> names, (kernel, bias) = conv1d_kernel(3, 4)(["w", "b"], [np.zeros((3, 1, 2, 4)), np.zeros(4)])
        >>> kernel.shape
        (3, 2, 4)
    """

    def squeeze(names, arrays):
        kernel = arrays[0]
        if not (kernel.shape[:2] == (kernel_size, 1) and kernel.shape[3] == filters):
            kernel = np.transpose(kernel, (2, 3, 1, 0))  # Keras 1.1: (filters, input_dim, length, 1)
        return names, [kernel[:, 0, :, :], *list(arrays[1:])]

    return squeeze


def _first(value):
    return value[0] if isinstance(value, (list, tuple)) else value


def _weight_steps(layer, shapes, context):
    if not context.keras1:
        return []
    cls, config = layer["class_name"], layer.get("config") or {}
    channels_first = config.get("data_format") == "channels_first"
    key = (cls, len(shapes))
    if key in _KERAS1_GATE_ORDER:
        transpose = _TH_KERNEL[4] if cls == "ConvLSTM2D" and channels_first else None
        return [("keras1-gates-merged", merge_gates(*key, config.get("name"), transpose))]
    if not shapes:
        return []
    rank = len(shapes[0])
    if cls == "Conv1D" and rank == 4:
        return [("keras1-kernels-transposed", conv1d_kernel(_first(config.get("kernel_size")), config.get("filters")))]
    if cls in ("Conv2D", "Conv3D") and channels_first and rank in _TH_KERNEL:
        return [("keras1-kernels-transposed", transpose_kernels(_TH_KERNEL[rank]))]
    if cls == "SeparableConv2D" and channels_first and rank == 4:
        return [("keras1-kernels-transposed", transpose_kernels(_TH_KERNEL[4], count=2))]
    if cls == "Conv2DTranspose" and rank == 4:  # Keras 1 kept (rows, cols, input, filters); TF wants them swapped
        return [("keras1-kernels-transposed", transpose_kernels((2, 3, 0, 1) if channels_first else (0, 1, 3, 2)))]
    if cls == "PReLU" and "shared_axes" not in config and 1 in shapes[0]:
        # Keras 1.2.2 saved no shared_axes (Keras 1.2.2 itself cannot reload such a file); the alphas' shape says
        # which axes were shared: the size-1 ones. An axis of size 1 in the input computes the same either way.
        config["shared_axes"] = [axis + 1 for axis, size in enumerate(shapes[0]) if size == 1]
        return [("keras1-prelu-shared-axes", lambda names, arrays: (names, arrays))]
    return []


def _rewrite_config(config, context):
    if not context.keras1:
        return []
    return _convert_model(config)


FAMILY = Family(
    name="keras1",
    summary="Keras 1 configs and weights in the Keras 2 spelling and layout",
    rules=(
        Rule(
            "keras1-to-keras2",
            "Keras 1 layers (" + ", ".join(f"`{c}`" for c in sorted(_CONVERSIONS)) + ") "
            "get Keras 2's class and argument names (`output_dim` -> `units`, `init`, `nb_filter`, `border_mode`, "
            "`inner_activation`, `TimeDistributedDense` -> `Dense`, ...); "
            + ", ".join(f"`{c}`" for c in sorted(_NO_EQUIVALENT))
            + ", BatchNormalization `mode` 1 and 2, "
            "`border_mode='full'` and Merge `cos` and function modes are refused by name",
            "not readable by Keras 3 or tf_keras",
            ("keras122",),
        ),
        Rule(
            "keras1-gates-merged",
            "Keras 1 LSTM/ConvLSTM2D/GRU weights as 12/12/9 per-gate arrays (`W_i, U_i, "
            "b_i, W_c, ...`) become one kernel, recurrent kernel and bias, gates in order `i, f, c, o` "
            "(`z, r, h`); Keras 1 GRUs get `reset_after=False`",
            "Keras 2 and 3 hold three arrays: a weight-count mismatch",
            ("keras122",),
        ),
        Rule(
            "keras1-merge",
            "the Keras 1 `Merge` layer (`merge()`) becomes `Add`, `Multiply`, `Average`, "
            "`Maximum`, `Concatenate` or `Dot` by its mode (`dot` only on inputs of rank 2 or 3, where Keras 1's "
            "`tf.matmul` contracts the same axes)",
            "Keras 3: `Unknown layer: 'Merge'`",
            (),
        ),
        Rule(
            "keras1-sequential-merge",
            "a Keras 1 `Sequential` whose first layer merges `Sequential` branches "
            "becomes the functional model Keras 1 built: one input per branch, in order",
            "Keras 3 has no layer that holds models as branches",
            (),
        ),
        Rule(
            "keras1-identity-input",
            "a model input that Keras 1 recorded as the output of a layer that returned "
            "its input unchanged (`Activation('linear')`, `ActivityRegularization`) refers to the InputLayer "
            "beneath it",
            "Keras 3: `Graph disconnected: cannot find parent for tensor`",
            (),
        ),
        Rule(
            "keras1-regularizers",
            "Keras 1 regularizer and constraint configs (`{'name': 'L1L2Regularizer', "
            "...}`, `MaxNorm(m=...)`) get Keras 2's spelling",
            "Keras 3: `Error when deserializing class 'Dense'`",
            (),
        ),
        Rule(
            "keras1-channels-first",
            "`dim_ordering='th'` becomes `data_format='channels_first'`",
            "not readable by Keras 3; TensorFlow on a CPU cannot run channels_first convolutions (load_model warns)",
            (),
        ),
        Rule(
            "keras1-dim-ordering-inferred",
            "Cropping, ZeroPadding, UpSampling and SpatialDropout 2D/3D layers, "
            "whose `dim_ordering` Keras 1.2.2 did not save, take the one every other layer of the model states; "
            "with none stated the first three are refused",
            "Keras 3 would use its own default ordering",
            (),
        ),
        Rule(
            "keras1-kernels-transposed",
            "Keras 1 kernels in Keras 2's layout: `'th'` convolution kernels "
            "`(filters, input, *spatial)` -> `(*spatial, input, filters)`, `Convolution1D` kernels lose their "
            "dummy axis, `Deconvolution2D` kernels swap their channel axes; `output_shape` becomes "
            "`output_padding`",
            "a shape mismatch, or a kernel read in the wrong layout",
            (),
        ),
        Rule(
            "keras1-prelu-shared-axes",
            "a Keras 1 PReLU whose alphas have size-1 axes gets them as `shared_axes` (Keras 1.2.2 did not save them)",
            "a weight shape mismatch",
            (),
        ),
    ),
    rewrite_config=_rewrite_config,
    weight_steps=_weight_steps,
)
