"""Every layer of the era: each public layer class of each writer (fixtures/layers, written by the real Keras 1.2.2,
2.1.6, 2.2.4, 2.3.1, tf.keras 1.15, 2.0-2.4, 2.8, 2.10 and 2.15, and tf_keras) loads with the writer's own predictions, or is
refused by name with the reason and the fix. Never may a case load and predict something else.

Each writer is one class (TestSweep_<writer>), evaluated once for its tests: pytest-xdist (``--dist loadscope``)
gives each class to a worker of its own, so that a new writer adds a unit that runs beside the others, not time to
one long test. Keras 3 evaluates here; tf_keras (where its record does not hold: see
``test_tf_keras_still_does_what_its_record_says``), and the channels_first cases on TensorFlow with oneDNN off (what
an AMD CPU gets, whatever CI's CPU is) and on Keras 3's JAX backend (make test-all), each trained a step, in one process each per
pytest worker (tests/support/layer_sweep_server.py).
"""

import dataclasses
import json
import os
import re
import subprocess
import sys
import warnings
from pathlib import Path

import numpy as np
import pytest

sys.path.insert(0, str(Path(__file__).parents[1] / "support"))
import layer_sweep  # noqa: E402
from tiers import FULL_MATRIX, SWEEP_SAMPLE  # noqa: E402

pytestmark = pytest.mark.skipif(not layer_sweep.writers(), reason="no layer sweep in fixtures/layers")
keras = pytest.importorskip("keras")

SERVER = Path(__file__).parents[1] / "support" / "layer_sweep_server.py"


class _Server:
    """A tests/support/layer_sweep_server.py process, started on the first question."""

    def __init__(self, python, env):
        self.python, self.env, self.process = python, env, None

    def ask(self, request):
        if self.process is None:
            self.process = subprocess.Popen([str(self.python), str(SERVER)], stdin=subprocess.PIPE,
                                            stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True, env=self.env)
        self.process.stdin.write(json.dumps(request) + "\n")
        self.process.stdin.flush()

    def answer(self):
        line = self.process.stdout.readline()
        assert line, f"the sweep's {self.python} process ended without an answer"
        return json.loads(line)

    def close(self):
        if self.process is not None:
            self.process.stdin.close()
            self.process.wait(timeout=60)


@pytest.fixture(scope="session")
def servers():
    # tf_keras answers with oneDNN off, as on a CPU where TensorFlow has none: its pooling and convolutions with
    # channels_first run there only through oneDNN, so with it on its outcomes would be the CPU's, not tf_keras'.
    started = {"tf_keras": _Server(sys.executable, layer_sweep._env(**layer_sweep.NO_ONEDNN)),
               "no_onednn": _Server(sys.executable, layer_sweep._env(**layer_sweep.NO_ONEDNN)),
               "jax": _Server(layer_sweep.JAX_PYTHON, layer_sweep.jax_environment(TF_CPP_MIN_LOG_LEVEL="3"))}
    yield started
    for server in started.values():
        server.close()


def _sweep(writer, servers):
    """``(outcomes, {case key: tf_keras status})`` of one writer's cases, the processes working at once: the
    channels_first cases run (and train a step) on TensorFlow with oneDNN off, which gives their outcome. tf_keras'
    answers are taken from their record where it holds (tests/support/layer_sweep_tf_keras.json)."""
    recorded = layer_sweep.recorded_tf_keras(writer)
    if recorded is None:
        servers["tf_keras"].ask({"tf_keras": writer})
    here, there = layer_sweep.partition([writer])
    if there:
        servers["no_onednn"].ask({"evaluate": [f"{w}/{c}" for w, c, _ in there]})
    outcomes = []
    for _, case, entry in here:
        outcomes.append(layer_sweep.evaluate(writer, case, entry))
        keras.backend.clear_session(free_memory=False)
    if there:
        outcomes += [layer_sweep.Outcome(**fields) for fields in servers["no_onednn"].answer()]
    order = {case: i for i, (case, _) in enumerate(layer_sweep.cases(writer))}
    tf_keras = recorded if recorded is not None else servers["tf_keras"].answer()
    return sorted(outcomes, key=lambda o: order[o.case]), tf_keras


def _on_jax(writer, servers):
    """The channels_first cases of ``writer`` on Keras 3's JAX backend, each trained a step."""
    there = layer_sweep.partition([writer])[1]
    if not there or not layer_sweep.JAX_PYTHON.exists():
        return [layer_sweep.Outcome(w, c, e["class"], "not run", "needs .venv-jax (make jax-env)") for w, c, e in there]
    servers["jax"].ask({"evaluate": [f"{w}/{c}" for w, c, _ in there]})
    return [layer_sweep.Outcome(**fields) for fields in servers["jax"].answer()]


def _cells(row):
    return [cell.strip() for cell in re.split(r"(?<!\\)\|", row)[1:-1]]


class WriterSweep:
    """The sweep's checks of one writer (``writer``); a subclass per writer is made below."""

    writer = ""

    @pytest.fixture(scope="class")
    def sweep(self, servers):
        outcomes, tf_keras = _sweep(self.writer, servers)
        if os.environ.get("LAYER_SWEEP_KEEP"):  # a folder: `python tests/support/layer_sweep.py --from FOLDER` writes the page
            kept = Path(os.environ["LAYER_SWEEP_KEEP"]) / f"{self.writer}.json"
            kept.write_text(json.dumps([dataclasses.asdict(o) for o in outcomes]))
        return outcomes, tf_keras

    def test_no_case_loads_with_other_predictions_or_fails_with_a_raw_error(self, sweep):
        outcomes, _ = sweep
        assert len(outcomes) == len(layer_sweep.cases(self.writer))
        failures = [f"{o.writer}/{o.case}: {o.status} {o.detail[:300]}" for o in outcomes
                    if o.status in ("DIFFERS", "ERROR", "not run")]
        assert not failures, "\n".join(failures)

    def test_channels_first_cases_run_and_train_on_tensorflow_without_onednn(self, sweep):
        """A CPU without oneDNN (an AMD one) runs channels_first convolutions only through load_model's
        transposes: each such case predicts like its writer there and trains a step."""
        outcomes, _ = sweep
        first = {o.case: o for o in outcomes if o.backend == "tensorflow (oneDNN off)"}
        assert set(first) == {case for _, case, _ in layer_sweep.partition([self.writer])[1]}
        assert not [f"{c}: {o.status} {o.detail[:200]}" for c, o in first.items() if o.status in ("DIFFERS", "ERROR")]

    @getattr(pytest.mark, FULL_MATRIX)
    def test_channels_first_cases_do_on_jax_what_they_do_on_tensorflow(self, sweep, servers):
        """The same cases on Keras 3's JAX backend, which computes channels_first itself (make test-all)."""
        outcomes, _ = sweep
        first = {o.case: o for o in outcomes if o.backend == "tensorflow (oneDNN off)"}
        elsewhere = [f"{o.case}: {first[o.case].status} on TensorFlow, {o.status} on JAX {o.detail[:200]}"
                     for o in _on_jax(self.writer, servers) if o.status != first[o.case].status]
        assert not elsewhere, "\n".join(elsewhere)

    def test_every_refusal_is_typed_names_the_layer_class_and_says_what_to_do(self, sweep):
        outcomes, _ = sweep
        vague = []
        for outcome in (o for o in outcomes if o.status == "refused"):
            message = outcome.detail.split(": ", 1)[1]
            classes = set(layer_sweep.manifest(outcome.writer)["classes"]) | {outcome.cls}
            if not (any(cls in message for cls in classes) and "Received:" in message and
                    any(fix in message for fix in ("transfer_weights", "Rebuild", "keep_config", "Pass "))):
                vague.append(f"{outcome.writer}/{outcome.case}: {message[:300]}")
        assert not vague, "\n".join(vague)

    def test_load_model_loads_every_case_that_tf_keras_loads(self, sweep):
        outcomes, tf_keras = sweep
        ours = {f"{o.writer}/{o.case}": o for o in outcomes}
        assert set(tf_keras) == set(ours)  # tf_keras was asked about every case
        behind = [f"{key}: {ours[key].status} {ours[key].detail[:200]}" for key, status in tf_keras.items()
                  if status == "loads" and ours[key].status not in ("loads", "converted")]
        assert not behind, "\n".join(behind)

    def test_the_layers_page_shows_this_writers_current_result(self, sweep):
        outcomes, _ = sweep
        page = layer_sweep.PAGE.read_text().splitlines()
        stale = "docs/layers.md is stale: run `python tests/support/layer_sweep.py`"
        assert layer_sweep.writer_line(self.writer, outcomes) in page, stale
        header = next(line for line in page if line.startswith("| class |"))
        column = _cells(header).index(layer_sweep.WRITER_NAMES[self.writer])
        shown = {_cells(row)[0].strip("`"): _cells(row)[column] for row in page if row.startswith("| `")}
        expected = {cls: layer_sweep.cell(self.writer, cls, outcomes).replace("|", "\\|") for cls in shown}
        assert shown == expected, stale


for _writer in layer_sweep.writers():  # the writers outside the sample run in make test-all (tests/support/tiers.py)
    _marks = [] if _writer in SWEEP_SAMPLE else [getattr(pytest.mark, FULL_MATRIX)]
    globals()[f"TestSweep_{_writer}"] = type(f"TestSweep_{_writer}", (WriterSweep,),
                                             {"writer": _writer, "pytestmark": _marks})


def test_the_layers_page_lists_every_writer_and_class_and_its_counts_add_up():
    """What the per-writer checks do not see: the table's rows and columns, and the total line."""
    page = layer_sweep.PAGE.read_text().splitlines()
    present = layer_sweep.writers()
    header = next(line for line in page if line.startswith("| class |"))
    assert _cells(header) == ["class", *[layer_sweep.WRITER_NAMES[w] for w in present]]
    rows = [_cells(row)[0].strip("`") for row in page if row.startswith("| `")]
    assert rows == sorted({cls for w in present for cls in layer_sweep.manifest(w)["classes"]})
    lines = [line for line in page if line.startswith("- ")]
    assert [line[2:].split(":")[0] for line in lines] == [layer_sweep.WRITER_NAMES[w] for w in present]
    total, by_status = 0, {}
    for line in lines:
        count, statuses = re.fullmatch(r"- .*: (\d+) \((.*)\)", line).groups()
        total += int(count)
        for n, status in (part.split(" ", 1) for part in statuses.split(", ")):
            by_status[status] = by_status.get(status, 0) + int(n)
    assert total == sum(len(layer_sweep.cases(w)) for w in present)
    expected = f"{total} (" + ", ".join(f"{n} {status}" for status, n in sorted(by_status.items())) + ")"
    assert f"Cases: {expected}, by writer:" in page


def test_tf_keras_still_does_what_its_record_says(servers):
    """The record of tf_keras' outcomes is data like the writers' predictions: each run asks tf_keras again about a
    sample of it (per writer, the first case of each outcome), so that a wrong record fails here."""
    record = {w: layer_sweep.recorded_tf_keras(w) for w in layer_sweep.writers()}
    sample = {}
    for outcomes in filter(None, record.values()):
        for status in sorted(set(outcomes.values()) - {"not tried"}):
            key = min(key for key, found in outcomes.items() if found == status)
            sample[key] = status
    if not sample:
        pytest.skip("no record of tf_keras' outcomes holds here: the sweep asked tf_keras itself")
    servers["tf_keras"].ask({"tf_keras_cases": sorted(sample)})
    assert servers["tf_keras"].answer() == sample


def test_every_class_in_each_writers_layers_namespace_is_accounted_for():
    for writer in layer_sweep.writers():
        manifest = layer_sweep.manifest(writer)
        assert len(manifest["classes"]) > 40, writer
        for cls, info in manifest["classes"].items():
            assert info["status"], (writer, cls)
            if info["status"] == "saved":
                assert info["cases"] and all(case in manifest["cases"] for case in info["cases"]), (writer, cls)


def test_a_channels_first_model_loads_on_a_cpu_without_a_warning_and_says_what_it_did(caplog):
    """TensorFlow on a CPU runs channels_first convolutions transposed (mgpu_io.keras.runtime): no warning that
    sends the user to a GPU or to JAX, and the log says what was done."""
    import mgpu_io

    if keras.backend.backend() != "tensorflow":
        pytest.skip("the transposes are for Keras 3 on TensorFlow")
    cases = [(w, c, e) for w in layer_sweep.writers() for c, e in layer_sweep.cases(w) if c == "Conv2D-channels_first"]
    assert cases
    writer, case, entry = cases[0]
    with warnings.catch_warnings():
        warnings.simplefilter("error", mgpu_io.MgpuIOWarning)
        with caplog.at_level("INFO", logger="mgpu_io"):
            model = mgpu_io.load_model(layer_sweep.SWEEP / writer / entry["file"], compile=False)
    xs, ys = layer_sweep._batch(writer, case)
    assert np.max(np.abs(np.asarray(model(xs[0])) - ys[0])) <= layer_sweep.BOUND
    if layer_sweep.cpu_only_tensorflow():
        assert "run convolutions channels_last only" in caplog.text


def test_a_refusal_happens_before_keras_is_asked(tmp_path):
    """Removed classes and inexact layers are refused from the config alone: the CLI says so without Keras."""
    import mgpu_io

    refused = [(w, c, e) for w in layer_sweep.writers() for c, e in layer_sweep.cases(w) if c == "Highway"]
    if not refused:
        pytest.skip("no Highway case")
    writer, _, entry = refused[0]
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        with pytest.raises(mgpu_io.UnsupportedModel, match="Highway"):
            mgpu_io.unwrap(layer_sweep.SWEEP / writer / entry["file"], tmp_path / "out.h5", allow_plain=True)
