"""The docs describe the code that exists: every --json key is documented, every documented command runs."""

import builtins
import re
import sys
from pathlib import Path

import pytest
from helpers import FIXTURES, ROOT, newcomer_environment, runner

from mgpu_io import UnwrapReport, inspect

CLI_DOC = (ROOT / "docs" / "cli.md").read_text()


def test_every_inspect_json_key_is_documented():
    keys = inspect(FIXTURES / "k224_functional_bn_x2_full.h5").to_dict()
    for key in keys:
        assert f"| `{key}` |" in CLI_DOC, key


def test_every_unwrap_json_key_is_documented():
    for key in UnwrapReport.__dataclass_fields__:
        assert f"`{key}`" in CLI_DOC, key


def test_the_table_of_conversion_rules_is_generated_from_the_registry():
    from mgpu_io.format.conversions import RULES, rules_table

    assert len(RULES) >= 15
    table = CLI_DOC.split("<!-- rules -->\n", 1)[1].split("\n<!-- /rules -->", 1)[0]
    assert table == rules_table(), "docs/cli.md's rule table is stale: paste mgpu_io.format.conversions.rules_table()"


def test_the_readme_starts_with_the_two_setup_commands():
    readme = (ROOT / "README.md").read_text()
    first_block = readme.split("```bash", 1)[1].split("```", 1)[0]
    assert [line.split("#")[0].strip() for line in first_block.strip().splitlines()] == ["make demo", "make test"]


def test_the_demo_fixture_exists():
    makefile = (ROOT / "Makefile").read_text()
    demo_input = re.search(r"^DEMO_IN := (\S+)", makefile, re.M).group(1)
    assert (ROOT / demo_input).is_file()
    assert Path(FIXTURES / "manifest.json").is_file()


def test_make_demo_prints_only_its_own_lines(tmp_path):
    """The first command a newcomer runs: the Makefile's demo recipe, run as written (its output into a temporary
    folder), prints its three answers on stdout and nothing on stderr: no TensorFlow, absl, CUDA or Keras logging."""
    import subprocess

    makefile = (ROOT / "Makefile").read_text()
    variables = dict(re.findall(r"^(\w+) :?= (.*)$", makefile, re.M))
    recipe = makefile.split("\ndemo:", 1)[1].split("\n\n", 1)[0].splitlines()[1:]
    values = dict(variables, BIN=str(Path(sys.executable).parent), DEMO_OUT=str(tmp_path / "template.h5"))
    commands = [re.sub(r"\$\((\w+)\)", lambda m: values[m.group(1)], line.strip().lstrip("@")) for line in recipe]
    commands = [command for command in commands if not command.startswith("mkdir")]
    assert len(commands) == 3, commands  # inspect, unwrap, the prediction check
    result = subprocess.run(["bash", "-ec", "\n".join(commands)], cwd=ROOT, capture_output=True, text=True,
                            timeout=600, env=newcomer_environment())  # not the suite's quiet, which hides the lines
    assert result.returncode == 0, result.stdout + result.stderr
    assert result.stderr == ""
    lines = result.stdout.splitlines()
    assert lines[0].startswith(f"{variables['DEMO_IN']}: full model file")
    assert lines[-1] == "OK: the repaired model predicts like the original (tolerance 1e-05)"
    assert not [line for line in lines if re.match(r"(WARNING|I0000|E0000|W0000)\b|.*(absl|cuda|oneDNN)", line)]


USER_NEEDS = ROOT.parent / "shared" / "docs" / "user-needs.md"
ERROR_WORDS = ("Error", "can't", "cannot", "No model found", "You are trying", "Layer count mismatch", "To call",
               "call multi_gpu_model", "Dimension", "has no setter", "bad marshal", "unknown opcode")


@pytest.mark.skipif(not USER_NEEDS.is_file(), reason="../shared/docs/user-needs.md is not present")
def test_every_error_message_users_reported_is_in_troubleshooting_verbatim():
    quoted = [" ".join(q.split()) for q in re.findall(r"`([^`]+)`", USER_NEEDS.read_text())]  # one line each
    messages = [q for q in quoted if any(word in q for word in ERROR_WORDS)]
    assert len(messages) >= 15, messages  # the pattern still finds them
    troubleshooting = " ".join((ROOT / "docs" / "troubleshooting.md").read_text().split())
    missing = [m for m in messages if m not in troubleshooting]
    assert missing == []


def test_the_cli_reference_is_generated_from_the_current_help():
    from cli_reference import PAGE, render

    assert PAGE.read_text() == render(), "docs/cli-reference.md is stale: run `python tests/support/cli_reference.py`"


def test_every_command_has_help_and_an_example():
    from cli_reference import commands, help_text

    for name, command in commands():
        assert command.help and len(command.help.split()) > 8, name
        assert f"mgpu-io {name} " in help_text(name), f"{name} --help shows no example"


def test_the_quickstart_runs_verbatim_from_the_repository_root():
    import shutil
    import subprocess

    text = (ROOT / "docs" / "quickstart.md").read_text()
    script = "set -e\n" + "\n".join(re.findall(r"```bash\n(.*?)```", text, re.S))
    python = "\n".join(re.findall(r"```python\n(.*?)```", text, re.S))
    shutil.rmtree(ROOT / "build" / "quickstart", ignore_errors=True)
    try:
        result = subprocess.run(["bash", "-c", script], cwd=ROOT, capture_output=True, text=True, timeout=600)
        assert result.returncode == 0, result.stdout[-2000:] + result.stderr[-2000:]
        continued = subprocess.run([sys.executable, "-c", python], cwd=ROOT, capture_output=True, text=True,
                                   timeout=600)
        assert continued.returncode == 0, continued.stderr[-3000:]
        assert int(continued.stdout.split("optimizer steps:")[1]) > 1  # the stored state, plus this epoch
        assert "multi-GPU wrapper, 3 levels" in result.stdout
        assert "agree" in result.stdout and "all 4 weighted layers loaded" in result.stdout
        assert (ROOT / "build" / "quickstart" / "model-from-weights.keras").is_file()
    finally:
        shutil.rmtree(ROOT / "build" / "quickstart", ignore_errors=True)


def test_the_anatomy_pictures_are_drawn_by_the_current_code():
    from mgpu_io.format.diagram import wrapper_svg
    from mgpu_io.format.read import open_stored

    for picture, fixture in (("anatomy-wrapper.svg", "k224_functional_bn_x2_full.h5"),
                             ("anatomy-siamese.svg", "k224_siamese_x2_full.h5")):
        with open_stored(FIXTURES / fixture) as stored:
            svg = wrapper_svg(stored.model_config)
        assert (ROOT / "docs" / picture).read_text() == svg, (
            f"docs/{picture} is stale: mgpu-io inspect fixtures/files/{fixture} --diagram docs/{picture}")


def test_the_writer_format_table_is_the_fixtures_own_and_has_no_gap():
    from writer_formats import table

    page = (ROOT / "docs" / "writers-formats.md").read_text()
    written = page.split("<!-- writers-formats -->\n", 1)[1].split("\n<!-- /writers-formats -->", 1)[0]
    assert written == table(), "docs/writers-formats.md is stale: paste `python tests/support/writer_formats.py`"
    assert "NOT COVERED" not in written


@pytest.mark.parametrize("section", ["## Keras 3", "## tf_keras"])
def test_the_checkpoint_guides_examples_run_as_written(section, tmp_path, warm):
    """Each is whole: it builds a wrapper, trains it with BaseModelCheckpoint and loads what it saved."""
    import subprocess

    text = (ROOT / "docs" / "checkpoint.md").read_text()
    body = text[text.index(section):]
    code = re.search(r"```python\n(.*?)```", body, re.S).group(1)
    result = subprocess.run([warm.bin() / "python", "-c", code], cwd=tmp_path, env=warm.environment(_environment()),
                            capture_output=True, text=True, timeout=600)
    assert result.returncode == 0, result.stderr[-3000:]
    assert "template" in result.stdout


def test_the_anatomy_pages_inspect_output_is_what_inspect_prints():
    
    from mgpu_io.cli import app

    text = (ROOT / "docs" / "anatomy.md").read_text()
    block = re.search(r"```console\n\$ mgpu-io inspect (\S+)\n(.*?)```", text, re.S)
    result = runner.invoke(app, ["inspect", block.group(1)], env={"COLUMNS": "200"})
    assert result.stdout == block.group(2)


# --- docs/api.md lists exactly what mgpu_io exports, with the signatures the code has ----------------------------

API_DOC = (ROOT / "docs" / "api.md").read_text()
_HEADING = re.compile(r"^## `mgpu_io\.(\w+)(\(.*\))(?: -> [^`]+)?`$", re.M)


def _documented_names():
    names = {m.group(1) for m in _HEADING.finditer(API_DOC)}
    reports = API_DOC.split("## Reports", 1)[1].split("\n## ", 1)[0]
    errors = API_DOC.split("## Errors", 1)[1].split("\n## ", 1)[0]
    names |= set(re.findall(r"`mgpu_io\.(\w+)`", reports))
    names |= set(re.findall(r"`(?:mgpu_io\.)?([A-Z]\w+)`", errors)) - set(dir(builtins))  # not ValueError
    return names


def test_the_api_page_lists_exactly_what_mgpu_io_exports():
    import mgpu_io

    assert _documented_names() == set(mgpu_io.__all__)
    for name in mgpu_io.__all__:
        getattr(mgpu_io, name)  # each export resolves


def _parameters(text):
    """(name, kind, default) of a documented signature, read with ast (defaults as literals)."""
    import ast

    args = ast.parse(f"def f{text}: pass").body[0].args
    rows = []
    positional = args.posonlyargs + args.args
    defaults = [None] * (len(positional) - len(args.defaults)) + list(args.defaults)
    for arg, default in zip(positional, defaults):
        rows.append((arg.arg, "positional", ast.literal_eval(default) if default is not None else "<required>"))
    for arg, default in zip(args.kwonlyargs, args.kw_defaults):
        rows.append((arg.arg, "keyword", ast.literal_eval(default) if default is not None else "<required>"))
    return rows


def _code_parameters(function):
    import inspect as pyinspect

    rows = []
    for parameter in pyinspect.signature(function).parameters.values():
        kind = "keyword" if parameter.kind is parameter.KEYWORD_ONLY else "positional"
        default = "<required>" if parameter.default is parameter.empty else parameter.default
        rows.append((parameter.name, kind, default))
    return rows


def test_every_documented_signature_is_the_codes():
    import mgpu_io

    headings = list(_HEADING.finditer(API_DOC))
    assert len(headings) >= 8
    for match in headings:
        name, documented = match.group(1), match.group(2)
        assert _parameters(documented) == _code_parameters(getattr(mgpu_io, name)), name


def test_every_report_lists_its_fields():
    import dataclasses

    import mgpu_io

    reports = API_DOC.split("## Reports", 1)[1].split("\n## ", 1)[0]
    for line in reports.splitlines():
        found = re.match(r"- `mgpu_io\.(\w+)` \([^)]*\): (.*)$", line)
        if found:
            fields = re.findall(r"`(\w+)`", found.group(2))
            assert fields == [f.name for f in dataclasses.fields(getattr(mgpu_io, found.group(1)))], found.group(1)


# --- every block a user would paste runs as written ------------------------------------------------------------

#: Pages whose blocks another test runs whole, in their own set-up.
RUN_ELSEWHERE = {
    "docs/quickstart.md": "test_the_quickstart_runs_verbatim_from_the_repository_root",
    "docs/checkpoint.md": "test_the_checkpoint_guides_examples_run_as_written",
    "docs/api.md": "pytest's doctest of docs/api.md (testpaths)",
    "docs/cli-reference.md": "generated from --help; test_the_cli_reference_is_generated_from_the_current_help",
    "docs/scale.md": "tests/unwrap/test_scale.py (it needs Dask, and runs the recipe as a script twice)",
}
_BLOCK = re.compile(r"(<!-- not run: ([^>]*?) -->\n)?```(bash|console|python)\n(.*?)```", re.S)


def _pages():
    return [ROOT / "README.md"] + sorted((ROOT / "docs").glob("*.md"))


def _blocks(page):
    """``(language, code, reason not run or None)`` of each bash, console and python block of a page."""
    return [(m.group(3), m.group(4), m.group(2)) for m in _BLOCK.finditer(page.read_text())]


def _scratch(tmp_path):
    """A folder like a clone's root, for pasting: the fixtures and tests where the docs name them, outputs here."""
    for name in ("fixtures", "tests"):
        (tmp_path / name).symlink_to(ROOT / name)
    return tmp_path


def _environment():
    import os

    env = dict(os.environ, PYTHONPATH=str(ROOT), COLUMNS="200", NO_COLOR="1")
    env["PATH"] = str(Path(sys.executable).parent) + os.pathsep + env.get("PATH", "")
    return env


PASTED = [page for page in _pages() if str(page.relative_to(ROOT)) not in RUN_ELSEWHERE and _blocks(page)]


@pytest.fixture(scope="module")
def warm(tmp_path_factory):
    """Pasted ``python -c`` and ``mgpu-io`` commands forked from a process that has imported Keras already
    (tests/support/warm_python.py): the same commands, without each paying Keras' import (3.7 CPU-seconds). The
    quickstart and ``make demo`` run as real processes: they are what a newcomer starts."""
    from warm_python import WarmPython

    server = WarmPython(tmp_path_factory.mktemp("warm"), _environment())
    yield server
    server.close()


def test_a_warm_command_answers_as_the_real_one_does(warm, tmp_path):
    """The pasted blocks' commands run through tests/support/warm_python.py: each says what the real process says,
    on the same streams, with the same exit code; a failing block fails there as it would pasted."""
    import subprocess

    env = warm.environment(_environment())
    python, real_python = str(warm.bin() / "python"), sys.executable
    real_cli = str(Path(sys.executable).parent / "mgpu-io")
    fixture = str(FIXTURES / "k224_functional_bn_x2_full.h5")
    pairs = [
        ([python, "-c", "import sys; print(sys.argv[1:]); sys.exit(3)", "a"],
         [real_python, "-c", "import sys; print(sys.argv[1:]); sys.exit(3)", "a"]),
        ([python, "-c", "raise ValueError('a block that fails')"],
         [real_python, "-c", "raise ValueError('a block that fails')"]),
        (["mgpu-io", "inspect", fixture], [real_cli, "inspect", fixture]),
        (["mgpu-io", "inspect", "missing.h5"], [real_cli, "inspect", "missing.h5"]),
    ]
    for warm_command, real_command in pairs:
        ours = subprocess.run(warm_command, cwd=tmp_path, env=env, capture_output=True, text=True, timeout=600)
        theirs = subprocess.run(real_command, cwd=tmp_path, env=_environment(), capture_output=True, text=True,
                                timeout=600)
        assert (ours.returncode, ours.stdout, ours.stderr) == (theirs.returncode, theirs.stdout, theirs.stderr)
    assert ours.returncode == 1 and ours.stderr.startswith("Error: Cannot read the input file.")


@pytest.mark.parametrize("page", PASTED, ids=lambda p: str(p.relative_to(ROOT)))
def test_every_block_a_user_would_paste_runs_as_written(page, tmp_path, warm):
    """Shell blocks run with bash -e, console blocks' commands print what the page shows, Python blocks run; all in
    one folder per page, in order (a later block may use an earlier one's output), as a user pasting them would."""
    import subprocess

    cwd, env = _scratch(tmp_path), warm.environment(_environment())
    python = str(warm.bin() / "python")
    ran = 0
    for language, code, not_run in _blocks(page):
        if not_run is not None:
            assert len(not_run.split()) >= 3, f"{page.name}: say why a block is not run"
            continue
        if language == "bash":
            result = subprocess.run(["bash", "-e", "-c", code], cwd=cwd, env=env, capture_output=True, text=True,
                                    timeout=600)
            assert result.returncode == 0, f"{page.name}:\n{code}\n{result.stdout[-2000:]}{result.stderr[-3000:]}"
        elif language == "python":
            result = subprocess.run([python, "-c", code], cwd=cwd, env=env, capture_output=True, text=True,
                                    timeout=600)
            assert result.returncode == 0, f"{page.name}:\n{code}\n{result.stderr[-3000:]}"
        else:
            for command, shown in re.findall(r"^\$ (.*)\n((?:(?!\$ ).*\n?)*)", code, re.M):
                result = subprocess.run(["bash", "-c", command], cwd=cwd, env=env, capture_output=True, text=True,
                                        timeout=600)
                assert result.returncode == 0, f"{page.name}: $ {command}\n{result.stderr[-2000:]}"
                assert result.stdout.rstrip("\n") == shown.rstrip("\n"), f"{page.name}: $ {command}"
        ran += 1
    assert ran, f"{page.name}: no block ran"


def test_no_page_keeps_a_block_that_would_fail_pasted_unmarked():
    """The placeholders users pasted and saw fail (parallel_model.h5, weights.h5, my_lambdas.py) are gone from every
    block that is run."""
    placeholders = ("parallel_model.h5", "weights-epoch10.h5", "my_lambdas", "saved_model_dir", "cudnn_parallel.h5")
    for page in PASTED:
        for language, code, not_run in _blocks(page):
            if not_run is None and language != "console":
                assert not [p for p in placeholders if p in code], (page.name, code[:200])
