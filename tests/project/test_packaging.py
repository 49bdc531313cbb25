"""A public release: the wheel builds with its metadata, installs alone in a clean environment, and its core-only CLI
works there and names the extra to install for what needs Keras (one line, never a ModuleNotFoundError).

These tests build and install from PyPI's (or pip's cached) setuptools and the core dependencies; without a network
or cache they skip and say so.
"""

import os
import subprocess
import sys
import venv
import zipfile
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
FIXTURE = ROOT / "fixtures" / "files" / "k224_functional_bn_x2_full.h5"


def _run(*command, **kwargs):
    return subprocess.run([str(part) for part in command], capture_output=True, text=True, timeout=600, **kwargs)


@pytest.fixture(scope="module")
def wheel(tmp_path_factory):
    out = tmp_path_factory.mktemp("wheel")
    built = _run(sys.executable, "-m", "pip", "wheel", "--no-deps", "-q", "-w", out, ROOT)
    if built.returncode and ("network" in built.stderr.lower() or "connection" in built.stderr.lower()):
        pytest.skip(f"cannot fetch setuptools to build the wheel: {built.stderr.strip().splitlines()[-1]}")
    assert built.returncode == 0, built.stderr
    assert "deprecat" not in built.stderr.lower(), built.stderr
    (path,) = out.glob("mgpu_io-*.whl")
    return path


@pytest.fixture(scope="module")
def core_env(wheel, tmp_path_factory):
    """A fresh virtual environment with the wheel and its core dependencies only (no Keras, no TensorFlow)."""
    env = tmp_path_factory.mktemp("core-env")
    venv.create(env)  # without pip of its own (ensurepip: 5.7 CPU-seconds); this pip installs into it
    installed = _run(sys.executable, "-m", "pip", "--python", env / "bin" / "python", "install", "-q",
                     "--disable-pip-version-check", wheel)
    if installed.returncode and ("network" in installed.stderr.lower() or "connection" in installed.stderr.lower()):
        pytest.skip(f"cannot fetch the core dependencies: {installed.stderr.strip().splitlines()[-1]}")
    assert installed.returncode == 0, installed.stderr
    return env


def test_the_wheel_carries_its_metadata_license_and_type_marker(wheel):
    with zipfile.ZipFile(wheel) as archive:
        names = archive.namelist()
        (metadata,) = [name for name in names if name.endswith(".dist-info/METADATA")]
        text = archive.read(metadata).decode()
    assert "mgpu_io/py.typed" in names
    assert any(name.endswith(".dist-info/licenses/LICENSE") for name in names)
    assert "License-Expression: Apache-2.0" in text
    assert "Classifier: Typing :: Typed" in text and "Requires-Python: >=3.9" in text
    assert "Project-URL: Documentation" in text
    for extra in ("jax", "torch", "tensorflow"):
        assert f"Provides-Extra: {extra}" in text
    assert not any(name.startswith(("tests/", "fixtures/")) for name in names)


def test_the_core_install_has_no_keras_and_its_cli_repairs_files(core_env, tmp_path):
    python, cli = core_env / "bin" / "python", core_env / "bin" / "mgpu-io"
    assert _run(python, "-c", "import keras").returncode == 1
    assert _run(cli, "--version").stdout.startswith("mgpu-io ")
    inspected = _run(cli, "inspect", FIXTURE, cwd=tmp_path)
    assert inspected.returncode == 0 and "multi-GPU wrapper, 1 level" in inspected.stdout, inspected.stderr
    unwrapped = _run(cli, "unwrap", FIXTURE, tmp_path / "template.h5", cwd=tmp_path)
    assert unwrapped.returncode == 0 and (tmp_path / "template.h5").exists(), unwrapped.stderr
    module = _run(python, "-m", "mgpu_io", "--version", cwd=tmp_path)
    assert module.returncode == 0, module.stderr


def test_what_needs_keras_names_the_extra_in_one_line(core_env, tmp_path):
    cli = core_env / "bin" / "mgpu-io"
    for args in (["unwrap", FIXTURE, tmp_path / "template.keras"], ["verify", FIXTURE, FIXTURE]):
        result = _run(cli, *args, cwd=tmp_path, env=dict(os.environ, PYTHONPATH=""))
        assert result.returncode == 1, result.stdout
        lines = result.stderr.splitlines()
        assert len(lines) == 1 and lines[0].startswith("Error: This needs Keras 3, which is not installed."), lines
        assert "pip install 'mgpu-io[jax]'" in lines[0]
    assert not (tmp_path / "template.keras").exists()
    library = _run(core_env / "bin" / "python", "-c",
                   "import mgpu_io\ntry:\n    mgpu_io.load_model(%r)\nexcept mgpu_io.MgpuIOError as e:\n"
                   "    print(type(e).__name__)" % str(FIXTURE), cwd=tmp_path)
    assert library.stdout.strip() == "MissingDependency", library.stderr
