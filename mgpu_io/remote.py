"""Files in object storage: ``s3://``, ``gs://``, ``hf://``, ``memory://`` and every other fsspec URL.

Legacy checkpoints are often still where they were kept then, in a bucket. :func:`inspect` reads a remote HDF5
file's structure in 4 KiB blocks, in the door's sandboxed child (attributes, groups, dataset shapes: not the
weights), and says how many bytes it fetched; :func:`unwrap` repairs a remote file, or every file under a remote prefix, to a
local or remote destination, file by file through a local temporary copy, and resumes where a stopped run left off.

Credentials come from each filesystem's own configuration (for S3: the ``AWS_*`` variables, ``~/.aws``, an
instance role; ``AWS_ENDPOINT_URL`` for an S3-compatible server), or ``storage_options=`` as fsspec takes them. They
are never printed: a refusal is one :class:`~mgpu_io.errors.RemoteAccessError` line naming the URL and the
store's error code. fsspec (and s3fs, gcsfs, huggingface_hub for their schemes) is the optional ``[remote]`` extra.

Example:
    >>> import fsspec, mgpu_io, mgpu_io.remote as remote
    >>> with open("fixtures/files/k224_siamese_x2_full.h5", "rb") as f:
    ...     fsspec.filesystem("memory").pipe("/doc/siamese.h5", f.read())
    >>> report = remote.inspect("memory://doc/siamese.h5", inspect_local=mgpu_io.inspect)
    >>> report.depth, report.template, report.file
    (1, 'siamese', 'memory://doc/siamese.h5')
"""

import contextlib
import datetime
import functools
import os
import re
import shutil
import tempfile
from dataclasses import dataclass
from pathlib import Path, PurePosixPath

from mgpu_io import upstream
from mgpu_io.errors import InvalidArgument, MgpuIOError, MissingDependency, NotAModelFile, Param, RemoteAccessError
from mgpu_io.format.kinds import is_url

#: Bytes fetched per request when a remote file's structure is read: HDF5 metadata lies in small pieces between the
#: weights, and larger blocks fetch the weights beside them (measured on tfk115_densenet_x2_full.h5, 900,784 bytes:
#: its structure spans 180,224 bytes in 4 KiB blocks, 327,680 in 16 KiB, 655,360 in 64 KiB).
BLOCK_SIZE = 4 << 10
#: Blocks kept in memory while one file's structure is read (a block is never fetched twice).
MAX_BLOCKS = 1 << 16
#: Most blocks fetched in one request, where libhdf5 reads on from the last ones (a structure laid out in one piece).
MAX_RUN = 64
#: Seconds a store may take to accept a connection, and to answer one request, unless ``storage_options`` says
#: otherwise (s3://, gs://, http(s)://; each other filesystem keeps its own).
NETWORK_TIMEOUT = 30
_URL = re.compile(r"^([a-zA-Z][a-zA-Z0-9+.\-]*)://")


def filesystem(url, storage_options=None):
    """``(fs, path)`` for ``url``: the fsspec filesystem, configured the way that filesystem configures itself, and
    the path within it. A missing fsspec, or a missing package for the scheme, is one line naming the extra."""
    try:
        import fsspec.core
    except ImportError:
        raise MissingDependency(
            problem="A URL input or output needs fsspec, which is not installed",
            expected="the packages of the [remote] extra",
            received=_safe(url),
            fix="pip install 'mgpu-io[remote]'",
        ) from None
    try:
        return fsspec.core.url_to_fs(str(url), **with_timeouts(_scheme(url), storage_options))
    except ImportError as error:
        raise MissingDependency(
            problem=f"The {_scheme(url)}:// filesystem needs a package that is not installed ({_first(error)})",
            expected="the packages of the [remote] extra",
            received=_safe(url),
            fix="pip install 'mgpu-io[remote]'",
        ) from None
    except ValueError as error:
        raise InvalidArgument(
            problem="fsspec knows no filesystem for this URL",
            expected="s3://, gs://, hf://, memory:// or another fsspec scheme",
            received=f"{_safe(url)} ({_first(error)})",
            fix="Check the URL",
        ) from None


def with_timeouts(scheme, storage_options=None):
    """``storage_options`` with :data:`NETWORK_TIMEOUT` for connecting and for each request where the filesystem
    takes one (s3://, gs://, http(s)://) and the options do not set it: a store that stops answering ends the
    request, not the program.

    Example:
        >>> with_timeouts("s3")["config_kwargs"]
        {'connect_timeout': 30, 'read_timeout': 30}
        >>> with_timeouts("s3", {"config_kwargs": {"read_timeout": 5}})["config_kwargs"]
        {'read_timeout': 5, 'connect_timeout': 30}
    """
    options = dict(storage_options or {})
    scheme = scheme.lower()
    if scheme in ("s3", "s3a"):
        config = dict(options.get("config_kwargs") or {})
        config.setdefault("connect_timeout", NETWORK_TIMEOUT)
        config.setdefault("read_timeout", NETWORK_TIMEOUT)
        options["config_kwargs"] = config
    elif scheme in ("gs", "gcs"):
        options.setdefault("timeout", NETWORK_TIMEOUT)
    elif scheme in ("http", "https"):
        client = dict(options.get("client_kwargs") or {})
        if "timeout" not in client:
            import aiohttp

            client["timeout"] = aiohttp.ClientTimeout(sock_connect=NETWORK_TIMEOUT, sock_read=NETWORK_TIMEOUT)
        options["client_kwargs"] = client
    return options


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


#: Per scheme: where its endpoint is set, and where its credentials come from (what a refusal's fix names).
_HINTS = {
    "s3": (" (AWS_ENDPOINT_URL)", " (for S3: AWS_ACCESS_KEY_ID and AWS_SECRET_ACCESS_KEY, ~/.aws, a role)"),
    "gs": (
        " (STORAGE_EMULATOR_HOST for an emulator)",
        " (for GCS: gcloud's application default credentials, GOOGLE_APPLICATION_CREDENTIALS)",
    ),
    "hf": ("", " (for the Hugging Face Hub: HF_TOKEN, or `hf auth login`)"),
}
_HINTS["s3a"], _HINTS["gcs"] = _HINTS["s3"], _HINTS["gs"]
_NO_HINT = ("", "")


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
        if code in _MISSING_BUCKET or upstream.said(upstream.MISSING_BUCKET, error):
            raise RemoteAccessError(
                problem=f"The bucket does not exist while {doing}",
                expected="an existing bucket",
                received=f"{_safe(url)} (NoSuchBucket)",
                fix=f"Check the bucket's name and the endpoint{_HINTS.get(_scheme(url), _NO_HINT)[0]}",
            ) from None
        raise NotAModelFile(
            problem="Cannot read the input: nothing is there",
            parameter="filepath",
            expected="an object at the URL",
            received=_safe(url),
            fix="Check the path (a prefix is listed with `mgpu-io unwrap PREFIX/ OUT`)",
        ) from None
    except (PermissionError, OSError) as error:
        code = _code(error) or type(error).__name__
        code = "HTTP 403 Forbidden" if code == "403" else code  # a HEAD request's refusal has no body, no code
        if isinstance(error, PermissionError) or code in _DENIED or code.startswith("HTTP 403"):
            raise RemoteAccessError(
                problem=f"The store refused the credentials while {doing}",
                expected=(
                    "credentials that may read and write there, from the filesystem's usual configuration"
                    f"{_HINTS.get(_scheme(url), _NO_HINT)[1]}"
                ),
                received=f"{_safe(url)} ({code})",
                fix="Check the credentials this process sees; they are not printed",
            ) from None
        raise RemoteAccessError(
            problem=f"The store failed while {doing}",
            expected="a reachable store",
            received=f"{_safe(url)} ({code}: {_redact(_first(error))})",
            fix="Check the endpoint and the network, then run again",
        ) from None


def _redact(text):
    return re.sub(r"(?i)(key|secret|token|signature|credential)[=:]\S+", r"\1=***", text)


# --- inspect ---------------------------------------------------------------------------------------------------

#: Most bytes fetched from the store while a remote file's structure is read (:data:`MAX_BLOCKS` blocks): a Keras
#: file's structure is a few MiB at most, and a hostile file that makes libhdf5 ask for more is refused.
MAX_STRUCTURE_BYTES = BLOCK_SIZE * MAX_BLOCKS


def inspect(url, scan_weights=False, *, inspect_local, storage_options=None):
    """Inspect a remote Keras file without reading its weights; ``inspect_local`` (:func:`mgpu_io.inspect`, which
    calls this) inspects a file that is read from a whole local copy.

    An HDF5 file is read in the door's sandboxed child (:func:`mgpu_io.format.sandbox.probed`, the child every local
    file is read in): libhdf5 reads the remote file in :data:`BLOCK_SIZE` blocks (:class:`_Mirrored`),
    the local reader inspects it through that handle, and every byte read is mirrored into a sparse local copy for
    what reads the file by its path. The child has the local reading's time and memory limits, network included,
    and fetches at most :data:`MAX_STRUCTURE_BYTES`; so a hostile remote file gives the error a local copy gives,
    within the same limit. ``scan_weights=True`` (NaN/Inf) downloads the whole file, as does a Keras 3
    ``.weights.h5`` file or ``.keras`` archive; a JSON or YAML config is downloaded up to the config readers' limit.

    Returns:
        The :class:`~mgpu_io.format.inspect.InspectReport`, with ``file`` the URL and a ``remote`` finding that says
        how many bytes were fetched from the store, of how many.
    """
    fs, path = filesystem(url, storage_options)
    with access(url, "reading the file's size"):
        size = fs.size(path)
    if size is None:  # a prefix, a bucket: no object
        raise NotAModelFile(
            problem="Cannot read the input: no file is there",
            parameter="filepath",
            expected="an object at the URL",
            received=_safe(url),
            fix="Check the path (a prefix is repaired with `mgpu-io unwrap PREFIX/ OUT`)",
        )
    from mgpu_io.format.door import HDF5, ZIP

    with access(url, "reading the file's head"):
        kind, head = _kind(fs, path, size)
    if kind == HDF5 and not scan_weights:
        report, fetched = _structure_in_child(url, storage_options, size)
        fetched, what = fetched + head, "its structure only, in blocks; the weights were not read"
        if report is None:  # a Keras 3 weights file: read by its own reader, from a whole copy
            report, fetched, what = _inspect_downloaded(url, fs, path, size, size, False, inspect_local)
            fetched, what = size, "the whole file"
    else:
        limit = size if kind in (HDF5, ZIP) else min(size, _CONFIG_LIMIT + 1)
        report, fetched = _inspect_downloaded(url, fs, path, size, limit, bool(scan_weights), inspect_local), limit
        what = "the whole file" if fetched == size else f"its first {fetched} bytes (a config's limit)"
    from mgpu_io.format.inspect import Finding

    report.file = str(url)
    report.findings.append(Finding("remote", f"read from object storage: {fetched} of {size} bytes fetched ({what})"))
    return report


#: What a config reader reads at most (a larger file is refused by its size): the bytes a config is downloaded to.
_CONFIG_LIMIT = 64 << 20


def _kind(fs, path, size):
    """``(kind, bytes fetched)`` of the remote file by the door's one rule (:func:`mgpu_io.format.door.sniff`), asked
    of a sparse local file of the same name and size that holds what that rule reads: the head, and the places of
    an HDF5 signature after a user block."""
    from mgpu_io.format.door import sniff

    with tempfile.TemporaryDirectory(prefix="mgpu-io-remote-") as folder:
        local = Path(folder) / (PurePosixPath(path).name or "input")
        with open(local, "wb") as sink:
            sink.truncate(size)
            fetched = _write_head(fs, path, size, sink)
        return sniff(local), fetched


def _write_head(fs, path, size, sink, head_bytes=4096):
    """Write into ``sink`` (at their offsets) the bytes the door reads to tell a file's kind (the first
    ``head_bytes``, and the ranges :func:`mgpu_io.format.door.sniffed_ranges` names beyond them); the bytes
    fetched."""
    from mgpu_io.format.door import sniffed_ranges

    head = fs.cat_file(path, start=0, end=min(size, head_bytes))
    sink.seek(0)
    sink.write(head)
    fetched = len(head)
    for offset, length in sniffed_ranges(size, head)[1:]:
        if offset + length > len(head):
            found = fs.cat_file(path, start=offset, end=offset + length)
            sink.seek(offset)
            sink.write(found)
            fetched += len(found)
    sink.flush()
    return fetched


def _inspect_downloaded(url, fs, path, size, limit, scan_weights, inspect_local):
    """Inspect the first ``limit`` bytes of the remote file from a local copy (the local reader's own limits apply)."""
    with tempfile.TemporaryDirectory(prefix="mgpu-io-remote-") as folder:
        local = Path(folder) / (PurePosixPath(path).name or "input")
        with access(url, "downloading the file"):
            _download(fs, path, local, limit)
        try:
            return inspect_local(local, scan_weights=scan_weights)
        except MgpuIOError as error:
            raise renamed(error, str(local), _safe(url)) from None


def _download(fs, path, local, limit, chunk=8 << 20):
    """Copy at most ``limit`` bytes of ``path`` to ``local``, whatever the store sends."""
    with fs.open(path, "rb", block_size=chunk, cache_type="none") as source, open(local, "wb") as sink:
        left = limit
        while left > 0:
            data = source.read(min(chunk, left))
            if not data:
                break
            sink.write(data)
            left -= len(data)


def renamed(error, local, url):
    """``error`` with the local copy's path ``local`` named as the ``url`` it stands for (message and fields)."""

    def swap(value):
        if isinstance(value, str):
            return value.replace(local, url)
        if isinstance(value, tuple):
            return tuple(swap(part) for part in value)
        return value

    error.args = tuple(swap(arg) for arg in error.args)
    for field in ("problem", "expected", "received", "fix"):
        if getattr(error, field, None) is not None:
            setattr(error, field, swap(getattr(error, field)))
    return error


def _structure_in_child(url, storage_options, size):
    """``(report, bytes fetched)`` of the remote HDF5 file, read in the door's child (time, memory and bytes
    bounded); ``(None, 0)`` for a Keras 3 weights file, which its own reader reads from a whole copy."""
    from mgpu_io.format.sandbox import probe

    try:
        return probe.probed(_safe(url), lambda: _structure_report(url, storage_options, size))
    except NotAModelFile as error:
        if str(error) == str(probe.hang_error(_safe(url))):  # the child was ended at the limit
            raise NotAModelFile(
                problem=f"Reading the remote file's structure did not finish within {probe.TIMEOUT:g} s",
                parameter="filepath",
                expected="a store that answers and a file that libhdf5 reads in well under a second",
                received=_safe(url),
                fix=(
                    "The store stopped answering, or the file's metadata is damaged (libhdf5 loops on some corrupt "
                    "files); check the endpoint, or restore the file from its source"
                ),
            ) from None
        raise


def _structure_report(url, storage_options, size):  # pragma: no cover - runs in the probe's child
    import h5py

    from mgpu_io.format.door import sharing
    from mgpu_io.format.inspect import inspect as inspect_hdf5
    from mgpu_io.format.kinds import KERAS3_WEIGHTS

    fs, path = filesystem(url, storage_options)  # this process's own client: fsspec's clients are not fork-safe
    folder = tempfile.mkdtemp(prefix="mgpu-io-remote-")
    try:
        mirror = Path(folder) / (PurePosixPath(path).name or "input.h5")
        with open(mirror, "wb") as sink:
            sink.truncate(size)  # sparse: what is never read costs nothing
        with open(mirror, "r+b") as sink:
            handle = _Mirrored(fs, path, sink, size)
            try:
                with access(url, "reading the file's structure"):
                    _write_head(fs, path, size, sink)  # what the door reads of the mirror, to know it for HDF5
                    try:
                        h5 = h5py.File(handle, "r")
                    except (OSError, RuntimeError, ValueError):
                        h5 = None  # the local reader opens the mirror: the bytes libhdf5 read, its error
                    try:
                        with sharing(mirror, h5) if h5 is not None else contextlib.nullcontext():
                            report = inspect_hdf5(mirror, scan_weights=False)
                    finally:
                        if h5 is not None:
                            h5.close()
            except MgpuIOError as error:
                handle.check(url)  # the store's failure or the byte budget, not what libhdf5 made of it
                if isinstance(error, NotAModelFile) and error.kind == KERAS3_WEIGHTS:
                    return None, 0
                raise renamed(error, str(mirror), _safe(url)) from None
            handle.check(url)
            return report, handle.fetched()
    finally:
        shutil.rmtree(folder, ignore_errors=True)


class _OverBudget(OSError):
    """More than :data:`MAX_STRUCTURE_BYTES` were asked of the store."""


class _Mirrored:
    """A read-only file over the remote file ``path`` for libhdf5: it fetches :data:`BLOCK_SIZE` blocks, each once,
    and reads ahead where libhdf5 reads on (a run of blocks that doubles while each miss follows the last run, up to
    :data:`MAX_RUN`: a structure laid out in one piece costs a few requests, not one per block); it writes every
    block fetched into ``sink`` at its offset (a sparse local mirror, for what reads the file by its path), counts
    the bytes fetched and stops at :data:`MAX_STRUCTURE_BYTES`. A failure of the store is kept, so that it is
    reported as the store's, not as what libhdf5 made of it."""

    def __init__(self, fs, path, sink, size):
        self._fs, self._path, self._sink, self._size = fs, path, sink, size
        self._blocks: dict = {}
        self._position, self._run, self._next, self._fetched = 0, 1, None, 0
        self.failure = None

    def fetched(self):
        return self._fetched

    def _fetch(self, index):
        self._run = min(self._run * 2, MAX_RUN) if index == self._next else 1
        count = next((k for k in range(1, self._run) if index + k in self._blocks), self._run)  # each block once
        start = index * BLOCK_SIZE
        end = min(self._size, start + count * BLOCK_SIZE)
        if self._fetched + end - start > MAX_STRUCTURE_BYTES:
            self.failure = self.failure or _OverBudget()
            raise OSError("over the byte budget")
        try:
            data = self._fs.cat_file(self._path, start=start, end=end)
        except Exception as error:  # kept, and raised to libhdf5 as a read that failed
            self.failure = self.failure or error
            raise OSError("the store's read failed") from None
        data = bytes(data[: end - start])
        self._fetched += len(data)
        self._sink.seek(start)
        self._sink.write(data)
        self._sink.flush()  # read by its path, by another handle
        for offset in range(0, len(data), BLOCK_SIZE):
            self._blocks[index + offset // BLOCK_SIZE] = data[offset : offset + BLOCK_SIZE]
        self._next = index + count

    def read(self, size=-1):
        start = self._position
        end = self._size if size is None or size < 0 else min(self._size, start + size)
        parts = []
        for index in range(start // BLOCK_SIZE, (end - 1) // BLOCK_SIZE + 1 if end > start else start // BLOCK_SIZE):
            if index not in self._blocks:
                self._fetch(index)
            block = self._blocks[index]
            parts.append(block[max(0, start - index * BLOCK_SIZE) : end - index * BLOCK_SIZE])
        data = b"".join(parts)
        self._position = start + len(data)
        return data

    def readinto(self, buffer):
        data = self.read(len(buffer))
        buffer[: len(data)] = data
        return len(data)

    def seek(self, offset, whence=0):
        self._position = {0: 0, 1: self._position, 2: self._size}[whence] + offset
        return self._position

    def tell(self):
        return self._position

    def seekable(self):
        return True

    def readable(self):
        return True

    def check(self, url):
        """Raise what stopped the reading, if the store or the byte budget did."""
        if isinstance(self.failure, _OverBudget):
            raise NotAModelFile(
                problem=f"The remote file's structure asks for more than {MAX_STRUCTURE_BYTES} bytes",
                parameter="filepath",
                expected="the few MiB of a Keras file's structure",
                received=_safe(url),
                fix=(
                    "The file is damaged or hostile; copy it locally to inspect it whole (",
                    Param("scan_weights", True),
                    " downloads it)",
                ),
            )
        if self.failure is not None:
            failure = self.failure
            if not isinstance(failure, OSError):  # a client's own exception type: the store failed all the same
                failure = OSError(f"{type(failure).__name__}: {_first(failure)}")
            with access(url, "reading the file's structure"):
                raise failure


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


def _mtime_ns(fs, path):
    """The modification time of ``path`` on ``fs`` in nanoseconds since the epoch (:func:`_info_mtime_ns`), or
    ``None`` when it is not there."""
    try:
        info = fs.info(path)
    except (FileNotFoundError, OSError):
        return None
    return _info_mtime_ns(info)


def _info_mtime_ns(info):
    """The modification time in an fsspec ``info`` in nanoseconds since the epoch, as fsspec gives it (a
    ``datetime``, to its microseconds; a number of seconds; an ISO 8601 text), ``0`` for an object that records
    none."""
    for key in ("LastModified", "mtime", "last_modified", "updated", "created"):
        value = info.get(key)
        if isinstance(value, str):
            with contextlib.suppress(ValueError):
                value = datetime.datetime.fromisoformat(value.replace("Z", "+00:00"))
        if isinstance(value, datetime.datetime):
            return round(value.timestamp() * 1_000_000) * 1000
        if isinstance(value, (int, float)) and not isinstance(value, bool):
            return round(value * 1_000_000_000)
    return 0 if info else None


def unwrap(source, output, *, repair, storage_options=None, progress=None, overwrite=False, jobs=None, **options):
    """Repair a remote file, or every file under a remote prefix, into ``output`` (a local path or a URL).

    One file: downloaded to a temporary folder, repaired there by ``repair`` (:func:`mgpu_io.unwrap`, every output format,
    deployable ones included), and uploaded whole (an object store's upload is all or nothing). A prefix (a URL
    ending in ``/``, or one that names no object): each file under it in turn, into the same place under ``output``,
    with the output's name as the format says (``format=``: ``.onnx``, ``.tflite``, a SavedModel folder; else the
    file's own name). An output newer than its input is ``done before``: a stopped run resumes. With ``jobs``, a
    prefix's transfers overlap (:func:`_transfers`): ``jobs`` threads download and upload files while
    this process repairs one after another.

    Args:
        source: a URL (``s3://bucket/run1/model.h5`` or ``s3://bucket/run1/``); a local path is read as it is.
        output: a local path or URL.
        repair: what repairs a local copy: :func:`mgpu_io.unwrap` (which calls this with itself).
        storage_options: passed to fsspec for both (else each filesystem configures itself).
        progress: for a prefix, called with ``(done, total, FileResult)`` after each file.
        overwrite: replace existing outputs.
        jobs: for a prefix, the files transferred at once (downloads ahead of the repair, uploads behind it); none:
            one file after another, each downloaded, repaired and uploaded in turn.
        **options: :func:`mgpu_io.unwrap`'s (``format``, ``allow_plain``, ``config``, ...).

    Returns:
        An :class:`~mgpu_io.format.unwrap_report.UnwrapReport` for a file, a :class:`~mgpu_io.format.batch.BatchReport` for a
        prefix.
    """
    src, out = _place(source, storage_options), _place(output, storage_options)
    if not src.remote and not out.remote:
        return repair(source, output, overwrite=overwrite, progress=progress, **options)
    if src.remote:
        with access(source, "listing the input"):
            is_file = src.fs.isfile(src.path) and not str(source).endswith("/")
            if not is_file and not src.fs.exists(src.path) and not _bucket_exists(src):
                src.fs.ls(src.path)  # the store's own error: a missing bucket, refused credentials
    else:
        is_file = Path(source).is_file()
    if is_file:
        if jobs is not None:
            from mgpu_io.errors import Param, does_not_apply

            raise does_not_apply(
                Param("jobs"),
                "sets the files a prefix transfers at once",
                "a prefix source (a URL ending in /)",
                Param("jobs", jobs, text=f"jobs={jobs} with source={_safe(source)}, one file"),
            )
        return _unwrap_one(src, out, repair, overwrite=overwrite, **options)
    if jobs is not None and (isinstance(jobs, bool) or not isinstance(jobs, int) or jobs < 1):
        from mgpu_io.errors import Param

        raise InvalidArgument(
            problem=(Param("jobs"), " is the number of files a prefix transfers at once"),
            parameter="jobs",
            expected="a whole number of 1 or more",
            received=Param("jobs", jobs, text=f"jobs={jobs!r}"),
            fix=("Pass ", Param("jobs", 4), ", or leave it out for one file after another"),
        )
    return _unwrap_prefix(src, out, repair, progress=progress, overwrite=overwrite, jobs=jobs, **options)


def _bucket_exists(place):
    bucket = place.path.split("/", 1)[0]
    try:
        place.fs.ls(bucket)
    except FileNotFoundError:
        return False
    return True


def _unwrap_one(src, out, repair, *, overwrite=False, **options):
    with tempfile.TemporaryDirectory(prefix="mgpu-io-remote-") as folder:
        local_in = _fetch(src, Path(folder) / "in")
        if not out.remote:
            report = repair(local_in, out.text, overwrite=overwrite, **options)
            report.source = src.text
            return report
        if not overwrite:
            with access(out.text, "checking the output"):
                if out.fs.exists(out.path):
                    from mgpu_io.errors import OutputError

                    raise OutputError(
                        problem="The output exists",
                        parameter="output",
                        expected=("a new path, or ", Param("overwrite", True)),
                        received=f"output={_safe(out.text)}",
                        fix=("Pass ", Param("overwrite", True), " to replace it"),
                    )
        local_out = Path(folder) / "out" / PurePosixPath(out.path).name
        local_out.parent.mkdir()
        report = repair(local_in, local_out, **options)
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


#: Bytes of each remote file read for the listing: the 4,096 characters a JSON model config is recognised by, in
#: UTF-8 at most 4 bytes each (:func:`mgpu_io.format.batch.model_files`).
_LISTING_HEAD = 16 << 10


def _listing(src):
    """``(relative name, full path)`` of the files under the prefix that may hold a legacy Keras model, chosen by
    their content as a local folder's are (:func:`mgpu_io.format.batch.model_files`: HDF5, also after a user block,
    or JSON that looks like a model config), whatever their names; sorted (:func:`_listed`)."""
    return _listed(src)[0]


def _listed(src):
    """:func:`_listing`'s files, and what the store said of each object it listed (``{path: info}``; empty for a
    local folder). A remote prefix's files are asked of sparse local stand-ins of the same names and sizes that hold
    the bytes that rule reads (:func:`_write_head`), so that a local folder and a bucket holding the same tree
    yield the same files."""
    from mgpu_io.format.batch import model_files

    if not src.remote:
        base = Path(src.text)
        return [(p.relative_to(base).as_posix(), str(p)) for p in model_files(base)], {}
    with access(src.text, "listing the input"):
        found = src.fs.find(src.path.rstrip("/"), detail=True)
    base = src.path.rstrip("/") + "/"
    names = {p[len(base) :]: p for p, info in found.items() if p.startswith(base) and info.get("type") != "directory"}
    with tempfile.TemporaryDirectory(prefix="mgpu-io-remote-") as folder:
        for name, path in names.items():
            local = Path(folder, *PurePosixPath(name).parts)
            local.parent.mkdir(parents=True, exist_ok=True)
            with access(_join(src.text, name), "reading the input's first bytes"), open(local, "wb") as sink:
                size = found[path].get("size") or 0
                sink.truncate(size)
                if size:
                    _write_head(src.fs, path, size, sink, _LISTING_HEAD)
        chosen = [p.relative_to(folder).as_posix() for p in model_files(folder)]
    return [(name, names[name]) for name in chosen], found


def _unwrap_prefix(
    src, out, repair, *, progress=None, overwrite=False, format=None, allow_plain=False, jobs=None, **options
):
    """A prefix, file by file, on the one folder engine (:func:`mgpu_io.format.batch.run_tree`): its lister
    (:func:`_listed`), its modification times for the one ``done before`` rule, and its transfers around each
    local repair (:func:`_transfers`) make the prefix's :class:`~mgpu_io.format.batch.Storage`."""
    from mgpu_io.format.batch import Storage, TreeJob, local_mtime_ns, run_tree
    from mgpu_io.format.door import EXPORT_FORMATS
    from mgpu_io.format.options import UnwrapOptions

    listed = {}

    def files():
        found, infos = _listed(src)
        if not found:
            raise NotAModelFile(
                problem="The prefix holds no Keras file",
                parameter="filepath",
                expected="legacy Keras HDF5 files or JSON model configs under it",
                received=_safe(src.text),
                fix="Check the prefix",
            )
        listed.update(infos)
        return [(PurePosixPath(name), path) for name, path in found]

    def source_mtime(path):  # the listing's own answer where it has one: no request per file
        info = listed.get(str(path))
        return _info_mtime_ns(info) if info is not None else _stamp(src, path)

    base = out.path.rstrip("/") if out.remote else None

    def shown(target):
        return _join(out.text, str(target)[len(base) + 1 :]) if base is not None else str(target)

    def output_for(folder, relative):
        return folder / (relative if format is None else relative.with_suffix(EXPORT_FORMATS[format]))

    storage = Storage(
        source=src.text,
        output=out.text,
        files=files,
        root=PurePosixPath(out.path) if out.remote else Path(out.text),
        source_mtime=source_mtime if src.remote else local_mtime_ns,
        output_mtime=_output_mtimes(out) if not overwrite else local_mtime_ns,
        shown=shown,
        run=_transfers(src, out, jobs, shown),
    )
    job = TreeJob(output_for=output_for, work=functools.partial(_repair, (repair, format, allow_plain, options)))
    return run_tree(src.text, out.text, UnwrapOptions(overwrite=overwrite), job, progress=progress, storage=storage)


def _output_mtimes(out):
    """The outputs' modification times for :func:`mgpu_io.format.batch.completed`: a remote output prefix is listed
    once (not asked once per file); a local one, or one that cannot be listed, is asked per output (:func:`_stamp`).
    An output that is a folder (a SavedModel) is asked on its own."""
    if not out.remote:
        return functools.partial(_stamp, out)
    try:
        found = out.fs.find(out.path.rstrip("/"), detail=True)
    except OSError:  # not there yet, or not listable: each output asked on its own
        return functools.partial(_stamp, out)
    folders = {str(parent) for name in found for parent in PurePosixPath(name).parents}

    def mtime(path):
        path = str(path)
        info = found.get(path)
        if info is not None and info.get("type") != "directory":
            return _info_mtime_ns(info)
        return _stamp(out, path) if path in folders or info is not None else None

    return mtime


def _transfers(src, out, jobs, shown):
    """The prefix's :class:`~mgpu_io.format.batch.Storage` ``run``: each file downloaded into its own temporary
    folder, repaired there by the job's ``work`` in this process (a repair's own children and Keras stay here), and
    its output uploaded whole (one upload per object; a local output is written in place by the repair). With
    ``jobs``, the transfers overlap: ``jobs`` threads download the next files (at most ``jobs`` ahead of the
    repair) and upload the outputs behind it while this thread repairs one after another, in the listing's order;
    without, one file after another. When the run is stopped, the uploads under way are let finish and counted, the
    others are not started."""
    from concurrent.futures import FIRST_COMPLETED, Future, ThreadPoolExecutor, wait

    def run(tasks, finished, work):
        folders = []  # every temporary folder made, removed at the end whatever happened
        pool = ThreadPoolExecutor(max_workers=jobs, thread_name_prefix="mgpu-io-transfer") if jobs else None

        def submit(function, *args):  # in a thread with jobs, else now
            if pool is not None:
                return pool.submit(function, *args)
            future = Future()
            try:
                future.set_result(function(*args))
            except BaseException as error:
                future.set_exception(error)
            return future

        def fetched(path):  # the local copy, in its own folder
            folder = Path(tempfile.mkdtemp(prefix="mgpu-io-remote-"))
            folders.append(folder)
            return folder, _fetch(_Place(src.text, src.fs, path) if src.remote else _Place(path), folder / "in")

        def stored(at, local_out, target, result, folder):  # the upload, then the folder's removal
            try:
                _store(local_out, _Place(out.text, out.fs, target))
            finally:
                shutil.rmtree(folder, ignore_errors=True)
            return at, result

        downloads, uploads = {}, set()

        def harvest(block):  # the uploads that finished: their results, in this thread
            if uploads:
                done, _ = wait(uploads, timeout=None if block else 0, return_when=FIRST_COMPLETED)
                for future in done:
                    uploads.discard(future)
                    finished(*future.result())

        try:
            for at, (_, target) in enumerate(tasks):
                for ahead in range(at, min(len(tasks), at + (jobs or 0) + 1)):  # keep the next files coming
                    if ahead not in downloads:
                        downloads[ahead] = submit(fetched, tasks[ahead][0])
                folder, local_in = downloads.pop(at).result()
                local_out = folder / "out" / PurePosixPath(target).name if out.remote else Path(target)
                result = work(local_in, local_out)
                if result.output is not None:
                    result.output = shown(target)
                if result.output is not None and out.remote:
                    while len(uploads) >= (jobs or 1):  # no more outputs waiting than threads to send them
                        harvest(block=True)
                    uploads.add(submit(stored, at, local_out, target, result, folder))
                else:
                    shutil.rmtree(folder, ignore_errors=True)
                    finished(at, result)
                harvest(block=False)
            while uploads:
                harvest(block=True)
        except BaseException:
            if pool is not None:
                pool.shutdown(wait=True, cancel_futures=True)  # uploads under way finish: whole, and counted
            for future in uploads:
                if future.done() and not future.cancelled() and future.exception() is None:
                    with contextlib.suppress(Exception):
                        finished(*future.result())
            raise
        finally:
            if pool is not None:
                pool.shutdown(wait=True, cancel_futures=True)
            for folder in folders:
                shutil.rmtree(folder, ignore_errors=True)

    return run


def _repair(how, local_in, local_out):
    """Repair one local copy of a prefix's file into ``local_out``: its :class:`~mgpu_io.format.batch.FileResult`
    (with an ``output`` where one was written). ``how``: ``(repair, format, allow_plain, options)``, the call's. The
    file is opened once: with ``allow_plain`` a plain model is repaired as one, without it refused by its one plan.
    Without ``format``, the output keeps the input's name, as a local folder's does, whatever that name says: a
    model saved as ``config_model_weights`` is written under a name of its kind (:func:`_named_by_kind`) and then
    renamed."""
    from mgpu_io.errors import NotAWrapper
    from mgpu_io.format.batch import CLEAN, FAILED, PLAIN_REASON, REPAIRED, SKIPPED, FileResult

    repair, format, allow_plain, options = how
    name = str(local_in)
    local_out.parent.mkdir(parents=True, exist_ok=True)
    written = local_out if format is not None else _named_by_kind(local_in, local_out)
    try:
        report = repair(local_in, written, overwrite=True, format=format, allow_plain=allow_plain, **options)
    except NotAWrapper:
        return FileResult(name, SKIPPED, reason=PLAIN_REASON)
    except RemoteAccessError:
        raise
    except MgpuIOError as error:
        return FileResult(name, FAILED, reason=error.text())
    finally:
        if written != local_out and os.path.lexists(written):
            os.replace(written, local_out)  # the same folder: whole, as the repair wrote it
    status = REPAIRED if report.was_wrapper else CLEAN
    return FileResult(name, status, output=str(local_out), depth=report.depth)


def _named_by_kind(local_in, local_out):
    """``local_out``, or a hidden name beside it whose extension says the input's kind (``.json`` for a JSON config,
    else ``.h5``) where its own name does not say it."""
    from mgpu_io.format.door import HDF5_SUFFIXES, JSON_CONFIG, JSON_SUFFIX, sniff

    suffix = JSON_SUFFIX if sniff(local_in) == JSON_CONFIG else ".h5"
    if local_out.suffix.lower() in ((JSON_SUFFIX,) if suffix == JSON_SUFFIX else HDF5_SUFFIXES):
        return local_out
    return local_out.with_name(f".{local_out.name}.mgpu-io{suffix}")


def _join(base, name):
    return base.rstrip("/") + "/" + name


def done_before(source, output, *, storage_options=None):
    """Whether ``output`` (a URL or a local path) is what an earlier run completed from ``source`` (each a URL or a
    local path): the status ``done before`` of a folder's and a prefix's report, by the one rule of every folder run
    (:func:`mgpu_io.format.batch.completed`: it exists, an upload being whole or absent, and its modification time
    is no older than the source's, in nanoseconds where the filesystem gives them). For recipes that map
    :func:`mgpu_io.unwrap` over a :func:`listing` themselves (docs/scale.md).

    Example:
        >>> done_before("fixtures/files/k224_siamese_x2_full.h5", "memory://nothing/here.h5")
        False
    """
    src, out = _place(source, storage_options), _place(output, storage_options)
    return _done(src, src.path if src.remote else src.text, out, out.path if out.remote else out.text)


def listing(prefix, *, storage_options=None):
    """The names of the files under ``prefix`` (a URL or a local folder) that may hold a legacy Keras model, chosen
    by their content as a folder's repair chooses them (HDF5, or JSON that looks like a model config; whatever
    their names), relative to it and sorted: what a recipe maps over.

    Example:
        >>> listing("fixtures/files")[:2]
        ['k122_kuza55_conv_x2_full.h5', 'k122_kuza55_conv_x2_weights.h5']
    """
    return [name for name, _ in _listing(_place(prefix, storage_options))]


def _stamp(place, path):
    """The modification time of ``path`` in nanoseconds: ``os.stat``'s ``st_mtime_ns`` for a local path
    (:func:`mgpu_io.format.batch.local_mtime_ns`), what fsspec gives for a remote one (:func:`_mtime_ns`); ``None``
    when it is not there."""
    if place.remote:
        return _mtime_ns(place.fs, str(path))
    from mgpu_io.format.batch import local_mtime_ns

    return local_mtime_ns(path)


def _done(src, path, out, out_path):
    """:func:`mgpu_io.format.batch.completed`, the one rule, for a source and an output each local or remote: each
    side's modification time read where it lies (:func:`_stamp`)."""
    from mgpu_io.format.batch import completed

    return completed(
        path, out_path, source_mtime=functools.partial(_stamp, src), output_mtime=functools.partial(_stamp, out)
    )
