"""Recognise multi-GPU wrappers in a Keras model config by the shape of their graph, and unroll them.

A data-parallel wrapper (``keras.utils.multi_gpu_model``, tf.keras' copy, kuza55's ``make_parallel``, avolkov1's
``make_parallel``) always has the same graph, whatever its layers are called::

    input_k ──> slice_(r,k) ──> template (one nested model layer, called once per replica r) ──> merge_j (axis 0)

Everything here works on the JSON config alone. The slice layers' stored code is never decoded, let alone run:
a wrapper is recognised from which layer feeds which, the merge axis, and the slice layers' plain ``arguments``.
"""

from dataclasses import dataclass, field
from typing import List, Optional

MODEL_CLASSES = ("Model", "Functional", "Sequential")
FUNCTIONAL_CLASSES = ("Model", "Functional")

# Slice-layer `arguments` key sets, as each writer spelled them (legacy-format.md §3.4).
_SLICE_ARGUMENTS = {
    frozenset({"i", "parts"}): "keras",
    frozenset({"idx", "parts"}): "kuza55",
    frozenset({"ngpus", "part"}): "avolkov1",
    frozenset({"ngpus", "part", "dev"}): "avolkov1",
}


@dataclass
class WrapperLevel:
    """One level of data-parallel wrapping: a wrapper model around a nested template layer."""

    name: str
    variant: str
    replicas: int
    template_layer: str
    input_layers: List[str]
    slice_layers: List[str]
    merge_layers: List[str]

    def to_dict(self):
        return {
            "name": self.name,
            "variant": self.variant,
            "replicas": self.replicas,
            "template_layer": self.template_layer,
            "inputs": self.input_layers,
            "slice_layers": self.slice_layers,
            "merge_layers": self.merge_layers,
        }


@dataclass
class Unrolled:
    """A model config with every wrapper level peeled off: ``levels`` (outermost first) and the inner template."""

    template: dict
    levels: List[WrapperLevel] = field(default_factory=list)

    @property
    def depth(self):
        return len(self.levels)

    @property
    def is_wrapper(self):
        return bool(self.levels)

    @property
    def output_renames(self):
        """Map each outermost merge name to the template output name at the same position."""
        if not self.levels:
            return {}
        return dict(zip(self.levels[0].merge_layers, output_names(self.template)))


def layer_name(layer):
    """The name of a layer entry in a model config (Keras 1 and 2 both keep it in ``config.name``)."""
    return layer.get("name") or layer["config"]["name"]


def model_layers(model_config):
    """The layer entries of a ``Model``/``Sequential`` config, whatever the writer (2.0/2.1 Sequential: a list)."""
    config = model_config["config"]
    return config if isinstance(config, list) else config.get("layers", [])


def walk_layers(model_config):
    """Every layer entry of a model config, nested models' layers included (depth first, in config order).

    Example:
        >>> inner = {"class_name": "Sequential", "config": {"name": "inner", "layers": [
        ...     {"class_name": "Dense", "config": {"name": "d"}}]}}
        >>> [layer_name(l) for l in walk_layers({"class_name": "Sequential", "config": {"layers": [inner]}})]
        ['inner', 'd']
    """
    for layer in model_layers(model_config):
        yield layer
        if layer["class_name"] in MODEL_CLASSES:
            yield from walk_layers(layer)


def model_name(model_config):
    config = model_config["config"]
    return config.get("name") if isinstance(config, dict) else None


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
            nodes.append([(entry[0], entry[1], entry[2]) for entry in node])
    return nodes


def _keras_histories(value):
    if isinstance(value, dict):
        history = (value.get("config") or {}).get("keras_history") if value.get("class_name") == \
            "__keras_tensor__" else None
        if history:
            return [tuple(history)]
        return [h for item in value.values() for h in _keras_histories(item)]
    if isinstance(value, (list, tuple)):
        return [h for item in value for h in _keras_histories(item)]
    return []


def _is_axis0_merge(layer):
    config = layer.get("config", {})
    if layer["class_name"] == "Concatenate":
        return config.get("axis") in (0, [0])
    if layer["class_name"] == "Merge":
        return config.get("mode") == "concat" and config.get("concat_axis") == 0
    return False


def detect_wrapper(model_config) -> Optional[WrapperLevel]:
    """Return the :class:`WrapperLevel` when ``model_config`` is a data-parallel wrapper, else ``None``.

    Example:
        >>> import json
        >>> config = json.load(open("fixtures/files/k224_functional_bn_x2_config.json"))
        >>> level = detect_wrapper(config)
        >>> level.variant, level.replicas, level.template_layer, level.merge_layers
        ('keras', 2, 'template', ['out_a', 'out_b'])
    """
    if model_config.get("class_name") not in FUNCTIONAL_CLASSES or not isinstance(model_config.get("config"), dict):
        return None
    layers = {layer_name(layer): layer for layer in model_layers(model_config)}
    inputs = input_names(model_config)
    outputs = model_refs(model_config, "output_layers")
    if not inputs or not outputs or any(name not in layers for name in inputs):
        return None

    # Every output is an axis-0 merge of the same nested model's outputs, one per replica.
    template_name, replica_nodes = None, None
    for position, ref in enumerate(outputs):
        merge = layers.get(ref[0])
        if merge is None or not _is_axis0_merge(merge):
            return None
        nodes = inbound_nodes(merge, layers)
        if len(nodes) != 1 or len(nodes[0]) < 2:
            return None
        sources = {entry[0] for entry in nodes[0]}
        node_indices = [entry[1] for entry in nodes[0]]
        if len(sources) != 1 or any(entry[2] != position for entry in nodes[0]):
            return None
        source = sources.pop()
        if template_name not in (None, source) or replica_nodes not in (None, node_indices):
            return None
        template_name, replica_nodes = source, node_indices
    template = layers.get(template_name)
    if template is None or template["class_name"] not in MODEL_CLASSES or len(set(replica_nodes)) != len(replica_nodes):
        return None

    # Each replica's call of the template is fed by slice layers, one per wrapper input, each fed by that input.
    template_nodes = inbound_nodes(template, layers)
    slices = []
    for node_index in replica_nodes:
        if not 1 <= node_index <= len(template_nodes):
            return None
        node = template_nodes[node_index - 1]  # node 0 is the template's own call inside itself
        if len(node) != len(inputs):
            return None
        for input_name, (slice_name, _, _) in zip(inputs, node):
            slice_layer = layers.get(slice_name)
            if slice_layer is None or slice_layer["class_name"] != "Lambda":
                return None
            if [[entry[0] for entry in n] for n in inbound_nodes(slice_layer, layers)] != [[input_name]]:
                return None
            slices.append(slice_name)

    merges = [ref[0] for ref in outputs]
    if set(layers) != set(inputs) | set(slices) | {template_name} | set(merges):
        return None  # something else computes in this graph: not a pure wrapper
    replicas = len(replica_nodes)
    variant = _variant([layers[name] for name in slices], replicas)
    if variant is None:
        return None
    return WrapperLevel(
        name=model_name(model_config),
        variant=variant,
        replicas=replicas,
        template_layer=template_name,
        input_layers=inputs,
        slice_layers=slices,
        merge_layers=merges,
    )


def _variant(slice_layers, replicas):
    """Name the writer from the slice layers' plain arguments; ``None`` when they contradict a replica split."""
    configs = [layer["config"] for layer in slice_layers]
    keys = {frozenset((config.get("arguments") or {}).keys()) for config in configs}
    if len(keys) != 1:
        return None
    variant = _SLICE_ARGUMENTS.get(keys.pop(), "generic")
    if variant != "generic":
        index_key = {"keras": "i", "kuza55": "idx", "avolkov1": "part"}[variant]
        parts_key = "ngpus" if variant == "avolkov1" else "parts"
        arguments = [config["arguments"] for config in configs]
        if any(args[parts_key] != replicas for args in arguments):
            return None
        per_replica = len(arguments) // replicas
        if [args[index_key] for args in arguments] != [r for r in range(replicas) for _ in range(per_replica)]:
            return None
    if variant == "keras" and any("tensorflow" in str(config.get("module", "")) for config in configs):
        variant = "tf.keras"
    return variant


def unroll(model_config) -> Unrolled:
    """Peel every wrapper level off ``model_config``; a plain model comes back with no levels.

    Example:
        >>> unroll({"class_name": "Sequential", "config": {"name": "s", "layers": []}}).depth
        0
    """
    levels = []
    current = model_config
    while True:
        level = detect_wrapper(current)
        if level is None:
            return Unrolled(template=current, levels=levels)
        levels.append(level)
        nested = next(l for l in model_layers(current) if layer_name(l) == level.template_layer)
        current = {"class_name": nested["class_name"], "config": nested["config"]}
