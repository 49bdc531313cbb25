"""Weight conversions that keep a normalised template's predictions exact in Keras 3.

Keras 2 defined ``hard_sigmoid(x) = clip(0.2 * x + 0.5, 0, 1)``; Keras 3 defines it as ``clip(x / 6 + 0.5, 0, 1)``.
Keras 2 LSTM and GRU layers use it as their default ``recurrent_activation``, so a Keras 2 recurrent model loads in
Keras 3 and silently predicts differently. Because ``hard_sigmoid_3(1.2 * z) == hard_sigmoid_2(z)`` and a gate's
pre-activation ``z`` is linear in its kernel, recurrent kernel and bias, scaling those gate columns by 1.2 makes
Keras 3 compute exactly what Keras 2 did. tf_keras keeps the Keras 2 definition, so a file converted this way is for
Keras 3; ``--keep-config`` writes the unconverted file for tf_keras and the old Keras.
"""

import numpy as np

HARD_SIGMOID_SCALE = 1.2  # (1/6) * 1.2 == 0.2

# Gate order on the last weight axis, and which gates use `recurrent_activation`.
_RECURRENT_GATES = {"LSTM": (4, (0, 1, 3)), "GRU": (3, (0, 1)), "ConvLSTM2D": (4, (0, 1, 3))}
_LINEAR_PREACTIVATION = ("Dense", "Conv1D", "Conv2D", "Conv3D", "SeparableConv2D", "Conv2DTranspose")


def keras3_weight_transform(layer):
    """Return ``(description, function)`` converting one layer's weights for Keras 3, or ``None`` if none is needed.

    ``function`` takes and returns the layer's weights as a list of numpy arrays, in ``layer.weights`` order.

    Example:
        >>> lstm = {"class_name": "LSTM", "config": {"name": "l", "units": 1, "recurrent_activation": "hard_sigmoid"}}
        >>> note, convert = keras3_weight_transform(lstm)
        >>> convert([np.ones((2, 4)), np.ones((1, 4)), np.ones(4)])[2]
        array([1.2, 1.2, 1. , 1.2])
    """
    cls = layer["class_name"]
    config = layer.get("config", {})
    if cls == "Bidirectional":
        inner = keras3_weight_transform(config["layer"])
        if inner is None:
            return None
        note, convert = inner
        return note, lambda weights: convert(weights[: len(weights) // 2]) + convert(weights[len(weights) // 2:])
    if cls in _RECURRENT_GATES and config.get("recurrent_activation") == "hard_sigmoid":
        count, gates = _RECURRENT_GATES[cls]
        return "hard-sigmoid-gates-rescaled", lambda weights: [_scale_gates(w, count, gates) for w in weights]
    if cls in _LINEAR_PREACTIVATION and config.get("activation") == "hard_sigmoid":
        return "hard-sigmoid-rescaled", lambda weights: [np.asarray(w) * HARD_SIGMOID_SCALE for w in weights]
    return None


def _scale_gates(weight, count, gates):
    weight = np.array(weight)
    size = weight.shape[-1] // count
    for gate in gates:
        weight[..., gate * size:(gate + 1) * size] *= HARD_SIGMOID_SCALE
    return weight


def inexact_in_keras3(layer):
    """Why a layer cannot be made exact in Keras 3 by a weight conversion, or ``None``."""
    config = layer.get("config", {})
    if layer["class_name"] == "Bidirectional":
        return inexact_in_keras3(config["layer"])
    if config.get("activation") == "hard_sigmoid" and layer["class_name"] not in _LINEAR_PREACTIVATION:
        return (
            f"{layer['class_name']} layer {config.get('name')!r} uses activation='hard_sigmoid', which Keras 3 "
            f"computes with slope 1/6 instead of Keras 2's 0.2; its predictions will differ in Keras 3"
        )
    return None
