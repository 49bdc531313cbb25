"""Rewrite a legacy template config so that Keras 3 and tf_keras both load it.

The old writers produced configs that Keras 3's legacy loader misreads even after the wrapper is gone
(legacy-format.md §7). Each rule below fixes one such case, keeps the model's meaning, and is reported by name so
the user sees what changed. Rules work on plain dicts and never touch weights.
"""

import copy

from mgpu_io.errors import UnsupportedModel
from mgpu_io.graph import FUNCTIONAL_CLASSES, MODEL_CLASSES, layer_name, model_layers

# Layer configs that hold another layer's config, which Keras 3 resolves without its legacy class table.
_WRAPPED_LAYER_KEYS = ("layer", "backward_layer", "cell")


def normalize_for_keras3(model_config):
    """Return ``(config, changes)``: a copy of ``model_config`` that Keras 3 loads, and what was changed.

    Example:
        >>> config, changes = normalize_for_keras3({"class_name": "Sequential", "config": [
        ...     {"class_name": "Dense", "config": {"name": "d", "units": 1, "batch_input_shape": [None, 3]}}]})
        >>> [layer["class_name"] for layer in config["config"]["layers"]], changes
        (['InputLayer', 'Dense'], ['sequential-list-config', 'sequential-explicit-input'])
    """
    config = copy.deepcopy(model_config)
    changes = []
    _normalize_model(config, changes, top_level=True)
    return config, list(dict.fromkeys(changes))


def cudnn_to_standard(model_config):
    """Return ``(config, changes)`` with only the CuDNN layers rewritten (``--keep-config --cpu``).

    Example:
        >>> config, changes = cudnn_to_standard({"class_name": "Sequential", "config": {"name": "s", "layers": [
        ...     {"class_name": "CuDNNGRU", "config": {"name": "g", "units": 2}}]}})
        >>> config["config"]["layers"][0]["class_name"], changes
        ('GRU', ['cudnn-to-standard-rnn'])
    """
    config, changes = copy.deepcopy(model_config), []

    def visit(layer):
        if layer["class_name"] in _CUDNN:
            name, settings = _CUDNN[layer["class_name"]]
            layer["class_name"] = name
            layer["config"].update(settings)
            changes.append("cudnn-to-standard-rnn")
        if layer["class_name"] in MODEL_CLASSES:
            for sub in model_layers(layer):
                visit(sub)
        for key in _WRAPPED_LAYER_KEYS:
            inner = layer.get("config", {}).get(key) if isinstance(layer.get("config"), dict) else None
            if isinstance(inner, dict) and "class_name" in inner:
                visit(inner)

    visit(config)
    return config, list(dict.fromkeys(changes))


def _normalize_model(model, changes, top_level):
    if model["class_name"] == "Sequential":
        if isinstance(model["config"], list):
            model["config"] = {"name": "sequential", "layers": model["config"]}
            changes.append("sequential-list-config")
        _explicit_sequential_input(model, changes)
    for layer in model_layers(model):
        _normalize_layer(layer, changes, in_functional=model["class_name"] in FUNCTIONAL_CLASSES)
        if model["class_name"] in FUNCTIONAL_CLASSES and layer["class_name"] == "Sequential":
            _sequential_to_functional(layer, changes)
    if model["class_name"] in FUNCTIONAL_CLASSES:
        _inline_consumed_models(model, changes)


# CuDNN layers (Keras 2, GPU only) and the standard layers that compute the same with the converted weights
# (the Keras 2 docs' equivalence; the weights themselves are converted by mgpu_io.conversions).
_CUDNN = {
    "CuDNNLSTM": ("LSTM", {"activation": "tanh", "recurrent_activation": "sigmoid", "use_bias": True}),
    "CuDNNGRU": ("GRU", {"activation": "tanh", "recurrent_activation": "sigmoid", "use_bias": True,
                         "reset_after": True}),
}


def _normalize_layer(layer, changes, in_functional):
    config = layer.get("config")
    if layer["class_name"] in MODEL_CLASSES:
        _normalize_model(layer, changes, top_level=False)
        return
    if not isinstance(config, dict):
        return
    if layer["class_name"] in _CUDNN:
        layer["class_name"], settings = _CUDNN[layer["class_name"]]
        config.update(settings)
        changes.append("cudnn-to-standard-rnn")
    if in_functional and layer["class_name"] != "InputLayer" and "batch_input_shape" in config:
        del config["batch_input_shape"]  # the InputLayer carries the shape; Keras 3 would add a batch axis
        changes.append("functional-drop-batch-input-shape")
    for key, value in config.items():
        if isinstance(value, dict) and "class_name" in value and isinstance(value.get("config"), dict):
            if key in _WRAPPED_LAYER_KEYS:
                value.setdefault("module", "keras.layers")
                changes.append("nested-layer-module")
                _normalize_layer(value, changes, in_functional=False)
            elif "dtype" in value["config"] and key.endswith(("_initializer", "_regularizer", "_constraint")):
                del value["config"]["dtype"]
                changes.append("initializer-dtype")


def _explicit_sequential_input(model, changes):
    """Give a Sequential an explicit InputLayer instead of ``batch_input_shape`` on its first layer."""
    layers = model["config"]["layers"]
    if not layers or layers[0]["class_name"] == "InputLayer":
        return
    first = layers[0]["config"]
    if "batch_input_shape" not in first:
        return
    layers.insert(
        0,
        {
            "class_name": "InputLayer",
            "config": {
                "batch_input_shape": first.pop("batch_input_shape"),
                "dtype": first.get("dtype", "float32"),
                "sparse": False,
                "name": f"{first['name']}_input",
            },
        },
    )
    changes.append("sequential-explicit-input")


def _sequential_to_functional(layer, changes):
    """Turn a nested Sequential into the equivalent functional config, whose node indices both Kerases agree on."""
    layers = layer["config"]["layers"]
    if not layers or layers[0]["class_name"] != "InputLayer":
        return  # no known input shape: left as written
    chained = []
    previous = None
    for sub in layers:
        sub = dict(sub, name=layer_name(sub), inbound_nodes=[[[previous, 0, 0, {}]]] if previous else [])
        chained.append(sub)
        previous = sub["name"]
    layer["class_name"] = "Model"
    layer["config"] = {
        "name": layer["config"].get("name", layer_name(layer)),
        "layers": chained,
        "input_layers": [[chained[0]["name"], 0, 0]],
        "output_layers": [[chained[-1]["name"], 0, 0]],
    }
    changes.append("nested-sequential-as-functional")


def _inline_consumed_models(model, changes):
    """Inline every nested functional model whose outputs feed another layer of ``model``.

    Keras 2 and tf_keras count a nested model's calls from node 1 (node 0 is its own graph); Keras 3's legacy loader
    does so for ``output_layers`` but not for layers that consume the nested model, so no single config with such
    a consumer loads in both. Inlined, the nested model's layers become shared layers of the parent: the same
    computation, the same weights (one group per inner layer), node indices that both loaders read alike.
    """
    while True:
        layers = model["config"]["layers"]
        consumed = {entry[0] for layer in layers for node in layer.get("inbound_nodes") or [] for entry in node}
        nested = next(
            (l for l in layers if l["class_name"] in FUNCTIONAL_CLASSES and layer_name(l) in consumed), None
        )
        if nested is None:
            return
        _inline(model, nested)
        changes.append("nested-model-inlined")


def _inline(model, nested):
    name = layer_name(nested)
    inner = nested["config"]
    inner_inputs = [ref[0] for ref in inner["input_layers"]]
    inner_layers = [l for l in inner["layers"] if layer_name(l) not in inner_inputs]
    counts = {layer_name(l): len(l.get("inbound_nodes") or []) for l in inner_layers}
    calls = nested.get("inbound_nodes") or []
    clashes = set(counts) & {layer_name(l) for l in model["config"]["layers"] if l is not nested}
    if clashes:
        raise UnsupportedModel(
            f"The nested model {name!r} cannot be inlined for Keras 3: its layer names are used outside it too. "
            f"Expected unique layer names. Received: {sorted(clashes)}. Pass --keep-config to write the config as "
            f"the writer did (tf_keras loads it)."
        )

    def at_call(entry, call):
        target, index, tensor, rest = entry[0], entry[1], entry[2], list(entry[3:])
        if target in inner_inputs:
            source = calls[call][inner_inputs.index(target)]
            return [source[0], source[1], source[2]] + rest
        return [target, call * counts[target] + index, tensor] + rest

    def outer(entry):
        if entry[0] != name:
            return entry
        call = entry[1] - 1  # a nested model's calls count from 1
        inner_output = inner["output_layers"][entry[2]]
        return at_call(list(inner_output[:3]) + list(entry[3:]), call)

    for layer in inner_layers:
        own = layer.get("inbound_nodes") or []
        layer["inbound_nodes"] = [[at_call(e, c) for e in node] for c in range(len(calls)) for node in own]
    rebuilt = []
    for layer in model["config"]["layers"]:
        if layer is nested:
            rebuilt.extend(inner_layers)
            continue
        layer["inbound_nodes"] = [[outer(e) for e in node] for node in layer.get("inbound_nodes") or []]
        rebuilt.append(layer)
    model["config"]["layers"] = rebuilt
    model["config"]["output_layers"] = [outer(ref) for ref in model["config"]["output_layers"]]


# Optimizer arguments that Keras 2 spelled differently from Keras 3 (Keras 3 rejects the old names).
_OPTIMIZER_RENAMES = {"lr": "learning_rate"}
# Loss aliases that Keras 3's legacy loader cannot resolve, and the names that Keras 3 and tf_keras share.
_LOSS_RENAMES = {
    "mse": "mean_squared_error",
    "MSE": "mean_squared_error",
    "mae": "mean_absolute_error",
    "MAE": "mean_absolute_error",
    "mape": "mean_absolute_percentage_error",
    "MAPE": "mean_absolute_percentage_error",
    "msle": "mean_squared_logarithmic_error",
    "MSLE": "mean_squared_logarithmic_error",
    "kld": "kl_divergence",
    "KLD": "kl_divergence",
    "kullback_leibler_divergence": "kl_divergence",
    "logcosh": "log_cosh",
    "cosine_proximity": "cosine_similarity",
    "cosine": "cosine_similarity",
}


def _rename_losses(value):
    if isinstance(value, str):
        return _LOSS_RENAMES.get(value, value)
    if isinstance(value, list):
        return [_rename_losses(v) for v in value]
    if isinstance(value, dict):
        return {k: _rename_losses(v) for k, v in value.items()}
    return value


def normalize_training_config(training_config):
    """Return ``(training_config, changes)`` with optimizer arguments spelled as Keras 3 and tf_keras accept them.

    A zero ``decay`` (Keras 2's default) is dropped: Keras 3 no longer has the argument. A non-zero one is kept,
    and Keras 3 ignores it with a warning of its own.

    Example:
        >>> normalize_training_config({"optimizer_config": {"class_name": "Adam", "config": {"lr": 0.1,
        ...     "decay": 0.0}}})
        ({'optimizer_config': {'class_name': 'Adam', 'config': {'learning_rate': 0.1}}}, ['optimizer-arguments'])
    """
    config = copy.deepcopy(training_config)
    changes = []
    optimizer = (config.get("optimizer_config") or {}).get("config")
    if isinstance(optimizer, dict):
        for old, new in _OPTIMIZER_RENAMES.items():
            if old in optimizer:
                optimizer.setdefault(new, optimizer.pop(old))
                changes.append("optimizer-arguments")
        if optimizer.get("decay") == 0.0:
            del optimizer["decay"]
            changes.append("optimizer-arguments")
    loss = _rename_losses(config.get("loss"))
    if loss != config.get("loss"):
        config["loss"] = loss
        changes.append("loss-names")
    return config, list(dict.fromkeys(changes))
