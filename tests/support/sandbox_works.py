"""Work for the sandbox's child that can cross to the fork server (module-level functions of a module on the path;
tests/safety/test_fork_server.py lets this module cross, as mgpu_io's own modules do)."""

import os
import time

import numpy as np


def parent_and_folder():
    """The child's parent's pid, its folder and one variable of its environment."""
    return os.getppid(), os.getcwd(), os.environ.get("MGPU_IO_TEST_MARK")


def handed(path):
    """The file's weight arrays, read here and handed over through the shared memory, with a copy by pickle."""
    import h5py

    from mgpu_io.format import sandbox

    with h5py.File(path, "r") as h5:
        names = []
        h5["model_weights"].visit(names.append)
        datasets = [h5["model_weights"][n] for n in names if isinstance(h5["model_weights"][n], h5py.Dataset)]
        return [d[()] for d in datasets], sandbox.hand_over([*datasets, np.arange(5.0) * 2])


def hang():
    time.sleep(600)


def crash():
    os.abort()


def write_pid_and_wait(path):
    with open(path, "w") as said:
        said.write(str(os.getpid()))
    time.sleep(60)


def nap():
    time.sleep(0.5)
