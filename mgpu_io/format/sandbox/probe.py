"""Child processes, one mechanism: start one, limit it, tie it to its parent's life, time it, hand back its answer.

Every child mgpu-io starts goes through here, for three jobs:

- **The sandbox** (:func:`probed`): libhdf5 can loop forever or crash on some corrupt metadata (a zeroed region
  inside an attribute's heap, for example); no Python code can interrupt it while it runs. So the format core does
  its reading in a forked child, under a time limit and a memory limit. A hang becomes "did not finish", a crash
  "crashed the HDF5 library", a typed error in the child the same error here. Where ``os.fork`` does not exist, or
  with ``MGPU_IO_PROBE=0``, the work runs directly. The child may do the whole job, not only the reading:
  :func:`mgpu_io.unwrap` plans and writes in one child, so the file is read once. Such work calls
  :func:`structure_read` once it has read what a plan reads; the time and memory limits then end (what is left,
  copying weight bytes, takes as long as the file is large), and the parent's ``progress`` callback gets what
  :func:`relayed` sends. What the child hands back may hold weight arrays: :func:`hand_over` puts them in memory
  shared with the parent (a ``memfd``), so that the parent builds from them without opening the file again.
  A large process (one that has imported TensorFlow) forks the child from its **fork server** instead
  (:class:`_ForkServer`): a fork copies the page tables of all the forking process maps, which cost such a process
  more kernel time per file than the reading itself. The server is a small Python process of its own, started in
  the background once the process has read :data:`SERVER_AFTER` files; its child runs the same work, in the
  caller's folder and environment, with the same pipe, shared memory, limits and errors.
- **Supervised workers** (:func:`start_worker`, used by :mod:`.batch`): a fork per small file costs more than a
  third of its repair, so a folder's workers repair file after file. In such a worker (:func:`supervise`) the work
  runs in the worker itself, which reports when a file's reading starts and when its structure is read; the
  supervisor keeps the time limit and notices a crash, with the same errors.
- **Another program** (:func:`run_program`): a separate interpreter (the Lambda decompiler, ``python -I``), whose
  limits (CPU time, address space, no file written, no core) are set between the fork and the exec, and which is
  killed past a wall-clock limit.

Each child is tied to its parent's life (:func:`tie_to_parent`): on Linux the kernel kills it when the parent dies
(``PR_SET_PDEATHSIG``), so a ``kill -9`` of the command leaves no child reading on; elsewhere a watch thread ends a
forked child whose parent is gone. A forked child never collects its parent's garbage (:func:`parents_garbage_kept`):
what TensorFlow left for the collector crashes the process that frees it without TensorFlow's threads. Limits are
only ever lowered (:mod:`.limits`): a limit the user's environment set is never raised.
"""

import contextlib
import gc
import io
import mmap
import os
import pickle
import select
import signal
import socket
import struct
import sys
import threading
import time
import types
import warnings

from mgpu_io.errors import LimitReached, NotAModelFile
from mgpu_io.format import limits

#: Seconds the child may take to read a file's structure (``MGPU_IO_PROBE_TIMEOUT`` changes it).
TIMEOUT = float(os.environ.get("MGPU_IO_PROBE_TIMEOUT", "20"))
#: Memory the child may add to what the process already maps, while it reads the structure.
EXTRA_MEMORY = 2 << 30

_FRAME = struct.Struct("<Q")  # each message on the pipe: its length, then its pickle
_NUMBER = struct.Struct("<q")  # what the fork server says: a pid, a wait status
_pipe = None  # in a probe's child: the write end of the pipe to the parent
_supervisor = None  # in a supervised worker: sends ("start" | "read", None) to its supervisor
_memory_limit = None  # what limits.lower_soft returned for the probe's cap (False: the user's limit was lower)
_shared = None  # in a probe's child: the memory shared with the parent, where hand_over puts arrays
#: Linux's ``prctl`` option that sends the child a signal when its parent dies.
_PR_SET_PDEATHSIG = 1


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
    shared = _shared_memory()
    child = _ForkServer.start_child(path, work, write_end, shared)  # a large process forks from its server
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


def forking():
    """Whether files are read in forked processes: where ``os.fork`` exists, unless ``MGPU_IO_PROBE=0`` turns it off
    (then the work runs in this process, without a time limit, and a folder's files are repaired one by one)."""
    return hasattr(os, "fork") and os.environ.get("MGPU_IO_PROBE", "1") != "0"


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
        _child(path, work, write_end, parent, shared)
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
        raise _memory_error(path) from None


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


def _memory_error(path):
    """Memory ran out reading ``path``: under the user's own ``ulimit -v`` (when the probe's cap was not the lower
    one), the limit is named; else the file declares more than fits."""
    user_limit = user_memory_problem()
    if user_limit is not None:
        return LimitReached(
            problem=f"Reading the file ran out of memory: {user_limit}",
            expected="room for the file's structure and weights",
            received=f"filepath={path}",
            fix="Raise the limit (ulimit -v unlimited, or a larger value) or run where more memory is allowed",
        )
    return NotAModelFile(
        problem="The file declares more data than fits in memory",
        parameter="filepath",
        expected="weights of the sizes the file holds",
        received=f"filepath={path}",
        fix="The file is damaged or hostile",
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


def _messages(fd, time_left, shared=None):
    """The child's messages, as ``(kind, value)``, until it closes the pipe; ``TimeoutError`` once ``time_left()``
    (seconds, or ``None`` for no limit) runs out."""
    buffer, wanted = bytearray(), _FRAME.size  # a bytearray grows in place: a large answer is not copied per read
    while True:
        left = time_left()
        if left is not None and left <= 0:
            raise TimeoutError
        ready, _, _ = select.select([fd], [], [], left)
        if not ready:
            continue
        chunk = os.read(fd, max(1 << 16, min(wanted - len(buffer), 1 << 24)))
        if not chunk:
            return
        buffer += chunk
        while len(buffer) >= _FRAME.size:
            (size,) = _FRAME.unpack_from(buffer)
            wanted = _FRAME.size + size
            if len(buffer) < wanted:
                break
            yield _loads(bytes(buffer[_FRAME.size : wanted]), shared)  # our own child's answer, our own pipe
            del buffer[:wanted]
            wanted = _FRAME.size


def _child(path, work, write_end, parent, shared):  # pragma: no cover - runs in the forked child
    global _pipe, _shared
    _pipe, code = write_end, 0
    _shared = _Shared(shared) if shared is not None else None
    try:
        become_child(parent)
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
        data = _dumps(answer)
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


# --- every child: tied to its parent, quiet, its signals its own --------------------------------------------------


def become_child(parent, *, interrupt=signal.SIG_DFL):  # pragma: no cover - runs in a child
    """What every forked child does first: leave its parent's garbage alone (:func:`parents_garbage_kept`), die
    with its ``parent`` (:func:`tie_to_parent`), leave a crash to its parent to report (in one line, not as a stack
    dump), and take SIGINT as ``interrupt`` says (a folder's workers ignore Ctrl-C: their supervisor stops them),
    SIGTERM and the CPU-time limit's SIGXCPU as their defaults (die at once, quietly, not through a handler inherited
    from the command line)."""
    import faulthandler

    _freeze_parents_garbage()
    tie_to_parent(parent)
    faulthandler.disable()
    signal.signal(signal.SIGINT, interrupt)
    signal.signal(signal.SIGTERM, signal.SIG_DFL)
    if hasattr(signal, "SIGXCPU"):
        signal.signal(signal.SIGXCPU, signal.SIG_DFL)  # the parent names the CPU-time limit (crash_error)


_collector = threading.Lock()  # guards the two below, for forks from several threads at once
_forks_under_way = 0  # forks between parents_garbage_kept's start and end (in a child: inherited, until it froze)
_collector_was_on = False  # whether the garbage collector ran before the first of them


@contextlib.contextmanager
def parents_garbage_kept():
    """Around a fork: the child never collects its parent's garbage. TensorFlow's objects among it (a model that a
    training loop dropped, an optimizer's slots) crash the process that frees them without TensorFlow's threads, with
    a SIGSEGV that would read as a damaged file. So the garbage collector is off from before the fork until the
    child has frozen what it inherits (:func:`become_child`), and the parent's collector is as it was once the fork
    is done. (``gc.freeze`` in the parent would do too, but ``gc.unfreeze`` after it would undo a freeze of the
    caller's own: Python's advice for a forking server.)

    Example:

    >>> import os
    >>> with parents_garbage_kept():
    ...     pid = os.fork()
    ...     if pid == 0:
    ...         become_child(os.getppid())
    ...         os._exit(0)
    >>> os.waitpid(pid, 0)[1]
    0
    """
    global _forks_under_way, _collector_was_on
    parent = os.getpid()
    with _collector:
        if _forks_under_way == 0:
            _collector_was_on = gc.isenabled()
            gc.disable()
        _forks_under_way += 1
    try:
        yield
    finally:
        if os.getpid() == parent:  # a child leaves the collector off until it has frozen its parent's objects
            with _collector:
                _forks_under_way -= 1
                if _forks_under_way == 0 and _collector_was_on:
                    gc.enable()


def _freeze_parents_garbage():  # pragma: no cover - runs in a child
    """In a child: what it inherited is out of its garbage collector's reach (the parent's to collect: TensorFlow's
    objects, or HDF5 objects of a damaged file the parent gave up on, which libhdf5 would close a second time here);
    the collector runs again, for the child's own objects, if it ran in the parent."""
    global _collector, _forks_under_way
    gc.freeze()
    _collector = threading.Lock()  # another thread of the parent may have held it at the fork
    if _forks_under_way:
        _forks_under_way = 0
        if _collector_was_on:
            gc.enable()


def tie_to_parent(parent, *, watch=True):  # pragma: no cover - runs in a child
    """End this child when process ``parent`` (its parent) dies, however it dies (``kill -9`` included): on Linux the
    kernel sends it SIGKILL (``PR_SET_PDEATHSIG``); elsewhere, with ``watch``, a thread that sees the parent gone
    ends it. A parent that died before this ran ends it now."""
    if not _death_signal(signal.SIGKILL) and watch:
        import threading

        def watching():
            while os.getppid() == parent:
                time.sleep(0.5)
            os._exit(1)

        threading.Thread(target=watching, name="mgpu-io-parent-watch", daemon=True).start()
    if os.getppid() != parent:
        os._exit(1)


_libc = None


def _death_signal_ready():
    """Load what :func:`_death_signal` calls (``ctypes``, libc), here in the parent, once."""
    global _libc
    if _libc is None and sys.platform.startswith("linux"):
        try:
            import ctypes

            _libc = ctypes.CDLL(None, use_errno=True)
        except (ImportError, OSError):  # pragma: no cover - a Linux without a loadable libc
            _libc = False
    return _libc


def _death_signal(signum):
    """Ask the kernel to send ``signum`` to this process when its parent dies; whether it could (Linux only)."""
    libc = _death_signal_ready()
    if not libc:
        return False
    try:
        return libc.prctl(_PR_SET_PDEATHSIG, int(signum), 0, 0, 0) == 0
    except (AttributeError, OSError):  # pragma: no cover - a libc without prctl
        return False


# --- a small process to fork from ----------------------------------------------------------------------------------

#: A process that has at least this much memory resident forks its probes' children from its fork server: a fork
#: copies the page tables of what the forking process maps, and the child's exit tears them down, which costs a
#: process with TensorFlow (550 MB) about 25 ms of kernel time per child, the server (the reading floor alone:
#: h5py, numpy, ``format/``) about 1 ms. ``tests/benchmarks/probe_cost.py`` measures both.
SERVER_FROM = 256 << 20
#: Seconds the fork server may take to start, or to answer once started.
SERVER_WAIT = 60.0
#: The read (of a large process) on which the fork server is started, in the background; the reads before it, and
#: those until it serves, fork here. Starting it costs about half a CPU-second (an interpreter importing h5py, numpy
#: and ``format/``), which the saving pays back after a few dozen reads: a process that reads a file or two (a
#: script's ``load_model``) does not start it, one that reads a folder or many files does.
SERVER_AFTER = 8
#: The modules whose classes and functions the work may hold to cross to the server (each is imported there).
_CROSSES = frozenset({"mgpu_io", "builtins", "pathlib", "functools", "collections", "copyreg", "numpy"})


class _ForkServer:
    """A Python process of this process's own (its interpreter and ``sys.path``, tied to its life) that forks a
    probe's child when asked. The child runs the work as a child forked here would (:func:`_child`), in this
    process's folder and environment, and writes to the same pipe and shared memory (their descriptors cross the
    socket); the server says its pid and, once it has ended, its wait status.

    The work crosses as a pickle. Work that does not (a closure, or a function outside mgpu-io), a call from
    another thread than the main one (the server is tied to the thread that started it) or while another call
    uses the server, an HDF5 file open in this process (:func:`_hdf5_open_here`), or a server that cannot start:
    the child is forked here, as in a small process. What the work reads of this process's state is what it is
    given: a module's setting changed here at run time is not the server's (tests that change one fork here).
    """

    _current = None  # (the pid of the process it serves, the server or False where none could start)
    _counted = (None, 0)  # (a process's pid, how many of its reads wanted the server)

    def __init__(self, process, sock):
        self.process, self.sock, self.lock = process, sock, threading.Lock()
        self.started, self.ready = time.monotonic(), False

    @classmethod
    def start_child(cls, path, work, write_end, shared):
        """The child running ``work()``, started by the server: a :class:`_Served`, or ``None`` (fork here)."""
        if not _large() or threading.current_thread() is not threading.main_thread() or _hdf5_open_here():
            return None
        try:
            request = _crossing((str(path), work, dict(os.environ), os.getcwd()))
        except Exception:
            return None
        server = cls._for_this_process()
        if server is None or not server.lock.acquire(blocking=False):
            return None
        try:
            socket.send_fds(server.sock, [_FRAME.pack(len(request))], [write_end] + [shared] * (shared is not None))
            server.sock.sendall(request)
            pid = _read_number(server.sock)
        except (OSError, EOFError):
            server.lock.release()
            server.end()
            return None
        if pid < 0:  # it could not fork (ulimit -u): nor will this process, as a rule, but it tries
            server.lock.release()
            return None
        return _Served(server, pid)

    @classmethod
    def start_now(cls):
        """Start this process's server and wait until it serves (its own tests, a caller about to read many
        files); the server, or ``None`` where it cannot start."""
        cls._for_this_process(count=False)  # started, if it was not
        server = cls._current[1]
        # Waited for until SERVER_WAIT has passed since its start: then it serves, or it was ended (False above).
        if server and server.serving(max(0.0, server.started + SERVER_WAIT - time.monotonic())):
            return server
        return None

    @classmethod
    def _for_this_process(cls, count=True):
        """The server, once it serves; ``None`` until then. It is started (without waiting for it) on the
        :data:`SERVER_AFTER`-th read that wanted it: a process that reads one file does not pay for its start."""
        pid = os.getpid()
        owner, server = cls._current or (None, None)
        if owner == pid and server is False:
            return None
        if owner == pid and server is not None and server.process.poll() is None:
            return server if server.serving() else None
        if count:
            counted, reads = cls._counted
            cls._counted = (pid, reads + 1 if counted == pid else 1)
            if cls._counted[1] < SERVER_AFTER:
                return None
        cls._current = (pid, cls._start() or False)
        return None

    @classmethod
    def _start(cls):
        """The server process, started; it says once it serves (:meth:`serving`). ``None`` where none can start."""
        import atexit
        import subprocess

        here, there = socket.socketpair()
        boot = f"import sys; sys.path[:] = {sys.path!r}; from mgpu_io.format import sandbox; sandbox._serve({there.fileno()})"
        try:
            process = subprocess.Popen(
                [sys.executable, "-c", boot],
                stdin=subprocess.DEVNULL,
                stdout=subprocess.DEVNULL,
                pass_fds=(there.fileno(),),
            )
        except (OSError, ValueError):  # no interpreter to start (an embedded Python), no process allowed
            here.close()
            return None
        finally:
            there.close()
        here.settimeout(SERVER_WAIT)
        server = cls(process, here)
        atexit.register(server.end)
        return server

    def serving(self, wait=0.0):
        """Whether the server has said it serves (waiting up to ``wait`` seconds); one that ended, or has not said
        so within :data:`SERVER_WAIT`, is ended and not started again in this process."""
        if self.ready:
            return True
        try:
            if select.select([self.sock], [], [], wait)[0]:
                _read_number(self.sock)
                self.ready = True
                return True
            if time.monotonic() - self.started < SERVER_WAIT:
                return False
        except (OSError, EOFError, ValueError):
            pass
        self.end()
        type(self)._current = (os.getpid(), False)
        return False

    def end(self):
        """Close the socket (the server ends when it sees it closed) and wait for the server to end."""
        self.sock.close()
        try:
            self.process.wait(timeout=5)
        except Exception:
            self.process.kill()
            self.process.wait()


class _Served:
    """A child that the fork server started."""

    def __init__(self, server, pid):
        self.server, self.pid = server, pid

    def kill(self):
        with contextlib.suppress(ProcessLookupError, PermissionError):
            os.kill(self.pid, signal.SIGKILL)
        self.wait()

    def wait(self):
        """Its wait status, once it has ended; ``None`` if the server ended first."""
        try:
            return _read_number(self.server.sock)
        except (OSError, EOFError):
            self.server.end()
            return None
        finally:
            self.server.lock.release()


def _large():
    """Whether this process has :data:`SERVER_FROM` or more resident (where ``/proc`` says so)."""
    try:
        with open("/proc/self/statm", "rb") as statm:
            return int(statm.read().split()[1]) * mmap.PAGESIZE >= SERVER_FROM
    except (OSError, ValueError, IndexError):
        return False


def _hdf5_open_here():
    """Whether this process has an HDF5 file open (one the caller opened with h5py, say): a child forked here
    shares libhdf5's state, so the same file opened there is the one open here; a server's child would open it
    anew and meet the lock the caller's handle holds."""
    h5py = sys.modules.get("h5py")
    if h5py is None:
        return False
    try:
        return h5py.h5f.get_obj_count(h5py.h5f.OBJ_ALL, h5py.h5f.OBJ_FILE) > 0
    except Exception:  # an h5py that cannot say: as if one were open
        return True


class _CrossingPickler(pickle.Pickler):
    def reducer_override(self, obj):
        if isinstance(obj, (type, types.FunctionType, types.BuiltinFunctionType, types.MethodType)):
            module = getattr(obj, "__module__", None) or ""
            if module.split(".")[0] not in _CROSSES:
                raise pickle.PicklingError(f"{module}.{getattr(obj, '__qualname__', obj)} stays in this process")
        return NotImplemented


def _crossing(value):
    """``value`` pickled for the fork server, which imports no module outside :data:`_CROSSES` for it."""
    buffer = io.BytesIO()
    _CrossingPickler(buffer, protocol=pickle.HIGHEST_PROTOCOL).dump(value)
    return buffer.getvalue()


def _receive(sock, size):
    """Exactly ``size`` bytes from ``sock``; :class:`EOFError` if it closes first."""
    data = bytearray()
    while len(data) < size:
        chunk = sock.recv(min(size - len(data), 1 << 20))
        if not chunk:
            raise EOFError
        data += chunk
    return bytes(data)


def _read_number(sock):
    return _NUMBER.unpack(_receive(sock, _NUMBER.size))[0]


def _serve(fd):  # pragma: no cover - runs in the fork server
    """The fork server's life: take a request (the work, the pipe and the shared memory), fork the child that runs
    it, say its pid, wait for it, say its wait status; until the socket closes."""
    sock = socket.socket(fileno=fd)
    become_child(os.getppid(), interrupt=signal.SIG_IGN)  # Ctrl-C reaches its children, not it
    _death_signal_ready()
    _preload()
    sock.sendall(_NUMBER.pack(os.getpid()))
    while True:
        try:
            header, fds, _, _ = socket.recv_fds(sock, _FRAME.size, 2)
            if not header:
                break
            header += _receive(sock, _FRAME.size - len(header))
            (size,) = _FRAME.unpack(header)
            request = _receive(sock, size)
        except (OSError, EOFError, struct.error):
            break
        write_end, shared = fds[0], (fds[1] if len(fds) > 1 else None)
        try:
            path, work, environment, folder = pickle.loads(request)  # from the process it serves, over its socket
        except BaseException as error:
            path, work, environment, folder = "", _raising(error), None, None
        try:
            pid = os.fork()
        except OSError:
            pid = -1
        if pid == 0:
            try:
                sock.close()
                _as_asked(environment, folder)
            except BaseException as error:
                work = _raising(error)
            _child(path, work, write_end, os.getppid(), shared)  # never returns
        os.close(write_end)
        _close(shared)
        try:  # the process it serves may have ended meanwhile: then so does the server, silently
            sock.sendall(_NUMBER.pack(pid))
            if pid > 0:
                sock.sendall(_NUMBER.pack(os.waitpid(pid, 0)[1]))
        except OSError:
            if pid > 0:
                with contextlib.suppress(ChildProcessError):
                    os.waitpid(pid, 0)
            break
    os._exit(0)


def _preload():  # pragma: no cover - runs in the fork server
    """Import what the children read with, once, here: each child starts with it (h5py alone takes a third of a
    second to import)."""
    import importlib
    import pkgutil

    import mgpu_io.format

    for module in pkgutil.walk_packages(mgpu_io.format.__path__, "mgpu_io.format."):
        with contextlib.suppress(Exception):
            importlib.import_module(module.name)


def _as_asked(environment, folder):  # pragma: no cover - runs in the fork server's child
    if environment is not None:
        os.environ.clear()
        os.environ.update(environment)
    if folder is not None:
        os.chdir(folder)


def _raising(error):
    def work():
        raise error

    return work


def start_worker(context, target, *args):
    """Start ``target(*args)`` in a supervised worker process of the ``multiprocessing`` ``context`` (fork), as a
    child of this one (:func:`become_child`, Ctrl-C left to the supervisor); returns its ``Process``."""
    _death_signal_ready()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", DeprecationWarning)  # "multi-threaded fork" (a progress bar's thread)
        process = context.Process(target=_worker, args=(os.getpid(), target, args), daemon=True)
        with parents_garbage_kept():
            process.start()
    return process


def _worker(parent, target, args):  # pragma: no cover - runs in a worker process
    become_child(parent, interrupt=signal.SIG_IGN)
    target(*args)


def run_program(argv, data, *, seconds, memory, timeout, cwd=None):
    """Run another program (``argv``: an interpreter and its script) with ``data`` on its standard input, under
    limits set between the fork and the exec: ``seconds`` of CPU time, ``memory`` bytes of address space, no file
    written, no core dumped (each only lowered, never raised above what this process has), tied to this process's
    life, and killed after ``timeout`` seconds of wall-clock time; in folder ``cwd`` when given.

    Returns ``(exit status, standard output)`` (a negative status: the signal that ended it). Raises
    ``TimeoutError`` past ``timeout`` (the program is killed first), ``OSError`` when it cannot start.

    Example:
        >>> run_program([sys.executable, "-c", "print(input())"], b"hi", seconds=5, memory=1 << 30, timeout=30)
        (0, b'hi\\n')
    """
    import subprocess

    parent = os.getpid()
    _death_signal_ready()

    def prepare():  # pragma: no cover - between the fork and the exec
        tie_to_parent(parent, watch=False)  # a thread would not survive the exec
        for name, value in (("CPU", int(seconds)), ("AS", int(memory)), ("FSIZE", 0), ("CORE", 0)):
            limits.lower_soft(name, value)

    with parents_garbage_kept():  # ``prepare`` is Python, run in the forked child until the exec
        process = subprocess.Popen(
            argv,
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=subprocess.DEVNULL,
            preexec_fn=prepare if os.name == "posix" else None,
            cwd=cwd,
        )
    try:
        output, _ = process.communicate(data, timeout=timeout)
    except subprocess.TimeoutExpired:
        process.kill()
        process.communicate()
        raise TimeoutError(f"{argv[-1]} did not finish within {timeout:g} s") from None
    except BaseException:
        process.kill()
        process.wait()
        raise
    return process.returncode, output


# --- arrays handed back through memory shared with the parent -----------------------------------------------------

#: Arrays of at least this many bytes start on a page of their own (64 bytes, TensorFlow's alignment, for the rest).
_PAGE_FROM = 1 << 20
_ALIGNMENT = 64


class _Shared:
    """In a probe's child: the memory (a ``memfd``) the parent made before the fork, filled by :func:`hand_over`."""

    def __init__(self, fd):
        self.fd, self.size = fd, 0

    def place(self, nbytes):
        """The offset of ``nbytes`` new bytes at the end, the memory grown to hold them."""
        alignment = mmap.PAGESIZE if nbytes >= _PAGE_FROM else _ALIGNMENT
        offset = -(-self.size // alignment) * alignment
        self.size = offset + nbytes
        os.ftruncate(self.fd, self.size)
        return offset

    def write(self, value, dtype, shape):
        """Copy ``value`` (a dataset or an array) there; the :class:`_Handed` that stands for it."""
        import numpy as np

        nbytes = int(np.prod(shape, dtype=np.int64)) * dtype.itemsize
        offset = self.place(nbytes)
        start = offset - offset % mmap.PAGESIZE
        region = mmap.mmap(self.fd, offset - start + nbytes, offset=start)
        try:
            target = np.frombuffer(region, dtype, count=nbytes // dtype.itemsize, offset=offset - start)
            target = target.reshape(shape)
            if isinstance(value, np.ndarray):
                np.copyto(target, value, casting="no")
            else:
                value.read_direct(target)
            del target
        finally:
            with contextlib.suppress(BufferError):  # a failed read's traceback still views it: unmapped with it
                region.close()
        return _Handed(offset, dtype.str, tuple(shape))


class _Handed:
    """An array in the shared memory, as it crosses the pipe: where it is and what it is."""

    def __init__(self, offset, dtype, shape):
        self.offset, self.dtype, self.shape = offset, dtype, shape


def hand_over(values):
    """Arrays of ``values`` (datasets, or arrays a conversion computed) for the parent: in a probe's child, copied
    into memory shared with it, so that they cross to the parent without a copy through the pipe and without the
    parent opening the file again; elsewhere, read into fresh arrays here. Each comes out as an array that nothing
    else holds, aligned as TensorFlow aligns its own buffers (a caller may hand it to a tensor without a copy).

    Call it once the file's structure is read: it ends the structure's time and memory limits
    (:func:`structure_read`), as copying weight bytes takes as long as the file is large.

    Example:
        >>> import numpy as np
        >>> [array.tolist() for array in hand_over([np.arange(3.0)])]
        [[0.0, 1.0, 2.0]]
    """
    import numpy as np

    structure_read()
    handed = []
    for value in values:
        dtype, shape = np.dtype(value.dtype), tuple(value.shape)
        simple = dtype.kind in "biuf" and not dtype.fields and value.ndim > 0 and value.size > 0
        if not simple:
            handed.append(value[()] if not isinstance(value, np.ndarray) else value)
        elif _shared is not None:
            handed.append(_shared.write(value, dtype, shape))
        else:
            handed.append(_fresh(value, dtype, shape))
    return handed


def _fresh(value, dtype, shape):
    """``value``'s data in a new array, aligned to :data:`_ALIGNMENT` (whole pages from :data:`_PAGE_FROM`)."""
    import numpy as np

    nbytes = int(np.prod(shape, dtype=np.int64)) * dtype.itemsize
    if nbytes >= _PAGE_FROM:
        raw = np.frombuffer(mmap.mmap(-1, nbytes), np.uint8)  # page-aligned
    else:
        raw = np.empty(nbytes + _ALIGNMENT, np.uint8)
        raw = raw[-raw.ctypes.data % _ALIGNMENT :][:nbytes]
    array = raw.view(dtype).reshape(shape)
    if isinstance(value, np.ndarray):
        np.copyto(array, value, casting="no")
    else:
        value.read_direct(array)
    return array


def _shared_memory():
    """A new ``memfd`` for a probe's child to hand arrays back in, or ``None`` where there is none (then they cross
    the pipe)."""
    if not hasattr(os, "memfd_create"):
        return None
    try:
        return os.memfd_create("mgpu-io-arrays", getattr(os, "MFD_CLOEXEC", 0))
    except OSError:
        return None


def _close(fd):
    if fd is not None:
        os.close(fd)


class _Pickler(pickle.Pickler):
    def persistent_id(self, obj):
        if isinstance(obj, _Handed):
            return ("handed", obj.offset, obj.dtype, obj.shape)
        return None


def _dumps(answer):
    buffer = io.BytesIO()
    _Pickler(buffer).dump(answer)
    return buffer.getvalue()


def _loads(data, shared):
    """Unpickle a message of our own child; each handed-over array becomes a view of the shared memory."""
    mapping = []

    class Unpickler(pickle.Unpickler):
        def persistent_load(self, pid):
            import numpy as np

            _, offset, dtype, shape = pid
            if not mapping:
                mapping.append(mmap.mmap(shared, 0))  # the whole memory, shared: it stays while an array views it
            dtype = np.dtype(dtype)
            count = int(np.prod(shape, dtype=np.int64))
            return np.frombuffer(mapping[0], dtype, count=count, offset=offset).reshape(shape)

    return Unpickler(io.BytesIO(data)).load()
