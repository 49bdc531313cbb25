"""Recompute BatchNormalization moving statistics from data.

Multi-GPU training with a last batch smaller than the replica count hands some replica 0 or 1 samples; the
BatchNormalization moving statistics then become NaN (keras #11858, tensorflow#24320), and inference is garbage
although training looked fine. The other weights are intact, so the statistics can simply be recomputed: the
population mean and variance of each BatchNormalization layer's input over data the user supplies, layer by layer
in graph order (each layer's input depends on the layers before it).
"""

from dataclasses import dataclass, field

import numpy as np

from mgpu_io.anykeras.wrapper import is_keras_model
from mgpu_io.format.text import names, plural, printable
from mgpu_io.keras._compat import import_keras


@dataclass
class RecalibrationReport:
    """Which BatchNormalization layers were recomputed (nested ones as ``nested/bn``), from how many samples;
    ``unrecoverable``: learned weights that stay NaN/Inf; ``skipped``: layers whose input is not one tensor
    (a nested model called more than once), with the reason."""

    layers: list[str] = field(default_factory=list)
    samples: int = 0
    unrecoverable: list[str] = field(default_factory=list)
    skipped: list[str] = field(default_factory=list)

    def to_dict(self):
        return {
            "layers": self.layers,
            "samples": self.samples,
            "unrecoverable": self.unrecoverable,
            "skipped": self.skipped,
        }

    def __str__(self):
        lines = [
            f"Recomputed the moving statistics of {plural(len(self.layers), 'BatchNormalization layer')} "
            f"from {plural(self.samples, 'sample')}" + (f": {names(self.layers)}" if self.layers else "")
        ]
        if self.unrecoverable:
            lines.append(f"  ! learned weights still NaN/Inf (retrain these layers): {names(self.unrecoverable)}")
        lines += [f"  ! skipped {printable(reason)}" for reason in self.skipped]
        return "\n".join(lines)


def recalibrate_batchnorm(model, data, *, only_non_finite=True, batch_size=256):
    """Recompute the moving mean and variance of the model's BatchNormalization layers from ``data``.

    Args:
        model: a Keras 3 functional or Sequential model (for example from :func:`mgpu_io.load_model`).
        data: the model's inputs: an array, a list of arrays (one per model input), or an iterable of batches
            (each an array, or a list of arrays for a multi-input model).
        only_non_finite: recompute only the layers whose statistics hold NaN/Inf (the default), or all of them.
        batch_size: batch size for arrays.

    Returns:
        A :class:`RecalibrationReport`. Its ``unrecoverable`` lists learned weights (``gamma``, ``beta``) that are
        NaN/Inf too: data cannot bring those back (the empty replica's gradient reached them); retrain the layer.

    Example:
        >>> import numpy as np, warnings
        >>> from mgpu_io import load_model
        >>> with warnings.catch_warnings():
        ...     warnings.simplefilter("ignore")  # load_model warns about the NaN statistics
        ...     model = load_model("fixtures/files/k224_bn_uneven_batch_x2_full.h5", compile=False)
        >>> x_train = np.random.RandomState(0).standard_normal((64, 6)).astype("float32")
        >>> recalibrate_batchnorm(model, x_train).layers
        ['bn']
    """
    keras = import_keras()
    report = RecalibrationReport()
    _recalibrate(keras, model, data, batch_size, only_non_finite, report, prefix="")
    return report


def _needs(layer, keras, only_non_finite):
    if isinstance(layer, keras.layers.BatchNormalization):
        return not only_non_finite or not all(
            np.isfinite(np.asarray(v)).all() for v in (layer.moving_mean, layer.moving_variance)
        )
    if is_keras_model(layer):
        return any(_needs(inner, keras, only_non_finite) for inner in layer.layers)
    return False


def _recalibrate(keras, model, data, batch_size, only_non_finite, report, prefix):
    """Recompute ``model``'s targets in graph order; a nested model gets its own inputs, computed from ``data``."""
    for layer in model.layers:  # graph order: earlier layers are fixed before later ones are read
        if not _needs(layer, keras, only_non_finite):
            continue
        try:
            probe = keras.Model(model.inputs, layer.input)
        except (ValueError, AttributeError) as error:  # a layer called more than once has no single input
            report.skipped.append(f"{prefix}{layer.name} ({error})")
            continue
        if is_keras_model(layer):
            outputs = [probe.predict_on_batch(batch) for batch in _batches(data, batch_size, len(model.inputs))]
            if isinstance(outputs[0], (list, tuple)):  # a nested model with several inputs
                inner = [np.concatenate([np.asarray(o[k]) for o in outputs]) for k in range(len(outputs[0]))]
            else:
                inner = np.concatenate([np.asarray(o) for o in outputs])
            _recalibrate(keras, layer, inner, batch_size, only_non_finite, report, f"{prefix}{layer.name}/")
            continue
        count, mean, m2 = 0, None, None
        for batch in _batches(data, batch_size, len(model.inputs)):
            values = np.asarray(probe.predict_on_batch(batch), dtype="float64")
            axis = layer.axis if isinstance(layer.axis, int) else layer.axis[0]
            values = np.moveaxis(values, axis, -1).reshape(-1, values.shape[axis])
            count, mean, m2 = _merge(count, mean, m2, values)
        layer.moving_mean.assign(mean.astype("float32"))
        layer.moving_variance.assign((m2 / count).astype("float32"))
        report.layers.append(f"{prefix}{layer.name}")
        report.samples = count
        report.unrecoverable += [
            f"{prefix}{layer.name}/{v.name}" for v in layer.trainable_weights if not np.isfinite(np.asarray(v)).all()
        ]


def _batches(data, batch_size, inputs):
    per_input = (
        isinstance(data, (list, tuple))
        and len(data) == inputs
        and all(isinstance(a, np.ndarray) for a in data)
        and inputs > 1
    )
    if isinstance(data, np.ndarray) or per_input:
        arrays = list(data) if per_input else [data]
        for start in range(0, len(arrays[0]), batch_size):
            parts = [a[start : start + batch_size] for a in arrays]
            yield parts if len(parts) > 1 else parts[0]
        return
    yield from data


def _merge(count, mean, m2, values):
    """Chan et al.'s parallel update of a running mean and sum of squared deviations (numerically stable)."""
    n = values.shape[0]
    batch_mean = values.mean(axis=0)
    batch_m2 = ((values - batch_mean) ** 2).sum(axis=0)
    if count == 0:
        return n, batch_mean, batch_m2
    total = count + n
    delta = batch_mean - mean
    return total, mean + delta * n / total, m2 + batch_m2 + delta**2 * count * n / total
