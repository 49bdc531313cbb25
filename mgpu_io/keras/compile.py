"""Rebuild a legacy ``training_config`` as Keras 3 ``compile`` arguments that evaluate to the old numbers.

Every writer of the era spelled its compile state differently (legacy-format.md §3, docs/tf2-writers.md): Keras 1
and 2 stored metrics and losses by name (``"acc"``, ``"mae"``, a function's name), per output as a dict or one list
for all outputs; tf.keras 1.15 added loss and metric objects (``{"class_name": "CategoricalCrossentropy", ...}``);
tf.keras 2.x and tf_keras store every metric as an object, one list per output (``[[{"class_name":
"MeanMetricWrapper", "config": {"fn": "categorical_accuracy", "name": "out_a_accuracy"}}], [None]]``). Keras 3's
legacy reader takes none of these whole: a ``MeanMetricWrapper`` comes back with a name where its function should
be (``'str' object is not callable`` in ``evaluate``), a ``None`` fails ("Expected metric, received None"), a loss
object whose config holds tf.keras' ``fn`` is refused, one loss with per-output weights fails.

Here each entry is resolved on its own, into an object of Keras 3 that computes what the writer computed:

- ``"acc"``/``"accuracy"`` (and ``"ce"``) by the writer's own rule: binary where the output has one unit or its
  loss is binary cross-entropy, sparse where the loss is sparse categorical cross-entropy, else categorical (Keras 3
  looks at the output's shape only, which picks categorical accuracy for a two-unit sigmoid output);
- a metric function's name as that function (``cosine_proximity`` and ``kld`` as the loss functions Keras 2 used:
  Keras 3's ``CosineSimilarity`` metric has the opposite sign);
- a ``MeanMetricWrapper`` as its ``fn``, under its stored name (the output's prefix, which Keras 3 adds again, taken
  off); a metric or loss object from its config (tf.keras' ``fn`` key dropped, ``reduction='auto'`` read as
  ``sum_over_batch_size``);
- one loss for several outputs with per-output weights as that loss for each output; weights keyed by output as a
  list in output order; ``sample_weight_mode`` left out (Keras 3 takes per-timestep weights as they are);
- more losses (or loss weights) in a list than the model has outputs, which tf.keras 2.2+ and tf_keras accepted and
  zipped with the outputs, as the first ones alone (``loss=[a, b]`` on one output computed ``a``).

What cannot be rebuilt is left out and named in one warning (a metric), or leaves the model uncompiled (a loss, whose
absence would change what ``fit`` minimises): never a model that fails later in ``evaluate``.
"""

import copy

from mgpu_io.errors import first_line
from mgpu_io.keras._compat import compile_args_from_training_config, import_keras

#: Metric names of Keras 1/2 that Keras 3 lacks, and the Keras 3 loss function that computes the same values.
_LOSS_FUNCTION_METRICS = {
    "cosine_proximity": "cosine_similarity",
    "cosine": "cosine_similarity",
    "kld": "kl_divergence",
    "KLD": "kl_divergence",
    "kullback_leibler_divergence": "kl_divergence",
    "logcosh": "log_cosh",
}
_ALIASES = {
    "mse": "mean_squared_error",
    "MSE": "mean_squared_error",
    "mae": "mean_absolute_error",
    "MAE": "mean_absolute_error",
    "mape": "mean_absolute_percentage_error",
    "MAPE": "mean_absolute_percentage_error",
    "msle": "mean_squared_logarithmic_error",
    "MSLE": "mean_squared_logarithmic_error",
    **_LOSS_FUNCTION_METRICS,
}
_ACCURACY = ("accuracy", "acc")
_CROSSENTROPY = ("crossentropy", "ce")
#: Keys of tf.keras' loss and metric configs that Keras 3's classes do not take.
_TF_KERAS_ONLY = ("fn",)


class Unresolved(Exception):
    """One loss or metric that Keras 3 cannot rebuild; its text names it and says why."""


def compile_arguments(model, training_config, custom_objects=None, keras_version=None):
    """Return ``(arguments, dropped)``: ``model.compile`` arguments rebuilt from ``training_config`` (as the writer
    of ``keras_version`` read it), and the metrics left out (``"name (why)"``).

    Raises:
        Unresolved: a loss cannot be rebuilt (the model is then best left uncompiled).
        ValueError, TypeError, KeyError, AttributeError: the optimizer cannot be rebuilt (as Keras 3 raises it).
    """
    keras = import_keras()
    outputs = _output_names(model)
    rule = accuracy_rule(keras_version)
    scope = keras.saving.custom_object_scope(custom_objects or {})
    with scope:
        arguments = compile_args_from_training_config(
            {"optimizer_config": training_config["optimizer_config"], "loss_weights": None}, custom_objects
        )
        losses = _per_output(_applied(training_config.get("loss"), outputs), outputs)
        loss_weights = _per_output(_applied(training_config.get("loss_weights"), outputs), outputs)
        if isinstance(losses, _Shared) and isinstance(loss_weights, list):  # one loss, weighted per output
            losses = [losses.value] * len(outputs)
        losses = losses.value if isinstance(losses, _Shared) else losses
        if isinstance(loss_weights, _Shared):
            loss_weights = loss_weights.value
        resolved_losses = _map(losses, lambda entry, output: _loss(keras, entry, custom_objects))
        dropped = []
        metrics = {}
        for key in ("metrics", "weighted_metrics"):
            per_output = _metrics_per_output(training_config.get(key), outputs)
            if per_output is None:
                metrics[key] = None
                continue
            rebuilt = []
            for index, entries in enumerate(per_output):
                output = outputs[index] if len(outputs) > 1 else None
                loss = _nth(losses, index)
                kept = []
                for entry in entries:
                    try:
                        kept.append(_metric(keras, entry, model.outputs[index], loss, output, custom_objects, rule))
                    except Unresolved as why:
                        dropped.append(str(why))
                rebuilt.append(kept)
            metrics[key] = rebuilt if len(outputs) > 1 else rebuilt[0]
    if len(outputs) > 1 and len(set(outputs)) == len(outputs):  # keyed by output, as the user compiled it
        resolved_losses, loss_weights = _keyed(resolved_losses, outputs), _keyed(loss_weights, outputs)
        metrics = {key: _keyed(value, outputs) for key, value in metrics.items()}
    arguments.update(loss=resolved_losses, loss_weights=loss_weights, **metrics)
    return arguments, dropped


def _keyed(value, outputs):
    """A list in output order as a dict by output name (entries of ``None``, an output left out, omitted)."""
    if not isinstance(value, list):
        return value
    return {name: entry for name, entry in zip(outputs, value) if entry is not None}


def _output_names(model):
    """The model's output names; a Sequential (which has none in Keras 3) has one output, its last layer's."""
    names = getattr(model, "output_names", None)
    if names:
        return list(names)
    return [model.layers[-1].name] if model.layers else ["output"]


class _Shared:
    """One value for every output (a string, an object's config): Keras 2 applied it to each."""

    def __init__(self, value):
        self.value = value


def _per_output(value, outputs):
    """A per-output value as a list in ``outputs`` order (a dict by output name), or :class:`_Shared`."""
    if value is None:
        return None
    if isinstance(value, dict) and "class_name" not in value:
        if len(outputs) == 1 and outputs[0] not in value and len(value) == 1:
            return next(iter(value.values()))
        return [value.get(name) for name in outputs]
    if isinstance(value, list):
        return list(value) if len(outputs) > 1 or len(value) != 1 else value[0]
    return _Shared(value) if len(outputs) > 1 else value


def _applied(value, outputs):
    """The entries of a list of losses (or loss weights) that its writer applied: tf.keras 2.2+ and tf_keras zip the
    list with the model's outputs, so entries past the last output were stored but never computed (``loss=[a, b]``
    on one output trains and evaluates ``a`` alone); Keras 1/2 and tf.keras up to 2.1 refused such a list."""
    if isinstance(value, list) and len(value) > len(outputs):
        return value[: len(outputs)]
    return value


def _nth(value, index):
    if isinstance(value, list):
        return value[index] if index < len(value) else None
    return value


def _map(value, resolve):
    if isinstance(value, list):
        return [resolve(entry, index) if entry is not None else None for index, entry in enumerate(value)]
    return resolve(value, 0) if value is not None else None


def _metrics_per_output(value, outputs):
    """Metrics as one list per output, ``None`` entries dropped (tf.keras 2.x writes ``[[...], [None]]``)."""
    if value is None:
        return None
    n = len(outputs)
    if isinstance(value, dict) and "class_name" not in value:
        lists = [value.get(name) for name in outputs]
        if n == 1 and lists == [None] and len(value) == 1:
            lists = list(value.values())
    elif isinstance(value, list) and len(value) == n and all(isinstance(v, list) or v is None for v in value):
        lists = value  # one list per output (tf.keras 2.x, tf_keras)
    elif isinstance(value, list):
        lists = [value] * n  # one list for every output (Keras 1/2)
    else:
        lists = [[value]] * n
    return [[entry for entry in (v if isinstance(v, list) else [v]) if entry is not None] for v in lists]


def _name(entry):
    if isinstance(entry, str):
        return entry
    if isinstance(entry, dict):
        config = entry.get("config") if isinstance(entry.get("config"), dict) else {}
        return str(config.get("name") or entry.get("class_name"))
    return repr(entry)


def _loss_kind(keras, loss):
    """``"binary"``, ``"sparse"`` or ``None`` for an output's stored loss, as Keras 1/2 told accuracy apart."""
    name = loss
    if isinstance(loss, dict):
        config = loss.get("config") if isinstance(loss.get("config"), dict) else {}
        name = config.get("fn") or loss.get("class_name")
    name = str(name or "")
    if name in ("binary_crossentropy", "BinaryCrossentropy"):
        return "binary"
    if name in ("sparse_categorical_crossentropy", "SparseCategoricalCrossentropy"):
        return "sparse"
    return None


def accuracy_rule(keras_version):
    """How the writer of ``keras_version`` chose the accuracy that ``"acc"`` meant: ``"loss"`` (Keras 1/2, tf.keras
    up to TF 2.1: binary where the output has one unit or its loss is binary cross-entropy), ``"shape"`` (tf.keras
    from TF 2.2, tf_keras, Keras 3: by the output's shape alone) or ``"either"`` (``2.3.0-tf``, written by TF 2.1 and
    by TF 2.2 alike).

    Example:
        >>> [accuracy_rule(v) for v in ("1.2.2", "2.2.4", "2.3.1", "2.2.4-tf", "2.3.0-tf", "2.4.0", "2.21.0", None)]
        ['loss', 'loss', 'loss', 'loss', 'either', 'shape', 'shape', 'loss']
    """
    version = str(keras_version or "")
    if version == "2.3.0-tf":
        return "either"
    try:
        numbers = tuple(int(part) for part in version.split("-")[0].split(".")[:2])
    except ValueError:
        return "loss"
    if version.endswith("-tf"):
        return "loss" if numbers <= (2, 2) else "shape"
    return "shape" if numbers >= (2, 4) else "loss"


def _metric(keras, entry, output_tensor, loss, output, custom_objects, rule="loss"):
    """One stored metric as a Keras 3 metric object computing what the writer computed."""
    if isinstance(entry, str):
        if entry in (custom_objects or {}):
            return _custom_metric(keras, custom_objects[entry], entry)
        if entry.lower() in _ACCURACY + _CROSSENTROPY:
            return _by_writer_rule(keras, entry, output_tensor, loss, rule=rule)
        return _named(keras, entry, entry)
    if isinstance(entry, dict) and "class_name" in entry:
        config = copy.deepcopy(entry.get("config") or {})
        name = _unprefixed(str(config.get("name") or ""), output)
        if entry["class_name"] == "MeanMetricWrapper":
            fn = config.get("fn")
            if not isinstance(fn, str):
                raise Unresolved(f"{_name(entry)} (a MeanMetricWrapper without the name of its function)")
            if fn.lower() in _ACCURACY + _CROSSENTROPY:
                return _by_writer_rule(keras, fn, output_tensor, loss, name=name)
            return _named(keras, fn, name or fn)
        for key in _TF_KERAS_ONLY:
            config.pop(key, None)
        if name:
            config["name"] = name
        try:
            metric = keras.metrics.deserialize({"class_name": entry["class_name"], "config": config})
        except Exception as error:  # Keras raises many kinds for a config it cannot read
            raise Unresolved(f"{_name(entry)} ({first_line(error)})") from None
        if not isinstance(metric, keras.metrics.Metric):  # Keras gives back the name of a class it does not know
            raise Unresolved(
                f"{_name(entry)} (Could not locate class {entry['class_name']!r}: pass it in custom_objects=)"
            )
        return metric
    raise Unresolved(f"{entry!r} (not a metric's name or config)")


def _custom_metric(keras, value, name):
    """The caller's own metric for a stored name: a Metric class or instance, or a function."""
    if isinstance(value, type) and issubclass(value, keras.metrics.Metric):
        try:
            return value(name=name)
        except TypeError as error:
            raise Unresolved(f"{name} (custom_objects[{name!r}] takes no name: {first_line(error)})") from None
    if isinstance(value, keras.metrics.Metric):
        return value
    if callable(value):
        return keras.metrics.MeanMetricWrapper(value, name=name)
    raise Unresolved(f"{name} (custom_objects[{name!r}] is neither a metric nor a function)")


def _by_writer_rule(keras, identifier, output_tensor, loss, name=None, rule="loss"):
    """``acc``/``accuracy``/``ce``/``crossentropy`` as the writer chose (:func:`accuracy_rule`): by the output's
    units and its loss, or by the output's shape alone."""
    units = output_tensor.shape[-1] if len(output_tensor.shape) else None
    kind = _loss_kind(keras, loss)
    if kind == "binary" and units != 1 and rule != "loss":
        if rule == "either":
            raise Unresolved(
                f"{name or identifier} (binary or categorical accuracy: TF 2.1 and TF 2.2 both wrote this file's "
                f"keras_version 2.3.0-tf and chose differently for an output of {units} units with binary "
                f"cross-entropy)"
            )
        kind = None  # by shape: categorical for several units
    if rule != "loss" and identifier.lower() in _ACCURACY:
        return identifier  # Keras 3 chooses by the shapes of the output and its targets, as tf.keras 2.2+ did
    if units == 1 or kind == "binary":
        kind = "binary"
    accuracy = identifier.lower() in _ACCURACY
    name = name or identifier
    if accuracy:
        cls = {"binary": "BinaryAccuracy", "sparse": "SparseCategoricalAccuracy"}.get(kind, "CategoricalAccuracy")
        return getattr(keras.metrics, cls)(name=name)
    cls = {"binary": "BinaryCrossentropy", "sparse": "SparseCategoricalCrossentropy"}.get(
        kind, "CategoricalCrossentropy"
    )
    return getattr(keras.metrics, cls)(name=name)


def _named(keras, function, name):
    """A metric function's (or a loss function's) name as a Keras 3 metric named ``name``."""
    if function in _LOSS_FUNCTION_METRICS:
        return keras.metrics.MeanMetricWrapper(getattr(keras.losses, _LOSS_FUNCTION_METRICS[function]), name=name)
    canonical = _ALIASES.get(function, function)
    try:
        metric = keras.metrics.get(canonical)
    except (ValueError, TypeError) as error:
        try:
            fn = keras.losses.get(canonical)
        except (ValueError, TypeError):
            raise Unresolved(f"{name} ({first_line(error)})") from None
        if isinstance(fn, keras.losses.Loss):
            fn = fn.call
        return keras.metrics.MeanMetricWrapper(fn, name=name)
    if isinstance(metric, keras.metrics.Metric):
        return type(metric).from_config(dict(metric.get_config(), name=name))
    return keras.metrics.MeanMetricWrapper(metric, name=name)


def _loss(keras, entry, custom_objects):
    """One stored loss as a Keras 3 loss; :class:`Unresolved` when it cannot be rebuilt."""
    if isinstance(entry, str):
        if entry in (custom_objects or {}):
            return custom_objects[entry]  # the caller's own loss (Keras 3 would look the name up only in fit)
        if entry.lower() in _CROSSENTROPY:
            return entry
        canonical = {**_ALIASES, **_LOSS_FUNCTION_METRICS}.get(entry, entry)
        try:
            keras.losses.get(canonical)
        except (ValueError, TypeError) as error:
            raise Unresolved(first_line(error)) from None  # Keras' text names the loss
        return canonical
    if isinstance(entry, dict) and "class_name" in entry:
        config = copy.deepcopy(entry.get("config") or {})
        fn = config.get("fn")
        if entry["class_name"] == "LossFunctionWrapper":
            if not isinstance(fn, str):
                raise Unresolved(f"loss {_name(entry)} (a LossFunctionWrapper without the name of its function)")
            return _loss(keras, fn, custom_objects)
        for key in _TF_KERAS_ONLY:
            config.pop(key, None)
        if config.get("reduction") == "auto":
            config["reduction"] = "sum_over_batch_size"
        try:
            return keras.losses.deserialize({"class_name": entry["class_name"], "config": config})
        except Exception as error:  # Keras raises many kinds for a config it cannot read
            raise Unresolved(f"loss {_name(entry)} ({first_line(error)})") from None
    raise Unresolved(f"loss {entry!r} (not a loss's name or config)")


def _unprefixed(name, output):
    """tf.keras 2.x stored per-output metric names with the output's name in front; Keras 3 adds it again."""
    if output and name.startswith(output + "_") and len(name) > len(output) + 1:
        return name[len(output) + 1 :]
    return name
