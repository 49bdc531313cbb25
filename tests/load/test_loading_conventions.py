"""A Keras user loads legacy files the ways Keras taught them: an open h5py.File, classes registered with Keras or
in a custom_object_scope, transfer_weights(strict=False) like skip_mismatch=True, layer names tf_keras wrote
(`conv1` beside `conv1/conv`, `private__scale`), and an optimizer of their own class. Every file here is written by
tf_keras in the test itself."""

import warnings
from pathlib import Path

import h5py
import numpy as np
import pytest
from helpers import FIXTURES

import mgpu_io
from mgpu_io import MgpuIOWarning

keras = pytest.importorskip("keras")
tf_keras = pytest.importorskip("tf_keras")
X = np.linspace(-1, 1, 8, dtype="float32").reshape(2, 4)


def test_load_model_transfer_weights_and_inspect_take_an_open_h5py_file_and_leave_it_open():
    path = FIXTURES / "k224_functional_bn_x2_full.h5"
    with h5py.File(path, "r") as h5:
        model = mgpu_io.load_model(h5)
        report = mgpu_io.inspect(h5)
        fresh = keras.models.clone_model(model)
        transferred = mgpu_io.transfer_weights(h5, fresh)
        assert h5.id.valid and h5.mode == "r" and "model_weights" in h5  # still open, still the caller's
    expected = mgpu_io.load_model(path)
    for ours, theirs in zip(model.get_weights(), expected.get_weights(), strict=True):
        np.testing.assert_array_equal(ours, theirs)
    assert report.file_type == "model" and report.template == mgpu_io.inspect(path).template
    assert transferred.ok and all(np.array_equal(a, b) for a, b in zip(fresh.get_weights(), expected.get_weights()))


def test_an_h5py_file_that_lives_in_memory_loads_as_keras_loads_it():
    """tf_keras' own test saves into h5py.File("_", driver="core", backing_store=False) and loads from it."""
    source = tf_keras.Sequential([tf_keras.Input((4,)), tf_keras.layers.Dense(3, name="d")])
    with h5py.File("in_memory.h5", "w", driver="core", backing_store=False) as h5:
        source.save(h5)
        model = mgpu_io.load_model(h5)
        assert h5.id.valid and "model_weights" in h5  # still open, still the caller's
    np.testing.assert_allclose(model.predict(X, verbose=0), source.predict(X, verbose=0), rtol=1e-6)
    assert not Path("in_memory.h5").exists()  # nothing written where the caller wrote nothing


class _TfInner(tf_keras.layers.Layer):
    def build(self, shape):
        self.w = self.add_weight(name="w", shape=(shape[-1], 3))

    def call(self, x):
        return x @ self.w


_TfInner.__name__ = "InnerLayer"  # as the user's class was called


class InnerLayer(keras.layers.Layer):  # the same layer, for Keras 3
    def build(self, shape):
        self.w = self.add_weight(name="w", shape=(shape[-1], 3))

    def call(self, x):
        return x @ self.w


def _custom_file(tmp_path):
    inputs = tf_keras.Input((4,), name="inp")
    model = tf_keras.Model(inputs, _TfInner(name="inner")(inputs), name="m")
    model.save(tmp_path / "custom.h5")
    return tmp_path / "custom.h5", model.predict(X, verbose=0)


@pytest.mark.parametrize("scope", ["keras.saving.custom_object_scope", "keras.utils.custom_object_scope"])
def test_a_class_in_a_custom_object_scope_is_found_like_custom_objects(scope, tmp_path):
    path, expected = _custom_file(tmp_path)
    enter = keras.saving.custom_object_scope if scope.startswith("keras.saving") else keras.utils.custom_object_scope
    with enter({"InnerLayer": InnerLayer}):
        model = mgpu_io.load_model(path)
    np.testing.assert_allclose(model.predict(X, verbose=0), expected, rtol=1e-6)


def test_a_class_registered_with_keras_is_found_by_the_plain_name_the_old_file_gives_it(tmp_path):
    path, expected = _custom_file(tmp_path)
    registered = keras.saving.register_keras_serializable(package="my_project")(
        type("InnerLayer", (InnerLayer,), {}))  # registered as "my_project>InnerLayer"
    try:
        model = mgpu_io.load_model(path)
    finally:
        keras.saving.get_custom_objects().pop("my_project>InnerLayer")
    assert type(model.get_layer("inner")) is registered
    np.testing.assert_allclose(model.predict(X, verbose=0), expected, rtol=1e-6)


def test_strict_false_skips_only_the_weights_that_do_not_fit_and_reports_each():
    inputs = keras.Input((4,))
    model = keras.Model(inputs, keras.layers.Dense(2, name="d")(keras.layers.Dense(3, name="h")(inputs)))
    source = tf_keras.Sequential([tf_keras.layers.Dense(3, input_shape=(5,), name="h"),
                                  tf_keras.layers.Dense(2, name="d")])  # h's kernel: 5 inputs, not 4
    kernel_before = model.get_layer("h").kernel.numpy().copy()
    report = mgpu_io.transfer_weights(source, model, strict=False)
    assert report.skipped == [{"index": 0, "layer": "h", "weight": "h/kernel", "expected": (4, 3),
                               "received": (5, 3)}]
    np.testing.assert_array_equal(model.get_layer("h").kernel.numpy(), kernel_before)  # left as it was
    np.testing.assert_array_equal(model.get_layer("h").bias.numpy(), source.get_layer("h").bias.numpy())  # loaded
    for ours, theirs in zip(model.get_layer("d").get_weights(), source.get_layer("d").get_weights(), strict=True):
        np.testing.assert_array_equal(ours, theirs)
    assert report.loaded == 1 and "! weight h/kernel of layer #0 left as it was" in str(report)


def test_a_layer_named_like_the_prefix_of_another_gets_its_own_weights(tmp_path):
    """keras_applications' DenseNet names layers `conv1/...`; a model that also has a layer `conv1` stores both in
    the group `conv1` (HDF5 makes `/` a subgroup)."""
    inputs = tf_keras.Input((4,), name="inp")
    model = tf_keras.Model(inputs, tf_keras.layers.Dense(2, name="conv1/conv")(
        tf_keras.layers.Dense(3, name="conv1")(inputs)), name="m")
    model.save(tmp_path / "full.h5")
    model.save_weights(tmp_path / "weights.h5")
    (tmp_path / "model.json").write_text(model.to_json())
    expected = model.predict(X, verbose=0)
    for loaded in (mgpu_io.load_model(tmp_path / "full.h5"),
                   mgpu_io.load_model(tmp_path / "model.json", weights=tmp_path / "weights.h5")):
        assert [layer.name for layer in loaded.layers] == ["inp", "conv1", "conv1_conv"]
        np.testing.assert_allclose(loaded.predict(X, verbose=0), expected, rtol=1e-6)


class _Scale(tf_keras.layers.Layer):  # tf_keras names it `private__scale`
    def build(self, shape):
        self.w = self.add_weight(name="w", shape=(shape[-1],), initializer="ones")

    def call(self, x):
        return x * self.w


class Scale(keras.layers.Layer):
    def build(self, shape):
        self.w = self.add_weight(name="w", shape=(shape[-1],), initializer="ones")

    def call(self, x):
        return x * self.w


def test_a_private_mangled_layer_name_gets_its_weights(tmp_path):
    inputs = tf_keras.Input((4,), name="inp")
    scale = _Scale()
    model = tf_keras.Model(inputs, tf_keras.layers.Dense(2, name="d")(scale(inputs)), name="m")
    scale.w.assign(np.arange(1, 5, dtype="float32"))
    assert scale.name == "private__scale"
    (tmp_path / "model.json").write_text(model.to_json())
    model.save_weights(tmp_path / "weights.h5")
    loaded = mgpu_io.load_model(tmp_path / "model.json", weights=tmp_path / "weights.h5",
                                custom_objects={"_Scale": Scale})
    np.testing.assert_array_equal(loaded.get_layer("private__scale").w.numpy(), [1, 2, 3, 4])
    np.testing.assert_allclose(loaded.predict(X, verbose=0), model.predict(X, verbose=0), rtol=1e-6)


class _TfCustomOp(tf_keras.optimizers.RMSprop):
    pass


_TfCustomOp.__name__ = "CustomOp"


class CustomOp(keras.optimizers.RMSprop):
    pass


def _trained_with_custom_optimizer(tmp_path):
    inputs = tf_keras.Input((4,), name="inp")
    model = tf_keras.Model(inputs, tf_keras.layers.Dense(2, name="d")(inputs), name="m")
    model.compile(optimizer=_TfCustomOp(0.01), loss="mse")
    model.fit(X, np.ones((2, 2), "float32"), epochs=3, verbose=0)
    model.save(tmp_path / "custom_op.h5")
    return tmp_path / "custom_op.h5", model


def test_an_optimizer_subclass_resumes_with_its_state(tmp_path):
    path, original = _trained_with_custom_optimizer(tmp_path)
    with warnings.catch_warnings():
        warnings.simplefilter("error", MgpuIOWarning)
        model = mgpu_io.load_model(path, custom_objects={"CustomOp": CustomOp})
    assert type(model.optimizer) is CustomOp and int(model.optimizer.iterations) == 3
    theirs = sorted((v.name, v.numpy()) for v in original.optimizer.variables if "/velocity/" in v.name)
    ours = [v.numpy() for v in model.optimizer.variables if v.path.endswith("_velocity")]
    assert len(ours) == len(theirs) == 2
    for mine, (_, stored) in zip(sorted(ours, key=np.size), sorted(theirs, key=lambda t: t[1].size)):
        np.testing.assert_array_equal(mine, stored)


def test_an_optimizer_class_keras3_lacks_says_why_its_state_is_not_restored(tmp_path):
    path, _ = _trained_with_custom_optimizer(tmp_path)

    class CustomOp(keras.optimizers.Optimizer):  # the user's own, from none of Keras' optimizers
        def __init__(self, learning_rate=0.01, rho=0.9, momentum=0.0, epsilon=1e-7, centered=False, **kwargs):
            super().__init__(learning_rate, **kwargs)

        def build(self, variables):
            super().build(variables)

        def update_step(self, gradient, variable, learning_rate):
            variable.assign_sub(gradient * learning_rate)

    with pytest.warns(MgpuIOWarning, match=r"The saved optimizer state is not restored: mgpu-io does not translate "
                                           r"the state of CustomOp \(only \['Adadelta', 'Adagrad', 'Adam', 'Adamax', 'Ftrl', 'Nadam', 'RMSprop', "
                                           r"'SGD'\] "
                                           r"and their subclasses"):
        model = mgpu_io.load_model(path, custom_objects={"CustomOp": CustomOp})
    assert type(model.optimizer) is CustomOp


def test_a_custom_layer_shared_by_two_calls_stays_one_layer(tmp_path):
    inputs = tf_keras.Input((4,), name="inp")
    shared = _TfInner(name="shared")
    pre = tf_keras.layers.Dense(4, name="pre")(inputs)
    model = tf_keras.Model(inputs, tf_keras.layers.Add(name="add")([shared(inputs), shared(pre)]), name="m")
    model.save(tmp_path / "shared.h5")
    with keras.saving.custom_object_scope({"InnerLayer": InnerLayer}):
        loaded = mgpu_io.load_model(tmp_path / "shared.h5")
    layers = [layer for layer in loaded.layers if isinstance(layer, InnerLayer)]
    assert len(layers) == 1 and len(layers[0]._inbound_nodes) == 2  # one layer, called twice: one set of weights
    np.testing.assert_allclose(loaded.predict(X, verbose=0), model.predict(X, verbose=0), rtol=1e-6)
