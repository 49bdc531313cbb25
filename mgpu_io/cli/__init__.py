"""The ``mgpu-io`` command line (typer and rich only; every command is one library call)."""

import os
import sys
import types

__all__ = ["app", "run"]


def run():
    """The console script: :func:`mgpu_io.cli.app.run`, with the fork server of a command that reads a file started
    first (:func:`_start_early`), and h5py's import made without the subprocess it starts
    (:mod:`mgpu_io.format.h5py_import`)."""
    _start_early(sys.argv[1:])
    from mgpu_io.format import h5py_import

    h5py_import.install()  # this process is the command line's alone: its import of h5py starts no subprocess
    from mgpu_io.cli.app import run as run_app

    run_app()


def _start_early(arguments):
    """Start the fork server of the command named in ``arguments`` (the first that is not an option) where it has one,
    so that it imports what reads the file while this process imports typer and the command line: on this project's
    2-core machine, ``inspect`` of a 34 KB file took 0.225 s against 0.269 s before, and 0.186 s against 0.196 s an hour
    later (medians of 20 runs in turn; the machine's speed drifts); ``unwrap`` of it to ``.h5`` 0.191 s against 0.204 s
    (20 pairs). Not for ``--help``, nor with ``MGPU_IO_PROBE=0``."""
    command = next((argument for argument in arguments if not argument.startswith("-")), None)
    if command is None or {"--help", "-h"} & set(arguments) or _processors() < 2:
        return  # on one processor the two imports would take turns: the child imports the reader after the fork
    from mgpu_io.format.early import early_modules  # the library's answer: the standard library only

    modules = early_modules(command, arguments[arguments.index(command) + 1 :], format=_option(arguments, "--format"))
    if modules is None or not _standard_streams_open():
        return  # the server's socket must not take a standard stream's number, which guard_streams fills later
    from mgpu_io.cli.process import quiet_environment
    from mgpu_io.format.sandbox.fork_server import start_early

    quiet_environment()  # the server's imports (NumPy's BLAS threads) follow it
    start_early(modules)


def _option(arguments, flag):
    """The value given to ``flag`` in ``arguments`` (``--flag VALUE`` or ``--flag=VALUE``), or ``None``."""
    for index, argument in enumerate(arguments):
        if argument == flag:
            return arguments[index + 1] if index + 1 < len(arguments) else ""
        if argument.startswith(flag + "="):
            return argument[len(flag) + 1 :]
    return None


def _standard_streams_open():
    for fd in (0, 1, 2):
        try:
            os.fstat(fd)
        except OSError:
            return False
    return True


def _processors():
    """The processors this process may run on (its affinity, where the system says it)."""
    try:
        return len(os.sched_getaffinity(0))
    except (AttributeError, OSError):
        return os.cpu_count() or 1


class _Package(types.ModuleType):
    """This package, whose ``app`` is the typer app (imported on first use, not as the package is): importing the
    module ``mgpu_io.cli.app`` binds its name here to the module, which this ignores."""

    @property
    def app(self):
        from mgpu_io.cli.app import app

        return app

    @app.setter
    def app(self, value):
        pass


sys.modules[__name__].__class__ = _Package
