"""CuDNN layers: ``CuDNNLSTM``/``CuDNNGRU`` become the standard layers that compute the same, on any device.

Keras 2's CuDNN layers ran only on NVIDIA GPUs, and neither Keras 3 nor tf_keras has the classes. The standard
``LSTM(recurrent_activation="sigmoid")`` and ``GRU(recurrent_activation="sigmoid", reset_after=True)`` compute the
same with converted weights, which are recognised by their bias (``8 * units`` and ``6 * units``) and converted
exactly as Keras 2's ``_convert_rnn_weights``: input kernels transposed per gate between C and Fortran order,
recurrent kernels transposed per gate, LSTM biases summed, GRU biases reshaped to ``(2, 3 * units)``.
This family also runs for ``keep_config`` with ``cpu`` (the old Keras, on a CPU).
"""

import numpy as np

from mgpu_io.format.config import RECURRENT_GATES, layer_name, walk_layers
from mgpu_io.format.conversions.base import Family, Rule

CUDNN_CLASSES = {
    "CuDNNLSTM": ("LSTM", {"activation": "tanh", "recurrent_activation": "sigmoid", "use_bias": True}),
    "CuDNNGRU": (
        "GRU",
        {"activation": "tanh", "recurrent_activation": "sigmoid", "use_bias": True, "reset_after": True},
    ),
}


def cudnn_layers(config):
    """Names of the CuDNN layers anywhere in ``config`` (inside ``Bidirectional`` and nested models too)."""
    return [layer_name(layer) for layer in walk_layers(config, wrapped=True) if layer["class_name"] in CUDNN_CLASSES]


def cudnn_layout(shapes):
    """Whether three stored weight shapes are a CuDNN LSTM's or GRU's (a bias twice the standard size), by shape
    alone: what a weights-only file without its config shows.

    A ``Bidirectional`` layer stores two such triples.

    Example:
        >>> cudnn_layout([(3, 8), (2, 8), (16,)]), cudnn_layout([(3, 8), (2, 8), (8,)])
        (True, False)
        >>> cudnn_layout([(3, 8), (2, 8), (16,)] * 2)
        True
    """
    if len(shapes) == 6:
        return cudnn_layout(shapes[:3]) and cudnn_layout(shapes[3:])
    if len(shapes) != 3 or len(shapes[1]) != 2 or len(shapes[2]) != 1:
        return False
    units, width = shapes[1]
    return width in (4 * units, 3 * units) and tuple(shapes[0])[-1:] == (width,) and shapes[2][0] == 2 * width


def _rewrite_config(config, context):
    changed = False
    for layer in walk_layers(config, wrapped=True):
        if layer["class_name"] in CUDNN_CLASSES:
            layer["class_name"], settings = CUDNN_CLASSES[layer["class_name"]]
            layer["config"].update(settings)
            changed = True
    return ["cudnn-to-standard-rnn"] if changed else []


def _weight_steps(layer, shapes, context):
    cls = layer["class_name"]
    if cls in ("LSTM", "GRU") and len(shapes) == 3 and len(shapes[1]) == 2:
        units = shapes[1][0]
        if tuple(shapes[2]) == (2 * units * RECURRENT_GATES[cls],):
            return [("cudnn-weights", from_cudnn(cls))]
    return []


def from_cudnn(cls):
    """The step that converts CuDNN weights for the standard ``cls`` (``"LSTM"`` or ``"GRU"``).

    Example:
        >>> names, arrays = from_cudnn("LSTM")(["k", "r", "b"], [np.ones((3, 8)), np.ones((2, 8)), np.ones(16)])
        >>> [a.shape for a in arrays], arrays[2][:2]
        ([(3, 8), (2, 8), (8,)], array([2., 2.]))
    """
    gates = RECURRENT_GATES[cls]

    def per_gate(kernel, function):
        return np.hstack([function(k) for k in np.hsplit(kernel, gates)])

    def convert(names, arrays):
        kernel, recurrent, bias = arrays
        kernel = per_gate(kernel, lambda k: k.T.reshape(k.shape, order="F"))
        recurrent = per_gate(recurrent, lambda k: k.T)
        bias = np.sum(np.split(bias, 2), axis=0) if cls == "LSTM" else bias.reshape((2, -1))
        return names, [kernel, recurrent, bias]

    return convert


def _check(template, context):
    names = cudnn_layers(template)
    if not names:
        return []
    return [("CuDNN layers run only on NVIDIA GPUs, and Keras 3 has no such classes.", names)]


FAMILY = Family(
    name="cudnn",
    summary="CuDNNLSTM/CuDNNGRU as the standard layers, weights converted as Keras 2 did",
    rules=(
        Rule(
            "cudnn-to-standard-rnn",
            "`CuDNNLSTM`/`CuDNNGRU` configs become `LSTM`/`GRU(reset_after=True)` "
            'with `recurrent_activation="sigmoid"`',
            "Keras 3 and tf_keras: \"Unknown layer: 'CuDNNLSTM'\"; Keras 2 on a CPU: no kernel for the cuDNN op",
            ("keras224",),
        ),
        Rule(
            "cudnn-weights",
            "CuDNN kernels transposed per gate, LSTM biases summed, GRU biases reshaped",
            "the CuDNN layout does not fit the standard layers' weights (bias of 8 x units)",
            ("keras224",),
        ),
    ),
    rewrite_config=_rewrite_config,
    weight_steps=_weight_steps,
    check=_check,
    finding="cudnn-layers",
    cpu=True,
)
