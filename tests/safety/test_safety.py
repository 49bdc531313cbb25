"""A file may be hostile: reading, inspecting or repairing it must never run anything stored in it.

The hostile file is a real fixture whose slice Lambdas carry live bytecode for the running Python that creates a
file when called. The test first proves the payload is live, then runs every command on the file.
"""

import base64
import json
import marshal
import shutil
import subprocess
import sys
import textwrap
import types

import h5py
import pytest
from helpers import FIXTURES, ROOT, runner

from mgpu_io.cli import app



def hostile_code(marker):
    source = textwrap.dedent(f"""
        def get_slice(data, i=0, parts=2):
            open({str(marker)!r}, "w").write("this ran")
            return data
    """)
    module = compile(source, "get_slice", "exec")
    return next(c for c in module.co_consts if isinstance(c, types.CodeType))


@pytest.fixture
def hostile_file(tmp_path):
    marker = tmp_path / "PWNED"
    payload = base64.b64encode(marshal.dumps(hostile_code(marker))).decode()
    path = tmp_path / "hostile.h5"
    shutil.copyfile(FIXTURES / "k224_functional_bn_x2_full.h5", path)
    with h5py.File(path, "a") as f:
        config = json.loads(f.attrs["model_config"])
        for layer in config["config"]["layers"]:
            if layer["class_name"] == "Lambda":
                layer["config"]["function"] = [payload, None, None]
                layer["config"].pop("output_shape")  # Keras calls such a Lambda while it rebuilds the graph
        f.attrs["model_config"] = json.dumps(config).encode()
    return path, marker, payload


def test_the_hostile_payload_is_live_on_this_python(hostile_file):
    path, marker, payload = hostile_file
    function = types.FunctionType(marshal.loads(base64.b64decode(payload)), {"open": open})
    function(None, 0, 2)
    assert marker.exists()  # so the checks below can fail


def test_no_command_runs_the_payload(hostile_file, tmp_path):
    path, marker, payload = hostile_file
    commands = [
        ["inspect", path],
        ["inspect", path, "--json"],
        ["unwrap", path, tmp_path / "dry.h5", "--dry-run"],
        ["unwrap", path, tmp_path / "clean.h5"],
        ["unwrap", path, tmp_path / "verbatim.h5", "--keep-config"],
    ]
    for command in commands:
        result = runner.invoke(app, [str(part) for part in command])
        assert result.exit_code == 0, result.output
    assert not marker.exists()
    for output in ("clean.h5", "verbatim.h5"):
        data = (tmp_path / output).read_bytes()
        assert payload[:60].encode() not in data  # the payload is not carried into the repaired file
        with h5py.File(tmp_path / output, "r") as f:
            assert "Lambda" not in f.attrs["model_config"]


def test_keras3_loads_the_repaired_hostile_file_safely(hostile_file, tmp_path):
    keras = pytest.importorskip("keras")
    path, marker, _ = hostile_file
    runner.invoke(app, ["unwrap", str(path), str(tmp_path / "clean.h5")])
    keras.models.load_model(tmp_path / "clean.h5")
    assert not marker.exists()


AUDIT = r"""
import sys, json, pathlib, tempfile
from typer.testing import CliRunner as Runner  # a program of its own: its own runner
import mgpu_io, mgpu_io.cli, mgpu_io.cli.render, mgpu_io.api, mgpu_io.format.inspect, mgpu_io.format.unwrap

suspicious = []
def hook(event, args):
    if event in ("marshal.loads", "marshal.load", "exec", "compile", "code.__new__", "subprocess.Popen", "os.system"):
        frame = sys._getframe(1)
        while frame is not None:
            if "importlib" in frame.f_code.co_filename:  # Python's own import of .pyc files
                return
            frame = frame.f_back
        suspicious.append(event)
sys.addaudithook(hook)
import marshal
marshal.loads(marshal.dumps(1))  # the hook must see this one, or it proves nothing
assert suspicious == ["marshal.loads"], suspicious
suspicious.clear()

runner = Runner()
out = pathlib.Path(tempfile.mkdtemp())
files = sorted(pathlib.Path(sys.argv[1]).glob("*_full.h5")) + sorted(pathlib.Path(sys.argv[1]).glob("*.json"))
for index, path in enumerate(files):
    if path.name == "manifest.json":
        continue
    assert runner.invoke(mgpu_io.cli.app, ["inspect", str(path), "--json"]).exit_code == 0
    assert runner.invoke(mgpu_io.cli.app, ["unwrap", str(path), str(out / f"{index}{path.suffix}")]).exit_code == 0
heavy = sorted(m for m in sys.modules if m.split(".")[0] in ("tensorflow", "keras", "tf_keras"))
print(json.dumps({"suspicious": suspicious, "heavy": heavy, "files": len(files)}))
"""


def test_the_core_never_unmarshals_compiles_or_imports_keras():
    result = subprocess.run([sys.executable, "-c", AUDIT, str(FIXTURES)], capture_output=True, text=True,
                            cwd=ROOT, timeout=300)
    assert result.returncode == 0, result.stderr
    seen = json.loads(result.stdout.strip().splitlines()[-1])
    assert seen["files"] > 20
    assert seen["suspicious"] == []
    assert seen["heavy"] == []
