"""The command line is a thin, documented face: help with examples, a version, usage errors with code 2."""

import json
import subprocess
import sys
from pathlib import Path


from mgpu_io import __version__
from mgpu_io.cli import app
from helpers import runner  # noqa: E402  (tests/support/helpers.py: the one CLI runner)



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
    from mgpu_io.cli.render import show
    from mgpu_io.format.inspect import InspectReport

    levels = [{"name": f"model_{i}", "variant": "keras", "replicas": 2, "merge_layers": ["out"]} for i in range(10)]
    report = InspectReport(file="deep.h5", file_type="model", is_wrapper=True, variant="keras", replicas=2, depth=10,
                           template="template", inputs=["inp"], outputs=["out"], keras_version="2.2.4",
                           backend="tensorflow", has_optimizer_weights=False, levels=levels)
    show(report)
    lines = capsys.readouterr().out.splitlines()
    assert lines == str(report).splitlines()
    assert "  └── 10 levels of keras.utils.multi_gpu_model, 2 replicas each" in lines
    assert "      └── template: template; inputs: inp; outputs: out" in lines
    assert max(len(line) for line in lines) <= 80


# --- Habits of a well-kept command line: JSON errors, several files, quiet, tracebacks on request, completion ---

FIXTURE = Path(__file__).resolve().parents[2] / "fixtures" / "files" / "k224_nested_depth3_full.h5"


def test_a_json_error_is_one_json_object_on_stdout(tmp_path):
    missing = tmp_path / "missing.h5"
    result = runner.invoke(app, ["inspect", str(missing), "--json"])
    assert result.exit_code == 1
    error = json.loads(result.stdout)["error"]
    assert error["type"] == "NotAModelFile"
    assert error["message"] == (f"Cannot read the input file. Expected a Keras .h5 file or a JSON config. Received: "
                                f"filepath={missing} (nothing is there). Check the path.")


def test_a_json_error_message_is_as_printable_as_the_error_line(tmp_path):
    # Found by the fuzzer: a layer name with a terminal escape reached --json's message raw (a script printing it
    # would clear the screen), while the Error: line showed it escaped.
    missing = tmp_path / "clear\x1b[2Jscreen.h5"
    line = runner.invoke(app, ["inspect", str(missing)]).stderr.strip()
    message = json.loads(runner.invoke(app, ["inspect", str(missing), "--json"]).stdout)["error"]["message"]
    assert "\x1b" not in message and "clear\\x1b[2Jscreen.h5" in message
    assert line == f"Error: {message}"


def test_a_json_error_speaks_in_flags(tmp_path):
    out = tmp_path / "out.h5"
    out.write_bytes(b"")
    result = runner.invoke(app, ["unwrap", str(FIXTURE), str(out), "--json"])
    assert result.exit_code == 1
    message = json.loads(result.stdout)["error"]["message"]
    assert message.endswith("Pass --force to replace it.") and "overwrite=" not in message


def test_inspect_takes_several_files_and_goes_on_past_a_bad_one(tmp_path):
    missing = tmp_path / "missing.h5"
    result = runner.invoke(app, ["inspect", str(FIXTURE), str(missing), str(FIXTURE)])
    assert result.exit_code == 1
    assert result.stdout.count("multi-GPU wrapper, 3 levels") == 2
    assert f"Error: {missing}: Cannot read the input file." in result.stderr

    listed = runner.invoke(app, ["inspect", str(FIXTURE), str(missing), "--json"])
    entries = json.loads(listed.stdout)
    assert [entry.get("depth") for entry in entries] == [3, None]
    assert entries[1]["file"] == str(missing) and entries[1]["error"]["type"] == "NotAModelFile"


def test_quiet_prints_nothing_but_errors(tmp_path):
    result = runner.invoke(app, ["--quiet", "unwrap", str(FIXTURE), str(tmp_path / "out.h5")])
    assert (result.exit_code, result.stdout) == (0, "")
    assert (tmp_path / "out.h5").exists()
    again = runner.invoke(app, ["-q", "unwrap", str(FIXTURE), str(tmp_path / "out.h5")])
    assert again.exit_code == 1 and again.stderr.startswith("Error: The output file already exists.")


def test_a_bug_is_one_line_unless_verbose_asks_for_its_traceback(monkeypatch):
    import mgpu_io

    def broken(*args, **kwargs):
        raise KeyError("oops")

    monkeypatch.setattr(mgpu_io, "inspect", broken)
    result = runner.invoke(app, ["inspect", str(FIXTURE)])
    assert result.exit_code == 1
    assert result.stderr == ("Error: internal error (KeyError: 'oops'). This is a bug in mgpu-io; nothing partial was "
                             "written. Rerun with --verbose to see where, and report it.\n")
    verbose = runner.invoke(app, ["--verbose", "inspect", str(FIXTURE)])
    assert isinstance(verbose.exception, KeyError)


def test_shell_completion_is_offered():
    result = runner.invoke(app, ["--help"])
    assert "--install-completion" in result.stdout and "--show-completion" in result.stdout


def test_long_lines_are_whole_when_piped(tmp_path):
    """A cropped name reads like a real one: piped output keeps every character, whatever the width."""
    long_name = "x" * 150 + ".h5"
    source = tmp_path / long_name
    source.write_bytes(FIXTURE.read_bytes())
    result = subprocess.run([str(Path(sys.executable).parent / "mgpu-io"), "inspect", str(source)],
                            capture_output=True, text=True, env={"COLUMNS": "40", "PATH": "/usr/bin:/bin"})
    assert result.returncode == 0, result.stderr
    assert f"{source}: full model file" in result.stdout.splitlines()


def test_inspect_starts_tensorflow_quietly_where_the_library_says_it_reads_the_input(monkeypatch):
    """The command line asks the library what each FILE is (`inspect_route`) and starts TensorFlow quietly only
    before an input TensorFlow reads: a SavedModel folder, not a legacy .h5 file nor a URL."""
    import mgpu_io

    commands = sys.modules["mgpu_io.cli.app"]
    started = []
    monkeypatch.setattr(commands, "start_quietly", started.append)
    monkeypatch.setattr(mgpu_io, "inspect", lambda *args, **kwargs: (_ for _ in ()).throw(mgpu_io.InvalidArgument("x")))
    savedmodel = FIXTURE.parents[1] / "tf2" / "tf23_nested_depth2_savedmodel"
    for files, expected in (([FIXTURE, "s3://bucket/m.h5"], []), ([FIXTURE, savedmodel], ["tensorflow"])):
        started.clear()
        runner.invoke(app, ["inspect", *map(str, files)])
        assert started == expected, files
