"""A user's two layers shared one object when tf_keras saved the model: after mgpu_io.load_model they share one
again, as after tf_keras' own loader, and the model predicts what the writer predicted.

fixtures/shared is written by tf_keras 2.x (fixtures/generate/shared/): layers `a` and `b` hold one `Gain`, which
the file writes in both configs marked with one `shared_object_id`; layer `c` holds an equal Gain of its own."""

import json

import numpy as np
import pytest
from helpers import ROOT, TOLERANCE

import mgpu_io

keras = pytest.importorskip("keras")
SHARED = ROOT / "fixtures" / "shared"
ENTRY = json.loads((SHARED / "manifest.json").read_text())[0]
DATA = np.load(SHARED / ENTRY["data"])


class Gain:  # the user's classes, as their Keras 3 code defines them
    def __init__(self, value=1.0):
        self.value = value

    def get_config(self):
        return {"value": self.value}

    @classmethod
    def from_config(cls, config):
        return cls(**config)


class Scaled(keras.layers.Layer):
    def __init__(self, units=3, gain=None, **kwargs):
        super().__init__(**kwargs)
        self.units, self.gain = units, gain

    def build(self, shape):
        self.w = self.add_weight(name="w", shape=(shape[-1], self.units))

    def call(self, x):
        return keras.ops.matmul(x, self.w) * self.gain.value

    def get_config(self):
        return dict(super().get_config(), units=self.units, gain=self.gain)


CUSTOM = {"Gain": Gain, "Scaled": Scaled}


def _check(model):
    a, b, c = (model.get_layer(name) for name in "abc")
    assert type(a.gain) is Gain and a.gain is b.gain  # one object, as the file says and tf_keras reloads it
    assert c.gain is not a.gain  # an equal object of its own stays its own
    assert bool(DATA["writer_reloads_shared"])
    diff = np.abs(model.predict(DATA["x"], verbose=0) - DATA["y"]).max()
    assert diff <= TOLERANCE, diff


def test_the_writer_marked_one_object_in_two_layers():
    config = (SHARED / ENTRY["config"]).read_text()
    marked = [part for part in config.split('"gain": ')[1:] if '"shared_object_id"' in part.split("}}")[0]]
    assert len(marked) == 2


def test_a_full_h5_gives_the_two_layers_one_object():
    _check(mgpu_io.load_model(SHARED / ENTRY["file"], custom_objects=CUSTOM))


def test_a_json_config_with_weights_gives_the_two_layers_one_object():
    _check(mgpu_io.load_model(SHARED / ENTRY["config"], custom_objects=CUSTOM, weights=SHARED / ENTRY["weights"]))


def test_classes_from_a_custom_object_scope_are_shared_too():
    with keras.saving.custom_object_scope(CUSTOM):
        _check(mgpu_io.load_model(SHARED / ENTRY["file"]))


def test_a_second_load_builds_its_own_object():
    first = mgpu_io.load_model(SHARED / ENTRY["file"], custom_objects=CUSTOM)
    second = mgpu_io.load_model(SHARED / ENTRY["file"], custom_objects=CUSTOM)
    assert first.get_layer("a").gain is not second.get_layer("a").gain
