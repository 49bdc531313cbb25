"""The probe: a file read in a child, so that a libhdf5 hang or crash is an error, not the caller's.

libhdf5 can loop forever or crash on some corrupt metadata (a zeroed region inside an attribute's heap, for example);
no Python code can interrupt it while it runs. So the format core does its reading in a forked child
(:func:`probed`), under a time limit and a memory limit. A hang becomes "did not finish" (:func:`hang_error`), a
crash "crashed the HDF5 library" (:func:`crash_error`), a typed error in the child the same error here. Where
``os.fork`` does not exist, or with ``MGPU_IO_PROBE=0``, the work runs directly (:func:`forking`). The child may do
the whole job, not only the reading: :func:`mgpu_io.unwrap` plans and writes in one child, so the file is read
once. What runs in the child, and what the work calls there, is :mod:`.inside`; what crosses back, :mod:`.shared`;
a large process forks the child from its fork server (:mod:`.fork_server`).
"""

import os
import signal
import time
import warnings

from mgpu_io.errors import LimitReached, NotAModelFile
from mgpu_io.format import limits
from mgpu_io.format.sandbox import inside
from mgpu_io.format.sandbox.child import _death_signal_ready, forking, parents_garbage_kept
from mgpu_io.format.sandbox.fork_server import _ForkServer
from mgpu_io.format.sandbox.shared import _close, _messages, _shared_memory

#: Seconds the child may take to read a file's structure (``MGPU_IO_PROBE_TIMEOUT`` changes it).
TIMEOUT = float(os.environ.get("MGPU_IO_PROBE_TIMEOUT", "20"))


def probed(path, work, *, progress=None):
    """Run ``work()`` (which reads ``path``) in a child; return what it returned (it must pickle), raise what it
    raised, or raise a clear error if it hangs, crashes or runs out of memory.

    ``progress`` receives, here, what the child's :func:`~mgpu_io.format.sandbox.inside.relayed` callback is called
    with. Where no child can be forked (or with ``MGPU_IO_PROBE=0``), or inside a probe's child already (the door's,
    which runs the caller's work after its look: :func:`mgpu_io.format.door.describe_then`), ``work()`` runs here.
    """
    if inside._supervisor is not None:
        return inside._supervised(path, work)
    if not forking() or inside._pipe is not None:  # no fork, or already in a probe's child: this process is the sandbox
        return _unprobed(path, work)
    try:
        read_end, write_end = os.pipe()
    except OSError as error:
        raise _limit_error(error, path) from None
    shared = _shared_memory()
    child = _ForkServer.start_child(path, work, write_end, shared, progress)  # a large process forks from its server
    if child is None:
        child = _fork_here(path, work, read_end, write_end, shared)
    if child is None:  # no process may be started here (ulimit -u, no memory to copy): the work runs here instead
        os.close(read_end)
        os.close(write_end)
        _close(shared)
        return _unprobed(path, work)
    os.close(write_end)
    answer, finished, structure_done = None, False, False
    try:
        deadline = time.monotonic() + TIMEOUT
        # The wait is read anew at each message: no limit once the structure is read.
        wait = lambda: None if structure_done else deadline - time.monotonic()  # noqa: E731
        for kind, value in _messages(read_end, wait, shared):
            if kind == "read":
                structure_done = True
            elif kind == "progress":
                if progress is not None:
                    progress(*value)
            else:
                answer = kind, value
        finished = True
    except TimeoutError:
        pass
    finally:
        os.close(read_end)
        _close(shared)  # what the answer maps of it stays mapped
        if not finished:
            child.kill()
    if not finished:
        raise hang_error(path)
    status = child.wait()
    if status is None:  # its fork server ended: what the child said before its pipe closed is all there is
        status = 0 if answer is not None else 1 << 8
    if answer is not None and not (os.WIFSIGNALED(status) or os.WEXITSTATUS(status) not in (0, 3)):
        kind, value = answer
        if kind == "error":
            raise value
        return value
    what = f"signal {os.WTERMSIG(status)}" if os.WIFSIGNALED(status) else f"exit code {os.WEXITSTATUS(status)}"
    raise crash_error(path, what, structure_done)


def _fork():
    return os.fork()


def _fork_here(path, work, read_end, write_end, shared):
    """Fork this process for ``work`` (the child runs it and exits); the child, or ``None`` where no process may
    be started (``ulimit -u``, no memory to copy)."""
    parent = os.getpid()
    _death_signal_ready()  # ctypes loaded here, once, not in each child
    try:
        with warnings.catch_warnings():
            # Python's "multi-threaded fork" warning, and JAX's ("os.fork() was called ... JAX is multithreaded"):
            # the child runs no thread's code, only h5py's reading, and exits.
            warnings.simplefilter("ignore", DeprecationWarning)
            warnings.filterwarnings("ignore", message=r"os\.fork\(\) was called", category=RuntimeWarning)
            with parents_garbage_kept():
                pid = _fork()
    except OSError:
        return None
    if pid == 0:  # pragma: no cover - the child; its outcome is what the tests check
        os.close(read_end)
        inside._child(path, work, write_end, parent, shared)
    return _Forked(pid)


class _Forked:
    """A child forked from this process."""

    def __init__(self, pid):
        self.pid = pid

    def kill(self):
        _kill(self.pid)

    def wait(self):
        """Its wait status, once it has ended."""
        return os.waitpid(self.pid, 0)[1]


def _unprobed(path, work):
    """``work()`` in this process, where no child can be forked: no time limit, but the same errors."""
    try:
        return work()
    except MemoryError:
        raise inside._memory_error(path) from None


def _limit_error(error, path):
    """The error for an ``OSError`` that a resource limit caused (no file descriptor left), else ``error``."""
    problem = limits.descriptor_problem(error)
    if problem is None:
        return error
    return LimitReached(
        problem=f"Cannot open what reading the file needs: {problem}",
        expected="a few free file descriptors",
        received=f"filepath={path}",
        fix="Raise the limit (ulimit -n 1024) or close other files",
    )


def hang_error(path):
    """The error for a file whose structure was not read within :data:`TIMEOUT`."""
    return NotAModelFile(
        problem=f"Reading the file's structure did not finish within {TIMEOUT:g} s",
        parameter="filepath",
        expected="a file that libhdf5 reads in well under a second",
        received=f"filepath={path}",
        fix="Its metadata is damaged (libhdf5 loops on some corrupt files); restore it from its source",
    )


def crash_error(path, what, structure_done):
    """The error for a process that died reading ``path`` (``what``: "signal 11", "exit code 1"); one that the
    CPU-time limit ended (``SIGXCPU``, or the ``SIGKILL`` at its hard limit) names the limit."""
    doing = "Copying the weights" if structure_done else "Reading the file's structure"
    cpu = limits.cpu_problem()
    if cpu is not None and what in (f"signal {signal.SIGXCPU}", f"signal {signal.SIGKILL}"):
        return LimitReached(
            problem=f"{doing} was stopped: {cpu}",
            expected="enough CPU time for the file",
            received=f"filepath={path} ({what})",
            fix="Raise the limit (ulimit -t unlimited, or more seconds) or repair fewer files per run",
        )
    return NotAModelFile(
        problem=f"{doing} crashed the HDF5 library ({what})",
        parameter="filepath",
        expected="a file as Keras writes it",
        received=f"filepath={path}",
        fix="The file is damaged; restore it from its source",
    )


def _kill(pid):
    try:
        os.kill(pid, signal.SIGKILL)
        os.waitpid(pid, 0)
    except (ProcessLookupError, ChildProcessError):
        pass
