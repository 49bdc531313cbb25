"""Read a TF-format (object-based) weights checkpoint as data, and write it as a legacy Keras weights-only HDF5 file.

``model.save_weights("x_ckpt")`` in tf.keras 2.x writes ``x_ckpt.index`` and ``x_ckpt.data-00000-of-00001`` (a TF
tensor bundle) instead of HDF5. Its keys are object paths through the model
(``layer_with_weights-0/layer_with_weights-1/gamma/.ATTRIBUTES/VARIABLE_VALUE``), not layer names; the variables'
own names (``bn/gamma``) survive only as ``full_name`` attributes in the ``_CHECKPOINTABLE_OBJECT_GRAPH`` entry
(docs/tf2-writers.md §5). No layer name of the wrapper (its inputs, slices, template, merges) is recorded at all,
so the layout comes from the model's architecture: the JSON config (or full ``.h5``) saved beside the checkpoint
pairs the wrapper's K-th layer with the object graph's ``layer-K`` child, level by level.

Why this is safe: the checkpoint is read with TensorFlow's ``CheckpointReader`` (``tf.train.load_checkpoint``:
``get_variable_to_shape_map`` and ``get_tensor``), which returns arrays and nothing else, and the object graph is
parsed as a protocol buffer (``TrackableObjectGraph``). No model is built, no saved function or Python object is
loaded, nothing stored is run. The structure is read in a forked child first (:mod:`mgpu_io.format.sandbox`), under a
time and memory limit, and every declared tensor size is checked against the data files' size before any value is
read, so a damaged or hostile bundle becomes a typed error, never a hang, a crash or a huge allocation.

The module is in three parts, by what a reader looks for: :mod:`mgpu_io.tf.bundle` reads the bundle and its object
graph (shared with :mod:`mgpu_io.tf.savedmodel`: a SavedModel's ``variables/`` folder is a bundle of the same kind),
this module matches it to a model (a config saved beside it, a freshly built model, or none: :func:`describe_checkpoint`), and
:mod:`mgpu_io.tf.legacy` writes the legacy layout. The names of the first and last are re-exported here.

Example:
    >>> import tempfile, pathlib
    >>> out = pathlib.Path(tempfile.mkdtemp()) / "weights.h5"
    >>> summary = checkpoint_to_h5("fixtures/tf2/tf22_functional_bn_x2_ckpt.index", out,
    ...                        config="fixtures/tf2/tf22_functional_bn_x2_config.json")
    >>> summary["layers"], summary["optimizer_found"], summary["optimizer"]
    (['inp', 'lambda', 'lambda_1', 'template', 'out_a', 'out_b'], True, False)
"""

import re
from pathlib import Path

from mgpu_io.errors import (
    InvalidArgument,
    NotAModelFile,
    Param,
    UnsupportedModel,
    WeightsMismatch,
)
from mgpu_io.format.kinds import TF_CHECKPOINT
from mgpu_io.tf.bundle import checkpoint_prefix, guarded, import_tensorflow, probed_tf, read_graph, weight_of
from mgpu_io.tf.legacy import (
    ConversionPlan,
    Weight,
    ascii_attr,
    check_h5_output,
    provenance,
    unique_names,
    write_conversion,
)

#: The model classes whose config lists nested layers (the template, a nested wrapper).
MODEL_CLASSES = frozenset({"Model", "Functional", "Sequential"})
#: Layers whose weights are not all trainable by default, with the local names of the non-trainable ones.
NON_TRAINABLE = {
    "BatchNormalization": ("moving_mean", "moving_variance"),
    "SyncBatchNormalization": ("moving_mean", "moving_variance"),
}

# --- a TF-format checkpoint --------------------------------------------------------------------------------------


def checkpoint_to_h5(path, output, *, config=None):
    """Write the TF-format checkpoint at ``path`` as a legacy Keras weights-only HDF5 file at ``output``.

    Args:
        path: the checkpoint: its ``.index`` file, one of its ``.data-NNNNN-of-NNNNN`` files, or its prefix.
        output: the ``.h5`` file to write (replaced atomically if it exists).
        config: the architecture saved beside the checkpoint: the JSON of ``model.to_json()`` or a full-model
            ``.h5`` of the same model. Required: the checkpoint itself records no layer names.

    Returns:
        A dict: ``kind`` (``"tf-checkpoint"``), ``output``, ``output_type`` (``"weights"``),
        ``tensorflow_version`` (``None``: a checkpoint does not record it), ``keras_version`` and ``backend`` (from
        ``config``, or ``None``), ``layers`` (the ``layer_names`` written), ``weights`` (datasets written),
        ``optimizer_found``, ``optimizer`` (always ``False``: a weights-only file has no place for it) and
        ``notes``.

    Raises:
        InvalidArgument: ``config`` is missing, or is a weights-only file.
        NotAModelFile: the checkpoint (or ``config``) is damaged or not what it should be.
        WeightsMismatch: the checkpoint does not hold the weights ``config`` describes.
        UnsupportedModel: a name-based TF 1 checkpoint, or weights that cannot be placed with certainty.
        MissingDependency: TensorFlow is not installed.
        OutputError: ``output`` cannot be written.
    """
    path = Path(path)
    prefix = checkpoint_prefix(path)
    if not Path(prefix + ".index").is_file():
        raise NotAModelFile(
            problem="The TF checkpoint has no index file",
            parameter="filepath",
            expected=f"{Path(prefix).name}.index beside its .data files",
            received=f"filepath={path} (no {prefix}.index)",
            fix="Check the path; pass the .index file or the prefix given to save_weights",
        )
    if config is None:
        raise _config_needed(path, prefix)
    if not Path(config).is_file():
        raise InvalidArgument(
            problem=(Param("config"), " names no file"),
            parameter="config",
            expected="the JSON config (model.to_json()) or full-model .h5 saved beside the checkpoint",
            received=(
                Param("config", config, text=f"config={config}"),
                f" ({'a folder' if Path(config).is_dir() else 'nothing'} is there)",
            ),
            fix="Check the path",
        )
    tf = import_tensorflow("Reading a TF checkpoint")
    check_h5_output(output, [prefix + ".index", *Path(prefix).parent.glob(Path(prefix).name + ".data-*")])

    def work():
        stored = _read_config(config)
        with guarded(path, "TF checkpoint"):
            graph = read_graph(tf, prefix, path)
            return _plan(graph, stored, path)

    plan = probed_tf(path, "TF checkpoint", work)
    write_conversion(tf, plan, output, path)
    return dict(plan.summary, output=str(output))


def _config_needed(path, prefix):
    folder = Path(prefix).parent
    beside = sorted(p.name for p in folder.glob("*.json")) if folder.is_dir() else []
    hint = f" (beside it: {', '.join(beside)})" if 0 < len(beside) <= 3 else ""
    return InvalidArgument(
        problem="A TF checkpoint records no layer names (only its variables' own names, such as 'd1/kernel'), so "
        "its weights cannot be laid out as a Keras file without the model's architecture",
        parameter="config",
        expected=(
            Param("config"),
            " the JSON saved beside it (model.to_json()) or a full-model .h5 of the same model",
        ),
        received=(f"filepath={path}, ", Param("config", None)),
        fix=("Pass the architecture: ", Param("config", "model.json"), hint),
    )


def _read_config(config):
    """The architecture to lay the weights out by (runs in the probe's child)."""
    from mgpu_io.format.read import WEIGHTS, open_stored

    with open_stored(config) as stored:
        if stored.file_type == WEIGHTS:
            raise InvalidArgument(
                problem=(Param("config"), " must describe the architecture"),
                parameter="config",
                expected="the JSON config (model.to_json()) or a full-model .h5",
                received=(
                    Param("config", config, text=f"config={config}"),
                    " (a weights-only file, which holds no architecture)",
                ),
                fix="Pass the JSON saved beside the checkpoint",
            )
        return {"model_config": stored.model_config, "keras_version": stored.keras_version, "backend": stored.backend}


def _plan(graph, stored, path):
    """Lay the checkpoint's weights out as the legacy writer would for the architecture in ``stored``."""
    from mgpu_io.format.config import layer_name

    model_config = stored["model_config"]
    optimizer = graph.child(0, "optimizer")
    slotted = {original for original, _, _ in graph.slots.get(optimizer, [])} if optimizer is not None else set()
    layers_config = model_layers_of(model_config, path)
    model_node, pairs = _pairs_somewhere(graph, layers_config, model_config, path)
    layers, used = [], set()
    for layer, node in pairs:
        trainable, frozen = checkpoint_layer_weights(graph, node, layer, path, slotted)
        nodes = trainable + frozen
        used.update(nodes)
        weights = []
        for node_id in nodes:
            variable = weight_of(graph, node_id, path)
            weights.append(Weight(variable.full_name + ":0", variable.key, variable.shape, variable.dtype))
        unique_names(layer_name(layer), weights, path)
        layers.append((layer_name(layer), weights))
    check_layers_with_weights(graph, model_node, [node for _, node in pairs], path)

    notes = []
    optimizer_variables = _optimizer_variables(graph)
    if optimizer_variables:
        notes.append(
            f"optimizer state ({len(optimizer_variables)} variables) left out: a weights-only file has no place for it"
        )
    others = sorted(
        graph.variables[n].full_name or graph.variables[n].key
        for n in set(graph.variables) - used - optimizer_variables
    )
    if others:
        notes.append(
            f"{len(others)} variables that belong to no layer left out: {', '.join(others[:5])}"
            f"{', ...' if len(others) > 5 else ''}"
        )
    if not stored["keras_version"]:
        notes.append("keras_version and backend not written: the config does not record them")
    versions = {"keras_version": ascii_attr(stored["keras_version"]), "backend": ascii_attr(stored["backend"])}
    names = [name for name, _ in layers]
    summary = {
        "kind": TF_CHECKPOINT,
        "input": str(path),
        "output_type": "weights",
        "tensorflow_version": None,
        "keras_version": stored["keras_version"],
        "backend": stored["backend"],
        "model": model_config.get("config", {}).get("name") if isinstance(model_config.get("config"), dict) else None,
        "layers": names,
        "weights": sum(len(w) for _, w in layers),
        "optimizer_found": bool(optimizer_variables),
        "optimizer": False,
        "notes": notes,
    }
    root_attrs = dict(versions, mgpu_io=provenance(TF_CHECKPOINT, None))
    return ConversionPlan(
        prefix=graph.prefix, full_model=False, layers=layers, root_attrs=root_attrs, weights_attrs={}, summary=summary
    )


def _pairs_somewhere(graph, layers_config, model_config, path):
    """The config's layers paired with the checkpoint's root model or, when it does not fit there, with a model
    inside it (the template of a wrapper, when ``config`` is the template's own architecture)."""
    try:
        return 0, pair_layers(graph, 0, layers_config, model_config, path)
    except WeightsMismatch as at_root:
        for _, node in _models_in(graph, path)[1:]:
            try:
                pairs = pair_layers(graph, node, layers_config, model_config, path)
                for layer, layer_node in pairs:
                    checkpoint_layer_weights(graph, layer_node, layer, path)  # the names must fit too
                return node, pairs
            except (WeightsMismatch, UnsupportedModel):
                continue
        raise at_root from None


def model_layers_of(model_config, path):
    """The layer entries of a model config, or :class:`NotAModelFile` when it lists none."""
    config = model_config.get("config") if isinstance(model_config, dict) else None
    layers = config if isinstance(config, list) else config.get("layers") if isinstance(config, dict) else None
    if not isinstance(layers, list) or not all(isinstance(layer, dict) and "class_name" in layer for layer in layers):
        raise NotAModelFile(
            problem="The config describes no layers",
            parameter="config",
            expected="a Keras model config with a `layers` list",
            received=(
                f"class_name={model_config.get('class_name') if isinstance(model_config, dict) else None!r} for "
                f"filepath={path}"
            ),
            fix="Pass the JSON saved beside the checkpoint (model.to_json())",
        )
    return layers


def pair_layers(graph, node, layers_config, model_config, path):
    """Pair a model's config layers with its object graph node's ``layer-K`` children.

    ``model.layers`` (which numbers the children) and the config list the same layers in the same order, except
    that a TF 2.3 Sequential config lists its InputLayer, which ``model.layers`` leaves out.

    Raises:
        WeightsMismatch: the counts differ: the config belongs to another model.
    """
    nodes = graph.numbered(node, "layer-", path)
    if len(nodes) == len(layers_config) - 1 and layers_config and layers_config[0]["class_name"] == "InputLayer":
        layers_config = layers_config[1:]
    if (
        len(nodes) == len(layers_config) + 1
        and model_config.get("class_name") == "Sequential"
        and layers_config
        and layers_config[0]["class_name"] != "InputLayer"
        and not graph.variables_under(nodes[0])
    ):
        nodes = nodes[1:]  # TF 1.15-2.2 track a Sequential's InputLayer as its layer-0; its config leaves it out
    if len(nodes) != len(layers_config):
        from mgpu_io.format.config import layer_name

        name = model_config.get("config", {}).get("name") if isinstance(model_config.get("config"), dict) else None
        raise WeightsMismatch(
            problem=(
                f"The config does not describe this checkpoint: model {name!r} has {len(layers_config)} layers in the "
                f"config and {len(nodes)} in the checkpoint"
            ),
            parameter="config",
            expected="the architecture the checkpoint was saved from",
            received=f"layers {[layer_name(lyr) for lyr in layers_config][:8]} for filepath={path}",
            fix="Pass the wrapper's own JSON (the multi-GPU model's to_json(), saved beside the checkpoint)",
        )
    return list(zip(layers_config, nodes))


def checkpoint_layer_weights(graph, node, layer, path, slotted=frozenset()):
    """The variable nodes of one layer as its legacy ``weights``: ``(trainable, non-trainable)``.

    A nested model gathers its layers' trainable weights in layer order, then their non-trainable ones (Keras'
    ``Model.weights``); a plain layer keeps its variables in creation order (the order the object graph stores
    them), with BatchNormalization's moving statistics non-trainable; ``trainable: false`` moves all of a layer's
    weights to the non-trainable part. ``slotted`` (the variables the optimizer holds slots for) must agree.
    """
    from mgpu_io.format.config import layer_name

    cls = layer["class_name"]
    config = layer.get("config") if isinstance(layer.get("config"), dict) else {}
    frozen_layer = config.get("trainable") is False
    if cls in MODEL_CLASSES:
        trainable, frozen = [], []
        pairs = pair_layers(graph, node, model_layers_of(layer, path), layer, path)
        for sub, sub_node in pairs:
            t, n = checkpoint_layer_weights(graph, sub_node, sub, path, slotted)
            trainable += t
            frozen += n
        check_layers_with_weights(graph, node, [n for _, n in pairs], path)
        own = set(graph.variables_under(node, skip=("optimizer", "keras_api"))) - set(trainable) - set(frozen)
        if own:
            raise UnsupportedModel(
                problem=(
                    f"The nested model {layer_name(layer)!r} holds variables of its own, outside its layers ("
                    f"{', '.join(sorted(graph.variables[n].full_name for n in own)[:4])}), whose place among its "
                    "weights the checkpoint does not record"
                ),
                parameter="filepath",
                expected="weights in layers only",
                received=f"filepath={path}",
                fix="Save the model in the TensorFlow that wrote it with model.save_weights('weights.h5') instead",
            )
        return ([], trainable + frozen) if frozen_layer else (trainable, frozen)
    if config.get("renorm"):
        raise UnsupportedModel(
            problem=(
                f"Layer {layer_name(layer)!r} is a BatchNormalization with renorm=True, whose extra statistics a "
                "checkpoint does not mark as trainable or not"
            ),
            parameter="filepath",
            expected="renorm=False",
            received=f"filepath={path}",
            fix="Save the model in the TensorFlow that wrote it with model.save_weights('weights.h5') instead",
        )
    nodes = graph.variables_under(node)
    name = layer_name(layer)
    for node_id in nodes:
        full_name = graph.variables[node_id].full_name
        if not _names_layer(full_name, name):
            raise WeightsMismatch(
                problem=f"The config does not describe this checkpoint: layer {name!r} holds the weight {full_name!r}",
                parameter="config",
                expected=f"weights named after the layer ({name + '/...'!r})",
                received=f"filepath={path}",
                fix="Pass the JSON saved beside the checkpoint (the same model's to_json())",
            )
    local = {target: local for local, target in graph.children[node]}
    moving = NON_TRAINABLE.get(cls, ())
    trainable = [n for n in nodes if local.get(n) not in moving]
    frozen = [n for n in nodes if local.get(n) in moving]
    if frozen_layer:
        return [], trainable + frozen
    _check_trainability(graph, layer, trainable, frozen, slotted, path)
    return trainable, frozen


def _names_layer(full_name, name):
    """Whether the variable name ``full_name`` (``d1/kernel``, ``d1_1/kernel``) lies in layer ``name``'s scope."""
    parts = full_name.split("/")[:-1]
    return any(part == name or re.fullmatch(re.escape(name) + r"_\d+", part) for part in parts)


def check_layers_with_weights(graph, node, layer_nodes, path, holds=None):
    """The ``layer_with_weights-J`` children must be exactly the ``layer-K`` children that hold variables
    (``holds(node)``: the variables of a layer node; default: every variable reachable from it).

    Raises:
        NotAModelFile: they differ: the object graph is damaged (or not a Keras model's).
    """
    weighted = graph.numbered(node, "layer_with_weights-", path)
    holds = holds or graph.variables_under
    holding = [n for n in layer_nodes if holds(n)]
    if weighted != holding:
        raise NotAModelFile(
            problem="The object graph is damaged: the layers with weights are not the ones that hold variables",
            parameter="filepath",
            expected="layer_with_weights-J to name the layers holding variables, in order",
            received=f"{weighted[:8]} and {holding[:8]} in filepath={path}",
            fix="Restore it from its source",
        )


def _check_trainability(graph, layer, trainable, frozen, slotted, path):
    """Where the optimizer holds slots, they mark the trainable weights: refuse a layout they contradict."""
    from mgpu_io.format.config import layer_name

    if not slotted:
        return  # no optimizer state: nothing to check against
    wrong = [n for n in trainable if n not in slotted] + [n for n in frozen if n in slotted]
    if wrong:
        names = [graph.variables[n].full_name for n in wrong]
        raise UnsupportedModel(
            problem=(
                f"Cannot tell with certainty which weights of layer {layer_name(layer)!r} are trainable: the "
                f"optimizer's slots contradict the layer's class ({layer['class_name']})"
            ),
            parameter="filepath",
            expected="slots for its trainable weights only",
            received=f"{names[:4]} in filepath={path}",
            fix="Save the model in the TensorFlow that wrote it with model.save_weights('weights.h5') instead",
        )


def _optimizer_variables(graph):
    """The nodes of every optimizer's variables and slots (the model's own and any inner wrapper's)."""
    found = set()
    for node, slots in graph.slots.items():
        found |= {slot for _, _, slot in slots}
        found |= set(graph.variables_under(node, skip=()))
    for children in graph.children:
        for local, target in children:
            if local == "optimizer":
                found |= set(graph.variables_under(target, skip=()))
    return found


# --- a TF-format checkpoint into a freshly built model -----------------------------------------------------------


def checkpoint_to_h5_for(path, output, targets):
    """Write the weights of the TF checkpoint at ``path`` that belong to a freshly built model as a legacy
    weights-only ``.h5`` at ``output``, with no config: the model *is* the architecture.

    The checkpoint's object graph is searched (from its root, through the models' ``layer-K`` children: the
    template sits inside the wrapper's graph) for the model whose layers with weights hold, in order, variables of
    the shapes the fresh model's weighted layers have. A layer's variables keep their creation order (Keras'
    ``weights`` order; a BatchNormalization's moving statistics last).

    Args:
        targets: ``[(layer class name, [weight shapes])]`` of the fresh model's layers that have weights, in order
            (plain data: it crosses the probe's pipe).

    Returns:
        The summary dict of :func:`checkpoint_to_h5`, with ``model`` the node found (``"root"`` or its path of
        ``layer-K`` edges).

    Raises:
        WeightsMismatch: no model in the checkpoint has the fresh model's weighted layers (the closest is named).
    """
    path = Path(path)
    prefix = checkpoint_prefix(path)
    if not Path(prefix + ".index").is_file():
        raise NotAModelFile(
            problem="The TF checkpoint has no index file",
            parameter="filepath",
            expected=f"{Path(prefix).name}.index beside its .data files",
            received=f"filepath={path} (no {prefix}.index)",
            fix="Check the path; pass the .index file or the prefix given to save_weights",
        )
    tf = import_tensorflow("Reading a TF checkpoint")
    check_h5_output(output, [prefix + ".index", *Path(prefix).parent.glob(Path(prefix).name + ".data-*")])
    targets = [(cls, [tuple(shape) for shape in shapes]) for cls, shapes in targets]

    def work():
        with guarded(path, "TF checkpoint"):
            graph = read_graph(tf, prefix, path)
            return _plan_for(graph, targets, path)

    plan = probed_tf(path, "TF checkpoint", work)
    write_conversion(tf, plan, output, path)
    return dict(plan.summary, output=str(output))


def _models_in(graph, path):
    """``(where, node)`` of the root and of every model reachable through ``layer-K`` edges, outermost first."""
    found, queue, seen = [], [("root", 0)], set()
    while queue:
        where, node = queue.pop(0)
        if node in seen:
            continue
        seen.add(node)
        layers = graph.numbered(node, "layer-", path)
        if not layers:
            continue
        found.append((where, node))
        queue.extend((f"{where}/layer-{k}", child) for k, child in enumerate(layers))
    return found


def _candidate(graph, node, targets, path):
    """The fresh model's weighted layers laid against ``node``'s ``layer_with_weights-J`` children: ``(layers,
    mismatches)``, each layer ``(checkpoint scope, [variable nodes])``."""
    weighted = graph.numbered(node, "layer_with_weights-", path)
    layers, mismatches = [], []
    if len(weighted) != len(targets):
        mismatches.append(f"{len(weighted)} layers with weights, the model {len(targets)}")
    for index, (child, (cls, shapes)) in enumerate(zip(weighted, targets)):
        nodes = graph.variables_under(child)
        local = {target: local for local, target in graph.children[child]}
        moving = NON_TRAINABLE.get(cls, ())
        nodes = [n for n in nodes if local.get(n) not in moving] + [n for n in nodes if local.get(n) in moving]
        stored = [tuple(graph.variables[n].shape) for n in nodes]
        if stored != shapes:
            mismatches.append(f"layer_with_weights-{index} holds {stored}, the model's {cls} {shapes}")
        names = [graph.variables[n].full_name for n in nodes]
        scope = names[0].split("/")[0] if names and names[0] else f"layer_with_weights-{index}"
        layers.append((scope, nodes))
    return layers, mismatches


def _plan_for(graph, targets, path):
    candidates = []
    for order, (where, node) in enumerate(_models_in(graph, path)):
        layers, mismatches = _candidate(graph, node, targets, path)
        if not mismatches:
            return _layers_plan(graph, layers, where, path)
        matched = len(layers) - sum(1 for text in mismatches if text.startswith("layer_with_weights-"))
        candidates.append(((matched, order), where, mismatches))  # the most layers that fit, then the innermost
    closest = max(candidates)[1:] if candidates else ("root", ["no model in the object graph"])
    raise WeightsMismatch(
        problem="The TF checkpoint holds no model with the weights of the freshly built model",
        parameter="source",
        expected=f"a model (the checkpoint's own, or one inside it such as a wrapper's template) whose layers with "
        f"weights hold, in order, weights of the shapes {[shapes for _, shapes in targets][:6]}",
        received=f"the closest, {closest[0]}, has {'; '.join(closest[1][:3])} in filepath={path}",
        fix=(
            "Build the template the checkpoint was saved from, or pass ",
            Param("config"),
            " the JSON saved beside it",
        ),
    )


def _layers_plan(graph, layers, where, path):
    planned, used = [], set()
    for index, (scope, nodes) in enumerate(layers):
        used.update(nodes)
        weights = []
        for node_id in nodes:
            variable = weight_of(graph, node_id, path)
            weights.append(Weight(variable.full_name + ":0", variable.key, variable.shape, variable.dtype))
        name = scope if scope not in [n for n, _ in planned] else f"{scope}_{index}"
        unique_names(name, weights, path)
        planned.append((name, weights))
    optimizer_variables = _optimizer_variables(graph)
    notes = [f"the weights of the model at {where} of the object graph"]
    if optimizer_variables:
        notes.append(
            f"optimizer state ({len(optimizer_variables)} variables) left out: a weights-only file has no place for it"
        )
    others = sorted(
        graph.variables[n].full_name or graph.variables[n].key
        for n in set(graph.variables) - used - optimizer_variables
    )
    if others:
        notes.append(
            f"{len(others)} variables outside that model left out: {', '.join(others[:5])}"
            f"{', ...' if len(others) > 5 else ''}"
        )
    summary = {
        "kind": TF_CHECKPOINT,
        "input": str(path),
        "output_type": "weights",
        "tensorflow_version": None,
        "keras_version": None,
        "backend": None,
        "model": where,
        "layers": [name for name, _ in planned],
        "weights": sum(len(w) for _, w in planned),
        "optimizer_found": bool(optimizer_variables),
        "optimizer": False,
        "notes": notes,
    }
    root_attrs = {"keras_version": None, "backend": None, "mgpu_io": provenance(TF_CHECKPOINT, None)}
    return ConversionPlan(
        prefix=graph.prefix, full_model=False, layers=planned, root_attrs=root_attrs, weights_attrs={}, summary=summary
    )


# --- what a TF-format checkpoint holds, without its architecture ---------------------------------------------------


def describe_checkpoint(path):
    """What the TF checkpoint at ``path`` holds, read from its object graph alone (no config): the models in it
    (the root and those inside it: a wrapper's template), each with its number of layers and of layers with
    weights, the variables of the innermost model with weights (names and shapes), and the optimizer's variables.

    Returns:
        A dict: ``models`` (``[{"where", "layers", "weighted"}]``, outermost first), ``template`` (the ``where`` of
        the innermost model with weights), ``variables`` (``[{"name", "shape", "dtype"}]`` of that model),
        ``weights`` (their count), ``optimizer_variables`` and ``slots`` (counts).
    """
    path = Path(path)
    prefix = checkpoint_prefix(path)
    if not Path(prefix + ".index").is_file():
        raise NotAModelFile(
            problem="The TF checkpoint has no index file",
            parameter="filepath",
            expected=f"{Path(prefix).name}.index beside its .data files",
            received=f"filepath={path} (no {prefix}.index)",
            fix="Check the path; pass the .index file or the prefix given to save_weights",
        )
    tf = import_tensorflow("Reading a TF checkpoint")

    def work():
        with guarded(path, "TF checkpoint"):
            graph = read_graph(tf, prefix, path)
            models = []
            for where, node in _models_in(graph, path):
                weighted = graph.numbered(node, "layer_with_weights-", path)
                models.append(
                    {
                        "where": where,
                        "node": node,
                        "layers": len(graph.numbered(node, "layer-", path)),
                        "weighted": len(weighted),
                    }
                )
            inner = [
                m
                for m in models
                if m["weighted"]
                and not any(other["where"].startswith(m["where"] + "/") and other["weighted"] for other in models)
            ]
            template = inner[-1] if inner else None
            optimizer = _optimizer_variables(graph)
            nodes = []
            if template is not None:
                for child in graph.numbered(template["node"], "layer_with_weights-", path):
                    nodes += [n for n in graph.variables_under(child) if n not in optimizer]
            variables = [
                {
                    "name": graph.variables[n].full_name or graph.variables[n].key,
                    "shape": list(graph.variables[n].shape),
                    "dtype": graph.variables[n].dtype,
                }
                for n in nodes
            ]
            return {
                "models": [{k: v for k, v in m.items() if k != "node"} for m in models],
                "template": template["where"] if template else None,
                "variables": variables,
                "weights": len(variables),
                "optimizer_variables": len(optimizer),
                "slots": sum(len(slots) for slots in graph.slots.values()),
            }

    return probed_tf(path, "TF checkpoint", work)
