"""Hostile environments (issue 21): a user on a shared login node or in a batch job runs mgpu-io under `ulimit`, in a
pipeline that closes or cuts its output, under a C locale, with a KERAS_BACKEND that is not installed, on a platform
without fork or O_TMPFILE. The command does its work or stops with one line; it never prints a traceback, never
raises a limit it was given, and its exit code says what happened.

Each limit is set as the shell's ``ulimit`` sets it (soft and hard alike), in a subprocess that runs the real
console script (:func:`mgpu_io.cli.run`) or a short Python script.
"""

import os
import resource
import shutil
import signal
import subprocess
import sys
import textwrap
from pathlib import Path

import h5py
import numpy as np
import pytest
from helpers import FIXTURES, ROOT

import mgpu_io
from mgpu_io.format import limits
from mgpu_io.format.sandbox import fork_server, probe

WRAPPER = FIXTURES / "k224_functional_bn_x2_full.h5"
LIMITS = {"-v": resource.RLIMIT_AS, "-f": resource.RLIMIT_FSIZE, "-n": resource.RLIMIT_NOFILE,
          "-t": resource.RLIMIT_CPU}
SCALE = {"-v": 1024, "-f": 1024, "-n": 1, "-t": 1}
#: Limits under which the work fits (KiB for -v and -f, as ulimit counts): what a batch job might set.
GENEROUS = {"-v": 16 << 20, "-f": 1 << 20, "-n": 256, "-t": 600}
CONSOLE = ["-c", "import sys; sys.argv[0] = 'mgpu-io'; from mgpu_io.cli import run; run()"]


def run(args, *, ulimit=None, close=(), env=None, script=None, stdout=subprocess.PIPE, timeout=300):
    """Run ``mgpu-io ARGS`` (or the Python ``script`` with ARGS) as a user's shell would: ``ulimit`` as
    ``{"-v": KiB, ...}``, file descriptors in ``close`` closed (``>&-``)."""

    def prepare():
        for flag, value in (ulimit or {}).items():
            resource.setrlimit(LIMITS[flag], (value * SCALE[flag], value * SCALE[flag]))
        for fd in close:
            os.close(fd)

    command = [sys.executable] + (["-c", script] if script else CONSOLE) + [str(a) for a in args]
    environment = dict(os.environ, PYTHONPATH=str(ROOT), **(env or {}))
    environment.pop("MGPU_IO_TRACEBACK", None)
    return subprocess.run(command, cwd=ROOT, env=environment, preexec_fn=prepare, stdout=stdout,
                          stderr=subprocess.PIPE, timeout=timeout)


def text(stream):
    return (stream or b"").decode("utf8", "replace")


def assert_one_error_line(result, *words):
    err = text(result.stderr)
    assert "Traceback" not in err and "internal error" not in err, err
    assert result.returncode == 1, (result.returncode, err)
    assert err.count("\n") == 1 and err.startswith("Error: "), err
    for word in words:
        assert word in err, err


@pytest.fixture
def folder(tmp_path):
    """A small folder of epoch checkpoints."""
    source = tmp_path / "checkpoints"
    source.mkdir()
    for name in ("epoch-01.h5", "epoch-02.h5", "epoch-03.h5"):
        shutil.copyfile(WRAPPER, source / name)
    shutil.copyfile(FIXTURES / "k224_functional_bn_x2_weights.h5", source / "weights-01.h5")
    return source


# ---------------------------------------------------------------------------------------------------------------
# 1. limits are the user's


@pytest.mark.parametrize("flag", sorted(GENEROUS))
def test_inspect_and_unwrap_of_a_file_and_a_folder_work_under_each_ulimit(flag, folder, tmp_path):
    limit = {flag: GENEROUS[flag]}
    assert run(["inspect", WRAPPER], ulimit=limit).returncode == 0
    unwrapped = run(["unwrap", WRAPPER, tmp_path / "model.h5"], ulimit=limit)
    assert unwrapped.returncode == 0, text(unwrapped.stderr)  # under -v: "not allowed to raise maximum limit"
    assert mgpu_io.inspect(tmp_path / "model.h5").is_wrapper is False
    repaired = run(["unwrap", folder, tmp_path / "repaired", "--jobs", "2"], ulimit=limit)
    assert repaired.returncode == 0, text(repaired.stderr) + text(repaired.stdout)
    assert text(repaired.stdout).splitlines()[-1] == "4 repaired, 0 failed"
    assert text(repaired.stderr) == ""


KERAS_SCRIPT = textwrap.dedent("""
    import resource, sys
    before = {name: resource.getrlimit(getattr(resource, name)) for name in ("RLIMIT_AS", "RLIMIT_FSIZE",
                                                                             "RLIMIT_NOFILE", "RLIMIT_CPU")}
    import numpy as np
    import mgpu_io
    model = mgpu_io.load_model(sys.argv[1])
    sys.path.insert(0, "tests/support")
    from parallel import data, make_parallel, template
    import keras
    base = template(keras)
    wrapper = make_parallel(keras, base, 2)
    wrapper.compile(optimizer="adam", loss="categorical_crossentropy")
    x, y = data()
    callback = mgpu_io.BaseModelCheckpoint(sys.argv[2])
    wrapper.fit(x, y, batch_size=8, epochs=1, verbose=0, callbacks=[callback])
    saved = mgpu_io.load_model(sys.argv[2])
    assert np.allclose(saved.predict(x, verbose=0), base.predict(x, verbose=0), atol=1e-5)
    after = {name: resource.getrlimit(getattr(resource, name)) for name in before}
    assert after == before, (before, after)
    print("ok", model.name)
""")


@pytest.mark.parametrize("flag", sorted(GENEROUS))
def test_load_model_and_the_checkpoint_callback_work_under_each_ulimit_and_leave_it_as_it_was(flag, tmp_path):
    pytest.importorskip("keras")
    result = run([WRAPPER, tmp_path / "ckpt.keras"], ulimit={flag: GENEROUS[flag]}, script=KERAS_SCRIPT,
                 env={"TF_CPP_MIN_LOG_LEVEL": "3"})
    assert result.returncode == 0, text(result.stderr)[-3000:]
    assert text(result.stdout).split() == ["ok", "template"]


PROBE_SCRIPT = textwrap.dedent("""
    import json, resource, sys
    from mgpu_io.format import sandbox
    with open("/proc/self/status") as status:
        mapped = next(int(line.split()[1]) << 10 for line in status if line.startswith("VmSize:"))
    user = mapped + (int(sys.argv[1]) << 20) if int(sys.argv[1]) else resource.RLIM_INFINITY
    resource.setrlimit(resource.RLIMIT_AS, (user, user))  # as `ulimit -v` sets it: soft and hard
    def work():
        if sys.argv[2] == "limits":
            return resource.getrlimit(resource.RLIMIT_AS)
        return len(bytearray(int(sys.argv[2]) << 20))
    try:
        answer = sandbox.probed(sys.argv[3], work)
    except Exception as error:
        answer = f"{type(error).__name__}: {error}"
    print(json.dumps(dict(user=user, answer=answer, after=resource.getrlimit(resource.RLIMIT_AS))))
""")


def probe_run(extra_mib, work):
    import json

    result = run([extra_mib, work, WRAPPER], script=PROBE_SCRIPT)
    assert result.returncode == 0, text(result.stderr)
    return json.loads(result.stdout)


def test_the_probe_lowers_the_soft_memory_limit_only_and_gives_it_back():
    found = probe_run(8192, "limits")  # a user's limit above the probe's cap (what the process maps + 2 GiB)
    soft, hard = found["answer"]
    assert hard == found["user"]  # kept: no process may raise its hard limit (was: "not allowed to raise...")
    assert soft < hard  # the probe's cap, below the user's limit
    assert found["after"] == [found["user"], found["user"]]  # the parent's own limit is untouched


def test_memory_that_runs_out_under_the_users_ulimit_v_names_it():
    found = probe_run(600, 1024)  # the user's limit, 600 MiB above what is mapped, is below the probe's cap
    user = found["user"]
    assert found["answer"] == (
        f"LimitReached: Reading the file ran out of memory: this process may map at most {limits._size(user)} of "
        f"memory (ulimit -v {user >> 10}). Expected room for the file's structure and weights. Received: "
        f"filepath={WRAPPER}. Raise the limit (ulimit -v unlimited, or a larger value) or run where more memory "
        f"is allowed."
    )
    assert found["after"] == [user, user]


def test_memory_that_runs_out_under_the_probes_own_cap_blames_the_file():
    found = probe_run(0, 3 << 10)  # 3 GiB at once: above the cap (mapped + 2 GiB); no limit of the user's
    assert found["answer"].startswith("NotAModelFile: The file declares more data than fits in memory.")


def test_a_command_that_cannot_even_start_under_ulimit_v_says_so_in_one_line():
    result = run(["inspect", WRAPPER], ulimit={"-v": 60000})
    assert_one_error_line(result, "ulimit -v 60000", "Raise the limit (ulimit -v unlimited)")


def test_tensorflow_that_cannot_be_mapped_under_ulimit_v_is_named_not_called_missing():
    pytest.importorskip("tensorflow")
    saved_model = ROOT / "fixtures" / "tf2" / "tf23_functional_bn_x2_savedmodel"
    result = run(["inspect", saved_model], ulimit={"-v": 1000000})  # TensorFlow maps more than 1 GB
    assert_one_error_line(result, "Reading a SavedModel needs TensorFlow, which cannot be loaded: this process may "
                                  "map at most 976.6 MiB of memory (ulimit -v 1000000).")
    script = "import sys, mgpu_io\ntry:\n    mgpu_io.load_model(sys.argv[1])\nexcept Exception as e:\n    print(e)"
    loaded = run([WRAPPER], script=script, ulimit={"-v": 1000000}, env={"KERAS_BACKEND": "tensorflow"})
    assert text(loaded.stdout).startswith("Keras and its backend cannot be loaded: this process may map at most "
                                          "976.6 MiB of memory (ulimit -v 1000000).")


def test_an_output_larger_than_ulimit_f_is_refused_whole(tmp_path, folder):
    result = run(["unwrap", WRAPPER, tmp_path / "model.h5"], ulimit={"-f": 10})
    assert_one_error_line(result)
    assert text(result.stderr) == (
        f"Error: Cannot write the output: the file is larger than the 10.0 KiB this process may write (ulimit -f "
        f"10). Expected room for the whole file. Received: output={tmp_path / 'model.h5'}. Raise the limit "
        f"(ulimit -f unlimited) and run again; nothing was written.\n"
    )
    assert os.listdir(tmp_path) == ["checkpoints"]  # nothing, not even a hidden temporary file
    repaired = run(["unwrap", folder, tmp_path / "repaired"], ulimit={"-f": 10})
    assert repaired.returncode == 1 and "Traceback" not in text(repaired.stderr)
    assert "failed  Cannot write the output: the file is larger than the 10.0 KiB" in text(repaired.stdout)
    assert text(repaired.stdout).splitlines()[-1] == "0 repaired, 4 failed"


def test_too_few_file_descriptors_is_a_clear_error_never_an_internal_one(tmp_path, folder):
    assert_one_error_line(run(["inspect", WRAPPER], ulimit={"-n": 5}), "(ulimit -n 5)", "ulimit -n 1024")
    assert_one_error_line(run(["unwrap", WRAPPER, tmp_path / "m.h5"], ulimit={"-n": 6}), "(ulimit -n 6)")
    result = run(["unwrap", folder, tmp_path / "repaired", "--jobs", "2"], ulimit={"-n": 8})
    assert_one_error_line(result, "Cannot start a worker process for the folder", "(ulimit -n 8)", "--jobs 2")
    # with a little more, fewer workers start and every file is repaired or told why not
    result = run(["unwrap", folder, tmp_path / "more", "--jobs", "2"], ulimit={"-n": 12})
    assert "Traceback" not in text(result.stderr) and "internal error" not in text(result.stdout)
    assert text(result.stdout).splitlines()[-1] == "4 repaired, 0 failed"


def test_the_cpu_time_limit_ends_the_command_with_one_line_and_code_152():
    saved_model = ROOT / "fixtures" / "tf2" / "tf23_functional_bn_x2_savedmodel"
    pytest.importorskip("tensorflow")
    result = run(["inspect", saved_model], ulimit={"-t": 2})  # TensorFlow's import alone takes longer
    assert result.returncode == 128 + signal.SIGXCPU, text(result.stderr)
    assert text(result.stderr) == (
        "Error: stopped by the CPU-time limit: the 2 s of CPU time this process may use ran out (ulimit -t 2). "
        "Outputs appear whole or not at all: nothing partial was left.\n"
    )


def test_a_worker_ended_by_the_cpu_time_limit_is_named_in_the_summary(tmp_path, folder):
    script = textwrap.dedent("""
        import os, resource, signal, sys
        import mgpu_io.format.unwrap
        resource.setrlimit(resource.RLIMIT_CPU, (600, 600))
        original = mgpu_io.format.unwrap.unwrap_file
        def unwrap_file(source, output, **options):
            if source.endswith("epoch-02.h5"):
                os.kill(os.getpid(), signal.SIGXCPU)  # what the kernel sends at the soft limit
            return original(source, output, **options)
        mgpu_io.format.unwrap.unwrap_file = unwrap_file
        sys.argv[0] = "mgpu-io"
        from mgpu_io.cli.app import run
        run()
    """)
    result = run(["unwrap", folder, tmp_path / "repaired", "--jobs", "1"], script=script)
    out = text(result.stdout)
    assert result.returncode == 1 and text(result.stderr) == ""
    assert ("epoch-02.h5    failed    Reading the file's structure was stopped: the 600 s of CPU time this process "
            "may use ran out (ulimit -t 600).") in out
    assert out.splitlines()[-1] == "3 repaired, 1 failed"


# ---------------------------------------------------------------------------------------------------------------
# 2. streams


def test_a_closed_stdout_is_like_dev_null_the_work_is_done(tmp_path):
    inspected = run(["inspect", WRAPPER], close=[1], stdout=None)
    assert (inspected.returncode, text(inspected.stderr)) == (0, "")  # was: AttributeError 'NoneType'...isatty
    unwrapped = run(["unwrap", WRAPPER, tmp_path / "model.h5"], close=[1], stdout=None)
    assert (unwrapped.returncode, text(unwrapped.stderr)) == (0, "")
    assert mgpu_io.inspect(tmp_path / "model.h5").is_wrapper is False
    failed = run(["inspect", tmp_path / "missing.h5"], close=[1], stdout=None)
    assert_one_error_line(failed, "nothing is there")


def test_a_closed_stderr_leaves_the_exit_code_meaningful(tmp_path, folder):
    assert run(["inspect", WRAPPER], close=[2]).returncode == 0
    assert run(["inspect", tmp_path / "missing.h5"], close=[2]).returncode == 1
    repaired = run(["unwrap", folder, tmp_path / "repaired"], close=[2])
    assert repaired.returncode == 0 and text(repaired.stdout).splitlines()[-1] == "4 repaired, 0 failed"


def test_a_reader_that_goes_away_ends_the_command_quietly_with_code_141(tmp_path, folder):
    def gone_reader(args):
        read_end, write_end = os.pipe()
        os.close(read_end)  # `| head -0`: nobody will read
        try:
            return run(args, stdout=write_end)
        finally:
            os.close(write_end)

    for args in (["inspect", WRAPPER], ["inspect", "--json", WRAPPER], ["--help"]):
        result = gone_reader(args)
        assert (result.returncode, text(result.stderr)) == (128 + signal.SIGPIPE, ""), args
    result = gone_reader(["unwrap", folder, tmp_path / "repaired"])  # the work is done; only the summary is lost
    assert result.returncode == 141 and text(result.stderr) == ""
    assert sorted(p.name for p in (tmp_path / "repaired").iterdir()) == sorted(p.name for p in folder.iterdir())


@pytest.mark.parametrize("locale", [{"LC_ALL": "C", "PYTHONUTF8": "0"}, {"LANG": "C", "PYTHONUTF8": "0",
                                                                        "PYTHONCOERCECLOCALE": "0"}])
def test_a_non_utf8_locale_with_utf8_file_names(locale, tmp_path):
    folder = tmp_path / "modèles"
    folder.mkdir()
    source = folder / "模型.h5"
    shutil.copyfile(WRAPPER, source)
    inspected = run(["inspect", source], env=locale)
    assert inspected.returncode == 0, text(inspected.stderr)
    out = inspected.stdout.decode("utf8")  # what the terminal receives: UTF-8, file name and tree alike
    assert out.startswith(f"{source}: full model file") and "└── template" in out
    unwrapped = run(["unwrap", source, folder / "出力.h5"], env=locale)
    assert unwrapped.returncode == 0 and unwrapped.stdout.decode("utf8").startswith(f"Wrote {folder / '出力.h5'}:")
    assert h5py.is_hdf5(folder / "出力.h5")
    failed = run(["inspect", folder / "無.h5"], env=locale)
    assert_one_error_line(failed, f"filepath={folder / '無.h5'} (nothing is there)")


# ---------------------------------------------------------------------------------------------------------------
# 3. workers die quietly


WORKER_SCRIPT = textwrap.dedent("""
    import os, signal, sys, time
    import mgpu_io.format.unwrap
    original = mgpu_io.format.unwrap.unwrap_file
    def unwrap_file(source, output, **options):
        if source.endswith("epoch-02.h5"):
            {action}
        return original(source, output, **options)
    mgpu_io.format.unwrap.unwrap_file = unwrap_file
    sys.argv[0] = "mgpu-io"
    from mgpu_io.cli.app import run
    run()
""")


def _worker_script(action):
    return WORKER_SCRIPT.replace("{action}", action)


@pytest.mark.parametrize("action, detail", [
    ("os.kill(os.getpid(), signal.SIGSEGV)", "Reading the file's structure crashed the HDF5 library (signal 11)."),
    ("from mgpu_io.format import sandbox; sandbox.probed(source, lambda: time.sleep(60))",
     "Reading the file's structure did not finish within 3 s."),
    ("os.kill(os.getpid(), signal.SIGTERM)", "Reading the file's structure crashed the HDF5 library (signal 15)."),
])
def test_a_worker_that_crashes_hangs_or_is_ended_prints_no_traceback(action, detail, folder, tmp_path):
    result = run(["unwrap", folder, tmp_path / "repaired", "--jobs", "2"], script=_worker_script(action),
                 env={"MGPU_IO_PROBE_TIMEOUT": "3"})  # every file's limit: room for a loaded machine
    assert text(result.stderr) == ""  # no "Process ForkProcess-1: Traceback", no faulthandler dump
    assert result.returncode == 1
    assert f"epoch-02.h5    failed    {detail}" in text(result.stdout)
    assert text(result.stdout).splitlines()[-1] == "3 repaired, 1 failed"


@pytest.mark.parametrize("signum", [signal.SIGTERM, signal.SIGINT])
def test_a_folder_repair_interrupted_stops_its_workers_without_their_tracebacks(signum, folder, tmp_path):
    script = _worker_script("time.sleep(3600)")  # held until the signal, however long the others take
    # The reading limit (20 s) would end the held file first on a loaded machine: it is stopped by the signal only.
    environment = dict(os.environ, PYTHONPATH=str(ROOT), MGPU_IO_PROBE_TIMEOUT="3600")
    process = subprocess.Popen([sys.executable, "-c", script, "unwrap", str(folder), str(tmp_path / "repaired"),
                                "--jobs", "2"], cwd=ROOT, env=environment, stdout=subprocess.PIPE,
                               stderr=subprocess.PIPE)
    import time

    deadline = time.monotonic() + 1800  # a guard, not a clock: the signal is sent once three outputs exist
    while time.monotonic() < deadline and len(list((tmp_path / "repaired").glob("*.h5"))) < 3:
        time.sleep(0.2)
    assert len(list((tmp_path / "repaired").glob("*.h5"))) == 3, "the three other files were not repaired"
    process.send_signal(signum)
    out, err = process.communicate(timeout=60)
    name = "SIGTERM" if signum == signal.SIGTERM else "Ctrl-C"
    assert text(err) == (f"Error: stopped by {name}. Outputs appear whole or not at all: nothing partial was "
                         f"left.\n")
    assert process.returncode == 128 + signum
    assert not (tmp_path / "repaired" / "epoch-02.h5").exists()
    summary = text(out).splitlines()  # what each file came to before the stop
    assert "  epoch-02.h5    failed    The run was stopped before this file was done." in summary
    assert "  epoch-01.h5    repaired  1 wrapper level removed" in summary
    repaired = [line.split()[0] for line in summary if " repaired " in line]
    assert summary[-1] == f"{len(repaired)} repaired, {4 - len(repaired)} failed" and len(repaired) >= 2


# ---------------------------------------------------------------------------------------------------------------
# 4. a KERAS_BACKEND that is not installed


BACKEND_SCRIPT = "import sys, mgpu_io\ntry:\n    mgpu_io.load_model(sys.argv[1])\nexcept Exception as e:\n    print(e)"


def test_a_keras_backend_that_is_not_installed_is_named_with_how_to_pick_another():
    pytest.importorskip("keras")
    import importlib.util

    missing = next((name for name in ("torch", "jax", "openvino") if importlib.util.find_spec(name) is None), None)
    if missing is None:
        pytest.skip("every backend is installed here")
    result = run([WRAPPER], script=BACKEND_SCRIPT, env={"KERAS_BACKEND": missing})
    message = text(result.stdout).strip()
    assert message.startswith(f"Keras is installed, but its backend '{missing}' is not (KERAS_BACKEND={missing}). "
                              f"Expected an importable backend package. Received: No module named '{missing}'. "
                              f"Pick an installed backend (KERAS_BACKEND=")
    assert message.endswith(f") or install this one (pip install {missing}).")
    assert "needs Keras 3, which is not installed" not in message
    unknown = run([WRAPPER], script=BACKEND_SCRIPT, env={"KERAS_BACKEND": "theano"})
    assert text(unknown.stdout).startswith("Keras does not know the backend KERAS_BACKEND=theano. Expected one of "
                                           "jax, numpy, openvino, tensorflow, torch.")
    cli = run(["verify", WRAPPER, WRAPPER], env={"KERAS_BACKEND": missing})
    assert_one_error_line(cli, f"its backend '{missing}' is not")


# ---------------------------------------------------------------------------------------------------------------
# 5. platforms without fork, rlimits, O_TMPFILE, sync_file_range, copy_file_range or MAP_POPULATE


def _weights(path):
    with h5py.File(path, "r") as h5:
        found = {}
        h5.visititems(lambda name, obj: found.__setitem__(name, obj[()]) if isinstance(obj, h5py.Dataset) else None)
    return found


@pytest.fixture
def reference(tmp_path_factory):
    """The repair as the normal path writes it."""
    out = tmp_path_factory.mktemp("reference") / "model.h5"
    mgpu_io.unwrap(WRAPPER, out)
    return _weights(out)


def assert_same_weights(path, reference):
    found = _weights(path)
    assert sorted(found) == sorted(reference)
    for name, value in reference.items():
        np.testing.assert_array_equal(found[name], value)


def test_without_fork_the_work_runs_in_this_process(monkeypatch, tmp_path, folder, reference):
    monkeypatch.delattr(os, "fork")
    assert not probe.forking()
    mgpu_io.unwrap(WRAPPER, tmp_path / "model.h5")
    assert_same_weights(tmp_path / "model.h5", reference)
    report = mgpu_io.unwrap(folder, tmp_path / "repaired", jobs=2)  # one by one, here
    assert report.counts() == {"repaired": 4, "failed": 0}


def test_when_fork_fails_the_work_runs_in_this_process(monkeypatch, tmp_path, reference):
    def refused():
        raise BlockingIOError(11, "Resource temporarily unavailable")  # ulimit -u

    monkeypatch.setattr(probe, "_fork", refused)
    monkeypatch.setattr(fork_server, "SERVER_FROM", 1 << 62)  # a small process forks itself (not its fork server)
    mgpu_io.unwrap(WRAPPER, tmp_path / "model.h5")
    assert_same_weights(tmp_path / "model.h5", reference)


def test_without_the_resource_module_no_limit_is_set_and_the_work_is_done(monkeypatch, tmp_path, reference):
    monkeypatch.setattr(limits, "resource", None)
    assert limits.lower_soft("AS", 1 << 30) is False and limits.soft_limit("AS") is None
    mgpu_io.unwrap(WRAPPER, tmp_path / "model.h5")
    assert_same_weights(tmp_path / "model.h5", reference)


def test_without_o_tmpfile_the_output_is_a_hidden_named_file_until_complete(monkeypatch, tmp_path, reference):
    from mgpu_io.format import write

    monkeypatch.delattr(os, "O_TMPFILE")
    monkeypatch.setenv("MGPU_IO_PROBE", "0")  # the work runs here, where what it names can be seen
    names = []
    original = write._created

    def created(path, in_memory):
        names.append(Path(path).name)
        return original(path, in_memory)

    monkeypatch.setattr(write, "_created", created)
    mgpu_io.unwrap(WRAPPER, tmp_path / "model.h5")
    assert names[0].startswith(".mgpu-io-") and names[0].endswith(".tmp")
    assert os.listdir(tmp_path) == ["model.h5"]
    assert_same_weights(tmp_path / "model.h5", reference)


def test_without_copy_file_range_and_sync_file_range_large_weights_are_copied_by_reading(monkeypatch, tmp_path,
                                                                                            reference):
    from mgpu_io.format import write

    monkeypatch.setattr(write, "_IN_MEMORY_UP_TO", 0)  # every weight through the raw copy of large files
    monkeypatch.setattr(write, "_COPIED_BY_HDF5_BELOW", 0)
    monkeypatch.setattr(write, "_sync_file_range", lambda: None)
    monkeypatch.delattr(os, "copy_file_range")
    monkeypatch.setenv("MGPU_IO_PROBE", "0")
    reads = []
    original = os.preadv
    monkeypatch.setattr(os, "preadv", lambda fd, buffers, offset: reads.append(offset) or original(fd, buffers, offset))
    mgpu_io.unwrap(WRAPPER, tmp_path / "model.h5")
    assert len(reads) >= 10  # each weight read and written (10 weights), none copied by the kernel
    assert_same_weights(tmp_path / "model.h5", reference)


def test_without_map_populate_weights_are_read_into_aligned_arrays(monkeypatch):
    pytest.importorskip("keras")
    from mgpu_io.keras import load

    expected = mgpu_io.load_model(WRAPPER, compile=False).get_weights()
    monkeypatch.setattr(load, "_POPULATED", None)
    monkeypatch.setattr(load, "_MAPPED_FROM", 0)  # every weight where the large ones go
    with h5py.File(WRAPPER, "r") as h5:
        kernels = []
        h5.visititems(lambda name, obj: kernels.append(obj) if isinstance(obj, h5py.Dataset) and obj.ndim == 2 else None)
        array = load._read(kernels[0])
        assert array.ctypes.data % load._ALIGNMENT == 0
        np.testing.assert_array_equal(array, kernels[0][()])
    found = mgpu_io.load_model(WRAPPER, compile=False).get_weights()
    assert len(found) == len(expected)
    for a, b in zip(found, expected):
        np.testing.assert_array_equal(a, b)


# ---------------------------------------------------------------------------------------------------------------
# found by the fuzzer's long run (issue 21)


def test_a_weight_keras_refuses_is_one_typed_error_and_the_next_load_in_the_process_still_works(tmp_path):
    """A stored float128 weight (DatasetWrongDtype) made Keras raise while the deferred variables got their values;
    Keras' list of them stayed full, and every later load_model in the same process failed ("already initialized")."""
    pytest.importorskip("keras")
    damaged = tmp_path / "float128.h5"
    shutil.copyfile(FIXTURES / "k122_kuza55_x2_full.h5", damaged)
    with h5py.File(damaged, "r+") as h5:
        value = h5["model_weights/template/out_W:0"][()]
        del h5["model_weights/template/out_W:0"]
        h5["model_weights/template"].create_dataset("out_W:0", data=value.astype(np.longdouble))
    with pytest.raises(mgpu_io.WeightsMismatch, match=r"^Keras 3 refuses a stored weight: Invalid dtype: float128\. "):
        mgpu_io.load_model(damaged, compile=False)
    model = mgpu_io.load_model(WRAPPER, compile=False)  # was: "Variable ... is already initialized."
    assert model.name == "template"
