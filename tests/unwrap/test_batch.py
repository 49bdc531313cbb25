"""A user with a folder of two hundred epoch checkpoints repairs them all at once."""

import collections
import contextlib
import gc
import json
import os
import shutil
import signal
import time
import types
from pathlib import Path

import h5py
import numpy as np
import pytest
from helpers import FIXTURES, digests, epoch_checkpoints, runner, workers_from_an_early_server

import mgpu_io
from mgpu_io import OutputError
from mgpu_io.cli import app
from mgpu_io.format import batch
from mgpu_io.format import plan as plan_module
from mgpu_io import inspect



@pytest.fixture
def checkpoints(tmp_path):
    """A folder as users have them: wrappers, a nested save, a clean model, broken files, other files."""
    folder = tmp_path / "checkpoints"
    (folder / "run2").mkdir(parents=True)
    shutil.copyfile(FIXTURES / "k224_functional_bn_x2_full.h5", folder / "epoch-01.h5")
    shutil.copyfile(FIXTURES / "k224_functional_bn_x2_weights.h5", folder / "weights-01.h5")
    shutil.copyfile(FIXTURES / "k224_nested_depth3_full.h5", folder / "run2" / "epoch-03.h5")
    shutil.copyfile(FIXTURES / "k224_siamese_x2_config.json", folder / "run2" / "model.json")
    shutil.copyfile(FIXTURES / "k216_failed_save_stub.h5", folder / "run2" / "failed-save.h5")
    truncated = (FIXTURES / "k224_multi_io_x4_full.h5").read_bytes()
    (folder / "truncated.h5").write_bytes(truncated[: len(truncated) // 3])
    (folder / "history.json").write_text('{"loss": [0.9, 0.7]}')  # not a model: left alone
    (folder / "notes.txt").write_text("lr 1e-3")
    clean = tmp_path / "clean.h5"
    runner.invoke(app, ["unwrap", str(FIXTURES / "k224_sequential_x3_full.h5"), str(clean)])
    shutil.copyfile(clean, folder / "run2" / "already-clean.h5")
    return folder


def test_a_folder_is_repaired_file_by_file_into_a_mirror(checkpoints, tmp_path):
    before = digests(checkpoints)
    report = mgpu_io.unwrap(checkpoints, tmp_path / "repaired", jobs=2, allow_plain=True)
    status = {f.path: f.status for f in report.files}
    assert status == {
        "epoch-01.h5": "repaired",
        "run2/already-clean.h5": "already clean",
        "run2/epoch-03.h5": "repaired",
        "run2/failed-save.h5": "failed",
        "run2/model.json": "repaired",
        "truncated.h5": "failed",
        "weights-01.h5": "repaired",
    }
    assert report.counts() == {"repaired": 4, "already clean": 1, "failed": 2} and not report.ok
    reasons = {f.path: f.reason for f in report.files if f.reason}
    assert reasons["truncated.h5"].startswith("The HDF5 file is damaged and cannot be opened")
    assert reasons["run2/failed-save.h5"].startswith("The file is the stub that a failed `save()`")
    written = sorted(str(p.relative_to(tmp_path / "repaired")) for p in (tmp_path / "repaired").rglob("*")
                     if p.is_file())
    assert written == ["epoch-01.h5", "run2/already-clean.h5", "run2/epoch-03.h5", "run2/model.json",
                       "weights-01.h5"]  # nothing partial, no temporary files
    assert inspect(tmp_path / "repaired" / "run2" / "epoch-03.h5").depth == 0
    assert digests(checkpoints) == before  # the inputs are untouched


def test_the_command_shows_a_summary_and_exits_1_when_something_failed(checkpoints, tmp_path):
    result = runner.invoke(app, ["unwrap", str(checkpoints), str(tmp_path / "out"), "--jobs", "2", "--allow-plain"])
    assert result.exit_code == 1
    assert "4 repaired, 1 already clean, 2 failed" in result.stdout
    row = next(line for line in result.stdout.splitlines() if "truncated.h5" in line)
    assert "failed" in row and "The HDF5 file is damaged" in row


def test_json_summary(checkpoints, tmp_path):
    result = runner.invoke(app, ["unwrap", str(checkpoints), str(tmp_path / "out"), "--json", "--allow-plain"])
    summary = json.loads(result.stdout)
    assert summary["counts"] == {"repaired": 4, "already clean": 1, "failed": 2}
    assert summary["ok"] is False and len(summary["files"]) == 7


def test_a_clean_folder_exits_0_and_a_second_run_skips_what_the_first_completed(tmp_path):
    folder = tmp_path / "in"
    folder.mkdir()
    shutil.copyfile(FIXTURES / "k224_functional_bn_x2_full.h5", folder / "a.h5")
    assert runner.invoke(app, ["unwrap", str(folder), str(tmp_path / "out")]).exit_code == 0
    again = mgpu_io.unwrap(folder, tmp_path / "out")
    assert again.ok and again.files[0].status == "done before" and "overwrite=True redoes it" in again.files[0].reason
    assert mgpu_io.unwrap(folder, tmp_path / "out", overwrite=True).files[0].status == "repaired"


def test_the_output_folder_may_not_be_inside_the_input(checkpoints):
    with pytest.raises(OutputError, match="The output folder is the input folder or inside it"):
        mgpu_io.unwrap(checkpoints, checkpoints / "repaired")


def test_repaired_weights_are_the_stored_ones(checkpoints, tmp_path):
    mgpu_io.unwrap(checkpoints, tmp_path / "out", jobs=1)
    with h5py.File(checkpoints / "weights-01.h5", "r") as src, h5py.File(tmp_path / "out" / "weights-01.h5") as dst:
        np.testing.assert_array_equal(dst["d1/d1/kernel:0"][()], src["template/d1/kernel:0"][()])


def test_a_large_folder_shows_its_failures_and_a_summary_not_a_row_per_file(tmp_path):
    quiet = runner.invoke(app, ["unwrap", str(FIXTURES), str(tmp_path / "a"), "--dry-run"])
    assert "the 2 failures of 51 files (--verbose lists every file)" in quiet.stdout
    assert "k216_failed_save_stub.h5" in quiet.stdout and "k224_siamese_x2_full.h5" not in quiet.stdout
    assert "k224_cudnn_x2_weights.h5" in quiet.stdout  # CuDNN weights without their architecture: refused
    assert quiet.stdout.rstrip().endswith("Would write: 49 repaired, 2 failed")
    verbose = runner.invoke(app, ["unwrap", str(FIXTURES), str(tmp_path / "b"), "--dry-run", "--verbose"])
    assert "k224_siamese_x2_full.h5" in verbose.stdout


def _misbehaving_on(monkeypatch, name, behaviour):
    """Make the repair of the file called ``name`` crash or hang in its worker, as libhdf5 does on some damaged
    files (the workers are forked after the patch, so they run it)."""
    import mgpu_io.format.unwrap

    original = mgpu_io.format.unwrap.unwrap_file

    def unwrap_file(source, output, **options):
        if Path(source).name == name:
            from mgpu_io.format import sandbox

            return sandbox.probed(source, behaviour)
        return original(source, output, **options)

    monkeypatch.setattr(mgpu_io.format.unwrap, "unwrap_file", unwrap_file)


def test_a_file_that_crashes_its_worker_fails_alone(checkpoints, tmp_path, monkeypatch):
    _misbehaving_on(monkeypatch, "epoch-01.h5", lambda: os.kill(os.getpid(), signal.SIGSEGV))
    report = mgpu_io.unwrap(checkpoints, tmp_path / "repaired", jobs=2, allow_plain=True)
    _assert_the_crashing_file_failed_alone(report)


def test_a_file_that_crashes_a_worker_the_command_lines_server_forked_fails_alone(checkpoints, tmp_path,
                                                                                  monkeypatch):
    """The command line's ``unwrap FOLDER`` has its workers forked by its early fork server (issue 50): a worker
    that dies there fails its file with the same reason, and its replacement is forked there too."""
    _misbehaving_on(monkeypatch, "epoch-01.h5", lambda: os.kill(os.getpid(), signal.SIGSEGV))
    with workers_from_an_early_server(monkeypatch) as workers:
        report = mgpu_io.unwrap(checkpoints, tmp_path / "repaired", jobs=2, allow_plain=True)
    _assert_the_crashing_file_failed_alone(report)
    assert len(workers) == 3 and all(workers)  # two, and the one that replaced the dead one
    assert [worker.exitcode for worker in workers].count(-signal.SIGSEGV) == 1


def _assert_the_crashing_file_failed_alone(report):
    status = {f.path: f.status for f in report.files}
    assert status["epoch-01.h5"] == "failed" and status["run2/epoch-03.h5"] == "repaired"
    assert status["weights-01.h5"] == "repaired" and status["run2/model.json"] == "repaired"
    reason = next(f.reason for f in report.files if f.path == "epoch-01.h5")
    assert reason.startswith("Reading the file's structure crashed the HDF5 library (signal 11).")
    assert report.counts() == {"repaired": 3, "already clean": 1, "failed": 3}


@pytest.mark.parametrize("forked_by", ["this process", "the command line's server"])
def test_a_file_whose_structure_does_not_finish_reading_fails_alone(checkpoints, tmp_path, monkeypatch, forked_by):
    from mgpu_io.format.sandbox import probe

    # The limit holds for every file: 3 s, not 1, so that a loaded machine never stretches a good file's reading
    # past it (the hanging file is ended at 3 s all the same).
    monkeypatch.setattr(probe, "TIMEOUT", 3.0)
    _misbehaving_on(monkeypatch, "epoch-01.h5", lambda: time.sleep(900))  # the first file, in one worker
    started = time.monotonic()
    with contextlib.ExitStack() as stack:
        if forked_by != "this process":
            workers = stack.enter_context(workers_from_an_early_server(monkeypatch))
        report = mgpu_io.unwrap(checkpoints, tmp_path / "repaired", jobs=1, allow_plain=True)
    if forked_by != "this process":
        assert len(workers) == 2 and all(workers) and workers[0].exitcode == -signal.SIGKILL
    status = {f.path: f.status for f in report.files}
    assert status["epoch-01.h5"] == "failed"
    assert status["run2/epoch-03.h5"] == status["weights-01.h5"] == "repaired"  # its replacement went on
    reason = next(f.reason for f in report.files if f.path == "epoch-01.h5")
    assert reason.startswith("Reading the file's structure did not finish within 3 s.")
    assert time.monotonic() - started < 600  # killed at its limit, not waited for (900 s): room for a loaded machine


def test_the_time_limit_ends_once_the_structure_is_read(checkpoints, tmp_path, monkeypatch):
    from mgpu_io.format import sandbox
    from mgpu_io.format.sandbox import probe

    monkeypatch.setattr(probe, "TIMEOUT", 3.0)  # not 1 s: every file's reading must fit in it, on a loaded machine too

    def slow_copy():  # a large file: its structure is read at once, its bytes take longer than the limit
        sandbox.structure_read()
        time.sleep(4.0)
        raise OutputError("copied slowly, and then refused")

    _misbehaving_on(monkeypatch, "epoch-01.h5", slow_copy)
    report = mgpu_io.unwrap(checkpoints, tmp_path / "repaired", jobs=2, allow_plain=True)
    reason = next(f.reason for f in report.files if f.path == "epoch-01.h5")
    assert reason == "copied slowly, and then refused"  # not "did not finish": the copy was not killed


def test_a_worker_shows_its_reading_on_its_board_and_sends_its_supervisor_only_its_results(checkpoints, tmp_path,
                                                                                          monkeypatch):
    """Issue 50: a worker sent its supervisor a message as it started each file and another once its structure was
    read, each waking the supervisor, which took the worker's processor on a busy machine. It now shows those steps
    on a board in shared memory, which the supervisor reads when it wakes: one message a file, its result (three
    before), and the deadlines of the tests above hold."""
    from multiprocessing.connection import Connection

    received = []
    original = Connection.recv
    supervisor = os.getpid()

    def recv(self):
        value = original(self)
        if os.getpid() == supervisor:
            received.append(value[0])
        return value

    monkeypatch.setattr(Connection, "recv", recv)
    report = mgpu_io.unwrap(checkpoints, tmp_path / "repaired", jobs=2, allow_plain=True)
    worked = [f for f in report.files if f.status != "done before"]
    assert len(worked) > 3 and received == ["result"] * len(worked)


def test_an_output_that_cannot_be_committed_fails_its_file_alone(checkpoints, tmp_path, monkeypatch):
    """A worker makes each output durable and names it in a thread while it reads the next file (issue 50): a disk
    that refuses one file's last step fails that file with the error a repair of it alone gives, leaves nothing
    of it, and the files after it are repaired."""
    import errno

    from mgpu_io.format import write

    original = write._finish_anonymous

    def refused_once(fd, destination, close=True):  # the workers are forked after the patch
        if Path(destination).name == "epoch-01.h5":
            os.close(fd)
            with write._output_errors(destination):
                raise OSError(errno.ENOSPC, "No space left on device")
        return original(fd, destination, close)

    monkeypatch.setattr(write, "_finish_anonymous", refused_once)
    report = mgpu_io.unwrap(checkpoints, tmp_path / "repaired", jobs=1, allow_plain=True)
    status = {f.path: f.status for f in report.files}
    assert status["epoch-01.h5"] == "failed" and status["weights-01.h5"] == status["run2/epoch-03.h5"] == "repaired"
    reason = next(f.reason for f in report.files if f.path == "epoch-01.h5")
    assert reason.startswith("Cannot write the output: the disk is full. Expected a writable folder"), reason
    assert not (tmp_path / "repaired" / "epoch-01.h5").exists()
    assert not list((tmp_path / "repaired").rglob(".mgpu-io-*"))


def test_a_workers_board_says_to_its_supervisor_which_step_of_which_task_it_is_on():
    board = batch._Board()
    assert board.step() == (0, False, 0.0)
    pid = os.fork()
    if pid == 0:  # the worker: its second task, read
        board.task = 2
        board.tell(("start", None))
        board.tell(("read", None))
        os._exit(0)
    os.waitpid(pid, 0)
    number, read, started = board.step()
    assert (number, read) == (2, True) and 0 < started <= time.monotonic()


def test_a_worker_that_dies_fails_the_file_its_board_shows_else_the_oldest_it_held():
    """Whichever moment a worker dies at, one file fails (the one its board shows it on, else the oldest it held)
    and the others it held are given again: a run whose workers keep dying still ends."""

    def worker_on(number):  # a worker given files 7 and 8, its board on file ``number``
        worker = object.__new__(batch._Worker)
        worker.board, worker.held, worker.given, worker.folders = batch._Board(), collections.deque(), 8, set()
        worker.held.extend([(6, ("in/a.h5", "out/a.h5")), (7, ("in/b.h5", "out/sub/b.h5"))])
        worker.board.task = number - 1
        worker.board.begin()  # on file ``number``, its structure not read
        return worker

    def error(source, read):
        return RuntimeError(f"{source} read={read}")

    worker = worker_on(8)
    index, failed = worker.ended(error)
    assert (index, failed.status, failed.path, failed.reason) == (7, "failed", "in/b.h5", "in/b.h5 read=False")
    assert [i for i, _ in worker.release()] == [6] and worker.folders == {Path("out"), Path("out/sub")}
    worker = worker_on(6)  # it died between two files: the board shows none it holds
    index, failed = worker.ended(error)
    assert (index, failed.path) == (6, "in/a.h5") and [i for i, _ in worker.release()] == [7]


# --- a large batch resumes: a second run skips what the first completed, redoes the rest ------------------------


def test_a_rerun_says_how_many_it_skipped_and_force_redoes_them_all(tmp_path):
    epoch_checkpoints(tmp_path / "in", 4)
    assert runner.invoke(app, ["unwrap", str(tmp_path / "in"), str(tmp_path / "out")]).exit_code == 0
    shutil.copyfile(FIXTURES / "k224_nested_depth3_full.h5", tmp_path / "in" / "new.h5")  # a new file arrived
    again = runner.invoke(app, ["unwrap", str(tmp_path / "in"), str(tmp_path / "out")])
    assert again.exit_code == 0
    assert again.stdout.rstrip().endswith("1 repaired, 4 done before, 0 failed")
    assert "an earlier run wrote it" in again.stdout
    forced = runner.invoke(app, ["unwrap", str(tmp_path / "in"), str(tmp_path / "out"), "--force", "--json"])
    assert json.loads(forced.stdout)["counts"] == {"repaired": 5, "failed": 0}


def test_an_input_changed_after_its_repair_is_not_skipped(tmp_path):
    epoch_checkpoints(tmp_path / "in", 1)
    source = next((tmp_path / "in").rglob("*.h5"))
    mgpu_io.unwrap(tmp_path / "in", tmp_path / "out")
    output = tmp_path / "out" / source.relative_to(tmp_path / "in")
    os.utime(output, ns=(source.stat().st_mtime_ns - 10**9,) * 2)  # the input is newer than its repair
    again = mgpu_io.unwrap(tmp_path / "in", tmp_path / "out")
    assert again.files[0].status == "failed" and "Pass overwrite=True" in again.files[0].reason


@pytest.mark.parametrize("allow_plain", [False, True])
def test_a_folder_repair_opens_each_file_once(tmp_path, monkeypatch, allow_plain):
    """A wrapper, a weights-only file given the folder's config= and a plain model: each opened once (in this
    process, MGPU_IO_PROBE=0, where each open can be counted). The repair once opened a file to see whether the
    config applied, and a plain model twice more: refused as no wrapper, then planned again with allow_plain."""
    source = tmp_path / "in"
    source.mkdir()
    for name in ("k224_functional_bn_x2_full.h5", "k224_siamese_x2_weights.h5"):
        shutil.copyfile(FIXTURES / name, source / name)
    shutil.copyfile(FIXTURES.parent / "layers" / "k224" / "Dense.h5", source / "plain.h5")
    real, opens = h5py.File.__init__, []

    def counting(self, path, *args, **kwargs):
        if isinstance(path, (str, os.PathLike)) and os.path.realpath(path).startswith(str(source.resolve())):
            opens.append(os.path.basename(path))
        real(self, path, *args, **kwargs)

    monkeypatch.setenv("MGPU_IO_PROBE", "0")
    monkeypatch.setattr(h5py.File, "__init__", counting)
    report = mgpu_io.unwrap(source, tmp_path / "out", allow_plain=allow_plain,
                            config=FIXTURES / "k224_siamese_x2_config.json")
    statuses = {f.path: f.status for f in report.files}
    assert statuses == {"k224_functional_bn_x2_full.h5": "repaired", "k224_siamese_x2_weights.h5": "repaired",
                        "plain.h5": "already clean" if allow_plain else "skipped"}, str(report)
    assert sorted(opens) == ["k224_functional_bn_x2_full.h5", "k224_siamese_x2_weights.h5", "plain.h5"]
    assert (tmp_path / "out" / "plain.h5").exists() == allow_plain


def test_a_folder_of_one_models_checkpoints_converts_its_config_once(tmp_path, monkeypatch):
    """A training run's checkpoints share one model config: a worker converts it for the first and reuses the
    conversion for the rest (each file's weights still read and checked on their own). Six checkpoints of one model
    and two of another: two conversions, and every output the same as a repair that converted afresh."""
    from mgpu_io.format import conversions

    source = tmp_path / "in"
    source.mkdir()
    for index in range(6):
        shutil.copyfile(FIXTURES / "k224_functional_bn_x2_full.h5", source / f"epoch{index:02d}.h5")
    for index in range(2):
        shutil.copyfile(FIXTURES / "k224_shared_layers_x2_full.h5", source / f"shared{index}.h5")
    conversions_run = []

    class Counted(collections.OrderedDict):  # a conversion is stored once it has run
        def __setitem__(self, key, value):
            conversions_run.append(json.loads(key[0])["config"]["name"])
            super().__setitem__(key, value)

    monkeypatch.setattr(conversions, "_CONVERTED", Counted())
    monkeypatch.setattr(plan_module, "_PLANS", collections.OrderedDict())  # no plan kept from another test
    monkeypatch.setenv("MGPU_IO_PROBE", "0")  # in this process, where the conversions can be counted
    report = mgpu_io.unwrap(source, tmp_path / "out")
    assert report.counts() == {"repaired": 8, "failed": 0}, str(report)
    assert sorted(conversions_run) == ["shared_net", "template"]
    conversions._CONVERTED.clear()
    for name in ("epoch05.h5", "shared1.h5"):
        mgpu_io.unwrap(source / name, tmp_path / f"fresh-{name}")
        conversions._CONVERTED.clear()
        with h5py.File(tmp_path / "out" / name, "r") as reused, h5py.File(tmp_path / f"fresh-{name}", "r") as new:
            assert reused.attrs["model_config"] == new.attrs["model_config"]
            assert reused.attrs["training_config"] == new.attrs["training_config"]


def test_a_folder_of_one_models_checkpoints_is_planned_once_and_each_files_weights_checked(tmp_path, monkeypatch):
    """Checkpoints whose stored configs, versions and layers are the same take the first one's plan (issue 50), once
    their own weights are read and checked and found to have its names, shapes and types; each output holds its own
    file's values, as a repair of that file alone writes them. A checkpoint whose weight differs in shape is planned
    anew."""
    source = tmp_path / "in"
    source.mkdir()
    for index in range(4):
        shutil.copyfile(FIXTURES / "k224_functional_bn_x2_full.h5", source / f"epoch{index:02d}.h5")
    with h5py.File(source / "epoch01.h5", "r+") as h5:  # trained on: other values, the same weights
        names = [n.decode() for n in h5["model_weights/template"].attrs["weight_names"]]
        kernel = next(name for name in names if "kernel" in name)
        h5["model_weights/template"][kernel][...] *= 3.0
    with h5py.File(source / "epoch02.h5", "r+") as h5:  # a bias of another shape: not this plan's weights
        group = h5["model_weights/template"]
        bias = next(name for name in names if "bias" in name)
        shape = group[bias].shape
        del group[bias]
        group[bias] = np.zeros((shape[0] + 1, *shape[1:]), "float32")
    planned = []
    original = plan_module._plan
    monkeypatch.setattr(plan_module, "_plan", lambda stored, **kw: planned.append(stored.path.name) or
                        original(stored, **kw))
    monkeypatch.setattr(plan_module, "_PLANS", collections.OrderedDict())
    monkeypatch.setenv("MGPU_IO_PROBE", "0")  # in this process, where the plans can be counted
    report = mgpu_io.unwrap(source, tmp_path / "out", jobs=1)
    assert planned == ["epoch00.h5", "epoch02.h5"], str(report)  # the first, and the one whose weights differ
    for result in report.files:
        try:
            mgpu_io.unwrap(source / result.path, tmp_path / f"alone-{result.path}")
        except mgpu_io.MgpuIOError as error:
            assert (result.status, result.reason) == ("failed", batch.reason(error))
            continue
        assert result.status == "repaired", result.reason
        with h5py.File(tmp_path / "out" / result.path, "r") as folder, \
                h5py.File(tmp_path / f"alone-{result.path}", "r") as alone:
            assert folder.attrs["model_config"] == alone.attrs["model_config"]
            assert folder.attrs["training_config"] == alone.attrs["training_config"]
            found = []
            folder.visititems(lambda path, obj: found.append(path) if isinstance(obj, h5py.Dataset) else None)
            assert len(found) > 4
            for path in found:
                np.testing.assert_array_equal(folder[path][()], alone[path][()])
    with h5py.File(tmp_path / "out" / "epoch01.h5", "r") as one, h5py.File(tmp_path / "out" / "epoch03.h5", "r") as three:
        kernels = [path for path in found if path.startswith("model_weights/") and path.endswith(kernel.split("/")[-1])]
        assert kernels and any(not np.array_equal(one[path][()], three[path][()]) for path in kernels)


def test_a_kept_plan_holds_none_of_its_files_hdf5_objects(tmp_path, monkeypatch):
    """The plans a folder's repair keeps for its later files hold nothing of the file they were made from (its
    HDF5 file, groups, datasets): h5py goes through every live object of the process at each file's close, so
    objects kept alive made every later file's close slower (issue 50: 0.3 ms of a small file's 5 ms repair)."""
    source = tmp_path / "in"
    source.mkdir()
    for name in ("k224_functional_bn_x2_full.h5", "k224_cudnn_x2_full.h5", "k224_nested_depth3_full.h5"):
        for index in range(2):
            shutil.copyfile(FIXTURES / name, source / f"{index}-{name}")
    monkeypatch.setattr(plan_module, "_PLANS", collections.OrderedDict())
    monkeypatch.setenv("MGPU_IO_PROBE", "0")  # in this process, whose kept plans are looked at
    report = mgpu_io.unwrap(source, tmp_path / "out", jobs=1)
    assert report.counts() == {"repaired": 6, "failed": 0}, str(report)
    assert len(plan_module._PLANS) == 3
    seen, pending, held = set(), list(plan_module._PLANS.values()), []
    while pending:  # everything the kept plans reach
        value = pending.pop()
        if id(value) in seen or isinstance(value, (type, types.ModuleType, types.FunctionType)):
            continue  # what a module holds is not the plan's
        seen.add(id(value))
        if isinstance(value, (h5py.HLObject, h5py._objects.ObjectID)):
            held.append(value)
            continue
        pending.extend(gc.get_referents(value))
    assert held == []


@pytest.mark.parametrize("fixture", ["k224_cudnn_x2_full.h5", "k224_nested_depth3_full.h5", "k224_multi_io_x4_full.h5"])
def test_each_checkpoint_that_takes_a_kept_plan_is_written_as_a_repair_of_it_alone(fixture, tmp_path, monkeypatch):
    """A kept plan, whatever the wrapper (CuDNN layers whose optimizer state is checked and dropped, a nested save,
    several inputs and outputs): each later checkpoint's output is the one a repair of that file alone writes."""
    source = tmp_path / "in"
    source.mkdir()
    for index in range(3):
        shutil.copyfile(FIXTURES / fixture, source / f"epoch{index:02d}.h5")
    monkeypatch.setattr(plan_module, "_PLANS", collections.OrderedDict())
    monkeypatch.setenv("MGPU_IO_PROBE", "0")
    report = mgpu_io.unwrap(source, tmp_path / "out", jobs=1)
    assert report.counts() == {"repaired": 3, "failed": 0}, str(report)
    assert len(plan_module._PLANS) == 1
    mgpu_io.unwrap(source / "epoch02.h5", tmp_path / "alone.h5")
    with h5py.File(tmp_path / "out" / "epoch02.h5", "r") as folder, h5py.File(tmp_path / "alone.h5", "r") as single:
        assert dict(folder.attrs).keys() == dict(single.attrs).keys()
        assert folder.attrs["model_config"] == single.attrs["model_config"]
        found = []
        single.visititems(lambda path, obj: found.append(path) if isinstance(obj, h5py.Dataset) else None)
        assert found and all(np.array_equal(folder[p][()], single[p][()], equal_nan=True) for p in found)
        assert ("optimizer_weights" in folder) == ("optimizer_weights" in single)
