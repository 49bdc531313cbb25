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
