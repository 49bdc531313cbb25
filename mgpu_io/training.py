"""Carry a wrapper's ``training_config`` over to its template.

A wrapper was compiled against its merge layers, so a per-output loss, metric or loss weight is keyed by the merge
names (which differ from the template's output names for Siamese templates, kuza55 and avolkov1 wrappers). The
template's output at the same position is the same tensor, so keys are renamed position by position. Where the
template repeats an output name (a Siamese branch returned twice), a dict cannot hold both, so it becomes a list
in output order, which Keras accepts as well.
"""

import copy

_PER_OUTPUT_KEYS = ("loss", "metrics", "weighted_metrics", "loss_weights", "sample_weight_mode")


def rekey_training_config(training_config, merge_names, template_outputs):
    """Return ``(training_config, renamed)`` with per-output entries keyed by ``template_outputs``.

    Example:
        >>> config, renamed = rekey_training_config(
        ...     {"loss": {"add": "mse", "nested_1": "mae", "nested_2": "mae"}},
        ...     ["add", "nested_1", "nested_2"], ["add", "nested", "nested"])
        >>> config["loss"], renamed
        (['mse', 'mae', 'mae'], {'nested_1': 'nested', 'nested_2': 'nested'})
    """
    config = copy.deepcopy(training_config)
    position = {name: index for index, name in enumerate(merge_names)}
    unique = len(set(template_outputs)) == len(template_outputs)
    renamed = {}
    for key in _PER_OUTPUT_KEYS:
        value = config.get(key)
        if not isinstance(value, dict) or not set(value) <= set(position):
            continue
        if unique:
            config[key] = {template_outputs[position[name]]: entry for name, entry in value.items()}
        else:
            config[key] = [value.get(name) for name in merge_names]
        renamed.update({name: template_outputs[position[name]] for name in value})
    return config, {old: new for old, new in renamed.items() if old != new}
