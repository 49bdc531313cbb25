"""Open a legacy Keras file read-only and say what it holds, with h5py and the standard library only.

Three kinds of input carry a model: a full-model HDF5 file (``model.save``), a weights-only HDF5 file
(``model.save_weights`` or ``ModelCheckpoint(save_weights_only=True)``) and a JSON config (``model.to_json()``).
:func:`open_stored` is the one reader: it opens a file once, tells the kinds apart, decodes their attributes whichever writer made them, and refuses everything
else with a message that names what it found.
"""

import contextlib
import functools
import json
import math
from dataclasses import dataclass, field
from pathlib import Path
from typing import Optional

import h5py
import numpy as np

from mgpu_io import upstream
from mgpu_io.errors import (
    FailedSaveStub,
    InvalidArgument,
    LimitReached,
    MgpuIOError,
    NotAModelFile,
    WeightsMismatch,
    first_line,
)
from mgpu_io.format import door
from mgpu_io.format.kinds import LEGACY_MODEL, LEGACY_WEIGHTS, STUB, hdf5_kind
from mgpu_io.format.string_attrs import read_str, read_str_list

MODEL, WEIGHTS, CONFIG = "model", "weights", "config"
#: How the error about an HDF5 file without a legacy Keras model begins (the door then looks for Keras 3's own).
NO_KERAS_MODEL = "The HDF5 file holds no Keras model"

#: Deepest JSON nesting accepted in a config. Keras' own configs are far shallower (a wrapper nested 10 levels
#: deep is about 50); the bound keeps every walk of a hostile config far from Python's recursion limit.
MAX_CONFIG_DEPTH = 400
#: Largest JSON config file read (a config is text describing layers; 64 MiB is thousands of layers).
MAX_CONFIG_BYTES = 64 << 20
#: A dataset that is not one contiguous block (Keras never wrote one) may declare at most this many bytes, or this
#: many times the file's size, whichever is more: a few bytes of compressed zeros cannot make us allocate gigabytes.
MAX_FILTERED_BYTES, MAX_EXPANSION = 256 << 20, 16
#: Most objects (groups and datasets) walked in one file.
MAX_OBJECTS = 1_000_000
_DAMAGE = (
    KeyError,
    TypeError,
    AttributeError,
    IndexError,
    ValueError,
    LookupError,
    OSError,
    RuntimeError,
    OverflowError,
    AssertionError,
)


class CachedGroup:
    """An h5py group whose members are each looked up once.

    A repair asks for each weight several times (to check it, to size it, to plan a conversion, to copy it), and
    h5py's ``group[name]`` costs about 80 µs a call; a small file's repair made 86 such calls. Only what the format
    core uses of a group is here: ``name``, ``attrs``, ``keys()``, ``len()``, ``in``, ``[]`` and ``get``.
    """

    def __init__(self, group):
        self.group = group
        self._members = {}

    name = property(lambda self: self.group.name)
    attrs = property(lambda self: self.group.attrs)

    def keys(self):
        return self.group.keys()

    def __iter__(self):
        return iter(self.group)

    def __len__(self):
        return len(self.group)

    def __contains__(self, name):
        try:
            self[name]
        except KeyError:
            return False
        return True

    def __getitem__(self, name):
        found = self._members.get(name)
        if found is None:
            found = self._members[name] = _member(self.group, name)
        return found

    def get(self, name, default=None):
        return self[name] if name in self else default  # noqa: SIM401 - this *is* the mapping's get


class _StoredDataset(h5py.Dataset):
    """A dataset of a file opened read-only: its shape, type and place in the file read once, as it is found, and
    its HDF5 handle closed again at once, opened anew only where its values or properties are read.

    A repair asks each weight for its type, shape and offset (to check it, to size it, to plan a conversion) and
    copies it by its name (:func:`~mgpu_io.format.write`'s ``_put``): no handle need stay open. Open handles cost
    libhdf5 at every lookup that follows and at the file's close: a MobileNetV2 checkpoint's 421 weights took 28-30 ms
    to open, check and copy with their handles held, 24-26 ms closed at once (best of 15, this project's 2-core
    benchmark machine). h5py reads a dataset's creation properties and filters as it wraps it; a repair needs them
    only for the odd dataset that is not one contiguous block, so they too are read when first used. This leans on
    the attributes h5py's ``Dataset.__init__`` sets (h5py 3.x); the tests check it against h5py's own reading.
    """

    def __init__(self, bind, parent, name):  # h5py.Dataset's, less what is read on first use below
        h5py.HLObject.__init__(self, bind)
        self._readonly = True
        self._cache_props = {}
        #: Where it is: the parent group's handle and its name there (it is opened, or copied, by them).
        self.location = (parent, name)
        self.shape = bind.shape
        encoded = bind.get_type().encode()
        found = _DTYPES.get(encoded)
        if found is None:
            found = bind.dtype  # h5py's conversion of a type costs twice as much as reading it; a file has few
            if len(_DTYPES) < 256:
                _DTYPES[encoded] = found
        self.dtype = found
        self.size = None if self.shape is None else math.prod(self.shape)
        #: Its offset in the file, where its values are one contiguous block there (``None`` otherwise).
        self.offset = bind.get_offset()
        self._id = None  # closed (h5py closes a handle when its last reference goes)

    @property
    def id(self):
        if self._id is None:
            self._id = h5py.h5o.open(*self.location)
        return self._id

    _dcpl = functools.cached_property(lambda self: self.id.get_create_plist())
    _dxpl = functools.cached_property(lambda self: h5py.h5p.create(h5py.h5p.DATASET_XFER))
    _filters = functools.cached_property(lambda self: h5py.filters.get_filters(self._dcpl))
    # plain attributes of each instance (set above), where h5py's Dataset has properties that read them each time
    shape = dtype = size = None


def block_offset(dataset):
    """Where ``dataset``'s values lie in its file as one plain block (contiguous, unfiltered): their offset, or
    ``None`` (chunked, compact, external, not yet written). A stored weight (:class:`_StoredDataset`) read it as it
    was found, without opening its handle again."""
    return dataset.offset if isinstance(dataset, _StoredDataset) else dataset.id.get_offset()


#: NumPy types by the encoding of the HDF5 type they were converted from (a few kinds in any real file).
_DTYPES: dict[bytes, np.dtype] = {}


def _member(group, name):
    """``group[name]`` through h5py's low-level open (a third of the high-level lookup's cost)."""
    if not isinstance(name, str) or not name or name.startswith("/"):
        return group[name]
    encoded = name.encode("utf8")
    try:
        found = h5py.h5o.open(group.id, encoded)
    except KeyError:
        raise KeyError(f"no object {name!r} in {group.name!r}") from None
    if isinstance(found, h5py.h5d.DatasetID):
        return _StoredDataset(found, group.id, encoded)
    if isinstance(found, h5py.h5g.GroupID):
        return h5py.Group(found)
    return group[name]


def cached(group):
    """``group`` as a :class:`CachedGroup`; anything else (a dataset where a group belongs, ``None``) as it is."""
    return CachedGroup(group) if isinstance(group, h5py.Group) else group


def is_group(value):
    """An HDF5 group, cached or not."""
    return isinstance(value, (h5py.Group, CachedGroup))


@dataclass
class StoredModel:
    """What one input file holds. HDF5 handles stay valid only inside :func:`open_stored`'s ``with`` block."""

    path: Path
    file_type: str
    model_config: Optional[dict] = None
    training_config: Optional[dict] = None
    keras_version: Optional[str] = None
    backend: Optional[str] = None
    h5: Optional[h5py.File] = field(default=None, repr=False)
    weights_root: Optional[h5py.Group] = field(default=None, repr=False)
    #: The JSON config was a JSON string holding the model's JSON (``json.dump(model.to_json(), f)``).
    double_encoded: bool = False
    #: A full model's ``model_config`` and ``training_config`` as stored (text): what one training run's checkpoints
    #: share, and a folder's repair plans once (:func:`mgpu_io.format.plan.make_plan`'s ``reuse``).
    config_texts: Optional[tuple] = field(default=None, repr=False)

    @functools.cached_property
    def file_size(self):
        """The input's size in bytes, read once."""
        return self.path.stat().st_size

    @functools.cached_property
    def layer_names(self):
        """Names of the top-level layers that have a group in the weights root, in ``model.layers`` order."""
        return read_str_list(self.weights_root.attrs, "layer_names") if self.weights_root is not None else []

    def weight_names(self, layer_name):
        """The ``weight_names`` of one layer group, in the order the writer stored them.

        Raises:
            WeightsMismatch: the group is a dataset, or holds weights that its ``weight_names`` does not list.
        """
        group = self.weights_root[layer_name]
        if not is_group(group):
            raise WeightsMismatch(
                problem=f"The weight group of layer {layer_name!r} is a dataset",
                parameter="filepath",
                expected="a group that lists its weights in `weight_names`",
                received=f"a dataset in filepath={self.path}",
                fix="The file is damaged; restore it from its source",
            )
        names = read_str_list(group.attrs, "weight_names")
        if not names and len(group) and not any(k.startswith("weight_names") for k in group.attrs):
            raise WeightsMismatch(
                problem=f"The weight group of layer {layer_name!r} has no `weight_names`",
                parameter="filepath",
                expected="the list Keras writes beside the weights",
                received=f"{len(group)} unlisted members in filepath={self.path}",
                fix="The file is damaged; restore it from its source",
            )
        return names

    @functools.cached_property
    def optimizer_weights(self):
        """The ``optimizer_weights`` group of a full-model file (or the one a repair for Keras 3 kept beside it,
        ``mgpu_io_optimizer_weights``: see :data:`mgpu_io.format.plan.COPIED_ASIDE`), or ``None``."""
        if self.h5 is None or self.file_type != MODEL:
            return None
        found = self.h5.get("optimizer_weights")
        return cached(found if found is not None else self.h5.get("mgpu_io_optimizer_weights"))


def file_of(source, parameter="filepath"):
    """The path of ``source`` where it is an open ``h5py.File`` (Keras' legacy loader takes one); anything else
    comes back as it is. The file is read again from that path, read-only: the caller's handle is neither used nor
    closed. A file that lives in memory only (``driver='core'``, a file object) has no path to read.

    Example:
        >>> with h5py.File("fixtures/files/k224_functional_bn_x2_full.h5", "r") as h5:
        ...     file_of(h5)
        PosixPath('fixtures/files/k224_functional_bn_x2_full.h5')
    """
    if not isinstance(source, h5py.File):
        return source
    if not source.id.valid:
        raise InvalidArgument(
            problem="The h5py.File is closed",
            parameter=parameter,
            expected="an open h5py.File or a path",
            received=f"{parameter}=<closed h5py.File>",
            fix="Pass the file's path, or an h5py.File that is still open",
        )
    path = Path(source.filename)
    if source.driver in ("core", "fileobj") or not path.is_file():
        raise InvalidArgument(
            problem="The h5py.File is not a file on disk, which mgpu-io reads read-only by its path",
            parameter=parameter,
            expected="an h5py.File opened from a file, or a path",
            received=f"{parameter}=h5py.File({source.filename!r}, driver={source.driver!r})",
            fix="Write it to a file first and pass that path",
        )
    return path


def in_memory(source):
    """Whether ``source`` is an open ``h5py.File`` that lives in memory only (``driver='core'`` without a file on
    disk, or a Python file object), which has no path to read.

    Example:
        >>> with h5py.File("scratch.h5", "w", driver="core", backing_store=False) as h5:
        ...     in_memory(h5)
        True
    """
    return (
        isinstance(source, h5py.File)
        and source.id.valid
        and (source.driver in ("core", "fileobj") or not Path(source.filename).is_file())
    )


@contextlib.contextmanager
def on_disk(source):
    """The path of an HDF5 file that holds what the in-memory ``h5py.File`` ``source`` holds, for as long as the
    context lasts (a private temporary file, removed after); any other ``source`` comes back as it is.

    Keras' own loader takes such a file (``h5py.File(..., driver='core', backing_store=False)``); mgpu-io reads
    files read-only by their path, so it reads a copy of the file's image, written once. The caller's handle is
    flushed, neither changed nor closed.

    Example:
        >>> with h5py.File("scratch.h5", "w", driver="core", backing_store=False) as h5:
        ...     h5.attrs["keras_version"] = "2.15.0"
        ...     with on_disk(h5) as path:
        ...         h5py.File(path, "r").attrs["keras_version"]
        '2.15.0'
    """
    if not in_memory(source):
        yield source
        return
    import tempfile

    source.flush()
    image = source.id.get_file_image()
    with tempfile.TemporaryDirectory(prefix="mgpu-io-") as folder:
        path = Path(folder) / (Path(source.filename).name or "in_memory.h5")
        path.write_bytes(image)
        yield path


@contextlib.contextmanager
def open_stored(path):
    """Open ``path`` read-only and yield a :class:`StoredModel`.

    Raises:
        NotAModelFile: the file is missing, truncated, not HDF5 and not JSON, or holds no Keras model.
        FailedSaveStub: the file is what a failed Keras <= 2.1.6 ``save()`` leaves behind.

    Example:
        >>> with open_stored("fixtures/files/k122_kuza55_x2_weights.h5") as stored:
        ...     stored.file_type, stored.keras_version, stored.layer_names
        ('weights', None, ['inp', 'lambda_1', 'lambda_2', 'template', 'merge_1'])
    """
    path = Path(path)
    if not path.is_file():
        what = "a folder" if path.is_dir() else "nothing"
        raise NotAModelFile(
            problem="Cannot read the input file",
            parameter="filepath",
            expected="a Keras .h5 file or a JSON config",
            received=f"filepath={path} ({what} is there)",
            fix="Check the path",
        )
    try:
        kind = door.content(path)[0]  # what the file is, by the door's one rule
    except OSError as exc:
        limit_reached(exc, path, "opening the file")
        raise NotAModelFile(
            problem="Cannot read the input file",
            parameter="filepath",
            expected="a readable Keras .h5 file or a JSON config",
            received=f"filepath={path} ({first_line(exc)})",
            fix="Check its permissions",
        ) from None
    if kind != door.HDF5:
        with reading(path, "reading the JSON config"):
            stored = _read_json_config(path, yaml=kind == door.YAML_CONFIG)
        yield stored
        return
    shared = door.opened(path)
    try:
        h5 = shared if shared is not None else h5py.File(path, "r")
    except (OSError, RuntimeError) as exc:
        limit_reached(exc, path, "opening the file")
        raise NotAModelFile(
            problem="The HDF5 file is damaged and cannot be opened (truncated or partly overwritten?)",
            parameter="filepath",
            expected="a complete Keras .h5 file",
            received=f"filepath={path} ({first_line(exc)})",
            fix="Copy the file again from its source; a partial download or a full disk leaves files like this",
        ) from None
    try:
        with reading(path, "reading the file's structure"):
            _refuse_links(path, h5)
            stored = _read_hdf5(path, h5)
        yield stored
    finally:
        if shared is None:
            h5.close()


@contextlib.contextmanager
def reading(path, doing):
    """Turn what a damaged or hostile file makes h5py, NumPy or the JSON decoder raise into :class:`NotAModelFile`.

    Used around the format core's own work on a file (reading, planning, inspecting), never around a caller's code.
    """
    try:
        yield
    except MgpuIOError:
        raise
    except RecursionError:
        raise NotAModelFile(
            problem="The file's model config is nested too deeply to read",
            parameter="filepath",
            expected="a config as Keras writes it",
            received=f"filepath={path} (deeper than Python's recursion limit while {doing})",
            fix="The file is damaged or hostile",
        ) from None
    except MemoryError as exc:
        limit_reached(exc, path, doing)
        raise NotAModelFile(
            problem="The file declares more data than fits in memory",
            parameter="filepath",
            expected="weights of the sizes the file holds",
            received=f"filepath={path} (out of memory while {doing})",
            fix="The file is damaged or hostile",
        ) from None
    except _DAMAGE as exc:
        limit_reached(exc, path, doing)
        raise NotAModelFile(
            problem=f"The file is damaged: {doing} failed",
            parameter="filepath",
            expected="a file as Keras writes it",
            received=f"filepath={path} ({type(exc).__name__}: {first_line(exc)})",
            fix="Restore it from its source",
        ) from None


def limit_reached(error, path, doing):
    """Raise :class:`~mgpu_io.errors.LimitReached` when ``error`` comes from a limit the user set (``ulimit -n``
    for no file descriptor left, ``ulimit -v`` for memory that ran out under it), not from the file."""
    from mgpu_io.format import limits
    from mgpu_io.format.sandbox.inside import user_memory_problem

    if isinstance(error, MemoryError) or upstream.said(upstream.H5_NO_MEMORY, error):
        problem, flag = user_memory_problem(), "-v"
    else:
        problem, flag = limits.descriptor_problem(error), "-n"
    if problem is None:
        return
    fix = "ulimit -v unlimited, or a larger value" if flag == "-v" else "ulimit -n 1024, or close other files"
    raise LimitReached(
        problem=f"A limit of this environment stopped {doing}: {problem}",
        expected="room to read the file",
        received=f"filepath={path}",
        fix=f"Raise the limit ({fix}) and run again",
    ) from None


def _refuse_links(path, h5):
    """Refuse soft and external links anywhere in the file: Keras never wrote them, and following one would read
    another file on the user's disk (or loop forever).

    libhdf5 walks the file's links itself (``H5Lvisit``: each group once, however many hard links reach it, and
    no soft or external link followed); only the walk's count and the first link that is not a hard link come back.
    """
    count, found = 0, []

    def visit(name, info):
        nonlocal count
        count += 1
        if info.type != h5py.h5l.TYPE_HARD:
            found.append(name.decode("utf8", "replace"))
            return True
        return True if count > MAX_OBJECTS else None

    h5.id.links.visit(visit, info=True)
    if found:
        link = h5.get(found[0], getlink=True)
        kind = "an external link to " + repr(link.filename) if isinstance(link, h5py.ExternalLink) else "a soft link"
        raise NotAModelFile(
            problem=f"The file holds {kind} at /{found[0]}",
            parameter="filepath",
            expected="plain groups and datasets, as Keras writes them; mgpu-io never follows links",
            received=f"filepath={path}",
            fix="The file was edited after Keras wrote it; restore it from its source",
        )
    if count > MAX_OBJECTS:
        raise NotAModelFile(
            problem=f"The file holds more than {MAX_OBJECTS} objects",
            parameter="filepath",
            expected="a Keras model file",
            received=f"filepath={path}",
            fix="The file is damaged or hostile",
        )


def check_weight(dataset, name, stored, *, counter=False):
    """Check one weight of ``stored`` before anything reads it: a dataset of numbers, of a size the file can hold.

    Numbers are floating point, integers or booleans (a layer may hold integer or boolean variables: a quantizer's
    settings, a counter, a lookup table) and complex numbers; they are read as they are. ``counter`` also allows an
    empty array (an optimizer's state).

    Raises:
        WeightsMismatch: a group stands where a dataset belongs.
        NotAModelFile: the values are not numbers (strings, records, opaque bytes), or the declared size cannot be
            in the file.
    """
    path = stored.path
    if not isinstance(dataset, h5py.Dataset):
        raise WeightsMismatch(
            problem=f"The weight {name!r} is not a dataset",
            parameter="filepath",
            expected="an array of numbers",
            received=f"a group in filepath={path}",
            fix="The file is damaged; restore it from its source",
        )
    dtype = dataset.dtype
    if dtype.kind not in "fiubc" or dataset.shape is None or (dataset.size == 0 and not counter):
        raise NotAModelFile(
            problem=f"The weight {name!r} is not an array of numbers",
            parameter="filepath",
            expected="floating-point, integer or boolean values, as Keras stores weights",
            received=f"{_what_values(dataset)} in filepath={path}",
            fix="The file is damaged; restore it from its source",
        )
    nbytes = dataset.size * dtype.itemsize
    size = stored.file_size
    offset = block_offset(dataset)
    if offset is not None:
        if offset + nbytes > size:
            raise NotAModelFile(
                problem=f"The weight {name!r} lies beyond the end of the file (truncated?)",
                parameter="filepath",
                expected=f"its {nbytes} bytes inside the file",
                received=f"a file of {size} bytes, the data at bytes {offset}-{offset + nbytes} in filepath={path}",
                fix="Copy the file again from its source",
            )
    elif nbytes > max(MAX_FILTERED_BYTES, MAX_EXPANSION * size):
        raise NotAModelFile(
            problem=f"The weight {name!r} declares {nbytes} bytes in a file of {size} bytes",
            parameter="filepath",
            expected="weights stored as Keras stores them (uncompressed)",
            received=f"shape {dataset.shape} in filepath={path}",
            fix="The file is damaged or hostile",
        )


def _what_values(dataset):
    """What a dataset that cannot be a weight holds, in words."""
    dtype = dataset.dtype
    if dataset.shape is None or (dtype.kind in "fiubc" and dataset.size == 0):
        return "no values"
    if dtype.kind in "SUO" or h5py.check_string_dtype(dtype) is not None:
        return f"strings ({dtype})"
    if dtype.kind == "V" and dtype.names:
        return f"records of the fields {list(dtype.names)} (an HDF5 compound type)"
    if dtype.kind == "V":
        return f"opaque bytes ({dtype})"
    return f"{dtype} values"


def _read_hdf5(path, h5):
    attrs = h5.attrs
    kind = hdf5_kind(attrs.keys(), h5.keys())  # the door's one rule for HDF5 files
    if kind == LEGACY_MODEL:
        model_text = read_str(attrs, "model_config")
        model_config = _decode_json(path, model_text, "model_config")
        training = read_str(attrs, "training_config")
        weights_root = h5.get("model_weights")
        if weights_root is None:
            raise NotAModelFile(
                problem="The file has a model config but no `model_weights` group",
                parameter="filepath",
                expected="a full Keras model file",
                received=f"filepath={path} (groups: {sorted(h5.keys())})",
                fix="The weights are not in this file; look for a weights file saved beside it",
            )
        return StoredModel(
            path=path,
            file_type=MODEL,
            model_config=model_config,
            training_config=_decode_json(path, training, "training_config") if training else None,
            keras_version=read_str(attrs, "keras_version") or read_str(weights_root.attrs, "keras_version"),
            backend=read_str(attrs, "backend") or read_str(weights_root.attrs, "backend"),
            h5=h5,
            weights_root=cached(weights_root),
            config_texts=(model_text, training),
        )
    if kind == LEGACY_WEIGHTS:
        return StoredModel(
            path=path,
            file_type=WEIGHTS,
            keras_version=read_str(attrs, "keras_version"),
            backend=read_str(attrs, "backend"),
            h5=h5,
            weights_root=cached(h5),
        )
    if kind == STUB:
        raise FailedSaveStub(
            problem=(
                "The file is the stub that a failed `save()` of a multi-GPU model leaves behind: it holds no model "
                "config and no weights"
            ),
            parameter="filepath",
            expected="a Keras model or weights file",
            received=f"filepath={path} (keras_version={read_str(attrs, 'keras_version')}, root attributes only)",
            fix=(
                "Nothing can be recovered from it; Keras <= 2.1.6 cannot save a multi_gpu_model whole. Look for "
                "weights saved with `save_weights` or `ModelCheckpoint(save_weights_only=True)` instead"
            ),
        )
    raise NotAModelFile(
        problem=NO_KERAS_MODEL,
        parameter="filepath",
        expected="a `model_config` attribute (full model) or `layer_names` (weights only)",
        received=f"filepath={path} (root attributes: {sorted(attrs.keys())}, groups: {sorted(h5.keys())[:10]})",
        fix="Check that this is the file Keras wrote",
        kind=kind,
    )


def _read_json_config(path, yaml=False):
    with open(path, "rb") as handle:
        head = handle.read(4096)
    size = path.stat().st_size
    text = head.decode("utf8", errors="replace")
    if size > MAX_CONFIG_BYTES and text.lstrip().startswith(_JSON_STARTS):
        raise NotAModelFile(
            problem="The JSON file is too large for a model config",
            parameter="filepath",
            expected=f"at most {MAX_CONFIG_BYTES >> 20} MiB",
            received=f"filepath={path} ({size} bytes)",
            fix="Pass the architecture JSON saved with to_json()",
        )
    if yaml:
        return _read_yaml_config(path, size)
    try:
        text = path.read_text(encoding="utf8") if size <= MAX_CONFIG_BYTES else None
    except UnicodeDecodeError:
        text = None
    if text is None or not text.lstrip().startswith(_JSON_STARTS):
        what = "binary data" if text is None else "text that is not JSON"
        raise NotAModelFile(
            problem="The file is neither HDF5 nor a JSON config",
            parameter="filepath",
            expected="a Keras .h5 file or the JSON of `model.to_json()` (or the YAML of `to_yaml()`)",
            received=f"filepath={path} ({what}, {path.stat().st_size} bytes)",
            fix="Check the path; a Keras 3 `.keras` file is a zip archive that needs no repair",
        )
    config = _decode_json(path, text, "the file")
    double_encoded = isinstance(config, str) and config.lstrip().startswith(("{", "["))
    if double_encoded:  # json.dump(model.to_json(), f): a JSON string whose value is the model's JSON
        config = _decode_json(path, config, "the JSON string that the file holds")
    stored = _config_model(path, config)
    stored.double_encoded = double_encoded
    return stored


#: How a JSON config file starts: an object, or a string that holds one (``json.dump(model.to_json(), f)``).
_JSON_STARTS = ("{", "[", '"')


def _read_yaml_config(path, size):
    from mgpu_io.format.yaml_config import MAX_YAML_BYTES, load_yaml_config

    if size > MAX_YAML_BYTES:
        raise NotAModelFile(
            problem="The YAML file is too large for a model config",
            parameter="filepath",
            expected=f"at most {MAX_YAML_BYTES >> 20} MiB",
            received=f"filepath={path} ({size} bytes)",
            fix="Pass the architecture saved with to_yaml() or to_json()",
        )
    try:
        text = path.read_text(encoding="utf8")
    except UnicodeDecodeError:
        raise NotAModelFile(
            problem="The YAML file is not UTF-8 text",
            parameter="filepath",
            expected="the YAML of model.to_yaml()",
            received=f"filepath={path} (binary data)",
            fix="Pass the architecture file the writer saved",
        ) from None
    config = load_yaml_config(path, text)
    depth = json_depth(config)
    if depth > MAX_CONFIG_DEPTH:
        raise NotAModelFile(
            problem=f"The YAML config is nested {depth} levels deep",
            parameter="filepath",
            expected=f"at most {MAX_CONFIG_DEPTH}",
            received=f"filepath={path}",
            fix="The file is damaged or hostile",
        )
    return _config_model(path, config, what="YAML")


def _config_model(path, config, what="JSON"):
    """A decoded ``to_json()``/``to_yaml()`` config as a :class:`StoredModel` (file type ``config``)."""
    if not (isinstance(config, dict) and "class_name" in config and "config" in config):
        raise NotAModelFile(
            problem=f"The {what} file is not a Keras model config",
            parameter="filepath",
            expected="an object with `class_name` and `config` keys, as `model.to_json()` writes it",
            received=(
                f"filepath={path} (top-level {type(config).__name__}"
                f"{' with keys ' + str(sorted(config)[:6]) if isinstance(config, dict) else ''})"
            ),
            fix="Pass the architecture JSON that was saved beside the weights",
        )
    return StoredModel(
        path=path,
        file_type=CONFIG,
        model_config=config,
        keras_version=config.get("keras_version"),
        backend=config.get("backend"),
    )


def _decode_json(path, text, what):
    try:
        value = json.loads(text, parse_constant=_no_constant, parse_float=_finite_float)
    except RecursionError:
        value, depth = None, "more than Python's recursion limit"
    except ValueError as exc:
        raise NotAModelFile(
            problem=f"The JSON in {what} cannot be parsed",
            parameter="filepath",
            expected="valid JSON as Keras writes it",
            received=f"filepath={path} ({exc})",
            fix="The file is damaged or was edited by hand; restore it from its source",
        ) from None
    else:
        depth = json_depth(value)
        if depth <= MAX_CONFIG_DEPTH:
            return value
    raise NotAModelFile(
        problem=f"The JSON in {what} is nested {depth} levels deep",
        parameter="filepath",
        expected=f"at most {MAX_CONFIG_DEPTH} (a wrapper nested 10 times is about 50)",
        received=f"filepath={path}",
        fix="The file is damaged or hostile",
    )


def _finite_float(text):
    value = float(text)
    if value != value or value in (float("inf"), float("-inf")):
        raise ValueError(f"{text} is too large for a float (Keras never writes such a number in a config)")
    return value


def _no_constant(name):
    raise ValueError(f"{name} is not standard JSON (Keras never writes NaN or Infinity in a config)")


def json_depth(value):
    """The nesting depth of a decoded JSON value, walked level by level (no recursion, whatever the depth).

    Example:
        >>> json_depth({"a": [1, {"b": []}]})
        4
    """
    depth, level = 0, [value]
    while True:
        containers = [item for item in level if isinstance(item, (dict, list))]
        if not containers:
            return depth
        depth += 1
        level = [child for item in containers for child in (item.values() if isinstance(item, dict) else item)]
