"""A model built to train on (``load_model``, ``compile=True``) trains by its writer's arithmetic where Keras 3's
differs, without changing what it predicts or what it saves: BatchNormalization's moving statistics
(mgpu_io/keras/writer_batchnorm.py) and cross-entropy's route (mgpu_io/keras/writer_crossentropy.py). That the
writers' K steps are reproduced is tests/checkpoints/test_resume_rules.py's (the ``conv_bn`` fixtures)."""

import sys
from pathlib import Path

import numpy as np
import pytest

sys.path.insert(0, str(Path(__file__).parents[1] / "support"))
from resume_rules import OPTIMIZERS, entries, loaded, stored_batches

import mgpu_io
from mgpu_io.keras.writer_batchnorm import moving_statistics_rule
from mgpu_io.keras.writer_crossentropy import _writers_functions, clip, writers_loss

keras = pytest.importorskip("keras")
CONV_BN = {entry["file"]: entry for entry in entries() if entry.get("model") == "conv_bn"}


@pytest.mark.parametrize("name", ["k224_conv_bn_adam.h5", "tfk115_conv_bn_rmsprop.h5"])
def test_what_the_model_predicts_is_unchanged(name):
    entry = CONV_BN[name]
    trained, _ = loaded(entry)
    plain = mgpu_io.load_model(OPTIMIZERS / name, compile=False)
    x = stored_batches(entry)[1][0][0][0]
    np.testing.assert_array_equal(trained.predict(x, verbose=0), plain.predict(x, verbose=0))
    np.testing.assert_array_equal(trained([x], training=False), plain([x], training=False))
    np.testing.assert_array_equal(trained([x], training=True), plain([x], training=True))  # the normalization too


def test_the_first_update_after_a_load_is_the_batchs_own_statistics_as_the_writers_reload():
    """Keras 2.2.4's zero-debiased average starts its hidden counters again at each load."""
    entry = CONV_BN["k224_conv_bn_adam.h5"]
    model, _ = loaded(entry)
    x = stored_batches(entry)[1][0][0][0]
    conv = keras.Model(model.inputs, model.get_layer("conv_1").output)([x])
    model([x], training=True)
    batch_mean = np.asarray(conv, "float64").reshape(-1, 8).mean(axis=0)
    np.testing.assert_allclose(np.asarray(model.get_layer("bn_1").moving_mean), batch_mean, rtol=1e-5, atol=1e-6)


def test_a_model_trained_by_the_writers_rules_saves_what_plain_keras_loads(tmp_path):
    entry = CONV_BN["k224_conv_bn_rmsprop.h5"]
    model, _ = loaded(entry)
    assert len(model.weights) == 12 and model.get_layer("bn_1").call.mgpu_io_writer_rule.zero_debias
    xs, y = stored_batches(entry)[1][0]
    model.train_on_batch(xs[0], y)
    for name in ("model.keras", "model.h5"):
        model.save(tmp_path / name)
        again = keras.models.load_model(tmp_path / name)  # plain Keras 3
        assert len(again.weights) == len(model.weights)
        for theirs, ours in zip(again.get_weights(), model.get_weights(), strict=True):
            np.testing.assert_array_equal(theirs, ours)
        assert "call" not in vars(again.get_layer("bn_1"))


@pytest.mark.parametrize(
    "name, debiased, bessel, sample_variance, probabilities",
    [
        ("k208_conv_bn_adam.h5", None, None, None, True),  # Keras 2.0.8: Keras 3's statistics
        ("k216_conv_bn_adam.h5", True, True, True, True),
        ("k224_conv_bn_adam.h5", True, True, True, True),
        ("tfk115_conv_bn_adam.h5", False, True, False, False),
    ],
)
def test_each_writer_gets_its_own_rules(name, debiased, bessel, sample_variance, probabilities):
    entry = CONV_BN[name]
    model, _ = loaded(entry)
    rule = getattr(model.get_layer("bn_1").call, "mgpu_io_writer_rule", None)
    assert rule == moving_statistics_rule(entry["keras_version"], "tensorflow")
    if debiased is None:
        assert rule is None
    else:
        assert (rule.zero_debias, rule.fused(4, -1), rule.sample_variance) == (debiased, bessel, sample_variance)
    assert getattr(model.compute_loss, "mgpu_io_probabilities", False) == probabilities


@pytest.mark.parametrize("name", ["categorical_crossentropy", "sparse_categorical_crossentropy", "binary_crossentropy"])
def test_the_writers_crossentropy_is_keras3s_to_rounding(name):
    """Off TensorFlow, a writer that computed from the probabilities trains on these (writer_crossentropy.py)."""
    rng = np.random.default_rng(0)
    y_pred = rng.dirichlet(np.ones(3), size=16).astype("float32")
    y_pred[0] = [1.0, 0.0, 0.0]  # on and past the clip's bounds
    y_true = {"categorical_crossentropy": np.eye(3)[rng.integers(0, 3, 16)],
              "sparse_categorical_crossentropy": rng.integers(0, 3, (16, 1)),
              "binary_crossentropy": rng.integers(0, 2, (16, 3)).astype("float32")}[name]
    ours, theirs = writers_loss(name)(y_true, y_pred), keras.losses.get(name)(y_true, y_pred)
    np.testing.assert_allclose(np.asarray(ours), np.asarray(theirs), rtol=1e-5, atol=1e-6)


def test_the_clip_hands_a_value_on_its_bound_the_whole_gradient_as_tensorflow_did():
    tf = pytest.importorskip("tensorflow")
    x = tf.constant([0.5, 1.0, 2.0, 0.0, -1.0])
    with tf.GradientTape() as tape:
        tape.watch(x)
        y = tf.reduce_sum(clip(x, 0.0, 1.0))
    assert tape.gradient(y, x).numpy().tolist() == [1.0, 1.0, 0.0, 1.0, 0.0]


def test_a_model_trained_on_the_writers_functions_saves_keras3s_loss(tmp_path):
    """What the JAX backend gets (mgpu_io/keras/writer_crossentropy.py), run here on TensorFlow: the compiled losses
    are the writer's functions under Keras' names, and the compile config, which a saved file holds, is Keras'."""
    model = keras.Sequential([keras.Input((2,)), keras.layers.Dense(3, activation="softmax", name="out")])
    model.compile(optimizer="sgd", loss="categorical_crossentropy", metrics=["accuracy"])
    config = model.get_compile_config()
    assert _writers_functions(model, keras)
    logs = model.train_on_batch(np.zeros((4, 2)), np.eye(3)[[0, 1, 2, 0]], return_dict=True)
    assert set(logs) == {"loss", "accuracy"}
    assert model.get_compile_config() == config
    model.save(tmp_path / "model.keras")
    assert keras.models.load_model(tmp_path / "model.keras").get_compile_config()["loss"] == "categorical_crossentropy"
    assert not _writers_functions(model, keras)  # built: Keras' losses stay as they are
