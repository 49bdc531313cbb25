"""Read an untrusted file in a child process, so that a libhdf5 hang or crash is a clear error.

libhdf5 can loop forever or crash on some corrupt metadata (a zeroed region inside an attribute's heap, for
example); no Python code can interrupt it while it runs. So the format core does its reading in a forked child,
under a time limit and a memory limit. A hang becomes "did not finish", a crash "crashed the HDF5 library", a typed
error in the child the same error here. Where ``os.fork`` does not exist, or with ``MGPU_IO_PROBE=0``, the work
runs directly.

The child may do the whole job, not only the reading: :func:`mgpu_io.unwrap` plans and writes in one child, so the
file is read once. Such work calls :func:`structure_read` once it has read what a plan reads; the time and memory
limits then end (what is left, copying weight bytes, takes as long as the file is large), and the parent's
``progress`` callback gets what :func:`relayed` sends.

A folder's worker processes (:mod:`.batch`) are supervised instead: a fork per small file costs more than a third
of its repair. In such a worker (:func:`supervise`), the work runs in the worker itself, which reports when a file's
reading starts and when its structure is read; the supervisor keeps the time limit and notices a crash, with the
same errors.
"""

import os
import pickle
import select
import signal
import struct
import time
import warnings

from mgpu_io.errors import LimitReached, NotAModelFile
from mgpu_io.format import limits

#: Seconds the child may take to read a file's structure (``MGPU_IO_PROBE_TIMEOUT`` changes it).
TIMEOUT = float(os.environ.get("MGPU_IO_PROBE_TIMEOUT", "20"))
#: Memory the child may add to what the process already maps, while it reads the structure.
EXTRA_MEMORY = 2 << 30

_FRAME = struct.Struct("<Q")  # each message on the pipe: its length, then its pickle
_pipe = None  # in a probe's child: the write end of the pipe to the parent
_supervisor = None  # in a supervised worker: sends ("start" | "read", None) to its supervisor
_memory_limit = None  # what limits.lower_soft returned for the probe's cap (False: the user's limit was lower)


def probed(path, work, *, progress=None):
    """Run ``work()`` (which reads ``path``) in a child; return what it returned (it must pickle), raise what it
    raised, or raise a clear error if it hangs, crashes or runs out of memory.

    ``progress`` receives, here, what the child's :func:`relayed` callback is called with. Where no child can be
    forked (or with ``MGPU_IO_PROBE=0``), or inside a probe's child already (the door's, which runs the caller's
    work after its look: :func:`mgpu_io.format.door.describe_then`), ``work()`` runs here.
    """
    if _supervisor is not None:
        return _supervised(path, work)
    if not forking() or _pipe is not None:  # no fork, or already in a probe's child: this process is the sandbox
        return _unprobed(path, work)
    try:
        read_end, write_end = os.pipe()
    except OSError as error:
        raise _limit_error(error, path) from None
    try:
        with warnings.catch_warnings():
            # Python's "multi-threaded fork" warning, and JAX's ("os.fork() was called ... JAX is multithreaded"):
            # the child runs no thread's code, only h5py's reading, and exits.
            warnings.simplefilter("ignore", DeprecationWarning)
            warnings.filterwarnings("ignore", message=r"os\.fork\(\) was called", category=RuntimeWarning)
            pid = _fork()
    except OSError:  # no process may be started here (ulimit -u, no memory to copy): the work runs here instead
        os.close(read_end)
        os.close(write_end)
        return _unprobed(path, work)
    if pid == 0:  # pragma: no cover - the child; its outcome is what the tests check
        os.close(read_end)
        _child(path, work, write_end)
    os.close(write_end)
    answer, finished, structure_done = None, False, False
    try:
        deadline = time.monotonic() + TIMEOUT
        # The wait is read anew at each message: no limit once the structure is read.
        wait = lambda: None if structure_done else deadline - time.monotonic()  # noqa: E731
        for kind, value in _messages(read_end, wait):
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
        if not finished:
            _kill(pid)
    if not finished:
        raise hang_error(path)
    _, status = os.waitpid(pid, 0)
    if answer is not None and not (os.WIFSIGNALED(status) or os.WEXITSTATUS(status) not in (0, 3)):
        kind, value = answer
        if kind == "error":
            raise value
        return value
    what = f"signal {os.WTERMSIG(status)}" if os.WIFSIGNALED(status) else f"exit code {os.WEXITSTATUS(status)}"
    raise crash_error(path, what, structure_done)


def forking():
    """Whether files are read in forked processes: where ``os.fork`` exists, unless ``MGPU_IO_PROBE=0`` turns it off
    (then the work runs in this process, without a time limit, and a folder's files are repaired one by one)."""
    return hasattr(os, "fork") and os.environ.get("MGPU_IO_PROBE", "1") != "0"


def _fork():
    return os.fork()


def _unprobed(path, work):
    """``work()`` in this process, where no child can be forked: no time limit, but the same errors."""
    try:
        return work()
    except MemoryError:
        raise _memory_error(path) from None


def _limit_error(error, path):
    """The error for an ``OSError`` that a resource limit caused (no file descriptor left), else ``error``."""
    problem = limits.descriptor_problem(error)
    if problem is None:
        return error
    return LimitReached(
        f"Cannot open what reading the file needs: {problem}. Expected a few free file descriptors. Received: "
        f"filepath={path}. Raise the limit (ulimit -n 1024) or close other files."
    )


def hang_error(path):
    """The error for a file whose structure was not read within :data:`TIMEOUT`."""
    return NotAModelFile(
        f"Reading the file's structure did not finish within {TIMEOUT:g} s. Expected a file that libhdf5 reads "
        f"in well under a second. Received: filepath={path}. Its metadata is damaged (libhdf5 loops on some "
        f"corrupt files); restore it from its source."
    )


def crash_error(path, what, structure_done):
    """The error for a process that died reading ``path`` (``what``: "signal 11", "exit code 1"); one that the
    CPU-time limit ended (``SIGXCPU``, or the ``SIGKILL`` at its hard limit) names the limit."""
    doing = "Copying the weights" if structure_done else "Reading the file's structure"
    cpu = limits.cpu_problem()
    if cpu is not None and what in (f"signal {signal.SIGXCPU}", f"signal {signal.SIGKILL}"):
        return LimitReached(
            f"{doing} was stopped: {cpu}. Expected enough CPU time for the file. Received: filepath={path} "
            f"({what}). Raise the limit (ulimit -t unlimited, or more seconds) or repair fewer files per run."
        )
    return NotAModelFile(
        f"{doing} crashed the HDF5 library ({what}). Expected a file as Keras writes it. Received: "
        f"filepath={path}. The file is damaged; restore it from its source."
    )


def _memory_error(path):
    """Memory ran out reading ``path``: under the user's own ``ulimit -v`` (when the probe's cap was not the lower
    one), the limit is named; else the file declares more than fits."""
    user_limit = user_memory_problem()
    if user_limit is not None:
        return LimitReached(
            f"Reading the file ran out of memory: {user_limit}. Expected room for the file's structure and weights. "
            f"Received: filepath={path}. Raise the limit (ulimit -v unlimited, or a larger value) or run where "
            f"more memory is allowed."
        )
    return NotAModelFile(
        f"The file declares more data than fits in memory. Expected weights of the sizes the file holds. "
        f"Received: filepath={path}. The file is damaged or hostile."
    )


def user_memory_problem():
    """What to say when memory runs out now under the user's own ``ulimit -v`` (not under the probe's lower cap,
    which a file that declares too much runs into); ``None`` when no such limit is what binds."""
    capped_here = _memory_limit is not None and _memory_limit is not False
    return None if capped_here else limits.memory_problem()


def supervise(send):
    """Make this process a supervised worker: :func:`probed` runs its work here, under the memory limit until the
    structure is read, and ``send`` tells the supervisor ``("start", None)`` and ``("read", None)``; the supervisor
    keeps the time limit and notices a crash (see :mod:`.batch`)."""
    global _supervisor
    _supervisor = send


def _supervised(path, work):
    _supervisor(("start", None))
    _limit_memory()
    try:
        return work()
    except MemoryError:
        raise _memory_error(path) from None
    finally:
        _unlimit_memory()


def structure_read():
    """In a probe's child: the file's structure has been read. The time limit and the memory limit end; the rest
    of the work (copying weight bytes) may take as long, and map as much, as the file needs. Elsewhere: nothing."""
    if _pipe is not None:
        _send(_pipe, ("read", None))
    elif _supervisor is not None:
        _supervisor(("read", None))
    else:
        return
    _unlimit_memory()


def relayed(progress):
    """In a probe's child, a callback that sends its arguments to the parent's ``progress``; elsewhere
    ``progress`` itself (``None`` stays ``None``)."""
    if _pipe is None or progress is None:
        return progress
    return lambda *args: _send(_pipe, ("progress", args))


def _messages(fd, time_left):
    """The child's messages, as ``(kind, value)``, until it closes the pipe; ``TimeoutError`` once ``time_left()``
    (seconds, or ``None`` for no limit) runs out."""
    buffer = b""
    while True:
        left = time_left()
        if left is not None and left <= 0:
            raise TimeoutError
        ready, _, _ = select.select([fd], [], [], left)
        if not ready:
            continue
        chunk = os.read(fd, 1 << 16)
        if not chunk:
            return
        buffer += chunk
        while len(buffer) >= _FRAME.size:
            (size,) = _FRAME.unpack_from(buffer)
            if len(buffer) < _FRAME.size + size:
                break
            yield pickle.loads(buffer[_FRAME.size : _FRAME.size + size])  # our own child's answer, over our own pipe
            buffer = buffer[_FRAME.size + size :]


def _child(path, work, write_end):  # pragma: no cover - runs in the forked child
    global _pipe
    _pipe, code = write_end, 0
    try:
        import faulthandler
        import gc

        # What the parent left for the garbage collector is the parent's to collect: closing its HDF5 objects here
        # (a damaged file it gave up on, say) would run libhdf5 on them a second time, in this process.
        gc.freeze()
        faulthandler.disable()  # a crash here is reported by the parent, in one line, not as a stack dump
        signal.signal(signal.SIGINT, signal.SIG_DFL)
        signal.signal(signal.SIGTERM, signal.SIG_DFL)
        if hasattr(signal, "SIGXCPU"):
            signal.signal(signal.SIGXCPU, signal.SIG_DFL)  # the parent names the CPU-time limit (crash_error)
        _limit_memory()
        try:
            _send(write_end, ("value", work()))
        except MemoryError:
            _send(write_end, ("error", _memory_error(path)))
            code = 3
        except Exception as error:
            _send(write_end, ("error", error))
            code = 3
    except BaseException:
        code = 1
    finally:
        os._exit(code)


def _send(fd, answer):
    try:
        data = pickle.dumps(answer)
    except Exception:
        data = pickle.dumps(("error", NotAModelFile(str(answer[1]))))
    view = memoryview(_FRAME.pack(len(data)) + data)
    while view:
        view = view[os.write(fd, view) :]


def _limit_memory():  # pragma: no cover - runs in the forked child or a supervised worker
    """Cap the address space at what the process maps now plus :data:`EXTRA_MEMORY`, lowering the soft limit only
    (never the hard one, never above a limit the user set: ``ulimit -v`` stays the user's)."""
    global _memory_limit
    try:
        with open("/proc/self/status") as status:
            mapped = next(int(line.split()[1]) << 10 for line in status if line.startswith("VmSize:"))
    except (OSError, ValueError, StopIteration):
        return
    _memory_limit = limits.lower_soft("AS", mapped + EXTRA_MEMORY)


def _unlimit_memory():
    """Give the address space back the soft limit it had before :func:`_limit_memory` (none, as a rule)."""
    global _memory_limit
    limits.restore_soft("AS", _memory_limit)
    _memory_limit = None


def _kill(pid):
    try:
        os.kill(pid, signal.SIGKILL)
        os.waitpid(pid, 0)
    except (ProcessLookupError, ChildProcessError):
        pass
