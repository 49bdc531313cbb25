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
loaded, nothing stored is run. The structure is read in a forked child first (:mod:`mgpu_io.format.probe`), under a
time and memory limit, and every declared tensor size is checked against the data files' size before any value is
read, so a damaged or hostile bundle becomes a typed error, never a hang, a crash or a huge allocation.

This module also holds what :mod:`mgpu_io.tf.savedmodel` shares with it (a SavedModel's ``variables/`` folder is a
checkpoint of the same kind): :func:`import_tensorflow`, :func:`read_graph`, :class:`Plan` and :func:`write_plan`.

Example:
    >>> import tempfile, pathlib
    >>> out = pathlib.Path(tempfile.mkdtemp()) / "weights.h5"
    >>> summary = to_legacy_h5("fixtures/tf2/tf22_functional_bn_x2_ckpt.index", out,
    ...                        config="fixtures/tf2/tf22_functional_bn_x2_config.json")
    >>> summary["layers"], summary["optimizer_found"], summary["optimizer"]
    (['inp', 'lambda', 'lambda_1', 'template', 'out_a', 'out_b'], True, False)
"""

import contextlib
import json
import os
import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Optional

from mgpu_io._version import __version__
from mgpu_io.errors import (
    InvalidArgument,
    MgpuIOError,
    MissingDependency,
    NotAModelFile,
    OutputError,
    UnsupportedModel,
    WeightsMismatch,
)

#: The key of the serialised object graph in every object-based checkpoint.
OBJECT_GRAPH_KEY = "_CHECKPOINTABLE_OBJECT_GRAPH"
#: The attribute name under which an object graph node stores a variable's value.
VARIABLE_VALUE = "VARIABLE_VALUE"
#: Last 8 bytes of a TF table file (the ``.index`` of a tensor bundle): ``kTableMagicNumber``, little-endian.
TABLE_MAGIC = (0xDB4775248B80FB57).to_bytes(8, "little")
#: Largest object graph read (a big model's graph is a few MB).
MAX_GRAPH_BYTES = 256 << 20
#: The model classes whose config lists nested layers (the template, a nested wrapper).
MODEL_CLASSES = frozenset({"Model", "Functional", "Sequential"})
#: Layers whose weights are not all trainable by default, with the local names of the non-trainable ones.
NON_TRAINABLE = {
    "BatchNormalization": ("moving_mean", "moving_variance"),
    "SyncBatchNormalization": ("moving_mean", "moving_variance"),
}
#: Weight dtypes a legacy file stores (an optimizer's step counter may be an integer).
FLOAT_DTYPES = ("float16", "float32", "float64")
COUNTER_DTYPES = ("int64", "int32")
_DATA_SHARD = re.compile(r"^(?P<prefix>.+)\.data-\d{5}-of-\d{5}$")


# --- TensorFlow, imported only here and only when asked --------------------------------------------------------


def import_tensorflow(what="Reading a SavedModel"):
    """Import TensorFlow (quietly), or raise :class:`MissingDependency` saying ``what`` needed it."""
    os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "3")
    try:
        import tensorflow as tf

        # The protocol buffer classes the probe's child parses with, imported once here rather than in each child.
        from tensorflow.core.protobuf import saved_model_pb2, trackable_object_graph_pb2  # noqa: F401
    except ImportError as error:
        raise MissingDependency(
            f"{what} needs TensorFlow, which is not installed. Expected an importable `tensorflow`. Received: "
            f"{type(error).__name__}: {error}. Install it: pip install 'mgpu-io[tensorflow]'."
        ) from None
    return tf


def probed_tf(path, what, work):
    """Run ``work()`` in a forked child (:func:`mgpu_io.format.probe.probed`), saying what hung or crashed.

    The probe's own wording names libhdf5, which these files never reach; the messages are restated for TF files.
    """
    from mgpu_io.format.probe import TIMEOUT, probed

    try:
        return probed(path, work)
    except NotAModelFile as error:
        text = str(error)
        if text.startswith("Reading the file's structure did not finish"):
            raise NotAModelFile(
                f"Reading the {what} did not finish within {TIMEOUT:g} s. Expected a file that TensorFlow parses in "
                f"well under a second. Received: filepath={path}. The file is damaged or hostile; restore it from "
                f"its source (MGPU_IO_PROBE_TIMEOUT raises the limit for a very large model)."
            ) from None
        if text.startswith("Reading the file's structure crashed"):
            reason = text[text.find("(") + 1 : text.find(")")] if "(" in text else "a crash"
            raise NotAModelFile(
                f"Reading the {what} crashed TensorFlow's reader ({reason}). Expected a file as TensorFlow writes it. "
                f"Received: filepath={path}. The file is damaged; restore it from its source."
            ) from None
        raise


@contextlib.contextmanager
def guarded(path, what):
    """Turn whatever a damaged or hostile file makes protobuf, TensorFlow or JSON raise into :class:`NotAModelFile`.

    Used around the reading of a file only (in the probe's child), never around a caller's code.
    """
    try:
        yield
    except MgpuIOError:
        raise
    except MemoryError:
        raise NotAModelFile(
            f"The {what} declares more data than fits in memory. Expected the sizes TensorFlow writes. Received: "
            f"filepath={path}. The file is damaged or hostile."
        ) from None
    except RecursionError:
        raise NotAModelFile(
            f"The {what} is nested too deeply to read. Expected a structure as TensorFlow writes it. Received: "
            f"filepath={path}. The file is damaged or hostile."
        ) from None
    except Exception as error:
        raise NotAModelFile(
            f"The {what} is damaged and cannot be read. Expected a file as TensorFlow writes it. Received: "
            f"filepath={path} ({type(error).__name__}: {_first_line(error)}). Restore it from its source."
        ) from None


def _first_line(error):
    text = str(error).strip()
    return text.splitlines()[0][:300] if text else type(error).__name__


# --- the object graph, as plain data -----------------------------------------------------------------------------


@dataclass
class Variable:
    """One variable of an object graph: its node, its own name (``d1/kernel``), and where its value is."""

    node: int
    full_name: str
    key: str
    shape: tuple[int, ...]
    dtype: str


@dataclass
class Graph:
    """A checkpoint's object graph as plain data (it crosses the probe's pipe), with the bundle's key table.

    ``children[i]`` lists node ``i``'s ``(local name, node id)`` edges in stored order; ``variables`` maps a node id
    to its :class:`Variable`; ``slots[i]`` lists node ``i``'s ``(original variable id, slot name, slot id)``.
    """

    prefix: str
    children: list[list[tuple[str, int]]]
    variables: dict[int, Variable]
    slots: dict[int, list[tuple[int, str, int]]]
    keys: dict[str, tuple[tuple[int, ...], str]] = field(repr=False)
    data_bytes: int = 0

    def child(self, node, name):
        """The id of ``node``'s child called ``name``, or ``None``."""
        return next((target for local, target in self.children[node] if local == name), None)

    def numbered(self, node, stem, path):
        """The ids of ``node``'s children ``stem0``, ``stem1``, ... in order (``layer-K``, ``0``/``1`` of a list).

        Raises:
            NotAModelFile: the numbers are not 0..n-1 (the graph was edited or is damaged).
        """
        found = {}
        for local, target in self.children[node]:
            if local.startswith(stem) and local[len(stem) :].isdigit():
                found[int(local[len(stem) :])] = target
        if sorted(found) != list(range(len(found))):
            raise NotAModelFile(
                f"The object graph is damaged: the children {stem or '#'}N of node {node} are not numbered "
                f"0..{len(found) - 1}. Expected the numbering TensorFlow writes. Received: {sorted(found)[:10]} in "
                f"filepath={path}. Restore it from its source."
            )
        return [found[index] for index in range(len(found))]

    def variables_under(self, node, *, skip=("optimizer",)):
        """The variables reachable from ``node`` (depth first, in stored child order, each once), skipping the
        children named in ``skip`` (an inner wrapper's own optimizer)."""
        found, seen, stack = [], set(), [node]
        while stack:
            current = stack.pop()
            if current in seen:
                continue
            seen.add(current)
            if current in self.variables:
                found.append(current)
                continue
            stack.extend(target for local, target in reversed(self.children[current]) if local not in skip)
        return found


def checkpoint_prefix(path):
    """The prefix of the checkpoint at ``path`` (``x.index``, ``x.data-00000-of-00001`` or ``x`` itself).

    Example:
        >>> checkpoint_prefix("run/x_ckpt.index"), checkpoint_prefix("run/x_ckpt.data-00000-of-00001")
        ('run/x_ckpt', 'run/x_ckpt')
    """
    text = str(path)
    if text.endswith(".index"):
        return text[: -len(".index")]
    match = _DATA_SHARD.match(text)
    return match.group("prefix") if match else text


def node_edges(nodes, what, path):
    """Each object-graph node's ``(local name, child id)`` edges, refusing an edge that points outside the graph
    (the same check for a checkpoint's TrackableObjectGraph and a SavedModel's SavedObjectGraph)."""
    count = len(nodes)
    children = []
    for node_id, node in enumerate(nodes):
        edges = [(child.local_name, child.node_id) for child in node.children]
        if any(not 0 <= target < count for _, target in edges):
            raise NotAModelFile(
                f"The {what}'s object graph is damaged: node {node_id} points outside the graph. Expected node ids "
                f"below {count}. Received: filepath={path}. Restore it from its source."
            )
        children.append(edges)
    return children


def read_graph(tf, prefix, path, what="TF checkpoint"):
    """Open the tensor bundle at ``prefix`` and read its object graph and key table (meant for the probe's child).

    Raises:
        NotAModelFile: the index is missing, damaged, not a TF bundle, or its object graph cannot be parsed.
        UnsupportedModel: a name-based (TF 1 ``Saver``) checkpoint, which has no object graph.
    """
    from tensorflow.core.protobuf import trackable_object_graph_pb2

    index = Path(prefix + ".index")
    if not index.is_file():
        raise NotAModelFile(
            f"The {what} has no index file. Expected {index.name} beside the data files. Received: filepath={path} "
            f"({'a folder' if index.is_dir() else 'nothing'} at {index}). Copy the whole checkpoint: the .index "
            f"and every .data-NNNNN-of-NNNNN file."
        )
    reader = open_reader(tf, prefix, path, what)
    try:
        shapes = reader.get_variable_to_shape_map()
        dtypes = reader.get_variable_to_dtype_map()
    except reader_errors(tf) as error:
        raise NotAModelFile(
            f"The {what} is damaged and cannot be read. Expected a TensorFlow checkpoint (an .index table and its "
            f".data files). Received: filepath={path} ({_first_line(error)}). Restore it from its source."
        ) from None
    if OBJECT_GRAPH_KEY not in shapes:
        raise UnsupportedModel(
            f"The checkpoint is name-based (TF 1 `tf.train.Saver`): it holds no object graph, so its variables "
            f"cannot be matched to Keras layers with certainty. Expected an object-based checkpoint, as tf.keras "
            f"2.x `save_weights` writes it. Received: filepath={path} ({len(shapes)} variables, no "
            f"{OBJECT_GRAPH_KEY}). Load it in the TensorFlow that wrote it and save the model with "
            f"model.save_weights('weights.h5') instead."
        )
    data_bytes = sum(
        p.stat().st_size for p in Path(prefix).parent.glob(Path(prefix).name + ".data-*-of-*") if p.is_file()
    )
    try:
        raw = reader.get_tensor(OBJECT_GRAPH_KEY)
    except reader_errors(tf) as error:
        raise NotAModelFile(
            f"The {what} is damaged and cannot be read: its object graph cannot be loaded. Expected the .data "
            f"files that belong to the index. Received: filepath={path} ({_first_line(error)}). Copy the whole "
            f"checkpoint again from its source."
        ) from None
    raw = raw.item() if hasattr(raw, "item") else raw
    if not isinstance(raw, bytes) or len(raw) > MAX_GRAPH_BYTES:
        raise NotAModelFile(
            f"The {what}'s object graph is not a serialised graph. Expected the bytes TensorFlow writes. "
            f"Received: {type(raw).__name__} in filepath={path}. The file is damaged; restore it from its source."
        )
    proto = trackable_object_graph_pb2.TrackableObjectGraph()
    try:
        proto.ParseFromString(raw)
    except Exception as error:
        raise NotAModelFile(
            f"The {what}'s object graph is damaged and cannot be parsed. Expected a TrackableObjectGraph, as "
            f"TensorFlow writes it. Received: filepath={path} ({_first_line(error)}). Restore it from its source."
        ) from None
    if not proto.nodes:
        raise NotAModelFile(
            f"The {what}'s object graph is empty. Expected the objects of a Keras model. Received: filepath={path}. "
            f"The file is damaged; restore it from its source."
        )
    keys = {key: (tuple(int(d) for d in shape), dtypes[key].name) for key, shape in shapes.items()}
    children, variables, slots = node_edges(proto.nodes, what, path), {}, {}
    for node_id, node in enumerate(proto.nodes):
        for attribute in node.attributes:
            if attribute.name == VARIABLE_VALUE:
                if attribute.checkpoint_key not in keys:
                    raise NotAModelFile(
                        f"The {what} is damaged: the object graph names a value the bundle does not hold. Expected "
                        f"{attribute.checkpoint_key!r} in the index. Received: filepath={path}. Restore it from its "
                        f"source."
                    )
                shape, dtype = keys[attribute.checkpoint_key]
                variables[node_id] = Variable(node_id, attribute.full_name, attribute.checkpoint_key, shape, dtype)
        if node.slot_variables:
            slots[node_id] = [
                (s.original_variable_node_id, s.slot_name, s.slot_variable_node_id) for s in node.slot_variables
            ]
    return Graph(prefix=prefix, children=children, variables=variables, slots=slots, keys=keys, data_bytes=data_bytes)


def reader_errors(tf):
    """What ``CheckpointReader`` raises on a damaged bundle (a short read surfaces as ``IndexError``)."""
    return (tf.errors.OpError, ValueError, TypeError, RuntimeError, IndexError, OSError)


def open_reader(tf, prefix, path, what="TF checkpoint"):
    """``tf.train.load_checkpoint(prefix)``, or :class:`NotAModelFile` with the reader's reason."""
    try:
        return tf.train.load_checkpoint(prefix)
    except reader_errors(tf) as error:
        raise NotAModelFile(
            f"The {what} is damaged and cannot be read. Expected a TensorFlow checkpoint (an .index table and its "
            f".data files). Received: filepath={path} ({_first_line(error)}). Restore it from its source."
        ) from None


def _declared_bytes(shape, dtype):
    """Bytes a value of ``shape`` and ``dtype`` takes (0 for a dtype of no fixed size, such as a string), or
    ``None`` for an impossible shape."""
    sizes = {
        "float16": 2,
        "bfloat16": 2,
        "float32": 4,
        "float64": 8,
        "int8": 1,
        "uint8": 1,
        "int16": 2,
        "int32": 4,
        "int64": 8,
        "bool": 1,
        "complex64": 8,
        "complex128": 16,
    }
    if any(d < 0 for d in shape):
        return None
    total = sizes.get(dtype, 0)
    for d in shape:
        total *= d
    return total


def weight_of(
    graph, node, path, *, allowed=FLOAT_DTYPES, expected_name=None, expected_shape=None, what="TF checkpoint"
):
    """The :class:`Variable` at ``node``, checked: a value of an ``allowed`` dtype (``None``: any) whose declared
    size fits in the data files, with the name and shape the caller expects.

    Raises:
        NotAModelFile: the node holds no value, or declares more bytes than the data files hold.
        WeightsMismatch: the name or shape differs from what the model's own records say.
        UnsupportedModel: a dtype that a legacy file cannot store (bfloat16, complex, ...).
    """
    variable = graph.variables.get(node)
    if variable is None:
        raise NotAModelFile(
            f"The {what} is damaged: object {node} should hold a variable's value and holds none. Expected a "
            f"{VARIABLE_VALUE} entry. Received: filepath={path}. Restore it from its source."
        )
    if allowed is not None and variable.dtype not in allowed:
        raise UnsupportedModel(
            f"The weight {variable.full_name!r} has dtype {variable.dtype}, which a legacy Keras file does not "
            f"store. Expected one of {', '.join(allowed)}. Received: filepath={path}. Cast the model's weights to "
            f"float32 in the TensorFlow that wrote it and save it again."
        )
    nbytes = _declared_bytes(variable.shape, variable.dtype)
    if nbytes is None or nbytes > graph.data_bytes:
        raise NotAModelFile(
            f"The weight {variable.full_name!r} declares {nbytes} bytes, more than the checkpoint's data files hold. "
            f"Expected values inside the {graph.data_bytes} bytes of data. Received: shape {variable.shape} in "
            f"filepath={path}. The files are truncated or do not belong together; copy the checkpoint again."
        )
    if expected_name and variable.full_name and variable.full_name != expected_name:
        raise WeightsMismatch(
            f"The weight at object {node} is named {variable.full_name!r} in the checkpoint but {expected_name!r} in "
            f"the model's records. Expected one name. Received: filepath={path}. The variables do not belong to "
            f"this model; restore the folder from its source."
        )
    if expected_shape is not None and tuple(expected_shape) != variable.shape:
        raise WeightsMismatch(
            f"Shape mismatch for weight {variable.full_name!r}. Expected shape {tuple(expected_shape)} from the "
            f"model's records. Received: shape={variable.shape} in filepath={path}. The variables do not belong to "
            f"this model; restore the folder from its source."
        )
    return variable


# --- what is written ---------------------------------------------------------------------------------------------


@dataclass
class Weight:
    """One dataset to write: its legacy name (``d1/kernel:0``) and where its value is in the bundle."""

    name: str
    key: str
    shape: tuple[int, ...]
    dtype: str


@dataclass
class Plan:
    """A legacy HDF5 file to write, worked out from a SavedModel or checkpoint without reading any weight value.

    ``root_attrs`` and ``weights_attrs`` values are written as given: ``str`` as variable-length UTF-8, ``bytes`` as
    variable-length ASCII, the two encodings tf.keras 2.x used (docs/tf2-writers.md §2).
    """

    prefix: str
    full_model: bool
    layers: list[tuple[str, list[Weight]]]
    root_attrs: dict[str, object]
    weights_attrs: dict[str, object]
    optimizer: Optional[list[Weight]] = None
    summary: dict = field(default_factory=dict)


def provenance(kind, tensorflow_version):
    """The ``mgpu_io`` attribute: which tool converted which kind of input (Keras itself never reads it)."""
    return json.dumps(
        {"tool": f"mgpu-io {__version__}", "converted_from": kind, "tensorflow_version": tensorflow_version}
    ).encode("utf8")


def check_output(output, inputs=()):
    """Refuse an output that is a folder, one of the input's own files, or in a folder that does not exist."""
    output = Path(output)
    if output.is_dir():
        raise OutputError(
            f"The output is a folder. Expected a file name ending in .h5. Received: output={output}. Name the file "
            f"to write, for example {output / 'model.h5'}."
        )
    if not output.parent.is_dir():
        raise OutputError(
            f"The output's folder does not exist. Expected an existing folder. Received: output={output}. Create "
            f"{output.parent} first."
        )
    resolved = output.resolve()
    for source in inputs:
        if Path(source).exists() and Path(source).resolve() == resolved:
            raise OutputError(
                f"The output is one of the input's own files. Expected a new file. Received: output={output}. Write "
                f"the converted file elsewhere; the input is never changed."
            )


def write_plan(tf, plan, output, path, what="TF checkpoint"):
    """Read each planned value from the bundle and write the legacy HDF5 file at ``output``, atomically.

    Every value is checked against its planned shape and dtype once more as it is read.

    Raises:
        NotAModelFile: a value cannot be read (a data file is missing, truncated or fails its checksum).
        OutputError: ``output`` cannot be written.
    """
    import h5py
    import numpy as np

    from mgpu_io.format.attrs import write_str_list
    from mgpu_io.format.write import atomic_path

    reader = open_reader(tf, plan.prefix, path, what)

    def value(weight):
        try:
            array = np.asarray(reader.get_tensor(weight.key))
        except reader_errors(tf) as error:
            raise NotAModelFile(
                f"The {what} is damaged: the value of {weight.name!r} cannot be read. Expected the .data files that "
                f"belong to the index, intact. Received: filepath={path} ({_first_line(error)}). Copy the whole "
                f"checkpoint again from its source."
            ) from None
        if array.shape != tuple(weight.shape) or array.dtype.name != weight.dtype:
            raise NotAModelFile(
                f"The {what} is damaged: the value of {weight.name!r} is not what its index declares. Expected shape "
                f"{tuple(weight.shape)} {weight.dtype}. Received: shape {array.shape} {array.dtype} in "
                f"filepath={path}. Restore it from its source."
            )
        return array

    # libhdf5 cannot name a file that has none yet (atomic_path's O_TMPFILE): hand it the open file instead.
    with atomic_path(output) as temporary, contextlib.ExitStack() as stack:
        named = not str(temporary).startswith("/proc/self/fd/")
        handle = None if named else stack.enter_context(open(temporary, "w+b"))
        h5 = stack.enter_context(h5py.File(handle if handle is not None else temporary, "w"))
        for key, text in plan.root_attrs.items():
            if text is not None:
                h5.attrs[key] = text
        root = h5.create_group("model_weights") if plan.full_model else h5
        write_str_list(root.attrs, "layer_names", [name for name, _ in plan.layers])
        for key, text in plan.weights_attrs.items():
            if text is not None:
                root.attrs[key] = text
        for name, weights in plan.layers:
            group = root.create_group(name)
            write_str_list(group.attrs, "weight_names", [weight.name for weight in weights])
            for weight in weights:
                group.create_dataset(weight.name, data=value(weight))
        if plan.optimizer:
            group = h5.create_group("optimizer_weights")
            write_str_list(group.attrs, "weight_names", [weight.name for weight in plan.optimizer])
            for weight in plan.optimizer:
                group.create_dataset(weight.name, data=value(weight))


def unique_names(layer, weights, path):
    """Refuse two weights of one layer group with the same name: HDF5 (and Keras' loader) cannot keep both."""
    seen = set()
    for weight in weights:
        if weight.name in seen:
            raise UnsupportedModel(
                f"Two weights of layer {layer!r} have the same name {weight.name!r}. Expected distinct names, as a "
                f"legacy HDF5 file keys weights by name. Received: filepath={path}. Save the model in the TensorFlow "
                f"that wrote it with model.save('model.h5') instead."
            )
        seen.add(weight.name)


# --- a TF-format checkpoint --------------------------------------------------------------------------------------


def to_legacy_h5(path, output, *, config=None):
    """Write the TF-format checkpoint at ``path`` as a legacy Keras weights-only HDF5 file at ``output``.

    Args:
        path: the checkpoint: its ``.index`` file, one of its ``.data-NNNNN-of-NNNNN`` files, or its prefix.
        output: the ``.h5`` file to write (replaced atomically if it exists).
        config: the architecture saved beside the checkpoint: the JSON of ``model.to_json()`` or a full-model
            ``.h5`` of the same model. Required: the checkpoint itself records no layer names.

    Returns:
        A dict: ``kind`` (``"tf_checkpoint"``), ``output``, ``output_type`` (``"weights"``),
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
            f"The TF checkpoint has no index file. Expected {Path(prefix).name}.index beside its .data files. "
            f"Received: filepath={path} (no {prefix}.index). Check the path; pass the .index file or the prefix "
            f"given to save_weights."
        )
    if config is None:
        raise _config_needed(path, prefix)
    if not Path(config).is_file():
        raise InvalidArgument(
            f"config= names no file. Expected the JSON config (model.to_json()) or full-model .h5 saved beside the "
            f"checkpoint. Received: config={config} ({'a folder' if Path(config).is_dir() else 'nothing'} is "
            f"there). Check the path."
        )
    tf = import_tensorflow("Reading a TF checkpoint")
    check_output(output, [prefix + ".index", *Path(prefix).parent.glob(Path(prefix).name + ".data-*")])

    def work():
        stored = _read_config(config)
        with guarded(path, "TF checkpoint"):
            graph = read_graph(tf, prefix, path)
            return _plan(graph, stored, path)

    plan = probed_tf(path, "TF checkpoint", work)
    write_plan(tf, plan, output, path)
    return dict(plan.summary, output=str(output))


def _config_needed(path, prefix):
    folder = Path(prefix).parent
    beside = sorted(p.name for p in folder.glob("*.json")) if folder.is_dir() else []
    hint = f" (beside it: {', '.join(beside)})" if 0 < len(beside) <= 3 else ""
    return InvalidArgument(
        f"A TF checkpoint records no layer names (only its variables' own names, such as 'd1/kernel'), so its "
        f"weights cannot be laid out as a Keras file without the model's architecture. Expected config= the JSON "
        f"saved beside it (model.to_json()) or a full-model .h5 of the same model. Received: filepath={path}, "
        f"config=None. Pass the architecture: config='model.json'{hint}."
    )


def _read_config(config):
    """The architecture to lay the weights out by (runs in the probe's child)."""
    from mgpu_io.format.read import WEIGHTS, open_stored

    with open_stored(config) as stored:
        if stored.file_type == WEIGHTS:
            raise InvalidArgument(
                f"config= must describe the architecture. Expected the JSON config (model.to_json()) or a full-model "
                f".h5. Received: config={config} (a weights-only file, which holds no architecture). Pass the JSON "
                f"saved beside the checkpoint."
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
        trainable, frozen = layer_weights(graph, node, layer, path, slotted)
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
        "kind": "tf_checkpoint",
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
    root_attrs = dict(versions, mgpu_io=provenance("tf_checkpoint", None))
    return Plan(
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
                    layer_weights(graph, layer_node, layer, path)  # the names must fit too
                return node, pairs
            except (WeightsMismatch, UnsupportedModel):
                continue
        raise at_root from None


def ascii_attr(text):
    """An attribute value stored as variable-length ASCII, as tf.keras 2.x stored most of them (``None`` stays)."""
    return str(text).encode("utf8") if text is not None else None


def model_layers_of(model_config, path):
    """The layer entries of a model config, or :class:`NotAModelFile` when it lists none."""
    config = model_config.get("config") if isinstance(model_config, dict) else None
    layers = config if isinstance(config, list) else config.get("layers") if isinstance(config, dict) else None
    if not isinstance(layers, list) or not all(isinstance(layer, dict) and "class_name" in layer for layer in layers):
        raise NotAModelFile(
            f"The config describes no layers. Expected a Keras model config with a `layers` list. Received: "
            f"class_name={model_config.get('class_name') if isinstance(model_config, dict) else None!r} for "
            f"filepath={path}. Pass the JSON saved beside the checkpoint (model.to_json())."
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
            f"The config does not describe this checkpoint: model {name!r} has {len(layers_config)} layers in the "
            f"config and {len(nodes)} in the checkpoint. Expected the architecture the checkpoint was saved from. "
            f"Received: layers {[layer_name(lyr) for lyr in layers_config][:8]} for filepath={path}. Pass the wrapper's "
            f"own JSON (the multi-GPU model's to_json(), saved beside the checkpoint)."
        )
    return list(zip(layers_config, nodes))


def layer_weights(graph, node, layer, path, slotted=frozenset()):
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
            t, n = layer_weights(graph, sub_node, sub, path, slotted)
            trainable += t
            frozen += n
        check_layers_with_weights(graph, node, [n for _, n in pairs], path)
        own = set(graph.variables_under(node, skip=("optimizer", "keras_api"))) - set(trainable) - set(frozen)
        if own:
            raise UnsupportedModel(
                f"The nested model {layer_name(layer)!r} holds variables of its own, outside its layers "
                f"({', '.join(sorted(graph.variables[n].full_name for n in own)[:4])}), whose place among its "
                f"weights the checkpoint does not record. Expected weights in layers only. Received: filepath={path}. "
                f"Save the model in the TensorFlow that wrote it with model.save_weights('weights.h5') instead."
            )
        return ([], trainable + frozen) if frozen_layer else (trainable, frozen)
    if config.get("renorm"):
        raise UnsupportedModel(
            f"Layer {layer_name(layer)!r} is a BatchNormalization with renorm=True, whose extra statistics a "
            f"checkpoint does not mark as trainable or not. Expected renorm=False. Received: filepath={path}. Save "
            f"the model in the TensorFlow that wrote it with model.save_weights('weights.h5') instead."
        )
    nodes = graph.variables_under(node)
    name = layer_name(layer)
    for node_id in nodes:
        full_name = graph.variables[node_id].full_name
        if not _names_layer(full_name, name):
            raise WeightsMismatch(
                f"The config does not describe this checkpoint: layer {name!r} holds the weight {full_name!r}. "
                f"Expected weights named after the layer ({name}/...). Received: filepath={path}. Pass the JSON "
                f"saved beside the checkpoint (the same model's to_json())."
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
            f"The object graph is damaged: the layers with weights are not the ones that hold variables. Expected "
            f"layer_with_weights-J to name the layers holding variables, in order. Received: {weighted[:8]} and "
            f"{holding[:8]} in filepath={path}. Restore it from its source."
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
            f"Cannot tell with certainty which weights of layer {layer_name(layer)!r} are trainable: the optimizer's "
            f"slots contradict the layer's class ({layer['class_name']}). Expected slots for its trainable weights "
            f"only. Received: {names[:4]} in filepath={path}. Save the model in the TensorFlow that wrote it with "
            f"model.save_weights('weights.h5') instead."
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


def to_legacy_h5_for(path, output, targets):
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
        The summary dict of :func:`to_legacy_h5`, with ``model`` the node found (``"root"`` or its path of
        ``layer-K`` edges).

    Raises:
        WeightsMismatch: no model in the checkpoint has the fresh model's weighted layers (the closest is named).
    """
    path = Path(path)
    prefix = checkpoint_prefix(path)
    if not Path(prefix + ".index").is_file():
        raise NotAModelFile(
            f"The TF checkpoint has no index file. Expected {Path(prefix).name}.index beside its .data files. "
            f"Received: filepath={path} (no {prefix}.index). Check the path; pass the .index file or the prefix "
            f"given to save_weights."
        )
    tf = import_tensorflow("Reading a TF checkpoint")
    check_output(output, [prefix + ".index", *Path(prefix).parent.glob(Path(prefix).name + ".data-*")])
    targets = [(cls, [tuple(shape) for shape in shapes]) for cls, shapes in targets]

    def work():
        with guarded(path, "TF checkpoint"):
            graph = read_graph(tf, prefix, path)
            return _plan_for(graph, targets, path)

    plan = probed_tf(path, "TF checkpoint", work)
    write_plan(tf, plan, output, path)
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
        f"The TF checkpoint holds no model with the weights of the freshly built model. Expected a model (the "
        f"checkpoint's own, or one inside it such as a wrapper's template) whose layers with weights hold, in "
        f"order, weights of the shapes {[shapes for _, shapes in targets][:6]}. Received: the closest, "
        f"{closest[0]}, has {'; '.join(closest[1][:3])} in filepath={path}. Build the template the checkpoint "
        f"was saved from, or pass config= the JSON saved beside it."
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
        "kind": "tf_checkpoint",
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
    root_attrs = {"keras_version": None, "backend": None, "mgpu_io": provenance("tf_checkpoint", None)}
    return Plan(
        prefix=graph.prefix, full_model=False, layers=planned, root_attrs=root_attrs, weights_attrs={}, summary=summary
    )


# --- what a TF-format checkpoint holds, without its architecture ---------------------------------------------------


def describe(path):
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
            f"The TF checkpoint has no index file. Expected {Path(prefix).name}.index beside its .data files. "
            f"Received: filepath={path} (no {prefix}.index). Check the path; pass the .index file or the prefix "
            f"given to save_weights."
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
