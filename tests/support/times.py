"""How long each test command took, measured and written to tests/README.md's dated table (``make times``).

Two halves, so that no figure is typed by hand:

- **the recorder** (``record``, called by the repository's ``conftest.py`` at the end of a pytest session): where
  ``MGPU_IO_TIMES`` names a file, the session appends one JSON line to it: the command's label
  (``MGPU_IO_TIMES_LABEL``), the date, the commit, each outcome's count and the seconds of the tests;
- **the runner and writer** (this file as a script): ``run LABEL -- COMMAND...`` runs a command (``make test``) with
  the recorder on, adds the whole command's seconds (installs and linters included) to its line, and ``write``
  replaces the table between ``<!-- times -->`` markers in tests/README.md with the latest line of each command.

Usage (the Makefile's ``times`` target does this in a fresh clone)::

    python tests/support/times.py run "make test" --records build/times.jsonl -- make test
    python tests/support/times.py write --records build/times.jsonl --readme tests/README.md
"""

import argparse
import datetime
import json
import os
import subprocess
import sys
import time
from pathlib import Path

#: The outcomes a record counts, in the order the table lists them.
OUTCOMES = ("passed", "failed", "error", "skipped", "xfailed", "xpassed")
BEGIN, END = "<!-- times -->", "<!-- /times -->"


def claim():
    """Make this process the one whose session is recorded: the first pytest of the command (set at its
    ``conftest.py``'s import); a pytest that a test starts, or an xdist worker, inherits the claim and records
    nothing."""
    if os.environ.get("MGPU_IO_TIMES") and not os.environ.get("MGPU_IO_TIMES_PID"):
        os.environ["MGPU_IO_TIMES_PID"] = str(os.getpid())


def record(session, started):
    """Append this session's line to ``$MGPU_IO_TIMES`` (nothing where it is not set, in an xdist worker, or in a
    pytest that a test started: :func:`claim`)."""
    target = os.environ.get("MGPU_IO_TIMES")
    if not target or hasattr(session.config, "workerinput"):
        return
    if os.environ.get("MGPU_IO_TIMES_PID", str(os.getpid())) != str(os.getpid()):
        return
    reporter = session.config.pluginmanager.get_plugin("terminalreporter")
    stats = getattr(reporter, "stats", {}) if reporter is not None else {}
    counts = {outcome: len(stats.get(outcome, [])) for outcome in OUTCOMES}  # as pytest's summary line counts
    line = {"label": os.environ.get("MGPU_IO_TIMES_LABEL", "pytest"), "date": datetime.date.today().isoformat(),
            "commit": _commit(), "seconds": round(time.monotonic() - started, 1), **counts}
    with open(target, "a") as handle:
        handle.write(json.dumps(line) + "\n")


def _commit():
    try:
        return subprocess.run(["git", "rev-parse", "--short", "HEAD"], capture_output=True, text=True,
                              check=True).stdout.strip()
    except (OSError, subprocess.CalledProcessError):
        return "unknown"


def _machine():
    model = "unknown CPU"
    try:
        for text in Path("/proc/cpuinfo").read_text().splitlines():
            if text.startswith("model name"):
                model = text.split(":", 1)[1].strip()
                break
    except OSError:
        pass
    return f"{os.cpu_count()}-core {model}"


def run(label, command, records):
    """Run ``command`` with the recorder on; add the whole command's seconds and its exit code to its record."""
    environments = all(Path(name).exists() for name in (".venv", ".venv-jax"))
    started = time.monotonic()
    environment = {**os.environ, "MGPU_IO_TIMES": str(records), "MGPU_IO_TIMES_LABEL": label}
    environment.pop("MGPU_IO_TIMES_PID", None)
    code = subprocess.call(command, env=environment)
    whole = round(time.monotonic() - started, 1)
    lines = Path(records).read_text().splitlines() if Path(records).exists() else []
    if not lines or json.loads(lines[-1])["label"] != label:
        lines.append(json.dumps({"label": label, "date": datetime.date.today().isoformat(), "commit": _commit()}))
    last = json.loads(lines[-1])
    last.update(whole=whole, exit=code, machine=_machine(), environments_present=environments)
    lines[-1] = json.dumps(last)
    Path(records).write_text("\n".join(lines) + "\n")
    return code


def table(lines):
    """The markdown table of the latest record of each command."""
    latest = {}
    for line in lines:
        latest[line["label"]] = line
    rows = ["| command | measured | tests | time of tests | in all |", "|---|---|---|---|---|"]
    for label, line in latest.items():
        where = (f"{line['date']}, at `{line['commit']}`, in a fresh clone, {line.get('machine', 'this machine')}, "
                 + ("its environments already installed" if line.get("environments_present")
                    else "the Makefile installing its environments"))
        counts = ", ".join(f"{line[o]:,} {o}" for o in OUTCOMES if line.get(o))
        tests = f"{line['seconds']:.0f} s ({int(line['seconds'] // 60)} min {line['seconds'] % 60:.0f} s)" \
            if "seconds" in line else "no tests ran"
        whole = f"{line['whole']:.0f} s, exit code {line['exit']}" if "whole" in line else "-"
        rows.append(f"| `{label}` | {where} | {counts or '-'} | {tests} | {whole} |")
    return "\n".join(rows)


def write(records, readme):
    lines = [json.loads(text) for text in Path(records).read_text().splitlines() if text.strip()]
    page = Path(readme).read_text()
    start, end = page.index(BEGIN) + len(BEGIN), page.index(END)
    Path(readme).write_text(page[:start] + "\n" + table(lines) + "\n" + page[end:])


def main(argv=None):
    argv = sys.argv[1:] if argv is None else argv
    command = argv[argv.index("--") + 1:] if "--" in argv else []  # run's command, after "--"
    argv = argv[: argv.index("--")] if "--" in argv else argv
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    commands = parser.add_subparsers(dest="what", required=True)
    ran = commands.add_parser("run", help="run the command after -- with the recorder on")
    ran.add_argument("label")
    ran.add_argument("--records", required=True)
    written = commands.add_parser("write", help="write the table into tests/README.md")
    written.add_argument("--records", required=True)
    written.add_argument("--readme", default=str(Path(__file__).resolve().parents[1] / "README.md"))
    args = parser.parse_args(argv)
    if args.what == "run":
        if not command:
            parser.error("run needs a command after --")
        return run(args.label, command, Path(args.records).resolve())
    write(args.records, args.readme)
    return 0


if __name__ == "__main__":
    sys.exit(main())
