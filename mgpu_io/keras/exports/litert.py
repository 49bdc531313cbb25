"""LiteRT (TensorFlow Lite): ``model.export(path, format="litert")``, run by the LiteRT interpreter
(``ai_edge_litert`` where installed, else ``tf.lite.Interpreter``). TensorFlow backend only."""

import numpy as np

NAME = "litert"
EXTRA = "litert"
RUNTIME = "LiteRT interpreter"


def needs(backend):
    return ("tensorflow",)


def backend_refusal(backend):
    """Why ``backend`` cannot write this format (Keras 3 exports LiteRT from TensorFlow or PyTorch only)."""
    if backend not in ("tensorflow", "torch"):
        return f"Keras 3 writes LiteRT from the TensorFlow backend only (this Keras runs on {backend})"
    return None


def write(model, path):
    model.export(str(path), format="litert", verbose=False)


def _interpreter(path):
    try:
        from ai_edge_litert.interpreter import Interpreter
    except ImportError:
        import warnings

        import tensorflow as tf

        with warnings.catch_warnings():
            warnings.simplefilter("ignore")  # "tf.lite.Interpreter is deprecated": it runs the same flatbuffer
            return tf.lite.Interpreter(model_path=str(path))
    return Interpreter(model_path=str(path))


def run(path, inputs, names):
    """Run the ``.tflite`` at ``path`` through its serving signature on ``inputs`` (the model's ``names``)."""
    interpreter = _interpreter(path)
    runner = interpreter.get_signature_runner()
    declared = list(runner.get_input_details())
    feed = dict(zip(names, inputs)) if set(declared) == set(names) else dict(zip(declared, inputs))
    outputs = runner(**feed)
    return [np.asarray(outputs[key]) for key in sorted(outputs, key=_position)]


def _position(key):
    tail = key.rsplit("_", 1)[-1]
    return (0, int(tail), key) if tail.isdigit() else (1, 0, key)
