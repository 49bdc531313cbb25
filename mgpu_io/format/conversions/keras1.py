"""Keras 1: configs in the Keras 2 spelling, as Keras 2 itself read them, and more.

Keras 2 read Keras 1 configs through ``keras/legacy/interfaces.py`` (argument renames such as ``output_dim`` ->
``units``, ``init`` -> ``kernel_initializer``); Keras 3 and tf_keras read none of them. This family applies the same
renames, layer by layer, checked against Keras 1.2.2's own source (``layers/*.py``, ``engine/topology.py``) and its
files (fixtures/layers/k122), and refuses by name whatever has no exact Keras 3 equivalent, rather than guessing:
argument renames; the functional ``merge`` (the ``Merge`` layer) as ``Add``, ``Multiply``, ``Average``,
``Maximum``, ``Concatenate`` or ``Dot``, or, with a Python function as its mode, as the ``Lambda`` it computes like;
a ``Sequential`` that starts with a ``Merge`` of ``Sequential`` branches as the equivalent functional model;
``dim_ordering='th'`` as ``data_format='channels_first'``; Keras 1's regularizer and constraint configs; a model
input that Keras 1 recorded as the output of a layer returning its input unchanged (``Activation('linear')``) as
the ``InputLayer`` it is.

Where to look: the class and argument tables are in ``_keras1_layers.py``, the Merge conversion (which Keras 2.0-2.1
files need too) in ``_merge.py``, the weights in the Keras 2 layout in ``keras1_weights.py`` (its own family).

Keras 1 computed ``'th'`` convolutions on TensorFlow by transposing to ``'tf'`` and back; Keras 3 computes
``channels_first`` directly, which TensorFlow's CPU kernels without oneDNN cannot: ``mgpu_io.load_model`` runs them
transposed there, as Keras 1 did (``mgpu_io/keras/runtime.py``).
"""

from dataclasses import dataclass, field

from mgpu_io.errors import Param, Text, UnsupportedModel
from mgpu_io.format.config import copy_config, is_model, layer_name, model_layers, walk_layers
from mgpu_io.format.conversions._keras1_layers import (
    CONVERSIONS,
    DATA_FORMAT,
    DROPOUT_ONLY,
    FIX,
    IDENTITY_AT_PREDICTION,
    KERAS1_ARGUMENTS,
    KERAS1_CLASSES,
    KERAS1_OBJECTS,
    KERAS2_ARGUMENTS,
    MERGE_MODES,
    NO_EQUIVALENT,
    ORDERING_NOT_STORED,
    keras1_refusal,
)
from mgpu_io.format.conversions._merge import (
    dot_input_ranks,
    merge_layer,
    merged_sequential_as_functional,
    starts_with_merge,
)
from mgpu_io.format.conversions.base import Family, Rule

__all__ = ["MERGE_MODES", "convert_keras1_config", "is_keras1", "keras1_refusal"]


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
        old = old or bool(arguments & KERAS1_ARGUMENTS) or layer.get("class_name") in KERAS1_CLASSES
        new = new or bool(arguments & KERAS2_ARGUMENTS)
    return old and not new


def convert_keras1_config(model_config):
    """Return a Keras 2 spelling of a Keras 1 model config.

    Raises:
        UnsupportedModel: a layer has no exact conversion (named in the message, with the reason and the fix).

    Example:
        >>> config = convert_keras1_config({"class_name": "Sequential", "config": [{"class_name": "Dense",
        ...     "config": {"name": "d", "output_dim": 2, "init": "glorot_uniform", "input_dim": 3}}]})
        >>> config["config"][0]["config"]
        {'name': 'd', 'units': 2, 'kernel_initializer': 'glorot_uniform'}
    """
    config = copy_config(model_config)
    _convert_model(config)
    return config


def _convert_model(config):
    """Convert a Keras 1 model config in place; return the names of the rules applied."""
    changes = ["keras1-to-keras2"]
    if config.get("class_name") == "Sequential" and starts_with_merge(config):
        merged_sequential_as_functional(config)
        changes.append("keras1-sequential-merge")
    for model in [config] + [layer for layer in walk_layers(config) if is_model(layer)]:
        if model.get("class_name") == "Sequential" and starts_with_merge(model):
            first = model_layers(model)[0]
            raise keras1_refusal(
                layer_name(first),
                "Merge",
                "merges the branches of a nested Sequential",
                "a Merge of branches only at the start of the outermost Sequential",
                f"a Sequential {model.get('name') or ''!r} inside the model, starting with a Merge",
            )
        if model.get("class_name") == "Model" and _inputs_through_identity(model):
            changes.append("keras1-identity-input")
    scope = _Scope(orderings=_stated_orderings(config), ranks=dot_input_ranks(config))
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
    if cls in NO_EQUIVALENT:
        raise keras1_refusal(
            name,
            cls,
            f"cannot be converted: {NO_EQUIVALENT[cls]}",
            "a Keras 1 layer that Keras 3 has",
            f"class_name={cls!r}",
        )
    if cls not in CONVERSIONS:
        raise UnsupportedModel(
            problem=f"The Keras 1 layer {name!r} ({cls}) cannot be converted for Keras 3: mgpu-io knows no such "
            "Keras 1 class (a custom layer?)",
            expected=f"one of {sorted(CONVERSIONS)}",
            received=f"class_name={cls!r}",
            fix=FIX,
        )
    new_class, renames, dropped = CONVERSIONS[cls]
    _check_modes(name, cls, config)
    _ordering(name, cls, config, scope)
    if cls == "Merge":
        new_class = merge_layer(name, config, scope)
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
        config["data_format"] = DATA_FORMAT.get(config["data_format"], config["data_format"])
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
        raise keras1_refusal(
            name,
            cls,
            f"uses mode={config['mode']}, which {why}",
            "mode=0 (feature-wise, moving averages at prediction)",
            f"mode={config['mode']}",
        )
    if config.get("border_mode") == "full":
        raise keras1_refusal(
            name,
            cls,
            "pads with border_mode='full' (Theano only), which Keras 3 does not have",
            "border_mode='valid' or 'same'",
            "border_mode='full'",
        )
    if cls == "Bidirectional" and config.get("merge_mode") not in ("sum", "mul", "ave", "concat", None):
        raise keras1_refusal(
            name,
            cls,
            "has an unknown merge_mode",
            "one of 'sum', 'mul', 'ave', 'concat' or None",
            f"merge_mode={config.get('merge_mode')!r}",
        )


def _ordering(name, cls, config, scope):
    """Fill in ``dim_ordering`` where Keras 1 left it out of the config, or refuse where it cannot be known."""
    if "dim_ordering" not in CONVERSIONS[cls][1] or config.get("dim_ordering") in DATA_FORMAT:
        return
    config.pop("dim_ordering", None)
    if len(scope.orderings) == 1:
        config["dim_ordering"] = next(iter(scope.orderings))
        scope.changes.append("keras1-dim-ordering-inferred")
    elif cls not in DROPOUT_ONLY:
        stated = sorted(scope.orderings) or "none"
        saved = (
            "Keras 1.2.2 did not save it for this class" if cls in ORDERING_NOT_STORED else "the writer did not save it"
        )
        raise keras1_refusal(
            name,
            cls,
            f"has no dim_ordering in its config: {saved}, and the layer used the image_dim_ordering of "
            "the keras.json on the machine that built it ('tf' or 'th'), which the file does not say",
            "another layer of the model stating one dim_ordering (a convolution or pooling layer), which mgpu-io "
            "then applies to this one",
            f"dim_ordering missing, and the other layers state {stated}",
            Text(
                "Rebuild the model in code with that layer's data_format and load the weights with "
                "mgpu_io.transfer_weights, or pass ",
                Param("keep_config", True),
                " for Keras 1 with the keras.json it was made with",
            ),
        )


def _stated_orderings(config):
    return {
        layer["config"]["dim_ordering"]
        for layer in walk_layers(config, wrapped=True)
        if isinstance(layer.get("config"), dict) and layer["config"].get("dim_ordering") in DATA_FORMAT
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
        known = KERAS1_OBJECTS.get(value["name"])
        extra = set(value) - {"name"} - set(known[1] if known else ())
        if known is None or extra:
            raise keras1_refusal(
                name,
                cls,
                f"has a {key} that Keras 3 does not have",
                f"one of {sorted(KERAS1_OBJECTS)}",
                f"{key}={value!r}",
                Text(
                    "Rebuild that layer in code with a Keras 3 regularizer or constraint and load the weights with "
                    "mgpu_io.transfer_weights, or pass ",
                    Param("keep_config", True),
                    " to write the Keras 1 config as it is",
                ),
            )
        new_class, arguments = known
        config[key] = {"class_name": new_class, "config": {arguments[k]: v for k, v in value.items() if k != "name"}}
        scope.changes.append("keras1-regularizers")


# --- inputs that Keras 1 recorded as the output of a layer that returned its input ---------------------------


def _identity_at_prediction(layer):
    """Whether the layer predicts its input unchanged. Keras 1's ``call`` of such a layer could return the very
    tensor it was given (``Activation('linear')``, ``ActivityRegularization``; any of them under a fixed learning
    phase), and Keras 1 then overwrote that tensor's ``_keras_history``: a model built on the tensor records the
    layer as its input."""
    cls, settings = layer.get("class_name"), layer.get("config") or {}
    return cls in IDENTITY_AT_PREDICTION or (cls == "Activation" and settings.get("activation") == "linear")


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
                raise keras1_refusal(
                    current[0],
                    layer.get("class_name"),
                    "is recorded as a model input, which only an InputLayer can be in Keras 3",
                    "model inputs that are InputLayers, or layers that "
                    "Keras 1 let return their input unchanged (Activation('linear'))",
                    f"input_layers={refs!r}",
                    Text(
                        "Rebuild the model in code with an Input there and load the weights with "
                        "mgpu_io.transfer_weights, or pass ",
                        Param("keep_config", True),
                        " for Keras 1",
                    ),
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
            raise keras1_refusal(
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
        raise keras1_refusal(
            name,
            "Deconvolution2D",
            "has an output_shape that Keras 3 cannot produce",
            "an output size that Keras 3 reaches with an output_padding below the stride",
            f"output_shape={shape!r}, kernel {kernel}, strides {strides}, border_mode={padding!r}",
        )
    config["output_padding"] = paddings


def _rewrite_config(config, context):
    if not context.keras1:
        return []
    return _convert_model(config)


FAMILY = Family(
    name="keras1",
    summary="Keras 1 configs in the Keras 2 spelling",
    rules=(
        Rule(
            "keras1-to-keras2",
            "Keras 1 layers (" + ", ".join(f"`{c}`" for c in sorted(CONVERSIONS)) + ") "
            "get Keras 2's class and argument names (`output_dim` -> `units`, `init`, `nb_filter`, `border_mode`, "
            "`inner_activation`, `TimeDistributedDense` -> `Dense`, ...); "
            + ", ".join(f"`{c}`" for c in sorted(NO_EQUIVALENT))
            + ", BatchNormalization `mode` 1 and 2, "
            "`border_mode='full'` and Merge's `cos` mode are refused by name",
            "not readable by Keras 3 or tf_keras",
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
            "merge-function-as-lambda",
            "a `Merge` (Keras 1, or Keras 2.0-2.1's legacy one) whose mode is a Python function (a Siamese "
            "distance) becomes the `Lambda` that calls it the same way, on the list of inputs: user code, "
            "written by reference and run only with the caller's function (`lambdas=`)",
            "Keras 3: `Unknown layer: 'Merge'`; mgpu-io refused it before",
            ("k122", "k205", "k205py36", "k208", "k212"),
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
            "not readable by Keras 3; TensorFlow's CPU kernels run convolutions channels_last only (load_model transposes "
            "them there, as Keras 1 did)",
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
    ),
    rewrite_config=_rewrite_config,
)
