"""Training config: carry a wrapper's compile settings over to its template, spelled as Keras 3 reads them.

The per-output entries (loss, metrics, loss weights) are re-keyed from the merge names to the template's outputs
(:func:`mgpu_io.format.output_keys.rekey`), and optimizer arguments and loss aliases that Keras 3's legacy loader cannot
read are renamed to the spellings Keras 3 and tf_keras share.
"""

from mgpu_io.format.config import copy_config
from mgpu_io.format.conversions.base import Family, Rule
from mgpu_io.format.output_keys import rekey

_PER_OUTPUT_KEYS = ("loss", "metrics", "weighted_metrics", "loss_weights", "sample_weight_mode")
# Optimizer arguments that Keras 2 spelled differently from Keras 3 (Keras 3 rejects the old names).
_OPTIMIZER_RENAMES = {"lr": "learning_rate"}
# Keras' own optimizers, which tf_keras (TF >= 2.11) writes as "Custom>Adam" in an HDF5 file's training config.
_BUILTIN_OPTIMIZERS = {
    "Adadelta",
    "Adafactor",
    "Adagrad",
    "Adam",
    "AdamW",
    "Adamax",
    "Ftrl",
    "Lion",
    "Nadam",
    "RMSprop",
    "SGD",
}
# Arguments of tf_keras' optimizers that Keras 3's do not take ("Argument(s) not recognized: {'jit_compile': ...}").
_TF_KERAS_ONLY_ARGUMENTS = ("jit_compile", "is_legacy_optimizer")
# Loss aliases that Keras 3's legacy loader cannot resolve, and the names that Keras 3 and tf_keras share.
_LOSS_RENAMES = {
    "mse": "mean_squared_error",
    "MSE": "mean_squared_error",
    "mae": "mean_absolute_error",
    "MAE": "mean_absolute_error",
    "mape": "mean_absolute_percentage_error",
    "MAPE": "mean_absolute_percentage_error",
    "msle": "mean_squared_logarithmic_error",
    "MSLE": "mean_squared_logarithmic_error",
    "kld": "kl_divergence",
    "KLD": "kl_divergence",
    "kullback_leibler_divergence": "kl_divergence",
    "logcosh": "log_cosh",
    "cosine_proximity": "cosine_similarity",
    "cosine": "cosine_similarity",
}


def rekey_training_config(training_config, merge_names, template_outputs):
    """Return ``(training_config, renamed)`` with per-output entries keyed by ``template_outputs``.

    Example:
        >>> config, renamed = rekey_training_config(
        ...     {"loss": {"add": "mse", "nested_1": "mae", "nested_2": "mae"}},
        ...     ["add", "nested_1", "nested_2"], ["add", "nested", "nested"])
        >>> config["loss"], renamed
        (['mse', 'mae', 'mae'], {'nested_1': 'nested', 'nested_2': 'nested'})
    """
    config = copy_config(training_config)
    renamed = {}
    for key in _PER_OUTPUT_KEYS:
        if key in config:
            config[key], changed = rekey(config[key], merge_names, template_outputs)
            renamed.update(changed)
    return config, renamed


def metrics_per_output(training_config, outputs):
    """One metrics list for a model of several outputs becomes one list per output, as Keras 2 applied it.

    Keras 3 needs the metrics to match the outputs' structure; otherwise ``fit`` fails ("tuple arity mismatch").
    Returns the rule names applied.

    Example:
        >>> config = {"metrics": ["accuracy"]}
        >>> metrics_per_output(config, ["out_a", "out_b"]), config
        (['metrics-per-output'], {'metrics': {'out_a': ['accuracy'], 'out_b': ['accuracy']}})
    """
    names = list(dict.fromkeys(outputs or []))
    changes = []
    for key in ("metrics", "weighted_metrics"):
        value = training_config.get(key)
        if len(names) > 1 and isinstance(value, list) and value and not any(isinstance(v, (list, dict)) for v in value):
            training_config[key] = {name: list(value) for name in names}
            changes.append("metrics-per-output")
    return list(dict.fromkeys(changes))


def _rename_losses(value):
    if isinstance(value, str):
        return _LOSS_RENAMES.get(value, value)
    if isinstance(value, list):
        return [_rename_losses(v) for v in value]
    if isinstance(value, dict):
        return {k: _rename_losses(v) for k, v in value.items()}
    return value


def normalize_training_config(training_config):
    """Return ``(training_config, changes)`` with optimizer arguments spelled as Keras 3 and tf_keras accept them.

    A zero ``decay`` (Keras 2's default) is dropped: Keras 3 no longer has the argument. A non-zero one is kept,
    and Keras 3 ignores it with a warning of its own.

    Example:
        >>> normalize_training_config({"optimizer_config": {"class_name": "Adam", "config": {"lr": 0.1,
        ...     "decay": 0.0}}})
        ({'optimizer_config': {'class_name': 'Adam', 'config': {'learning_rate': 0.1}}}, ['optimizer-arguments'])
    """
    config = copy_config(training_config)
    changes = []
    optimizer_config = config.get("optimizer_config") or {}
    name = optimizer_config.get("class_name") if isinstance(optimizer_config, dict) else None
    if isinstance(name, str) and name.startswith("Custom>") and name[len("Custom>") :] in _BUILTIN_OPTIMIZERS:
        optimizer_config["class_name"] = name[len("Custom>") :]
        arguments = optimizer_config.get("config")
        for argument in _TF_KERAS_ONLY_ARGUMENTS:
            if isinstance(arguments, dict):
                arguments.pop(argument, None)
        changes.append("optimizer-custom-prefix")
    optimizer = optimizer_config.get("config") if isinstance(optimizer_config, dict) else None
    if isinstance(optimizer, dict) and any(argument in optimizer for argument in _TF_KERAS_ONLY_ARGUMENTS):
        for argument in _TF_KERAS_ONLY_ARGUMENTS:  # a tf_keras optimizer of the user's own class
            optimizer.pop(argument, None)
        changes.append("optimizer-custom-prefix")
    if isinstance(optimizer, dict):
        for old, new in _OPTIMIZER_RENAMES.items():
            if old in optimizer:
                optimizer.setdefault(new, optimizer.pop(old))
                changes.append("optimizer-arguments")
        if optimizer.get("decay") == 0.0:
            del optimizer["decay"]
            changes.append("optimizer-arguments")
    loss = _rename_losses(config.get("loss"))
    if loss != config.get("loss"):
        config["loss"] = loss
        changes.append("loss-names")
    if _auto_reduction(config.get("loss")):
        changes.append("loss-reduction-auto")
    return config, list(dict.fromkeys(changes))


def _auto_reduction(value):
    """Give tf.keras loss objects' ``reduction='auto'`` its meaning, ``sum_over_batch_size``; say if any had it."""
    found, stack = False, [value]
    while stack:
        item = stack.pop()
        if isinstance(item, dict):
            inner = item.get("config")
            if "class_name" in item and isinstance(inner, dict) and inner.get("reduction") == "auto":
                inner["reduction"] = "sum_over_batch_size"
                found = True
            stack.extend(item.values())
        elif isinstance(item, list):
            stack.extend(item)
    return found


def _rewrite_training(training, context):
    config, changes = normalize_training_config(training)
    training.clear()
    training.update(config)
    return changes


FAMILY = Family(
    name="training_config",
    summary="compile settings spelled as Keras 3 reads them",
    rules=(
        Rule(
            "optimizer-arguments",
            "optimizer `lr` becomes `learning_rate`; a zero `decay` is dropped",
            "Keras 3: `Argument(s) not recognized: {'lr': ...}`; `decay` is no longer an argument (a non-zero one is "
            "kept and Keras 3 ignores it with a warning)",
            ("keras122", "keras216", "keras224", "keras231", "tfkeras115"),
        ),
        Rule(
            "optimizer-custom-prefix",
            "tf_keras' `Custom>Adam` (its name for Keras' own optimizers) becomes "
            "`Adam`; it, and a tf_keras optimizer of the user's own class, loses the `jit_compile` and "
            "`is_legacy_optimizer` arguments Keras 3 does not take",
            "a tf_keras checkpoint compiled with Keras' default optimizer and a fresh state (\"Argument(s) not "
            "recognized: {'jit_compile': False}\")",
            (),
        ),
        Rule(
            "loss-names",
            "loss aliases (`mse`, `mae`, `kld`, `logcosh`, `cosine_proximity`) get their full names",
            "Keras 3's legacy loader: `Could not deserialize 'keras.metrics.mse'`",
            ("keras122", "keras216", "keras224", "keras231", "tfkeras115"),
        ),
        Rule(
            "metrics-per-output",
            "one metrics list for a model of several outputs becomes one list per "
            "output (Keras 2 applied every metric to every output)",
            "Keras 3: the first `fit` fails with `tuple arity mismatch ... Invalid metrics`",
            ("keras224", "keras231", "tfkeras115"),
        ),
        Rule(
            "loss-reduction-auto",
            "tf.keras loss objects' `reduction='auto'` becomes `'sum_over_batch_size'`, "
            "what `auto` meant outside distribution strategies",
            "Keras 3: `Invalid value for argument reduction. Received: reduction=auto`: the whole load failed",
            (),
        ),
    ),
    rewrite_training=_rewrite_training,
)
