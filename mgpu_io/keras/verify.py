"""Compare two model files tensor by tensor and on a batch of inputs: the check after a repair."""

from dataclasses import asdict, dataclass, field
from typing import Optional

import numpy as np

from mgpu_io.format.text import printable


@dataclass
class VerifyReport:
    """Whether two models agree: every weight tensor, and their predictions on one random batch."""

    a: str
    b: str
    tolerance: float
    weights: list[dict] = field(default_factory=list)
    problems: list[str] = field(default_factory=list)
    prediction_difference: Optional[float] = None

    @property
    def agree(self):
        return not self.problems

    def to_dict(self):
        return dict(asdict(self), agree=self.agree)

    def __str__(self):
        """The verdict and every problem, as ``mgpu-io verify`` prints it."""
        verdict = "agree" if self.agree else "DIFFER"
        predictions = (
            f", predictions differ by {self.prediction_difference:.2g}"
            if self.prediction_difference is not None
            else ""
        )
        lines = [
            f"{printable(self.a)} and {printable(self.b)} {verdict} (tolerance {self.tolerance:g}): "
            f"{len(self.weights)} weight tensors compared{predictions}"
        ]
        return "\n".join(lines + [f"  ! {printable(problem)}" for problem in self.problems])


def load_any(path, lambdas=None, safe_mode=True, custom_objects=None):
    """Load any model file uncompiled with :func:`mgpu_io.load_model` (a ``.keras`` file by Keras as it is);
    ``lambdas`` and ``custom_objects`` as it takes them."""
    from mgpu_io.keras.load import load_model

    return load_model(path, compile=False, lambdas=lambdas, safe_mode=safe_mode, custom_objects=custom_objects)


def verify(a, b, *, tolerance=1e-6, batch=8, seed=0, lambdas=None, safe_mode=True, custom_objects=None):
    """Load ``a`` and ``b`` (wrappers are unwrapped) and compare weights and predictions.

    ``lambdas`` gives the template's own Lambda layers their functions, in both (see :func:`mgpu_io.load_model`);
    ``safe_mode=False`` rebuilds them from their source recovered from the files (only for files you trust);
    ``custom_objects`` the classes of its own custom layers.

    Example:
        >>> verify("fixtures/files/k224_functional_bn_x2_full.h5", "fixtures/files/k224_functional_bn_x2_full.h5").agree
        True
    """
    from mgpu_io.keras.exports import artifact_format

    if artifact_format(a) is not None and artifact_format(b) is None:
        a, b = b, a  # the model first, the artifact second
    if artifact_format(b) is not None:
        return _verify_artifact(a, b, tolerance, batch, seed, lambdas, safe_mode, custom_objects)
    model_a = load_any(a, lambdas, safe_mode, custom_objects)
    model_b = load_any(b, lambdas, safe_mode, custom_objects)
    report = VerifyReport(a=str(a), b=str(b), tolerance=tolerance)
    weights_a, weights_b = model_a.weights, model_b.weights
    if len(weights_a) != len(weights_b):
        report.problems.append(f"{len(weights_a)} weight tensors in {a}, {len(weights_b)} in {b}")
    for index, (wa, wb) in enumerate(zip(weights_a, weights_b)):
        va, vb = np.asarray(wa), np.asarray(wb)
        entry = {"index": index, "a": wa.path, "b": wb.path, "shape": list(va.shape)}
        if va.shape != vb.shape:
            entry["difference"] = None
            report.problems.append(f"weight #{index} ({wa.path}) has shape {va.shape} in a, {vb.shape} in b")
        else:
            difference = float(np.nanmax(np.abs(va - vb))) if va.size else 0.0
            if not np.array_equal(np.isnan(va), np.isnan(vb)):
                difference = float("inf")
            entry["difference"] = difference
            if difference > tolerance:
                report.problems.append(f"weight #{index} ({wa.path}) differs by {difference:.3g}")
        report.weights.append(entry)
    if not report.problems:
        rng = np.random.RandomState(seed)
        inputs = [
            rng.standard_normal([batch] + [d or 8 for d in tensor.shape[1:]]).astype("float32")
            for tensor in model_a.inputs
        ]
        outputs_a = _as_list(model_a.predict(inputs if len(inputs) > 1 else inputs[0], verbose=0))
        outputs_b = _as_list(model_b.predict(inputs if len(inputs) > 1 else inputs[0], verbose=0))
        report.prediction_difference = max(
            float(np.nanmax(np.abs(np.asarray(x) - np.asarray(y)))) for x, y in zip(outputs_a, outputs_b)
        )
        if report.prediction_difference > tolerance:
            report.problems.append(f"predictions differ by {report.prediction_difference:.3g}")
    return report


def _verify_artifact(a, b, tolerance, batch, seed, lambdas, safe_mode, custom_objects):
    """A model file ``a`` against a deployable artifact ``b`` (``.onnx``, ``.tflite``, an exported SavedModel folder):
    predictions only, the artifact run by its own runtime (it holds no Keras weights to compare)."""
    from mgpu_io.errors import InvalidArgument
    from mgpu_io.keras.exports import (
        artifact_format,
        difference,
        model_input_names,
        predict,
        run_artifact,
        sample_inputs,
    )

    if artifact_format(a) is not None:
        raise InvalidArgument(
            problem="verify compares an artifact with the model it was written from",
            parameter="a",
            expected="a model file and an artifact",
            received=f"a={a}, b={b} (two artifacts)",
            fix="Pass the model file (the legacy file or the .keras) as a",
        )
    model = load_any(a, lambdas, safe_mode, custom_objects)
    report = VerifyReport(a=str(a), b=str(b), tolerance=tolerance)
    inputs = sample_inputs(model, batch=batch, seed=seed)
    try:
        got = run_artifact(b, inputs, model_input_names(model))
    except Exception as error:  # each runtime raises its own kinds: its first line is the problem
        first = (str(error).strip().splitlines() or [type(error).__name__])[0]
        report.problems.append(f"{artifact_format(b)} runtime cannot run {b}: {first[:300]}")
        return report
    report.prediction_difference = difference(got, predict(model, inputs))
    if not report.prediction_difference <= tolerance:
        report.problems.append(f"predictions differ by {report.prediction_difference:.3g}")
    return report


def _as_list(outputs):
    return outputs if isinstance(outputs, (list, tuple)) else [outputs]
