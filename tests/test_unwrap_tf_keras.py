"""A user who stays on the Keras 2 API (tf_keras on current TensorFlow) repairs a wrapper file.

The normalised output loads in tf_keras too; with --keep-config the writer's config is written verbatim, which is
exactly what tf_keras (and the old Keras) read, including for Keras 2 hard_sigmoid recurrent layers.
"""

import json

import h5py
import pytest
from conftest import FIXTURES, assert_predictions_match, fixture_batch, fixture_path, fixtures, predict

from mgpu_io import unwrap
from mgpu_io.graph import unroll
from mgpu_io.stored import open_stored

tf_keras = pytest.importorskip("tf_keras")
from templates import BUILDERS, NEEDS_ARCHITECTURE  # noqa: E402

KERAS2_WRITERS = lambda entry: not entry["keras_version"].startswith("1.")  # noqa: E731
HARD_SIGMOID = {"k224_conv1d_bilstm_x2_full.h5"}  # rescaled for Keras 3 unless --keep-config


@pytest.mark.parametrize("entry", fixtures("model", where=lambda e: e["file"] not in HARD_SIGMOID))
def test_the_normalised_output_also_loads_in_tf_keras(entry, tmp_path):
    out = tmp_path / "model.h5"
    unwrap(fixture_path(entry), out)
    xs, ys = fixture_batch(entry)
    assert_predictions_match(predict(tf_keras.models.load_model(out), xs), ys)


@pytest.mark.parametrize("entry", fixtures("model", where=KERAS2_WRITERS))
def test_keep_config_writes_the_writers_template_config_verbatim_for_tf_keras(entry, tmp_path):
    out = tmp_path / "model.h5"
    report = unwrap(fixture_path(entry), out, keep_config=True)
    assert report.config == "verbatim" and report.config_changes == []
    with open_stored(fixture_path(entry)) as stored:
        template = unroll(stored.model_config).template
    with h5py.File(out, "r") as written:
        assert json.loads(written.attrs["model_config"]) == template
    xs, ys = fixture_batch(entry)
    assert_predictions_match(predict(tf_keras.models.load_model(out), xs), ys)


@pytest.mark.parametrize("entry", fixtures("weights"))
def test_repaired_weights_load_into_the_template_built_in_tf_keras_code(entry, tmp_path):
    out = tmp_path / "weights.h5"
    if entry["file"] in NEEDS_ARCHITECTURE:  # tf_keras keeps Keras 2's hard_sigmoid and nesting: verbatim layout
        unwrap(fixture_path(entry), out, config=FIXTURES / NEEDS_ARCHITECTURE[entry["file"]]["config"],
               keep_config=True)
    else:
        unwrap(fixture_path(entry), out)
    model = BUILDERS[entry["file"]](tf_keras)
    model.load_weights(out)
    xs, ys = fixture_batch(entry)
    assert_predictions_match(predict(model, xs), ys)
