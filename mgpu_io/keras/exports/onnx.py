"""ONNX: ``model.export(path, format="onnx")`` (tf2onnx on TensorFlow, jax2onnx on JAX), run by ONNX Runtime."""

import numpy as np

NAME = "onnx"
EXTRA = "onnx"
RUNTIME = "ONNX Runtime"


def extra(backend):
    """The pyproject extra that installs :func:`needs` on ``backend`` (jax2onnx brings JAX and Flax: its own)."""
    return "onnx-jax" if backend == "jax" else EXTRA


def needs(backend):
    """The modules that writing and running an ONNX file take on ``backend``."""
    return ("jax2onnx" if backend == "jax" else "tf2onnx", "onnx", "onnxruntime")


def write(model, path):
    import warnings

    with warnings.catch_warnings():
        warnings.simplefilter("ignore", FutureWarning)  # Keras' tf2onnx patch asks numpy for np.object
        model.export(str(path), format="onnx", verbose=False)


def run(path, inputs, names):
    """Run the ONNX file at ``path`` in ONNX Runtime on ``inputs`` (ordered as the model's ``names``)."""
    import onnxruntime

    session = onnxruntime.InferenceSession(str(path), providers=["CPUExecutionProvider"])
    declared = [item.name for item in session.get_inputs()]
    feed = dict(zip(declared, inputs)) if set(declared) != set(names) else dict(zip(names, inputs))
    return [np.asarray(value) for value in session.run(None, feed)]
