"""A large process forks its probes' children from a small one (format/sandbox/fork_server.py, issue 34): a fork
copies the page tables of all the forking process maps, so in a process with TensorFlow each file's sandbox cost
about 25 ms of kernel time before the file was read. The child the server forks does what a child forked here
does: the same answer, the same arrays in shared memory, the same errors for a hang or a crash, in the caller's
folder and environment. Where the work cannot cross (a closure), from another thread, or with no server, the child
is forked here, as in a small process."""

import functools
import os
import threading
import time
from pathlib import Path

import numpy as np
import pytest
import sandbox_works
from helpers import FIXTURES, digest

from mgpu_io.errors import NotAModelFile
from mgpu_io.format import door, sandbox
from mgpu_io.format.sandbox import fork_server, probe, shared

pytestmark = pytest.mark.skipif(not (probe.forking() and os.path.exists("/proc/self/statm")),
                                reason="the fork server serves where os.fork and /proc exist")

WRAPPER = FIXTURES / "k224_functional_bn_x2_full.h5"


@pytest.fixture
def server(monkeypatch):
    """This process as a large one (every process is, from 0 bytes), with a server of its own for the test."""
    monkeypatch.setattr(fork_server, "SERVER_FROM", 0)
    monkeypatch.setattr(fork_server, "_CROSSES", fork_server._CROSSES | {"sandbox_works"})
    monkeypatch.setattr(fork_server._ForkServer, "_current", None)
    monkeypatch.setattr(fork_server._ForkServer, "_counted", (None, 0))
    fork_server._ForkServer.start_now()
    yield
    current = fork_server._ForkServer._current
    if current and current[1]:
        current[1].end()


def _server_pid():
    owner, server = fork_server._ForkServer._current
    assert owner == os.getpid() and server, "no fork server was started"
    return server.process.pid


def test_the_child_is_the_servers_and_works_in_the_callers_folder_and_environment(server, tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("MGPU_IO_TEST_MARK", "set after the server started")
    sandbox.probed("x.h5", sandbox_works.parent_and_folder)  # the server starts
    monkeypatch.setenv("MGPU_IO_TEST_MARK", "set later")
    parent, folder, mark = sandbox.probed("x.h5", sandbox_works.parent_and_folder)
    assert parent == _server_pid() != os.getpid()
    assert (Path(folder), mark) == (tmp_path, "set later")


def test_the_door_describes_through_the_server_as_through_a_child_forked_here(server, monkeypatch):
    served = door.describe(WRAPPER)
    _server_pid()
    monkeypatch.setattr(fork_server, "SERVER_FROM", 1 << 62)
    assert served == door.describe(WRAPPER)


def test_arrays_come_back_through_the_shared_memory_as_from_a_child_forked_here(server):
    expected, handed = sandbox.probed(WRAPPER, functools.partial(sandbox_works.handed, WRAPPER))
    _server_pid()
    assert len(handed) == len(expected) + 1 and len(expected) > 4
    for want, got in zip(expected, handed):
        np.testing.assert_array_equal(got, want)
        assert got.dtype == want.dtype and got.ctypes.data % 64 == 0
    np.testing.assert_array_equal(handed[-1], np.arange(5.0) * 2)


def test_a_hang_and_a_crash_are_the_same_errors_and_the_server_serves_on(server, monkeypatch):
    monkeypatch.setattr(probe, "TIMEOUT", 1.0)
    with pytest.raises(NotAModelFile, match=r"^Reading the file's structure did not finish within 1 s\. "):
        sandbox.probed("hangs.h5", sandbox_works.hang)
    with pytest.raises(NotAModelFile, match=r"^Reading the file's structure crashed the HDF5 library \(signal 6\)\. "):
        sandbox.probed("crashes.h5", sandbox_works.crash)
    pid = _server_pid()
    assert sandbox.probed("x.h5", sandbox_works.parent_and_folder)[0] == pid


def test_work_that_cannot_cross_and_other_threads_fork_here(server):
    sandbox.probed("x.h5", sandbox_works.parent_and_folder)
    here = os.getpid()
    assert sandbox.probed("x.h5", lambda: os.getppid()) == here  # a closure does not pickle
    unlisted = functools.partial(os.getppid)  # a function of a module that may not cross
    assert sandbox.probed("x.h5", unlisted) == here
    found = []
    thread = threading.Thread(target=lambda: found.append(sandbox.probed("x.h5", sandbox_works.parent_and_folder)))
    thread.start()
    thread.join()
    assert found[0][0] == here


def test_without_a_server_the_child_is_forked_here(monkeypatch):
    monkeypatch.setattr(fork_server, "SERVER_FROM", 0)
    monkeypatch.setattr(fork_server, "_CROSSES", fork_server._CROSSES | {"sandbox_works"})
    monkeypatch.setattr(fork_server._ForkServer, "_current", None)
    monkeypatch.setattr(fork_server.sys, "executable", "/nonexistent/python")
    assert fork_server._ForkServer.start_now() is None
    assert sandbox.probed("x.h5", sandbox_works.parent_and_folder)[0] == os.getpid()
    assert fork_server._ForkServer._current == (os.getpid(), False)  # not tried again in this process


def test_a_process_that_reads_a_few_files_starts_no_server_and_a_later_read_starts_it_in_the_background(
        monkeypatch):
    monkeypatch.setattr(fork_server, "SERVER_FROM", 0)
    monkeypatch.setattr(fork_server, "_CROSSES", fork_server._CROSSES | {"sandbox_works"})
    monkeypatch.setattr(fork_server._ForkServer, "_current", None)
    monkeypatch.setattr(fork_server._ForkServer, "_counted", (None, 0))
    here = os.getpid()
    for _ in range(fork_server.SERVER_AFTER - 1):
        assert sandbox.probed("x.h5", sandbox_works.parent_and_folder)[0] == here
    assert fork_server._ForkServer._current is None  # no server for a process that reads a few files
    assert sandbox.probed("x.h5", sandbox_works.parent_and_folder)[0] == here  # this read starts it, and forks here
    started = fork_server._ForkServer._current[1]
    try:
        assert started and fork_server._ForkServer.start_now() is started
        assert sandbox.probed("x.h5", sandbox_works.parent_and_folder)[0] == _server_pid()
    finally:
        started.end()


def test_a_file_the_caller_holds_open_is_read_by_a_child_forked_here(server, tmp_path):
    import shutil

    import h5py

    sandbox.probed("x.h5", sandbox_works.parent_and_folder)
    copy = shutil.copy(WRAPPER, tmp_path / "held.h5")
    with h5py.File(copy, "r+"):  # its lock held here: a server's child could not open it, a child forked here can
        assert sandbox.probed("x.h5", sandbox_works.parent_and_folder)[0] == os.getpid()
        assert door.describe(copy).kind == "legacy-model"
    assert sandbox.probed("x.h5", sandbox_works.parent_and_folder)[0] == _server_pid()


def test_a_server_whose_process_ended_meanwhile_ends_without_a_word(tmp_path):
    """A script that read ten models and exited while a child still ran: the server's answer met a closed socket
    and printed a BrokenPipeError traceback on the user's terminal (issue 49). It now ends silently."""
    import pickle
    import socket
    import subprocess
    import sys

    here, there = socket.socketpair()
    boot = (f"import sys; sys.path[:] = {sys.path!r}; from mgpu_io.format.sandbox import fork_server;"
            f" fork_server._serve({there.fileno()})")
    server = subprocess.Popen([sys.executable, "-c", boot], stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL,
                              stderr=subprocess.PIPE, pass_fds=(there.fileno(),))
    there.close()
    fork_server._read_number(here)  # it serves
    request = pickle.dumps((str(WRAPPER), sandbox_works.nap, dict(os.environ), str(tmp_path)))
    read_end, write_end = os.pipe()
    socket.send_fds(here, [shared._FRAME.pack(len(request))], [write_end])
    here.sendall(request)
    os.close(write_end)
    here.shutdown(socket.SHUT_RDWR)  # the process it serves is gone before the child ends
    here.close()
    _, stderr = server.communicate(timeout=30)
    os.close(read_end)
    assert stderr.decode() == "" and server.returncode == 0


@pytest.fixture
def early(monkeypatch):
    """A fork server forked from this process as the command line's ``inspect`` forks its own, before anything is
    read (``mgpu_io.cli._start_early``)."""
    monkeypatch.setattr(fork_server, "_CROSSES", fork_server._CROSSES | {"sandbox_works"})
    monkeypatch.setattr(fork_server._ForkServer, "_current", None)
    monkeypatch.setattr(fork_server, "SERVER_FROM", 1 << 62)  # a small process: only an early server serves it
    sandbox.start_early(("sandbox_works",))
    server = fork_server._ForkServer._current[1]
    yield server
    # Ended whatever the test did: a forked server holds copies of this process's descriptors (another test's pipe
    # to a program it started, whose end that program then never sees).
    if server:
        server.end()


def test_an_early_server_serves_a_small_process_with_the_same_answers_and_errors(early, monkeypatch):
    assert early.early and early.process.pid != os.getpid()
    pid, folder = sandbox.probed("x.h5", sandbox_works.parent_and_folder)[:2]
    assert pid == early.process.pid and folder == os.getcwd()  # the server's child, in the caller's folder
    assert sandbox.probed(WRAPPER, sandbox.by_name("mgpu_io.format.door", "describe", WRAPPER)) == door.describe(WRAPPER)
    monkeypatch.setattr(probe, "TIMEOUT", 1.0)
    with pytest.raises(NotAModelFile, match=r"^Reading the file's structure did not finish within 1 s\. "):
        sandbox.probed("hangs.h5", sandbox_works.hang)
    with pytest.raises(NotAModelFile, match=r"^Reading the file's structure crashed the HDF5 library \(signal 6\)\. "):
        sandbox.probed("crashes.h5", sandbox_works.crash)
    assert sandbox.probed("x.h5", sandbox_works.parent_and_folder)[0] == early.process.pid  # it serves on


def test_an_early_servers_child_repairs_the_file_and_the_callers_progress_callback_stays_here(
    early, monkeypatch, tmp_path
):
    """The command line's ``unwrap`` forks its server as it starts (issue 50): the repair runs in the server's child,
    and its progress bar (a closure of this process, which cannot cross) is called here, with what the child says."""
    import mgpu_io

    fork_here = probe._fork_here
    monkeypatch.setattr(probe, "_fork_here", lambda *args: pytest.fail("the child was forked here"))
    said = []
    report = mgpu_io.unwrap(WRAPPER, tmp_path / "served.h5", progress=lambda done, total: said.append((done, total)))
    assert report.written and said and said[-1][0] == said[-1][1] >= report.weight_bytes  # weights, Adam state
    monkeypatch.setattr(probe, "_fork_here", fork_here)
    monkeypatch.setenv("MGPU_IO_PROBE", "0")
    alone = mgpu_io.unwrap(WRAPPER, tmp_path / "alone.h5")  # in this process, as with no child at all
    assert dict(report.to_dict(), output=None) == dict(alone.to_dict(), output=None)
    assert digest(tmp_path / "served.h5") == digest(tmp_path / "alone.h5")



def test_an_early_server_holds_no_copy_of_its_callers_pipes(monkeypatch):
    """A server forked from this process closes what it inherited: a program this process started and stops by
    closing its input sees the end at once, not when the server ends (a test's worker waited 60 s for one)."""
    read_end, write_end = os.pipe()
    monkeypatch.setattr(fork_server._ForkServer, "_current", None)
    sandbox.start_early(("sandbox_works",))
    server = fork_server._ForkServer._current[1]
    try:
        assert server.serving(fork_server.SERVER_WAIT)
        os.close(write_end)
        os.set_blocking(read_end, False)
        assert os.read(read_end, 1) == b""  # the end of the pipe, not "no data yet" (BlockingIOError)
    finally:
        os.close(read_end)
        server.end()


def test_an_early_server_still_importing_when_the_command_ends_is_ended_at_once(monkeypatch):
    monkeypatch.setattr(fork_server._ForkServer, "_current", None)
    monkeypatch.setattr(fork_server, "_preload", lambda modules=None: time.sleep(30))
    sandbox.start_early(("sandbox_works",))
    server = fork_server._ForkServer._current[1]
    began = time.monotonic()
    server.end()  # as at the command's exit, a refused argument's say
    assert time.monotonic() - began < 5 and server.process.poll() is not None
