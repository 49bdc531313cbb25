"""A TF SavedModel folder for TF Serving: ``model.export(path, format="tf_saved_model")``, run by TensorFlow's
SavedModel loader through its ``serving_default`` signature."""

import numpy as np

NAME = "saved_model"
EXTRA = "tensorflow"
RUNTIME = "TensorFlow SavedModel (serving_default)"


def needs(backend):
    return ("tensorflow",)


def write(model, path):
    model.export(str(path), format="tf_saved_model", verbose=False)


def run(path, inputs, names):
    """Call the folder's ``serving_default`` signature, as TF Serving does, on ``inputs`` (the model's ``names``)."""
    import tensorflow as tf

    function = tf.saved_model.load(str(path)).signatures["serving_default"]
    declared = list(function.structured_input_signature[1])
    keys = names if set(declared) == set(names) else declared
    outputs = function(**{key: tf.constant(value) for key, value in zip(keys, inputs)})
    return [np.asarray(outputs[key]) for key in sorted(outputs, key=_position)]


def _position(key):
    tail = key.rsplit("_", 1)[-1]
    return (0, int(tail), key) if tail.isdigit() else (1, 0, key)
