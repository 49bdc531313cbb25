"""What a call does not need is not imported on its path: each module imported runs in every call's process.

Not in the core tier (``make check``): ``load_model`` imports Keras, in a Python of its own.
"""

import importlib.metadata
import json
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
from helpers import ROOT, digest, run_python


def test_a_repair_imports_neither_inspects_readers_nor_the_lambda_recoverer():
    """What a call does not need is not imported on its path (each module imported runs, in every call's process):
    unwrap to .h5 needs neither inspect's report nor the recoverer of Lambda sources; load_model, without a
    module of Lambda functions or a non-finite weight, neither the recoverer nor the importer of user modules."""
    unwrapped = set(json.loads(run_python(
        "import sys, json, tempfile, pathlib, mgpu_io; out = pathlib.Path(tempfile.mkdtemp()) / 'm.h5';"
        " mgpu_io.unwrap('fixtures/files/k224_functional_bn_x2_full.h5', out); print(json.dumps(sorted(sys.modules)))")))
    assert "mgpu_io.format.plan" in unwrapped  # the repair ran here (or was imported for its child)
    assert not {"mgpu_io.format.inspect", "mgpu_io.format.inspect_reader", "mgpu_io.format.non_finite",
                "mgpu_io.lambdas.recovery", "mgpu_io.format.plan_data"} & unwrapped
    loaded = set(json.loads(run_python(
        "import sys, json, mgpu_io; mgpu_io.load_model('fixtures/files/k224_functional_bn_x2_full.h5');"
        " print(json.dumps(sorted(sys.modules)))").splitlines()[-1]))
    assert "mgpu_io.keras.load" in loaded
    assert not {"mgpu_io.format.inspect", "mgpu_io.format.non_finite", "mgpu_io.lambdas.recovery",
                "mgpu_io.keras.custom"} & loaded


def test_the_command_lines_inspect_reads_in_its_early_server_and_imports_neither_h5py_nor_numpy():
    """``mgpu-io inspect`` forks its fork server as it starts, which imports the reader while the command line imports
    itself (issue 50): the command's own process never imports h5py or NumPy, and says what the library says."""
    code = (
        "import sys, json, atexit; sys.argv = ['mgpu-io', 'inspect', 'fixtures/files/k224_siamese_x2_full.h5', '--json'];"
        " atexit.register(lambda: print('MODULES ' + json.dumps(sorted(sys.modules)), flush=True));"
        " from mgpu_io.cli import run; run()"
    )
    printed = run_python(code)
    answer, modules = printed.split("MODULES ")
    modules = set(json.loads(modules))
    assert "mgpu_io.format.sandbox.fork_server" in modules and "mgpu_io.format.inspect" in modules
    assert not {"h5py", "numpy", "mgpu_io.format.inspect_reader", "mgpu_io.format.read"} & modules
    in_process = json.loads(run_python(
        "import json, mgpu_io; print(json.dumps(mgpu_io.inspect('fixtures/files/k224_siamese_x2_full.h5').to_dict()))"))
    assert json.loads(answer) == in_process and in_process["is_wrapper"]



def test_the_command_lines_unwrap_of_a_file_repairs_in_its_early_server_and_imports_neither_h5py_nor_numpy(tmp_path):
    """``mgpu-io unwrap`` of one file forks its fork server as it starts (issue 50): the server imports the repair
    while the command line imports itself, the file is repaired in the server's child, and the command's own
    process imports neither h5py nor NumPy; the report and the file are the library's."""
    served, alone = tmp_path / "served.h5", tmp_path / "alone.h5"
    code = (
        "import sys, json, atexit; sys.argv = ['mgpu-io', 'unwrap', 'fixtures/files/k224_siamese_x2_full.h5',"
        f" {str(served)!r}, '--json'];"
        " atexit.register(lambda: print('MODULES ' + json.dumps(sorted(sys.modules)), flush=True));"
        " from mgpu_io.cli import run; run()"
    )
    answer, modules = run_python(code).split("MODULES ")
    modules = set(json.loads(modules))
    assert "mgpu_io.format.sandbox.fork_server" in modules and "mgpu_io.format.unwrap_report" in modules
    assert not {"h5py", "numpy", "mgpu_io.format.plan", "mgpu_io.format.read", "mgpu_io.format.write"} & modules
    in_process = json.loads(run_python(
        "import json, mgpu_io; print(json.dumps(mgpu_io.unwrap("
        f"'fixtures/files/k224_siamese_x2_full.h5', {str(alone)!r}).to_dict()))"))
    assert dict(json.loads(answer), output=None) == dict(in_process, output=None) and in_process["written"]
    assert digest(served) == digest(alone)


def test_unwrap_forks_its_early_server_for_a_file_and_for_a_folder_on_this_machine(tmp_path):
    """A file is repaired in a child of the server, and a folder by workers the server forks; a bucket is listed
    and read in this process, which has no server to give it."""
    from mgpu_io.format.early import FOLDER_WORKERS, READERS, early_modules

    wrapper = "fixtures/files/k224_siamese_x2_full.h5"
    assert early_modules("unwrap", [wrapper, str(tmp_path / "out.h5")]) == READERS["unwrap"]
    assert early_modules("unwrap", ["--jobs", "2", wrapper, "o.h5"]) == READERS["unwrap"]  # a value that is no path
    config = "fixtures/files/k224_functional_bn_x2_full.h5"
    assert early_modules("unwrap", ["--config", config, "weights.h5", "out.h5"]) == READERS["unwrap"]
    assert early_modules("unwrap", ["--jobs", "2", "fixtures/files", str(tmp_path)]) == FOLDER_WORKERS
    assert early_modules("unwrap", ["s3://bucket/run1/", str(tmp_path)]) is None
    assert early_modules("unwrap", []) is None


def test_the_command_lines_unwrap_of_a_folder_has_its_workers_forked_by_its_early_server(tmp_path):
    """Issue 50: ``mgpu-io unwrap FOLDER`` forks its fork server as it starts, which imports the repair while the
    command line imports itself and lists the folder; the server forks the folder's workers. The command's own
    process imports neither h5py nor NumPy, and the report and every file are the library's."""
    folder = tmp_path / "in"
    folder.mkdir()
    for name in ("k224_siamese_x2_full.h5", "k224_functional_bn_x2_full.h5", "k216_kuza55_x2_full.h5"):
        shutil.copyfile(ROOT / "fixtures" / "files" / name, folder / name)
    served, alone = tmp_path / "served", tmp_path / "alone"
    code = (
        "import sys, json, atexit; from mgpu_io.format.sandbox import fork_server;"
        f" sys.argv = ['mgpu-io', 'unwrap', {str(folder)!r}, {str(served)!r}, '--jobs', '2', '--json'];"
        " forked = fork_server._ForkServer.fork_worker;"
        " workers = [];"
        " fork_server._ForkServer.fork_worker = classmethod(lambda cls, *a: workers.append(forked(*a)) or workers[-1]);"
        " atexit.register(lambda: print('MODULES ' + json.dumps([sorted(sys.modules), len(workers),"
        " all(workers)]), flush=True));"
        " from mgpu_io.cli import run; run()"
    )
    answer, modules = run_python(code).split("MODULES ")
    modules, asked, all_served = json.loads(modules)
    assert asked == 2 and all_served  # two workers, each forked by the server
    assert not {"h5py", "numpy", "mgpu_io.format.plan", "mgpu_io.format.read", "mgpu_io.format.write"} & set(modules)
    in_process = json.loads(run_python(
        f"import json, mgpu_io; print(json.dumps(mgpu_io.unwrap({str(folder)!r}, {str(alone)!r}, jobs=2).to_dict()))"))
    answer = json.loads(answer)
    assert [f["status"] for f in answer["files"]] == [f["status"] for f in in_process["files"]] == ["repaired"] * 3
    for name in sorted(p.name for p in folder.iterdir()):
        assert digest(served / name) == digest(alone / name)


def test_unwrap_forks_no_early_server_for_an_output_that_keras_builds():
    """This process imports Keras for it (which imports h5py and NumPy): a server would import them twice."""
    from mgpu_io.format import door
    from mgpu_io.format.early import BUILT_BY_KERAS, READERS, early_modules

    assert set(BUILT_BY_KERAS) == {door.KERAS_SUFFIX, *door.EXPORT_FORMATS.values()} - {""}
    wrapper = "fixtures/files/k224_siamese_x2_full.h5"
    assert early_modules("unwrap", [wrapper, "clean.h5"]) == READERS["unwrap"]
    assert early_modules("unwrap", [wrapper, "clean.json", "--json"]) == READERS["unwrap"]
    for output in ("model.keras", "model.ONNX", "m.tflite"):
        assert early_modules("unwrap", [wrapper, output]) is None
    assert early_modules("unwrap", [wrapper, "serving/1"], format="saved_model") is None
    from mgpu_io.cli import _option

    assert _option(["unwrap", "--format", "saved_model", wrapper], "--format") == "saved_model"
    assert _option(["unwrap", "--format=onnx"], "--format") == "onnx" and _option(["unwrap"], "--format") is None
    assert early_modules("inspect", ["fixtures/files"]) == READERS["inspect"]  # inspect reads a folder's files too
    assert early_modules("verify", [wrapper]) is None


def test_on_one_processor_inspect_forks_no_early_server_and_reads_as_before():
    """On one processor the server's imports and the command line's would take turns, not overlap: the child forked
    to read the file imports the reader itself, and the answer is the same."""
    code = (
        "import os, sys, json, atexit; os.sched_setaffinity(0, {min(os.sched_getaffinity(0))});"
        " sys.argv = ['mgpu-io', 'inspect', 'fixtures/files/k224_siamese_x2_full.h5', '--json'];"
        " from mgpu_io.format.sandbox import fork_server;"
        " atexit.register(lambda: print('SERVER ' + json.dumps(fork_server._ForkServer._current is None), flush=True));"
        " from mgpu_io.cli import run; run()"
    )
    answer, server_none = run_python(code).split("SERVER ")
    assert json.loads(server_none) is True and json.loads(answer)["is_wrapper"]


#: Python that records, in the file named by argv[1], every program this process or a process forked from it starts
#: (the audit hook lives on in a fork: the command line's fork server, its children, a folder's workers).
_RECORD_PROGRAMS = (
    "import os, sys; record = sys.argv.pop(1)\n"
    "def hook(event, args):\n"
    "    if event == 'subprocess.Popen':\n"
    "        with open(record, 'a') as out: out.write(repr(list(args[1])) + '\\n')\n"
    "sys.addaudithook(hook)\n"
)


def _programs_started(code, folder):
    folder.mkdir(exist_ok=True)
    record = folder / "programs"
    result = subprocess.run([sys.executable, "-c", _RECORD_PROGRAMS + code, str(record)], capture_output=True,
                            text=True, cwd=ROOT)
    assert result.returncode == 0, result.stderr
    return record.read_text().splitlines() if record.exists() else []


def test_h5py_imported_as_python_imports_it_runs_uname_which_the_command_line_does_not(tmp_path):
    """h5py 3.12+ reads ``platform.uname()[4]`` as it is imported, and Python completes that result by running
    ``uname -p``: a fork and an exec of a process that has just imported NumPy, on the path of every command that
    reads a file (issue 50). The command line's process and its fork server import h5py through
    ``format/h5py_import.py``: the same h5py, and no program started."""
    plain = _programs_started("import h5py", tmp_path / "plain")
    if not any("uname" in line for line in plain):
        pytest.skip(f"this h5py ({importlib.metadata.version('h5py')}) starts no uname: the finder is not needed")
    installed = _programs_started(
        "import platform, threading\n"
        "from mgpu_io.format import h5py_import\n"
        "own = platform.uname; h5py_import.install(); import h5py\n"
        "assert platform.uname is own and not [f for f in sys.meta_path if isinstance(f, h5py_import._Finder)]\n"
        "assert h5py.h5t._UNAME_MACHINE == platform.machine()\n"
        "assert type(h5py.h5t.__loader__).__name__ == 'ExtensionFileLoader'\n"
        "open(record, 'a').write('imported\\n')\n"
        "assert platform.uname()[5] == platform.processor()  # platform's own again: it asks uname\n",
        tmp_path / "installed")
    assert installed == ["imported", "['uname', '-p']"]
    # another thread running: platform is the process's to change only where nothing else runs in it
    threaded = _programs_started(
        "import threading, time; threading.Thread(target=time.sleep, args=(1,), daemon=True).start()\n"
        "from mgpu_io.format import h5py_import; h5py_import.install(); import h5py\n", tmp_path / "threaded")
    assert any("uname" in line for line in threaded)
    started_after = _programs_started(  # a thread started between install() and the import (TensorFlow's, say)
        "import threading, time\nfrom mgpu_io.format import h5py_import; h5py_import.install()\n"
        "threading.Thread(target=time.sleep, args=(1,), daemon=True).start(); import h5py\n",
        tmp_path / "started_after",
    )
    assert any("uname" in line for line in started_after)


@pytest.mark.parametrize("source", ["fixtures/files/k224_siamese_x2_full.h5", "folder"])
def test_the_command_lines_repair_starts_no_program(tmp_path, source):
    """``mgpu-io unwrap`` of one file (repaired in its early fork server's child) and of a folder (in workers forked
    from the command's process) start no program, ``uname`` included (fails on the code before: the server, or the
    command, ran ``uname -p`` as it imported h5py)."""
    if source == "folder":
        source = tmp_path / "in"
        source.mkdir()
        for name in ("k224_siamese_x2_full.h5", "k224_functional_bn_x2_full.h5"):
            shutil.copyfile(ROOT / "fixtures" / "files" / name, source / name)
    output = tmp_path / ("out" if Path(source).is_dir() else "out.h5")
    started = _programs_started(
        f"sys.argv = ['mgpu-io', 'unwrap', {str(source)!r}, {str(output)!r}, '--jobs', '2'][:None if "
        f"{Path(source).is_dir()} else 4]\nfrom mgpu_io.cli import run; run()", tmp_path)
    assert output.exists() and started == []
