"""Inside the sandbox: the probe's child (or a folder's supervised worker) runs the work here, and the work says
from here what the parent needs to know.

:func:`_child` is a probe's child's whole life, whoever forked it (:func:`~mgpu_io.format.sandbox.probe.probed`
in this process, or the fork server): it becomes a child (:mod:`.child`), caps its address space while the file's
structure is read, runs the work, sends its answer or its error on the pipe (:mod:`.shared`) and exits. The work
calls :func:`structure_read` once it has read what a plan reads (the time and memory limits end there),
:func:`relayed` for a callback that reaches the parent's ``progress``, and :func:`hand_over` for weight arrays the
parent builds from. In a supervised worker (:func:`supervise`) the work runs in the worker itself, and the same calls
tell its supervisor. Outside a child each is what it would be without a sandbox.
"""

import os

from mgpu_io.errors import LimitReached, NotAModelFile
from mgpu_io.format import limits
from mgpu_io.format.sandbox.child import become_child
from mgpu_io.format.sandbox.shared import _fresh, _send, _Shared

#: Memory the child may add to what the process already maps, while it reads the structure.
EXTRA_MEMORY = 2 << 30

_pipe = None  # in a probe's child: the write end of the pipe to the parent
_supervisor = None  # in a supervised worker: sends ("start" | "read", None) to its supervisor
_memory_limit = None  # what limits.lower_soft returned for the probe's cap (False: the user's limit was lower)
_shared = None  # in a probe's child: the memory shared with the parent, where hand_over puts arrays


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
    """Make this process a supervised worker: :func:`~mgpu_io.format.sandbox.probe.probed` runs its work here, under
    the memory limit until the structure is read, and ``send`` tells the supervisor ``("start", None)`` and
    ``("read", None)``; the supervisor keeps the time limit and notices a crash (see :mod:`mgpu_io.format.batch`)."""
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
    return _to_parent


def to_parent():
    """In a fork server's child: the callback that stands for the parent's ``progress``, which stayed there (see
    :func:`~mgpu_io.format.sandbox.fork_server._crossing`): :func:`relayed`'s own."""
    return _to_parent


def _to_parent(*args):
    """Send ``args`` to the parent's ``progress`` through the pipe."""
    if _pipe is not None:
        _send(_pipe, ("progress", args))


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


class ByName:
    """Work named by its module and function, with its arguments (:func:`by_name`): the process that asks for it
    need not import the module; the child that runs it does (a fork server's has, before it was asked)."""

    def __init__(self, module, function, *args):
        self.module, self.function, self.args = module, function, args

    def __call__(self):
        import importlib

        return getattr(importlib.import_module(self.module), self.function)(*self.args)


def by_name(module, function, *args):
    """``module.function(*args)`` as work for :func:`~mgpu_io.format.sandbox.probe.probed`, without importing
    ``module`` here (one of mgpu-io's own: the name is the caller's code, never a file's).

    Example:
        >>> by_name("mgpu_io.format.text", "plural", 2, "layer")()
        '2 layers'
    """
    return ByName(module, function, *args)
