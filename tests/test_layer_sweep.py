"""Every layer of the era: each public layer class of each writer (fixtures/layers, written by the real Keras 1.2.2,
2.1.6, 2.2.4, 2.3.1, tf.keras 1.15, 2.0-2.4 and 2.15, and tf_keras) loads with the writer's own predictions, or is
refused by name with the reason and the fix. Never may a case load and predict something else.

The sweep runs once per module (tests/layer_sweep.py): Keras 3 here, tf_keras in a process beside it, and the
channels_first convolutions on Keras 3's JAX backend where this machine's TensorFlow has no GPU.
"""

import json
import subprocess
import sys
import warnings
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).parent))
import layer_sweep  # noqa: E402

pytestmark = pytest.mark.skipif(not layer_sweep.writers(), reason="no layer sweep in fixtures/layers")
keras = pytest.importorskip("keras")


@pytest.fixture(scope="module")
def sweep():
    tf_keras = subprocess.Popen([sys.executable, layer_sweep.__file__, "--tf-keras"], stdout=subprocess.PIPE,
                                stderr=subprocess.DEVNULL, text=True, env=layer_sweep._env())
    outcomes = layer_sweep.results()
    stdout, _ = tf_keras.communicate()
    assert tf_keras.returncode == 0, "tf_keras' side of the sweep failed"
    return outcomes, json.loads(stdout.strip().splitlines()[-1])


def test_no_case_loads_with_other_predictions_or_fails_with_a_raw_error(sweep):
    outcomes, _ = sweep
    failures = [f"{o.writer}/{o.case}: {o.status} {o.detail[:300]}" for o in outcomes
                if o.status in ("DIFFERS", "ERROR", "not run")]
    assert not failures, "\n".join(failures)


def test_every_refusal_is_typed_names_the_layer_class_and_says_what_to_do(sweep):
    outcomes, _ = sweep
    vague = []
    for outcome in (o for o in outcomes if o.status == "refused"):
        message = outcome.detail.split(": ", 1)[1]
        classes = set(layer_sweep.manifest(outcome.writer)["classes"]) | {outcome.cls}
        if not (any(cls in message for cls in classes) and "Received:" in message and
                any(fix in message for fix in ("transfer_weights", "Rebuild", "keep_config", "Pass "))):
            vague.append(f"{outcome.writer}/{outcome.case}: {message[:300]}")
    assert not vague, "\n".join(vague)


def test_load_model_loads_every_case_that_tf_keras_loads(sweep):
    outcomes, tf_keras = sweep
    ours = {f"{o.writer}/{o.case}": o for o in outcomes}
    behind = [f"{key}: {ours[key].status} {ours[key].detail[:200]}" for key, status in tf_keras.items()
              if status == "loads" and ours[key].status not in ("loads", "converted")]
    assert not behind, "\n".join(behind)
    assert sum(status == "loads" for status in tf_keras.values()) > 300  # the comparison is not empty


def test_every_class_in_each_writers_layers_namespace_is_accounted_for():
    for writer in layer_sweep.writers():
        manifest = layer_sweep.manifest(writer)
        assert len(manifest["classes"]) > 40, writer
        for cls, info in manifest["classes"].items():
            assert info["status"], (writer, cls)
            if info["status"] == "saved":
                assert info["cases"] and all(case in manifest["cases"] for case in info["cases"]), (writer, cls)


def test_the_layers_page_is_the_sweeps_current_result(sweep):
    outcomes, _ = sweep
    assert layer_sweep.PAGE.read_text() == layer_sweep.render(outcomes), \
        "docs/layers.md is stale: run `python tests/layer_sweep.py`"


def test_tensorflow_on_a_cpu_warns_of_channels_first_convolutions_instead_of_computing_something_else():
    import mgpu_io

    if keras.backend.backend() != "tensorflow" or layer_sweep._on_cpu_tensorflow() is False:
        pytest.skip("the warning is for Keras 3 on TensorFlow without a GPU")
    cases = [(w, c, e) for w in layer_sweep.writers() for c, e in layer_sweep.cases(w)
             if c == "Conv3D-channels_first"]
    assert cases
    writer, _, entry = cases[0]
    with pytest.warns(mgpu_io.MgpuIOWarning, match=r"data_format='channels_first'.*KERAS_BACKEND=jax"):
        mgpu_io.load_model(layer_sweep.SWEEP / writer / entry["file"], compile=False)


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
