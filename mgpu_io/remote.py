"""Files in object storage: ``s3://``, ``gs://``, ``hf://``, ``memory://`` and every other fsspec URL.

Legacy checkpoints are often still where they were kept then, in a bucket. :func:`inspect` reads a remote HDF5
file's structure through fsspec's block cache (attributes, groups, dataset shapes: never the weights' bytes) and
says how many bytes it fetched; :func:`unwrap` repairs a remote file, or every file under a remote prefix, to a
local or remote destination, file by file through a local temporary copy, and resumes where a stopped run left off.

Credentials come from each filesystem's own configuration (for S3: the ``AWS_*`` variables, ``~/.aws``, an
instance role; ``AWS_ENDPOINT_URL`` for an S3-compatible server), or ``storage_options=`` as fsspec takes them. They
are never printed: a refusal is one :class:`~mgpu_io.errors.RemoteAccessError` line naming the URL and the
store's error code. fsspec (and s3fs, gcsfs, huggingface_hub for their schemes) is the optional ``[remote]`` extra.

Example:
    >>> import fsspec, mgpu_io.remote as remote
    >>> with open("fixtures/files/k224_siamese_x2_full.h5", "rb") as f:
    ...     fsspec.filesystem("memory").pipe("/doc/siamese.h5", f.read())
    >>> report = remote.inspect("memory://doc/siamese.h5")
    >>> report.depth, report.template, report.file
    (1, 'siamese', 'memory://doc/siamese.h5')
"""

import contextlib
import datetime
import os
import re
import shutil
import tempfile
from dataclasses import dataclass
from pathlib import Path, PurePosixPath

from mgpu_io.errors import InvalidArgument, MgpuIOError, MissingDependency, NotAModelFile, RemoteAccessError

#: Bytes fetched per request when a remote file's structure is read: HDF5 metadata lies in small pieces between the
#: weights, and larger blocks fetch the weights beside them (measured on tfk115_densenet_x2_full.h5, 900,784 bytes:
#: its structure spans 180,224 bytes in 4 KiB blocks, 327,680 in 16 KiB, 655,360 in 64 KiB).
BLOCK_SIZE = 4 << 10
#: Blocks kept in memory while one file's structure is read (a block is never fetched twice).
MAX_BLOCKS = 1 << 16
#: Schemes read as local paths.
_LOCAL = ("", "file", "local")
_URL = re.compile(r"^([a-zA-Z][a-zA-Z0-9+.\-]*)://")


def is_url(path):
    """Whether ``path`` is a URL of a filesystem other than the local one.

    Example:
        >>> is_url("s3://bucket/model.h5"), is_url("model.h5"), is_url("file:///tmp/model.h5")
        (True, False, False)
    """
    found = _URL.match(str(path))
    return bool(found) and found.group(1).lower() not in _LOCAL


def filesystem(url, storage_options=None):
    """``(fs, path)`` for ``url``: the fsspec filesystem, configured the way that filesystem configures itself, and
    the path within it. A missing fsspec, or a missing package for the scheme, is one line naming the extra."""
    try:
        import fsspec.core
    except ImportError:
        raise MissingDependency(
            f"A URL input or output needs fsspec, which is not installed. Expected the packages of the [remote] "
            f"extra. Received: {_safe(url)}. pip install 'mgpu-io[remote]'."
        ) from None
    try:
        return fsspec.core.url_to_fs(str(url), **(storage_options or {}))
    except ImportError as error:
        raise MissingDependency(
            f"The {_scheme(url)}:// filesystem needs a package that is not installed ({_first(error)}). Expected the "
            f"packages of the [remote] extra. Received: {_safe(url)}. pip install 'mgpu-io[remote]'."
        ) from None
    except ValueError as error:
        raise InvalidArgument(
            f"fsspec knows no filesystem for this URL. Expected s3://, gs://, hf://, memory:// or another fsspec "
            f"scheme. Received: {_safe(url)} ({_first(error)}). Check the URL."
        ) from None


def _scheme(url):
    found = _URL.match(str(url))
    return found.group(1) if found else "file"


def _safe(url):
    """``url`` without credentials written into it (``s3://KEY:SECRET@bucket``, ``?token=...``)."""
    text = re.sub(r"^([a-zA-Z][a-zA-Z0-9+.\-]*://)[^/@]*@", r"\1***@", str(url))
    return re.sub(r"([?&][^=&]*(?:token|key|secret|signature|credential)[^=&]*=)[^&]*", r"\1***", text, flags=re.I)


def _first(error):
    return (str(error).strip().splitlines() or [type(error).__name__])[0][:200]


#: Error codes of S3-compatible stores and what they mean to the user.
_DENIED = ("InvalidAccessKeyId", "SignatureDoesNotMatch", "AccessDenied", "ExpiredToken", "InvalidToken", "403")
_MISSING_BUCKET = ("NoSuchBucket",)


def _code(error):
    """The store's error code in ``error`` (botocore's, kept by s3fs as the cause), else ``None``."""
    for candidate in (error, getattr(error, "__cause__", None), getattr(error, "__context__", None)):
        response = getattr(candidate, "response", None)
        if isinstance(response, dict):
            return response.get("Error", {}).get("Code")
    text = str(error)
    return next((code for code in _DENIED + _MISSING_BUCKET if code in text), None)


@contextlib.contextmanager
def access(url, doing):
    """Turn a store's refusal while ``doing`` something with ``url`` into one :class:`RemoteAccessError` line (or
    :class:`NotAModelFile` for a missing object), never echoing a credential."""
    try:
        yield
    except MgpuIOError:
        raise
    except FileNotFoundError as error:
        code = _code(error)
        if code in _MISSING_BUCKET or "bucket" in str(error).lower():
            raise RemoteAccessError(
                f"The bucket does not exist while {doing}. Expected an existing bucket. Received: {_safe(url)} "
                f"(NoSuchBucket). Check the bucket's name and the endpoint (AWS_ENDPOINT_URL)."
            ) from None
        raise NotAModelFile(
            f"Cannot read the input: nothing is there. Expected an object at the URL. Received: {_safe(url)}. "
            f"Check the path (a prefix is listed with `mgpu-io unwrap PREFIX/ OUT`)."
        ) from None
    except (PermissionError, OSError) as error:
        code = _code(error) or type(error).__name__
        code = "HTTP 403 Forbidden" if code == "403" else code  # a HEAD request's refusal has no body, no code
        if isinstance(error, PermissionError) or code in _DENIED or code.startswith("HTTP 403"):
            raise RemoteAccessError(
                f"The store refused the credentials while {doing}. Expected credentials that may read and write "
                f"there, from the filesystem's usual configuration (for S3: AWS_ACCESS_KEY_ID and "
                f"AWS_SECRET_ACCESS_KEY, ~/.aws, a role). Received: {_safe(url)} ({code}). Check the credentials "
                f"this process sees; they are not printed."
            ) from None
        raise RemoteAccessError(
            f"The store failed while {doing}. Expected a reachable store. Received: {_safe(url)} ({code}: "
            f"{_redact(_first(error))}). Check the endpoint and the network, then run again."
        ) from None


def _redact(text):
    return re.sub(r"(?i)(key|secret|token|signature|credential)[=:]\S+", r"\1=***", text)


# --- inspect ---------------------------------------------------------------------------------------------------


def inspect(url, scan_weights=False, *, storage_options=None):
    """Inspect a remote Keras file without reading its weights: its HDF5 structure (attributes, groups, dataset
    shapes and types) is read through fsspec's block cache (:data:`BLOCK_SIZE` per request) into a local skeleton
    that holds no weight bytes, and inspected there. ``scan_weights=True`` (NaN/Inf) downloads the whole file.

    Returns:
        The :class:`~mgpu_io.format.inspect.InspectReport`, with ``file`` the URL and a ``remote`` finding that says
        how many bytes were fetched from the store, of how many.
    """
    from mgpu_io.api import inspect as inspect_local

    fs, path = filesystem(url, storage_options)
    with tempfile.TemporaryDirectory(prefix="mgpu-io-remote-") as folder:
        local = Path(folder) / PurePosixPath(path).name
        if scan_weights:
            with access(url, "downloading the file"):
                fs.get(path, str(local))
            fetched = local.stat().st_size
        else:
            fetched = skeleton(fs, path, local, url)
        with access(url, "reading the file's size"):
            size = fs.size(path)
        report = inspect_local(local, scan_weights=bool(scan_weights))
    from mgpu_io.format.inspect import Finding

    report.file = str(url)
    what = "the whole file" if scan_weights else "its structure only, through a block cache; no weight was read"
    report.findings.append(Finding("remote", f"read from object storage: {fetched} of {size} bytes fetched ({what})"))
    return report


def skeleton(fs, path, destination, url=None):
    """Copy the structure of the remote HDF5 file ``path`` to the local ``destination``: every group, attribute,
    dataset shape, type and layout, and no dataset's bytes (a JSON or YAML config is copied whole). Returns the
    bytes fetched from the store."""
    import h5py

    url = url or path
    with access(url, "reading the file's structure"):
        handle = fs.open(
            path, "rb", block_size=BLOCK_SIZE, cache_type="blockcache", cache_options={"maxblocks": MAX_BLOCKS}
        )
    with handle:
        handle, fetched = _count_fetches(handle)
        with access(url, "reading the file's structure"):
            head = handle.read(8)
            handle.seek(0)
            if head != b"\x89HDF\r\n\x1a\n":  # a config (or no Keras file): small, read whole
                destination.write_bytes(handle.read())
                return fetched()
            try:
                source = h5py.File(handle, "r")
            except OSError as error:
                raise NotAModelFile(
                    f"The remote HDF5 file is damaged and cannot be opened. Expected a complete Keras .h5 file. "
                    f"Received: {_safe(url)} ({_first(error)}). Copy the file again from its source."
                ) from None
            with source, h5py.File(destination, "w") as copy:
                _copy_structure(source, copy, [MAX_OBJECTS], url)
        return fetched()


def _count_fetches(handle):
    """``(file, count)``: a file to read ``handle`` through, and a function that says how many bytes were fetched
    from the store: what its block cache asked for (an fsspec buffered file), else what was read."""
    cache = getattr(handle, "cache", None)
    fetcher = getattr(cache, "fetcher", None)
    total = [0]
    if cache is None or fetcher is None:  # an in-memory or unbuffered file: the blocks its reads touched
        blocks: set = set()
        size = getattr(handle, "size", None) or 0
        return _Counted(handle, blocks), lambda: min(len(blocks) * BLOCK_SIZE, size or len(blocks) * BLOCK_SIZE)

    def counted(start, end):
        data = fetcher(start, end)
        total[0] += len(data)
        return data

    cache.fetcher = counted
    return handle, lambda: total[0]


class _Counted:
    """A read-only file that notes which :data:`BLOCK_SIZE` blocks its reads touch (as a block cache would fetch)."""

    def __init__(self, handle, blocks):
        self._handle, self._blocks = handle, blocks

    def read(self, size=-1):
        start = self._handle.tell()
        data = self._handle.read(size)
        if data:
            self._blocks.update(range(start // BLOCK_SIZE, (start + len(data) - 1) // BLOCK_SIZE + 1))
        return data

    def readinto(self, buffer):
        data = self.read(len(buffer))
        buffer[: len(data)] = data
        return len(data)

    def seek(self, offset, whence=0):
        return self._handle.seek(offset, whence)

    def tell(self):
        return self._handle.tell()

    def seekable(self):
        return True

    def readable(self):
        return True


#: Most groups, datasets and attributes copied into a skeleton, and the deepest nesting: a hostile file's structure
#: costs bounded time and memory (Keras files hold a few thousand objects, nested a few levels).
MAX_OBJECTS, MAX_DEPTH = 1_000_000, 64


def _copy_structure(source, destination, budget, url, depth=0):
    budget[0] -= len(source.attrs) + len(source)
    if budget[0] < 0 or depth > MAX_DEPTH:
        raise NotAModelFile(
            f"The remote HDF5 file's structure is larger than a Keras file's. Expected at most {MAX_OBJECTS} objects "
            f"nested at most {MAX_DEPTH} deep. Received: {_safe(url)}. Check the file; copy it locally to inspect it "
            f"within the local reader's limits."
        )
    for key, value in source.attrs.items():
        destination.attrs[key] = value
    for name, item in source.items():
        link = source.get(name, getlink=True)
        if not isinstance(link, _hard_link()):
            continue  # soft and external links: not followed (a Keras writer makes none)
        if isinstance(item, _group()):
            _copy_structure(item, destination.create_group(name), budget, url, depth + 1)
        else:
            made = destination.create_dataset(name, shape=item.shape, dtype=item.dtype)  # no bytes: never written
            for key, value in item.attrs.items():
                made.attrs[key] = value


def _hard_link():
    import h5py

    return h5py.HardLink


def _group():
    import h5py

    return h5py.Group


# --- unwrap ----------------------------------------------------------------------------------------------------


@dataclass
class _Place:
    """A file or prefix: on a remote filesystem (``fs``, ``path``) or local (``fs`` is ``None``)."""

    text: str
    fs: object = None
    path: str = ""

    @property
    def remote(self):
        return self.fs is not None


def _place(where, storage_options):
    if not is_url(where):
        return _Place(str(where))
    fs, path = filesystem(where, storage_options)
    return _Place(str(where), fs, path)


def _mtime(fs, path):
    """The modification time of ``path`` on ``fs`` as a POSIX timestamp, or ``None``."""
    try:
        info = fs.info(path)
    except (FileNotFoundError, OSError):
        return None
    for key in ("LastModified", "mtime", "last_modified", "updated", "created"):
        value = info.get(key)
        if isinstance(value, datetime.datetime):
            return value.timestamp()
        if isinstance(value, (int, float)):
            return float(value)
        if isinstance(value, str):
            with contextlib.suppress(ValueError):
                return datetime.datetime.fromisoformat(value.replace("Z", "+00:00")).timestamp()
    return 0.0 if info else None


def unwrap(source, output, *, storage_options=None, progress=None, overwrite=False, **options):
    """Repair a remote file, or every file under a remote prefix, into ``output`` (a local path or a URL).

    One file: downloaded to a temporary folder, repaired there by :func:`mgpu_io.unwrap` (every output format,
    deployable ones included), and uploaded whole (an object store's upload is all or nothing). A prefix (a URL
    ending in ``/``, or one that names no object): each file under it in turn, into the same place under ``output``,
    with the output's name as the format says (``format=``: ``.onnx``, ``.tflite``, a SavedModel folder; else the
    file's own name). An output newer than its input is ``done before``: a stopped run resumes.

    Args:
        source: a URL (``s3://bucket/run1/model.h5`` or ``s3://bucket/run1/``); a local path is read as it is.
        output: a local path or URL.
        storage_options: passed to fsspec for both (else each filesystem configures itself).
        progress: for a prefix, called with ``(done, total, FileResult)`` after each file.
        overwrite: replace existing outputs.
        **options: :func:`mgpu_io.unwrap`'s (``format``, ``allow_plain``, ``config``, ...).

    Returns:
        An :class:`~mgpu_io.format.plan.UnwrapReport` for a file, a :class:`~mgpu_io.format.batch.BatchReport` for a
        prefix.
    """
    src, out = _place(source, storage_options), _place(output, storage_options)
    if not src.remote and not out.remote:
        import mgpu_io

        return mgpu_io.unwrap(source, output, overwrite=overwrite, progress=progress, **options)
    if src.remote:
        with access(source, "listing the input"):
            is_file = src.fs.isfile(src.path) and not str(source).endswith("/")
            if not is_file and not src.fs.exists(src.path) and not _bucket_exists(src):
                src.fs.ls(src.path)  # the store's own error: a missing bucket, refused credentials
    else:
        is_file = Path(source).is_file()
    if is_file:
        return _unwrap_one(src, out, overwrite=overwrite, **options)
    return _unwrap_prefix(src, out, progress=progress, overwrite=overwrite, **options)


def _bucket_exists(place):
    bucket = place.path.split("/", 1)[0]
    try:
        place.fs.ls(bucket)
    except FileNotFoundError:
        return False
    return True


def _unwrap_one(src, out, *, overwrite=False, **options):
    import mgpu_io

    with tempfile.TemporaryDirectory(prefix="mgpu-io-remote-") as folder:
        local_in = _fetch(src, Path(folder) / "in")
        if not out.remote:
            report = mgpu_io.unwrap(local_in, out.text, overwrite=overwrite, **options)
            report.source = src.text
            return report
        if not overwrite:
            with access(out.text, "checking the output"):
                if out.fs.exists(out.path):
                    from mgpu_io.errors import OutputError

                    raise OutputError(
                        f"The output exists. Expected a new path, or overwrite=True. Received: output={_safe(out.text)}"
                        f". Pass overwrite=True (--force) to replace it."
                    )
        local_out = Path(folder) / "out" / PurePosixPath(out.path).name
        local_out.parent.mkdir()
        report = mgpu_io.unwrap(local_in, local_out, **options)
        _store(local_out, out)
        report.source, report.output = src.text, out.text
        return report


def _fetch(src, folder):
    """``src`` as a local path: itself when local, else downloaded into ``folder``."""
    if not src.remote:
        return Path(src.text)
    folder.mkdir(parents=True, exist_ok=True)
    local = folder / PurePosixPath(src.path).name
    with access(src.text, "downloading the input"):
        src.fs.get(src.path, str(local))
    return local


def _store(local, out):
    """Upload ``local`` (a file, or a SavedModel folder) to ``out``; each object is put whole."""
    with access(out.text, "uploading the output"):
        if local.is_dir():
            out.fs.put(str(local), out.path, recursive=True)
        else:
            out.fs.put_file(str(local), out.path)


def _listing(src):
    """``(relative name, full path)`` of the files under the prefix, sorted."""
    if not src.remote:
        base = Path(src.text)
        return [(p.relative_to(base).as_posix(), str(p)) for p in sorted(base.rglob("*")) if p.is_file()]
    with access(src.text, "listing the input"):
        found = src.fs.find(src.path.rstrip("/"))
    base = src.path.rstrip("/") + "/"
    return sorted((p[len(base) :], p) for p in found if p.startswith(base))


def _output_name(relative, format):
    from mgpu_io.format.door import EXPORT_FORMATS

    if format is None:
        return relative
    return str(PurePosixPath(relative).with_suffix(EXPORT_FORMATS[format]))


def _unwrap_prefix(src, out, *, progress=None, overwrite=False, format=None, allow_plain=False, **options):
    from mgpu_io.format.batch import DONE, DONE_REASON, FAILED, STOPPED, BatchReport, FileResult
    from mgpu_io.format.door import HDF5_SUFFIXES, JSON_SUFFIX

    files = [
        (name, path)
        for name, path in _listing(src)
        if PurePosixPath(name).suffix.lower() in (*HDF5_SUFFIXES, JSON_SUFFIX)
    ]
    if not files:
        raise NotAModelFile(
            f"The prefix holds no Keras file. Expected .h5, .hdf5 or .json files under it. Received: "
            f"{_safe(src.text)}. Check the prefix."
        )
    report = BatchReport(source=src.text, output=out.text)
    results = []

    def finished(result):
        results.append(result)
        if progress is not None:
            progress(len(results), len(files), result)

    try:
        for name, path in files:
            target = _output_name(name, format)
            out_path = (out.path.rstrip("/") + "/" + target) if out.remote else str(Path(out.text) / target)
            if not overwrite and _done(src, path, out, out_path):
                finished(FileResult(name, DONE, output=_join(out.text, target), reason=DONE_REASON))
                continue
            shown = _join(out.text, target) if out.remote else out_path
            result = _one_of_prefix(src, path, out, out_path, (name, shown), format, allow_plain, options)
            finished(result)
    except BaseException as stop:
        seen = {r.path for r in results}
        report.files = results + [FileResult(n, FAILED, reason=STOPPED) for n, _ in files if n not in seen]
        stop.report = report
        raise
    report.files = results
    return report


def _join(base, name):
    return base.rstrip("/") + "/" + name


def completed(source, output, *, storage_options=None):
    """Whether ``output`` (a URL or a local path) is what an earlier run completed from ``source``: it exists (an
    upload is whole or absent) and is no older than ``source``. The resumption rule of a prefix, for recipes that
    map :func:`mgpu_io.unwrap` over a listing themselves (docs/scale.md).

    Example:
        >>> completed("fixtures/files/k224_siamese_x2_full.h5", "memory://nothing/here.h5")
        False
    """
    src, out = _place(source, storage_options), _place(output, storage_options)
    return _done(src, src.path if src.remote else src.text, out, out.path if out.remote else out.text)


def listing(prefix, *, suffixes=(".h5", ".hdf5"), storage_options=None):
    """The names of the files under ``prefix`` (a URL or a local folder) whose names end in ``suffixes``, relative
    to it and sorted: what a recipe maps over.

    Example:
        >>> listing("fixtures/files")[:2]
        ['k122_kuza55_conv_x2_full.h5', 'k122_kuza55_conv_x2_weights.h5']
    """
    found = _listing(_place(prefix, storage_options))
    return [name for name, _ in found if PurePosixPath(name).suffix.lower() in suffixes]


def _done(src, path, out, out_path):
    if out.remote:
        written = _mtime(out.fs, out_path)
    else:
        written = os.stat(out_path).st_mtime if os.path.exists(out_path) else None
    if written is None:
        return False
    read = _mtime(src.fs, path) if src.remote else os.stat(path).st_mtime
    return read is None or written >= read


def _one_of_prefix(src, path, out, out_path, names, format, allow_plain, options):
    import mgpu_io
    from mgpu_io.errors import NotAWrapper
    from mgpu_io.format.batch import CLEAN, FAILED, REPAIRED, SKIPPED, FileResult

    name, shown = names
    folder = Path(tempfile.mkdtemp(prefix="mgpu-io-remote-"))
    try:
        local_in = _fetch(_Place(src.text, src.fs, path) if src.remote else _Place(path), folder / "in")
        local_out = folder / "out" / PurePosixPath(out_path).name if out.remote else Path(out_path)
        local_out.parent.mkdir(parents=True, exist_ok=True)
        status = REPAIRED
        try:
            try:
                report = mgpu_io.unwrap(local_in, local_out, overwrite=True, format=format, **options)
            except NotAWrapper:
                if not allow_plain:
                    return FileResult(
                        name,
                        SKIPPED,
                        reason="a plain model, not a wrapper: pass allow_plain=True to write it normalised too",
                    )
                report = mgpu_io.unwrap(local_in, local_out, overwrite=True, format=format, allow_plain=True, **options)
                status = CLEAN
        except RemoteAccessError:
            raise
        except MgpuIOError as error:
            return FileResult(name, FAILED, reason=str(error))
        if out.remote:
            _store(local_out, _Place(out.text, out.fs, out_path))
        return FileResult(name, status, output=shown, depth=report.depth)
    finally:
        shutil.rmtree(folder, ignore_errors=True)
