"""The registry of conversions: what a repair changes so that today's Keras loads the template exactly.

Keras 2 converted old files while loading them (``preprocess_weights_for_loading``, ``legacy/interfaces.py``);
Keras 3 converts nothing (legacy-format.md §4). Each family below is one file of this package: its named
:class:`~.base.Rule` s, the config rewrite, the weight steps and the findings they share. The plan
(:mod:`mgpu_io.format.plan`) runs them through the functions here, in registry order; docs/cli.md's table of changes
and the tests walk :data:`FAMILIES`. To add a conversion, add a file with a ``FAMILY`` and one line below
(docs/architecture.md).
"""

import collections
import json

from mgpu_io.format.config import copy_config
from mgpu_io.format.conversions import (
    arguments,
    cudnn,
    hard_sigmoid,
    keras1,
    keras1_weights,
    keras2_legacy,
    lambdas,
    normalization,
    structure,
    tfops,
    training_config,
)
from mgpu_io.format.conversions.base import KERAS3, TF_KERAS, Context, Conversion, Family, Rule

#: Every family, in the order their rewrites run (Keras 1 spelling first, weights: gates merged before rescaling).
FAMILIES = (
    keras1.FAMILY,
    keras1_weights.FAMILY,
    keras2_legacy.FAMILY,
    tfops.FAMILY,  # before structure, which refuses the classes that Keras 3 lacks
    normalization.FAMILY,
    structure.FAMILY,
    arguments.FAMILY,
    lambdas.FAMILY,
    cudnn.FAMILY,
    hard_sigmoid.FAMILY,
    training_config.FAMILY,
)
#: Every rule by name, as reports list them.
RULES = {rule.name: rule for family in FAMILIES for rule in family.rules}

__all__ = [
    "FAMILIES",
    "KERAS3",
    "RULES",
    "TF_KERAS",
    "Context",
    "Conversion",
    "Family",
    "Rule",
    "checks",
    "convert_config",
    "convert_training",
    "converted_before",
    "weight_conversion",
]


def rules_table():
    """The markdown table of every rule (docs/cli.md holds it between ``<!-- rules -->`` markers; a test checks)."""
    rows = ["| rule | family | what changes | what it avoids | proven on files of |", "|---|---|---|---|---|"]
    for family in FAMILIES:
        for rule in family.rules:
            rows.append(
                f"| `{rule.name}` | {family.name} | {rule.summary} | {rule.avoids} | "
                f"{', '.join(rule.verified) or 'unit tests only'} |"
            )
    return "\n".join(rows)


def _active(context):
    if context.keras3_writer:
        return [family for family in FAMILIES if family.keras3]
    return [family for family in FAMILIES if family.cpu or not context.cpu_only]


def convert_config(model_config, context):
    """Return ``(config, changes)``: a converted copy of ``model_config`` and the names of the rules applied.

    A config converted before in this process, in the same context, is not converted again: a folder's files (one
    training run's checkpoints) share one model config, and each worker converts it once (:func:`converted_before`).
    The copy handed back is the caller's to change.

    Raises:
        UnsupportedModel: a layer has no known conversion (named in the message).

    Example:
        >>> config, changes = convert_config({"class_name": "Sequential", "config": [
        ...     {"class_name": "Dense", "config": {"name": "d", "units": 1, "batch_input_shape": [None, 3]}}]},
        ...     Context())
        >>> [layer["class_name"] for layer in config["config"]["layers"]], changes
        (['InputLayer', 'Dense'], ['sequential-list-config', 'sequential-explicit-input'])
    """
    key = _key(model_config, context)
    found = _CONVERTED.get(key) if key is not None else None
    if found is not None:
        _CONVERTED.move_to_end(key)
        text, changes = found
        return json.loads(text), list(changes)  # a fresh copy: JSON's C parser copies a config faster than Python
    config, changes = copy_config(model_config), []
    for family in _active(context):
        if family.rewrite_config is not None:
            changes += family.rewrite_config(config, context)
    changes = list(dict.fromkeys(changes))
    text = _json(config) if key is not None else None
    if text is not None and json.loads(text) == config:  # kept only where its JSON gives it back as it is
        _CONVERTED[key] = (text, tuple(changes))
        while len(_CONVERTED) > 1 and (
            len(_CONVERTED) > _CONVERTED_ENTRIES
            or sum(len(before) + len(after) for (before, _), (after, _) in _CONVERTED.items()) > _CONVERTED_CHARACTERS
        ):
            _CONVERTED.popitem(last=False)
    return config, changes


#: The configs this process converted, by :func:`_key`, the latest last: ``(converted config's JSON, changes)``.
_CONVERTED: collections.OrderedDict = collections.OrderedDict()
#: How many distinct configs :data:`_CONVERTED` keeps: a folder of checkpoints holds one model or a few, the
#: benchmark's folder of small files 45, in turn (a smaller cache would forget each before it came round again).
_CONVERTED_ENTRIES = 64
#: The characters of JSON (configs before and after) :data:`_CONVERTED` keeps at most, and the longest config it
#: keeps (a longer one is converted each time): what the cache holds stays bounded whatever the files (NASNet's
#: config is 166 KB).
_CONVERTED_CHARACTERS = 16 << 20
_CONVERTED_MAX_CHARACTERS = 4 << 20


def _json(config):
    try:
        return json.dumps(config, separators=(",", ":"), allow_nan=True)
    except (TypeError, ValueError):
        return None


def _key(model_config, context):
    """What decides a conversion: the config's JSON text and the context; ``None`` for a config that is not JSON or
    longer than :data:`_CONVERTED_MAX_CHARACTERS`."""
    text = _json(model_config)
    return (text, context) if text is not None and len(text) <= _CONVERTED_MAX_CHARACTERS else None


def converted_before(model_config, context):
    """Whether :func:`convert_config` holds this config's conversion in this context already (a folder's later
    checkpoints of one model).

    Example:
        >>> config = {"class_name": "Sequential", "config": [{"class_name": "Dense", "config": {"name": "d2",
        ...           "units": 2, "batch_input_shape": [None, 5]}}]}
        >>> before = converted_before(config, Context()); _ = convert_config(config, Context())
        >>> before, converted_before(config, Context()), converted_before(config, Context(keras1=True))
        (False, True, False)
    """
    key = _key(model_config, context)
    return key is not None and key in _CONVERTED


def convert_training(training_config, context):
    """Return ``(training_config, changes)`` rewritten by every family that has a training-config rule."""
    config, changes = copy_config(training_config), []
    for family in _active(context):
        if family.rewrite_training is not None:
            changes += family.rewrite_training(config, context)
    return config, list(dict.fromkeys(changes))


def weight_conversion(layer, shapes, context):
    """Plan the conversion of one layer's stored weights; an empty :class:`Conversion` when none applies.

    Args:
        layer: the layer's final config (after the config rewrites, e.g. ``CuDNNLSTM`` already ``LSTM``).
        shapes: the stored weights' shapes, in order.
        context: the plan's :class:`Context`.

    Example:
        >>> import numpy as np
        >>> lstm = {"class_name": "LSTM", "config": {"name": "l", "units": 1, "recurrent_activation": "hard_sigmoid"}}
        >>> conversion = weight_conversion(lstm, [(2, 4), (1, 4), (4,)], Context())
        >>> conversion.notes, conversion.apply(["k", "r", "b"], [np.ones((2, 4)), np.ones((1, 4)), np.ones(4)])[1][2]
        (['hard-sigmoid-gates-rescaled'], array([1.2, 1.2, 1. , 1.2]))
    """
    if layer["class_name"] == "Bidirectional":  # two copies of the wrapped layer: forward, then backward
        inner, half = layer["config"]["layer"], len(shapes) // 2
        forward = weight_conversion(inner, shapes[:half], context)
        backward = weight_conversion(layer["config"].get("backward_layer") or inner, shapes[half:], context)
        if not (forward or backward):
            return Conversion()

        def both(names, arrays):
            cut = len(arrays) // 2
            f_names, f_arrays = forward.apply(names[:cut], arrays[:cut])
            b_names, b_arrays = backward.apply(names[cut:], arrays[cut:])
            return f_names + b_names, f_arrays + b_arrays

        return Conversion(list(dict.fromkeys(forward.notes + backward.notes)), [both])
    if layer["class_name"] == "TimeDistributed" and isinstance(layer["config"].get("layer"), dict):
        return weight_conversion(layer["config"]["layer"], shapes, context)  # the wrapped layer's own weights
    conversion = Conversion()
    for family in _active(context):
        if family.weight_steps is not None:
            for note, step in family.weight_steps(layer, shapes, context):
                conversion.add(note, step)
    return conversion


def checks(template, context):
    """``(family, message, layer names)`` for everything the families find worth saying about ``template``."""
    return [
        (family, message, layers)
        for family in _active(context)
        if family.check is not None
        for message, layers in family.check(template, context)
    ]
