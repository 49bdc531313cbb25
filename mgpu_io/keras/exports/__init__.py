"""Deployable outputs: a rescued model written by Keras 3's own exporters and proven by the artifact's own runtime.

Each format is one module here, named as in :data:`mgpu_io.format.door.EXPORT_FORMATS` (the one place that says
which output name asks for which format): ``onnx`` (ONNX Runtime runs it), ``litert`` (the LiteRT interpreter) and
``saved_model`` (TensorFlow's SavedModel loader, as TF Serving calls it). A module holds ``NAME``, ``EXTRA`` (the
pyproject extra that installs what it needs; ``extra(backend)`` where it differs by backend), ``RUNTIME``, ``needs(backend)``, ``write(model, path)`` and
``run(path, inputs, names)``; optionally ``backend_refusal(backend)``. A new format is a module here and a line there.

:func:`export` writes into a temporary path beside the output, runs the artifact there on the model's inputs (given,
or generated from the input shapes), compares with the Keras model's predictions, and only then moves it into place:
an artifact that its runtime cannot run, or that predicts otherwise, is never left at the output.

Example:
    >>> import tempfile, pathlib, mgpu_io
    >>> model = mgpu_io.load_model("fixtures/files/k224_siamese_x2_full.h5", compile=False)
    >>> out = pathlib.Path(tempfile.mkdtemp()) / "model.onnx"
    >>> result = export(model, out, "onnx")
    >>> out.is_file(), result["difference"] < 1e-5
    (True, True)
"""

import contextlib
import importlib
import importlib.util
import os
import shutil
import tempfile
from pathlib import Path

import numpy as np

from mgpu_io import upstream
from mgpu_io.errors import InvalidArgument, MissingDependency, OutputError, Param, UnsupportedModel
from mgpu_io.format.door import EXPORT_FORMATS

#: The largest difference allowed between an artifact's and Keras' predictions, relative to the predictions' scale:
#: ``tolerance * max(1, largest |prediction|)``.
TOLERANCE = 1e-5
#: Rows of generated inputs where the model's batch size is not fixed.
BATCH = 8


def exporter(name):
    """The module that writes and runs format ``name`` (a key of :data:`~mgpu_io.format.door.EXPORT_FORMATS`)."""
    if name not in EXPORT_FORMATS:
        raise InvalidArgument(
            problem="Unknown export format",
            parameter="format",
            expected=f"one of {sorted(EXPORT_FORMATS)}",
            received=Param("format", name),
            fix="Pass a format named here",
        )
    return importlib.import_module(f"{__name__}.{name}")


def backend():
    import keras

    return keras.backend.backend()


def installed(package):
    """Whether ``package`` can be imported (one blocked with ``sys.modules[package] = None`` cannot)."""
    try:
        return importlib.util.find_spec(package) is not None
    except (ImportError, ValueError):
        return False


def _extra(module, current):
    """The extra that installs what ``module`` needs on backend ``current``."""
    return module.extra(current) if hasattr(module, "extra") else module.EXTRA


def check_available(name):
    """Refuse ``name`` where this Keras cannot write it, or a package it needs is missing: one line naming the extra.

    Example:
        >>> check_available("onnx") is None
        True
    """
    module = exporter(name)
    current = backend()
    refusal = getattr(module, "backend_refusal", lambda _: None)(current)
    if refusal:
        raise UnsupportedModel(
            problem=f"A {name} output cannot be written here: {refusal}",
            expected=f"the TensorFlow backend for a {name} output",
            received=f"KERAS_BACKEND={current}",
            fix="Run with KERAS_BACKEND=tensorflow",
        )
    missing = [package for package in module.needs(current) if not installed(package)]
    if missing:
        raise MissingDependency(
            problem=f"A {name} output needs {', '.join(missing)}, which is not installed",
            expected=f"the packages of the [{_extra(module, current)}] extra",
            received=f"no module {missing[0]!r}",
            fix=f"pip install 'mgpu-io[{_extra(module, current)}]'",
        )


def sample_inputs(model, batch=BATCH, seed=0):
    """Inputs of ``model``'s shapes and dtypes: standard normal floats (integers 0 and 1 for integer inputs), the
    model's own batch size where it is fixed (a stateful RNN), else ``batch`` rows; ``None`` dimensions are 8."""
    rng = np.random.RandomState(seed)
    arrays = []
    for tensor in model.inputs:
        shape = [tensor.shape[0] or batch] + [d or 8 for d in tensor.shape[1:]]
        dtype = str(getattr(tensor, "dtype", "float32"))
        if "int" in dtype:
            arrays.append(rng.randint(0, 2, size=shape).astype(dtype))
        else:
            arrays.append(rng.standard_normal(shape).astype("float32"))
    return arrays


def predict(model, inputs):
    """``model``'s predictions on ``inputs`` as a list of arrays (one per output), by calling it (which also marks
    it called: Keras' exporters trace only a model that was)."""
    from keras import ops

    outputs = model(inputs if len(inputs) > 1 else inputs[0], training=False)
    if isinstance(outputs, dict):
        outputs = [outputs[name] for name in model.output_names]
    return [np.asarray(ops.convert_to_numpy(x)) for x in (outputs if isinstance(outputs, (list, tuple)) else [outputs])]


def difference(got, expected):
    """The largest absolute difference between two lists of outputs (``inf`` where shapes or counts differ)."""
    if len(got) != len(expected):
        return float("inf")
    worst = 0.0
    for a, b in zip(got, expected):
        a, b = np.asarray(a, dtype="float64"), np.asarray(b, dtype="float64")
        if a.shape != b.shape:
            if a.size != b.size:
                return float("inf")
            a = a.reshape(b.shape)
        if a.size:
            worst = max(worst, float(np.max(np.abs(a - b))))
    return worst


def bound(expected, tolerance=TOLERANCE):
    scale = max([1.0] + [float(np.max(np.abs(x))) for x in expected if np.asarray(x).size])
    return tolerance * scale


def model_input_names(model):
    return [getattr(tensor, "name", None) or f"input_{i}" for i, tensor in enumerate(model.inputs)]


def as_list(inputs, model):
    """``inputs`` (an array, a list of arrays, or ``{input name: array}``) as a list in the model's input order."""
    if isinstance(inputs, dict):
        return [np.asarray(inputs[name]) for name in model_input_names(model)]
    if isinstance(inputs, (list, tuple)):
        return [np.asarray(x) for x in inputs]
    return [np.asarray(inputs)]


def artifact_format(path):
    """The deployable format of an artifact at ``path`` (by its suffix; a SavedModel folder that Keras 3 exported:
    ``saved_model.pb`` and ``fingerprint.pb`` without tf.keras' ``keras_metadata.pb``), else ``None``.

    Example:
        >>> artifact_format("model.onnx"), artifact_format("model.tflite"), artifact_format("model.h5")
        ('onnx', 'litert', None)
    """
    path = Path(path)
    if path.is_dir():
        exported = (path / "saved_model.pb").is_file() and (path / "fingerprint.pb").is_file()
        return "saved_model" if exported and not (path / "keras_metadata.pb").exists() else None
    return next((name for name, suffix in EXPORT_FORMATS.items() if suffix and path.suffix.lower() == suffix), None)


def run_artifact(path, inputs, names, name=None):
    """Run the artifact at ``path`` by its own runtime; a list of outputs."""
    name = name or artifact_format(path)
    module = exporter(name)
    current = backend()
    missing = [package for package in module.needs(current)[-1:] if not installed(package)]
    if missing:
        raise MissingDependency(
            problem=f"Running a {name} artifact needs {missing[0]}, which is not installed",
            expected=f"the packages of the [{_extra(module, current)}] extra",
            received=f"no module {missing[0]!r}",
            fix=f"pip install 'mgpu-io[{_extra(module, current)}]'",
        )
    return module.run(path, inputs, names)


def export(model, output, name, *, inputs=None, tolerance=TOLERANCE, overwrite=False):
    """Write ``model`` as format ``name`` at ``output``, proven first by its runtime against ``model.predict``.

    Args:
        model: a built Keras 3 model.
        output: the file (``.onnx``, ``.tflite``) or folder (SavedModel) to write.
        name: a key of :data:`~mgpu_io.format.door.EXPORT_FORMATS`.
        inputs: the inputs to compare on (an array, a list, or a dict by input name); default: generated
            (:func:`sample_inputs`).
        tolerance: the bound, relative to the predictions' scale (:data:`TOLERANCE`).
        overwrite: replace an existing ``output``.

    A stateful recurrent layer's states are reset to zeros before Keras predicts and again before the artifact is
    written (Keras' call advances them, and the exporters capture them as they are): the artifact starts from zero
    states, as a loaded model does.

    Returns:
        ``{"format", "runtime", "difference", "bound", "inputs", "rows"}``: what was measured.

    Raises:
        UnsupportedModel: Keras cannot run the model here, the exporter refused it, its runtime cannot run the
            artifact, or the artifact predicts otherwise than the model (the message names the format and the
            layers concerned).
        MissingDependency: a package of the format's extra is missing.
    """
    check_available(name)
    module = exporter(name)
    output = Path(output)
    given = inputs is not None
    samples = as_list(inputs, model) if given else sample_inputs(model)
    stateful = _stateful(model)
    _reset(stateful)
    try:
        expected = predict(model, samples)
    except Exception as error:  # Keras itself cannot run the model here: nothing to prove an artifact against
        raise UnsupportedModel(**_refused(name, model, output, "Keras cannot run the model here", error)) from None
    _reset(stateful)  # the call advanced them: the artifact starts from the states Keras started from
    with _atomic(output, EXPORT_FORMATS[name], overwrite) as temporary:
        try:
            with _inference_only(model):
                module.write(model, temporary)
        except Exception as error:  # the exporter's own refusal: its first line, and our layers in the model
            raise UnsupportedModel(**_refused(name, model, output, "Keras' exporter refused it", error)) from None
        try:
            got = module.run(temporary, samples, model_input_names(model))
        except Exception as error:
            raise UnsupportedModel(**_refused(name, model, output, f"{module.RUNTIME} cannot run it", error)) from None
        found, allowed = difference(got, expected), bound(expected, tolerance)
        if not found <= allowed:
            raise UnsupportedModel(
                problem=f"The {name} artifact does not predict what the model predicts",
                parameter="output",
                expected=(
                    f"a largest difference of at most {allowed:.2g} ({module.RUNTIME} against Keras, on "
                    f"{len(samples[0])} rows)"
                ),
                received=f"{found:.3g} for output={output}",
                fix="Write a .keras or .h5 output, or report the model's layers",
            )
    return {
        "format": name,
        "runtime": module.RUNTIME,
        "difference": found,
        "bound": allowed,
        "inputs": "given" if given else "generated",
        "rows": len(samples[0]),
    }


#: Layer classes that mgpu-io itself adds or converts to, named first in a refusal (with every layer of a class
#: of mgpu-io's own: the cropping that may leave an empty tensor, ConvNeXt's LayerScale, ...).
OWN_LAYERS = ("TFOp", "Lambda", "LSTM", "GRU")
_RECURRENT = ("LSTM", "GRU", "SimpleRNN", "ConvLSTM1D", "ConvLSTM2D", "ConvLSTM3D", "RNN", "Bidirectional")


def _stateful(model):
    """The layers of ``model`` (nested ones too) that keep states between calls (``stateful=True`` RNNs)."""
    return [
        layer
        for layer in getattr(model, "_flatten_layers", lambda **_: model.layers)(include_self=False, recursive=True)
        if getattr(layer, "stateful", False) and callable(getattr(layer, "reset_states", None))
    ]


@contextlib.contextmanager
def _inference_only(model):
    """While the exporters trace ``model``: every layer whose ``call`` defaults to ``training=True`` (Keras 3's
    random augmentations: RandomRotation, RandomBrightness, ...) called with ``training=False``. Keras' TensorFlow
    exporters (SavedModel, and ONNX through tf2onnx) trace the model without ``training=False``, which left the
    augmentation in the artifact (tf.keras 2.8's RandomRotation: 3.6 from Keras in the SavedModel). And a
    ``Normalization`` holds its mean and variance (given, or adapted) as arrays, not eager tensors, which tf2onnx made
    inputs of the ONNX graph (tf.keras 2.4's Normalization, EfficientNet: "Required inputs ... are missing")."""
    import inspect

    patched = []
    for layer in getattr(model, "_flatten_layers", lambda **_: model.layers)(include_self=False, recursive=True):
        try:
            parameter = inspect.signature(type(layer).call).parameters.get("training")
        except (TypeError, ValueError):
            continue
        if parameter is None or parameter.default is not True:
            continue

        def call(*args, _call=layer.call, **kwargs):
            kwargs["training"] = False
            return _call(*args, **kwargs)

        object.__setattr__(layer, "call", call)
        patched.append(layer)
    constants = []  # a Normalization's mean and variance (given or adapted): tensors made eagerly, which tf2onnx took
    for layer in getattr(model, "_flatten_layers", lambda **_: model.layers)(include_self=False, recursive=True):
        if type(layer).__name__ == "Normalization" and getattr(layer, "mean", None) is not None:
            constants.append((layer, layer.mean, layer.variance))  # for inputs of the graph ("Required inputs")
            object.__setattr__(layer, "mean", np.asarray(layer.mean))  # traced as constants of the graph instead
            object.__setattr__(layer, "variance", np.asarray(layer.variance))
    try:
        yield
    finally:
        for layer in patched:
            vars(layer).pop("call", None)
        for layer, mean, variance in constants:
            object.__setattr__(layer, "mean", mean)
            object.__setattr__(layer, "variance", variance)


def _reset(layers):
    for layer in layers:
        layer.reset_states()


def _layers(model, classes):
    found = []
    for layer in getattr(model, "_flatten_layers", lambda **_: model.layers)(include_self=False, recursive=True):
        ours = classes is OWN_LAYERS and type(layer).__module__.startswith("mgpu_io.")
        if type(layer).__name__ in classes or ours:
            found.append(f"{type(layer).__name__} {layer.name!r}")
    return found


def _refused(name, model, output, what, error):
    """The fields of the refusal of a model that the ``name`` exporter or its runtime would not take."""
    first = (str(error).strip().splitlines() or [type(error).__name__])[0][:300]
    if upstream.said(upstream.LITERT_FLEX, error):
        layers = _layers(model, _RECURRENT)
        if layers:
            where = f"for the recurrent layers ({', '.join(layers[:5])})"
        else:  # another op without a LiteRT kernel (a TF op's Bitcast, say): the interpreter's line, and our layers
            own = _layers(model, OWN_LAYERS)
            where = f"({first})" + (f" in a model that holds {', '.join(own[:5])}" if own else "")
        why = f"the converter wrote TensorFlow (Flex) ops {where}, which the LiteRT interpreter runs only with the Flex delegate"
        fix = "Write .onnx or a SavedModel folder for this model, or link the Flex delegate in your app"
    elif upstream.said(upstream.TF_CHANNELS_LAST_ONLY, error):  # TensorFlow's CPU kernels: channels_last only
        first = next(
            (line for line in str(error).splitlines() if upstream.said(upstream.TF_CHANNELS_LAST_ONLY, line)), first
        )
        first = first.strip()[:300]
        why = f"{first} (TensorFlow runs a channels_first convolution on a GPU only)"
        fix = "Export on a machine with a GPU, or with KERAS_BACKEND=jax (ONNX)"
    else:
        layers = _layers(model, OWN_LAYERS)
        why = f"{first}" + (f" (the model holds {', '.join(layers[:5])})" if layers else "")
        fix = "Write a .keras or .h5 output, or another deployable format"
    return {
        "problem": f"The model cannot be written as {name}: {what}",
        "parameter": "output",
        "expected": f"a model that {name} holds",
        "received": f"output={output}: {why}",
        "fix": fix,
    }


@contextlib.contextmanager
def _atomic(output, suffix, overwrite):
    """A temporary path beside ``output`` (a file ending in ``suffix``, or a folder where ``suffix`` is empty), moved
    over ``output`` only when the block ends without an error."""
    if output.exists() and not overwrite:
        raise OutputError(
            problem="The output exists",
            parameter="output",
            expected=("a new path, or ", Param("overwrite", True)),
            received=f"output={output}",
            fix=("Pass ", Param("overwrite", True), " to replace it"),
        )
    if not output.parent.is_dir():
        raise OutputError(
            problem="The output folder does not exist",
            parameter="output",
            expected="an existing folder for the output",
            received=f"output={output}",
            fix=f"Create {output.parent} first",
        )
    holder = Path(tempfile.mkdtemp(prefix=".mgpu-io-", dir=output.parent))
    temporary = holder / (output.name if suffix else "export")
    try:
        yield temporary
        if suffix:
            os.replace(temporary, output)
        else:
            old = None
            if output.exists():
                old = holder / "old"
                os.replace(output, old)
            os.replace(temporary, output)
    finally:
        shutil.rmtree(holder, ignore_errors=True)
