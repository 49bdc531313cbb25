"""Keras 1 weights in the Keras 2 layout, as Keras 2's ``preprocess_weights_for_loading`` converted them.

An ``LSTM``/``ConvLSTM2D`` stored as 12 per-gate arrays and a ``GRU`` as 9 become Keras 2's three, gates in the order
``i, f, c, o`` (``z, r, h``); ``'th'`` kernels are transposed to Keras' one kernel layout; ``Convolution1D`` kernels
lose their dummy axis; ``Deconvolution2D`` kernels swap their channel axes; a PReLU gets the ``shared_axes`` its
alphas' shape says. The steps read the layer's *final* config (after ``keras1.py`` renamed it).
"""

import re

import numpy as np

from mgpu_io.format.conversions.base import Family, Rule

_KERAS1_GATE_ORDER = {  # positions of (kernels, recurrent kernels, biases) in Keras 1's per-gate weight list
    ("LSTM", 12): ([0, 6, 3, 9], [1, 7, 4, 10], [2, 8, 5, 11]),  # i, c, f, o -> i, f, c, o
    ("ConvLSTM2D", 12): ([0, 6, 3, 9], [1, 7, 4, 10], [2, 8, 5, 11]),
    ("GRU", 9): ([0, 3, 6], [1, 4, 7], [2, 5, 8]),
}
_STANDARD_NAMES = ("kernel:0", "recurrent_kernel:0", "bias:0")
_TH_KERNEL = {4: (2, 3, 1, 0), 5: (2, 3, 4, 1, 0)}  # Keras 1 'th' (out, in, *spatial) -> (*spatial, in, out)


def merge_gates(cls, count, name, transpose=None):
    """The step that merges Keras 1's per-gate arrays of an LSTM or ConvLSTM2D (12) or GRU (9) into Keras 2's three.

    ``transpose`` (a ConvLSTM2D with ``dim_ordering='th'``) reorders the axes of each kernel first.

    Example:
        >>> arrays = [np.full((1, 1), i) for i in range(9)]
        >>> names, merged = merge_gates("GRU", 9, "g")(None, arrays)
        >>> names, [m.tolist() for m in merged]
        (['g/kernel:0', 'g/recurrent_kernel:0', 'g/bias:0'], [[[0, 3, 6]], [[1, 4, 7]], [[2, 5, 8]]])
    """
    kernels, recurrents, biases = _KERAS1_GATE_ORDER[(cls, count)]

    def merge(names, arrays):
        arrays = [np.transpose(a, transpose) if transpose and a.ndim == len(transpose) else a for a in arrays]
        merged = [np.concatenate([arrays[i] for i in part], axis=-1) for part in (kernels, recurrents, biases)]
        stored = re.fullmatch(r"(.+)_W_[a-z](:\d+)?", str(names[kernels[0]])) if names else None
        prefix = stored.group(1) if stored else name  # a Bidirectional's two copies: forward_..., backward_...
        return [f"{prefix}/{leaf}" for leaf in _STANDARD_NAMES], merged

    return merge


def transpose_kernels(axes, count=1):
    """The step that reorders the axes of the first ``count`` arrays (kernels), leaving the rest (bias) as stored.

    Example:
        >>> names, (kernel, bias) = transpose_kernels((2, 3, 1, 0))(["w", "b"], [np.zeros((4, 2, 3, 3)), np.zeros(4)])
        >>> kernel.shape, bias.shape
        ((3, 3, 2, 4), (4,))
    """

    def transpose(names, arrays):
        return names, [np.transpose(a, axes) if i < count else a for i, a in enumerate(arrays)]

    return transpose


def conv1d_kernel(kernel_size, filters):
    """The step that gives a Keras 1 ``Convolution1D`` kernel Keras 2's shape ``(length, input_dim, filters)``.

    Keras 1.2 stored ``(length, 1, input_dim, filters)`` (a 2-D convolution over a dummy axis), Keras 1.1
    ``(filters, input_dim, length, 1)``; Keras 2's loader told them apart the same way.

    Example:
        >>> names, (kernel, bias) = conv1d_kernel(3, 4)(["w", "b"], [np.zeros((3, 1, 2, 4)), np.zeros(4)])
        >>> kernel.shape
        (3, 2, 4)
    """

    def squeeze(names, arrays):
        kernel = arrays[0]
        if not (kernel.shape[:2] == (kernel_size, 1) and kernel.shape[3] == filters):
            kernel = np.transpose(kernel, (2, 3, 1, 0))  # Keras 1.1: (filters, input_dim, length, 1)
        return names, [kernel[:, 0, :, :], *list(arrays[1:])]

    return squeeze


def _first(value):
    return value[0] if isinstance(value, (list, tuple)) else value


def _weight_steps(layer, shapes, context):
    if not context.keras1:
        return []
    cls, config = layer["class_name"], layer.get("config") or {}
    channels_first = config.get("data_format") == "channels_first"
    key = (cls, len(shapes))
    if key in _KERAS1_GATE_ORDER:
        transpose = _TH_KERNEL[4] if cls == "ConvLSTM2D" and channels_first else None
        return [("keras1-gates-merged", merge_gates(*key, config.get("name"), transpose))]
    if not shapes:
        return []
    rank = len(shapes[0])
    if cls == "Conv1D" and rank == 4:
        return [("keras1-kernels-transposed", conv1d_kernel(_first(config.get("kernel_size")), config.get("filters")))]
    if cls in ("Conv2D", "Conv3D") and channels_first and rank in _TH_KERNEL:
        return [("keras1-kernels-transposed", transpose_kernels(_TH_KERNEL[rank]))]
    if cls == "SeparableConv2D" and channels_first and rank == 4:
        return [("keras1-kernels-transposed", transpose_kernels(_TH_KERNEL[4], count=2))]
    if cls == "Conv2DTranspose" and rank == 4:  # Keras 1 kept (rows, cols, input, filters); TF wants them swapped
        return [("keras1-kernels-transposed", transpose_kernels((2, 3, 0, 1) if channels_first else (0, 1, 3, 2)))]
    if cls == "PReLU" and "shared_axes" not in config and 1 in shapes[0]:
        # Keras 1.2.2 saved no shared_axes (Keras 1.2.2 itself cannot reload such a file); the alphas' shape says
        # which axes were shared: the size-1 ones. An axis of size 1 in the input computes the same either way.
        config["shared_axes"] = [axis + 1 for axis, size in enumerate(shapes[0]) if size == 1]
        return [("keras1-prelu-shared-axes", lambda names, arrays: (names, arrays))]
    return []


FAMILY = Family(
    name="keras1_weights",
    summary="Keras 1 weights in the Keras 2 layout",
    rules=(
        Rule(
            "keras1-gates-merged",
            "Keras 1 LSTM/ConvLSTM2D/GRU weights as 12/12/9 per-gate arrays (`W_i, U_i, "
            "b_i, W_c, ...`) become one kernel, recurrent kernel and bias, gates in order `i, f, c, o` "
            "(`z, r, h`); Keras 1 GRUs get `reset_after=False`",
            "Keras 2 and 3 hold three arrays: a weight-count mismatch",
            ("keras122",),
        ),
        Rule(
            "keras1-kernels-transposed",
            "Keras 1 kernels in Keras 2's layout: `'th'` convolution kernels "
            "`(filters, input, *spatial)` -> `(*spatial, input, filters)`, `Convolution1D` kernels lose their "
            "dummy axis, `Deconvolution2D` kernels swap their channel axes; `output_shape` becomes "
            "`output_padding`",
            "a shape mismatch, or a kernel read in the wrong layout",
            (),
        ),
        Rule(
            "keras1-prelu-shared-axes",
            "a Keras 1 PReLU whose alphas have size-1 axes gets them as `shared_axes` (Keras 1.2.2 did not save them)",
            "a weight shape mismatch",
            (),
        ),
    ),
    weight_steps=_weight_steps,
)
