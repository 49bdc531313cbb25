"""A user presses Ctrl-C, a scheduler sends SIGTERM, or the machine kills the process: one line, the right exit
code, and no partial or hidden file left behind, ever; a folder's repair stopped and run again ends as if it had
never stopped.

Each stop lands at a chosen point (a line the child prints, the tenth file done, a patched system call), never after
a timer: what is asserted cannot depend on the machine's load."""

import contextlib
import json
import os
import signal
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest
from helpers import FIXTURES, ROOT, digests, epoch_checkpoints, runner, workers_from_an_early_server

import mgpu_io
from mgpu_io.cli import app

RUNNER = runner

SLOW_UNWRAP = textwrap.dedent("""
    import sys, time
    import mgpu_io.format.write as write
    def slow(blocks, path, progress=None):  # the structure is written; the weights are being copied
        print("copying", file=sys.stderr, flush=True)  # a fork server's child writes no standard output
        time.sleep(60)
    write._copy_raw = slow
    from mgpu_io.cli import run
    sys.argv = ["mgpu-io", "unwrap", sys.argv[1], sys.argv[2]]
    run()
""")


def start(tmp_path):
    out = tmp_path / "out"
    out.mkdir()
    process = subprocess.Popen([sys.executable, "-c", SLOW_UNWRAP, str(FIXTURES / "k224_functional_bn_x2_full.h5"),
                                str(out / "model.h5")], cwd=ROOT, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                               text=True)
    assert process.stderr.readline().strip() == "copying"
    return process, out


@pytest.mark.parametrize("signum, code, name", [(signal.SIGTERM, 143, "SIGTERM"), (signal.SIGINT, 130, "Ctrl-C")])
def test_a_signal_mid_write_is_one_line_an_exit_code_and_no_leftover(tmp_path, signum, code, name):
    process, out = start(tmp_path)
    process.send_signal(signum)
    _, stderr = process.communicate(timeout=60)
    assert process.returncode == code
    assert stderr.strip().splitlines() == [
        f"Error: stopped by {name}. Outputs appear whole or not at all: nothing partial was left."]
    assert os.listdir(out) == []


def test_sigkill_mid_write_leaves_no_hidden_temporary_file(tmp_path):
    process, out = start(tmp_path)
    process.kill()
    process.wait(timeout=60)
    assert os.listdir(out) == []  # the file being written had no name yet (O_TMPFILE)


def test_new_outputs_get_the_permissions_cp_gives_under_the_umask(tmp_path):
    script = ("import os, sys; os.umask(0o027); import mgpu_io; "
              "mgpu_io.unwrap(sys.argv[1], sys.argv[2]); print(oct(os.stat(sys.argv[2]).st_mode & 0o777))")
    result = subprocess.run([sys.executable, "-c", script, str(FIXTURES / "k224_functional_bn_x2_full.h5"),
                             str(tmp_path / "m.h5")], cwd=ROOT, capture_output=True, text=True)
    assert result.stdout.strip() == "0o640", result.stderr


def test_an_unwritable_folder_is_a_clear_error(tmp_path):
    if os.geteuid() == 0:
        pytest.skip("root writes into read-only folders")
    locked = tmp_path / "locked"
    locked.mkdir()
    locked.chmod(0o500)
    result = subprocess.run([sys.executable, "-m", "mgpu_io", "unwrap", str(FIXTURES / "k224_functional_bn_x2_full.h5"),
                             str(locked / "m.h5")], cwd=ROOT, capture_output=True, text=True)
    assert result.returncode == 1 and result.stderr.startswith("Error: Cannot write the output: permission denied.")


def test_an_output_name_of_240_characters_works(tmp_path):
    import mgpu_io

    name = "m" * 237 + ".h5"
    assert mgpu_io.unwrap(FIXTURES / "k224_functional_bn_x2_full.h5", tmp_path / name).written
    assert os.listdir(tmp_path) == [name]


def test_an_output_name_the_file_system_refuses_is_a_clear_error(tmp_path):
    import mgpu_io
    from mgpu_io import OutputError

    with pytest.raises(OutputError, match="The output path cannot be used.*File name too long"):
        mgpu_io.unwrap(FIXTURES / "k224_functional_bn_x2_full.h5", tmp_path / ("m" * 300 + ".h5"))
    assert os.listdir(tmp_path) == []


#: What is left in the output's folder when the process is killed just after each step of putting the output in
#: place, for a new output and for one that replaces a file: the whole output, the old one, or none.
LEFT_AFTER = {
    ("new", "fsync"): "nothing", ("new", "fchmod"): "nothing", ("new", "link"): "whole",
    ("new", "replace"): "whole",  # never taken: a new output's first name is its final one
    ("replacing", "fsync"): "old", ("replacing", "fchmod"): "old", ("replacing", "replace"): "whole",
    # os.replace cannot take a nameless file: for that instant the new output has a hidden name too. A single
    # command killed then leaves it; the folder repair removes those of the workers it ends (test_batch).
    ("replacing", "link"): "old and hidden",
}


@pytest.mark.parametrize("output, step", list(LEFT_AFTER))
def test_sigkill_at_each_step_of_putting_the_output_in_place_leaves_it_whole_or_absent(tmp_path, output, step):
    """The output is complete before it has a name, and a new output's first name is its own: a kill between any
    two steps leaves the whole file or nothing, never a hidden temporary file beside it."""
    import mgpu_io

    source = FIXTURES / "k224_functional_bn_x2_full.h5"
    mgpu_io.unwrap(source, tmp_path / "whole.h5")
    out = tmp_path / "out"
    out.mkdir()
    if output == "replacing":
        (out / "model.h5").write_bytes(b"the old output")
    child = os.fork()  # a child that the machine kills (SIGKILL) the instant the step is done
    if child == 0:  # pragma: no cover - the child's code
        try:
            real = getattr(os, step)

            def then_killed(*args, **kwargs):
                real(*args, **kwargs)
                os.kill(os.getpid(), signal.SIGKILL)

            setattr(os, step, then_killed)
            os.environ["MGPU_IO_PROBE"] = "0"  # the write runs in this process, the one killed
            mgpu_io.unwrap(source, out / "model.h5", overwrite=True)
        finally:
            os._exit(0)
    _, status = os.waitpid(child, 0)
    assert os.WIFEXITED(status) or os.WTERMSIG(status) == signal.SIGKILL
    names = sorted(os.listdir(out))
    content = (out / "model.h5").read_bytes() if "model.h5" in names else None
    seen = {
        (): "nothing",
        ("model.h5",): "whole" if content == (tmp_path / "whole.h5").read_bytes() else "old",
    }.get(tuple(names), "old and hidden" if len(names) == 2 and names[0].startswith(".mgpu-io-") else str(names))
    assert seen == LEFT_AFTER[output, step]


# --- a folder's repair stopped, then resumed ------------------------------------------------------------------


#: The command line, stopped by Ctrl-C the moment its tenth file is reported done (not after a timer): the signal
#: is the process's own, so the point where it lands does not depend on the machine's load. The workers are then
#: mid-file, wherever they happen to be.
CTRL_C_AFTER_TEN = """
import os, signal, sys
from mgpu_io.format import batch
supervise = batch._run
def _run(tasks, workers, finished, work):
    done = []
    def counted(index, result):
        finished(index, result)
        done.append(index)
        if len(done) == 10:
            os.kill(os.getpid(), signal.SIGINT)
    supervise(tasks, workers, counted, work)
batch._run = _run
from mgpu_io.cli import run
sys.argv = ["mgpu-io", *sys.argv[1:]]
run()
"""


def test_an_interrupted_folder_repair_resumed_leaves_the_tree_of_an_uninterrupted_one(tmp_path):
    """Ctrl-C halfway through the command, then the same command again: the same files, byte for byte."""
    epoch_checkpoints(tmp_path / "in", 40)
    whole = RUNNER.invoke(app, ["unwrap", str(tmp_path / "in"), str(tmp_path / "whole"), "--jobs", "2"])
    assert whole.exit_code == 0, whole.output
    command = [sys.executable, "-c", CTRL_C_AFTER_TEN, "unwrap", str(tmp_path / "in"), str(tmp_path / "cut"),
               "--jobs", "2"]
    stopped = subprocess.run(command, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True, timeout=300,
                             cwd=ROOT)
    assert stopped.returncode == 130, stopped.stderr  # stopped by Ctrl-C, and said so
    assert stopped.stderr.strip().splitlines()[-1].startswith("Error: stopped by Ctrl-C."), stopped.stderr
    left = [p for p in (tmp_path / "cut").rglob("*") if p.is_file()]  # hidden files too: every name counts
    assert 10 <= len(left) < 40 and not [p for p in left if p.name.startswith(".")]
    resumed = RUNNER.invoke(app, ["unwrap", str(tmp_path / "in"), str(tmp_path / "cut"), "--json"])
    assert resumed.exit_code == 0, resumed.output
    report = json.loads(resumed.stdout)
    assert report["counts"] == {"repaired": 40 - len(left), "done before": len(left), "failed": 0}
    skipped = [f for f in report["files"] if f["status"] == "done before"]
    assert {f["reason"] for f in skipped} == {
        "the output exists, newer than its input: an earlier run completed it (overwrite=True redoes it)"}
    assert digests(tmp_path / "cut") == digests(tmp_path / "whole")


@pytest.mark.parametrize("forked_by", ["this process", "the command line's server"])
def test_a_worker_killed_while_its_output_has_a_hidden_name_leaves_no_hidden_file(tmp_path, monkeypatch, forked_by):
    """Replacing outputs (overwrite=True), each new file has a hidden name for an instant before it takes the old
    one's place; a worker killed in that instant leaves it, and the supervisor removes it, whoever forked the
    worker (the command line's ``unwrap FOLDER`` has its fork server fork them)."""
    epoch_checkpoints(tmp_path / "in", 2)
    assert mgpu_io.unwrap(tmp_path / "in", tmp_path / "out").ok
    before = digests(tmp_path / "out")
    link = os.link

    def killed_once_named(source, destination, **options):  # the workers are forked after the patch
        link(source, destination, **options)
        if Path(destination).name.startswith(".mgpu-io-"):
            os.kill(os.getpid(), signal.SIGKILL)

    monkeypatch.setattr(os, "link", killed_once_named)
    with contextlib.ExitStack() as stack:
        if forked_by != "this process":
            workers = stack.enter_context(workers_from_an_early_server(monkeypatch))
        report = mgpu_io.unwrap(tmp_path / "in", tmp_path / "out", overwrite=True, jobs=1)
    if forked_by != "this process":
        assert len(workers) == 3 and all(workers)  # the first, and one after each death
    assert report.counts()["failed"] == 2  # each worker died, and was replaced for the next file
    assert digests(tmp_path / "out") == before  # the old outputs, and nothing beside them


@pytest.mark.parametrize("forked_by", ["this process", "the command line's server"])
def test_a_worker_killed_after_naming_an_output_it_had_not_reported_leaves_the_tree_whole(tmp_path, monkeypatch,
                                                                                          forked_by):
    """A worker names a file's output, then sends its result: killed in between (by the CPU-time limit, say, as it
    works on its next file), the file it was on fails and the other it held is given again. An output it named
    unreported was this run's own, absent when the file was first given: it is removed, so that the file given again
    writes it anew instead of failing with "The output file already exists" (seen once in 30 runs of the CPU-limit
    test), and a failed file leaves no output."""
    epoch_checkpoints(tmp_path / "in", 3)
    marker, link = tmp_path / "killed-once", os.link

    def killed_once_named(source, destination, **options):  # the workers are forked after the patch
        link(source, destination, **options)
        if not marker.exists():
            marker.touch()
            os.kill(os.getpid(), signal.SIGKILL)

    monkeypatch.setattr(os, "link", killed_once_named)
    with contextlib.ExitStack() as stack:
        if forked_by != "this process":
            stack.enter_context(workers_from_an_early_server(monkeypatch))
        report = mgpu_io.unwrap(tmp_path / "in", tmp_path / "out", jobs=1)
    assert marker.exists() and report.counts() == {"repaired": 2, "failed": 1}  # the file it was on when it died
    for result in report.files:
        assert (tmp_path / "out" / result.path).exists() == (result.status == "repaired"), result
        assert "already exists" not in (result.reason or "")
