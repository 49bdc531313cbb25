"""Split the template's stored weights back into per-layer groups.

A wrapper file stores all of the template's weights in one group named after the nested template layer, in the
order of ``template.weights``: every trainable weight in layer order, then every non-trainable one (BatchNormalization
moving statistics, frozen layers). A clean file needs one group per layer. Weight names are hints, not facts
(``cpu_relocation`` renames ``dense_1/kernel:0`` to ``dense_1_1/kernel:0``; Keras 1 writes ``d1_W:0``), so each
weight is attributed to a template layer by its name's stem and the attribution is then checked against the
structure: owners must follow layer order in both sections, weightless layers own nothing, and the shapes a layer's
config implies must hold.
"""

import re
from dataclasses import dataclass
from typing import Any, Optional

from mgpu_io.errors import NotAModelFile, WeightsMismatch
from mgpu_io.format.config import MODEL_CLASSES, RECURRENT_GATES, layer_name, model_layers, model_name, walk_layers

# Layers that never own weights; a weight attributed to one of them means the attribution is wrong.
WEIGHTLESS = frozenset(
    [
        "InputLayer",
        "Lambda",
        "Dropout",
        "SpatialDropout1D",
        "SpatialDropout2D",
        "SpatialDropout3D",
        "GaussianNoise",
        "GaussianDropout",
        "AlphaDropout",
        "Activation",
        "ReLU",
        "LeakyReLU",
        "ELU",
        "Softmax",
        "ThresholdedReLU",
        "Flatten",
        "Reshape",
        "Permute",
        "RepeatVector",
        "Masking",
        "ActivityRegularization",
        "Concatenate",
        "Add",
        "Subtract",
        "Multiply",
        "Average",
        "Maximum",
        "Minimum",
        "Dot",
        "Merge",
        "MaxPooling1D",
        "MaxPooling2D",
        "MaxPooling3D",
        "AveragePooling1D",
        "AveragePooling2D",
        "AveragePooling3D",
        "GlobalMaxPooling1D",
        "GlobalMaxPooling2D",
        "GlobalMaxPooling3D",
        "GlobalAveragePooling1D",
        "GlobalAveragePooling2D",
        "GlobalAveragePooling3D",
        "ZeroPadding1D",
        "ZeroPadding2D",
        "ZeroPadding3D",
        "Cropping1D",
        "Cropping2D",
        "Cropping3D",
        "UpSampling1D",
        "UpSampling2D",
        "UpSampling3D",
        "MaxPool1D",
        "MaxPool2D",
        "MaxPool3D",
        "AvgPool1D",
        "AvgPool2D",
        "AvgPool3D",
    ]
)

_KERAS1_PARAM = re.compile(
    r"^(?P<layer>.+?)_(W|b|U|V|gamma|beta|running_mean|running_std|alphas|W_[a-z]|U_[a-z]|b_[a-z]|"
    r"depthwise_kernel|pointwise_kernel)$"
)


@dataclass
class LayerWeights:
    """The weights of one template layer: ``names`` in ``layer.weights`` order, read from ``source`` group."""

    layer: str
    class_name: Optional[str]
    names: list[str]
    group: Any = None  # the h5py group the names are read from


def _stem(weight_name):
    return re.sub(r":\d+$", "", weight_name)


def _owner(weight_name, candidates: dict[str, str], scoped_names=None):
    """The top-level layer that owns ``weight_name`` among ``candidates`` (layer name -> its top-level layer);
    ``scoped_names``: those of the candidates with a ``/`` (all of them are looked through where not given)."""
    stem = _stem(weight_name)
    scoped_names = [name for name in candidates if "/" in name] if scoped_names is None else scoped_names
    scoped = [name for name in scoped_names if stem.startswith(name + "/")]
    if scoped:  # a layer name with a scope in it (DenseNet's `conv1/conv`)
        return candidates[max(scoped, key=len)]
    if "/" in stem:
        parts = stem.split("/")
        for cut in range(len(parts) - 1, 1, -1):  # a scoped layer name renamed for Keras 3: conv1/conv -> conv1_conv
            if parts[0] not in candidates and "_".join(parts[:cut]) in candidates:
                return candidates["_".join(parts[:cut])]
        head = parts[0]
        while head not in candidates:
            stripped = re.fullmatch(r"(.+)_\d+", head)  # variable-scope suffix: cpu_relocation, re-loading
            if not stripped:
                return next((candidates[p] for p in stem.split("/")[1:-1] if p in candidates), None)
            head = stripped.group(1)
        return candidates[head]
    prefixes = [name for name in candidates if stem.startswith(name + "_")]  # Keras 1: "<layer>_W"
    return candidates[max(prefixes, key=len)] if prefixes else None


def split_by_layer(template_config, weight_names, where="template") -> list[LayerWeights]:
    """Attribute the flat ``weight_names`` of ``template_config`` to its top-level layers.

    Returns one :class:`LayerWeights` per top-level layer, in config order (weightless layers get no names).

    Raises:
        WeightsMismatch: a weight belongs to no layer, or the attribution contradicts the stored order.

    Example:
        >>> config = {"class_name": "Sequential", "config": {"name": "s", "layers": [
        ...     {"class_name": "Dense", "config": {"name": "dense_1", "units": 2}}]}}
        >>> [lw.names for lw in split_by_layer(config, ["dense_1_1/kernel:0", "dense_1_1/bias:0"])]
        [['dense_1_1/kernel:0', 'dense_1_1/bias:0']]
    """
    layers = model_layers(template_config)
    order = {layer_name(layer): index for index, layer in enumerate(layers)}
    candidates = {}
    for layer in layers:
        if layer["class_name"] in MODEL_CLASSES:
            candidates.update({layer_name(sub): layer_name(layer) for sub in walk_layers(layer)})
    candidates.update({name: name for name in order})

    owners, scoped_names = [], [name for name in candidates if "/" in name]
    for weight in weight_names:
        owner = _owner(weight, candidates, scoped_names)
        if owner is None:
            raise WeightsMismatch(
                problem="A stored weight belongs to no layer of the template",
                expected=f"names that start with a layer name of `{model_name(template_config)}`",
                received=f"weight={weight!r} in group {where!r}",
                fix=(
                    "The config and the weights come from different models; pair the weights with the config they were "
                    "saved with"
                ),
            )
        owners.append(owner)

    # Trainable section, then non-trainable section: owners' layer indices rise within each.
    descents = sum(1 for a, b in zip(owners, owners[1:]) if order[b] < order[a])
    if descents > 1:
        raise WeightsMismatch(
            problem="The stored weight order does not follow the template's layer order",
            expected="trainable weights in layer order, then non-trainable ones",
            received=f"owners {owners} in group {where!r}",
            fix=(
                "The weights were not written by Keras for this config; pair them with the config they were saved with"
            ),
        )
    grouped: dict[str, list[str]] = {name: [] for name in order}
    for weight, owner in zip(weight_names, owners):
        grouped[owner].append(weight)
    result = []
    for layer in layers:
        name = layer_name(layer)
        if grouped[name] and layer["class_name"] in WEIGHTLESS:
            raise WeightsMismatch(
                problem="Stored weights were attributed to a layer that has none",
                expected=f"no weights for {layer['class_name']} layer {name!r}",
                received=str(grouped[name]),
                fix="The weights and the config come from different models",
            )
        result.append(LayerWeights(layer=name, class_name=layer["class_name"], names=grouped[name]))
    return result


_RNN_PARTS = re.compile(r"^(forward|backward)_|_cell(_\d+)?$")


def scoped_weight_names(weight_names):
    """The weight names whose owning layer cannot be told from the name alone: a scope before the layer name.

    Keras names a weight ``layer/weight:0``; a Bidirectional's or an RNN cell's weights add ``forward_lstm_1/`` or
    ``lstm_cell/`` after the layer. Any other middle part is a scope (keras_applications' NASNet:
    ``normal_A_block_0/adjust_block/.../adjust_bn_0/beta:0``) or a layer name that holds a ``/`` (DenseNet's
    ``conv1/conv``): the layer is then a guess, so a weights-only file needs its architecture.

    Example:
        >>> scoped_weight_names(["d1/kernel:0", "bidirectional_1/forward_lstm_1/kernel:0", "lstm/lstm_cell/bias:0",
        ...                      "conv1/conv/kernel:0"])
        ['conv1/conv/kernel:0']
    """
    scoped = []
    for weight in weight_names:
        parts = _stem(weight).split("/")
        if len(parts) > 2 and not all(_RNN_PARTS.search(part) for part in parts[1:-1]):
            scoped.append(weight)
    return scoped


def split_without_config(weight_names) -> list[LayerWeights]:
    """Group a weights-only file's flat template weights by their names' layer stems, in layer order.

    Without a config the layer order is rebuilt from the two sections (trainable, then non-trainable), each of
    which lists its layers in model order.

    Example:
        >>> [(lw.layer, len(lw.names)) for lw in split_without_config(
        ...     ["d1/kernel:0", "bn/gamma:0", "out/kernel:0", "bn/moving_mean:0"])]
        [('d1', 1), ('bn', 2), ('out', 1)]
    """
    owners = []
    for weight in weight_names:
        stem = _stem(weight)
        match = _KERAS1_PARAM.match(stem)
        owners.append(stem.split("/")[0] if "/" in stem else (match.group("layer") if match else stem))
    first: list[str] = []
    second: list[str] = []
    seen: set[str] = set()
    in_second = False
    for previous, owner in zip([None, *owners], owners):
        if owner in seen and owner != previous:
            in_second = True
        section = second if in_second else first
        if not section or section[-1] != owner:
            section.append(owner)
        seen.add(owner)
    order = _merge_orders(first, second)
    grouped: dict[str, list[str]] = {name: [] for name in order}
    for weight, owner in zip(weight_names, owners):
        grouped[owner].append(weight)
    return [LayerWeights(layer=name, class_name=None, names=grouped[name]) for name in order]


def _merge_orders(first, second):
    """Merge two layer orders that are each a subsequence of the model's order."""
    merged, j = [], 0
    for name in first:
        if name in second[j:]:
            k = second.index(name, j)
            merged.extend(other for other in second[j:k] if other not in first)
            j = k + 1
        merged.append(name)
    merged.extend(other for other in second[j:] if other not in first)
    return list(dict.fromkeys(merged))


def check_shapes(layer_config, names, shapes, where):
    """Check the shapes a layer's config fixes (units, filters, kernel size); raise :class:`WeightsMismatch`.

    Only what the config alone determines is checked: a Dense layer's ``units`` fix the last kernel axis and the
    bias; the input size is not known without building the model.
    """
    expected = _expected_shapes(layer_config, where)
    if (
        expected is None
        or len(expected) != len(shapes)
        or any(want is not None and len(shape) != len(want) for shape, want in zip(shapes, expected))
    ):
        return  # another layout (Keras 1's per-gate arrays, its (k, 1, in, out) Conv1D kernels): converted, then
        # checked by Keras itself when the weights are assigned
    for name, shape, want in zip(names, shapes, expected):
        if want is None:
            continue
        if len(shape) != len(want) or any(w is not None and s != w for s, w in zip(shape, want)):
            pretty = "(" + ", ".join("?" if w is None else str(w) for w in want) + ("," if len(want) == 1 else "") + ")"
            raise WeightsMismatch(
                problem=(
                    f"Shape mismatch for weight {name!r} of {layer_config['class_name']} layer "
                    f"{layer_name(layer_config)!r}"
                ),
                expected=f"shape {pretty} from the layer's config",
                received=f"shape={tuple(shape)} in {where}",
                fix="The weights do not belong to this config; pair them with the config they were saved with",
            )


def _whole(value):
    """A layer size as Keras 2 stored it: an int, or a whole float (``Dense(n / 2)`` on Python 3), below 2**31."""
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        return False
    return 1 <= value < 2**31 and value == int(value)


def _expected_shapes(layer, where):
    config = layer.get("config", {})
    cls = layer["class_name"]

    def size(key):  # a count the shapes follow: a damaged config's 1e308 or "8" would give shapes of inf or "888"
        value = config[key]
        sizes = value if key == "kernel_size" and isinstance(value, (list, tuple)) else [value]
        if not sizes or not all(_whole(v) for v in sizes):
            raise NotAModelFile(
                problem=(
                    f"The config of {cls} layer {layer_name(layer)!r} is damaged: its {key} is not a positive whole "
                    "number"
                ),
                expected=f"{key} like Keras writes it (e.g. 64)",
                received=f"{key}={value!r} in {where}",
                fix="Pair the weights with the config they were saved with",
            )
        return tuple(int(v) for v in sizes) if key == "kernel_size" else int(value)

    if cls == "Dense" and "units" in config:
        return [(None, size("units")), (size("units"),)]
    if cls in ("Conv1D", "Conv2D", "Conv3D") and "filters" in config:
        if config.get("data_format", "channels_last") != "channels_last":
            return None
        return [(*size("kernel_size"), None, size("filters")), (size("filters"),)]
    if cls == "BatchNormalization":
        return None  # axis-dependent; all four vectors are checked to agree by Keras on load
    if cls in RECURRENT_GATES and cls != "ConvLSTM2D" and "units" in config:
        units = size("units")
        gates = RECURRENT_GATES[cls]
        return [(None, gates * units), (units, gates * units), None]
    return None
