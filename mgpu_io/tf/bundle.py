"""Read a TF tensor bundle (the ``.index`` + ``.data-*`` of a TF-format checkpoint, or a SavedModel's
``variables/``) and its object graph as data.

The bundle is read with TensorFlow's ``CheckpointReader`` (``tf.train.load_checkpoint``: ``get_variable_to_shape_map``
and ``get_tensor``), which returns arrays and nothing else, and the object graph is parsed as a protocol buffer
(``TrackableObjectGraph``). No model is built, no saved function or Python object is loaded, nothing stored is run.
The structure is read in a forked child first (:mod:`mgpu_io.format.sandbox`), under a time and memory limit, and
every declared tensor size is checked against the data files' size before any value is read.

:mod:`mgpu_io.tf.checkpoint` matches what is read here to a model; :mod:`mgpu_io.tf.legacy` writes the result.
"""

import contextlib
import os
import re
from dataclasses import dataclass, field
from pathlib import Path

from mgpu_io import upstream
from mgpu_io.errors import (
    LimitReached,
    MgpuIOError,
    MissingDependency,
    NotAModelFile,
    UnsupportedModel,
    WeightsMismatch,
    first_line,
)

#: The key of the serialised object graph in every object-based checkpoint.
OBJECT_GRAPH_KEY = "_CHECKPOINTABLE_OBJECT_GRAPH"
#: The attribute name under which an object graph node stores a variable's value.
VARIABLE_VALUE = "VARIABLE_VALUE"
#: Last 8 bytes of a TF table file (the ``.index`` of a tensor bundle): ``kTableMagicNumber``, little-endian.
TABLE_MAGIC = (0xDB4775248B80FB57).to_bytes(8, "little")
#: Largest object graph read (a big model's graph is a few MB).
MAX_GRAPH_BYTES = 256 << 20
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
        from mgpu_io.format.limits import memory_problem

        if memory_problem() is not None and upstream.said(upstream.CANNOT_MAP, error):
            raise LimitReached(
                problem=f"{what} needs TensorFlow, which cannot be loaded: {memory_problem()}",
                expected="room to map its libraries (several GiB of address space)",
                received=str(error),
                fix="Raise the limit (ulimit -v unlimited, or a larger value)",
            ) from None
        raise MissingDependency(
            problem=f"{what} needs TensorFlow, which is not installed",
            expected="an importable `tensorflow`",
            received=f"{type(error).__name__}: {error}",
            fix="Install it: pip install 'mgpu-io[tensorflow]'",
        ) from None
    return tf


def probed_tf(path, what, work):
    """Run ``work()`` in a forked child (:func:`mgpu_io.format.sandbox.probed`), saying what hung or crashed.

    The probe's own wording names libhdf5, which these files never reach; the messages are restated for TF files.
    """
    from mgpu_io.format.sandbox.probe import TIMEOUT, probed

    try:
        return probed(path, work)
    except NotAModelFile as error:
        text = str(error)
        if text.startswith("Reading the file's structure did not finish"):
            raise NotAModelFile(
                problem=f"Reading the {what} did not finish within {TIMEOUT:g} s",
                parameter="filepath",
                expected="a file that TensorFlow parses in well under a second",
                received=f"filepath={path}",
                fix=(
                    "The file is damaged or hostile; restore it from its source (MGPU_IO_PROBE_TIMEOUT raises the "
                    "limit for a very large model)"
                ),
            ) from None
        if text.startswith("Reading the file's structure crashed"):
            reason = text[text.find("(") + 1 : text.find(")")] if "(" in text else "a crash"
            raise NotAModelFile(
                problem=f"Reading the {what} crashed TensorFlow's reader ({reason})",
                parameter="filepath",
                expected="a file as TensorFlow writes it",
                received=f"filepath={path}",
                fix="The file is damaged; restore it from its source",
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
            problem=f"The {what} declares more data than fits in memory",
            parameter="filepath",
            expected="the sizes TensorFlow writes",
            received=f"filepath={path}",
            fix="The file is damaged or hostile",
        ) from None
    except RecursionError:
        raise NotAModelFile(
            problem=f"The {what} is nested too deeply to read",
            parameter="filepath",
            expected="a structure as TensorFlow writes it",
            received=f"filepath={path}",
            fix="The file is damaged or hostile",
        ) from None
    except Exception as error:
        raise NotAModelFile(
            problem=f"The {what} is damaged and cannot be read",
            parameter="filepath",
            expected="a file as TensorFlow writes it",
            received=f"filepath={path} ({type(error).__name__}: {first_line(error, 300)})",
            fix="Restore it from its source",
        ) from None


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
                problem=(
                    f"The object graph is damaged: the children {stem or '#'}N of node {node} are not numbered 0.."
                    f"{len(found) - 1}"
                ),
                parameter="filepath",
                expected="the numbering TensorFlow writes",
                received=f"{sorted(found)[:10]} in filepath={path}",
                fix="Restore it from its source",
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
                problem=f"The {what}'s object graph is damaged: node {node_id} points outside the graph",
                parameter="filepath",
                expected=f"node ids below {count}",
                received=f"filepath={path}",
                fix="Restore it from its source",
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
            problem=f"The {what} has no index file",
            parameter="filepath",
            expected=f"{index.name} beside the data files",
            received=f"filepath={path} ({'a folder' if index.is_dir() else 'nothing'} at {index})",
            fix="Copy the whole checkpoint: the .index and every .data-NNNNN-of-NNNNN file",
        )
    reader = open_reader(tf, prefix, path, what)
    try:
        shapes = reader.get_variable_to_shape_map()
        dtypes = reader.get_variable_to_dtype_map()
    except reader_errors(tf) as error:
        raise NotAModelFile(
            problem=f"The {what} is damaged and cannot be read",
            parameter="filepath",
            expected="a TensorFlow checkpoint (an .index table and its .data files)",
            received=f"filepath={path} ({first_line(error, 300)})",
            fix="Restore it from its source",
        ) from None
    if OBJECT_GRAPH_KEY not in shapes:
        raise UnsupportedModel(
            problem=(
                "The checkpoint is name-based (TF 1 `tf.train.Saver`): it holds no object graph, so its variables "
                "cannot be matched to Keras layers with certainty"
            ),
            parameter="filepath",
            expected="an object-based checkpoint, as tf.keras 2.x `save_weights` writes it",
            received=f"filepath={path} ({len(shapes)} variables, no {OBJECT_GRAPH_KEY})",
            fix=(
                "Load it in the TensorFlow that wrote it and save the model with model.save_weights('weights.h5') "
                "instead"
            ),
        )
    data_bytes = sum(
        p.stat().st_size for p in Path(prefix).parent.glob(Path(prefix).name + ".data-*-of-*") if p.is_file()
    )
    try:
        raw = reader.get_tensor(OBJECT_GRAPH_KEY)
    except reader_errors(tf) as error:
        raise NotAModelFile(
            problem=f"The {what} is damaged and cannot be read: its object graph cannot be loaded",
            parameter="filepath",
            expected="the .data files that belong to the index",
            received=f"filepath={path} ({first_line(error, 300)})",
            fix="Copy the whole checkpoint again from its source",
        ) from None
    raw = raw.item() if hasattr(raw, "item") else raw
    if not isinstance(raw, bytes) or len(raw) > MAX_GRAPH_BYTES:
        raise NotAModelFile(
            problem=f"The {what}'s object graph is not a serialised graph",
            parameter="filepath",
            expected="the bytes TensorFlow writes",
            received=f"{type(raw).__name__} in filepath={path}",
            fix="The file is damaged; restore it from its source",
        )
    proto = trackable_object_graph_pb2.TrackableObjectGraph()
    try:
        proto.ParseFromString(raw)
    except Exception as error:
        raise NotAModelFile(
            problem=f"The {what}'s object graph is damaged and cannot be parsed",
            parameter="filepath",
            expected="a TrackableObjectGraph, as TensorFlow writes it",
            received=f"filepath={path} ({first_line(error, 300)})",
            fix="Restore it from its source",
        ) from None
    if not proto.nodes:
        raise NotAModelFile(
            problem=f"The {what}'s object graph is empty",
            parameter="filepath",
            expected="the objects of a Keras model",
            received=f"filepath={path}",
            fix="The file is damaged; restore it from its source",
        )
    keys = {key: (tuple(int(d) for d in shape), dtypes[key].name) for key, shape in shapes.items()}
    children, variables, slots = node_edges(proto.nodes, what, path), {}, {}
    for node_id, node in enumerate(proto.nodes):
        for attribute in node.attributes:
            if attribute.name == VARIABLE_VALUE:
                if attribute.checkpoint_key not in keys:
                    raise NotAModelFile(
                        problem=f"The {what} is damaged: the object graph names a value the bundle does not hold",
                        parameter="filepath",
                        expected=f"{attribute.checkpoint_key!r} in the index",
                        received=f"filepath={path}",
                        fix="Restore it from its source",
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
            problem=f"The {what} is damaged and cannot be read",
            parameter="filepath",
            expected="a TensorFlow checkpoint (an .index table and its .data files)",
            received=f"filepath={path} ({first_line(error, 300)})",
            fix="Restore it from its source",
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
            problem=f"The {what} is damaged: object {node} should hold a variable's value and holds none",
            parameter="filepath",
            expected=f"a {VARIABLE_VALUE} entry",
            received=f"filepath={path}",
            fix="Restore it from its source",
        )
    if allowed is not None and variable.dtype not in allowed:
        raise UnsupportedModel(
            problem=(
                f"The weight {variable.full_name!r} has dtype {variable.dtype}, which a legacy Keras file does not "
                "store"
            ),
            parameter="filepath",
            expected=f"one of {', '.join(allowed)}",
            received=f"filepath={path}",
            fix="Cast the model's weights to float32 in the TensorFlow that wrote it and save it again",
        )
    nbytes = _declared_bytes(variable.shape, variable.dtype)
    if nbytes is None or nbytes > graph.data_bytes:
        raise NotAModelFile(
            problem=(
                f"The weight {variable.full_name!r} declares {nbytes} bytes, more than the checkpoint's data files hold"
            ),
            parameter="filepath",
            expected=f"values inside the {graph.data_bytes} bytes of data",
            received=f"shape {variable.shape} in filepath={path}",
            fix="The files are truncated or do not belong together; copy the checkpoint again",
        )
    if expected_name and variable.full_name and variable.full_name != expected_name:
        raise WeightsMismatch(
            problem=(
                f"The weight at object {node} is named {variable.full_name!r} in the checkpoint but {expected_name!r} "
                "in the model's records"
            ),
            parameter="filepath",
            expected="one name",
            received=f"filepath={path}",
            fix="The variables do not belong to this model; restore the folder from its source",
        )
    if expected_shape is not None and tuple(expected_shape) != variable.shape:
        raise WeightsMismatch(
            problem=f"Shape mismatch for weight {variable.full_name!r}",
            parameter="filepath",
            expected=f"shape {tuple(expected_shape)} from the model's records",
            received=f"shape={variable.shape} in filepath={path}",
            fix="The variables do not belong to this model; restore the folder from its source",
        )
    return variable
