"""Process control of the command line: signals, standard streams, resource limits and TensorFlow's quiet start.

:func:`mgpu_io.cli.app.run` (the console script) sets these up around the app: Ctrl-C, SIGTERM and the CPU-time
limit become :class:`Interrupted`, raised where the program is so that every ``finally`` cleans up; closed standard
streams become /dev/null; a limit of the environment is named in one line.
"""

import contextlib
import os
import signal
import sys


class Interrupted(BaseException):
    """SIGINT (Ctrl-C) or SIGTERM, raised where the program is, so that every ``finally`` cleans up."""

    def __init__(self, signum):
        super().__init__(signum)
        self.signum = signum


def quiet_environment():
    """The environment every command runs in, unless the user set it: TensorFlow's and CUDA's start-up logging
    (``cuInit``, oneDNN, absl lines) silenced, so that commands print their answer only; NumPy's BLAS on one thread
    (the commands' NumPy work copies and reshapes weights, the models run in TensorFlow's or JAX's own threads, and
    OpenBLAS starting a thread per core at NumPy's import took a fifth of a small inspect's CPU time, 0.254 -> 0.198
    CPU-s; under ulimit -v its per-thread buffers could take the whole limit)."""
    os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "3")
    os.environ.setdefault("ABSL_MIN_LOG_LEVEL", "3")
    os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")


def interrupt(signum, frame):
    raise Interrupted(signum)


@contextlib.contextmanager
def quiet_native_logs():
    """Send file descriptor 2 to /dev/null while TensorFlow starts: its C++ start-up lines (cudart, cuInit, absl)
    bypass Python and TF_CPP_MIN_LOG_LEVEL. Python's own sys.stderr is left alone."""
    sys.stderr.flush()
    saved = os.dup(2)
    devnull = os.open(os.devnull, os.O_WRONLY)
    try:
        os.dup2(devnull, 2)
        yield
    finally:
        os.dup2(saved, 2)
        os.close(saved)
        os.close(devnull)


def start_quietly(module):
    """Import ``"keras"`` (and touch a device) or ``"tensorflow"`` quietly, before a command that needs it. A missing
    or broken package is left for the library to report, in one line."""
    with quiet_native_logs():
        try:
            if module == "keras":
                import keras

                keras.ops.zeros((1,))
            else:
                import tensorflow  # noqa: F401
        except Exception:
            pass


def limit_error(error):
    """A ``MemoryError`` (or a library that could not be mapped) under the user's ``ulimit -v``, or no file
    descriptor left under ``ulimit -n``, as the :class:`~mgpu_io.errors.LimitReached` that names the limit."""
    from mgpu_io import upstream
    from mgpu_io.errors import LimitReached
    from mgpu_io.format import limits

    problem, flag = None, None
    if isinstance(error, MemoryError) or (
        isinstance(error, ImportError)
        and limits.soft_limit("AS") is not None
        and not upstream.said(upstream.NO_MODULE, error)
    ):
        problem, flag = limits.memory_problem(), "-v"
    elif isinstance(error, OSError):
        problem, flag = limits.descriptor_problem(error), "-n"
    if problem is None:
        return None
    return LimitReached(
        problem=f"A limit of this environment stopped the command: {problem}",
        expected="room to run",
        received=type(error).__name__,
        fix=f"Raise the limit ({limits.raise_hint(flag)}) and run again",
    )


#: SIGPIPE's number (13 on Linux): a reader that went away ends the command as it ends any Unix filter.
SIGPIPE = getattr(signal, "SIGPIPE", 13)


def signal_text(signum):
    if signum == getattr(signal, "SIGXCPU", None):
        from mgpu_io.format.limits import cpu_problem

        return f"the CPU-time limit: {cpu_problem() or 'ulimit -t'}"
    return "Ctrl-C" if signum == signal.SIGINT else "SIGTERM"


def guard_streams():
    """Closed standard streams become /dev/null, so that nothing we open takes their numbers (a file opened as
    descriptor 2 would receive libhdf5's and TensorFlow's messages); and under a non-UTF-8 locale, text that the
    terminal's encoding cannot show is written as UTF-8 bytes (file names too, as they were given), never an
    encoding error."""
    for fd, name in ((0, "stdin"), (1, "stdout"), (2, "stderr")):
        try:
            os.fstat(fd)
        except OSError:
            devnull = os.open(os.devnull, os.O_RDWR)
            if devnull != fd:
                os.dup2(devnull, fd)
                os.close(devnull)
            if getattr(sys, name) is None:
                setattr(sys, name, open(fd, "r" if fd == 0 else "w", closefd=False))  # noqa: SIM115
    for stream in (sys.stdout, sys.stderr):
        encoding = (getattr(stream, "encoding", None) or "utf-8").lower().replace("_", "-")
        if encoding not in ("utf-8", "utf8") and hasattr(stream, "reconfigure"):
            import codecs

            codecs.register_error("mgpu-io-utf8", _as_utf8)
            stream.reconfigure(errors="mgpu-io-utf8")


def _as_utf8(error):
    """An encoding error handler: what the stream's encoding cannot hold is written as UTF-8 (a lone surrogate, an
    undecoded byte of a file name, as that byte)."""
    text = error.object[error.start : error.end]
    return text.encode("utf8", "surrogateescape"), error.end


def guard_cpu_limit():
    """Under ``ulimit -t`` the kernel sends SIGXCPU at the soft limit and SIGKILL at the hard one; with both equal
    (as the shell sets them) the kill comes first. The soft limit is lowered a second below the hard one (lowered
    only), so that SIGXCPU comes, and ends the command like SIGTERM: with whole outputs and one line."""
    if not hasattr(signal, "SIGXCPU"):
        return
    signal.signal(signal.SIGXCPU, interrupt)
    import resource

    soft, hard = resource.getrlimit(resource.RLIMIT_CPU)
    if soft == hard and soft != resource.RLIM_INFINITY and soft > 1:
        with contextlib.suppress(OSError, ValueError):
            resource.setrlimit(resource.RLIMIT_CPU, (soft - 1, hard))
