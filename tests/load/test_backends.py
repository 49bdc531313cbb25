"""A user on Keras 3 with JAX and no TensorFlow loads every wrapper file (issue: Keras 3 without TensorFlow).

`make test` builds `.venv-jax` (Keras 3 + JAX, no TensorFlow); this test runs tests/support/check_backend.py there
with KERAS_BACKEND=jax and checks what it measured. Without that environment it skips and says how to build it.
"""

import json
import subprocess

import pytest
from helpers import JAX_PYTHON, JAX_TOLERANCE, ROOT, jax_environment


@pytest.fixture(scope="module")
def measured():
    if not JAX_PYTHON.exists():
        pytest.skip("no .venv-jax: `make jax-env` (or `make test`) builds Keras 3 on JAX without TensorFlow")
    done = subprocess.run([str(JAX_PYTHON), str(ROOT / "tests" / "support" / "check_backend.py")], cwd=ROOT,
                          env=jax_environment(), capture_output=True, text=True, timeout=1200)
    assert done.returncode == 0, done.stderr[-3000:]
    return dict(json.loads(done.stdout.strip().splitlines()[-1]), stderr=done.stderr)


def test_every_full_model_loads_on_jax_without_tensorflow(measured):
    assert measured["backend"] == "jax" and not measured["tensorflow_imported"]
    assert measured["failures"] == {}
    assert len(measured["models"]) >= 60
    worst = max(measured["models"], key=measured["models"].get)
    assert measured["models"][worst] <= JAX_TOLERANCE, worst


def test_loading_on_jax_says_nothing_of_the_child_that_reads_the_file(measured):
    # The probe forks a child to read each file; JAX warns on every fork ("JAX is multithreaded"), which the child,
    # reading with h5py only, does not concern.
    assert "os.fork()" not in measured["stderr"]


def test_a_keras_output_and_transferred_weights_work_on_jax(measured):
    assert measured["keras_output"] <= JAX_TOLERANCE
    assert measured["transfer_ok"] and measured["transfer"] <= JAX_TOLERANCE


def test_tf_keras_2_4_to_2_15_files_predict_evaluate_and_train_on_jax(measured):
    """SlicingOpLambda, TFOpLambda, AddLoss and AddMetric of TF 2.5, 2.8 and 2.15's files: the writer's predictions,
    evaluate numbers (relative to values above 1) and predictions after one SGD step."""
    tfops = measured["tfops"]
    assert len(tfops) == 17
    failed = {name: value for name, value in tfops.items() if isinstance(value, str)}
    # the two files whose functions TensorFlow calls by name (tf.compat.v1.size, tf.compat.v1.shape with out_type)
    # are refused on JAX in one line naming the function and the backend that runs it
    assert sorted(failed) == ["tf215_movenet_classifier_full.h5", "tf215_outside_the_table_full.h5"]
    assert all(value.startswith("UnsupportedModel: A TFOpLambda calls tf.compat.v1.") and "jax backend has no "
               "function for" in value for value in failed.values()), failed  # (the record keeps 300 characters)
    assert max(value for value in tfops.values() if not isinstance(value, str)) <= JAX_TOLERANCE


def test_tf_keras_2_4_to_2_15_applications_predict_as_their_writer_on_jax(measured):
    """tf.keras 2.4-2.15's keras.applications templates (tests/load/test_tf2x_applications.py) on JAX, within
    JAX_TOLERANCE × max(1, max|prediction|) (logits up to about 13); tf.keras 2.4's RandomCrop is refused there too."""
    apps = measured["tf2x_applications"]
    assert len(apps) == 27
    refused = {name: value for name, value in apps.items() if isinstance(value, str)}
    assert list(refused) == ["tf24_random_crop_full.h5"] and "RandomCrop" in refused["tf24_random_crop_full.h5"]
    relative = {name: found / max(1.0, top) for name, (found, top) in
                ((n, v) for n, v in apps.items() if not isinstance(v, str))}
    worst = max(relative, key=relative.get)
    assert relative[worst] <= JAX_TOLERANCE, worst
