"""Generate docs/cli-reference.md from the commands' own --help (run this file to update it; a test fails when the
committed page is stale, or when a command has no help or no example)."""

import re
from pathlib import Path

import typer

from mgpu_io.cli import app
from helpers import runner  # noqa: E402  (tests/support/helpers.py: the one CLI runner)

PAGE = Path(__file__).resolve().parents[2] / "docs" / "cli-reference.md"


def commands():
    group = typer.main.get_command(app)
    return [(name, group.commands[name]) for name in sorted(group.commands)]


def help_text(*args):
    result = runner.invoke(app, [*args, "--help"], env={"COLUMNS": "100", "TERM": "dumb"}, color=False)
    assert result.exit_code == 0, result.output
    return re.sub(r"\x1b\[[0-9;]*m", "", result.stdout).rstrip()


def render():
    parts = ["# Command-line reference", "",
             "Generated from `mgpu-io --help` by `python tests/support/cli_reference.py`; do not edit by hand.", "",
             "```", help_text(), "```"]
    for name, _ in commands():
        parts += ["", f"## `mgpu-io {name}`", "", "```", help_text(name), "```"]
    return "\n".join(parts) + "\n"


if __name__ == "__main__":
    PAGE.write_text(render())
    print(f"wrote {PAGE}")
