"""A user of tf_keras 2.x (TF 2.16+) saved `model.to_json()` and `save_weights('w.h5')`, and loads them in Keras 3.

tf_keras' JSON names each layer's `module` and `registered_name`, and its nested models' class (`Functional`);
Keras 3 refused both ("Dense could not be deserialized properly", "Could not locate class 'Functional'").
"""

import numpy as np
import pytest

import mgpu_io

pytest.importorskip("keras")
tf_keras = pytest.importorskip("tf_keras")
L = tf_keras.layers


def _sequential():
    return tf_keras.Sequential([L.Dense(4, activation="relu", input_shape=(3,), name="a"), L.Dense(2, name="b")],
                               name="seq")


def _functional():
    inputs = tf_keras.Input((3,), name="inp")
    hidden = L.BatchNormalization(name="bn")(L.Dense(4, activation="tanh", name="h")(inputs))
    return tf_keras.Model(inputs, [L.Dense(2, name="o1")(hidden), L.Dense(1, name="o2")(hidden)], name="func")


def _sequential_in_functional():
    inner = tf_keras.Sequential([L.Dense(5, input_shape=(4,), name="in_d")], name="inner")
    inputs = tf_keras.Input((3,), name="i2")
    return tf_keras.Model(inputs, L.Dense(2, name="top")(inner(L.Dense(4, name="pre")(inputs))), name="nested")


def _functional_in_functional():
    inner_in = tf_keras.Input((4,), name="ii")
    inner = tf_keras.Model(inner_in, L.Dense(3, name="if_d")(inner_in), name="infunc")
    inputs = tf_keras.Input((3,), name="i3")
    return tf_keras.Model(inputs, L.Dense(2, name="top2")(inner(L.Dense(4, name="pre2")(inputs))), name="nestfunc")


def _functional_in_sequential():
    inner_in = tf_keras.Input((3,), name="i4")
    inner = tf_keras.Model(inner_in, L.Dense(4, name="f4d")(inner_in), name="f4")
    return tf_keras.Sequential([inner, L.Dense(2, name="after")], name="seqfunc")


@pytest.mark.parametrize("build", [_sequential, _functional, _sequential_in_functional, _functional_in_functional,
                                   _functional_in_sequential], ids=lambda build: build.__name__.strip("_"))
def test_tf_keras_json_and_its_weights_load_and_predict_as_tf_keras(build, tmp_path):
    model = build()
    rng = np.random.RandomState(0)
    for variable in model.weights:  # trained-looking weights, BatchNormalization statistics included
        variable.assign(rng.uniform(0.5, 1.5, variable.shape).astype("float32"))
    (tmp_path / "model.json").write_text(model.to_json())
    model.save_weights(tmp_path / "w.h5")
    x = rng.standard_normal((4, 3)).astype("float32")
    expected = model.predict(x, verbose=0)

    loaded = mgpu_io.load_model(tmp_path / "model.json", weights=tmp_path / "w.h5")
    ours = loaded.predict(x, verbose=0)
    for mine, theirs in zip(ours if isinstance(ours, list) else [ours], expected if isinstance(expected, list)
                            else [expected], strict=True):
        np.testing.assert_allclose(mine, theirs, rtol=1e-5, atol=1e-5)
