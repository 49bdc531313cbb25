"""Read a Keras model config (the JSON of ``model.to_json()`` or a file's ``model_config``) as plain dicts.

Every writer spelled configs a little differently: Keras 1 and 2 keep a layer's name in ``config.name`` (Keras 2
also at the top), Keras 2.0/2.1 write a Sequential's config as a bare list, Keras 3 writes inbound nodes as
``{"args": ..., "kwargs": ...}`` and single inputs flat. These accessors hide that; the walkers are the one way to
visit nested models and wrapped layers (``Bidirectional``, ``TimeDistributed``, RNN cells).
"""

import copy

MODEL_CLASSES = ("Model", "Functional", "Sequential")
FUNCTIONAL_CLASSES = ("Model", "Functional")
#: Recurrent layer classes of every era, and how many gates their kernels stack (Keras 2 layout).
RECURRENT_GATES = {"LSTM": 4, "GRU": 3, "SimpleRNN": 1, "ConvLSTM2D": 4, "CuDNNLSTM": 4, "CuDNNGRU": 3}
RECURRENT_CLASSES = tuple(RECURRENT_GATES)
#: Keys under which a layer config holds another layer's config.
WRAPPED_LAYER_KEYS = ("layer", "backward_layer", "cell")


#: The values a decoded JSON config holds besides dicts and lists: immutable, so a copy shares them.
_JSON_SCALARS = (str, int, float, bool, type(None))


def copy_config(value):
    """A deep copy of a config (dicts, lists and JSON scalars), for a rewrite that must not touch the original.

    Three times faster than ``copy.deepcopy``, which records every object it copies: a small wrapper's repair
    copies its config several times. Anything else inside (a tuple, an array) is copied by ``copy.deepcopy``.

    Example:
        >>> original = {"layers": [{"name": "d", "units": 1}]}
        >>> copied = copy_config(original); copied["layers"][0]["units"] = 2
        >>> original["layers"][0]["units"]
        1
    """
    kind = type(value)
    if kind is dict:
        return {key: item if type(item) in _JSON_SCALARS else copy_config(item) for key, item in value.items()}
    if kind is list:
        return [item if type(item) in _JSON_SCALARS else copy_config(item) for item in value]
    if kind in _JSON_SCALARS:
        return value
    return copy.deepcopy(value)


def layer_name(layer):
    """The name of a layer entry in a model config (Keras 1 and 2 both keep it in ``config.name``)."""
    return layer.get("name") or layer["config"]["name"]


def model_layers(model_config):
    """The layer entries of a ``Model``/``Sequential`` config, whatever the writer (2.0/2.1 Sequential: a list)."""
    config = model_config["config"]
    return config if isinstance(config, list) else config.get("layers", [])


def is_model(layer):
    return layer.get("class_name") in MODEL_CLASSES


def wrapped_layers(layer):
    """The layer configs held inside ``layer`` (a Bidirectional's ``layer`` and ``backward_layer``, an RNN's cell,
    a StackedRNNCells' ``cells``)."""
    config = layer.get("config")
    if not isinstance(config, dict):
        return []
    held = [
        config[key] for key in WRAPPED_LAYER_KEYS if isinstance(config.get(key), dict) and "class_name" in config[key]
    ]
    cells = config.get("cells")
    if isinstance(cells, list):
        held += [cell for cell in cells if isinstance(cell, dict) and "class_name" in cell]
    return held


def walk_layers(model_config, wrapped=False):
    """Every layer entry of a model config, nested models' layers included (depth first, in config order).

    With ``wrapped``, layers held by other layers (``Bidirectional(LSTM)``'s LSTM) are visited too. The walk uses
    an explicit stack, so no config is too deep for it.

    Example:
        >>> inner = {"class_name": "Sequential", "config": {"name": "inner", "layers": [
        ...     {"class_name": "Bidirectional", "config": {"name": "b", "layer": {"class_name": "LSTM",
        ...      "config": {"name": "l"}}}}]}}
        >>> [layer_name(l) for l in walk_layers({"class_name": "Sequential", "config": {"layers": [inner]}})]
        ['inner', 'b']
        >>> [layer_name(l) for l in walk_layers({"class_name": "Sequential", "config": {"layers": [inner]}}, True)]
        ['inner', 'b', 'l']
    """
    stack = list(reversed(model_layers(model_config)))
    while stack:
        layer = stack.pop()
        yield layer
        children = list(model_layers(layer)) if is_model(layer) else []
        if wrapped:
            children += wrapped_layers(layer)
        stack.extend(reversed(children))


def walk_models(model_config):
    """The model config itself and every model nested in it, outermost first."""
    yield model_config
    for layer in walk_layers(model_config):
        if is_model(layer):
            yield layer


def model_name(model_config):
    """A model config's name; for a Keras <= 2.2 list-form Sequential, the name its layer entry has in the parent.

    Example:
        >>> model_name({"class_name": "Sequential", "name": "sequential_1", "config": [{"class_name": "Dense"}]})
        'sequential_1'
    """
    config = model_config["config"]
    if isinstance(config, dict) and config.get("name"):
        return config["name"]
    return model_config.get("name")


def _unnamed_model(layer):
    if not (isinstance(layer, dict) and is_model(layer)) or layer.get("name"):
        return False
    config = layer.get("config")
    return isinstance(config, list) or (isinstance(config, dict) and not config.get("name"))


def name_unnamed_models(model_config, layer_names=()):
    """Give each nested model without a name the name its weights were saved under; the config when none lacks one.

    Keras 1.2-2.1 wrote a Sequential's config as a bare list of entries without names, so a Sequential added to a
    Sequential is named nowhere in the config. Its weights are the group that the file's ``layer_names`` (every
    layer of the outer Sequential, in order: ``sequential_1``) lists at the same place. A deeper one, whose name
    no weight keeps, gets a fresh ``sequential_N``. The renamed config is a copy.

    Example:
        >>> inner = {"class_name": "Sequential", "config": [{"class_name": "Dense", "config": {"name": "d"}}]}
        >>> outer = {"class_name": "Sequential", "config": [inner, {"class_name": "Dense", "config": {"name": "o"}}]}
        >>> [layer_name(l) for l in model_layers(name_unnamed_models(outer, ["sequential_1", "o"]))]
        ['sequential_1', 'o']
    """
    if not any(_unnamed_model(layer) for layer in walk_layers(model_config)):
        return model_config
    config = copy_config(model_config)
    top, names = model_layers(config), [str(name) for name in layer_names]
    positional = (
        config.get("class_name") == "Sequential"
        and len(names) == len(top)
        and all(_unnamed_model(entry) or layer_name(entry) == name for entry, name in zip(top, names))
    )
    taken = set(names) | {
        layer_name(layer) for layer in walk_layers(config) if isinstance(layer, dict) and not _unnamed_model(layer)
    }
    fresh = (f"sequential_{n}" for n in range(1, 1 << 30) if f"sequential_{n}" not in taken)
    for layer in walk_layers(config):
        if _unnamed_model(layer):
            at = next((i for i, entry in enumerate(top) if entry is layer), None)
            layer["name"] = names[at] if positional and at is not None else next(fresh)
    return config


def model_refs(model_config, key):
    """A functional config's ``input_layers`` or ``output_layers`` as ``[name, node, tensor]`` lists.

    Keras 3 writes a single input or output flat (``["inp", 0, 0]``); Keras 1 and 2 always nest it.
    """
    refs = model_config["config"].get(key) or []
    return [refs] if refs and isinstance(refs[0], str) else refs


def input_names(model_config):
    """Names of the model's input layers, in order."""
    if model_config["class_name"] == "Sequential":
        layers = model_layers(model_config)
        first = layer_name(layers[0]) if layers else None
        if layers and layers[0]["class_name"] == "InputLayer":
            return [first]
        return [f"{first}_input"] if first else []
    return [ref[0] for ref in model_refs(model_config, "input_layers")]


def output_names(model_config):
    """Names of the layers whose outputs are the model's outputs, in order (duplicates kept, as Keras did)."""
    if model_config["class_name"] == "Sequential":
        layers = model_layers(model_config)
        return [layer_name(layers[-1])] if layers else []
    return [ref[0] for ref in model_refs(model_config, "output_layers")]


def inbound_nodes(layer, layers=None):
    """A layer's inbound nodes as lists of ``(layer name, node index, tensor index)``, in Keras 2's numbering.

    Keras 3 writes a node as ``{"args": [...], "kwargs": {...}}`` whose tensors carry ``keras_history``, and counts
    a nested model's calls from 0 where Keras 2 counts from 1; with ``layers`` (name -> config) such references
    are renumbered the Keras 2 way.
    """
    nodes = []
    for node in layer.get("inbound_nodes") or []:
        if isinstance(node, dict):
            entries = []
            for name, index, tensor in _keras_histories(node.get("args")):
                nested = layers is not None and (layers.get(name) or {}).get("class_name") in MODEL_CLASSES
                entries.append((name, index + 1 if nested else index, tensor))
            nodes.append(entries)
        else:
            if node and isinstance(node[0], str):  # tf.keras 2.4+ op layers: one flat [name, node, tensor, kwargs]
                node = [node]
            nodes.append([(entry[0], entry[1], entry[2]) for entry in node])
    return nodes


def _keras_histories(value):
    found, stack = [], [value]
    while stack:
        item = stack.pop()
        if isinstance(item, dict):
            history = (
                (item.get("config") or {}).get("keras_history")
                if item.get("class_name") == "__keras_tensor__"
                else None
            )
            if history:
                found.append(tuple(history))
            else:
                stack.extend(reversed(list(item.values())))
        elif isinstance(item, (list, tuple)):
            stack.extend(reversed(item))
    return found
