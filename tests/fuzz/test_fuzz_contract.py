"""The contract for hostile and broken input files (issue 9), on a fast deterministic slice of the fuzzer.

Every input, through every entry point (Python API, in-process CLI, Keras adapters, and the real console script for
some): a correct result or ONE clean typed error; never a raw exception or a traceback, never a hang or a memory
bomb, the input unchanged, nothing left in the output folder. The slice is the first ``harness.QUICK_COUNT`` inputs
of seed 0: one per mutator class (tests/fuzz/mutate.py), the same bytes on every run.

Run it alone with ``.venv/bin/python -m pytest -m fuzz tests/fuzz``; the long run is
``.venv/bin/python tests/fuzz/harness.py --seed 0 --count 2000 --jobs 2 --json out.json``.
"""

import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parent))
import harness  # noqa: E402
import mutate  # noqa: E402

pytestmark = pytest.mark.fuzz


@pytest.fixture(scope="module")
def run(tmp_path_factory):
    return harness.run_fuzz(quick=True, jobs=2, workdir=tmp_path_factory.mktemp("fuzz"))


def test_the_slice_covers_every_mutator_class_and_entry_point(run):
    tried = {record["mutator"] for record in run.results}
    assert tried == {m.name for m in mutate.MUTATORS}, f"no input made for {sorted(set(mutate.BY_NAME) - tried)}"
    assert not run.generation_failures
    entries = {result["entry"] for record in run.results for result in record["results"]}
    expected = set(harness.API_ENTRIES + harness.CLI_ENTRIES + harness.PROC_ENTRIES + harness.LAMBDA_ENTRIES)
    if run.options.keras:
        expected |= set(harness.KERAS_ENTRIES + harness.TRUSTED_ENTRIES)
    assert entries == expected


def test_every_input_gets_a_result_or_one_clean_typed_error(run):
    counts = run.counts()
    report = run.summary()
    assert counts.get("harness-error", 0) == 0, report
    assert counts["raw"] == 0, report
    assert counts["traceback"] == 0, report
    assert counts["bad-cli-output"] == 0, report
    assert counts["crash"] == 0, report


def test_no_input_hangs_or_bombs(run):
    counts = run.counts()
    report = run.summary()
    assert counts["hang"] == 0, report
    assert counts["bomb"] == 0, report
    assert counts["high-memory"] == 0, report


def test_inputs_are_unchanged_and_nothing_is_left_over(run):
    counts = run.counts()
    report = run.summary()
    assert counts["input-modified"] == 0, report
    assert counts["leftover"] == 0, report
    assert counts["bad-output"] == 0, report
