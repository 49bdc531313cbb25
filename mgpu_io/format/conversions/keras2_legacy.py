"""Keras 2 files as the era wrote them: legacy layers, numpy payloads, shapes in wrapped layers, preview class names.

Files that people committed between 2016 and 2021 hold a few habits that no Keras after them reads:

- Keras 2.0-2.1 kept Keras 1's ``Merge`` as a legacy layer (``keras/legacy/layers.py``), and code written for
  Keras 1 went on using it: a named mode becomes the merge layer that computes it (the Keras 1 rule, ``_merge.py``),
  a Python function as the mode the ``Lambda`` it computes like (user code, written by reference like any Lambda);
- Keras 2.0-2.1's ``model.save()`` stored numpy values of a layer config as ``{"type": "ndarray", "value": ...}``
  (Keras 2.0.5's ``LeakyReLU`` ``alpha``, which ``K.cast_to_floatx`` had made a 0-d array; 2.0.8 stored a float):
  they become the plain values;
- ``Bidirectional(LSTM(..., input_shape=...))``: the wrapped layer carries the input shape, which Keras 3's layers
  refuse ("Unrecognized keyword arguments passed to LSTM: {'batch_input_shape': ...}"): it moves to the wrapper
  where the wrapper starts a Sequential, and is dropped elsewhere (the model's input carries it);
- ``UnifiedLSTM``: the class name of TF 2.0's preview LSTM (TF 1.13's ``tf.keras``, ``2.2.4-tf``), the v2 LSTM under
  another name (``UnifiedGRU`` likewise, though no released TensorFlow wrote one).

Keras 1 files go through ``keras1.py`` first, which converts their ``Merge`` itself; the other rules apply to them too.
"""

from types import SimpleNamespace

from mgpu_io.format.config import copy_config, layer_name, model_layers, walk_layers
from mgpu_io.format.conversions._merge import (
    dot_input_ranks,
    merge_layer,
    merged_sequential_as_functional,
    starts_with_merge,
)
from mgpu_io.format.conversions.base import Family, Rule

#: Preview class names and the class they are.
UNIFIED = {"UnifiedLSTM": "LSTM", "UnifiedGRU": "GRU"}
#: Wrappers whose wrapped layer may carry the model's input shape.
WRAPPERS = ("Bidirectional", "TimeDistributed")
_SHAPE_KEYS = ("batch_input_shape", "input_shape", "input_dim", "input_length")


def is_ndarray_payload(value):
    """A numpy value as Keras 2.0-2.1's ``model.save()`` stored it: ``{"type": "ndarray", "value": ...}``.

    Example:
        >>> is_ndarray_payload({"type": "ndarray", "value": 0.3}), is_ndarray_payload({"type": "x", "value": 1})
        (True, False)
    """
    return isinstance(value, dict) and set(value) == {"type", "value"} and value["type"] == "ndarray"


def plain_values(config):
    """Replace, in place, every numpy payload in ``config`` (a dict or list, at any depth) by its value; return how
    many were replaced.

    Example:
        >>> config = {"alpha": {"type": "ndarray", "value": 0.3}, "w": [{"type": "ndarray", "value": [1, 2]}]}
        >>> plain_values(config), config
        (2, {'alpha': 0.3, 'w': [[1, 2]]})
    """
    count, stack = 0, [config]
    while stack:
        container = stack.pop()
        items = container.items() if isinstance(container, dict) else enumerate(container)
        for key, value in list(items):
            if is_ndarray_payload(value):
                container[key] = value["value"]
                count += 1
            elif isinstance(value, (dict, list)):
                stack.append(value)
    return count


def _shape_of(inner):
    """The ``batch_input_shape`` that a wrapped layer's own shape arguments say, or ``None``."""
    if inner.get("batch_input_shape"):
        return list(inner["batch_input_shape"])
    if inner.get("input_shape"):
        return [None, *inner["input_shape"]]
    if inner.get("input_dim"):
        length = inner.get("input_length")
        return [None, length, inner["input_dim"]] if "input_length" in inner else [None, inner["input_dim"]]
    return None


def _wrapped_input_shapes(config):
    """Move or drop the shape arguments of layers wrapped in Bidirectional or TimeDistributed; whether any moved."""
    changed = False
    firsts = {}  # id of a Sequential's first layer -> the shape the Sequential was built with (Keras 2.2+), or None
    for model in [config] + [layer for layer in walk_layers(config) if layer.get("class_name") == "Sequential"]:
        if model.get("class_name") == "Sequential" and model_layers(model):
            settings = model["config"] if isinstance(model["config"], dict) else {}
            built = settings.get("build_input_shape")
            built = list(built) if isinstance(built, list) and not any(isinstance(d, list) for d in built) else None
            firsts[id(model_layers(model)[0])] = built
    for layer in walk_layers(config, wrapped=True):
        settings = layer.get("config") if isinstance(layer, dict) else None
        if layer.get("class_name") not in WRAPPERS or not isinstance(settings, dict):
            continue
        inner = settings.get("layer")
        inner = inner.get("config") if isinstance(inner, dict) else None
        if not isinstance(inner, dict) or not any(key in inner for key in _SHAPE_KEYS):
            continue
        shape = _shape_of(inner)
        for key in _SHAPE_KEYS:
            inner.pop(key, None)
        changed = True
        if id(layer) not in firsts or settings.get("batch_input_shape"):
            continue  # the model's input (or the wrapper itself) carries the shape
        if firsts[id(layer)] is not None:
            # Keras 2.2+ built the Sequential with the shape it was called on (`build_input_shape`) and never read
            # the wrapped layer's own, which may be wrong: `LSTM(4, input_shape=(3,))` stores (None, 3).
            settings["batch_input_shape"] = firsts[id(layer)]
            continue
        if shape is None:
            continue
        if layer["class_name"] == "TimeDistributed":  # the wrapped layer saw one time step: any number of them
            shape = [shape[0], None, *shape[1:]]
        settings["batch_input_shape"] = shape
    return changed


def branches_unfolded(template):
    """``template``, or where it is a Keras 2.0-2.1 Sequential that starts with a legacy ``Merge`` of Sequential
    branches, a copy laid out as the functional model Keras built (its branches' layers at the top level, as the
    weights are stored): what ``inspect`` lays the weights out by."""
    if not (template.get("class_name") == "Sequential" and starts_with_merge(template)):
        return template
    unfolded = copy_config(template)
    merged_sequential_as_functional(unfolded, keras1=False)
    return unfolded


def _legacy_merges(config, changes):
    """Keras 1's ``Merge`` in a Keras 2 file, converted by the Keras 1 rule (``_merge.py``)."""
    if not any(layer.get("class_name") == "Merge" for layer in walk_layers(config)):
        return
    if config.get("class_name") == "Sequential" and starts_with_merge(config):
        merged_sequential_as_functional(config, keras1=False)
        changes.append("keras2-sequential-merge")
    scope = SimpleNamespace(ranks=dot_input_ranks(config), changes=changes)
    for layer in walk_layers(config):
        merge = layer.get("class_name") == "Merge"
        if merge and isinstance(layer.get("config"), dict):
            layer["class_name"] = merge_layer(layer_name(layer), layer["config"], scope, rule="keras2-merge")
        for node in layer.get("inbound_nodes") or []:
            for entry in node if isinstance(node, list) else []:
                if isinstance(entry, list) and len(entry) == 3:
                    entry.append({})
                elif merge and _no_masks(entry):
                    del entry[3]["mask"]  # Keras 3 passes the inputs' masks itself
                    changes.append("keras2-merge-masks")


def _no_masks(entry):
    """Whether a node entry carries the masks that Keras 2.0-2.1's legacy ``merge()`` passed to the ``Merge`` it
    built (``{"mask": [null, null]}``: its inputs had none)."""
    arguments = entry[3] if isinstance(entry, list) and len(entry) == 4 else None
    masks = arguments.get("mask", ()) if isinstance(arguments, dict) else ()
    return isinstance(masks, list) and all(mask is None for mask in masks)


def _rewrite_config(config, context):
    changes = []
    if not context.keras1:
        _legacy_merges(config, changes)
    for layer in walk_layers(config, wrapped=True):
        if not isinstance(layer, dict):
            continue
        if isinstance(layer.get("config"), (dict, list)) and plain_values(layer["config"]):
            changes.append("ndarray-config-values")
        if layer.get("class_name") in UNIFIED:
            layer["class_name"] = UNIFIED[layer["class_name"]]
            changes.append("unified-rnn-names")
    if _wrapped_input_shapes(config):
        changes.append("wrapped-input-shape")
    return list(dict.fromkeys(changes))


FAMILY = Family(
    name="keras2_legacy",
    summary="Keras 2 files as the era wrote them: legacy Merge, numpy payloads, shapes in wrapped layers, "
    "preview class names",
    rules=(
        Rule(
            "keras2-merge",
            "Keras 1's `Merge` in a Keras 2.0-2.1 file (a legacy layer there) becomes `Add`, `Multiply`, "
            "`Average`, `Maximum`, `Concatenate` or `Dot` by its mode, as in Keras 1 files",
            "Keras 3: `Unknown layer: 'Merge'`; mgpu-io refused it before",
            ("k205", "k205py36", "k208", "k212"),
        ),
        Rule(
            "keras2-merge-masks",
            "the inputs' masks that Keras 2.0-2.1's legacy `merge()` function passed to the `Merge` it built, "
            'stored in its node as `{"mask": [null, null]}`, are left out (Keras 3 passes masks itself)',
            "Keras 3: `got an unexpected keyword argument 'mask'`",
            ("k205", "k208", "k212"),
        ),
        Rule(
            "keras2-sequential-merge",
            "a Keras 2.0-2.1 `Sequential` whose first layer is a legacy `Merge` of `Sequential` branches becomes "
            "the functional model Keras built: one input per branch, in order",
            "Keras 3 has no layer that holds models as branches",
            ("k205", "k205py36", "k208", "k212"),
        ),
        Rule(
            "ndarray-config-values",
            'numpy values that Keras 2.0-2.1\'s `model.save()` stored as `{"type": "ndarray", "value": ...}` in '
            "a layer config (Keras 2.0.5's `LeakyReLU` `alpha`) become the plain values",
            "Keras 3: `Error when deserializing class 'LeakyReLU'`",
            ("k205", "k205py36"),
        ),
        Rule(
            "wrapped-input-shape",
            "`batch_input_shape`/`input_shape`/`input_dim` of a layer wrapped in `Bidirectional` or "
            "`TimeDistributed` move to the wrapper where it starts a Sequential (then its InputLayer), and are "
            "dropped elsewhere (the model's input carries the shape)",
            "Keras 3: `Unrecognized keyword arguments passed to LSTM: {'batch_input_shape': ...}`",
            ("k205", "k205py36", "k208", "k212", "k224"),
        ),
        Rule(
            "unified-rnn-names",
            "`UnifiedLSTM`/`UnifiedGRU`, the class names of TF 2.0's preview LSTM/GRU (TF 1.13's tf.keras), "
            "become `LSTM`/`GRU` with their weights as stored (the same layout)",
            "Keras 3: `Unknown layer: 'UnifiedLSTM'`",
            ("tf113",),
        ),
    ),
    rewrite_config=_rewrite_config,
)
