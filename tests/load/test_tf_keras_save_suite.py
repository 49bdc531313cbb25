"""tf_keras' own legacy save tests (HDF5), the load swapped: tf_keras writes, ``mgpu_io.load_model`` loads in Keras 3.

Adapted copy of keras-team/tf-keras ``tf_keras/saving/legacy/save_test.py`` at commit
dd0a7237b9b24132dba3f491f3c84b0094ab796e (Apache License 2.0, Copyright 2019 The TensorFlow Authors). Kept: every
test of that file that saves an HDF5 file (``save_format="h5"``; the SavedModel ones are not legacy HDF5), with the
model, the writer's calls and the checks of the original. Changed: ``keras.models.load_model`` (tf_keras) is
``mgpu_io.load_model`` (Keras 3), and ``model.load_weights`` of an HDF5 weights file is ``mgpu_io.transfer_weights``
into the Keras 3 model; a custom class the test passes to the load is its Keras 3 counterpart; the optimizer and
metric checks compare what Keras 3 can hold (the weights, the predictions, ``evaluate``'s numbers) rather than
tf_keras objects; tests are pytest functions with ``tmp_path``.
"""

import collections
import json

import h5py
import numpy as np
import pytest

import mgpu_io
from mgpu_io import MgpuIOError

keras3 = pytest.importorskip("keras")
tk = pytest.importorskip("tf_keras")
tf = pytest.importorskip("tensorflow")
from tf_keras.src.optimizers import optimizer_v1  # noqa: E402
from tf_keras.src.saving.legacy import serialization as tk_serialization  # noqa: E402

BOUND = 1e-5


def _same_weights(tf_keras_model, loaded):
    theirs, ours = tf_keras_model.get_weights(), loaded.get_weights()
    assert len(theirs) == len(ours)
    for a, b in zip(theirs, ours):
        np.testing.assert_allclose(a, b, atol=BOUND)


def _small_sequential_mlp():
    return tk.Sequential([tk.layers.Dense(1, activation="relu"), tk.layers.Dense(2, activation="softmax")])


# TestSaveModel


def test_load_file_not_found(tmp_path):
    with pytest.raises(MgpuIOError, match="does_not_exist"):
        mgpu_io.load_model(tmp_path / "does_not_exist")


def test_save_hdf5(tmp_path):
    model = _small_sequential_mlp()
    model.build((None, 3))
    path = tmp_path / "model"
    model.save(path, save_format="h5")
    assert h5py.is_hdf5(path)
    x = np.random.random((2, 3))
    np.testing.assert_allclose(mgpu_io.load_model(path)(x), model(x), atol=BOUND)


def test_save_load_hdf5_pathlib(tmp_path):
    model = _small_sequential_mlp()
    model.build((None, 3))
    model.save(tmp_path / "model", save_format="h5")
    mgpu_io.load_model(tmp_path / "model")


def test_save_load_weights_hdf5_pathlib(tmp_path):
    model = _small_sequential_mlp()
    model.build((None, 3))
    model.save_weights(tmp_path / "model", save_format="h5")
    ours = keras3.Sequential([keras3.Input((3,)), keras3.layers.Dense(1, activation="relu"),
                              keras3.layers.Dense(2, activation="softmax")])
    assert mgpu_io.transfer_weights(tmp_path / "model", ours).ok
    _same_weights(model, ours)


def test_saving_h5_for_rnn_layers(tmp_path):
    inputs = tk.Input([10, 91], name="train_input")
    rnn_layers = [tk.layers.LSTMCell(size, recurrent_dropout=0, name=f"rnn_cell{i}")
                  for i, size in enumerate([512, 512])]
    rnn_output = tk.layers.RNN(rnn_layers, return_sequences=True, name="rnn_layer")(inputs)
    pred_feat = tk.layers.Dense(91, name="prediction_features")(rnn_output)
    pred = tk.layers.Softmax()(pred_feat)
    model = tk.Model(inputs=[inputs], outputs=[pred, pred_feat])
    model.save(tmp_path / "model_path.h5")
    assert rnn_layers[0].kernel.name != rnn_layers[1].kernel.name and "rnn_cell1" in rnn_layers[1].kernel.name
    x = np.random.random((2, 10, 91)).astype("float32")
    loaded = mgpu_io.load_model(tmp_path / "model_path.h5")
    for ours, theirs in zip(loaded(x), model(x)):
        np.testing.assert_allclose(ours, theirs, atol=BOUND)


# TestJson


@tk.saving.register_keras_serializable(package="Foo")
class RegisteredSubLayer(tk.layers.Layer):
    pass


@keras3.saving.register_keras_serializable(package="Foo", name="RegisteredSubLayer")
class RegisteredSubLayer3(keras3.layers.Layer):
    pass


def test_nested_layers(tmp_path):
    """The source: to_json() / model_from_json; here the JSON with its weights, loaded by mgpu-io."""

    class MyLayer(tk.layers.Layer):
        def __init__(self, sublayers, **kwargs):
            super().__init__(**kwargs)
            self.sublayers = sublayers

        def get_config(self):
            config = super().get_config()
            config["sublayers"] = self.sublayers
            return config

    class MyLayer3(keras3.layers.Layer):
        def __init__(self, sublayers, **kwargs):
            super().__init__(**kwargs)
            self.sublayers = [keras3.saving.deserialize_keras_object(s) for s in sublayers]

    layer = MyLayer([tk.layers.Dense(2, name="MyDense"), RegisteredSubLayer(name="MySubLayer")])
    model = tk.Sequential([tk.Input([None]), layer])
    model_json = model.to_json()
    assert "Foo>RegisteredSubLayer" in model_json
    (tmp_path / "model.json").write_text(model_json)
    # registered again here, as the source registers its class in the test: another test of the session may have
    # registered its own class under the same name since this module was imported
    keras3.saving.register_keras_serializable(package="Foo", name="RegisteredSubLayer")(RegisteredSubLayer3)
    model.save_weights(tmp_path / "weights.h5")
    loaded_model = mgpu_io.load_model(tmp_path / "model.json", weights=tmp_path / "weights.h5",
                                      custom_objects={"MyLayer": MyLayer3})
    loaded_layer = loaded_model.layers[0]
    assert isinstance(loaded_layer.sublayers[0], keras3.layers.Dense) and loaded_layer.sublayers[0].name == "MyDense"
    assert isinstance(loaded_layer.sublayers[1], RegisteredSubLayer3)
    assert loaded_layer.sublayers[1].name == "MySubLayer"


# TestWholeModelSaving (save_format="h5")


@pytest.mark.parametrize("model_type", ["functional", "sequential"])
def test_save_and_load(model_type, tmp_path):
    layers = [tk.layers.Dense(2), tk.layers.RepeatVector(3), tk.layers.TimeDistributed(tk.layers.Dense(3))]
    if model_type == "sequential":
        model = tk.Sequential([tk.Input((3,)), *layers])
    else:
        inputs = tk.Input((3,))
        x = inputs
        for layer in layers:
            x = layer(x)
        model = tk.Model(inputs, x)
    model.compile(
        loss=tk.losses.MSE,
        optimizer=tk.optimizers.legacy.RMSprop(learning_rate=0.0001),
        metrics=[tk.metrics.categorical_accuracy,
                 tk.metrics.CategoricalCrossentropy(name="cce", label_smoothing=tf.constant(0.2))],
        weighted_metrics=[tk.metrics.categorical_crossentropy,
                          tk.metrics.CategoricalCrossentropy(name="cce", label_smoothing=tf.constant(0.2))],
        sample_weight_mode="temporal",
    )
    x = np.random.random((1, 3))
    y = np.random.random((1, 3, 3))
    model.train_on_batch(x, y)
    out = model.predict(x, verbose=0)
    model.save(tmp_path / "model.h5")
    loaded_model = mgpu_io.load_model(tmp_path / "model.h5")
    _same_weights(model, loaded_model)
    np.testing.assert_allclose(loaded_model.predict(x, verbose=0), out, atol=BOUND)
    theirs = model.evaluate(x, y, verbose=0, return_dict=True)
    ours = loaded_model.evaluate(x, y, verbose=0, return_dict=True)
    np.testing.assert_allclose(ours["loss"], theirs["loss"], atol=1e-3)


def test_sequential_model_saving_without_input_shape(tmp_path):
    model = tk.Sequential()
    model.add(tk.layers.Dense(2))
    model.add(tk.layers.RepeatVector(3))
    model.add(tk.layers.TimeDistributed(tk.layers.Dense(3)))
    model.compile(
        loss=tk.losses.MSE,
        optimizer="rmsprop",
        metrics=[tk.metrics.categorical_accuracy, tk.metrics.CategoricalAccuracy(name="cat_acc")],
        weighted_metrics=[tk.metrics.categorical_accuracy, tk.metrics.CategoricalAccuracy(name="cat_acc2")],
        sample_weight_mode="temporal",
    )
    x = np.random.random((1, 3))
    y = np.random.random((1, 3, 3))
    model.train_on_batch(x, y)
    out = model.predict(x, verbose=0)
    model.save(tmp_path / "model.h5")
    new_model = mgpu_io.load_model(tmp_path / "model.h5")
    _same_weights(model, new_model)
    np.testing.assert_allclose(new_model.predict(x, verbose=0), out, atol=BOUND)


def test_sequential_model_saving_without_compile(tmp_path):
    model = tk.Sequential()
    model.add(tk.layers.Dense(2, input_shape=(3,)))
    model.add(tk.layers.RepeatVector(3))
    model.add(tk.layers.TimeDistributed(tk.layers.Dense(3)))
    x = np.random.random((1, 3))
    out = model.predict(x, verbose=0)
    tk.models.save_model(model, tmp_path / "model.h5")
    new_model = mgpu_io.load_model(tmp_path / "model.h5")
    _same_weights(model, new_model)
    np.testing.assert_allclose(new_model.predict(x, verbose=0), out, atol=BOUND)


class CustomOp(keras3.optimizers.RMSprop):  # the Keras 3 counterpart of the test's optimizer_v1.RMSprop subclass
    pass


def custom_loss(y_true, y_pred):
    return keras3.losses.mean_squared_error(y_true, y_pred)


def test_sequential_model_saving_2(tmp_path):
    x = np.random.random((1, 3))
    y = np.random.random((1, 3))
    with tf.Graph().as_default():  # tf_keras makes its session in the graph

        class CustomOp(optimizer_v1.RMSprop):
            pass

        def custom_loss(y_true, y_pred):
            return tk.losses.mse(y_true, y_pred)

        model = tk.Sequential()
        model.add(tk.layers.Dense(2, input_shape=(3,)))
        model.add(tk.layers.Dense(3))
        model.compile(loss=custom_loss, optimizer=CustomOp(), metrics=["acc"])
        model.train_on_batch(x, y)
        out = model.predict(x)
        weights = model.get_weights()
        tk.models.save_model(model, str(tmp_path / "model.h5"))
    new_model = mgpu_io.load_model(tmp_path / "model.h5",
                                   custom_objects={"CustomOp": globals()["CustomOp"],
                                                   "custom_loss": globals()["custom_loss"]})
    for theirs, ours in zip(weights, new_model.get_weights(), strict=True):
        np.testing.assert_allclose(ours, theirs, atol=BOUND)
    np.testing.assert_allclose(new_model.predict(x, verbose=0), out, atol=BOUND)


def test_saving_without_compilation(tmp_path):
    model = tk.Sequential()
    model.add(tk.layers.Dense(2, input_shape=(3,)))
    model.add(tk.layers.Dense(3))
    model.compile(loss="mse", optimizer="sgd", metrics=["acc"])
    tk.models.save_model(model, tmp_path / "model.h5")
    mgpu_io.load_model(tmp_path / "model.h5")


def test_saving_with_tf_optimizer(tmp_path):
    model = tk.Sequential()
    model.add(tk.layers.Dense(2, input_shape=(3,)))
    model.add(tk.layers.Dense(3))
    model.compile(loss="mse", optimizer=tf.compat.v1.train.AdadeltaOptimizer(0.1), metrics=["acc"])
    tk.models.save_model(model, tmp_path / "model.h5")
    mgpu_io.load_model(tmp_path / "model.h5")


def test_saving_right_after_compilation(tmp_path):
    model = tk.Sequential()
    model.add(tk.layers.Dense(2, input_shape=(3,)))
    model.add(tk.layers.Dense(3))
    model.compile(loss="mse", optimizer="sgd", metrics=["acc"])
    tk.models.save_model(model, tmp_path / "model.h5")
    mgpu_io.load_model(tmp_path / "model.h5")


def test_saving_lambda_numpy_array_arguments(tmp_path):
    """The Lambda's function is the user's code: mgpu-io takes it from lambdas= (the file's bytecode is never
    run); its NumPy arguments come from the file."""
    mean = np.random.random((4, 2, 3))
    std = np.abs(np.random.random((4, 2, 3))) + 1e-5
    inputs = tk.layers.Input(shape=(4, 2, 3))
    output = tk.layers.Lambda(lambda image, mu, std: (image - mu) / std, arguments={"mu": mean, "std": std},
                              name="normalize")(inputs)
    model = tk.models.Model(inputs, output)
    model.compile(loss="mse", optimizer="sgd", metrics=["acc"])
    tk.models.save_model(model, tmp_path / "model.h5")
    model = mgpu_io.load_model(tmp_path / "model.h5", lambdas={"normalize": lambda image, mu, std: (image - mu) / std})
    np.testing.assert_allclose(mean, model.layers[1].arguments["mu"])
    np.testing.assert_allclose(std, model.layers[1].arguments["std"])


def test_saving_model_with_long_layer_names(tmp_path):
    x = tk.Input(shape=(2,), name="input_" + ("x" * (2**15)))
    f = x
    for i in range(4):
        f = tk.layers.Dense(2, name=f"dense_{i}")(f)
    model = tk.Model(inputs=[x], outputs=[f])
    model.compile("adam", loss=tk.losses.MeanSquaredError(), metrics=["acc"])
    x = np.random.random((1, 2))
    y = np.random.random((1, 2))
    model.train_on_batch(x, y)
    out = model.predict(x, verbose=0)
    tk.models.save_model(model, tmp_path / "model.h5")
    loaded = mgpu_io.load_model(tmp_path / "model.h5")
    with h5py.File(tmp_path / "model.h5", "r") as h5file:
        assert len([attr for attr in h5file["model_weights"].attrs if attr.startswith("layer_names")]) > 0
    np.testing.assert_allclose(loaded.predict(x, verbose=0), out, atol=BOUND)


def test_saving_model_with_long_weights_names(tmp_path):
    x = tk.Input(shape=(2,), name="nested_model_input")
    f = x
    for i in range(4):
        f = tk.layers.Dense(2, name=f"nested_model_dense_{i}")(f)
    f = tk.layers.Dense(2, name="nested_model_output" + ("x" * (2**14)))(f)
    nested_model = tk.Model(inputs=[x], outputs=[f], name="nested_model")
    x = tk.Input(shape=(2,), name="outer_model_input")
    f = tk.layers.Dense(2, name="outer_model_output")(nested_model(x))
    model = tk.Model(inputs=[x], outputs=[f])
    model.compile(loss="mse", optimizer="adam", metrics=["acc"])
    x = np.random.random((1, 2))
    y = np.random.random((1, 2))
    model.train_on_batch(x, y)
    out = model.predict(x, verbose=0)
    tk.models.save_model(model, tmp_path / "model.h5")
    loaded = mgpu_io.load_model(tmp_path / "model.h5")
    with h5py.File(tmp_path / "model.h5", "r") as h5file:
        names = [attr for attr in h5file["model_weights"]["nested_model"].attrs if attr.startswith("weight_names")]
    assert len(names) > 0
    np.testing.assert_allclose(loaded.predict(x, verbose=0), out, atol=BOUND)


def test_model_saving_to_pre_created_h5py_file(tmp_path):
    """tf_keras saves in its graph (optimizer_v1.Adam) into a path, into an h5py.File the caller opened, and into
    one that lives in memory only; Keras 3 (eager) loads each outside that graph."""
    x = np.random.random((1, 3))
    y = np.random.random((1, 3))
    in_memory = h5py.File("_", driver="core", mode="w", backing_store=False)
    with tf.Graph().as_default():
        inputs = tk.Input(shape=(3,))
        outputs = tk.layers.Dense(3)(tk.layers.Dense(2)(inputs))
        model = tk.Model(inputs, outputs)
        model.compile(loss=tk.losses.MSE, optimizer=optimizer_v1.Adam(),
                      metrics=[tk.metrics.categorical_accuracy, tk.metrics.CategoricalAccuracy()])
        model.train_on_batch(x, y)
        out = model.predict(x)
        tk.models.save_model(model, str(tmp_path / "model.h5"))
        with h5py.File(tmp_path / "pre_created.h5", mode="w") as h5file:
            tk.models.save_model(model, h5file)
        tk.models.save_model(model, in_memory)
    np.testing.assert_allclose(mgpu_io.load_model(tmp_path / "model.h5").predict(x, verbose=0), out, atol=BOUND)
    with h5py.File(tmp_path / "pre_created.h5", mode="r+") as h5file:
        np.testing.assert_allclose(mgpu_io.load_model(h5file).predict(x, verbose=0), out, atol=BOUND)
    with in_memory:
        np.testing.assert_allclose(mgpu_io.load_model(in_memory).predict(x, verbose=0), out, atol=BOUND)


def test_model_saving_to_new_dir_path(tmp_path):
    path = tmp_path / "newdir" / "saved_model.h5"
    model = tk.Sequential()
    model.add(tk.layers.Dense(2, input_shape=(3,)))
    model.add(tk.layers.RepeatVector(3))
    model.add(tk.layers.TimeDistributed(tk.layers.Dense(3)))
    x = np.random.random((1, 3))
    out = model.predict(x, verbose=0)
    tk.models.save_model(model, path)
    new_model = mgpu_io.load_model(path)
    _same_weights(model, new_model)
    np.testing.assert_allclose(new_model.predict(x, verbose=0), out, atol=BOUND)


def test_saving_constant_initializer_with_numpy(tmp_path):
    model = tk.Sequential()
    model.add(tk.layers.Dense(2, input_shape=(3,), kernel_initializer=tk.initializers.Constant(np.ones((3, 2)))))
    model.add(tk.layers.Dense(3))
    model.compile(loss="mse", optimizer="sgd", metrics=["acc"])
    tk.models.save_model(model, tmp_path / "model.h5")
    _same_weights(model, mgpu_io.load_model(tmp_path / "model.h5"))


def test_saving_group_naming_h5py(tmp_path):
    """A layer whose name is the prefix of another's (`conv1` beside `conv1/conv`)."""
    input_layer = tk.layers.Input((None, None, 3), name="test_input")
    x = tk.layers.Conv2D(1, 1, name="conv1/conv")(input_layer)
    x = tk.layers.Activation("relu", name="conv1")(x)
    model = tk.models.Model(inputs=input_layer, outputs=x)
    model.save_weights(tmp_path / "test.h5")
    inputs = keras3.Input((None, None, 3), name="test_input")
    ours = keras3.Model(inputs, keras3.layers.Activation("relu", name="conv1")(
        keras3.layers.Conv2D(1, 1, name="conv1_conv")(inputs)))
    assert mgpu_io.transfer_weights(tmp_path / "test.h5", ours).ok
    _same_weights(model, ours)


def test_functional_model_with_custom_loss_and_metric(tmp_path):
    """model.add_loss(tensor) and model.add_metric(tensor): tf_keras' AddLoss and AddMetric layers."""

    def _make_model():
        inputs = tk.Input(shape=(4,))
        x = tk.layers.Dense(8, activation="relu")(inputs)
        outputs = tk.layers.Dense(3, activation="softmax")(x)
        model = tk.Model(inputs=inputs, outputs=outputs)
        custom_loss = tk.layers.Lambda(lambda x: tk.backend.sum(x * x), name="custom_loss_lambda")(x)
        model.add_loss(custom_loss)
        model.add_metric(custom_loss, aggregation="mean", name="custom_loss")
        return model

    model = _make_model()
    model.compile(loss=tk.losses.SparseCategoricalCrossentropy(), optimizer=tk.optimizers.legacy.SGD(),
                  metrics=[tk.metrics.SparseCategoricalCrossentropy()])
    x = np.random.normal(size=(32, 4))
    y = np.random.randint(0, 3, size=32)
    model.train_on_batch(x, y)
    evaluation_results = model.evaluate(x, y, verbose=0, return_dict=True)
    model.save(tmp_path / "model.h5")
    del model
    loaded_model = mgpu_io.load_model(tmp_path / "model.h5",
                                      lambdas={"custom_loss_lambda": lambda x: keras3.ops.sum(x * x)})
    loaded_results = loaded_model.evaluate(x, y, verbose=0, return_dict=True)
    for name in ("loss", "sparse_categorical_crossentropy", "custom_loss"):
        np.testing.assert_allclose(loaded_results[name], evaluation_results[name], rtol=1e-6)
    assert all(value > 0 for value in evaluation_results.values())
    np.testing.assert_allclose(loaded_results["sparse_categorical_crossentropy"] + loaded_results["custom_loss"],
                               loaded_results["loss"], rtol=1e-6)


def test_save_uncompiled_model_with_optimizer(tmp_path):
    model = tk.Sequential([tk.layers.Dense(1, input_shape=(3,))])
    model.optimizer = tk.optimizers.legacy.RMSprop(learning_rate=0.0001)
    model.save(tmp_path / "model.h5")
    _same_weights(model, mgpu_io.load_model(tmp_path / "model.h5"))


def test_functional_model_with_getitem_op_layer(tmp_path):
    inp = tk.Input(shape=(8,))
    out = inp[:]
    model = tk.Model(inputs=[inp], outputs=out)
    batch_size = 7
    x = np.stack([np.arange(8) for _ in range(batch_size)])
    expected = x[:]
    np.testing.assert_array_equal(model(x), expected)
    tk.models.save_model(model, tmp_path / "model.h5")
    loaded_model = mgpu_io.load_model(tmp_path / "model.h5")
    np.testing.assert_array_equal(loaded_model(x), expected)
    np.testing.assert_array_equal(loaded_model.predict(x, batch_size=batch_size, verbose=0), expected)


def test_custom_functional_registered(tmp_path):
    def _get_cls_definition(base):
        class CustomModel(base):
            def c(self):
                return "c"

        return CustomModel

    cls = _get_cls_definition(tk.Model)
    input_ = tk.layers.Input(shape=(1,))
    model = cls(input_, tk.layers.Dense(1)(input_))
    tk.models.save_model(model, tmp_path / "model.h5")
    new_cls = _get_cls_definition(keras3.Model)
    loaded_model = mgpu_io.load_model(tmp_path / "model.h5", custom_objects={"CustomModel": new_cls})
    assert isinstance(loaded_model, new_cls) and loaded_model.c() == "c"
    x = np.array([[5.0]])
    np.testing.assert_allclose(loaded_model(x), model(x), atol=BOUND)


def test_custom_sequential_registered_no_scope(tmp_path):
    @tk.saving.register_keras_serializable(package="my_package")
    class MyDense(tk.layers.Dense):
        def __init__(self, units, **kwargs):
            super().__init__(units, **kwargs)

    model = tk.Sequential(layers=[tk.Input(shape=[1]), MyDense(1)])
    model.save(tmp_path / "model.h5")

    @keras3.saving.register_keras_serializable(package="my_package")
    class MyDense(keras3.layers.Dense):
        def __init__(self, units, **kwargs):
            super().__init__(units, **kwargs)

    loaded_model = mgpu_io.load_model(tmp_path / "model.h5")
    x = np.array([[5.0]])
    np.testing.assert_array_equal(model(x), loaded_model(x))


def test_custom_functional_registered_no_scope(tmp_path):
    @tk.saving.register_keras_serializable(package="my_package")
    class MyDense(tk.layers.Dense):
        def __init__(self, units, **kwargs):
            super().__init__(units, **kwargs)

    inputs = tk.Input(shape=[1])
    model = tk.Model(inputs, MyDense(1)(inputs))
    model.save(tmp_path / "model.h5")

    @keras3.saving.register_keras_serializable(package="my_package")
    class MyDense(keras3.layers.Dense):
        def __init__(self, units, **kwargs):
            super().__init__(units, **kwargs)

    loaded_model = mgpu_io.load_model(tmp_path / "model.h5")
    x = np.array([[5.0]])
    np.testing.assert_array_equal(model(x), loaded_model(x))


def test_shared_objects(tmp_path):
    class OuterLayer(tk.layers.Layer):
        def __init__(self, inner_layer):
            super().__init__()
            self.inner_layer = inner_layer

        def call(self, inputs):
            return self.inner_layer(inputs)

        def get_config(self):
            return {"inner_layer": tk_serialization.serialize_keras_object(self.inner_layer)}

    class InnerLayer(tk.layers.Layer):
        def __init__(self):
            super().__init__()
            self.v = self.add_weight(name="v", shape=[], dtype=tf.float32)

        def call(self, inputs):
            return self.v + inputs

    class OuterLayer3(keras3.layers.Layer):  # the user's classes in the Keras 3 program
        def __init__(self, inner_layer):
            super().__init__()
            self.inner_layer = inner_layer

        def call(self, inputs):
            return self.inner_layer(inputs)

        @classmethod
        def from_config(cls, config):
            from keras.src.legacy.saving import serialization

            return cls(serialization.deserialize_keras_object(config["inner_layer"]))

    class InnerLayer3(keras3.layers.Layer):
        def __init__(self):
            super().__init__()
            self.v = self.add_weight(name="v", shape=[], dtype="float32")

        def call(self, inputs):
            return self.v + inputs

        @classmethod
        def from_config(cls, config):
            return cls()

    inner_layer = InnerLayer()
    input_ = tk.Input(shape=(1,))
    model = tk.Model(inputs=input_, outputs=[OuterLayer(inner_layer)(input_), OuterLayer(inner_layer)(input_)])
    model.layers[1].inner_layer.v.assign(5)
    np.testing.assert_array_equal(model(np.ones((1, 1))), [[[6.0]], [[6.0]]])

    def _get_all_keys_recursive(item):
        if isinstance(item, dict):
            yield from item.keys()
            yield from _get_all_keys_recursive(list(item.values()))
        elif isinstance(item, list):
            for one in item:
                yield from _get_all_keys_recursive(one)

    def _do_assertions(loaded):
        one = np.ones((1, 1))
        loaded.layers[1].inner_layer.v.assign(5)
        np.testing.assert_array_equal(loaded(one), [[[6.0]], [[6.0]]])
        loaded.layers[1].inner_layer.v.assign(3)
        np.testing.assert_array_equal(loaded(one), [[[4.0]], [[4.0]]])
        loaded.layers[2].inner_layer.v.assign(5)
        np.testing.assert_array_equal(loaded(one), [[[6.0]], [[6.0]]])

    with tk.utils.custom_object_scope({"OuterLayer": OuterLayer, "InnerLayer": InnerLayer}):
        tk.models.save_model(model, tmp_path / "model.h5")
    with h5py.File(tmp_path / "model.h5", "r") as h5file:  # the source counts the marks in get_config(): the file's
        key_count = collections.Counter(_get_all_keys_recursive(json.loads(h5file.attrs["model_config"])))
    assert key_count[tk_serialization.SHARED_OBJECT_KEY] == 2
    with keras3.utils.custom_object_scope({"OuterLayer": OuterLayer3, "InnerLayer": InnerLayer3}):
        _do_assertions(mgpu_io.load_model(tmp_path / "model.h5"))


def test_shared_objects_wrapper(tmp_path):
    """A Wrapper around a layer that the model also calls: one layer, not two."""
    input_ = tk.Input(shape=(1,))
    unwrapped = tk.layers.Layer(name="unwrapped")
    wrapped = tk.layers.Wrapper(unwrapped, name="wrapped")
    model = tk.Model(inputs=input_, outputs=[unwrapped(input_), wrapped(input_)])
    tk.models.save_model(model, tmp_path / "model.h5")
    loaded = mgpu_io.load_model(tmp_path / "model.h5")
    assert loaded.layers[1] is loaded.layers[2].layer


@pytest.mark.parametrize("fit", [True, False])
def test_multi_output_metrics_name_stay_same(fit, tmp_path):
    input_ = tk.Input((4,))
    model = tk.Model(input_, [tk.layers.Softmax(name="head_0")(tk.layers.Dense(3)(input_)),
                              tk.layers.Softmax(name="head_1")(tk.layers.Dense(5)(input_))])
    model.compile(optimizer="rmsprop", loss="mse", metrics={"head_0": [tk.metrics.BinaryAccuracy(), "accuracy"]})
    x = np.random.rand(2, 4)
    y = {"head_0": np.random.randint(2, size=(2, 3)), "head_1": np.random.randint(2, size=(2, 5))}
    if fit:
        model.fit(x, y, verbose=0)
    tk.models.save_model(model, tmp_path / "model.h5")
    loaded = mgpu_io.load_model(tmp_path / "model.h5")
    theirs = model.evaluate(x, y, verbose=0, return_dict=True)
    ours = loaded.evaluate(x, y, verbose=0, return_dict=True)
    assert sorted(theirs) == sorted(ours)  # the names, not prefixed twice
    for name in theirs:
        np.testing.assert_allclose(ours[name], theirs[name], atol=1e-6)


# TestWholeModelSavingWithNesting: a nested model that shares its weights between two calls.


def _make_graph_network(input_size, output_size):
    inputs = tk.Input(input_size)
    return tk.Model(inputs=inputs, outputs=tk.layers.Dense(output_size)(tk.layers.Dense(8, activation="relu")(inputs)))


def _make_sequential(input_size, output_size):
    return tk.Sequential([tk.layers.Dense(8, activation="relu"), tk.layers.Dense(output_size)])


def _make_sequential_built(input_size, output_size):
    model = _make_sequential(input_size, output_size)
    model.build((None, input_size))
    return model


def _make_sequential_graph_network(input_size, output_size):
    return tk.Sequential([tk.layers.InputLayer(input_size), tk.layers.Dense(8, activation="relu"),
                          tk.layers.Dense(output_size)])


def _make_sequential_input_shape(input_size, output_size):
    return tk.Sequential([tk.layers.Dense(8, activation="relu", input_shape=(input_size,)),
                          tk.layers.Dense(output_size)])


class _make_subclassed(tk.Model):
    def __init__(self, input_size, output_size):
        super().__init__()
        self._config = {"input_size": input_size, "output_size": output_size}
        self._hidden_layer = tk.layers.Dense(8, activation="relu", name="hidden")
        self._logits_layer = tk.layers.Dense(output_size, name="logits")

    def call(self, inputs):
        return self._logits_layer(self._hidden_layer(inputs))

    def get_config(self):
        return self._config

    @classmethod
    def from_config(cls, config):
        return cls(**config)


class _make_subclassed_built(_make_subclassed):
    def __init__(self, input_size, output_size):
        super().__init__(input_size, output_size)
        self.build((None, input_size))


class _Subclassed3(keras3.Model):
    """The user's subclassed model in the Keras 3 program: its config has no name."""

    def __init__(self, input_size, output_size):
        super().__init__()
        self._config = {"input_size": input_size, "output_size": output_size}
        self._hidden_layer = keras3.layers.Dense(8, activation="relu", name="hidden")
        self._logits_layer = keras3.layers.Dense(output_size, name="logits")

    def call(self, inputs):
        return self._logits_layer(self._hidden_layer(inputs))

    def get_config(self):
        return self._config

    @classmethod
    def from_config(cls, config):
        return cls(**config)


class _Subclassed3Built(_Subclassed3):
    def __init__(self, input_size, output_size):
        super().__init__(input_size, output_size)
        self.build((None, input_size))


@pytest.mark.parametrize(
    "model_fn",
    [_make_graph_network, _make_sequential, _make_sequential_built, _make_sequential_graph_network,
     _make_sequential_input_shape, _make_subclassed, _make_subclassed_built],
    ids=["graph_network", "sequential", "sequential_built", "sequential_graph_network", "sequential_input_shape",
         "subclassed", "subclassed_built"],
)
def test_functional(model_fn, tmp_path):
    inputs = (tk.Input(shape=(4,), name="examples"), tk.Input(shape=(4,), name="neighbors"))
    base_model = model_fn(inputs[0].shape.as_list()[-1], 2)
    model = tk.Model(inputs=inputs, outputs=tk.layers.add([base_model(inputs[0]), base_model(inputs[1])]))
    x = (np.random.normal(size=(16, 4)).astype(np.float32), np.random.normal(size=(16, 4)).astype(np.float32))
    predictions = model(x)
    model.save(tmp_path / "model.h5")
    del model
    loaded_model = mgpu_io.load_model(
        tmp_path / "model.h5",
        custom_objects={"_make_subclassed": _Subclassed3, "_make_subclassed_built": _Subclassed3Built},
        compile=False,
    )
    np.testing.assert_allclose(loaded_model(x), predictions, atol=BOUND)
