"""A user loads a legacy model on whatever CPU they own: channels_first convolutions run where TensorFlow has no
oneDNN (an AMD CPU, or ``TF_ENABLE_ONEDNN_OPTS=0``), and recurrent models predict at the old Keras' speed
(mgpu_io/keras/runtime.py). The layer sweep proves every writer's channels_first and recurrent cases against the
writers' predictions (tests/load/test_layer_sweep.py); these tests pin the mechanism itself."""

import json
import subprocess
import sys

import numpy as np
import pytest

keras = pytest.importorskip("keras")
from mgpu_io.keras.runtime import adapt  # noqa: E402

tensorflow_only = pytest.mark.skipif(keras.backend.backend() != "tensorflow", reason="Keras 3 on TensorFlow")

#: Runs in a process of its own with oneDNN off (the switch is read when TensorFlow starts): each channels_first layer
#: that TensorFlow's CPU kernels refuse, called before and after mgpu-io's transposes, against its channels_last twin
#: with the same weights, and one training step.
_NO_ONEDNN_SCRIPT = r"""
import json, sys, numpy as np, keras
L = keras.layers
cases = {
    "Conv1D": (L.Conv1D, dict(filters=4, kernel_size=3), (2, 3, 9)),
    "Conv2D": (L.Conv2D, dict(filters=4, kernel_size=3, strides=2, padding="same"), (2, 3, 9, 8)),
    "Conv2D-dilated": (L.Conv2D, dict(filters=4, kernel_size=3, dilation_rate=2), (2, 3, 9, 8)),
    "Conv3D": (L.Conv3D, dict(filters=4, kernel_size=3), (2, 3, 5, 6, 7)),
    "Conv1DTranspose": (L.Conv1DTranspose, dict(filters=4, kernel_size=3, strides=2), (2, 3, 9)),
    "Conv2DTranspose": (L.Conv2DTranspose, dict(filters=4, kernel_size=3, strides=2), (2, 3, 9, 8)),
    "Conv3DTranspose": (L.Conv3DTranspose, dict(filters=2, kernel_size=2, strides=2), (2, 3, 3, 4, 5)),
    "ConvLSTM2D": (L.ConvLSTM2D, dict(filters=4, kernel_size=3, return_sequences=True), (2, 4, 3, 7, 6)),
}

def twin_inputs(name, x):
    return np.moveaxis(x, 2, -1) if name.startswith("ConvLSTM") else np.moveaxis(x, 1, -1)

def twin_outputs(name, y):
    return np.moveaxis(y, -1, 2) if name.startswith("ConvLSTM") else np.moveaxis(y, -1, 1)

def run(transposed):
    found = {}
    for name, (cls, kwargs, shape) in cases.items():
        x = np.random.RandomState(0).randn(*shape).astype("float32")
        last = cls(**kwargs, data_format="channels_last")
        expected = twin_outputs(name, np.asarray(last(twin_inputs(name, x))))
        model = keras.Sequential([keras.Input(shape[1:]), cls(**kwargs, data_format="channels_first")])
        model.layers[0].set_weights(last.get_weights())
        if transposed:
            from mgpu_io.keras.runtime import adapt
            adapt(model, keras)
        try:
            got = model.predict(x, verbose=0)
            model.compile(optimizer="sgd", loss="mse")
            loss = float(model.train_on_batch(x, np.zeros_like(got)))
            found[name] = {"difference": float(np.max(np.abs(got - expected))), "loss": loss}
        except Exception as error:
            found[name] = {"error": type(error).__name__}
    return found

print(json.dumps({"plain": run(False), "transposed": run(True)}))
"""


@tensorflow_only
def test_channels_first_layers_that_tensorflows_cpu_kernels_refuse_run_transposed_and_train(tmp_path):
    from layer_sweep import NO_ONEDNN, _env

    done = subprocess.run([sys.executable, "-c", _NO_ONEDNN_SCRIPT], capture_output=True, text=True,
                          env=_env(**NO_ONEDNN, CUDA_VISIBLE_DEVICES=""), timeout=300)
    assert done.returncode == 0, done.stderr[-2000:]
    found = json.loads(done.stdout.strip().splitlines()[-1])
    # without the transposes, TensorFlow's Eigen kernels refuse them (Conv3D alone runs, compiled by XLA in Keras)
    assert {name for name, result in found["plain"].items() if "error" in result} == set(found["plain"]) - {"Conv3D"}
    for name, result in found["transposed"].items():
        assert "error" not in result, (name, result)
        assert result["difference"] <= 1e-5, (name, result)
        assert np.isfinite(result["loss"]), (name, result)


def _time_distributed_model():
    inputs = keras.Input((None, 6))
    outputs = keras.layers.TimeDistributed(keras.layers.Dense(3, activation="tanh"))(inputs)
    return keras.Model(inputs, outputs)


def test_a_time_distributed_layer_is_called_once_over_batch_and_time_with_keras_own_result():
    model = _time_distributed_model()
    x = np.random.RandomState(1).randn(2, 40, 6).astype("float32")
    expected = np.asarray(model(x))  # Keras 3's own call: one call per timestep
    notes = adapt(model, keras)
    assert any("TimeDistributed" in note for note in notes)
    calls = []
    dense = model.layers[-1].layer
    original = dense.call
    dense.call = lambda inputs, **kwargs: calls.append(tuple(inputs.shape)) or original(inputs, **kwargs)
    got = np.asarray(model(x))
    assert calls == [(80, 6)]  # 2 samples x 40 steps, one call
    np.testing.assert_allclose(got, expected, atol=1e-6)


def test_a_stateful_layer_inside_time_distributed_keeps_keras_own_call():
    inputs = keras.Input((5, 4), batch_size=2)
    outputs = keras.layers.TimeDistributed(keras.layers.Dense(3))(inputs)
    model = keras.Model(inputs, outputs)
    model.layers[-1].layer.stateful = True
    assert not any("TimeDistributed" in note for note in adapt(model, keras))


def _recurrent_model():
    inputs = keras.Input((None, 5))
    x = keras.layers.Bidirectional(keras.layers.GRU(8, reset_after=False, return_sequences=True, dropout=0.5))(inputs)
    outputs = keras.layers.LSTM(4)(x)
    return keras.Model(inputs, outputs)


@tensorflow_only
def test_an_eager_call_of_a_recurrent_model_runs_one_compiled_loop_and_predicts_what_keras_own_loop_does():
    import tensorflow as tf

    model = _recurrent_model()
    x = np.random.RandomState(2).randn(2, 30, 5).astype("float32")
    expected = np.asarray(model(x))
    notes = adapt(model, keras)
    assert any("Recurrent layers" in note for note in notes)
    steps = []
    cell = model.layers[-1].cell
    original = cell.call
    cell.call = lambda *args, **kwargs: steps.append(tf.executing_eagerly()) or original(*args, **kwargs)
    got = np.asarray(model(x))
    np.testing.assert_allclose(got, expected, atol=1e-6)
    assert steps and not any(steps)  # the cell ran inside a traced function, never step by step eagerly
    np.testing.assert_allclose(model.predict(x, verbose=0), expected, atol=1e-6)


@tensorflow_only
def test_a_training_call_keeps_keras_own_eager_loop_with_a_new_dropout_mask_each_time():
    model = _recurrent_model()
    adapt(model, keras)
    x = np.ones((2, 6, 5), "float32")
    first, second = (np.asarray(model(x, training=True)) for _ in range(2))
    assert not np.allclose(first, second)  # dropout drew again: no mask was frozen into a trace
    np.testing.assert_allclose(np.asarray(model(x)), np.asarray(model(x)))


def test_adapting_twice_changes_nothing_more():
    model = _time_distributed_model()
    adapt(model, keras)
    assert not any("TimeDistributed" in note for note in adapt(model, keras))


def test_a_model_saved_after_loading_keeps_keras_own_classes_and_data_format(tmp_path):
    inputs = keras.Input((3, 8, 8))
    x = keras.layers.Conv2D(2, 3, data_format="channels_first")(inputs)
    x = keras.layers.Reshape((2, 36))(x)
    outputs = keras.layers.TimeDistributed(keras.layers.Dense(2))(x)
    model = keras.Model(inputs, outputs)
    adapt(model, keras)
    model.save(tmp_path / "m.keras")
    config = json.dumps(keras.saving.load_model(tmp_path / "m.keras").get_config())
    assert '"data_format": "channels_first"' in config and '"class_name": "TimeDistributed"' in config
    assert "mgpu_io" not in config
