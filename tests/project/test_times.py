"""tests/README.md's table of how long the test commands take is written from what pytest recorded, never typed:
tests/support/times.py records each session (where MGPU_IO_TIMES names a file) and writes the latest record of each
command between the page's markers (``make times`` runs the commands in a fresh clone)."""

import json
import os
import subprocess
import sys
import time
from types import SimpleNamespace

from helpers import ROOT

import times


def _session(**stats):
    reporter = SimpleNamespace(stats={outcome: [object()] * count for outcome, count in stats.items()})
    plugins = SimpleNamespace(get_plugin=lambda name: reporter if name == "terminalreporter" else None)
    return SimpleNamespace(config=SimpleNamespace(pluginmanager=plugins))


def test_a_session_records_its_outcomes_and_seconds_where_asked(tmp_path, monkeypatch):
    records = tmp_path / "records.jsonl"
    monkeypatch.setenv("MGPU_IO_TIMES", str(records))
    monkeypatch.setenv("MGPU_IO_TIMES_LABEL", "make test")
    monkeypatch.delenv("MGPU_IO_TIMES_PID", raising=False)  # under `make times`, this run's own pytest claimed it
    times.record(_session(passed=3, skipped=1, xfailed=2), time.monotonic() - 12.5)
    [line] = [json.loads(text) for text in records.read_text().splitlines()]
    assert (line["label"], line["passed"], line["skipped"], line["xfailed"], line["failed"]) == ("make test", 3, 1, 2, 0)
    assert 12.5 <= line["seconds"] < 20


def test_nothing_is_recorded_unless_asked_or_by_a_worker(tmp_path, monkeypatch):
    monkeypatch.delenv("MGPU_IO_TIMES", raising=False)
    times.record(_session(passed=1), time.monotonic())
    monkeypatch.setenv("MGPU_IO_TIMES", str(tmp_path / "records.jsonl"))
    monkeypatch.delenv("MGPU_IO_TIMES_PID", raising=False)
    worker = _session(passed=1)
    worker.config.workerinput = {}
    times.record(worker, time.monotonic())
    assert not (tmp_path / "records.jsonl").exists()


def test_the_page_gets_the_latest_record_of_each_command_between_its_markers(tmp_path):
    readme = tmp_path / "README.md"
    readme.write_text(f"before\n{times.BEGIN}\nold figures\n{times.END}\nafter\n")
    records = tmp_path / "records.jsonl"
    lines = [dict(label="make test", date="2026-12-01", commit="aaaaaaa", seconds=600.0, passed=10, whole=700.0, exit=0),
             dict(label="make check", date="2026-12-07", commit="bbbbbbb", seconds=30.2, passed=5, skipped=1,
                  whole=33.0, exit=0, machine="2-core AMD EPYC", environments_present=True),
             dict(label="make test", date="2026-12-07", commit="ccccccc", seconds=562.0, passed=2517, skipped=2,
                  whole=564.0, exit=0, machine="2-core AMD EPYC", environments_present=False)]
    records.write_text("".join(json.dumps(line) + "\n" for line in lines))
    times.write(records, readme)
    page = readme.read_text()
    assert page.startswith("before\n") and page.endswith("after\n") and "old figures" not in page
    assert ("| `make test` | 2026-12-07, at `ccccccc`, in a fresh clone, 2-core AMD EPYC, the Makefile installing its "
            "environments | 2,517 passed, 2 skipped | 562 s (9 min 22 s) | 564 s, exit code 0 |") in page
    assert "aaaaaaa" not in page and "| 5 passed, 1 skipped | 30 s (0 min 30 s) | 33 s, exit code 0 |" in page


def test_a_real_pytest_session_writes_its_record(tmp_path):
    """pytest itself, through the repository's conftest.py, on one small test file of the core tier."""
    records = tmp_path / "records.jsonl"
    result = subprocess.run(
        [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", "tests/project/test_times.py", "-k",
         "latest_record"], cwd=ROOT, capture_output=True, text=True, timeout=300,
        env={**{k: v for k, v in os.environ.items() if k != "MGPU_IO_TIMES_PID"}, "MGPU_IO_TIMES": str(records),
             "MGPU_IO_TIMES_LABEL": "one file"})
    assert result.returncode == 0, result.stdout[-2000:]
    [line] = [json.loads(text) for text in records.read_text().splitlines()]
    assert (line["label"], line["passed"], line["failed"]) == ("one file", 1, 0)


def test_the_runner_adds_the_whole_commands_seconds_and_exit_code(tmp_path):
    """``times.py run LABEL --records FILE -- COMMAND``, as the Makefile's ``times`` target calls it."""
    records = tmp_path / "records.jsonl"
    code = times.main(["run", "a command", "--records", str(records), "--", sys.executable, "-c",
                       "import sys; sys.exit(3)"])
    [line] = [json.loads(text) for text in records.read_text().splitlines()]
    assert code == 3 and (line["label"], line["exit"]) == ("a command", 3) and line["whole"] >= 0


def test_a_pytest_started_by_a_test_records_nothing(tmp_path, monkeypatch):
    """The command's own pytest claims the record; a pytest that one of its tests starts inherits the claim."""
    records = tmp_path / "records.jsonl"
    monkeypatch.setenv("MGPU_IO_TIMES", str(records))
    monkeypatch.setenv("MGPU_IO_TIMES_PID", "1")  # another process claimed it
    times.record(_session(passed=1), time.monotonic())
    assert not records.exists()
