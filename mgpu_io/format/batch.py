"""Repair every wrapper file under a folder, in parallel worker processes.

A folder of epoch checkpoints is repaired file by file into a mirror of the folder: wrappers are unwrapped, plain
models are skipped (or, with ``allow_plain``, written normalised too, so that everything in the output loads in
today's Keras), and a file that cannot be repaired is reported with its reason while the others go on. Each output
is written atomically, so an interrupted run leaves only complete files.
"""

import collections
import contextlib
import functools
import mmap
import multiprocessing
import os
import shutil
import struct
import time
from dataclasses import asdict, dataclass, field
from multiprocessing.connection import wait
from pathlib import Path
from typing import Any, Callable, Optional

from mgpu_io.errors import (
    InvalidArgument,
    LimitReached,
    MgpuIOError,
    NotAModelFile,
    OutputError,
    Param,
    Text,
)
from mgpu_io.format import limits
from mgpu_io.format.options import UnwrapOptions
from mgpu_io.format.sandbox import fork_server, inside, probe, programs
from mgpu_io.format.text import columns, first_sentence, plural, printable

REPAIRED, CLEAN, SKIPPED, DONE, FAILED = "repaired", "already clean", "skipped", "done before", "failed"
STATUSES = (REPAIRED, CLEAN, SKIPPED, DONE, FAILED)
#: Why a file is ``done before``.
DONE_REASON = Text(
    "the output exists, newer than its input: an earlier run completed it (", Param("overwrite", True), " redoes it)"
)
#: Why a plain model is ``skipped``.
PLAIN_REASON = Text("a plain model, not a wrapper: pass ", Param("allow_plain", True), " to write it normalised too")


@dataclass
class FileResult:
    """What happened to one file: ``status`` is one of :data:`STATUSES`."""

    path: str
    status: str
    output: Optional[str] = None
    depth: int = 0
    reason: Optional[str] = None


@dataclass
class BatchReport:
    """The summary of :func:`unwrap_tree`; ``ok`` when no file failed."""

    source: str
    output: str
    dry_run: bool = False
    files: list[FileResult] = field(default_factory=list)

    @property
    def ok(self):
        return not any(f.status == FAILED for f in self.files)

    def counts(self):
        counts = {status: sum(f.status == status for f in self.files) for status in STATUSES}
        return {status: n for status, n in counts.items() if n or status in (REPAIRED, FAILED)}

    def to_dict(self):
        return dict(asdict(self), counts=self.counts(), ok=self.ok)

    def __str__(self):
        return self.describe()

    def describe(self, verbose=False):
        """The summary, as ``mgpu-io unwrap DIR OUT`` prints it: every file up to :data:`ALL_ROWS_UP_TO` files (or
        with ``verbose``), else the failures only."""
        every = verbose or len(self.files) <= ALL_ROWS_UP_TO
        shown = self.files if every else [r for r in self.files if r.status == FAILED]
        title = f"{printable(self.source)} -> {printable(self.output)}"
        if not every:
            title += Text(
                f": the {plural(len(shown), 'failure')} of {len(self.files)} files (",
                Param("verbose", True),
                " lists every file)",
            )
        lines = [title] if shown else []
        if shown:
            lines += columns(("file", "status", "detail"), [(r.path, r.status, _detail(r)) for r in shown])
        prefix = "Would write: " if self.dry_run else ""
        lines.append(prefix + ", ".join(f"{count} {status}" for status, count in self.counts().items()))
        return Text("\n").join(lines)


#: A folder report lists every file up to this many; above it, only the failures (all with ``verbose``).
ALL_ROWS_UP_TO = 30


def _detail(result):
    if result.status == FAILED:  # the first sentence: what is wrong (the whole message is in to_dict())
        return first_sentence(result.reason or "")
    if result.status == SKIPPED:
        return result.reason or ""
    if result.status == DONE:
        return "an earlier run wrote it"
    return f"{plural(result.depth, 'wrapper level')} removed" if result.depth else ""


def model_files(folder):
    """Files under ``folder`` that may hold a legacy Keras model, by their content (the door's
    :func:`~mgpu_io.format.door.may_hold_a_model`: HDF5, or JSON that looks like a model config, double-encoded or
    not), sorted; whatever their names (course projects saved `config_model_weights` beside `model_weights`)."""
    from mgpu_io.format.door import may_hold_a_model

    return [
        path
        for path in sorted(Path(folder).rglob("*"))
        if path.is_file() and not path.is_symlink() and may_hold_a_model(path)
    ]


def local_mtime_ns(path):
    """The modification time of the local ``path`` in nanoseconds (``os.stat``'s ``st_mtime_ns``); ``None`` when
    nothing is there."""
    try:
        return os.stat(path).st_mtime_ns
    except OSError:
        return None


def completed(source, output, *, source_mtime=local_mtime_ns, output_mtime=local_mtime_ns):
    """Whether ``output`` is what an earlier run completed from ``source``: it exists (a file, or a SavedModel
    folder; outputs are written whole or not at all, so one that exists is complete) and is newer than ``source``.
    The one rule of every folder run (:func:`run_tree`), whatever the storage: ``source_mtime`` and ``output_mtime``
    give each side's modification time in nanoseconds, ``None`` where nothing is there (local files by default;
    :func:`mgpu_io.remote.done_before` passes a bucket's).

    Example:
        >>> completed("in.h5", "out.h5", source_mtime=lambda path: 10, output_mtime=lambda path: 10)
        True
        >>> completed("in.h5", "out.h5", source_mtime=lambda path: 10, output_mtime=lambda path: None)
        False
    """
    written = output_mtime(output)
    if written is None:
        return False
    read = source_mtime(source)
    return read is not None and written >= read


@dataclass(frozen=True)
class TreeJob:
    """What a folder run (:func:`run_tree`) does with each of its files.

    Attributes:
        output_for: the output of the input at a relative path, under the output folder.
        work: ``(source, output) -> FileResult``: one file, in a worker process (forked: it need not pickle) or here.
        before: ``(source, output, done_before) -> FileResult or None``: a file settled without its work (``None``:
            the work runs); by default one an earlier run completed is ``done before``.
        here: run every file in this process, one after another (a runtime that does not survive a fork), not in
            supervised workers.
    """

    output_for: Callable
    work: Callable
    before: Optional[Callable] = None
    here: bool = False


@dataclass(frozen=True)
class Storage:
    """Where a folder run (:func:`run_tree`) reads and writes: a local folder (:func:`local_storage`, the default) or
    a bucket prefix (:mod:`mgpu_io.remote`), under the one engine.

    Attributes:
        source, output: the input and the output as the report names them.
        files: ``() -> [(relative PurePath, input)]``: the lister, the model files by content, sorted; it raises
            when there is none.
        root: the output folder that :class:`TreeJob`'s ``output_for`` places each output under.
        source_mtime, output_mtime: each side's modification time for :func:`completed`.
        shown: ``output -> text``: an output as the report names it.
        run: ``(tasks, finished, work)``: does each ``(input, output)`` task with ``work`` and calls
            ``finished(position, FileResult)`` (a bucket's transfers around each local repair); ``None``: here or in
            supervised workers, as the :class:`TreeJob` says.
    """

    source: str
    output: str
    files: Callable
    root: Any
    source_mtime: Callable = local_mtime_ns
    output_mtime: Callable = local_mtime_ns
    shown: Callable = str
    run: Optional[Callable] = None


def local_storage(source, output):
    """The :class:`Storage` of a local folder ``source`` written into the local folder ``output``: checked (it
    exists; the output is neither it nor inside it), listed by :func:`model_files`."""
    source, output = Path(source).resolve(), Path(output).resolve()
    if not source.is_dir():
        raise InvalidArgument(
            problem="The input folder does not exist",
            parameter="source",
            expected="a folder of model files",
            received=str(source),
            fix="Check the path",
        )
    if output == source or source in output.parents:
        raise OutputError(
            problem="The output folder is the input folder or inside it",
            parameter="output",
            expected="a folder elsewhere, so that inputs are never overwritten or read back",
            received=f"input={source}, output={output}",
            fix="Choose another output folder",
        )

    def files():
        found = model_files(source)
        if not found:
            count = sum(1 for path in source.rglob("*") if path.is_file())
            raise NotAModelFile(
                problem="The folder holds no Keras file",
                parameter="source",
                expected="legacy Keras HDF5 files or JSON model configs under it",
                received=f"{source} ({plural(count, 'file')}, none of them HDF5 or a model config)",
                fix="Check the folder; `mgpu-io inspect FILE` says what a file is",
            )
        return [(path.relative_to(source), path) for path in found]

    return Storage(source=str(source), output=str(output), files=files, root=output)


def run_tree(source, output, options, job, *, jobs=None, progress=None, storage=None):
    """The one folder engine: every model file under ``source`` (by content: :func:`model_files`), each done by
    ``job`` into the same place under ``output``, in ``jobs`` supervised workers (:func:`_run`), with one report.
    A file whose output an earlier run completed (:func:`completed`) is ``done before``, unless ``overwrite``; a
    stopped run (Ctrl-C, SIGTERM) raises with the report of what was done attached (``.report``).

    ``storage``: where the files lie, when not in the local folders ``source`` and ``output``
    (:func:`local_storage`): a bucket prefix (:mod:`mgpu_io.remote`) brings its lister, its modification times and
    its transfers around each file's ``job``; the loop, the rule, the progress and the report are this one.

    Used by :func:`unwrap_tree` (legacy repairs), :func:`mgpu_io.keras.exports.tree.export_tree` (deployable
    artifacts) and :func:`mgpu_io.remote.unwrap` (a bucket prefix)."""
    storage = storage or local_storage(source, output)
    files = storage.files()
    report = BatchReport(source=storage.source, output=storage.output, dry_run=options.dry_run)
    results = {}

    def finished(index, result):
        result.path = str(files[index][0])
        results[index] = result
        if progress is not None:
            progress(len(results), len(files), result)

    todo = []
    for index, (relative, path) in enumerate(files):
        target = job.output_for(storage.root, relative)
        done_before = not options.overwrite and completed(
            path, target, source_mtime=storage.source_mtime, output_mtime=storage.output_mtime
        )
        settled = (job.before or _done_before)(path, target, done_before)
        if settled is not None:
            if settled.output is not None:
                settled.output = storage.shown(target)
            finished(index, settled)
        else:
            todo.append((index, (str(path), str(target))))
    tasks = [task for _, task in todo]

    def finished_at(at, result):
        finished(todo[at][0], result)

    try:
        if storage.run is not None:
            storage.run(tasks, finished_at, job.work)
        elif job.here:
            for at, task in enumerate(tasks):
                finished_at(at, job.work(*task))
        elif tasks:
            _run(tasks, max(1, min(jobs or os.cpu_count() or 1, len(tasks))), finished_at, job.work)
    except BaseException as stop:  # Ctrl-C, SIGTERM, the CPU-time limit: the report says what was done before it
        report.files = [
            results.get(index) or FileResult(path=str(relative), status=FAILED, reason=STOPPED)
            for index, (relative, _) in enumerate(files)
        ]
        stop.report = report
        raise
    report.files = [results[index] for index in range(len(files))]
    return report


def _done_before(source, output, done_before):
    return FileResult(path=str(source), status=DONE, output=str(output), reason=DONE_REASON) if done_before else None


def unwrap_tree(source, output, options: UnwrapOptions, *, jobs=None, progress=None):
    """Repair every model file under ``source`` into the same place under ``output`` (:func:`run_tree`).

    Args:
        source: the folder to read (never modified).
        output: the folder to write; created if missing; may not be ``source`` or lie inside it.
        options: the :class:`~mgpu_io.format.options.UnwrapOptions` that :func:`mgpu_io.unwrap` built and checked,
            passed down unchanged. For a folder: ``overwrite``
            replaces existing output files; ``dry_run`` plans every file and reports, writes nothing, creates no
            folder; ``allow_plain`` also writes plain (non-wrapper) models, normalised (status ``already clean``),
            which are ``skipped`` without it; ``config`` is the architecture (JSON or full ``.h5``) of the
            folder's weights-only files, used for those only.
        jobs: worker processes (default: the machine's cores).
        progress: called with ``(done, total, FileResult)`` after each file.

    Returns:
        A :class:`BatchReport`.

    Example:
        >>> import tempfile
        >>> report = unwrap_tree("fixtures/files", tempfile.mkdtemp(), UnwrapOptions(), jobs=2)
        >>> report.counts()["repaired"] > 40, report.files[0].path
        (True, 'k122_kuza55_conv_x2_full.h5')
    """
    if options.config is not None:
        options = options.replace(config=str(options.config))
    job = TreeJob(output_for=lambda folder, relative: folder / relative, work=functools.partial(_repair, options))
    return run_tree(source, output, options, job, jobs=jobs, progress=progress)


def _repair(options, source, output):
    return _repair_one(source, output, options)


#: The reason of a file that a stopped run (Ctrl-C, SIGTERM) did not finish (its output was written whole, or not).
STOPPED = "The run was stopped before this file was done. Its output is whole or absent; run again to repair it."


def _run(tasks, workers, finished, work):
    """Repair ``tasks`` in ``workers`` supervised processes, calling ``finished(index, FileResult)`` for each.
    ``work(source, output)`` does one task (:class:`TreeJob`'s ``work``).

    Each worker repairs file after file in itself (a fork per file cost more than a third of a small file's repair),
    holds the next file before it is done with one (:data:`_HELD`), and shows on its :class:`_Board` which file it
    is on, when it began reading it and when its structure is read. A worker that dies fails the file it was on
    ("crashed the HDF5 library"); one that reads a structure for longer than the probe's limit is killed and fails
    it ("did not finish"); either is replaced, the other files it held are given again (their outputs had no name
    yet: nothing of them is left), and the others go on. Where processes cannot be forked (or with
    ``MGPU_IO_PROBE=0``), the files are repaired here, one by one.
    """
    if not probe.forking() or "fork" not in multiprocessing.get_all_start_methods():
        for index, task in enumerate(tasks):
            finished(index, work(*task))
        return
    context = multiprocessing.get_context("fork")
    pending = collections.deque(enumerate(tasks))
    absent = {}  # each file's output, when the file was first given: absent (True) or there already
    pool = _start_workers(context, workers, work)
    try:
        while pending or any(worker.held for worker in pool):
            for worker in pool:
                while len(worker.held) < _HELD and pending:
                    index, task = pending.popleft()
                    absent.setdefault(index, not os.path.lexists(task[1]))
                    worker.give(index, task)
            busy = [worker for worker in pool if worker.held]
            deadlines = [deadline for deadline in (worker.deadline() for worker in busy) if deadline is not None]
            wait(
                [worker.connection for worker in busy] + [worker.process.sentinel for worker in busy],
                max(0.0, min(deadlines) - time.monotonic()) if deadlines else None,
            )
            for position, worker in enumerate(pool):
                if not worker.held:
                    continue
                alive = worker.process.is_alive()  # asked first: a dead worker's results are all in its pipe
                for index, result in worker.collect():
                    finished(index, result)
                if not worker.held:
                    if not alive:  # it died once it had reported every file it held: none fails
                        worker.stop()
                        pool[position] = _start_workers(context, 1, work)[0]
                    continue
                deadline, held = worker.deadline(), list(worker.held)
                if not alive:
                    ended = _exit_text(worker.process.exitcode)
                    failed = worker.ended(lambda source, read, ended=ended: probe.crash_error(source, ended, read))
                elif deadline is not None and time.monotonic() > deadline:
                    worker.kill()
                    failed = worker.ended(lambda source, read: probe.hang_error(source))
                else:
                    continue
                pending.extendleft(reversed(worker.release()))  # given to it, not begun or not reported: again
                worker.stop()
                for index, task in held:  # failed, or given again: an output it named unreported is not kept
                    if absent[index]:
                        _remove_own_output(task[1])
                pool[position] = _start_workers(context, 1, work)[0]
                finished(*failed)
    except BaseException:  # stopped: the results the workers already sent are still the user's to know
        for worker in pool:
            with contextlib.suppress(Exception):
                for index, result in worker.collect():
                    finished(index, result)
        raise
    finally:
        for worker in pool:
            worker.stop()


def _remove_own_output(output):
    """Remove the output that a worker which died (or was killed) committed without reporting it: it died between
    giving the file's output its name and sending the file's result. The output was absent when the file was first
    given, so it is this run's own; the file given again writes it anew instead of finding it there ("The output
    file already exists"), and a file reported failed leaves no output."""
    with contextlib.suppress(OSError):
        if os.path.isdir(output) and not os.path.islink(output):
            shutil.rmtree(output)
        else:
            os.unlink(output)


#: Files a worker holds at once: the one it works on, and the next, sent ahead so that it never waits for its
#: supervisor between two files; the one before may still be committing (see :class:`_Worker`).
_HELD = 2


#: File descriptors a worker needs free to repair a file: the source, the output, the probe's pipe, libraries' own.
_DESCRIPTORS_PER_WORKER = 8


def _start_workers(context, count, work):
    """``count`` new workers, or as many as this process's open-files limit allows (each takes a pipe); none at all
    is a :class:`~mgpu_io.errors.LimitReached` that names the limit."""
    pool = []
    for _ in range(count):
        if pool and limits.free_descriptors() < _DESCRIPTORS_PER_WORKER:
            break  # a worker that starts and then cannot open its files would fail them all
        try:
            pool.append(_Worker(context, work))
        except OSError as error:
            problem = limits.descriptor_problem(error)
            if problem is None:
                raise
            if pool:
                break
            raise LimitReached(
                problem=f"Cannot start a worker process for the folder: {problem}",
                parameter="jobs",
                expected="a few free file descriptors for each worker",
                received=Param("jobs", count, text=f"jobs={count}"),
                fix="Raise the limit (ulimit -n 1024) and run again",
            ) from None
    return pool


class _Board:
    """Where a worker shows its supervisor how far it is, in memory the two share (an anonymous shared mapping made
    before the fork): the number of the file it is on (the files given to it, counted from 1), whether that file's
    structure is read, and when it began the file or, once it did, its reading, on the clock the two share
    (``CLOCK_MONOTONIC``).

    A worker told its supervisor each step in a message, two a file beside its result: each woke the supervisor,
    which on a busy 2-core machine took the worker's processor (``connection.send`` was 5% of the workers' samples
    in the benchmark's folder, profiled with py-spy). The supervisor reads the board when it wakes for a result or
    a deadline.

    The record is guarded as a sequence lock: the worker makes a counter odd, writes the record, makes it even
    again; the supervisor takes a record only between two equal, even readings of the counter. Each is copied
    whole (a slice, not ``struct.pack_into``, which zeroes its bytes before it writes them: read in that instant,
    a time was 0, and a deadline 20 s after the clock's start killed a worker for nothing).
    """

    _COUNTER, _RECORD = struct.Struct("<q"), struct.Struct("<qqd")  # at 0; (number, read, since) at 8

    def __init__(self, fd=None):
        # MAP_SHARED | MAP_ANONYMOUS: a fork's child writes where its parent reads; ``fd``: a memory file's, mapped
        # by a worker that the fork server forked (:meth:`shareable` made it), where the supervisor reads it
        self.memory = mmap.mmap(-1, 32) if fd is None else mmap.mmap(fd, 32)
        self.fd = fd
        self.task, self._counter, self._since = 0, 0, 0.0  # in the worker: its file, the counter, its step's time

    @classmethod
    def shareable(cls):
        """A board in a memory file (``memfd_create``), whose descriptor another process's child can map; ``None``
        where the system has none."""
        try:
            fd = os.memfd_create("mgpu-io-board", getattr(os, "MFD_CLOEXEC", 0))
        except (AttributeError, OSError):
            return None
        try:
            os.ftruncate(fd, 32)
            return cls(fd)
        except (OSError, ValueError):
            os.close(fd)
            return None

    def close(self):
        """Close its memory file's descriptor (the mapping stays)."""
        if self.fd is not None:
            os.close(self.fd)
            self.fd = None

    def begin(self):  # in the worker: it takes the next file
        self.task += 1
        self._write(read=False, since=time.monotonic())

    def tell(self, message):  # in the worker: inside.supervise's sender
        kind, _ = message
        if kind == "start":
            self._write(read=False, since=time.monotonic())
        elif kind == "read":
            self._write(read=True, since=self._since)

    def _write(self, read, since):
        self._since = since
        self.memory[0:8] = self._COUNTER.pack(self._counter + 1)  # odd: being written
        self.memory[8:32] = self._RECORD.pack(self.task, int(read), since)
        self._counter += 2
        self.memory[0:8] = self._COUNTER.pack(self._counter)

    def step(self):
        """``(file number, structure read, since)`` as the worker last showed them."""
        for tries in range(200):
            before = self.memory[0:8]
            record = self.memory[8:32]
            if self._COUNTER.unpack(before)[0] % 2 == 0 and self.memory[0:8] == before:
                break
            if tries >= 100:  # the worker is between two of its writes: let it finish
                time.sleep(0.001)
        # else a worker killed between two writes: its last record as it lies, which the supervisor only reports
        number, read, since = self._RECORD.unpack(record)
        return number, bool(read), since


class _Worker:
    """One supervised worker process and the files it holds (``held``: ``(index, task)``, the oldest first, each
    the ``given``-th it was given counting back from the newest), up to :data:`_HELD` at once.

    Its results come in the order it was given the files: a file's result once its output is committed, which the
    worker does in a thread while it works on the next file (``commits``, :func:`_serve`)."""

    def __init__(self, context, work):
        self.connection, theirs = context.Pipe()
        self.process = None
        if fork_server.started_early():  # the command line's server has imported the repair: it forks the worker
            self.board = _Board.shareable()
            if self.board is not None:
                self.process = fork_server.fork_worker(_served, (work,), (theirs.fileno(), self.board.fd))
                self.board.close()
        if self.process is None:
            self.board = _Board()
            self.process = programs.start_worker(context, _serve, theirs, work, self.board)  # tied to our life
        theirs.close()
        self.held = collections.deque()
        self.given = 0  # files given so far: the newest held is this number
        self.since = None  # when the file after the last result became its to begin
        self.folders = set()  # the folders of the outputs it held when it ended (where its hidden names may lie)

    def give(self, index, task):
        if not self.held:
            self.since = time.monotonic()
        self.held.append((index, task))
        self.given += 1
        self.connection.send(task)

    def _number(self, position):
        """The number of the file held at ``position`` (0: the oldest)."""
        return self.given - len(self.held) + 1 + position

    def deadline(self):
        """When the file it is on must have had its structure read: :data:`probe.TIMEOUT` after it began that file
        or its reading; ``None`` once it is read, and while it still works on an earlier file's output."""
        number, read, since = self.board.step()
        if self.held and number < self._number(0):  # the oldest held is next: it began none since the last result
            return self.since + probe.TIMEOUT
        return None if read else since + probe.TIMEOUT

    def collect(self):
        """``(index, FileResult)`` of each held file whose result it has sent."""
        done = []
        try:
            while self.held and self.connection.poll():
                _, value = self.connection.recv()
                done.append((self.held.popleft()[0], value))
                self.since = time.monotonic()
        except (EOFError, OSError):  # it died: the caller sees that the process is gone
            pass
        return done

    def ended(self, error):
        """``(index, failed FileResult)`` of the file it was on when it died or was killed, ``error(source,
        structure read)`` its reason, removed from ``held``: the one its board shows, else the oldest it held (so
        that each worker that dies fails one file, and a run always ends)."""
        number, read, _ = self.board.step()
        position = number - self._number(0)
        if not 0 <= position < len(self.held):
            position, read = 0, False
        index, task = self.held[position]
        del self.held[position]
        self.folders.add(Path(task[1]).parent)
        return index, FileResult(path=task[0], status=FAILED, reason=reason(error(task[0], read)))

    def release(self):
        """The files it still holds, no longer its own (the oldest first)."""
        released = list(self.held)
        self.folders.update(Path(task[1]).parent for _, task in released)
        self.held.clear()
        return released

    def kill(self):
        if self.process.is_alive():
            self.process.kill()

    def stop(self):
        if self.process.is_alive() and not self.held:
            try:
                self.connection.send(None)
                self.process.join(timeout=5)
            except (OSError, ValueError):
                pass
        if self.process.is_alive():
            self.process.kill()
        self.process.join()
        self.connection.close()
        if self.process.exitcode != 0:  # killed or crashed: the hidden names of the files it held, if any
            from mgpu_io.format.write import temporary_names

            folders = self.folders | {Path(task[1]).parent for _, task in self.held}
            for leftover in (name for folder in folders for name in temporary_names(folder, self.process.pid)):
                with contextlib.suppress(OSError):
                    leftover.unlink()


def _served(parent, connection, board, work):  # pragma: no cover - in a worker that the fork server forked
    """A worker's life (:func:`_serve`) in a child of the command line's fork server
    (:meth:`~mgpu_io.format.sandbox.fork_server._ForkServer.fork_worker`): ``connection`` and ``board`` are the
    descriptors of its pipe and its board, which crossed to the server."""
    from multiprocessing.connection import Connection

    programs.become_worker(parent)
    _serve(Connection(connection), work, _Board(board))


def _serve(connection, work, board):  # pragma: no cover - in a worker process (programs.start_worker)
    """A worker's life: each file given is worked on here, its output's last steps handed to ``commits``, a thread
    that takes them in order and then sends the file's result; until the supervisor sends ``None`` or is gone."""
    from mgpu_io.format.write import deferring

    inside.supervise(board.tell)
    commits = _Commits(connection)
    try:
        while True:
            task = connection.recv()
            if task is None:
                return
            board.begin()
            steps = []
            with deferring(steps.append):
                result = work(*task)
            commits.put(result, steps)
    except (EOFError, OSError, KeyboardInterrupt):  # the supervisor is gone
        return
    finally:
        commits.close()


class _Commits:
    """A worker's thread that commits each file's output (:func:`~mgpu_io.format.write.deferring`), in the order
    the files came, and then sends the file's result: the wait for the disk overlaps the next file's work. A
    commit that fails fails its file, with the error's reason, as the repair's own failure to write would."""

    def __init__(self, connection):
        import queue
        import threading

        self.connection, self.queue = connection, queue.SimpleQueue()
        self.thread = threading.Thread(target=self._run, name="mgpu-io-commits", daemon=True)
        self.thread.start()

    def put(self, result, steps):
        self.queue.put((result, steps))

    def close(self):
        """Commit and send what is queued, then end the thread (a supervisor that is gone: what is left is not
        committed, and the outputs without a name vanish with the process)."""
        self.queue.put(None)
        self.thread.join()

    def _run(self):  # pragma: no cover - runs in a worker process
        sending = True
        while (item := self.queue.get()) is not None:
            result, steps = item
            for step in steps:
                if not sending:
                    break
                try:
                    step()
                except MgpuIOError as error:
                    result = FileResult(path=result.path, status=FAILED, reason=reason(error))
                except Exception as error:
                    result = FileResult(path=result.path, status=FAILED, reason=_internal(error))
            if sending:
                try:
                    self.connection.send(("result", result))
                except (OSError, ValueError):  # the supervisor is gone
                    sending = False


def _internal(error):
    return f"internal error ({type(error).__name__}: {error})"


def _exit_text(code):
    return f"signal {-code}" if code is not None and code < 0 else f"exit code {code}"


def _repair_one(source, output, options):
    from mgpu_io.format.unwrap import unwrap_file

    dry_run = options.dry_run
    try:
        if not dry_run:
            Path(output).parent.mkdir(parents=True, exist_ok=True)
        # opened once, in one child: the config for its weights-only files, a plain model planned as one
        result = unwrap_file(source, output, options=options, folder_made_later=dry_run, in_folder=True)
        status = REPAIRED if result.was_wrapper else CLEAN
        if not result.was_wrapper and not options.allow_plain:
            return FileResult(path=source, status=SKIPPED, reason=PLAIN_REASON)
    except NotAModelFile as error:
        return _not_legacy(source, error)
    except MgpuIOError as error:
        return FileResult(path=source, status=FAILED, reason=reason(error))
    except Exception as error:
        problem = limits.descriptor_problem(error) if isinstance(error, OSError) else None
        if problem is not None:
            return FileResult(path=source, status=FAILED, reason=f"Cannot open the file: {problem}.")
        return FileResult(path=source, status=FAILED, reason=_internal(error))
    return FileResult(path=source, status=status, output=output if not dry_run else None, depth=result.depth)


def reason(error):
    """What a report says of a file's error: its message, with the parameters it names (:meth:`~mgpu_io.errors.
    MgpuIOError.text`)."""
    return error.text() if isinstance(error, MgpuIOError) else str(error)


def _not_legacy(source, error):
    """A file the repair cannot read: skipped when it is Keras 3's own weights file (nothing to repair), else failed
    with the reading's error."""
    from mgpu_io.format.door import KERAS3_WEIGHTS, describe

    try:
        kind = describe(source).kind
    except MgpuIOError:
        kind = None
    if kind == KERAS3_WEIGHTS:
        return FileResult(path=source, status=SKIPPED, reason="a Keras 3 weights file: nothing to repair")
    return FileResult(path=source, status=FAILED, reason=reason(error))
