"""The resource limits the user's environment set (``ulimit``): kept, never raised, and named when they are what
stopped the work.

A shared login node or a batch job may run mgpu-io under ``ulimit -v`` (address space), ``-f`` (file size), ``-n``
(open files) or ``-t`` (CPU seconds). mgpu-io only ever lowers a limit for a while (the probe's memory cap) and gives
it back; it never asks for more than it was given, which no unprivileged process may. When one of these limits is
what ended the work, the error says which one, with its value, instead of a bare ``MemoryError`` or
``Too many open files``.

Standard library only; where ``resource`` does not exist, every limit reads as unlimited.
"""

import errno
import os
from types import ModuleType
from typing import Optional


def _import_resource() -> Optional[ModuleType]:
    try:
        import resource
    except ImportError:  # pragma: no cover - not on Linux
        return None
    return resource


resource = _import_resource()

#: ``ulimit`` flags and units of the limits that mgpu-io can run into.
_ULIMIT = {"AS": ("-v", "KiB", 1024), "FSIZE": ("-f", "KiB", 1024), "NOFILE": ("-n", "", 1), "CPU": ("-t", "s", 1)}
#: Errnos that mean: no more file descriptors (this process's limit, or the system's).
NO_DESCRIPTORS = (errno.EMFILE, errno.ENFILE)


def soft_limit(name):
    """The soft limit ``RLIMIT_<name>`` of this process, or ``None`` when it is unlimited (or unknown here)."""
    if resource is None or not hasattr(resource, f"RLIMIT_{name}"):
        return None
    soft, _ = resource.getrlimit(getattr(resource, f"RLIMIT_{name}"))
    return None if soft == resource.RLIM_INFINITY else soft


def lower_soft(name, wanted):
    """Set the soft limit ``RLIMIT_<name>`` to ``wanted`` where that lowers it, keeping the hard limit as it is.

    Returns the soft limit it had before (to give back with :func:`restore_soft`), or ``False`` when nothing was
    changed (the limit is already at or below ``wanted``, or cannot be read here).

    Example:
        >>> before = lower_soft("AS", 1 << 62)   # the current soft limit, or False when it is already lower
        >>> restore_soft("AS", before)
    """
    if resource is None or not hasattr(resource, f"RLIMIT_{name}"):
        return False
    which = getattr(resource, f"RLIMIT_{name}")
    try:
        soft, hard = resource.getrlimit(which)
        if hard != resource.RLIM_INFINITY:
            wanted = min(wanted, hard)
        if soft != resource.RLIM_INFINITY and soft <= wanted:
            return False
        resource.setrlimit(which, (wanted, hard))
    except (OSError, ValueError):
        return False
    return soft


def restore_soft(name, before):
    """Give ``RLIMIT_<name>`` back the soft limit :func:`lower_soft` returned (nothing when it returned ``False``).
    Raising a soft limit up to its hard limit is always allowed; the hard limit is left as it is."""
    if before is False or before is None or resource is None:
        return
    which = getattr(resource, f"RLIMIT_{name}")
    try:
        _, hard = resource.getrlimit(which)
        if hard != resource.RLIM_INFINITY and (before == resource.RLIM_INFINITY or before > hard):
            before = hard
        resource.setrlimit(which, (before, hard))
    except (OSError, ValueError):  # pragma: no cover - the soft limit stays lower, which is allowed
        pass


def ulimit(name, value=None):
    """The limit as the shell sets it (``ulimit -v`` counts KiB).

    Example:
        >>> ulimit("AS", 4096000 * 1024), ulimit("NOFILE", 16), ulimit("CPU", 5)
        ('ulimit -v 4096000', 'ulimit -n 16', 'ulimit -t 5')
    """
    value = soft_limit(name) if value is None else value
    flag, _, scale = _ULIMIT[name]
    return f"ulimit {flag} unlimited" if value is None else f"ulimit {flag} {value // scale}"


def _size(nbytes):
    for unit, shift in (("GiB", 30), ("MiB", 20), ("KiB", 10)):
        if nbytes >= 1 << shift:
            return f"{nbytes / (1 << shift):.1f} {unit}"
    return f"{nbytes} bytes"


def descriptor_problem(error):
    """For an ``OSError`` that says no file descriptor is left (``EMFILE``, ``ENFILE``, or h5py's text of them):
    what to tell the user, naming ``ulimit -n``; else ``None``."""
    number = getattr(error, "errno", None)
    text = str(error)
    if number not in NO_DESCRIPTORS and "Too many open files" not in text:
        return None
    if number == errno.ENFILE or "in system" in text:
        return "the system's table of open files is full"
    return f"this process may open at most {soft_limit('NOFILE')} files ({ulimit('NOFILE')})"


def memory_problem(needed=None):
    """What to tell the user when memory ran out under the user's ``ulimit -v``; ``None`` when no such limit is
    set (then the machine itself, or the file's declared sizes, are to blame)."""
    limit = soft_limit("AS")
    if limit is None:
        return None
    text = f"this process may map at most {_size(limit)} of memory ({ulimit('AS')})"
    if needed:
        text += f" and the file needs about {_size(needed)} more"
    return text


def file_size_problem():
    """The file-size limit (``ulimit -f``), for a write that failed with ``EFBIG``; ``None`` when none is set."""
    limit = soft_limit("FSIZE")
    if limit is None:
        return None
    return f"the file is larger than the {_size(limit)} this process may write ({ulimit('FSIZE')})"


def cpu_problem():
    """The CPU-time limit (``ulimit -t``), for work that a ``SIGXCPU`` (or the ``SIGKILL`` after it) ended. The
    hard limit is the one named where it is set: the command line lowers the soft one a second below it."""
    if soft_limit("CPU") is None:
        return None
    soft, hard = resource.getrlimit(resource.RLIMIT_CPU)
    limit = hard if hard != resource.RLIM_INFINITY else soft
    return f"the {limit} s of CPU time this process may use ran out ({ulimit('CPU', limit)})"


def raise_hint(flag):
    """How to raise the limit of ``ulimit`` flag ``flag``: ``"ulimit -n 1024"`` (no system allows unlimited
    descriptors), else ``"ulimit -v unlimited"``."""
    return "ulimit -n 1024" if flag == "-n" else f"ulimit {flag} unlimited"


def free_descriptors():
    """How many more files this process may open under ``ulimit -n`` (a large number where that is unknown)."""
    limit = soft_limit("NOFILE")
    if limit is None:
        return 1 << 30
    try:
        return limit - len(os.listdir("/proc/self/fd"))
    except OSError:
        return 1 << 30
