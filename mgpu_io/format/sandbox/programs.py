"""The other children: a folder's supervised workers, and other programs run under limits.

- **Supervised workers** (:func:`start_worker`, used by :mod:`mgpu_io.format.batch`): a fork per small file costs more
  than a third of its repair, so a folder's workers repair file after file. In such a worker
  (:func:`~mgpu_io.format.sandbox.inside.supervise`) the work runs in the worker itself, which reports when a file's
  reading starts and when its structure is read; the supervisor keeps the time limit and notices a crash, with the
  probe's errors.
- **Another program** (:func:`run_program`): a separate interpreter (the Lambda decompiler, ``python -I``), whose
  limits (CPU time, address space, no file written, no core) are set between the fork and the exec, and which is
  killed past a wall-clock limit. Limits are only ever lowered (:mod:`mgpu_io.format.limits`): a limit the user's
  environment set is never raised.

Both are tied to this process's life and leave its garbage alone (:mod:`.child`).
"""

import os
import signal
import warnings

from mgpu_io.format import limits
from mgpu_io.format.sandbox.child import _death_signal_ready, become_child, parents_garbage_kept, tie_to_parent


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
    become_worker(parent)
    target(*args)


def become_worker(parent):  # pragma: no cover - runs in a worker process
    """What a folder's worker does first, whoever forked it (this process, or its fork server): it becomes a
    child of ``parent`` that leaves Ctrl-C to its supervisor."""
    become_child(parent, interrupt=signal.SIG_IGN)


def run_program(argv, data, *, seconds, memory, timeout, cwd=None):
    """Run another program (``argv``: an interpreter and its script) with ``data`` on its standard input, under
    limits set between the fork and the exec: ``seconds`` of CPU time, ``memory`` bytes of address space, no file
    written, no core dumped (each only lowered, never raised above what this process has), tied to this process's
    life, and killed after ``timeout`` seconds of wall-clock time; in folder ``cwd`` when given.

    Returns ``(exit status, standard output)`` (a negative status: the signal that ended it). Raises
    ``TimeoutError`` past ``timeout`` (the program is killed first), ``OSError`` when it cannot start.

    Example:
        >>> import sys
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
