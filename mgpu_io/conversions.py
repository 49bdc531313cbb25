"""Weight conversions that keep a repaired template's predictions exact in today's Keras.

Keras 2 converted old weights while loading them (``preprocess_weights_for_loading``); Keras 3 converts nothing
(legacy-format.md §4). This module does what Keras 2 did, decided per layer from the layer's final config and the
stored shapes, so only the layers that need it are read into memory:

1. **Keras 1 recurrent gates.** A Keras 1 ``LSTM`` stored 12 arrays (``W_i, U_i, b_i, W_c, U_c, b_c, W_f, ...``) and a
   ``GRU`` 9; Keras 2 concatenates them per kind in the gate order ``i, f, c, o`` (``z, r, h`` for GRU).
2. **CuDNN layers.** ``CuDNNLSTM``/``CuDNNGRU`` weights are recognised by their bias (``8 * units`` and
   ``6 * units``) and converted for ``LSTM``/``GRU(reset_after=True)`` exactly as Keras 2's ``_convert_rnn_weights``:
   input kernels transposed per gate between C and Fortran order, recurrent kernels transposed per gate, LSTM biases
   summed, GRU biases reshaped to ``(2, 3 * units)``.
3. **hard_sigmoid.** Keras 2 defined ``hard_sigmoid(x) = clip(0.2 x + 0.5, 0, 1)``, Keras 3 ``clip(x / 6 + 0.5, 0, 1)``.
   Keras 2 LSTM and GRU layers use it as their default ``recurrent_activation``, so such a model loads in Keras 3 and
   silently predicts differently. Since ``hard_sigmoid_3(1.2 z) == hard_sigmoid_2(z)`` and a gate's pre-activation is
   linear in its kernel, recurrent kernel and bias, scaling those gate columns by 1.2 is exact. tf_keras keeps the
   Keras 2 definition: ``unwrap --target tf_keras`` leaves these weights as they are.
"""

from dataclasses import dataclass, field
from typing import Callable, List

import numpy as np

HARD_SIGMOID_SCALE = 1.2  # (1/6) * 1.2 == 0.2

_GATES = {"LSTM": 4, "GRU": 3, "ConvLSTM2D": 4}
_RECURRENT_ACTIVATION_GATES = {"LSTM": (0, 1, 3), "GRU": (0, 1), "ConvLSTM2D": (0, 1, 3)}
_LINEAR_PREACTIVATION = ("Dense", "Conv1D", "Conv2D", "Conv3D", "SeparableConv2D", "Conv2DTranspose")
_KERAS1_GATE_ORDER = {  # positions of (kernels, recurrent kernels, biases) in Keras 1's per-gate weight list
    ("LSTM", 12): ([0, 6, 3, 9], [1, 7, 4, 10], [2, 8, 5, 11]),  # i, c, f, o -> i, f, c, o
    ("GRU", 9): ([0, 3, 6], [1, 4, 7], [2, 5, 8]),
}
_STANDARD_NAMES = ("kernel:0", "recurrent_kernel:0", "bias:0")


@dataclass
class Conversion:
    """What a layer's weights go through: ``notes`` name the steps, ``apply`` maps (names, arrays) to new ones."""

    notes: List[str] = field(default_factory=list)
    steps: List[Callable] = field(default_factory=list)

    def apply(self, names, arrays):
        for step in self.steps:
            names, arrays = step(names, [np.asarray(a) for a in arrays])
        return names, arrays

    def __bool__(self):
        return bool(self.steps)


def weight_conversion(layer, shapes, keras1=False, for_keras3=True):
    """Plan the conversion of one layer's stored weights; an empty :class:`Conversion` when none applies.

    Args:
        layer: the layer's final config (after config conversion, e.g. ``CuDNNLSTM`` already ``LSTM``).
        shapes: the stored weights' shapes, in order.
        keras1: the weights were written by Keras 1.
        for_keras3: also make Keras 2 ``hard_sigmoid`` exact in Keras 3.

    Example:
        >>> lstm = {"class_name": "LSTM", "config": {"name": "l", "units": 1, "recurrent_activation": "hard_sigmoid"}}
        >>> conversion = weight_conversion(lstm, [(2, 4), (1, 4), (4,)])
        >>> conversion.notes, conversion.apply(["k", "r", "b"], [np.ones((2, 4)), np.ones((1, 4)), np.ones(4)])[1][2]
        (['hard-sigmoid-gates-rescaled'], array([1.2, 1.2, 1. , 1.2]))
    """
    cls, config = layer["class_name"], layer.get("config", {})
    if cls == "Bidirectional":
        half = len(shapes) // 2
        forward = weight_conversion(config["layer"], shapes[:half], keras1, for_keras3)
        backward = weight_conversion(config["layer"], shapes[half:], keras1, for_keras3)
        if not (forward or backward):
            return Conversion()

        def both(names, arrays):
            cut = len(arrays) // 2
            f_names, f_arrays = forward.apply(names[:cut], arrays[:cut])
            b_names, b_arrays = backward.apply(names[cut:], arrays[cut:])
            return f_names + b_names, f_arrays + b_arrays

        return Conversion(forward.notes or backward.notes, [both])
    conversion = Conversion()
    if keras1 and (cls, len(shapes)) in _KERAS1_GATE_ORDER:
        conversion.notes.append("keras1-gates-merged")
        conversion.steps.append(_merge_keras1_gates(cls, len(shapes), config.get("name")))
    if cls in ("LSTM", "GRU") and len(shapes) == 3 and len(shapes[1]) == 2:
        units = shapes[1][0]
        if tuple(shapes[2]) == (2 * units * _GATES[cls],):
            conversion.notes.append("cudnn-weights")
            conversion.steps.append(_from_cudnn(cls))
    if for_keras3:
        if cls in _RECURRENT_ACTIVATION_GATES and config.get("recurrent_activation") == "hard_sigmoid":
            conversion.notes.append("hard-sigmoid-gates-rescaled")
            conversion.steps.append(_rescale_gates(_GATES[cls], _RECURRENT_ACTIVATION_GATES[cls]))
        if cls in _LINEAR_PREACTIVATION and config.get("activation") == "hard_sigmoid":
            conversion.notes.append("hard-sigmoid-rescaled")
            conversion.steps.append(lambda names, arrays: (names, [a * HARD_SIGMOID_SCALE for a in arrays]))
    return conversion


def _merge_keras1_gates(cls, count, layer_name):
    kernels, recurrents, biases = _KERAS1_GATE_ORDER[(cls, count)]

    def merge(names, arrays):
        merged = [np.concatenate([arrays[i] for i in part], axis=-1) for part in (kernels, recurrents, biases)]
        return [f"{layer_name}/{leaf}" for leaf in _STANDARD_NAMES], merged

    return merge


def _from_cudnn(cls):
    gates = _GATES[cls]

    def per_gate(kernel, function):
        return np.hstack([function(k) for k in np.hsplit(kernel, gates)])

    def convert(names, arrays):
        kernel, recurrent, bias = arrays
        kernel = per_gate(kernel, lambda k: k.T.reshape(k.shape, order="F"))
        recurrent = per_gate(recurrent, lambda k: k.T)
        bias = np.sum(np.split(bias, 2), axis=0) if cls == "LSTM" else bias.reshape((2, -1))
        return names, [kernel, recurrent, bias]

    return convert


def _rescale_gates(count, gates):
    def rescale(names, arrays):
        scaled = []
        for array in arrays:
            array = np.array(array)
            size = array.shape[-1] // count
            for gate in gates:
                array[..., gate * size:(gate + 1) * size] *= HARD_SIGMOID_SCALE
            scaled.append(array)
        return names, scaled

    return rescale


def inexact_in_keras3(layer):
    """Why a layer cannot be made exact in Keras 3 by converting weights, or ``None``."""
    config = layer.get("config", {})
    if layer["class_name"] == "Bidirectional":
        return inexact_in_keras3(config["layer"])
    if config.get("activation") == "hard_sigmoid" and layer["class_name"] not in _LINEAR_PREACTIVATION:
        return (
            f"{layer['class_name']} layer {config.get('name')!r} uses activation='hard_sigmoid', which Keras 3 "
            f"computes with slope 1/6 instead of Keras 2's 0.2; its predictions will differ in Keras 3"
        )
    return None
