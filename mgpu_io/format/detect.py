"""Recognise multi-GPU wrappers by the shape of their graph, and unroll them: one answer for every kind of file.

A data-parallel wrapper (``keras.utils.multi_gpu_model``, tf.keras' copy, kuza55's ``make_parallel``, avolkov1's
``make_parallel``, and any copy of them) always has the same graph, whatever its layers are called::

    input_k ──> slice_(r,k) ──> template (one nested model layer, called once per replica r) ──> merge_j (axis 0)

:func:`detect_wrapper` reads that shape from a model config; :func:`detect_weights_only` reads what is left of it in
a weights-only file (layer names and which group holds weights). Both answer with a :class:`WrapperLevel`. The slice
layers' stored code is never decoded, let alone run: the writer is named from their plain ``arguments``
(:mod:`mgpu_io.format.wrapper_writers`).
"""

from dataclasses import dataclass, field
from typing import Optional

from mgpu_io.format.config import (
    FUNCTIONAL_CLASSES,
    MODEL_CLASSES,
    inbound_nodes,
    input_names,
    layer_name,
    model_layers,
    model_name,
    model_refs,
    output_names,
)
from mgpu_io.format.wrapper_writers import SLICE_NAME, Writer, identify


@dataclass
class WrapperLevel:
    """One level of data-parallel wrapping: a wrapper model around a nested template layer.

    ``writer`` and ``name`` are ``None`` where the file records no graph (weights-only files), and ``replicas`` is
    then counted from the slice layers' default names (``None`` when they were renamed).
    """

    name: Optional[str]
    writer: Optional[Writer]
    replicas: Optional[int]
    template_layer: str
    input_layers: list[str]
    slice_layers: list[str]
    merge_layers: list[str]

    @property
    def variant(self):
        return self.writer.name if self.writer is not None else None

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

    template: Optional[dict]
    levels: list[WrapperLevel] = field(default_factory=list)

    @property
    def depth(self):
        return len(self.levels)

    @property
    def is_wrapper(self):
        return bool(self.levels)

    @property
    def output_renames(self):
        """Map each outermost merge name to the template output name at the same position."""
        if not self.levels or self.template is None:
            return {}
        return dict(zip(self.levels[0].merge_layers, output_names(self.template)))


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
    if template_name is None or replica_nodes is None:
        return None
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
    writer = identify([layers[name]["config"] for name in slices], replicas)
    if writer is None:
        return None
    return WrapperLevel(
        name=model_name(model_config),
        writer=writer,
        replicas=replicas,
        template_layer=template_name,
        input_layers=inputs,
        slice_layers=slices,
        merge_layers=merges,
    )


def unroll(model_config) -> Unrolled:
    """Peel every wrapper level off ``model_config``; a plain model comes back with no levels.

    Example:
        >>> unroll({"class_name": "Sequential", "config": {"name": "s", "layers": []}}).depth
        0
    """
    levels: list[WrapperLevel] = []
    current = model_config
    while True:
        level = detect_wrapper(current)
        if level is None:
            return Unrolled(template=current, levels=levels)
        levels.append(level)
        nested = next(lyr for lyr in model_layers(current) if layer_name(lyr) == level.template_layer)
        current = {"class_name": nested["class_name"], "config": nested["config"]}


def detect_weights_only(layer_names, weight_names) -> Optional[WrapperLevel]:
    """Recognise a wrapper in a weights-only file, which keeps only ``layer_names`` and each group's weight names.

    There the wrapper is the one layer group holding every weight, with at least one input and two slices
    (weightless groups) before it and the weightless merges after it, and whose weights are named after the
    template's own layers rather than after the group itself.

    Args:
        layer_names: the file's ``layer_names``, in order.
        weight_names: a function from a layer name to its group's ``weight_names`` (``[]`` for no group).

    Example:
        >>> names = {"template": ["dense_1/kernel:0", "dense_1/bias:0"]}
        >>> level = detect_weights_only(["input_1", "lambda_1", "lambda_2", "template", "concatenate_1"],
        ...                             lambda name: names.get(name, []))
        >>> level.template_layer, level.replicas, level.slice_layers
        ('template', 2, ['lambda_1', 'lambda_2'])
    """
    weighted = [name for name in layer_names if weight_names(name)]
    if len(weighted) != 1:
        return None
    index = layer_names.index(weighted[0])
    before, after = layer_names[:index], layer_names[index + 1 :]
    own = {w.split("/")[0] for w in weight_names(weighted[0])}
    if len(before) < 3 or not after or own == {weighted[0]}:
        return None
    slices = [name for name in before if SLICE_NAME.match(name)]
    inputs = [name for name in before if name not in slices]
    replicas = len(slices) // len(inputs) if inputs and slices and len(slices) % len(inputs) == 0 else None
    return WrapperLevel(None, None, replicas, weighted[0], inputs, slices, after)
