"""NaN BatchNormalization statistics after multi-GPU training: found, named, and recomputed from data."""

import warnings

import numpy as np
import pytest
from helpers import FIXTURES

import mgpu_io
from mgpu_io import MgpuIOWarning

keras = pytest.importorskip("keras")

NAN_FIXTURE = FIXTURES / "k224_bn_uneven_batch_x2_full.h5"


def data(rows=64, seed=7):
    return np.random.RandomState(seed).standard_normal((rows, 6)).astype("float32")


def test_recalibration_computes_the_population_statistics_of_the_layer_input():
    model = mgpu_io.load_model(FIXTURES / "k224_functional_bn_x2_full.h5", compile=False)
    x = data(1000)
    report = mgpu_io.recalibrate_batchnorm(model, x, only_non_finite=False, batch_size=96)
    assert (report.layers, report.samples, report.unrecoverable) == (["bn"], 1000, [])
    bn = model.get_layer("bn")
    inputs = np.asarray(keras.Model(model.inputs, bn.input).predict(x, verbose=0), dtype="float64")
    np.testing.assert_allclose(np.asarray(bn.moving_mean), inputs.mean(axis=0), rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(np.asarray(bn.moving_variance), inputs.var(axis=0), rtol=1e-5, atol=1e-6)


def test_only_broken_layers_are_touched_by_default():
    model = mgpu_io.load_model(FIXTURES / "k224_functional_bn_x2_full.h5", compile=False)
    before = np.asarray(model.get_layer("bn").moving_mean).copy()
    assert mgpu_io.recalibrate_batchnorm(model, data()).layers == []
    np.testing.assert_array_equal(np.asarray(model.get_layer("bn").moving_mean), before)


def test_the_uneven_batch_fixture_gets_finite_statistics_and_an_honest_report():
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", MgpuIOWarning)
        model = mgpu_io.load_model(NAN_FIXTURE, compile=False)
    bn = model.get_layer("bn")
    report = mgpu_io.recalibrate_batchnorm(model, [data()[i:i + 16] for i in range(0, 64, 16)])
    assert report.layers == ["bn"] and report.samples == 64
    assert np.isfinite(np.asarray(bn.moving_mean)).all() and np.isfinite(np.asarray(bn.moving_variance)).all()
    # The empty replica's gradient reached gamma in the old Keras: recalibration cannot bring it back, and says so.
    lost = [f"bn/{v.name}" for v in bn.trainable_weights if not np.isfinite(np.asarray(v)).all()]
    assert report.unrecoverable == lost
