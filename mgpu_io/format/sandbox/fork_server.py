"""A small process to fork from: the fork server of a large process.

A large process (one that has imported TensorFlow) forks its probes' children from its **fork server**
(:class:`_ForkServer`) instead of itself: a fork copies the page tables of all the forking process maps, which cost
such a process more kernel time per file than the reading itself. The server is a small Python process of its own,
started in the background once the process has read :data:`SERVER_AFTER` files; its child runs the same work
(:func:`~mgpu_io.format.sandbox.inside._child`), in the caller's folder and environment, with the same pipe, shared
memory, limits and errors. The server is tied to its parent's life, and ends silently when its parent has gone.

The command line forks its server as it starts (:func:`start_early`); for ``unwrap`` of a folder the server also
forks the folder's workers (:func:`fork_worker`), which live on beside it until their supervisor stops them.
"""

import contextlib
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

from mgpu_io.format.sandbox import inside
from mgpu_io.format.sandbox.child import _death_signal_ready, become_child, forking, parents_garbage_kept
from mgpu_io.format.sandbox.shared import _FRAME, _close

_NUMBER = struct.Struct("<q")  # what the fork server says: a pid, a wait status
#: What a request to the fork server asks (its first byte): a probe's child (the server says its pid, then its wait
#: status), a folder's worker (its pid; the worker lives on), a worker's wait status once it has ended.
_PROBE, _WORKER, _STATUS = b"p", b"w", b"s"

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
    probe's child when asked. The child runs the work as a child forked here would
    (:func:`~mgpu_io.format.sandbox.inside._child`), in this process's folder and environment, and writes to the same
    pipe and shared memory (their descriptors cross the socket); the server says its pid and, once it has ended, its
    wait status.

    The work crosses as a pickle. Work that does not (a closure, or a function outside mgpu-io), a call from
    another thread than the main one (the server is tied to the thread that started it) or while another call
    uses the server, an HDF5 file open in this process (:func:`_hdf5_open_here`), or a server that cannot start:
    the child is forked here, as in a small process. What the work reads of this process's state is what it is
    given: a module's setting changed here at run time is not the server's (tests that change one fork here).
    """

    _current = None  # (the pid of the process it serves, the server or False where none could start)
    _counted = (None, 0)  # (a process's pid, how many of its reads wanted the server)

    early = False  # started as the process started (start_early), not after its reads

    def __init__(self, process, sock):
        self.process, self.sock, self.lock = process, sock, threading.Lock()
        self.started, self.ready = time.monotonic(), False

    @classmethod
    def start_child(cls, path, work, write_end, shared, progress=None):
        """The child running ``work()``, started by the server: a :class:`_Served`, or ``None`` (fork here).
        ``progress``, the caller's callback, stays here: where the work holds it, the child holds one that sends its
        arguments back through the pipe (:func:`~mgpu_io.format.sandbox.inside.to_parent`), as
        :func:`~mgpu_io.format.sandbox.inside.relayed` does in a child forked here."""
        early = cls._early_here()
        if not (early or _large()) or threading.current_thread() is not threading.main_thread() or _hdf5_open_here():
            return None
        try:
            request = _crossing((str(path), work, dict(os.environ), os.getcwd()), stays=progress)
        except Exception:
            return None
        server = cls.start_now() if early else cls._for_this_process()
        if server is None or not server.lock.acquire(blocking=False):
            return None
        try:
            pid = server._ask(_PROBE, request, [write_end] + [shared] * (shared is not None))
        except (OSError, EOFError):
            server.lock.release()
            server.end()
            return None
        if pid < 0:  # it could not fork (ulimit -u): nor will this process, as a rule, but it tries
            server.lock.release()
            return None
        return _Served(server, pid)

    @classmethod
    def fork_worker(cls, target, args, fds):
        """A folder's worker forked by the server this process started early (:meth:`start_early`), which has
        imported the repair while this process imported the command line: ``target(its parent, *fds, *args)`` runs
        there, in this process's folder and environment, with ``fds`` (its pipe, its board) crossed over the socket.
        A :class:`_ServedWorker`; ``None`` where it cannot be (no early server, no ``pidfd_open``, work that does not
        cross, another thread): then the caller forks the worker itself."""
        if not cls._early_here() or threading.current_thread() is not threading.main_thread():
            return None
        if not hasattr(os, "pidfd_open"):
            return None  # its end could not be waited for with the others' (Linux 5.3, Python 3.9)
        try:
            request = _crossing(((target, args), dict(os.environ), os.getcwd()))
        except Exception:
            return None
        server = cls.start_now()
        if server is None or not server.lock.acquire(blocking=False):
            return None
        try:
            pid = server._ask(_WORKER, request, fds)
        except (OSError, EOFError):
            server.lock.release()
            server.end()
            return None
        server.lock.release()
        if pid < 0:
            return None
        worker = _ServedWorker(server, pid)
        try:
            worker.sentinel = os.pidfd_open(pid)
        except OSError:  # a kernel without it: this one is ended, and the caller forks its workers itself
            worker.kill()
            worker.join()
            return None
        return worker

    def _ask(self, kind, request, fds=()):
        """Send a request of ``kind`` (its pickle, and ``fds``) and read the server's first answer (a pid, or a
        wait status). The caller holds :attr:`lock`."""
        socket.send_fds(self.sock, [kind + _FRAME.pack(len(request))], list(fds))
        self.sock.sendall(request)
        return _read_number(self.sock)

    def wait_for(self, pid):
        """The wait status of worker ``pid`` (:meth:`fork_worker`) once it has ended (the server reaps it);
        ``None`` where the server has ended (and with it its workers)."""
        if not self.lock.acquire(timeout=SERVER_WAIT):
            return None
        try:
            return self._ask(_STATUS, _NUMBER.pack(pid))
        except (OSError, EOFError):
            self.end()
            return None
        finally:
            self.lock.release()

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
    def start_early(cls, modules):
        """Fork this process, small as it is, into its fork server now, importing ``modules`` there (while this
        process goes on importing what it needs); its probes' children are forked from it. Nothing where a server
        is already started here, where no process can be forked, or with ``MGPU_IO_PROBE=0``."""
        import atexit

        if (cls._current is not None and cls._current[0] == os.getpid()) or not forking():
            return
        try:
            here, there = socket.socketpair()
        except OSError:
            return
        try:
            with parents_garbage_kept():
                pid = os.fork()
        except OSError:  # ulimit -u: the probes fork here, as without a server
            here.close()
            there.close()
            return
        if pid == 0:  # pragma: no cover - the fork server
            try:
                here.close()
                _close_inherited(there.fileno())  # as a server started as a program: only what it serves with
                _quiet_streams()  # as a server started as a program: its output is not the command's
                _serve(there.fileno(), modules)
            finally:
                os._exit(0)
        there.close()
        here.settimeout(SERVER_WAIT)
        server = cls(_ForkedServer(pid), here)
        server.early = True
        cls._current = (os.getpid(), server)
        atexit.register(server.end)

    @classmethod
    def _early_here(cls):
        """Whether this process started its fork server early (:meth:`start_early`), and it has not ended."""
        owner, server = cls._current or (None, None)
        return owner == os.getpid() and bool(server) and server.early

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
        boot = (
            f"import sys; sys.path[:] = {sys.path!r}; from mgpu_io.format.sandbox import fork_server;"
            f" fork_server._serve({there.fileno()})"
        )
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
        """Close the socket (the server ends when it sees it closed) and wait for the server to end. A server
        started early may still be importing when the command is done (a refused argument): it is killed."""
        self.sock.close()
        if self.early and not self.lock.locked():
            self.process.kill()
        try:
            self.process.wait(timeout=5)
        except Exception:
            self.process.kill()
            self.process.wait()


class _ForkedServer:
    """The process of a fork server forked from this one (:meth:`_ForkServer.start_early`), as ``subprocess.Popen``
    answers for one started as a program: ``poll``, ``wait``, ``kill``."""

    def __init__(self, pid):
        self.pid, self.returncode = pid, None

    def poll(self):
        if self.returncode is None:
            try:
                pid, status = os.waitpid(self.pid, os.WNOHANG)
            except ChildProcessError:
                pid, status = self.pid, 0
            if pid:
                self.returncode = os.waitstatus_to_exitcode(status)
        return self.returncode

    def wait(self, timeout=None):
        deadline = None if timeout is None else time.monotonic() + timeout
        while self.poll() is None:
            if deadline is not None and time.monotonic() > deadline:
                raise TimeoutError(f"the fork server {self.pid} did not end")
            time.sleep(0.002)
        return self.returncode

    def kill(self):
        with contextlib.suppress(ProcessLookupError, PermissionError):
            os.kill(self.pid, signal.SIGKILL)


class _ServedWorker:
    """A folder's worker that the fork server forked (:meth:`_ForkServer.fork_worker`), answering as
    ``multiprocessing``'s ``Process`` answers for one forked here: ``pid``, ``sentinel`` (a pidfd, readable once it
    has ended), ``is_alive``, ``exitcode`` (negative: the signal that ended it), ``kill`` and ``join``. Its wait
    status is the server's to collect, and to say."""

    def __init__(self, server, pid):
        self.server, self.pid, self.sentinel, self.exitcode = server, pid, None, None

    def is_alive(self):
        if self.exitcode is None and select.select([self.sentinel], [], [], 0)[0]:
            self._reap()
        return self.exitcode is None

    def join(self, timeout=None):
        if self.exitcode is None and (self.sentinel is None or select.select([self.sentinel], [], [], timeout)[0]):
            self._reap()
        if self.exitcode is not None and self.sentinel is not None:
            os.close(self.sentinel)
            self.sentinel = None

    def kill(self):
        if self.exitcode is None:
            with contextlib.suppress(ProcessLookupError, PermissionError):
                os.kill(self.pid, signal.SIGKILL)  # not yet reaped: the pid is still its own

    def _reap(self):
        status = self.server.wait_for(self.pid)
        self.exitcode = -signal.SIGKILL if status is None else os.waitstatus_to_exitcode(status)


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
    stays = None  # the caller's progress callback: it crosses as the child's way to reach it

    def reducer_override(self, obj):
        if obj is self.stays and obj is not None:
            return inside.to_parent, ()
        if isinstance(obj, (type, types.FunctionType, types.BuiltinFunctionType, types.MethodType)):
            module = getattr(obj, "__module__", None) or ""
            if module.split(".")[0] not in _CROSSES:
                raise pickle.PicklingError(f"{module}.{getattr(obj, '__qualname__', obj)} stays in this process")
        return NotImplemented


def _crossing(value, stays=None):
    """``value`` pickled for the fork server, which imports no module outside :data:`_CROSSES` for it; the object
    ``stays`` (a progress callback of this process) crosses as the child's callback that reaches it."""
    buffer = io.BytesIO()
    pickler = _CrossingPickler(buffer, protocol=pickle.HIGHEST_PROTOCOL)
    pickler.stays = stays
    pickler.dump(value)
    return buffer.getvalue()


def started_early():
    """Whether this process forked its fork server as it started (:func:`start_early`) and it has not ended: its
    probes' children come from it, which has imported what reads the file, so this process need not."""
    return _ForkServer._early_here()


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


def _serve(fd, modules=None):  # pragma: no cover - runs in the fork server
    """The fork server's life: take a request (the work, the pipe and the shared memory), fork the child that runs
    it, say its pid, wait for it, say its wait status; until the socket closes."""
    sock = socket.socket(fileno=fd)
    become_child(os.getppid(), interrupt=signal.SIG_IGN)  # Ctrl-C reaches its children, not it
    _death_signal_ready()
    _preload(modules)
    sock.sendall(_NUMBER.pack(os.getpid()))
    while True:
        try:
            header, fds, _, _ = socket.recv_fds(sock, 1 + _FRAME.size, 2)
            if not header:
                break
            header += _receive(sock, 1 + _FRAME.size - len(header))
            kind, (size,) = header[:1], _FRAME.unpack(header[1:])
            request = _receive(sock, size)
        except (OSError, EOFError, struct.error):
            break
        try:  # the process it serves may have ended meanwhile: then so does the server, silently
            if kind == _STATUS:
                sock.sendall(_NUMBER.pack(_status(_NUMBER.unpack(request)[0])))
            elif kind == _WORKER:
                sock.sendall(_NUMBER.pack(_fork_worker(sock, request, fds)))
            else:
                _fork_probe(sock, request, fds)
        except OSError:
            break
    os._exit(0)


def _fork_probe(sock, request, fds):  # pragma: no cover - runs in the fork server
    """Fork a probe's child for ``request``, say its pid, wait for it, say its wait status."""
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
        inside._child(path, work, write_end, os.getppid(), shared)  # never returns
    os.close(write_end)
    _close(shared)
    try:
        sock.sendall(_NUMBER.pack(pid))
        if pid > 0:
            sock.sendall(_NUMBER.pack(os.waitpid(pid, 0)[1]))
    except OSError:
        if pid > 0:
            with contextlib.suppress(ChildProcessError):
                os.waitpid(pid, 0)
        raise


def _fork_worker(sock, request, fds):  # pragma: no cover - runs in the fork server
    """Fork a folder's worker for ``request`` (``((target, args), environment, folder)``): its pid, or -1. The
    worker runs ``target(the server's pid, *fds, *args)`` and exits 0, or 1 where that raised."""
    try:
        pid = os.fork()
    except OSError:
        pid = -1
    if pid == 0:
        code = 1
        try:
            sock.close()
            (target, args), environment, folder = pickle.loads(request)  # from the process it serves
            _as_asked(environment, folder)
            target(os.getppid(), *fds, *args)
            code = 0
        finally:
            os._exit(code)
    for fd in fds:
        os.close(fd)
    return pid


def _status(pid):  # pragma: no cover - runs in the fork server
    """The wait status of its child ``pid``, once it has ended (as killed, where it is no child of the server)."""
    try:
        return os.waitpid(pid, 0)[1]
    except ChildProcessError:
        return signal.SIGKILL


def _preload(modules=None):  # pragma: no cover - runs in the fork server
    """Import what the children read with, once, here: each child starts with it (h5py alone takes a third of a
    second to import). ``modules``: those alone (a server started early knows its one command), else all of
    ``format/``."""
    import importlib
    import pkgutil

    import mgpu_io.format
    from mgpu_io.format import h5py_import

    h5py_import.install()  # the server is mgpu-io's alone: its import of h5py starts no subprocess
    if modules is None:
        modules = [module.name for module in pkgutil.walk_packages(mgpu_io.format.__path__, "mgpu_io.format.")]
    for name in modules:
        with contextlib.suppress(Exception):
            importlib.import_module(name)


def _close_inherited(keep):  # pragma: no cover - runs in the fork server
    """Close every descriptor a forked server inherited but its standard streams and ``keep`` (its socket): a copy of
    a pipe held here would keep the pipe's other end from seeing it closed (a program that the caller started and
    then told to stop by closing its input would wait for the server's end)."""
    os.closerange(3, keep)
    os.closerange(keep + 1, _descriptor_limit())


def _descriptor_limit():  # pragma: no cover - runs in the fork server
    try:
        return max(os.sysconf("SC_OPEN_MAX"), 256)
    except (ValueError, OSError):
        return 1 << 16


def _quiet_streams():  # pragma: no cover - runs in the fork server
    """Standard input and output on ``/dev/null`` (a reader of the command's output sees its end when the command
    ends, not when its server does); standard error stays, for what a crash prints."""
    devnull = os.open(os.devnull, os.O_RDWR)
    for fd in (0, 1):
        os.dup2(devnull, fd)
    os.close(devnull)


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


def start_early(modules):
    """Fork this process into its fork server now (:meth:`_ForkServer.start_early`), importing ``modules`` there:
    the command line's ``inspect`` and ``unwrap`` of a file do, before they import the command line, so that the
    two imports run at once and its own process never imports h5py or NumPy. The probe's child is forked from the
    server, under the same limits, as any probe's (:func:`~mgpu_io.format.sandbox.probe.probed`)."""
    _ForkServer.start_early(modules)


def fork_worker(target, args, fds):
    """A folder's worker forked by this process's early fork server (:meth:`_ForkServer.fork_worker`), or ``None``:
    then the caller forks it itself."""
    return _ForkServer.fork_worker(target, args, fds)
