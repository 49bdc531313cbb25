"""Every child's hygiene: what a forked child does first, whoever started it (a probe's child, a fork server's, a
folder's worker, a program between its fork and its exec).

Each child is tied to its parent's life (:func:`tie_to_parent`): on Linux the kernel kills it when the parent dies
(``PR_SET_PDEATHSIG``), so a ``kill -9`` of the command leaves no child reading on; elsewhere a watch thread ends a
forked child whose parent is gone. A forked child never collects its parent's garbage (:func:`parents_garbage_kept`):
what TensorFlow left for the collector crashes the process that frees it without TensorFlow's threads. Its crash is
its parent's to report, and its signals are its own (:func:`become_child`).
"""

import contextlib
import gc
import os
import signal
import sys
import threading
import time

#: Linux's ``prctl`` option that sends the child a signal when its parent dies.
_PR_SET_PDEATHSIG = 1


def forking():
    """Whether files are read in forked processes: where ``os.fork`` exists, unless ``MGPU_IO_PROBE=0`` turns it off
    (then the work runs in this process, without a time limit, and a folder's files are repaired one by one)."""
    return hasattr(os, "fork") and os.environ.get("MGPU_IO_PROBE", "1") != "0"


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
