"""A user who stays on the Keras 2 API (tf_keras on current TensorFlow) repairs a wrapper file.

`--target tf_keras` writes the normalised file for tf_keras (Keras 2's hard_sigmoid left as it is); the Keras 3
file loads in tf_keras too; with --keep-config the writer's config is written verbatim, which tf_keras also reads.
"""

import json

import h5py
import numpy as np
import pytest
from helpers import FIXTURES, assert_predictions_match, has_user_lambda, fixture_batch, fixture_path, fixtures, predict

from mgpu_io import unwrap
from mgpu_io.format.detect import unroll
from mgpu_io.format.read import open_stored

tf_keras = pytest.importorskip("tf_keras")
from templates import BUILDERS, unwrap_options  # noqa: E402

# tf_keras reads Keras 2 configs but not Keras 1 configs or CuDNN layers (legacy-format.md §7).
VERBATIM_READABLE = lambda e: not e["keras_version"].startswith("1.") and "cudnn" not in e["file"]  # noqa: E731
# The template's own Lambda holds Python 3.7 bytecode, which tf_keras would try to run: out of scope here.
LOADABLE = lambda e: not has_user_lambda(e)  # noqa: E731


@pytest.mark.parametrize("entry", fixtures("model", where=LOADABLE))
def test_the_output_for_tf_keras_predicts_like_the_old_keras(entry, tmp_path):
    out = tmp_path / "model.h5"
    unwrap(fixture_path(entry), out, target="tf_keras")
    xs, ys = fixture_batch(entry)
    assert_predictions_match(predict(tf_keras.models.load_model(out), xs), ys)


@pytest.mark.parametrize("entry", fixtures("model", where=LOADABLE))
def test_the_output_for_keras3_loads_in_tf_keras_too(entry, tmp_path):
    out = tmp_path / "model.h5"
    report = unwrap(fixture_path(entry), out)
    xs, ys = fixture_batch(entry)
    predictions = predict(tf_keras.models.load_model(out), xs)
    if "hard-sigmoid-gates-rescaled" in report.config_changes:  # exact for Keras 3 only: tf_keras must differ
        flat = np.concatenate([np.ravel(p) for p in (predictions if isinstance(predictions, list) else [predictions])])
        assert np.abs(flat - np.concatenate([np.ravel(y) for y in ys])).max() > 1e-3
    else:
        assert_predictions_match(predictions, ys)


@pytest.mark.parametrize("entry", fixtures("model", where=lambda e: VERBATIM_READABLE(e) and LOADABLE(e)))
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
    unwrap(fixture_path(entry), out, **unwrap_options(entry["file"], "tf_keras", FIXTURES))
    model = BUILDERS[entry["file"]](tf_keras)
    model.load_weights(out)
    xs, ys = fixture_batch(entry)
    assert_predictions_match(predict(model, xs), ys)


def test_keep_config_with_cpu_converts_only_the_cudnn_layers(tmp_path):
    """For the old Keras on a CPU: the writer's config as it was, but CuDNN layers that a CPU can run."""
    entry = next(p.values[0] for p in fixtures("model") if p.values[0]["file"] == "k224_cudnn_x2_full.h5")
    out = tmp_path / "model.h5"
    report = unwrap(fixture_path(entry), out, keep_config=True, cpu=True)
    assert report.config_changes == ["cudnn-to-standard-rnn", "cudnn-weights"]
    with open_stored(fixture_path(entry)) as stored:
        original = json.dumps(unroll(stored.model_config).template)
    with h5py.File(out, "r") as written:
        converted = written.attrs["model_config"]
    assert json.loads(converted.replace('"LSTM"', '"CuDNNLSTM"').replace('"GRU"', '"CuDNNGRU"').replace(
        ', "activation": "tanh", "recurrent_activation": "sigmoid", "use_bias": true', "").replace(
        ', "reset_after": true', "")) == json.loads(original)
    xs, ys = fixture_batch(entry)
    assert_predictions_match(predict(tf_keras.models.load_model(out), xs), ys)


@pytest.mark.parametrize("name", ["k224_user_lambdas_x2_full.h5", "k224_inception_resnet_x2_full.h5"])
def test_lambdas_written_by_name_load_in_tf_keras_with_custom_objects(name, tmp_path):
    """target='tf_keras' spells each Lambda reference the Keras 2 way: a bare function name."""
    import tensorflow as tf

    user = {"preprocess": lambda x: x / 127.5 - 1,
            "channel_stats": lambda x: tf.concat([tf.reduce_mean(x, -1, keepdims=True),
                                                  tf.reduce_max(x, -1, keepdims=True)], -1),
            "scale_by_factor": lambda x, factor: x * factor,
            "square_features": lambda x: tf.concat([x, tf.square(x)], -1),
            "gate": lambda t: t[0] * t[1], "l2_norm": lambda x: tf.math.l2_normalize(x, axis=-1),
            "mgpu_io>inception_resnet_scale": lambda inputs, scale: inputs[0] + inputs[1] * scale}
    entry = {"folder": "applications", "file": name, "data": name.replace("_full.h5", ".npz")}
    out = tmp_path / "model.h5"
    unwrap(fixture_path(entry), out, target="tf_keras")
    xs, ys = fixture_batch(entry)
    assert_predictions_match(predict(tf_keras.models.load_model(out, custom_objects=user, compile=False), xs), ys)
