"""Child processes die with the command (issue 34): the sandbox's child, a folder's worker and the decompiler
program are tied to their parent's life by the one mechanism (``format/sandbox/``). A ``kill -9`` of the command
(an out-of-memory killer, a batch system's hard stop) leaves no child reading a possibly hostile file on.

Each test starts a parent process whose child writes its pid and then waits a minute, kills the parent with SIGKILL
(nothing of the parent runs after it), and sees the child gone within seconds.
"""

import os
import signal
import subprocess
import sys
import textwrap
import time

import numpy as np
import pytest
from helpers import ROOT

from mgpu_io.format import sandbox
from mgpu_io.format.sandbox import probe, programs, shared

pytestmark = pytest.mark.skipif(not hasattr(os, "fork"), reason="children are forked where os.fork exists")

#: A child that says its pid, then waits far longer than any test.
WAIT = "import os, sys, time; open(sys.argv[1], 'w').write(str(os.getpid())); time.sleep(60)"
#: The program may write no file (its limits): it is found among its parent's children once it runs this.
PROGRAM_WAIT = "import time; time.sleep(60)"

PARENTS = {
    "the sandbox's child": f"""
        import sys
        from mgpu_io.format import sandbox
        def work():
            {WAIT.replace("sys.argv[1]", "sys.argv[2]")}
        sandbox.probed("hostile.h5", work)
    """,
    "the fork server's child": """
        import functools, sys
        sys.path.insert(0, "TESTS_SUPPORT")
        import sandbox_works
        from mgpu_io.format import sandbox
        from mgpu_io.format.sandbox import fork_server
        fork_server.SERVER_FROM, fork_server._CROSSES = 0, fork_server._CROSSES | {"sandbox_works"}  # a large process
        assert fork_server._ForkServer.start_now()
        sandbox.probed("hostile.h5", functools.partial(sandbox_works.write_pid_and_wait, sys.argv[2]))
    """.replace("TESTS_SUPPORT", str(ROOT / "tests" / "support")),
    "a folder's worker": f"""
        import multiprocessing, sys, time
        from mgpu_io.format.sandbox import programs
        def serve(path):
            {WAIT.replace("sys.argv[1]", "path")}
        programs.start_worker(multiprocessing.get_context("fork"), serve, sys.argv[2])
        time.sleep(60)
    """,
    "the decompiler program": f"""
        import sys
        from mgpu_io.format.sandbox import programs
        programs.run_program([sys.executable, "-c", {PROGRAM_WAIT!r}], b"", seconds=60, memory=1 << 32, timeout=60)
    """,
}


def _alive(pid):
    """Whether ``pid`` runs (a zombie, dead but not yet reaped by its new parent, does not)."""
    try:
        with open(f"/proc/{pid}/stat") as stat:
            return stat.read().rsplit(")", 1)[1].split()[0] != "Z"
    except FileNotFoundError:
        return False
    except OSError:  # pragma: no cover - no /proc: ask the kernel
        try:
            os.kill(pid, 0)
        except ProcessLookupError:
            return False
        return True


def _runs(pid, code):
    """Whether process ``pid`` runs ``python -c code`` (after its exec)."""
    try:
        with open(f"/proc/{pid}/cmdline", "rb") as cmdline:
            return code.encode() in cmdline.read().split(b"\0")
    except OSError:
        return False


def _children(pid):
    """The pids of ``pid``'s children (Linux's ``/proc``)."""
    found = []
    for task in os.listdir(f"/proc/{pid}/task"):
        with open(f"/proc/{pid}/task/{task}/children") as children:
            found += [int(child) for child in children.read().split()]
    return found


@pytest.mark.skipif(not os.path.exists("/proc/self/task"), reason="the children are found through Linux's /proc")
@pytest.mark.parametrize("child", sorted(PARENTS))
def test_a_child_dies_with_its_parent_when_the_parent_is_killed(tmp_path, child):
    said = tmp_path / "child.pid"  # a forked child writes it; the program (no file may be written) is found in /proc
    env = dict(os.environ, PYTHONPATH=str(ROOT))
    parent = subprocess.Popen(
        [sys.executable, "-c", textwrap.dedent(PARENTS[child]), "parent", str(said)], env=env, cwd=tmp_path
    )
    pid = None
    try:
        deadline = time.monotonic() + 60
        while pid is None and time.monotonic() < deadline:
            assert parent.poll() is None, f"the parent ended first ({parent.returncode})"
            time.sleep(0.1)
            waiting = said.exists() and said.read_text()
            pid = int(said.read_text()) if waiting else None
            if child == "the decompiler program":
                pid = next((pid for pid in _children(parent.pid) if _runs(pid, PROGRAM_WAIT)), None)
        assert pid is not None and _alive(pid)
        if child == "the fork server's child":  # a grandchild: the server's child, not the parent's
            assert pid not in _children(parent.pid) and len(_children(parent.pid)) == 1
        parent.send_signal(signal.SIGKILL)
        parent.wait()
        deadline = time.monotonic() + 10
        while _alive(pid) and time.monotonic() < deadline:
            time.sleep(0.05)
        assert not _alive(pid), f"{child} (pid {pid}) outlived its killed parent"
    finally:
        parent.kill()
        parent.wait()
        if pid is not None and _alive(pid):
            os.kill(pid, signal.SIGKILL)


def test_arrays_handed_over_by_the_sandbox_are_the_childs_own_values_in_memory_shared_with_it():
    import h5py

    def work():
        with h5py.File(ROOT / "fixtures" / "files" / "k224_functional_bn_x2_full.h5", "r") as h5:
            names = []
            h5["model_weights"].visit(names.append)
            datasets = [h5["model_weights"][n] for n in names if isinstance(h5["model_weights"][n], h5py.Dataset)]
            return [d[()] for d in datasets], sandbox.hand_over([*datasets, np.arange(5.0) * 2])

    expected, handed = sandbox.probed("k224_functional_bn_x2_full.h5", work)
    assert len(handed) == len(expected) + 1 and len(expected) > 4
    for want, got in zip(expected, handed):
        np.testing.assert_array_equal(got, want)
        assert got.dtype == want.dtype and got.ctypes.data % 64 == 0
    np.testing.assert_array_equal(handed[-1], np.arange(5.0) * 2)
    if hasattr(os, "memfd_create") and probe.forking() and os.path.exists("/proc/self/maps"):
        with open("/proc/self/maps") as maps:  # the child's memfd, mapped here: nothing was copied through the pipe
            shared = [[int(x, 16) for x in line.split()[0].split("-")] for line in maps if "mgpu-io-arrays" in line]
        assert all(any(start <= a.ctypes.data < end for start, end in shared) for a in handed if a.size)
        handed[0][...] = 0  # writable: a tensor may take it over without a copy



@pytest.mark.skipif(not hasattr(os, "memfd_create"), reason="arrays are handed over in a memfd where one exists")
def test_a_weight_stored_as_one_plain_block_is_copied_by_the_kernel_and_every_other_is_read_by_hdf5(
    tmp_path, monkeypatch
):
    import h5py

    path = tmp_path / "layouts.h5"
    values = np.random.default_rng(0).standard_normal(3 << 18).astype("f4")  # 3 MiB
    with h5py.File(path, "w") as h5:
        h5["plain"] = values
        h5["small"] = values[:7]
        h5.create_dataset("big_endian", data=values[:1000], dtype=">f4")
        h5.create_dataset("chunked", data=values, chunks=(4096,), compression="gzip")
        layout = h5py.h5p.create(h5py.h5p.DATASET_CREATE)
        layout.set_layout(h5py.h5d.COMPACT)
        compact = h5py.h5d.create(h5.id, b"compact", h5py.h5t.IEEE_F32LE, h5py.h5s.create_simple((10,)), dcpl=layout)
        compact.write(h5py.h5s.ALL, h5py.h5s.ALL, values[:10])
    in_memory = h5py.File(tmp_path / "memory.h5", "w", driver="core", backing_store=False)
    in_memory["plain"] = values
    sent = []
    real_sendfile = os.sendfile
    monkeypatch.setattr(os, "sendfile", lambda *args: sent.append(args[3]) or real_sendfile(*args))

    memory = os.memfd_create("test")
    try:
        into = shared._Shared(memory)
        with h5py.File(path, "r") as h5:
            datasets = [h5[name] for name in ("plain", "small", "big_endian", "chunked", "compact")]
            datasets.append(in_memory["plain"])
            handed = [into.write(d, d.dtype, d.shape) for d in datasets]
            expected = [d[()] for d in datasets]
        got = shared._loads(shared._dumps(handed), memory)
    finally:
        os.close(memory)
        in_memory.close()
    for want, array in zip(expected, got):
        np.testing.assert_array_equal(array, want)
        assert array.dtype == want.dtype
    assert got[2].dtype.str == ">f4"  # as stored, as HDF5's own read into that type gives it
    assert sorted(sent) == sorted([values.nbytes, 7 * 4, 1000 * 4])  # plain, small, big-endian: by the kernel


# --- a child leaves its parent's garbage alone ----------------------------------------------------------------------


@pytest.fixture
def tensorflows_garbage():
    """A training loop's garbage (three small models fitted and dropped), left for a collector that is on but not
    yet due: a child that collects it (frees TensorFlow's objects without TensorFlow's threads) dies of SIGSEGV, which
    a folder's repair reported as "crashed the HDF5 library" on a good file (CI, stop 42)."""
    import gc

    keras = pytest.importorskip("keras")
    if keras.backend.backend() != "tensorflow":
        pytest.skip("the garbage that crashes a child is TensorFlow's")
    gc.collect()
    threshold = gc.get_threshold()
    gc.disable()
    try:
        for _ in range(3):
            model = keras.Sequential([keras.Input((4,)), keras.layers.Dense(2)])
            model.compile("sgd", "mse")
            model.fit(np.zeros((8, 4)), np.zeros((8, 2)), verbose=0)
        del model
        gc.set_threshold(1 << 30)  # on, as in a user's process, but not collecting here before the fork
        gc.enable()
        yield
    finally:
        gc.set_threshold(*threshold)
        gc.enable()
        gc.collect()  # here, in the parent, where TensorFlow's threads are


def _collect_in_child():
    """What runs in the child: its collector is on (for its own objects), and a full collection ends well."""
    import gc

    assert gc.isenabled()
    gc.collect()
    return "collected"


def test_a_folders_worker_leaves_the_parents_garbage_to_the_parent(tensorflows_garbage):
    import multiprocessing

    worker = programs.start_worker(multiprocessing.get_context("fork"), _collect_in_child)
    worker.join(60)
    assert worker.exitcode == 0


def test_the_sandboxs_child_leaves_the_parents_garbage_to_the_parent(tensorflows_garbage):
    work = lambda: _collect_in_child()  # noqa: E731 - a closure does not cross to the fork server: forked here
    assert sandbox.probed("any.h5", work) == "collected"


def test_the_parents_collector_is_as_it_was_once_the_child_is_forked():
    import gc

    for on in (True, False):
        (gc.enable if on else gc.disable)()
        try:
            assert sandbox.probed("any.h5", lambda: "read") == "read"
            assert gc.isenabled() is on
        finally:
            gc.enable()


def test_a_large_answer_from_the_child_is_read_in_few_reads_not_copied_per_chunk(monkeypatch):
    """A 50 MB string in a Lambda's bytecode came back inside the plan, read 64 KiB at a time into a buffer copied
    on each read: 53 s before load_model's refusal. The reader now asks for what the frame still needs."""
    import threading

    data = shared._dumps(("value", b"x" * (32 << 20)))
    read_end, write_end = os.pipe()
    writer = threading.Thread(target=lambda: (os.write(write_end, shared._FRAME.pack(len(data)) + data),
                                              os.close(write_end)))
    reads = []
    real_read = os.read
    monkeypatch.setattr(shared.os, "read", lambda fd, n: reads.append(n) or real_read(fd, n))
    writer.start()
    [(kind, value)] = list(shared._messages(read_end, lambda: None))
    writer.join()
    os.close(read_end)
    assert (kind, len(value)) == ("value", 32 << 20)
    assert max(reads) >= 1 << 20  # once the frame's size is known, reads ask for the rest of it, not 64 KiB
