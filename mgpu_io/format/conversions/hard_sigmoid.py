"""hard_sigmoid: Keras 2's slope 0.2, Keras 3's slope 1/6 — made exact by scaling weights, or reported.

Keras 2 defined ``hard_sigmoid(x) = clip(0.2 x + 0.5, 0, 1)``, Keras 3 ``clip(x / 6 + 0.5, 0, 1)``. Keras 2 LSTM
and GRU layers use it as their default ``recurrent_activation``, so such a model loads in Keras 3 and silently
predicts differently. Since ``hard_sigmoid_3(1.2 z) == hard_sigmoid_2(z)`` and a gate's pre-activation is linear in
its kernel, recurrent kernel and bias, scaling those gate columns by 1.2 is exact; so is scaling a Dense or
convolution layer whose own ``activation`` is ``hard_sigmoid``. tf_keras keeps the Keras 2 definition: with
``target="tf_keras"`` nothing is scaled.
"""

import numpy as np

from mgpu_io.format.config import RECURRENT_GATES, walk_layers
from mgpu_io.format.conversions.base import KERAS3, Family, Rule

HARD_SIGMOID_SCALE = 1.2  # (1/6) * 1.2 == 0.2
#: mgpu-io's registered copy of Keras 2's hard_sigmoid (mgpu_io/keras/known.py), for activations no weight scaling
#: can make exact (an Activation layer, an RNN's `activation`).
KERAS2_HARD_SIGMOID = "mgpu_io>hard_sigmoid"

_RECURRENT_ACTIVATION_GATES = {"LSTM": (0, 1, 3), "GRU": (0, 1), "ConvLSTM2D": (0, 1, 3)}
_LINEAR_PREACTIVATION = ("Dense", "Conv1D", "Conv2D", "Conv3D", "SeparableConv1D", "SeparableConv2D", "Conv2DTranspose")


def _weight_steps(layer, shapes, context):
    if context.target != KERAS3 or context.keras2_functions:  # functions, not rescaled weights (see Context)
        return []
    cls, config = layer["class_name"], layer.get("config", {})
    if cls in _RECURRENT_ACTIVATION_GATES and config.get("recurrent_activation") == "hard_sigmoid":
        return [("hard-sigmoid-gates-rescaled", rescale_gates(RECURRENT_GATES[cls], _RECURRENT_ACTIVATION_GATES[cls]))]
    if cls in _LINEAR_PREACTIVATION and config.get("activation") == "hard_sigmoid":
        # A separable convolution's pre-activation is linear in its pointwise kernel and bias, not in both kernels.
        first = 1 if cls.startswith("Separable") else 0
        return [
            (
                "hard-sigmoid-rescaled",
                lambda names, arrays: (names, arrays[:first] + [a * HARD_SIGMOID_SCALE for a in arrays[first:]]),
            )
        ]
    return []


def rescale_gates(count, gates):
    """The step that scales the columns of ``gates`` (of ``count``) in every array by 1.2.

    Example:
        >>> rescale_gates(4, (0, 1, 3))(["b"], [np.ones(4)])[1][0]
        array([1.2, 1.2, 1. , 1.2])
    """

    def rescale(names, arrays):
        scaled = []
        for array in arrays:
            array = np.array(array)
            size = array.shape[-1] // count
            for gate in gates:
                array[..., gate * size : (gate + 1) * size] *= HARD_SIGMOID_SCALE
            scaled.append(array)
        return names, scaled

    return rescale


def _by_function(layer, every=False):
    """The activation keys of ``layer`` that hold Keras 2's hard_sigmoid and no weight scaling makes exact (with
    ``every``: all that hold it, for a model built to train on, whose weights are never rescaled)."""
    cls, config = layer.get("class_name"), layer.get("config")
    if not isinstance(config, dict):
        return []
    keys = []
    for key in ("activation", "recurrent_activation"):
        if config.get(key) != "hard_sigmoid":
            continue
        if not every and (
            (key == "activation" and cls in _LINEAR_PREACTIVATION)
            or (key == "recurrent_activation" and cls in _RECURRENT_ACTIVATION_GATES)
        ):
            continue  # made exact by scaling the weights
        keys.append(key)
    return keys


def inexact_in_keras3(layer):
    """What Keras 3 computes differently for ``layer`` unless mgpu-io's copy of Keras 2's function is used."""
    keys = _by_function(layer)
    if keys:
        return (
            f"{layer['class_name']} layer {layer['config'].get('name')!r} uses {keys[0]}='hard_sigmoid', which "
            f"Keras 3 computes with slope 1/6 instead of Keras 2's 0.2: it is written as {KERAS2_HARD_SIGMOID} "
            f"(Keras 2's definition), which mgpu_io.load_model supplies and plain Keras 3 finds after "
            f"`import mgpu_io.keras.known`"
        )
    return None


#: The registered function as Keras 3 serialises it: what a layer held by another layer (an RNN's cell, a
#: wrapper's layer) needs, since Keras 3 builds those with its new deserializer, which resolves no string name.
KERAS2_HARD_SIGMOID_OBJECT = {
    "module": "builtins",
    "class_name": "function",
    "config": KERAS2_HARD_SIGMOID,
    "registered_name": "function",
}


def _rewrite_config(config, context):
    if context.target != KERAS3:
        return []
    changes = []
    in_the_graph = {id(layer) for layer in walk_layers(config)}
    for layer in walk_layers(config, wrapped=True):
        for key in _by_function(layer, every=context.keras2_functions):
            layer["config"][key] = (
                KERAS2_HARD_SIGMOID if id(layer) in in_the_graph else dict(KERAS2_HARD_SIGMOID_OBJECT)
            )
            changes.append("hard-sigmoid-keras2-function")
    return changes


def _check(template, context):
    if context.target != KERAS3:
        return []
    return [
        (reason, [layer["config"].get("name")])
        for layer in walk_layers(template, wrapped=True)
        for reason in [inexact_in_keras3(layer)]
        if reason
    ]


FAMILY = Family(
    name="hard_sigmoid",
    summary="Keras 2's hard_sigmoid kept exact in Keras 3 (target keras3 only)",
    rules=(
        Rule(
            "hard-sigmoid-gates-rescaled",
            "LSTM/GRU/ConvLSTM2D gates that use Keras 2's `hard_sigmoid` (the "
            "default `recurrent_activation`) get their kernel, recurrent kernel and bias columns scaled by 1.2",
            "no error: Keras 3's `hard_sigmoid` has slope 1/6, so predictions silently differ (1.5e-2 measured)",
            ("keras224", "keras122"),
        ),
        Rule(
            "hard-sigmoid-rescaled",
            "Dense and convolution layers with `activation='hard_sigmoid'` get their kernel and bias scaled by 1.2",
            "no error: predictions silently differ in Keras 3",
            (),
        ),
        Rule(
            "hard-sigmoid-keras2-function",
            "any other `hard_sigmoid` activation (an `Activation` layer, an RNN's "
            "`activation`) refers to mgpu-io's registered copy of Keras 2's function, `mgpu_io>hard_sigmoid`",
            "no error: Keras 3's `hard_sigmoid` has slope 1/6, so predictions silently differ",
            (),
        ),
    ),
    rewrite_config=_rewrite_config,
    weight_steps=_weight_steps,
    check=_check,
    finding="hard-sigmoid",
    warn=True,
)
