"""Write clean legacy Keras HDF5 files and JSON configs, atomically.

The layout is the one Keras 2.2/2.3 wrote and every later loader reads (legacy-format.md §3): root attributes
``keras_version``, ``backend``, ``model_config`` and ``training_config``; a ``model_weights`` group (or the root,
for weights-only files) with ``layer_names`` and one group per layer holding ``weight_names`` and the datasets;
an ``optimizer_weights`` group.

The file is written fresh (so nothing of the source that is not asked for, such as its slice payloads, survives in
free space), but weight data never passes through Python. A file whose weights add up to 16 MiB or less is built in
memory (libhdf5's core driver) and written in one go, each weight copied by libhdf5 (``H5Ocopy``, without its
attributes). A larger one is built on disk: a weight under 1 MiB is copied by libhdf5 the same way; a larger weight
is allocated in place, and once the file's structure is written its raw bytes are copied from the source's raw
bytes by the kernel (``copy_file_range``, as ``cp`` does); HDF5 reports both offsets for contiguous datasets, the
layout Keras writes. A dataset of any other layout (chunked, compressed: Keras never wrote one) is read through
HDF5's filters and written plainly. Groups and attributes are made through h5py's low-level API: a small file's
repair makes a few dozen, and h5py's high-level calls cost a third more each.
"""

import collections
import contextlib
import errno
import functools
import itertools
import json
import os
import tempfile
from pathlib import Path

import h5py
import numpy as np

from mgpu_io import upstream
from mgpu_io._version import __version__
from mgpu_io.errors import LimitReached, OutputError, first_line
from mgpu_io.format import limits
from mgpu_io.format.config import layer_name, model_layers
from mgpu_io.format.read import CONFIG, MODEL, block_offset, reading
from mgpu_io.format.string_attrs import read_str_list, set_attr, write_str_list

_COPY_CHUNK = 16 << 20


def write_plan(plan, output, progress=None):
    """Write a :class:`~mgpu_io.format.plan.Plan` as a legacy file of its input's kind, atomically.

    Full model in, full model out; weights-only in, weights-only out; JSON config in, JSON config out.
    ``progress`` is called with ``(bytes done, bytes in all)`` as weights are written.
    """
    stored, report = plan.stored, plan.report
    with reading(stored.path, "copying the weights"), atomic_path(output) as temporary:
        if stored.file_type == CONFIG:
            config = plan.config if report.config == "verbatim" else _for_model_from_json(plan.config)
            write_json_config(temporary, config)
            return
        provenance = json.dumps(
            {
                "tool": f"mgpu-io {__version__}",
                "source_keras_version": stored.keras_version,
                "removed_wrapper_levels": report.depth,
                "config": report.config,
            }
        )
        versions = {"keras_version": plan.keras_version, "backend": stored.backend or "tensorflow"}
        group = plan.optimizer_weights
        optimizer = (
            [(name, group[name]) for name in read_str_list(group.attrs, "weight_names")] if group is not None else None
        )
        total = report.weight_bytes + sum(value.size * value.dtype.itemsize for _, value in optimizer or [])
        tick = _byte_counter(progress, total) if progress else None
        if stored.file_type == MODEL:
            by_name = {layer.layer: layer for layer in plan.layers}
            order = [layer_name(layer) for layer in model_layers(plan.config)]
            layers = [(name, plan.converted(by_name[name]) if name in by_name else []) for name in order]
            attrs = dict(
                versions,
                model_config=json.dumps(plan.config),
                mgpu_io=provenance,
                training_config=json.dumps(plan.training) if plan.training is not None else None,
            )
            write_legacy_h5(
                temporary,
                layers,
                root_attrs=attrs,
                weights_root_attrs=versions,
                layer_order=order,
                optimizer=optimizer,
                optimizer_group=plan.optimizer_group,
                progress=tick,
            )
        else:
            layers = [(layer.layer, plan.converted(layer)) for layer in plan.layers if layer.names]
            write_legacy_h5(
                temporary, layers, weights_root="/", root_attrs=dict(versions, mgpu_io=provenance), progress=tick
            )


def _byte_counter(progress, total):
    """Turn ``progress(done, total)`` into a per-dataset ``tick(nbytes)``."""
    done = [0]

    def tick(nbytes):
        done[0] += nbytes
        progress(done[0], total)

    return tick


#: What an ``OSError`` means when it comes from the output side: the fix is the user's, not the file's.
_OUTPUT_ERRNOS = {
    errno.ENOSPC: "the disk is full",
    errno.EDQUOT: "the disk quota is exceeded",
    errno.EROFS: "the file system is read-only",
    errno.EACCES: "permission denied",
    errno.EPERM: "the operation is not permitted (an immutable folder?)",
    errno.ENAMETOOLONG: "the name is too long",
    errno.EFBIG: "the file is too large for this file system",
}


def output_problem(error):
    """What an ``OSError`` (h5py's too) says about the output side, or ``None`` when it is not about the output."""
    limit = _output_limit(error)
    if limit is not None:
        return limit[0]
    if error.errno in _OUTPUT_ERRNOS:
        return _OUTPUT_ERRNOS[error.errno]
    found = upstream.h5_errno(error)  # libhdf5's "errno = 28", else the C library's own text of one
    if found is None:
        found = upstream.strerror_code(error, _OUTPUT_ERRNOS)
    return _OUTPUT_ERRNOS.get(found)


def _output_limit(error):
    """``(what, ulimit flag)`` when a limit the user set made ``error``: the file-size limit (``EFBIG`` under
    ``ulimit -f``) or the open-files limit (``ulimit -n``); else ``None``."""
    too_large = error.errno == errno.EFBIG or upstream.said(upstream.FILE_TOO_LARGE, error)
    if too_large and limits.file_size_problem() is not None:
        return limits.file_size_problem(), "-f"
    if limits.descriptor_problem(error) is not None:
        return limits.descriptor_problem(error), "-n"
    return None


def _umask():
    mask = os.umask(0)
    os.umask(mask)
    return mask


@contextlib.contextmanager
def atomic_path(destination, suffix=".tmp"):
    """Yield a temporary path beside ``destination``; put it in place as ``destination`` only on success.

    A crash, an error or Ctrl-C leaves either the old ``destination`` or none, never a partial file. Where the file
    system allows it (Linux ``O_TMPFILE``) the temporary file has no name until it is complete, and a new
    ``destination`` is its first name, so even SIGKILL leaves the whole file or nothing. Replacing an existing file
    goes through a hidden name (``os.replace`` cannot take a nameless file), and so does a caller that needs a named
    ``suffix`` (Keras insists on ``.keras``): that name, :func:`temporary_names` of the process, is removed on any
    exception; a SIGKILL while it exists leaves it (the folder repair removes those of the workers it ends). The
    result gets the permissions ``cp`` gives a new file (``0666`` less the umask). Output-side failures (full disk,
    read-only folder, long names) are :class:`OutputError`.

    Example:
        >>> import tempfile, pathlib
        >>> out = pathlib.Path(tempfile.mkdtemp()) / "x.txt"
        >>> with atomic_path(out) as tmp:
        ...     _ = tmp.write_text("done")
        >>> out.read_text()
        'done'
    """
    destination = Path(destination)
    folder = destination.parent
    anonymous = _anonymous_file(folder) if suffix == ".tmp" else None
    named = None
    try:
        with _output_errors(destination):
            if anonymous is not None:
                temporary = Path(f"/proc/self/fd/{anonymous}")
            else:
                fd, name = tempfile.mkstemp(prefix=f"{_TEMPORARY_PREFIX}{os.getpid()}-", suffix=suffix, dir=folder)
                os.close(fd)
                named = temporary = Path(name)
            yield temporary
            if anonymous is not None and _later is not None:  # a folder's worker: the last steps wait their turn
                _later(functools.partial(_finish_anonymous, anonymous, destination))
                anonymous = None  # the commit's to close
                return
            if anonymous is not None:
                _finish_anonymous(anonymous, destination, close=False)
                return
            with open(temporary, "rb+") as handle:
                _made_durable(handle.fileno())
            os.replace(named, destination)
            named = None
    finally:
        if anonymous is not None:
            os.close(anonymous)
        if named is not None:
            named.unlink(missing_ok=True)


#: Where :func:`atomic_path` hands a new output's last steps instead of taking them (:func:`deferring`).
_later = None


@contextlib.contextmanager
def deferring(later):
    """Within the block, :func:`atomic_path` hands each nameless new output's last steps to ``later(commit)``
    instead of taking them at once: ``commit()`` makes the file durable, gives it its name (or moves it over an
    existing one) and closes it, raising :class:`OutputError` or :class:`LimitReached` as ``atomic_path`` would.
    Until then the file has no name: a process killed before leaves nothing. A folder's worker
    (:mod:`mgpu_io.format.batch`) commits each file's output in a thread of its own while it reads the next file,
    so that the wait for the disk (``fsync``, 14% of the bench's folder of small files) overlaps the next file's
    work; it reports a file once its output is committed.

    Example:
        >>> import tempfile, pathlib
        >>> out, commits = pathlib.Path(tempfile.mkdtemp()) / "x.txt", []
        >>> with deferring(commits.append), atomic_path(out) as tmp:
        ...     _ = tmp.write_text("done")
        >>> out.exists(), [commit() for commit in commits], out.read_text()
        (False, [None], 'done')
    """
    global _later
    before, _later = _later, later
    try:
        yield
    finally:
        _later = before


def _finish_anonymous(fd, destination, close=True):
    """The nameless file ``fd`` made durable and named ``destination`` (moved over an existing one through a
    hidden name); closed unless ``close`` is false. Output-side failures as :func:`atomic_path` raises them."""
    named = None
    try:
        with _output_errors(destination):
            _made_durable(fd)
            if _link_anonymous(fd, destination):
                return  # a new destination: its first name is its final one, whole at once
            named = _name_anonymous(fd, destination.parent)  # an existing destination: a hidden name first
            os.replace(named, destination)
            named = None
    finally:
        if close:
            os.close(fd)
        if named is not None:
            named.unlink(missing_ok=True)


@contextlib.contextmanager
def _output_errors(destination):
    """An output-side ``OSError`` (full disk, read-only folder, long names, a limit the user set) as
    :class:`OutputError` or :class:`LimitReached`; any other error as it is."""
    try:
        yield
    except OSError as error:
        problem = output_problem(error)
        if problem is None:
            raise
        limit = _output_limit(error)
        if limit is not None:  # a limit the user set, not the disk
            problem, flag = limit
            raise LimitReached(
                problem=f"Cannot write the output: {problem}",
                expected="room for the whole file",
                received=f"output={destination}",
                fix=f"Raise the limit ({limits.raise_hint(flag)}) and run again; nothing was written",
            ) from None
        raise OutputError(
            problem=f"Cannot write the output: {problem}",
            parameter="output",
            expected="a writable folder with room for the file",
            received=f"output={destination} ({error.strerror or first_line(error)})",
            fix="Free space or choose another folder; nothing was written",
        ) from None


def _made_durable(fd):
    """The file ``fd`` on disk, with the permissions ``cp`` gives a new file."""
    os.fsync(fd)
    os.fchmod(fd, 0o666 & ~_umask())


def _anonymous_file(folder):
    """A file descriptor of a nameless new file in ``folder`` (``O_TMPFILE``), or ``None`` where unsupported."""
    flag = getattr(os, "O_TMPFILE", None)
    if flag is None or not Path("/proc/self/fd").is_dir():
        return None
    try:
        return os.open(folder, flag | os.O_RDWR, 0o666)
    except OSError as error:
        if output_problem(error) is not None and error.errno not in (errno.EOPNOTSUPP, errno.EISDIR):
            raise OutputError(
                problem=f"Cannot write the output: {output_problem(error)}",
                parameter="output",
                expected="a writable folder",
                received=f"folder={folder} ({error.strerror})",
                fix="Choose another folder; nothing was written",
            ) from None
        return None


#: The start of a temporary output's hidden name; the writer's process id follows (see :func:`temporary_names`).
_TEMPORARY_PREFIX = ".mgpu-io-"


def temporary_names(folder, pid):
    """The hidden temporary files that process ``pid`` may have left in ``folder`` if it was killed (SIGKILL)
    while one had a name: see :func:`atomic_path`.

    Example:
        >>> import tempfile, pathlib
        >>> temporary_names(pathlib.Path(tempfile.mkdtemp()), 12345)
        []
    """
    return sorted(Path(folder).glob(f"{_TEMPORARY_PREFIX}{int(pid)}-*"))


def _link_anonymous(fd, destination):
    """Give the nameless file ``fd`` the name ``destination`` where it is free (``linkat`` through /proc): ``True``;
    ``False`` where a file of that name exists."""
    proc = os.open("/proc/self/fd", os.O_RDONLY | os.O_DIRECTORY)
    try:
        os.link(str(fd), destination, src_dir_fd=proc, follow_symlinks=True)
        return True
    except FileExistsError:
        return False
    finally:
        os.close(proc)


def _name_anonymous(fd, folder):
    """Link the nameless file ``fd`` into ``folder`` under a fresh hidden name (``linkat`` through /proc)."""
    proc = os.open("/proc/self/fd", os.O_RDONLY | os.O_DIRECTORY)
    try:
        for _ in range(100):
            name = folder / f"{_TEMPORARY_PREFIX}{os.getpid()}-{os.urandom(6).hex()}.tmp"
            try:
                os.link(str(fd), name, src_dir_fd=proc, follow_symlinks=True)
                return name
            except FileExistsError:
                continue
        raise FileExistsError(errno.EEXIST, "no free temporary name", str(folder))
    finally:
        os.close(proc)


def write_json_config(destination, model_config):
    """Write a model config as ``model.to_json()`` would."""
    Path(destination).write_text(json.dumps(model_config), encoding="utf8")


def write_legacy_h5(
    path,
    layers,
    *,
    weights_root="model_weights",
    root_attrs=None,
    weights_root_attrs=None,
    layer_order=None,
    optimizer=None,
    optimizer_group="optimizer_weights",
    progress=None,
):
    """Write a legacy Keras HDF5 file.

    Args:
        path: the file to create.
        layers: ``(layer name, [(weight name, source h5py.Dataset or numpy array)])`` in layer order.
        weights_root: ``"model_weights"`` for a full model, ``"/"`` for a weights-only file.
        root_attrs: file attributes (``str`` values are stored as UTF-8 bytes, as Keras 2 did; ``None`` skips).
        weights_root_attrs: attributes of the weights root (``keras_version``, ``backend``).
        layer_order: every layer name for ``layer_names`` (weightless layers too); default: ``layers``' names.
        optimizer: the optimizer state to write, as ``(name, source dataset or array)`` pairs, or ``None``.
        optimizer_group: the group that holds it (``optimizer_weights``, where Keras reads it).
        progress: called with the number of bytes of each dataset written.
    """
    raw = []  # (destination offset, source dataset, bytes) copied by the kernel once the structure is written
    values = [value for _, weights in layers for _, value in weights] + [value for _, value in optimizer or []]
    in_memory = sum(value.size * value.dtype.itemsize for value in values) <= _IN_MEMORY_UP_TO
    with _created(path, in_memory) as h5:
        _set_attrs(h5.attrs, root_attrs)
        root = h5 if weights_root == "/" else _group(h5, weights_root)
        for name, weights in layers:
            group, folders = _group(root, name), {}
            write_str_list(group.attrs, "weight_names", [weight_name for weight_name, _ in weights])
            for weight_name, value in weights:
                raw += _put(group, weight_name, value, progress, folders, in_memory)
        write_str_list(root.attrs, "layer_names", layer_order if layer_order is not None else [n for n, _ in layers])
        _set_attrs(root.attrs, weights_root_attrs)
        if optimizer is not None:
            group, folders = _group(h5, optimizer_group), {}
            write_str_list(group.attrs, "weight_names", [weight_name for weight_name, _ in optimizer])
            for weight_name, value in optimizer:
                raw += _put(group, weight_name, value, progress, folders, in_memory)
    _copy_raw(raw, path, progress)


#: A file whose weights add up to no more than this is built in memory (libhdf5's core driver) and written in one
#: go: the 425 small wrappers of the benchmark took 3.3 ms a file to write this way against 4.7 ms on disk, measured
#: on this project's 2-core benchmark machine. Larger ones are built on disk, so that memory stays bounded.
_IN_MEMORY_UP_TO = 16 << 20


@contextlib.contextmanager
def _created(path, in_memory):
    """A new HDF5 file to fill, written to ``path`` when the block ends: built in memory and written in one go, or
    built on disk. libhdf5 cannot resolve the name of a file that has none yet (atomic_path's O_TMPFILE): it gets
    the open file instead."""
    if in_memory:
        properties = h5py.h5p.create(h5py.h5p.FILE_ACCESS)
        properties.set_fapl_core(1 << 16, False)
        h5 = h5py.File(h5py.h5f.create(f"mgpu-io-{next(_MEMORY_NAMES)}".encode(), h5py.h5f.ACC_EXCL, fapl=properties))
        try:
            yield h5
            h5.flush()  # without it, the image holds stale headers of the objects still open
            image = h5.id.get_file_image()
        finally:
            h5.close()
        with open(path, "w+b") as handle:
            handle.write(image)
        return
    with contextlib.ExitStack() as stack:
        handle = stack.enter_context(open(path, "w+b")) if str(path).startswith("/proc/self/fd/") else None
        yield stack.enter_context(h5py.File(handle if handle is not None else path, "w"))


#: A name for each in-memory file (libhdf5 refuses a second open file of the same name).
_MEMORY_NAMES = itertools.count()


def _group(parent, name, exist_ok=False):
    """``parent.create_group(name)`` through h5py's low-level API (twelve groups in a new in-memory file: 42 us each
    against 57 us); with ``exist_ok``, an existing group is opened instead (``a`` after ``a/b`` made it)."""
    encoded = name.encode("utf8")
    try:
        return h5py.Group(h5py.h5g.create(parent.id, encoded, lcpl=_link_properties(encoded.isascii())))
    except ValueError:
        if not exist_ok:
            raise
        return parent[name]


@functools.cache
def _link_properties(ascii_name):
    """Link creation properties as h5py makes them: missing parent groups are created, names are tagged ASCII or
    UTF-8."""
    properties = h5py.h5p.create(h5py.h5p.LINK_CREATE)
    properties.set_create_intermediate_group(True)
    properties.set_char_encoding(h5py.h5t.CSET_ASCII if ascii_name else h5py.h5t.CSET_UTF8)
    return properties


def _set_attrs(attrs, values):
    for key, value in (values or {}).items():
        if value is not None:
            set_attr(attrs, key, np.asarray(str(value).encode("utf8"), dtype=_ASCII))


#: How h5py stores a ``bytes`` attribute: a variable-length string tagged ASCII (as ``attrs[key] = b"..."`` does).
_ASCII = h5py.string_dtype("ascii")


def _put(group, weight_name, value, progress, folders, in_memory=False):
    """Create one dataset in ``group``; ``folders`` holds the group's subgroups made so far (a weight name such as
    ``dense_1/kernel:0`` puts the dataset in one), so that each is looked up once. A source dataset is copied by
    libhdf5 when it is small or the file is built in memory; else its block is allocated, and returned as
    ``(offset, source file, source offset, bytes)`` for :func:`_copy_raw`, whose copy counts its bytes for
    ``progress`` as they are copied; what is written here is counted here."""
    parent, _, leaf = weight_name.rpartition("/")
    target = group
    if parent:
        if parent not in folders:
            folders[parent] = _group(group, parent, exist_ok=True)
        target = folders[parent]
    blocks = _placed(target, leaf, value, in_memory)
    if progress is not None and not blocks:
        progress(value.size * value.dtype.itemsize)
    return blocks


def _placed(target, leaf, value, in_memory):
    """``value`` as dataset ``leaf`` of ``target``: written, copied by libhdf5, or allocated for the kernel's copy
    (then its block, as :func:`_put` returns it)."""
    nbytes = value.size * value.dtype.itemsize
    name = leaf.encode("utf8")
    if not isinstance(value, h5py.Dataset):
        target.create_dataset(leaf, data=np.asarray(value))
        return []
    # A stored weight says where it is (read.py's _StoredDataset, whose handle is closed): copied by its name there.
    location = getattr(value, "location", None)
    source_offset = block_offset(value)  # None unless one block
    if source_offset is None or nbytes == 0:
        # Not a plain contiguous block (Keras never wrote one): read it through HDF5's filters, so that checksums
        # are verified, and write it plainly. Its size was bounded when the plan checked it.
        target.create_dataset(leaf, data=value[()])
        return []
    if in_memory or nbytes < _COPIED_BY_HDF5_BELOW:
        h5py.h5o.copy(
            *(location or (value.id, b".")),
            target.id,
            name,
            copypl=_without_attributes(),
            lcpl=_link_properties(name.isascii()),
        )
        return []
    source = value.id
    dataset = h5py.h5d.create(
        target.id,
        name,
        source.get_type(),
        source.get_space(),
        dcpl=_allocated_now(),
        lcpl=_link_properties(name.isascii()),
    )
    return [(dataset.get_offset(), h5py.h5f.get_name(source), source_offset, nbytes)]


#: A contiguous dataset smaller than this is copied by libhdf5 itself (``H5Ocopy``, without its attributes): 42 us
#: against 115 us to create it and copy its bytes later, measured on this project's 2-core benchmark machine.
#: Larger ones are copied by the kernel, range by range, each range's writeback started at once.
_COPIED_BY_HDF5_BELOW = 1 << 20


@functools.cache
def _without_attributes():
    properties = h5py.h5p.create(h5py.h5p.OBJECT_COPY)
    properties.set_copy_object(h5py.h5o.COPY_WITHOUT_ATTR_FLAG)
    return properties


@functools.cache
def _allocated_now():
    """Dataset creation properties for a block that is about to be copied in raw: it exists at once, at a known
    offset, and is not zeroed first."""
    properties = h5py.h5p.create(h5py.h5p.DATASET_CREATE)
    properties.set_alloc_time(h5py.h5d.ALLOC_TIME_EARLY)
    properties.set_fill_time(h5py.h5d.FILL_TIME_NEVER)
    return properties


def _copy_raw(blocks, path, progress=None):
    """Copy each source dataset's raw bytes into its block in ``path`` (see :func:`_copy_range`), its pages on disk
    and out of the page cache as it goes (:class:`_WriteBehind`); ``progress`` is called with the bytes of each
    range as it is copied."""
    by_file = {}
    for offset, source_path, source_offset, nbytes in blocks:
        by_file.setdefault(source_path, []).append((offset, source_offset, nbytes))
    with open(path, "r+b") as destination:
        behind = _WriteBehind(destination.fileno())
        for source_path, copies in by_file.items():
            with open(source_path, "rb") as source:
                _read_sequentially(source.fileno())
                for target_offset, source_offset, nbytes in copies:
                    _copy_range(
                        source.fileno(),
                        source_offset,
                        destination.fileno(),
                        target_offset,
                        nbytes,
                        progress=progress,
                        behind=behind,
                    )


def _copy_range(
    source, source_offset, destination, destination_offset, nbytes, buffer=None, progress=None, behind=None
):
    """Copy ``nbytes`` from one file to another, each part handed to ``behind`` (a :class:`_WriteBehind`) as soon
    as it is copied.

    The kernel copies (``copy_file_range``), as ``cp`` does, whatever the two offsets: a dataset's offset in the old
    file is whatever its writer left, in ours whatever HDF5 chose, so they seldom lie alike within a page. Where the
    kernel has no such call, or refuses it, the bytes go through ``buffer`` (read, then write). Which is faster for
    unlike offsets depends on the kernel: 2 GiB took 1.3-1.4 s by the kernel against 2.3-5.2 s through a 16 MiB
    buffer on this project's 2-core machine (Linux 6.18, ext4, 3 runs each, with fsync); an older kernel there once
    took 1.9 s against 1.7 s for 1 GB. Following ``cp`` keeps `unwrap` beside its reference on either.
    """
    done = 0
    while buffer is None and done < nbytes:
        try:
            copied = os.copy_file_range(
                source, destination, min(_COPY_CHUNK, nbytes - done), source_offset + done, destination_offset + done
            )
            if copied == 0:
                raise OSError("copy_file_range copied nothing")
        except (AttributeError, OSError):  # no copy_file_range here, or refused: read and write
            buffer = memoryview(bytearray(_COPY_CHUNK))
            break
        if behind is not None:
            behind.written(destination_offset + done, copied)
        done += copied
        if progress is not None:
            progress(copied)
    while done < nbytes:
        part = buffer[: min(len(buffer), nbytes - done)]
        got = os.preadv(source, [part], source_offset + done)
        if got == 0:
            raise OSError(errno.EIO, "the source file ends before its dataset does")
        written = 0
        while written < got:  # a write may take less than it is given
            written += os.pwritev(destination, [part[written:got]], destination_offset + done + written)
        if behind is not None:
            behind.written(destination_offset + done, got)
        done += got
        if progress is not None:
            progress(got)


def _read_sequentially(fd):
    """Tell the kernel that ``fd`` is read from start to end (``POSIX_FADV_SEQUENTIAL``, as ``cp`` does): a larger
    read-ahead where its pages are not in the page cache."""
    with contextlib.suppress(AttributeError, OSError):
        os.posix_fadvise(fd, 0, 0, os.POSIX_FADV_SEQUENTIAL)


class _WriteBehind:
    """The copied ranges of one output written to disk as they are copied, and, beyond the last :data:`WINDOW`, out
    of the page cache once on disk.

    Each range is handed to the disk at once (``sync_file_range``'s ``SYNC_FILE_RANGE_WRITE``, which does not
    wait), so that the final ``fsync`` has little left to wait for. Once :data:`WINDOW` more ranges (1 GiB) follow
    one, the copy waits until that one is on disk and drops its pages (``POSIX_FADV_DONTNEED``, as
    ``dd oflag=nocache`` does): the weight bytes an output copies keep at most 1 GiB in the page cache, however
    many they are (what HDF5 writes itself, the structure and the weights under 1 MiB, is left to the kernel), so
    that the reader's other cached files (a training set, the input itself) stay, and the kernel has no gigabytes
    of ours to write back and reclaim meanwhile. An output up to 1 GiB is left to the page cache whole: dropping
    its pages cost more than it saved there (the 1 GB wrapper's repair took 1.14 s against 0.90 s by ``cp`` +
    ``sync``, with every range dropped; 6 rounds in turn). The 10 GB wrapper's took 9.1-9.6 s against 7.9-18.6 s
    by ``cp`` + ``sync`` (3 rounds in turn; 8.9-14.4 s with the pages kept, in another set) on this project's 2-core
    machine (ext4 on a virtual disk). The final ``fsync`` still makes the file durable: waiting for a range's pages
    does not flush the disk's cache or write the file's metadata.

    A write error met while waiting is raised here (the kernel reports it once: an ``fsync`` after it would not).
    Where the system has no ``sync_file_range`` (not Linux), the copy leaves the pages to the kernel.
    """

    #: Ranges (of up to :data:`_COPY_CHUNK` each, 1 GiB in all) that stay in the page cache behind the copy.
    WINDOW = (1 << 30) // _COPY_CHUNK

    _WRITE, _WAIT_BEFORE, _WAIT_AFTER = 2, 1, 4  # SYNC_FILE_RANGE_WRITE, _WAIT_BEFORE, _WAIT_AFTER

    def __init__(self, fd):
        self.fd, self.function, self.pending = fd, _sync_file_range(), collections.deque()

    def written(self, offset, nbytes):
        """``nbytes`` at ``offset`` were just copied: start writing them, and wait for (and drop) the oldest range
        once more than :data:`WINDOW` follow it."""
        if self.function is None:
            return
        self._call(offset, nbytes, self._WRITE)
        if self.function is None:  # refused by this file system
            return
        self.pending.append((offset, nbytes))
        if len(self.pending) > self.WINDOW:
            offset, nbytes = self.pending.popleft()
            self._call(offset, nbytes, self._WAIT_BEFORE | self._WRITE | self._WAIT_AFTER)
            with contextlib.suppress(AttributeError, OSError):
                os.posix_fadvise(self.fd, offset, nbytes, os.POSIX_FADV_DONTNEED)

    def _call(self, offset, nbytes, flags):
        if self.function(self.fd, offset, nbytes, flags) != 0:
            import ctypes

            code = ctypes.get_errno()
            if code in (errno.ENOSYS, errno.EINVAL, errno.ESPIPE):  # a file system without it: the kernel's way
                self.function = None
                self.pending.clear()
                return
            raise OSError(code, os.strerror(code))


@functools.cache
def _sync_file_range():
    """Linux's ``sync_file_range`` (through ctypes: the standard library has no binding), or ``None``."""
    try:
        import ctypes

        function = ctypes.CDLL(None, use_errno=True).sync_file_range
    except (ImportError, OSError, AttributeError):
        return None
    function.argtypes = [ctypes.c_int, ctypes.c_int64, ctypes.c_int64, ctypes.c_uint]
    return function


def _for_model_from_json(config):
    """Keras 3's ``model_from_json`` resolves a top-level class through its ``module``: ``keras.models`` has
    ``Model`` and ``Sequential`` but not TF 2.3's ``Functional`` (the same model, by another name)."""
    name = "Model" if config.get("class_name") == "Functional" else config.get("class_name")
    return dict(config, class_name=name, module="keras.models")
