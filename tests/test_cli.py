"""The command line is a thin, documented face: help with examples, a version, usage errors with code 2."""

import subprocess
import sys

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


def test_no_arguments_shows_help():
    result = runner.invoke(app, [])
    assert "Usage:" in result.output


def test_the_console_script_runs_as_a_module_entry_point(tmp_path):
    result = subprocess.run([sys.executable, "-c", "from mgpu_io.cli import run; run()", "--version"],
                            capture_output=True, text=True)
    assert result.returncode == 0 and result.stdout.strip() == f"mgpu-io {__version__}"
