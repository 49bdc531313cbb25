"""Read a tf.keras 2.0–2.3 SavedModel folder as data, and write it as the legacy Keras full-model HDF5 file.

``model.save("dir", save_format="tf")`` in TF 2.0–2.3 writes ``saved_model.pb`` and a ``variables/`` checkpoint,
no HDF5 and no ``keras_metadata.pb`` (docs/tf2-writers.md §4). Everything a legacy ``model.save("x.h5")`` would have
written is in there, spread out:

- the Keras configs: node 0 of the SavedObjectGraph (``meta_graphs[0].object_graph_def``) is the model, and its
  ``user_object.metadata`` JSON holds ``model_config``, ``training_config``, ``keras_version`` and ``backend``
  (TF 2.2/2.3 write tuples as ``{"class_name": "__tuple__", "items": [...]}``, turned back into lists here, which
  makes ``model_config`` byte-identical to the h5 file's);
- the layers: the model node's children ``layer-K`` (``model.layers`` order), each with its metadata ``name``;
  each layer's ``trainable_variables`` list and ``keras_api/non_trainable_variables`` list give its legacy
  ``weights`` order (a nested template: all trainable weights, then the non-trainable ones);
- the variables' names (``d1/kernel``): the ``variable`` nodes of the graph; their values: the ``variables/``
  checkpoint, whose object graph has the same node ids (checked node by node here, and every name, shape and dtype
  is checked against both records);
- the optimizer: the model's ``optimizer`` child (``iter``) and its ``slot_variables`` (``m``, ``v``), laid out in
  the legacy flat order ``[iter, m_1..m_n, v_1..v_n]`` over the model's trainable variables.

Why this is safe: ``saved_model.pb`` is parsed as a protocol buffer (``saved_model_pb2.SavedModel``) and only its
object graph is read; its function library (the traced graphs) is never loaded, let alone executed; the variable
values are read with ``CheckpointReader``. ``tf.saved_model.load`` and ``load_model`` are never called, and the
slice Lambdas' bytecode stays an opaque string in the config. The parsing runs in a forked child under a time and
memory limit (:mod:`mgpu_io.format.sandbox`), so a damaged or hostile folder becomes a typed error.

Example:
    >>> import tempfile, pathlib
    >>> out = pathlib.Path(tempfile.mkdtemp()) / "model.h5"
    >>> summary = savedmodel_to_h5("fixtures/tf2/tf23_nested_depth2_savedmodel", out)
    >>> summary["tensorflow_version"], summary["layers"][3], summary["optimizer"]
    ('2.3.3', 'functional_1', True)
"""

import json
from pathlib import Path

from mgpu_io.errors import NotAModelFile, UnsupportedModel, WeightsMismatch
from mgpu_io.format.kinds import SAVEDMODEL
from mgpu_io.tf.bundle import (
    COUNTER_DTYPES,
    FLOAT_DTYPES,
    Graph,
    guarded,
    import_tensorflow,
    node_edges,
    probed_tf,
    read_graph,
    weight_of,
)
from mgpu_io.tf.checkpoint import check_layers_with_weights, model_layers_of, pair_layers
from mgpu_io.tf.legacy import (
    ConversionPlan,
    Weight,
    ascii_attr,
    check_h5_output,
    provenance,
    unique_names,
    write_conversion,
)

#: Largest ``saved_model.pb`` read (protocol buffers cannot exceed 2 GiB).
MAX_PB_BYTES = 2 << 30
#: Object-graph identifiers of a Keras model at node 0.
KERAS_MODELS = ("_tf_keras_model", "_tf_keras_network", "_tf_keras_sequential")
#: The order in which each tf.keras optimizer v2 creates its slots: its legacy ``weights`` are ``[iter]`` then each
#: slot name in turn over all trainable variables. Optimizers that interleave slots or keep other weights (Ftrl,
#: Nadam's momentum cache) are not listed: their state is left out rather than guessed.
SLOT_ORDER = {
    "Adam": ("m", "v", "vhat"),
    "Adamax": ("m", "v"),
    "RMSprop": ("rms", "momentum", "mg"),
    "SGD": ("momentum",),
    "Adagrad": ("accumulator",),
    "Adadelta": ("accum_grad", "accum_var"),
}
WHAT, VARIABLES = "SavedModel", "SavedModel's variables checkpoint"


def savedmodel_to_h5(path, output):
    """Write the SavedModel folder ``path`` as the legacy full-model HDF5 file ``output`` (replaced if it exists).

    Returns:
        A dict: ``kind`` (``"savedmodel"``), ``input``, ``output``, ``output_type`` (``"model"``),
        ``tensorflow_version`` (the writer's, from ``meta_info_def``), ``keras_version``, ``backend``, ``model``
        (the model's name), ``layers`` (the ``layer_names`` written), ``weights`` (datasets in ``model_weights``),
        ``optimizer_found`` (the SavedModel holds the model's optimizer state), ``optimizer`` (it was written as
        ``optimizer_weights``), ``optimizer_class`` and ``notes`` (what was left out, and why).

    Raises:
        NotAModelFile: ``path`` is not a SavedModel folder, or it is damaged.
        UnsupportedModel: a SavedModel that holds no Keras config this reader knows (TF >= 2.5 ``keras_metadata.pb``,
            a subclassed model, ``tf.saved_model.save`` of a plain ``tf.Module``), or weights it cannot place with
            certainty.
        WeightsMismatch: the variables do not match the model's own records.
        MissingDependency: TensorFlow is not installed.
        OutputError: ``output`` cannot be written.
    """
    folder = Path(path)
    check_folder(folder)
    tf = import_tensorflow("Reading a SavedModel")
    variables = folder / "variables"
    check_h5_output(output, [folder / "saved_model.pb", *variables.glob("variables.*")])

    def work():
        with guarded(folder, WHAT):
            return _plan(tf, folder)

    plan = probed_tf(folder, WHAT, work)
    write_conversion(tf, plan, output, folder, what=VARIABLES)
    return dict(plan.summary, output=str(output))


def check_folder(folder):
    """Refuse anything but a folder holding ``saved_model.pb`` (standard library only).

    Raises:
        NotAModelFile: ``folder`` is missing, a file, or a folder without ``saved_model.pb``.
    """
    if not folder.is_dir():
        what = "a file" if folder.exists() else "nothing"
        raise NotAModelFile(
            problem="The input is not a SavedModel folder",
            parameter="filepath",
            expected="a folder written by model.save(dir, save_format='tf'), holding saved_model.pb and variables/",
            received=f"filepath={folder} ({what} is there)",
            fix="Check the path",
        )
    pb = folder / "saved_model.pb"
    if (pb.exists() or pb.is_symlink()) and not pb.is_file():
        what = "a folder" if pb.is_dir() else "a link to nothing" if not pb.exists() else "not a regular file"
        raise NotAModelFile(
            problem=f"The SavedModel folder is damaged: its saved_model.pb is {what}",
            parameter="filepath",
            expected="the file that model.save(dir, save_format='tf') writes",
            received=f"filepath={folder}",
            fix="Copy the folder again from its source",
        )
    if not pb.is_file():
        found = sorted(p.name for p in folder.iterdir())[:8]
        raise NotAModelFile(
            problem="The folder is not a SavedModel: it holds no saved_model.pb",
            parameter="filepath",
            expected="a folder written by model.save(dir, save_format='tf'), holding saved_model.pb and variables/",
            received=f"filepath={folder} (holding {found or 'nothing'})",
            fix="Pass the SavedModel folder itself, or the .h5 file if the model was saved as HDF5",
        )


def untuple(value):
    """Turn TF 2.2/2.3's ``{"class_name": "__tuple__", "items": [...]}`` back into lists, everywhere in ``value``.

    Example:
        >>> untuple({"batch_input_shape": {"class_name": "__tuple__", "items": [None, 6]}})
        {'batch_input_shape': [None, 6]}
    """
    if isinstance(value, dict):
        if (
            set(value) == {"class_name", "items"}
            and value["class_name"] == "__tuple__"
            and isinstance(value["items"], list)
        ):
            return [untuple(item) for item in value["items"]]
        return {key: untuple(item) for key, item in value.items()}
    if isinstance(value, list):
        return [untuple(item) for item in value]
    return value


def _parse(folder):
    """Parse ``saved_model.pb`` as a protocol buffer and return its one meta graph."""
    from tensorflow.core.protobuf import saved_model_pb2

    pb = folder / "saved_model.pb"
    size = pb.stat().st_size
    if size > MAX_PB_BYTES:
        raise NotAModelFile(
            problem="The SavedModel's saved_model.pb is larger than a protocol buffer can be",
            parameter="filepath",
            expected="at most 2 GiB",
            received=f"filepath={folder} ({size} bytes)",
            fix="The file is damaged or hostile",
        )
    proto = saved_model_pb2.SavedModel()
    try:
        proto.ParseFromString(pb.read_bytes())
    except Exception as error:
        raise NotAModelFile(
            problem="The SavedModel's saved_model.pb is damaged and cannot be parsed (truncated?)",
            parameter="filepath",
            expected="a SavedModel protocol buffer, as TensorFlow writes it",
            received=f"filepath={folder} ({size} bytes; {str(error).strip() or type(error).__name__})",
            fix="Copy the folder again from its source",
        ) from None
    if len(proto.meta_graphs) != 1:
        fix = (
            "Copy the folder again from its source (truncated?)"
            if not proto.meta_graphs
            else "Save the Keras model with model.save(dir) alone, or as model.save('model.h5')"
        )
        raise NotAModelFile(
            problem=f"The SavedModel holds {len(proto.meta_graphs)} meta graphs",
            parameter="filepath",
            expected="the one that Keras' model.save(dir, save_format='tf') writes",
            received=f"filepath={folder}",
            fix=fix,
        )
    return proto.meta_graphs[0]


def _root_metadata(meta, folder):
    """Node 0's Keras metadata, or a typed error saying what kind of SavedModel this is instead."""
    nodes = meta.object_graph_def.nodes
    if not nodes:
        raise UnsupportedModel(
            problem="The SavedModel holds no object graph (a TF 1 SavedModel?)",
            parameter="filepath",
            expected="a Keras model saved by tf.keras 2.0-2.3 with model.save(dir, save_format='tf')",
            received=f"filepath={folder}",
            fix="Load it in the TensorFlow that wrote it and save the Keras model with model.save('model.h5')",
        )
    root = nodes[0]
    identifier = root.user_object.identifier if root.WhichOneof("kind") == "user_object" else None
    text = root.user_object.metadata if identifier else ""
    if not text and (folder / "keras_metadata.pb").is_file():
        raise UnsupportedModel(
            problem=(
                "The SavedModel keeps its Keras config in keras_metadata.pb (TensorFlow 2.5 or later), which mgpu-io "
                "does not read"
            ),
            parameter="filepath",
            expected="a SavedModel of tf.keras 2.0-2.3, whose configs are in saved_model.pb",
            received=f"filepath={folder}",
            fix="Load it in the TensorFlow that wrote it and save it with model.save('model.h5')",
        )
    if identifier not in KERAS_MODELS or not text:
        raise UnsupportedModel(
            problem="The SavedModel does not hold a Keras model (tf.saved_model.save of another object?)",
            parameter="filepath",
            expected="node 0 to be a Keras model with its config",
            received=f"filepath={folder} (node 0: {identifier or root.WhichOneof('kind')})",
            fix="Save the Keras model itself with model.save(dir) or model.save('model.h5')",
        )
    metadata = json.loads(text)
    config = untuple(metadata.get("model_config")) if isinstance(metadata, dict) else None
    if not (
        isinstance(config, dict)
        and isinstance(config.get("class_name"), str)
        and isinstance(config.get("config"), (dict, list))
    ):
        raise UnsupportedModel(
            problem=(
                "The SavedModel's Keras model has no model_config (a subclassed model?), so no legacy file can "
                "describe it"
            ),
            parameter="filepath",
            expected="a Functional or Sequential model",
            received=(
                f"filepath={folder} (class_name={metadata.get('class_name') if isinstance(metadata, dict) else None!r})"
            ),
            fix="Rebuild the model in code and load its weights from a checkpoint",
        )
    training = untuple(metadata.get("training_config"))
    return metadata, config, training if isinstance(training, dict) else None


def _saved_graph(tf, meta, values, folder):
    """The SavedObjectGraph's structure as a :class:`Graph`, its variables checked against the ``variables/``
    checkpoint (``values``), whose object graph must be the same graph, node for node."""
    nodes = meta.object_graph_def.nodes
    count = len(nodes)
    children = node_edges(nodes, "SavedModel", folder)
    if len(values.children) > count or any(
        not set(edges) <= set(children[node_id]) for node_id, edges in enumerate(values.children)
    ):
        raise NotAModelFile(
            problem="The SavedModel's variables do not belong to its saved_model.pb: their object graphs differ",
            parameter="filepath",
            expected="the variables/ folder written with it",
            received=f"filepath={folder}",
            fix="Restore the folder from its source; do not mix files of two saves",
        )
    variables = {}
    for node_id, node in enumerate(nodes):
        if node.WhichOneof("kind") != "variable":
            continue
        if node_id not in values.variables:
            continue  # a variable that the checkpoint does not hold: refused below if it is a weight
        saved = node.variable
        shape = None if saved.shape.unknown_rank else [d.size for d in saved.shape.dim]
        variable = weight_of(
            values, node_id, folder, allowed=None, expected_name=saved.name, expected_shape=shape, what=VARIABLES
        )
        dtype = tf.dtypes.as_dtype(saved.dtype).name if saved.dtype else variable.dtype
        if dtype != variable.dtype:
            raise WeightsMismatch(
                problem=f"The weight {saved.name!r} is {dtype} in saved_model.pb but {variable.dtype} in the variables",
                parameter="filepath",
                expected="one dtype",
                received=f"filepath={folder}",
                fix="Restore the folder from its source",
            )
        if not variable.full_name and saved.name:
            variable.full_name = saved.name  # the graph's own record of the name, where the checkpoint has none
        variables[node_id] = variable
    slots = {}
    for node_id, node in enumerate(nodes):
        if node.slot_variables:
            slots[node_id] = [
                (s.original_variable_node_id, s.slot_name, s.slot_variable_node_id) for s in node.slot_variables
            ]
    return Graph(
        prefix=values.prefix,
        children=children,
        variables=variables,
        slots=slots,
        keys=values.keys,
        data_bytes=values.data_bytes,
    )


def _metadata(meta, node):
    node_proto = meta.object_graph_def.nodes[node]
    if node_proto.WhichOneof("kind") != "user_object" or not node_proto.user_object.metadata:
        return {}
    parsed = json.loads(node_proto.user_object.metadata)
    return parsed if isinstance(parsed, dict) else {}


def _list(graph, node, name, folder):
    """The node ids in the list child ``name`` of ``node`` (``trainable_variables``), or ``None``."""
    target = graph.child(node, name) if node is not None else None
    return graph.numbered(target, "", folder) if target is not None else None


def savedmodel_layer_weights(graph, node, folder):
    """A layer node's legacy ``weights``: its ``trainable_variables``, then its non-trainable variables.

    Raises:
        NotAModelFile: the lists contradict each other, or name objects that are not variables.
    """
    trainable = _list(graph, node, "trainable_variables", folder)
    everything = _list(graph, node, "variables", folder)
    non_trainable = _list(graph, graph.child(node, "keras_api"), "non_trainable_variables", folder)
    if trainable is None and everything is None:
        if any(target in graph.variables for _, target in graph.children[node]):
            raise NotAModelFile(
                problem=(
                    f"The SavedModel's object graph is damaged: layer node {node} holds variables but no variable lists"
                ),
                parameter="filepath",
                expected="trainable_variables and variables, as tf.keras writes them",
                received=f"filepath={folder}",
                fix="Restore the folder from its source",
            )
        return []
    trainable = trainable or []
    if non_trainable is None:
        non_trainable = [n for n in (everything or []) if n not in set(trainable)]
    weights = trainable + non_trainable
    if (
        len(set(weights)) != len(weights)
        or (everything is not None and set(weights) != set(everything))
        or any(n not in graph.variables for n in weights)
    ):
        raise NotAModelFile(
            problem=f"The SavedModel's object graph is damaged: the variable lists of layer node {node} disagree",
            parameter="filepath",
            expected="trainable and non-trainable variables that make up its variables",
            received=f"filepath={folder}",
            fix="Restore the folder from its source",
        )
    return weights


def _optimizer(graph, training, trainable, folder):
    """The model's optimizer state in the legacy flat order, or ``(None, why not)``."""
    optimizer = graph.child(0, "optimizer")
    if optimizer is None:
        return None, "no optimizer state (the model was saved uncompiled)"
    config = training.get("optimizer_config") if training else None
    cls = config.get("class_name") if isinstance(config, dict) else None
    iteration = graph.child(optimizer, "iter")
    slots = graph.slots.get(optimizer, [])
    if iteration is None and not slots:
        return None, "no optimizer state (the optimizer never ran)"
    if cls not in SLOT_ORDER:
        return None, (
            f"optimizer state of {cls or 'an unnamed optimizer'} left out: mgpu-io knows the legacy "
            f"layout of {', '.join(sorted(SLOT_ORDER))} only"
        )
    names = list(dict.fromkeys(name for _, name, _ in slots))
    order = [name for name in SLOT_ORDER[cls] if name in names]
    if set(names) - set(order) or names != order or iteration not in graph.variables:
        return None, (
            f"optimizer state left out: its slots {names} (and step counter) do not fit {cls}'s layout "
            f"{list(SLOT_ORDER[cls])}"
        )
    by_slot = {(original, name): slot for original, name, slot in slots}
    if any(original not in trainable for original, _, _ in slots) or len(by_slot) != len(trainable) * len(order):
        return None, (
            "optimizer state left out: its slots do not cover exactly the model's trainable variables "
            "(a layer was frozen or unfrozen after training?)"
        )
    entries = [iteration] + [by_slot[(variable, name)] for name in order for variable in trainable]
    weights = []
    for node in entries:
        variable = graph.variables.get(node)
        if variable is None:
            raise NotAModelFile(
                problem=f"The SavedModel's variables are damaged: optimizer object {node} has no value",
                parameter="filepath",
                expected="every slot in the variables/ checkpoint",
                received=f"filepath={folder}",
                fix="Restore the folder from its source",
            )
        weights.append(Weight(variable.full_name + ":0", variable.key, variable.shape, variable.dtype))
    if weights[0].dtype not in COUNTER_DTYPES or weights[0].shape != ():
        return None, "optimizer state left out: its step counter is not a scalar integer"
    for weight in weights[1:]:
        if weight.dtype not in FLOAT_DTYPES:
            return None, f"optimizer state left out: slot {weight.name} is {weight.dtype}"
    return weights, None


def _plan(tf, folder):
    """Work out the legacy file from the folder's records, reading no weight value (runs in the probe's child)."""
    meta = _parse(folder)
    metadata, model_config, training = _root_metadata(meta, folder)
    values = read_graph(tf, str(folder / "variables" / "variables"), folder, what=VARIABLES)
    graph = _saved_graph(tf, meta, values, folder)

    pairs = pair_layers(graph, 0, model_layers_of(model_config, folder), model_config, folder)
    layers, used = [], set()
    for layer, node in pairs:
        name, nodes, weights = _layer(graph, meta, layer, node, len(layers), folder)
        used.update(nodes)
        layers.append((name, weights))
    check_layers_with_weights(
        graph, 0, [node for _, node in pairs], folder, holds=lambda n: savedmodel_layer_weights(graph, n, folder)
    )

    trainable = _list(graph, 0, "trainable_variables", folder) or []
    optimizer, why_not = _optimizer(graph, training, trainable, folder)
    notes = [why_not] if why_not else []
    notes += _left_out(graph, used, optimizer)

    tensorflow_version, keras_version, backend = _versions(meta, metadata)
    root_attrs = {
        "keras_version": keras_version,
        "backend": backend,
        "model_config": json.dumps(model_config).encode("utf8"),
        "training_config": json.dumps(training).encode("utf8") if training is not None else None,
        "mgpu_io": provenance(SAVEDMODEL, tensorflow_version),
    }
    summary = _summary(
        folder, model_config, training, layers, (tensorflow_version, keras_version, backend), graph, optimizer, notes
    )
    return ConversionPlan(
        prefix=graph.prefix,
        full_model=True,
        layers=layers,
        root_attrs=root_attrs,
        weights_attrs={"keras_version": ascii_attr(keras_version), "backend": ascii_attr(backend)},
        optimizer=optimizer,
        summary=summary,
    )


def _layer(graph, meta, layer, node, index, folder):
    """Layer ``index`` of the config (``layer``) and of the object graph (``node``): its name, its variables' nodes
    and its weights, refused where the two disagree or a weight cannot be written to a legacy file."""
    from mgpu_io.format.config import layer_name

    name = _metadata(meta, node).get("name")
    if name != layer_name(layer):
        raise NotAModelFile(
            problem=(
                f"The SavedModel's object graph and its model_config disagree: layer {index} is {name!r} in the graph "
                f"and {layer_name(layer)!r} in the config"
            ),
            parameter="filepath",
            expected="one model",
            received=f"filepath={folder}",
            fix="Restore the folder from its source",
        )
    nodes = savedmodel_layer_weights(graph, node, folder)
    unnamed = [n for n in nodes if not graph.variables[n].full_name]
    if unnamed:
        raise UnsupportedModel(
            problem=f"A weight of layer {name!r} has no name in the SavedModel",
            parameter="filepath",
            expected="every variable named, as a legacy HDF5 file keys weights by name",
            received=f"filepath={folder} (object {unnamed[0]})",
            fix="Save the model in the TensorFlow that wrote it with model.save('model.h5') instead",
        )
    weights = [
        Weight(
            graph.variables[n].full_name + ":0",
            graph.variables[n].key,
            graph.variables[n].shape,
            graph.variables[n].dtype,
        )
        for n in nodes
    ]
    for weight in weights:
        if weight.dtype not in FLOAT_DTYPES:
            raise UnsupportedModel(
                problem=(
                    f"The weight {weight.name!r} of layer {name!r} has dtype {weight.dtype}, which a legacy Keras file "
                    "does not store"
                ),
                parameter="filepath",
                expected="float16, float32 or float64",
                received=f"filepath={folder}",
                fix="Cast the model to float32 in the TensorFlow that wrote it and save it as .h5",
            )
    unique_names(name, weights, folder)
    return name, nodes, weights


def _versions(meta, metadata):
    """``(tensorflow_version, keras_version, backend)`` the folder records (``None`` where it records no text)."""
    keras_version, backend = metadata.get("keras_version"), metadata.get("backend")
    keras_version = keras_version if isinstance(keras_version, str) else None
    backend = backend if isinstance(backend, str) else None
    return meta.meta_info_def.tensorflow_version or None, keras_version, backend


def _summary(folder, model_config, training, layers, versions, graph, optimizer, notes):
    """What the plan says it found: the folder, the versions that wrote it, the model, its weights and optimizer."""
    tensorflow_version, keras_version, backend = versions
    config = training.get("optimizer_config") if training else None
    return {
        "kind": SAVEDMODEL,
        "input": str(folder),
        "output_type": "model",
        "tensorflow_version": tensorflow_version,
        "keras_version": keras_version,
        "backend": backend,
        "model": model_config["config"].get("name") if isinstance(model_config["config"], dict) else None,
        "layers": [name for name, _ in layers],
        "weights": sum(len(weights) for _, weights in layers),
        "optimizer_found": graph.child(0, "optimizer") is not None,
        "optimizer": optimizer is not None,
        "optimizer_class": config.get("class_name") if isinstance(config, dict) else None,
        "notes": notes,
    }


def _left_out(graph, used, optimizer):
    """Notes on the variables a legacy file has no place for: metric state, optimizer hyper-parameters, inner
    models' optimizers, and anything else."""
    written = set(used) | {
        n for n in graph.variables if optimizer and graph.variables[n].key in {w.key for w in optimizer}
    }

    def under(target):
        return set(graph.variables_under(target, skip=())) | {slot for _, _, slot in graph.slots.get(target, [])}

    root_optimizer, inner, metrics = set(), set(), set()
    for node, children in enumerate(graph.children):
        for local, target in children:
            if local == "optimizer":
                (root_optimizer if node == 0 else inner).update(under(target))
            elif local == "metrics":
                metrics |= under(target)
    notes = []
    hyper = sorted(graph.variables[n].full_name for n in root_optimizer - written)
    if optimizer is not None and hyper:
        notes.append(
            f"optimizer hyper-parameters ({', '.join(hyper)}) not written as weights: training_config "
            f"holds their values, as in a legacy file"
        )
    if inner - written - root_optimizer:
        notes.append(
            f"{len(inner - written - root_optimizer)} variables of inner models' optimizers left out: a "
            f"legacy file keeps the outermost model's optimizer only"
        )
    if metrics - written:
        notes.append(f"metric state ({len(metrics - written)} variables) left out: a legacy file has no place for it")
    others = sorted(
        graph.variables[n].full_name or graph.variables[n].key
        for n in set(graph.variables) - written - root_optimizer - inner - metrics
    )
    if others:
        notes.append(
            f"{len(others)} variables that belong to no layer left out: {', '.join(others[:5])}"
            f"{', ...' if len(others) > 5 else ''}"
        )
    return notes
