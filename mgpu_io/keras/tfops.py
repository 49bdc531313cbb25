"""``mgpu_io>TFOp``: a TensorFlow op of a tf.keras ``TensorFlowOpLayer`` or ``TFOpLambda``, computed with
``keras.ops`` (every backend).

``format/conversions/tfops.py`` rewrites both classes as this one: the op's name (one of its table ``OPS``), the
attributes it reads, its constant inputs by position and the number of its inputs. Nothing stored is run: each op
below is written from TensorFlow's own op definition and kernel, for the attributes the table names.
"""

from typing import TYPE_CHECKING

import numpy as np

from mgpu_io.keras._compat import import_keras

keras = import_keras()
if TYPE_CHECKING:
    from keras.layers import Layer
    from keras.layers import Wrapper as KerasWrapper
    from keras.metrics import Metric
else:
    Layer, KerasWrapper, Metric = keras.layers.Layer, keras.layers.Wrapper, keras.metrics.Metric
ops = keras.ops


def _binary(function):
    return lambda args, attrs: function(args[0], args[1])


def _reduce(function):
    def reduce(args, attrs):
        axis = args[1]
        if axis is None or (isinstance(axis, np.ndarray) and axis.dtype == object):  # axis=None: every axis
            return function(args[0], axis=None, keepdims=bool(attrs.get("keep_dims", False)))
        axes = [int(axis)] if np.ndim(axis) == 0 else [int(a) for a in np.ravel(axis)]
        if not axes:
            return args[0]
        return function(args[0], axis=tuple(axes), keepdims=bool(attrs.get("keep_dims", False)))

    return reduce


def _last_two_swapped(x):
    rank = len(x.shape)
    return ops.transpose(x, (*range(rank - 2), rank - 1, rank - 2))


def _matmul(first, second):
    def matmul(args, attrs):
        a = _last_two_swapped(args[0]) if attrs.get(first) else args[0]
        b = _last_two_swapped(args[1]) if attrs.get(second) else args[1]
        return ops.matmul(a, b)

    return matmul


def _index(x, spec):
    """``x[spec]`` (Python's basic indexing: slices, integers, ``None``, ``...``) as ``keras.ops`` calls: an axis
    of known size is gathered by ``take``; only an axis of unknown size (the batch) falls back to the tensor's own
    indexing, which every backend has for steps of 1."""
    consumed = sum(1 for item in spec if item is not None and item is not Ellipsis)
    expanded = []
    for item in spec:
        if item is Ellipsis:
            expanded += [slice(None)] * (len(x.shape) - consumed)
        else:
            expanded.append(item)
    axis = 0
    for item in expanded:
        if item is None:
            x = ops.expand_dims(x, axis)
            axis += 1
            continue
        size = x.shape[axis]
        if isinstance(item, slice) and item.start is None and item.stop is None and item.step in (None, 1):
            axis += 1
            continue
        if not isinstance(size, int):  # the batch axis: unknown, or symbolic while Keras traces the model
            x = x[(slice(None),) * axis + (item,)]
        elif isinstance(item, slice):
            x = ops.take(x, np.arange(size)[item].astype("int32"), axis=axis)
        else:
            x = ops.take(x, np.int32(item % size), axis=axis)
            continue
        if isinstance(item, slice):
            axis += 1
    return x


def _take_index(x, index, axis):
    """``x[..., index, ...]`` on ``axis`` for an integer tensor ``index`` (TensorFlow: a negative index counts
    from the end)."""
    size = x.shape[axis]
    index = ops.cast(index, "int32")
    if isinstance(size, int):
        index = ops.where(index < 0, index + size, index)
    return ops.take(x, index, axis=axis)


def _get_item(args, attrs):
    """``x[spec]`` as tf.keras' ``SlicingOpLambda`` stored it: slices, ``"..."``, ``None``, integers and
    ``{"input": k}`` (the k-th index tensor, an input of the layer)."""
    x, spec, tensors = args[0], [], []
    for item in attrs["spec"]:
        if item == "...":
            spec.append(Ellipsis)
        elif isinstance(item, dict) and "input" in item:
            tensors.append(len(spec))
            spec.append(args[int(item["input"])])
        elif isinstance(item, dict):
            spec.append(slice(item.get("start"), item.get("stop"), item.get("step")))
        else:
            spec.append(item)
    if not tensors:
        return _index(x, spec)
    consumed = sum(1 for item in spec if item is not None and item is not Ellipsis)
    expanded = []
    for item in spec:
        expanded += [slice(None)] * (len(x.shape) - consumed) if item is Ellipsis else [item]
    # the static items first (tensor indices held as full slices), then each tensor index on its own axis
    static = [slice(None) if i in _positions(spec, expanded, tensors) else item for i, item in enumerate(expanded)]
    x = _index(x, static)
    axes = _axes_after(static)
    for position in sorted(_positions(spec, expanded, tensors), reverse=True):
        x = _take_index(x, expanded[position], axes[position])
    return x


def _positions(spec, expanded, tensors):
    """The places in ``expanded`` (``spec`` with its ellipsis spelt out) of the items at ``tensors`` in ``spec``."""
    places, offset = [], 0
    for i, item in enumerate(spec):
        if item is Ellipsis:
            offset += len(expanded) - len(spec)
        elif i in tensors:
            places.append(i + offset)
    return places


def _axes_after(items):
    """The axis of the result that each item's axis becomes after ``x[items]`` (integers drop theirs)."""
    axes, axis = [], 0
    for item in items:
        axes.append(axis)
        if item is None or isinstance(item, slice):
            axis += 1
    return axes


def _l2_normalize(args, attrs):
    x, axis, epsilon = args[0], args[1], float(np.ravel(args[2])[0])
    axes = tuple(int(a) for a in np.ravel(axis))
    square_sum = ops.sum(ops.square(x), axis=axes, keepdims=True)
    return x * ops.rsqrt(ops.maximum(square_sum, np.asarray(epsilon, dtype=keras.backend.standardize_dtype(x.dtype))))


def _gather(args, attrs):
    if int(attrs.get("batch_dims") or 0) != 0:
        raise ValueError("TFOp computes GatherV2 with batch_dims=0 only.")
    params, indices, axis = args[0], args[1], int(np.ravel(args[2])[0])
    if isinstance(indices, np.ndarray):
        size = params.shape[axis]
        indices = np.where(indices < 0, indices + size, indices).astype("int32") if isinstance(size, int) else indices
        return ops.take(params, indices, axis=axis)
    return _take_index(params, indices, axis)


def _binary_crossentropy(args, attrs):
    """tf.keras' backend ``binary_crossentropy``. Called in a model on a sigmoid layer's output, TensorFlow took the
    logits under it (``sigmoid_cross_entropy_with_logits``); the same value from the probabilities is
    ``-(t log p + (1 - t) log(1 - p))``, computed here with ``p`` clipped to [1e-7, 1 - 1e-7] as its other branch
    clips it."""
    target, output = args[0], args[1]
    target = ops.cast(target, keras.backend.standardize_dtype(output.dtype))
    if attrs.get("from_logits"):
        output = ops.sigmoid(output)
    epsilon = 1e-7
    p = ops.clip(output, epsilon, 1.0 - epsilon)
    return -(target * ops.log(p) + (1.0 - target) * ops.log(1.0 - p))


def _axis_attr(attrs):
    axis = attrs.get("axis")
    return -1 if axis is None else int(axis)


def _strided_slice(args, attrs):
    x = args[0]
    begin, end, strides = (np.ravel(a).astype(int).tolist() for a in args[1:4])
    spec = []
    for i in range(len(begin)):
        bit = 1 << i
        if attrs.get("ellipsis_mask", 0) & bit:
            spec.append(Ellipsis)
        elif attrs.get("new_axis_mask", 0) & bit:
            spec.append(None)
        elif attrs.get("shrink_axis_mask", 0) & bit:
            spec.append(begin[i])
        else:
            start = None if attrs.get("begin_mask", 0) & bit else begin[i]
            stop = None if attrs.get("end_mask", 0) & bit else end[i]
            spec.append(slice(start, stop, strides[i]))
    return _index(x, spec)


def _slice(args, attrs):
    begin, size = (np.ravel(a).astype(int).tolist() for a in args[1:3])
    return _index(args[0], [slice(b, None if s == -1 else b + s) for b, s in zip(begin, size)])


def _pad(args, attrs, mode="constant"):
    paddings = [tuple(int(v) for v in pair) for pair in np.asarray(args[1]).reshape(-1, 2)]
    if mode != "constant":
        return ops.pad(args[0], paddings, mode=mode)
    value = float(np.ravel(args[2])[0]) if len(args) > 2 else 0
    return ops.pad(args[0], paddings, constant_values=value)


def _scale(in_size, out_size, align_corners):
    """TensorFlow's ``CalculateResizeScale`` (float32)."""
    if align_corners and out_size > 1:
        return np.float32(in_size - 1) / np.float32(out_size - 1)
    return np.float32(in_size) / np.float32(out_size)


def _bilinear_axis(in_size, out_size, attrs):
    """``compute_interpolation_weights`` of TensorFlow's ResizeBilinear kernel: lower, upper, lerp per output."""
    scale = _scale(in_size, out_size, attrs.get("align_corners", False))
    positions = np.arange(out_size, dtype=np.float32)
    if attrs.get("half_pixel_centers", False):
        source = (positions + np.float32(0.5)) * scale - np.float32(0.5)
    else:
        source = positions * scale
    floor = np.floor(source)
    lower = np.maximum(floor, 0).astype("int32")
    upper = np.minimum(np.ceil(source), in_size - 1).astype("int32")
    return lower, upper, (source - floor).astype(np.float32)


def _nearest_axis(in_size, out_size, attrs):
    """The source index of each output of TensorFlow's ResizeNearestNeighbor kernel."""
    align = attrs.get("align_corners", False)
    scale = _scale(in_size, out_size, align)
    positions = np.arange(out_size, dtype=np.float32)
    half = attrs.get("half_pixel_centers", False)
    source = (positions + np.float32(0.5)) * scale if half else positions * scale
    index = np.floor(source + np.float32(0.5)) if align else np.floor(source)  # roundf: halves away from zero
    index = np.minimum(index, in_size - 1)
    if half:
        index = np.maximum(index, 0)
    return index.astype("int32")


def _resize(bilinear):
    def resize(args, attrs):
        images, (out_h, out_w) = args[0], np.ravel(args[1]).astype(int).tolist()
        in_h, in_w = images.shape[1], images.shape[2]
        if not bilinear:
            rows = ops.take(images, _nearest_axis(in_h, out_h, attrs), axis=1)
            return ops.take(rows, _nearest_axis(in_w, out_w, attrs), axis=2)
        images = ops.cast(images, "float32")  # the kernel's output is float
        y_low, y_up, y_lerp = _bilinear_axis(in_h, out_h, attrs)
        x_low, x_up, x_lerp = _bilinear_axis(in_w, out_w, attrs)
        top_rows, bottom_rows = ops.take(images, y_low, axis=1), ops.take(images, y_up, axis=1)
        x_lerp = x_lerp.reshape(1, 1, -1, 1)
        top_left, top_right = ops.take(top_rows, x_low, axis=2), ops.take(top_rows, x_up, axis=2)
        bottom_left, bottom_right = ops.take(bottom_rows, x_low, axis=2), ops.take(bottom_rows, x_up, axis=2)
        top = top_left + (top_right - top_left) * x_lerp
        bottom = bottom_left + (bottom_right - bottom_left) * x_lerp
        return top + (bottom - top) * y_lerp.reshape(1, -1, 1, 1)

    return resize


def _split_v(args, attrs):
    value, sizes, axis = args[0], np.ravel(args[1]).astype(int).tolist(), int(np.ravel(args[2])[0])
    if -1 in sizes:
        sizes[sizes.index(-1)] = value.shape[axis] - (sum(sizes) + 1)
    return ops.split(value, np.cumsum(sizes)[:-1].tolist(), axis=axis)


def _squeeze(args, attrs):
    dims = attrs.get("squeeze_dims") or []
    return ops.squeeze(args[0], axis=tuple(int(d) for d in dims)) if dims else ops.squeeze(args[0])


def _bias_add(args, attrs):
    value, bias = args
    if attrs.get("data_format", "NHWC") in ("NCHW", "NCDHW") and len(value.shape) > 2:
        bias = ops.reshape(bias, (-1,) + (1,) * (len(value.shape) - 2))
    return value + bias


def _add_n(args, attrs):
    total = args[0]
    for arg in args[1:]:
        total = total + arg
    return total


#: The computation of every op of ``format/conversions/tfops.py``'s ``OPS``: ``(inputs, attrs) -> output(s)``, the
#: inputs in the op's order (stored constants in their places, as NumPy arrays).
COMPUTE = {
    "Identity": lambda args, attrs: args[0],
    "Reshape": lambda args, attrs: ops.reshape(args[0], tuple(np.ravel(args[1]).astype(int).tolist())),
    "Transpose": lambda args, attrs: ops.transpose(args[0], tuple(np.ravel(args[1]).astype(int).tolist())),
    "Add": _binary(ops.add),
    "AddV2": _binary(ops.add),
    "AddN": _add_n,
    "BiasAdd": _bias_add,
    "Sub": _binary(ops.subtract),
    "Mul": _binary(ops.multiply),
    "RealDiv": _binary(ops.true_divide),
    "Maximum": _binary(ops.maximum),
    "Minimum": _binary(ops.minimum),
    "SquaredDifference": _binary(lambda x, y: ops.square(ops.subtract(x, y))),
    "Pow": _binary(ops.power),
    "MatMul": _matmul("transpose_a", "transpose_b"),
    "BatchMatMul": _matmul("adj_x", "adj_y"),
    "BatchMatMulV2": _matmul("adj_x", "adj_y"),
    "ConcatV2": lambda args, attrs: ops.concatenate(list(args[:-1]), axis=int(np.ravel(args[-1])[0])),
    "Pack": lambda args, attrs: ops.stack(list(args), axis=int(attrs.get("axis", 0))),
    "Squeeze": _squeeze,
    "ExpandDims": lambda args, attrs: ops.expand_dims(args[0], int(np.ravel(args[1])[0])),
    "Mean": _reduce(ops.mean),
    "Sum": _reduce(ops.sum),
    "Max": _reduce(ops.max),
    "Min": _reduce(ops.min),
    "Prod": _reduce(ops.prod),
    "Relu": lambda args, attrs: ops.relu(args[0]),
    "Relu6": lambda args, attrs: ops.relu6(args[0]),
    "Sigmoid": lambda args, attrs: ops.sigmoid(args[0]),
    "Tanh": lambda args, attrs: ops.tanh(args[0]),
    "Softmax": lambda args, attrs: ops.softmax(args[0], axis=_axis_attr(attrs)),
    "LogSoftmax": lambda args, attrs: ops.log_softmax(args[0], axis=_axis_attr(attrs)),
    "Exp": lambda args, attrs: ops.exp(args[0]),
    "Log": lambda args, attrs: ops.log(args[0]),
    "Sqrt": lambda args, attrs: ops.sqrt(args[0]),
    "Rsqrt": lambda args, attrs: ops.rsqrt(args[0]),
    "Square": lambda args, attrs: ops.square(args[0]),
    "Abs": lambda args, attrs: ops.abs(args[0]),
    "Neg": lambda args, attrs: ops.negative(args[0]),
    "Cast": lambda args, attrs: ops.cast(args[0], attrs["DstT"]),
    "StridedSlice": _strided_slice,
    "Slice": _slice,
    "Pad": _pad,
    "PadV2": _pad,
    "MirrorPad": lambda args, attrs: _pad(args, attrs, mode=str(attrs.get("mode", "REFLECT")).lower()),
    "Tile": lambda args, attrs: ops.tile(args[0], tuple(np.ravel(args[1]).astype(int).tolist())),
    "ResizeBilinear": _resize(bilinear=True),
    "ResizeNearestNeighbor": _resize(bilinear=False),
    "Split": lambda args, attrs: ops.split(args[1], int(attrs["num_split"]), axis=int(np.ravel(args[0])[0])),
    "SplitV": _split_v,
    "Einsum": lambda args, attrs: ops.einsum(attrs["equation"], *args),
    "GatherV2": _gather,
    "LeakyRelu": lambda args, attrs: ops.leaky_relu(args[0], negative_slope=float(attrs.get("alpha", 0.2))),
    "ClipByValue": lambda args, attrs: ops.minimum(ops.maximum(args[0], args[1]), args[2]),
    "Softplus": lambda args, attrs: ops.softplus(args[0]),
    "Elu": lambda args, attrs: ops.elu(args[0]),
    "Selu": lambda args, attrs: ops.selu(args[0]),
    "Log1p": lambda args, attrs: ops.log1p(args[0]),
    "Reciprocal": lambda args, attrs: ops.reciprocal(args[0]),
    "Floor": lambda args, attrs: ops.floor(args[0]),
    "Sign": lambda args, attrs: ops.sign(args[0]),
    "ArgMax": lambda args, attrs: ops.cast(
        ops.argmax(args[0], axis=int(np.ravel(args[1])[0])), str(attrs.get("output_type") or "int64")
    ),
    "L2Normalize": _l2_normalize,
    "GetItem": _get_item,
    "BinaryCrossentropy": _binary_crossentropy,
}

#: Op inputs whose stored constant is data of the op's type ``T`` (the others are shapes, axes, indices).
_DATA_INPUTS = (
    "x",
    "y",
    "values",
    "inputs",
    "value",
    "bias",
    "a",
    "b",
    "constant_values",
    "input",
    "tensor",
    "t",
    "clip_value_min",
    "clip_value_max",
    "params",
    "features",
    "logits",
    "target",
    "output",
)


#: TensorFlow's modules whose functions a ``TFOpLambda`` may call by name: its op modules, and where constants and
#: conversions live.
_OP_MODULES = ("tensorflow.python.ops.",)
_ALSO = ("tensorflow.python.framework.constant_op", "tensorflow.python.framework.tensor_conversion")
#: Op modules whose functions reach outside the computation (files, printing, Python callbacks, variables, queues,
#: tables, summaries, datasets, collectives) or take code (control flow): never called by name.
_OUTSIDE_MODULES = frozenset(
    [
        "io_ops",
        "gen_io_ops",
        "logging_ops",
        "gen_logging_ops",
        "script_ops",
        "gen_script_ops",
        "state_ops",
        "gen_state_ops",
        "variables",
        "variable_v1",
        "ref_variable",
        "resource_variable_ops",
        "gen_resource_variable_ops",
        "variable_scope",
        "data_flow_ops",
        "gen_data_flow_ops",
        "lookup_ops",
        "gen_lookup_ops",
        "summary_ops_v2",
        "gen_summary_ops",
        "gen_dataset_ops",
        "gen_experimental_dataset_ops",
        "session_ops",
        "gen_user_ops",
        "batch_ops",
        "gen_batch_ops",
        "collective_ops",
        "gen_collective_ops",
        "gen_nccl_ops",
        "tensor_array_ops",
        "critical_section_ops",
        "gen_debug_ops",
        "template",
        "cond",
        "cond_v2",
        "while_loop",
        "while_v2",
        "map_fn",
        "functional_ops",
        "control_flow_ops",
        "control_flow_v2_func_graphs",
        "stateful_random_ops",
        "gen_stateful_random_ops",
        "custom_gradient",
        "gradients_impl",
        "gen_tpu_ops",
        "gen_sendrecv_ops",
        "gen_rpc_ops",
    ]
)


def tensorflow_function(name):
    """The TensorFlow function ``tf.<name>`` that a ``TFOpLambda`` names, if the policy lets mgpu-io call it: the
    name passes :func:`~mgpu_io.format.conversions.tfops.tensorflow_function_refusal`, resolves attribute by
    attribute from the ``tensorflow`` module to a function (not a class), defined in TensorFlow's op modules and in
    none that reaches outside the computation. Raises :class:`UnsupportedModel` naming the function otherwise.

    Example:
        >>> tensorflow_function("compat.v1.size").__name__
        'size'
    """
    import inspect

    from mgpu_io.errors import UnsupportedModel
    from mgpu_io.format.conversions.tfops import tensorflow_function_refusal

    reason = tensorflow_function_refusal(name)
    found = None
    if reason is None:
        import tensorflow as tf

        found = tf
        for part in name.split("."):
            found = getattr(found, part, None)
            if found is None:
                reason = f"this TensorFlow ({tf.__version__}) has no tf.{name}"
                break
    if reason is None:
        module = getattr(inspect.unwrap(found), "__module__", None) or ""
        if inspect.isclass(found) or not callable(found):
            reason = "it is not a function"
        elif not (module.startswith(_OP_MODULES) or module in _ALSO) or module.rsplit(".", 1)[-1] in _OUTSIDE_MODULES:
            reason = (
                f"it is defined in {module or 'no module'}, outside the op modules that compute on their inputs only"
            )
    if reason is not None:
        raise UnsupportedModel(
            problem=f"A TFOpLambda calls tf.{str(name)[:80]}, which mgpu-io does not call: {reason}",
            expected="a public TensorFlow function that computes on its inputs and nothing else",
            received=f"function={str(name)[:80]!r}",
            fix="Rebuild the template in code and load the weights with mgpu_io.transfer_weights",
        )
    return found


def _filled(template, inputs):
    """A stored call argument with each ``{"__input__": k}`` replaced by the layer's input ``k``."""
    if isinstance(template, dict) and set(template) == {"__input__"}:
        return inputs[template["__input__"]]
    if isinstance(template, list):
        return [_filled(item, inputs) for item in template]
    if isinstance(template, dict):
        return {key: _filled(item, inputs) for key, item in template.items()}
    return template


def _counterpart(function, call):
    """The ``keras.ops`` function of the same name as the TensorFlow function, for a backend other than TensorFlow,
    if it takes the stored call (its first argument, and its keyword arguments by name); else ``None``."""
    import inspect

    found = getattr(ops, function.rsplit(".", 1)[-1], None)
    if found is None or len(call.get("args", ())) != 1:
        return None
    try:
        parameters = inspect.signature(found).parameters
    except (TypeError, ValueError):
        return None
    return found if all(key in parameters for key in call.get("kwargs", {})) else None


@keras.saving.register_keras_serializable(package="mgpu_io", name="TFOp")
class TFOp(Layer):
    """A TensorFlow op or function as tf.keras' ``TensorFlowOpLayer``/``TFOpLambda`` ran it.

    On TensorFlow, a ``TFOpLambda``'s function (``function``, with its stored ``call``) is called by name, as tf_keras
    does, where the policy lets it (:func:`tensorflow_function`); otherwise the op (``op``) is computed with
    ``keras.ops`` on every backend, and a function outside mgpu-io's table by the ``keras.ops`` function of its name.

    Args:
        op: the TensorFlow op's name (a key of ``COMPUTE``), or ``None`` for a function outside the table.
        attrs: the op's attributes, as plain values (``{"keep_dims": True}``).
        constants: ``{input position: value}``: the op's inputs stored in the file.
        inputs: how many inputs the layer takes (the op's, constants included; or the call's tensors).
        function: the TensorFlow function's name (``"compat.v1.size"``), for a ``TFOpLambda``.
        call: its stored call: ``{"args": [first], "kwargs": {...}}``, each input ``{"__input__": k}``.

    Example:
        >>> import numpy as np
        >>> layer = TFOp("Mul", {"T": "float32"}, {"1": 2.0}, 2)
        >>> np.asarray(layer(np.array([[1.0, 3.0]], "float32"))).tolist()
        [[2.0, 6.0]]
    """

    def __init__(self, op=None, attrs=None, constants=None, inputs=1, function=None, call=None, **kwargs):
        super().__init__(**kwargs)
        if op is not None and op not in COMPUTE:
            raise ValueError(f"TFOp cannot compute the TensorFlow op {op!r}. Expected one of {sorted(COMPUTE)}.")
        self.op, self.attrs, self.inputs = op, dict(attrs or {}), int(inputs)
        self.constants = {int(key): value for key, value in (constants or {}).items()}
        self.function, self.call_template = function, call
        self._by_name = None
        if function is not None and isinstance(call, dict):
            self._by_name = self._resolve(function, call)
        elif op is None:
            raise ValueError("TFOp needs an op or a function. Received: op=None, function=None.")

    def _resolve(self, function, call):
        """The function to call by name: TensorFlow's own on TensorFlow, else the ``keras.ops`` counterpart of one
        outside the table; ``None`` where the op serves. Refuses what neither can compute."""
        from mgpu_io.errors import UnsupportedModel

        if keras.backend.backend() == "tensorflow":
            try:
                return tensorflow_function(function)
            except UnsupportedModel:
                if self.op is not None:  # the table computes it (a function of Keras' own namespace, say)
                    return None
                raise
        if self.op is not None:
            return None
        found = _counterpart(function, call)
        if found is None:
            raise UnsupportedModel(
                problem=f"A TFOpLambda calls tf.{function}, which Keras 3's {keras.backend.backend()} backend has "
                f"no function for",
                expected="a keras.ops function of the same name that takes the stored arguments",
                received=f"function={function!r}, arguments={sorted(call.get('kwargs', {}))}",
                fix="Load the model with Keras 3 on TensorFlow (KERAS_BACKEND=tensorflow), which calls the function "
                "by name",
            )
        return found

    def _constant(self, index, value, tensor):
        """A stored input: data of the op's type ``T`` (a TFOpLambda records none: TensorFlow converted a Python
        number to the type of the op's tensor), or a shape, axis or index as it is."""
        from mgpu_io.format.conversions.tfops import input_roles

        if input_roles(self.op, self.inputs)[index] not in _DATA_INPUTS:
            return np.asarray(value)
        dtype = self.attrs.get("T")
        if not isinstance(dtype, str):
            dtype = keras.backend.standardize_dtype(tensor.dtype) if tensor is not None else None
        return np.asarray(value, dtype=dtype)

    def call(self, inputs):
        args = list(inputs) if isinstance(inputs, (list, tuple)) else [inputs]
        if self._by_name is not None:
            template = self.call_template
            first, *rest = _filled(template["args"], args)
            if self.function.startswith("__operators__.") and args and not keras.ops.is_tensor(first):
                # Python's reflected operator (``1.0 + x``, recorded as __operators__.add(1.0, x)): the number is
                # converted to the tensor's type, as x.__radd__ does; TensorFlow's operator functions take tensors
                first = keras.ops.convert_to_tensor(first, dtype=args[0].dtype)
            return self._by_name(first, *rest, **_filled(template.get("kwargs", {}), args))
        tensor = args[0] if args else None
        for index in sorted(self.constants):
            args.insert(index, self._constant(index, self.constants[index], tensor))
        return COMPUTE[self.op](args, self.attrs)

    def get_config(self):
        config = dict(
            super().get_config(),
            op=self.op,
            attrs=self.attrs,
            constants={str(key): value for key, value in self.constants.items()},
            inputs=self.inputs,
        )
        if self.function is not None:
            config.update(function=self.function, call=self.call_template)
        return config


#: The AddLoss and AddMetric layers built while :func:`collecting` (the model under construction), in order.
_BUILT: list = []
_COLLECTING: list = []


class _Ancillary(Layer):
    """Noted while a model is built, so that :func:`attach_ancillary` runs it with the model's outputs."""

    def __init__(self, **kwargs):
        super().__init__(**kwargs)
        if _COLLECTING:
            _COLLECTING[-1].append(self)

    def compute_output_spec(self, inputs):
        return keras.KerasTensor(inputs.shape, dtype=inputs.dtype)


@keras.saving.register_keras_serializable(package="mgpu_io", name="AddLoss")
class AddLoss(_Ancillary):
    """tf.keras' ``AddLoss`` (``model.add_loss(tensor)`` in a functional model, TF 2.4+): adds its input, a scalar
    (or its mean), to the model's loss, and returns it.

    Args:
        unconditional: tf.keras' flag (a loss that does not depend on the inputs); kept as stored.

    Example:
        >>> import numpy as np
        >>> layer = AddLoss()
        >>> _ = layer(np.array(2.5, "float32"))
        >>> [float(loss) for loss in layer.losses]
        [2.5]
    """

    def __init__(self, unconditional=False, **kwargs):
        super().__init__(**kwargs)
        self.unconditional = bool(unconditional)

    def call(self, inputs):
        self.add_loss(inputs if len(inputs.shape) == 0 else ops.mean(inputs))
        return inputs

    def get_config(self):
        return dict(super().get_config(), unconditional=self.unconditional)


class _LayerMean(Metric):
    """The mean that an :class:`AddMetric` layer keeps in its own state (updated as the layer runs, so that every
    backend's trainer keeps it: JAX's returns a layer's non-trainable state, not a metric's updated in a call)."""

    def __init__(self, layer, name):
        super().__init__(name=name)
        object.__setattr__(self, "_layer", layer)

    def update_state(self, *args, **kwargs):
        return None

    def result(self):
        layer = self._layer
        try:
            total, count = ops.convert_to_tensor(layer.total), ops.convert_to_tensor(layer.count)
        except (TypeError, AttributeError, ValueError):
            # not built, or JAX's trainer holding the layer's state outside its variables during a loop: the
            # logs it returns are read again once the state is back (its per-batch progress bar shows 0)
            return ops.convert_to_tensor(0.0)
        return ops.divide_no_nan(total, count)

    def reset_state(self):
        if self._layer.total is not None:
            self._layer.total.assign(0.0)
            self._layer.count.assign(0.0)


@keras.saving.register_keras_serializable(package="mgpu_io", name="AddMetric")
class AddMetric(_Ancillary):
    """tf.keras' ``AddMetric`` (``model.add_metric(tensor, name=..., aggregation="mean")``, TF 2.4+): the mean of
    its input over the batches of ``fit`` and ``evaluate``, reported under ``metric_name``; returns its input.

    Args:
        aggregation: ``"mean"``, the one aggregation tf.keras 2.4+ takes.
        metric_name: the name the metric is reported by.

    Example:
        >>> import numpy as np
        >>> layer = AddMetric("mean", "custom")
        >>> _ = layer(np.array([1.0, 3.0], "float32"))
        >>> layer.metric.name, float(layer.metric.result())
        ('custom', 2.0)
    """

    def __init__(self, aggregation=None, metric_name=None, **kwargs):
        super().__init__(**kwargs)
        if aggregation not in (None, "mean"):
            raise ValueError(f"AddMetric computes aggregation='mean' only. Received: aggregation={aggregation!r}.")
        self.aggregation, self.metric_name = aggregation, metric_name
        self.total = self.count = None
        self.metric = _LayerMean(self, metric_name or self.name)

    def build(self, input_shape):
        self.total = self.add_weight(shape=(), initializer="zeros", trainable=False, name="total")
        self.count = self.add_weight(shape=(), initializer="zeros", trainable=False, name="count")
        #: the metric's state, which no file stores (mgpu-io's weight loading leaves it out)
        self.state_variables = (self.total, self.count)

    def call(self, inputs):
        values = ops.cast(inputs, "float32")
        self.total.assign_add(ops.sum(values))
        self.count.assign_add(ops.cast(ops.size(values), "float32"))
        return inputs

    def get_config(self):
        return dict(super().get_config(), aggregation=self.aggregation, metric_name=self.metric_name)


@keras.saving.register_keras_serializable(package="mgpu_io", name="Wrapper")
class Wrapper(KerasWrapper):
    """tf.keras' base ``Wrapper``, which returns its inputs (its ``call`` is tf.keras' ``Layer.call``).

    Example:
        >>> import numpy as np
        >>> wrapper = Wrapper(keras.layers.Identity())
        >>> np.asarray(wrapper(np.ones((1, 2), "float32"))).tolist()
        [[1.0, 1.0]]
    """

    def call(self, inputs):
        return inputs

    def compute_output_shape(self, input_shape):
        return input_shape


class collecting:
    """Note the AddLoss and AddMetric layers built inside the block (``with collecting() as built:``)."""

    def __enter__(self):
        _COLLECTING.append([])
        return _COLLECTING[-1]

    def __exit__(self, *exc):
        _COLLECTING.pop()


def attach_ancillary(model, layers):
    """Run tf.keras' AddLoss and AddMetric ``layers`` (outside the path from the model's inputs to its outputs, as
    tf.keras' ``connect_ancillary_layers`` kept them) whenever ``model`` runs: its losses then count in ``fit`` and
    ``evaluate``, and its metrics are reported, as the writer's were. The model's outputs are unchanged."""
    called = [layer for layer in layers if getattr(layer, "_inbound_nodes", None)]
    if not called:
        return model
    outputs = keras.tree.flatten(model.outputs)
    whole = keras.Model(model.inputs, [*outputs, *[layer.output for layer in called]], name=f"{model.name}_whole")
    base = type(model)

    class WithAncillary(base):
        def call(self, inputs, training=None, mask=None, **kwargs):
            results = self._mgpu_whole(inputs, training=training, mask=mask)
            packed = keras.tree.pack_sequence_as(self._outputs_struct, list(results)[: len(outputs)])
            return packed[0] if isinstance(packed, (list, tuple)) and len(packed) == 1 else packed  # as Functional

    WithAncillary.__name__ = WithAncillary.__qualname__ = base.__name__
    WithAncillary.__module__ = base.__module__
    model.__class__ = WithAncillary
    object.__setattr__(model, "_mgpu_whole", whole)
    model._layers.append(whole)  # a sublayer: its weights train, its losses and metrics count, as the model's own
    return model


def ancillary_layers(model):
    """The layers that only the AddLoss/AddMetric branches of ``model`` use (their weights are stored too)."""
    whole = getattr(model, "_mgpu_whole", None)
    if whole is None:
        return []
    own = {id(layer) for layer in model.layers}
    return [layer for layer in whole.layers if id(layer) not in own]


def share_wrapped_layers(model):
    """Give each tf.keras base ``Wrapper`` the model's own layer where it wraps one (the same name, class and config,
    and no weights of its own to lose), as tf.keras built it: one layer, not a copy."""
    by_name = {layer.name: layer for layer in model.layers}
    for layer in model.layers:
        inner = getattr(layer, "layer", None) if isinstance(layer, Wrapper) else None
        twin = by_name.get(getattr(inner, "name", None))
        if (
            inner is None
            or twin is None
            or twin is inner
            or type(twin) is not type(inner)
            or inner.weights
            or twin.get_config() != inner.get_config()
        ):
            continue
        object.__setattr__(layer, "layer", twin)
        layer._layers[:] = [twin if item is inner else item for item in layer._layers]
