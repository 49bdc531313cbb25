"""Keras 1's ``Merge`` layer (``merge()``) as the Keras 2/3 layer that computes the same, wherever it is found: in
Keras 1 files (``keras1.py``) and in Keras 2.0-2.1 files, which kept ``Merge`` as a legacy layer (``keras2_legacy.py``).
No family: the conversion those two share.
"""

from mgpu_io.format.config import layer_name, model_layers
from mgpu_io.format.conversions._keras1_layers import MERGE_KEYS, MERGE_MODES, SAME_RANK, keras1_refusal

# --- the Merge layer ------------------------------------------------------------------------------------------------------


def merge_layer(name, config, scope, rule="keras1-merge"):
    """The Keras 2/3 class of a Keras 1 ``Merge`` layer; its config is rewritten for that class.

    A named mode becomes the merge layer that computes it (``rule`` names the change); a Python function as the mode
    (``mode_type`` ``'lambda'``: bytecode; ``'function'``: a name) becomes the ``Lambda`` that calls it the same way,
    on the list of inputs (:func:`merge_as_lambda`).
    """
    mode, mode_type = config.get("mode", "sum"), config.get("mode_type", "raw")
    if mode_type in ("lambda", "function"):
        merge_as_lambda(name, config)
        scope.changes.append("merge-function-as-lambda")
        return "Lambda"
    if mode_type != "raw":
        raise keras1_refusal(
            name,
            "Merge",
            f"has an unknown mode_type {mode_type!r}",
            "mode_type 'raw' (a named mode), 'lambda' or 'function' (a Python function)",
            f"mode_type={mode_type!r}",
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
        raise keras1_refusal(
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
    for key in MERGE_KEYS:
        config.pop(key, None)
    config.update(settings)
    scope.changes.append(rule)
    return MERGE_MODES[mode]


def merge_as_lambda(name, config):
    """Rewrite, in place, the config of a ``Merge`` whose mode is a Python function as the ``Lambda`` it computes
    like.

    Keras 1's ``Merge.call`` (and Keras 2.0-2.1's legacy one) returned ``mode(inputs, **arguments)`` on the list of
    input tensors, with ``output_shape`` stored as a Lambda stores it; ``Lambda.call`` returns
    ``function(inputs, **arguments)``: the same call. The function is the user's code, stored as bytecode or by name:
    the lambdas family writes it by reference like any Lambda's, to be run only under the caller's trust.

    Example:
        >>> config = {"name": "distance", "mode": "euclidean", "mode_type": "function", "concat_axis": -1,
        ...     "dot_axes": -1, "output_shape": [1], "output_shape_type": "raw", "output_mask": None,
        ...     "output_mask_type": "raw", "arguments": {}}
        >>> merge_as_lambda("distance", config); config
        {'name': 'distance', 'function': 'euclidean', 'function_type': 'function', 'output_shape': [1], \
'output_shape_type': 'raw', 'arguments': {}}
    """
    if config.get("output_mask") is not None:
        raise keras1_refusal(
            name,
            "Merge",
            "merges with a Python function and computes its own output mask, which a Lambda does not store",
            "a Merge whose output_mask is None",
            f"output_mask_type={config.get('output_mask_type')!r}",
        )
    settings = {
        "name": config["name"],
        "function": config.get("mode"),
        "function_type": config.get("mode_type"),
        "output_shape": config.get("output_shape"),
        "output_shape_type": config.get("output_shape_type", "raw"),
        "arguments": config.get("arguments") or {},
    }
    if "trainable" in config:
        settings["trainable"] = config["trainable"]
    config.clear()
    config.update(settings)


def _dot_axes(name, config, scope):
    """Keras 1's ``dot_axes`` where Keras 3's ``Dot`` contracts the same axes: inputs of rank 2 or 3 only.

    Keras 1 computed ``dot`` with ``tf.matmul`` and adjoint flags, which contracts the named axes of rank-2 and
    rank-3 inputs only; on rank 4 and above it contracts other axes than Keras 3's ``batch_dot``.
    """
    axes = config.get("dot_axes", -1)
    ranks = scope.ranks.get(name)
    if not ranks or any(rank not in (2, 3) for rank in ranks) or len(set(ranks)) != 1:
        raise keras1_refusal(
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


def dot_input_ranks(config):
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
    if cls in SAME_RANK or (cls == "Merge" and settings.get("mode") in ("sum", "mul", "ave", "max", "concat")):
        return below
    if cls == "Embedding":
        return below + 1
    return None


# --- the Keras 1 Sequential that starts with a Merge of Sequential branches ----------------------------------


def starts_with_merge(model):
    layers = model_layers(model)
    return (
        bool(layers) and layers[0].get("class_name") == "Merge" and bool((layers[0].get("config") or {}).get("layers"))
    )


def merged_sequential_as_functional(model, keras1=True):
    """Rewrite ``Sequential([Merge([branch, ...]), layer, ...])`` as the functional model Keras 1 built from it.

    Keras 1 (and Keras 2.0-2.1's legacy ``Merge``) fed such a model one input per branch, in branch order, and kept
    every layer's weights under its own name (the branches' layers at the top level), as the functional model's
    layers are. The input layers are spelled as the writer spelled them (``keras1``: ``input_dtype``, else ``dtype``
    and node entries with their keyword arguments).
    """
    layers, inputs = [], []

    def chain(entries):
        first = entries[0]
        if first.get("class_name") == "Merge" and (first.get("config") or {}).get("layers"):
            sources = []
            for branch in first["config"]["layers"]:
                if branch.get("class_name") != "Sequential" or not model_layers(branch):
                    raise keras1_refusal(
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
                raise keras1_refusal(
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
                        ("input_dtype" if keras1 else "dtype"): settings.pop(
                            "input_dtype", settings.get("dtype", "float32")
                        ),
                        "sparse": False,
                    },
                }
            )
            inputs.append([previous, 0, 0])
            rest = entries
        for entry in rest:
            if entry.get("class_name") in ("Merge", "Sequential", "Model"):
                raise keras1_refusal(
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
