"""The command line is a thin, documented face: help with examples, a version, usage errors with code 2."""

import subprocess
import sys
from pathlib import Path

from typer.testing import CliRunner

from mgpu_io import __version__
from mgpu_io.cli import app

runner = CliRunner()


def test_help_lists_the_commands_with_examples():
    result = runner.invoke(app, ["--help"])
    assert result.exit_code == 0
    for text in ("inspect", "unwrap", "mgpu-io unwrap parallel_model.h5 model.h5"):
        assert text in result.stdout


def test_every_command_has_help_with_an_example():
    for command in ("inspect", "unwrap"):
        result = runner.invoke(app, [command, "--help"])
        assert result.exit_code == 0
        assert "Examples:" in result.stdout and f"mgpu-io {command} " in result.stdout


def test_version():
    result = runner.invoke(app, ["--version"])
    assert (result.exit_code, result.stdout.strip()) == (0, f"mgpu-io {__version__}")


def test_no_arguments_shows_help_and_fails_as_click_does():
    result = runner.invoke(app, [])
    assert "Usage:" in result.output and "Commands" in result.output
    assert result.exit_code == 2


def test_the_installed_console_script_and_python_m_run(tmp_path):
    script = Path(sys.executable).parent / "mgpu-io"
    assert script.is_file(), "the package is not installed with its console script (pip install -e .)"
    for command in ([str(script), "--version"], [sys.executable, "-m", "mgpu_io", "--version"]):
        result = subprocess.run(command, capture_output=True, text=True, cwd=tmp_path)
        assert (result.returncode, result.stdout.strip()) == (0, f"mgpu-io {__version__}"), result.stderr


def test_dash_h_is_help_too():
    for args in (["-h"], ["unwrap", "-h"]):
        result = runner.invoke(app, args)
        assert result.exit_code == 0 and "Usage:" in result.stdout


def test_deep_nesting_collapses_and_never_loses_the_templates_line(capsys):
    from mgpu_io.cli.render import render_inspect
    from mgpu_io.format.inspect import InspectReport

    levels = [{"name": f"model_{i}", "variant": "keras", "replicas": 2, "merge_layers": ["out"]} for i in range(10)]
    report = InspectReport(file="deep.h5", file_type="model", is_wrapper=True, variant="keras", replicas=2, depth=10,
                           template="template", inputs=["inp"], outputs=["out"], keras_version="2.2.4",
                           backend="tensorflow", has_optimizer_weights=False, levels=levels)
    render_inspect(report)
    lines = capsys.readouterr().out.splitlines()
    assert "└── 10 levels of keras.utils.multi_gpu_model, 2 replicas each" in lines
    assert "    └── template (template): inputs: inp; outputs: out" in lines
    assert max(len(line) for line in lines) <= 80
