"""TensorFlow ops as layers: tf.keras' ``TensorFlowOpLayer`` (TF 1.14-2.3) and ``TFOpLambda`` (TF 2.4+, tf_keras).

tf.keras made such a layer whenever user code called a TensorFlow op on a Keras tensor (``tf.reshape(x, ...)``,
``x * 2``, ``tf.concat``, ``tf.reduce_mean``, ...). Keras 3 has neither class. Both are rebuilt here as mgpu-io's
registered layer ``mgpu_io>TFOp`` (:mod:`mgpu_io.keras.tfops`), which computes the op with ``keras.ops`` on every
backend, from data only:

- a ``TensorFlowOpLayer`` stores the op as a ``node_def`` (op name, inputs, attributes; protobuf's JSON form) and
  its constant inputs (``constants``, by input position). The node_def is read as data and never run: its op must be
  one of :data:`OPS`, each defined as TensorFlow's own op definition says (``tensorflow/core/ops/*.cc``), and every
  input that the op needs as a number (a shape, an axis, a permutation) must be one of the stored constants;
- a ``TFOpLambda`` stores the name of the TensorFlow function (``math.add``, ``reshape``) and its call arguments in
  its inbound node; :data:`FUNCTIONS` says which op of :data:`OPS` each function emitted and which arguments are its
  inputs and attributes.

An op (or function) outside the tables, or an input the op needs as a constant that the file holds as a tensor, is
refused by name. The table :data:`OPS` says what each op takes; :data:`mgpu_io.keras.tfops.COMPUTE` holds the
computation of each, keyed by the same names (a test checks that both list the same ops).
"""

import base64
from dataclasses import dataclass

from mgpu_io.errors import Param, UnsupportedModel
from mgpu_io.format.config import layer_name, model_layers, walk_models
from mgpu_io.format.conversions.base import KERAS3, Family, Rule

#: The registered class that both become.
TF_OP_CLASS = "mgpu_io>TFOp"


@dataclass(frozen=True)
class Op:
    """A TensorFlow op as its definition (``REGISTER_OP``) declares it.

    Attributes:
        inputs: the op's inputs in order; ``*name`` is a list input (``N`` tensors).
        static: the inputs the computation needs as numbers (shape, axis, permutation, ...): stored constants.
        attrs: the attributes the computation reads (others, like ``T``, are only checked or ignored).
        summary: what the op computes, in TensorFlow's terms.
    """

    inputs: tuple
    static: tuple = ()
    attrs: tuple = ()
    summary: str = ""


def _unary(summary):
    return Op(("x",), summary=summary)


def _binary(summary):
    return Op(("x", "y"), summary=summary + " (NumPy broadcasting)")


def _reduction(summary):
    return Op(("input", "reduction_indices"), ("reduction_indices",), ("keep_dims",), summary)


#: Every TensorFlow op that mgpu-io computes, by its op name (``node_def.op``).
OPS = {
    "Identity": _unary("x"),
    "Reshape": Op(("tensor", "shape"), ("shape",), (), "tensor reshaped to shape (one -1 inferred)"),
    "Transpose": Op(("x", "perm"), ("perm",), (), "x with its axes permuted by perm"),
    "Add": _binary("x + y"),
    "AddV2": _binary("x + y"),
    "AddN": Op(("*inputs",), summary="the sum of the inputs"),
    "BiasAdd": Op(("value", "bias"), (), ("data_format",), "value + bias along the channel axis"),
    "Sub": _binary("x - y"),
    "Mul": _binary("x * y"),
    "RealDiv": _binary("x / y"),
    "Maximum": _binary("max(x, y)"),
    "Minimum": _binary("min(x, y)"),
    "SquaredDifference": _binary("(x - y)^2"),
    "Pow": _binary("x^y"),
    "MatMul": Op(("a", "b"), (), ("transpose_a", "transpose_b"), "a @ b, each transposed if asked"),
    "BatchMatMul": Op(("x", "y"), (), ("adj_x", "adj_y"), "x @ y over the last two axes"),
    "BatchMatMulV2": Op(("x", "y"), (), ("adj_x", "adj_y"), "x @ y over the last two axes (broadcast batch)"),
    "ConcatV2": Op(("*values", "axis"), ("axis",), (), "the values concatenated along axis"),
    "Pack": Op(("*values",), (), ("axis",), "the values stacked along a new axis"),
    "Squeeze": Op(("input",), (), ("squeeze_dims",), "input without the size-1 axes squeeze_dims (all if empty)"),
    "ExpandDims": Op(("input", "dim"), ("dim",), (), "input with a size-1 axis inserted at dim"),
    "Mean": _reduction("the mean over reduction_indices"),
    "Sum": _reduction("the sum over reduction_indices"),
    "Max": _reduction("the maximum over reduction_indices"),
    "Min": _reduction("the minimum over reduction_indices"),
    "Prod": _reduction("the product over reduction_indices"),
    "Relu": _unary("max(x, 0)"),
    "Relu6": _unary("min(max(x, 0), 6)"),
    "Sigmoid": _unary("1 / (1 + exp(-x))"),
    "Tanh": _unary("tanh(x)"),
    "Softmax": Op(("logits",), summary="softmax over the last axis"),
    "LogSoftmax": Op(("logits",), summary="log softmax over the last axis"),
    "Exp": _unary("exp(x)"),
    "Log": _unary("log(x)"),
    "Sqrt": _unary("sqrt(x)"),
    "Rsqrt": _unary("1 / sqrt(x)"),
    "Square": _unary("x * x"),
    "Abs": _unary("|x|"),
    "Neg": _unary("-x"),
    "Cast": Op(("x",), (), ("DstT",), "x as DstT"),
    "StridedSlice": Op(
        ("input", "begin", "end", "strides"),
        ("begin", "end", "strides"),
        ("begin_mask", "end_mask", "ellipsis_mask", "new_axis_mask", "shrink_axis_mask"),
        "input[begin:end:strides] with the masks of Python's slicing (ellipsis, new axis, integer index)",
    ),
    "Slice": Op(("input", "begin", "size"), ("begin", "size"), (), "input[begin:begin + size] (-1: to the end)"),
    "Pad": Op(("input", "paddings"), ("paddings",), (), "input padded with zeros"),
    "PadV2": Op(("input", "paddings", "constant_values"), ("paddings", "constant_values"), (), "input padded"),
    "MirrorPad": Op(("input", "paddings"), ("paddings",), ("mode",), "input padded by reflection (REFLECT/SYMMETRIC)"),
    "Tile": Op(("input", "multiples"), ("multiples",), (), "input repeated multiples times along each axis"),
    "ResizeBilinear": Op(
        ("images", "size"),
        ("size",),
        ("align_corners", "half_pixel_centers"),
        "NHWC images resized to size by bilinear interpolation",
    ),
    "ResizeNearestNeighbor": Op(
        ("images", "size"),
        ("size",),
        ("align_corners", "half_pixel_centers"),
        "NHWC images resized to size by nearest-neighbour sampling",
    ),
    "Split": Op(("split_dim", "value"), ("split_dim",), ("num_split",), "value split in num_split equal parts"),
    "SplitV": Op(("value", "size_splits", "split_dim"), ("size_splits", "split_dim"), (), "value split by sizes"),
    "Einsum": Op(("*inputs",), (), ("equation",), "Einstein summation of the inputs by equation"),
    "GatherV2": Op(("params", "indices", "axis"), ("axis",), ("batch_dims",), "params[..., indices, ...] on axis"),
    "LeakyRelu": Op(("features",), (), ("alpha",), "x if x > 0 else alpha * x"),
    "ClipByValue": Op(("t", "clip_value_min", "clip_value_max"), summary="min(max(t, min), max)"),
    "Softplus": _unary("log(exp(x) + 1)"),
    "Elu": _unary("x if x > 0 else exp(x) - 1"),
    "Selu": _unary("scale * (x if x > 0 else alpha * (exp(x) - 1))"),
    "Log1p": _unary("log(1 + x)"),
    "Reciprocal": _unary("1 / x"),
    "Floor": _unary("floor(x)"),
    "Sign": _unary("-1, 0 or 1 by the sign of x"),
    "ArgMax": Op(("input", "dimension"), ("dimension",), ("output_type",), "the index of the largest value on axis"),
    # Not TensorFlow ops but the Python functions of TensorFlow that tf.keras 2.4+ records by name, each written
    # as its TensorFlow source computes it from the ops above:
    "L2Normalize": Op(
        ("x", "axis", "epsilon"),
        ("axis", "epsilon"),
        (),
        "tf.math.l2_normalize: x * rsqrt(max(sum(x^2, axis, keepdims), epsilon))",
    ),
    "BinaryCrossentropy": Op(
        ("target", "output"),
        (),
        ("from_logits",),
        "tf.keras.backend.binary_crossentropy: -(target * log(p) + (1 - target) * log(1 - p)) of the probabilities "
        "p (the output, clipped to [1e-7, 1 - 1e-7], or sigmoid(output) from logits)",
    ),
    "GetItem": Op(
        ("input", "*indices"),
        (),
        ("spec",),
        "Python's x[spec] (tf.keras' SlicingOpLambda): slices, ellipsis, newaxis, integers and integer tensors, as "
        "TensorFlow's _slice_helper turns them into StridedSlice",
    ),
}


@dataclass(frozen=True)
class Function:
    """A TensorFlow function that tf.keras 2.4+ stored by name in a ``TFOpLambda``, as the op it emits.

    Attributes:
        op: the op of :data:`OPS`.
        arguments: the function's arguments that are the op's inputs, in the op's order (``*name``: a list).
        attrs: ``{argument: attribute}``: arguments that become the op's attributes.
        defaults: the function's own defaults for arguments the call may leave out.
    """

    op: str
    arguments: tuple
    attrs: tuple = ()
    defaults: tuple = ()


def _f(op, arguments, attrs=(), **defaults):
    return Function(op, tuple(arguments), tuple(attrs), tuple(defaults.items()))


#: Every TensorFlow function of a ``TFOpLambda`` that mgpu-io computes, by its stored name (``function``).
FUNCTIONS = {
    "identity": _f("Identity", ["input"]),
    "reshape": _f("Reshape", ["tensor", "shape"]),
    "transpose": _f("Transpose", ["a", "perm"]),
    "compat.v1.transpose": _f("Transpose", ["a", "perm"], [("conjugate", "conjugate")]),
    "math.add": _f("AddV2", ["x", "y"]),
    "__operators__.add": _f("AddV2", ["x", "y"]),
    "math.add_n": _f("AddN", ["*inputs"]),
    "math.subtract": _f("Sub", ["x", "y"]),
    "math.multiply": _f("Mul", ["x", "y"]),
    "math.truediv": _f("RealDiv", ["x", "y"]),
    "math.divide": _f("RealDiv", ["x", "y"]),
    "math.maximum": _f("Maximum", ["x", "y"]),
    "math.minimum": _f("Minimum", ["x", "y"]),
    "math.squared_difference": _f("SquaredDifference", ["x", "y"]),
    "math.pow": _f("Pow", ["x", "y"]),
    "linalg.matmul": _f("BatchMatMulV2", ["a", "b"], [("transpose_a", "adj_x"), ("transpose_b", "adj_y")]),
    "concat": _f("ConcatV2", ["*values", "axis"]),
    "stack": _f("Pack", ["*values"], [("axis", "axis")], axis=0),
    "squeeze": _f("Squeeze", ["input"], [("axis", "squeeze_dims")], axis=[]),
    "compat.v1.squeeze": _f("Squeeze", ["input"], [("axis", "squeeze_dims"), ("squeeze_dims", "squeeze_dims")]),
    "expand_dims": _f("ExpandDims", ["input", "axis"]),
    "math.reduce_mean": _f("Mean", ["input_tensor", "axis"], [("keepdims", "keep_dims")], keepdims=False),
    "math.reduce_sum": _f("Sum", ["input_tensor", "axis"], [("keepdims", "keep_dims")], keepdims=False),
    "math.reduce_max": _f("Max", ["input_tensor", "axis"], [("keepdims", "keep_dims")], keepdims=False),
    "math.reduce_min": _f("Min", ["input_tensor", "axis"], [("keepdims", "keep_dims")], keepdims=False),
    "math.reduce_prod": _f("Prod", ["input_tensor", "axis"], [("keepdims", "keep_dims")], keepdims=False),
    "nn.relu": _f("Relu", ["features"]),
    "nn.relu6": _f("Relu6", ["features"]),
    "math.sigmoid": _f("Sigmoid", ["x"]),
    "math.tanh": _f("Tanh", ["x"]),
    "math.exp": _f("Exp", ["x"]),
    "math.log": _f("Log", ["x"]),
    "math.sqrt": _f("Sqrt", ["x"]),
    "math.rsqrt": _f("Rsqrt", ["x"]),
    "math.square": _f("Square", ["x"]),
    "math.abs": _f("Abs", ["x"]),
    "math.negative": _f("Neg", ["x"]),
    "cast": _f("Cast", ["x"], [("dtype", "DstT")]),
    "slice": _f("Slice", ["input_", "begin", "size"]),
    "tile": _f("Tile", ["input", "multiples"]),
    "einsum": _f("Einsum", ["*inputs"], [("equation", "equation")]),
    "convert_to_tensor": _f("Identity", ["value"], [("dtype", "dtype_hint"), ("dtype_hint", "dtype_hint")]),
    "gather": _f("GatherV2", ["params", "indices", "axis"], [("batch_dims", "batch_dims")], axis=0, batch_dims=0),
    "compat.v1.gather": _f(
        "GatherV2",
        ["params", "indices", "axis"],
        [("batch_dims", "batch_dims"), ("validate_indices", "validate_indices")],
        axis=0,
        batch_dims=0,
    ),
    "nn.leaky_relu": _f("LeakyRelu", ["features"], [("alpha", "alpha")], alpha=0.2),
    "clip_by_value": _f("ClipByValue", ["t", "clip_value_min", "clip_value_max"]),
    "math.softplus": _f("Softplus", ["features"]),
    "nn.elu": _f("Elu", ["features"]),
    "nn.selu": _f("Selu", ["features"]),
    "math.log1p": _f("Log1p", ["x"]),
    "math.reciprocal": _f("Reciprocal", ["x"]),
    "math.floor": _f("Floor", ["x"]),
    "math.sign": _f("Sign", ["x"]),
    "math.argmax": _f("ArgMax", ["input", "axis"], [("output_type", "output_type")], axis=0, output_type="int64"),
    "math.l2_normalize": _f("L2Normalize", ["x", "axis", "epsilon"], axis=None, epsilon=1e-12),
    "keras.backend.binary_crossentropy": _f(
        "BinaryCrossentropy", ["target", "output"], [("from_logits", "from_logits")], from_logits=False
    ),
    "nn.softmax": _f("Softmax", ["logits"], [("axis", "axis")], axis=None),
    "nn.log_softmax": _f("LogSoftmax", ["logits"], [("axis", "axis")], axis=None),
}

#: Namespaces of TensorFlow's API whose functions reach outside the computation (files, summaries, datasets, training
#: state, devices, the raw op registry, Python callbacks): a ``TFOpLambda`` that names one is refused by name.
OUTSIDE_NAMESPACES = (
    "io", "gfile", "summary", "data", "saved_model", "train", "raw_ops", "debugging", "config", "distribute", "tpu",
    "lite", "sysconfig", "autograph", "profiler", "estimator", "feature_column", "queue", "lookup", "keras", "test",
    "errors", "app", "flags", "logging", "resource_loader", "experimental", "mlir", "saved_model", "tools", "user_ops",
    "variable_creator_scope", "random.experimental", "__internal__",
)  # fmt: skip
#: Functions outside those namespaces that reach outside the computation, take code, or hold state.
OUTSIDE_FUNCTIONS = (
    "print", "Print", "py_function", "numpy_function", "py_func", "eager_py_func", "load_library", "load_op_library",
    "Variable", "get_variable", "assign", "assign_add", "assign_sub", "placeholder", "placeholder_with_default",
    "sparse_placeholder", "set_random_seed", "random.set_seed", "function", "custom_gradient", "init_scope",
    "control_dependencies", "device", "name_scope", "variable_scope", "get_collection", "add_to_collection",
    "make_template", "Session", "InteractiveSession", "cond", "case", "while_loop", "map_fn", "scan", "foldl", "foldr",
    "vectorized_map", "switch_case", "recompute_grad", "get_logger", "executing_eagerly", "enable_eager_execution",
)  # fmt: skip


def tensorflow_function_refusal(function):
    """Why mgpu-io does not call the TensorFlow function ``tf.<function>`` that a ``TFOpLambda`` names, or ``None``.

    The policy, for a name read from a file that may be hostile: public names of TensorFlow's API only (dotted
    identifiers without a leading underscore, or tf_keras' ``__operators__`` namespace), none of
    :data:`OUTSIDE_NAMESPACES` or :data:`OUTSIDE_FUNCTIONS` (also under ``compat.v1``/``compat.v2``).
    :func:`mgpu_io.keras.tfops.tensorflow_function` then checks what the name resolves to: a function of
    TensorFlow's op modules.

    Example:
        >>> tensorflow_function_refusal("compat.v1.size") is None, tensorflow_function_refusal("io.write_file")
        (True, 'it reaches outside the computation (the namespace tf.io)')
    """
    parts = function.split(".") if isinstance(function, str) else []
    if not parts or not all(part.isidentifier() and part.isascii() for part in parts):
        return "its name is not a dotted Python name"
    if len(parts) > 8:
        return "its name is longer than any of TensorFlow's API"
    if any(part.startswith("_") for part in parts) and not (parts[0] == "__operators__" and len(parts) == 2):
        return "its name is private (a leading underscore)"
    if parts[:1] == ["compat"] and parts[1:2] in (["v1"], ["v2"]):
        parts = parts[2:]
    name = ".".join(parts)
    for namespace in OUTSIDE_NAMESPACES:
        if name == namespace or name.startswith(namespace + "."):
            return f"it reaches outside the computation (the namespace tf.{namespace})"
    if name in OUTSIDE_FUNCTIONS or parts[-1] in OUTSIDE_FUNCTIONS:
        return "it reaches outside the computation, takes code or holds state"
    return None


#: Reductions whose ``axis=None`` means every axis.
_ALL_AXES = ("Mean", "Sum", "Max", "Min", "Prod")

_DTYPES = {
    "DT_FLOAT": "float32",
    "DT_DOUBLE": "float64",
    "DT_HALF": "float16",
    "DT_BFLOAT16": "bfloat16",
    "DT_INT8": "int8",
    "DT_INT16": "int16",
    "DT_INT32": "int32",
    "DT_INT64": "int64",
    "DT_UINT8": "uint8",
    "DT_UINT16": "uint16",
    "DT_BOOL": "bool",
}


def _attr_value(name, value):
    """One ``AttrValue`` of a node_def in protobuf's JSON form (``{"i": "2"}``, ``{"type": "DT_FLOAT"}``,
    ``{"list": {"i": [...]}}``, ``{"s": base64}``) as a plain value.

    Example:
        >>> [_attr_value("a", v) for v in ({"i": "2"}, {"b": True}, {"type": "DT_INT32"}, {"list": {"i": ["1"]}},
        ...     {"s": "YWIsYmM="}, {"list": {}})]
        [2, True, 'int32', [1], 'ab,bc', []]
    """
    if not isinstance(value, dict):
        return value
    if "list" in value:
        items = value["list"] if isinstance(value["list"], dict) else {}
        for key, item in items.items():
            return [_attr_value(name, {key: one}) for one in item]
        return []
    if "i" in value:
        return int(value["i"])
    if "type" in value:
        return _DTYPES.get(value["type"], value["type"])
    if "s" in value:
        try:
            return base64.b64decode(value["s"]).decode("utf-8")
        except (ValueError, UnicodeDecodeError):
            return value["s"]
    for key in ("b", "f"):
        if key in value:
            return value[key]
    return None  # a shape, tensor or function attribute: no op of the table reads one


def input_roles(op, count):
    """The role (input name of :data:`OPS`) of each of ``count`` inputs of ``op``, a list input repeated.

    Example:
        >>> input_roles("ConcatV2", 3)
        ['values', 'values', 'axis']
    """
    inputs = OPS[op].inputs
    listed = [i for i, name in enumerate(inputs) if name.startswith("*")]
    if not listed:
        return list(inputs[:count]) + ["?"] * (count - len(inputs))
    at = listed[0]
    return [*inputs[:at], *[inputs[at][1:]] * (count - len(inputs) + 1), *inputs[at + 1 :]]


def _tf_keras_fix(rebuild):
    """The fix of a refused TensorFlow op or function: ``rebuild`` in code, or keep the writer's config for tf_keras."""
    return (
        f"{rebuild} and load the weights with mgpu_io.transfer_weights, or pass ",
        Param("keep_config", True),
        " and ",
        Param("target", "tf_keras"),
        " for tf_keras, which has the class",
    )


def _refuse(layer, what, received):
    raise UnsupportedModel(
        problem=f"Layer {layer_name(layer)!r} is a {layer['class_name']}: {what}",
        expected=f"one of the TensorFlow ops that mgpu-io computes in Keras 3 ({', '.join(sorted(OPS))})",
        received=received,
        fix=_tf_keras_fix("Rebuild the template in code (Keras 3 ops for the TensorFlow call)"),
    )


def _op_layer(layer):
    """A ``TensorFlowOpLayer`` as ``mgpu_io>TFOp``: its node_def read as data, checked against :data:`OPS`."""
    settings = layer["config"]
    node = settings.get("node_def")
    if not isinstance(node, dict):
        _refuse(layer, "its node_def is not stored as protobuf's JSON form", f"node_def={str(node)[:60]!r}")
    op = node.get("op")
    if op not in OPS:
        _refuse(layer, f"it runs the TensorFlow op {op!r}, which mgpu-io does not compute", f"op={op!r}")
    inputs = [name for name in node.get("input") or [] if not str(name).startswith("^")]  # ^: control inputs
    constants = {int(key): value for key, value in (settings.get("constants") or {}).items()}
    attrs = {name: _attr_value(name, value) for name, value in (node.get("attr") or {}).items()}
    _check_static(layer, op, input_roles(op, len(inputs)), constants)
    return _op_config(layer, op, attrs, constants, len(inputs))


def _check_static(layer, op, roles, constants):
    for index, role in enumerate(roles):
        if role in OPS[op].static and index not in constants:
            _refuse(
                layer,
                f"its op {op} takes its input {role!r} from another layer's output, a value known only when the "
                f"model runs, which mgpu-io computes only as a constant stored in the file",
                f"{op} input #{index} ({role}) not among the constants",
            )
    if len(roles) - len(constants) < 1 and op not in ("Identity",):
        _refuse(layer, f"its op {op} takes no layer output", f"constants={sorted(constants)}")


def _op_config(layer, op, attrs, constants, count):
    settings = layer["config"]
    name = layer.get("name") or settings.get("name")
    config = {
        "name": name,
        "trainable": settings.get("trainable", True),
        "dtype": settings.get("dtype"),
        "op": op,
        "attrs": attrs,
        "constants": {str(index): value for index, value in sorted(constants.items())},
        "inputs": count,
    }
    return {key: value for key, value in config.items() if value is not None}


def _nodes(layer):
    """A ``TFOpLambda``'s inbound nodes as ``[(entries, kwargs)]``: the first argument's tensors (one, or the list
    the call took), each ``[layer, node, tensor]``, and the call's keyword arguments."""
    nodes = []
    for node in layer.get("inbound_nodes") or []:
        if isinstance(node, list) and len(node) == 4 and isinstance(node[0], str):  # one tensor: flat
            nodes.append(([list(node[:3])], node[3] if isinstance(node[3], dict) else {}, False))
        elif isinstance(node, list) and node and all(isinstance(entry, list) and len(entry) >= 3 for entry in node):
            kwargs = node[-1][3] if len(node[-1]) > 3 and isinstance(node[-1][3], dict) else {}
            nodes.append(([list(entry[:3]) for entry in node], kwargs, True))
        else:
            return None
    return nodes


def _is_history(value, names):
    return (
        isinstance(value, list)
        and len(value) == 3
        and isinstance(value[0], str)
        and value[0] in names
        and all(isinstance(v, int) and not isinstance(v, bool) for v in value[1:])
    )


def _call_template(value, names, tensors):
    """A stored call argument with each Keras tensor (a ``[layer, node, tensor]`` history) replaced by
    ``{"__input__": k}``, its position among the layer's inputs ``tensors`` (added there if new)."""
    if _is_history(value, names):
        if value not in tensors:
            tensors.append(value)
        return {"__input__": tensors.index(value)}
    if isinstance(value, list) and value[:2] == ["_CONSTANT_VALUE", -1] and len(value) == 3:
        return value[2]
    if isinstance(value, list):
        return [_call_template(item, names, tensors) for item in value]
    if isinstance(value, dict):
        return {key: _call_template(item, names, tensors) for key, item in value.items()}
    return value


def _op_lambda(layer, names):
    """A ``TFOpLambda`` as ``mgpu_io>TFOp``: the TensorFlow function by its stored name and its call as stored
    (``function`` and ``call``: the first argument and the keyword arguments, each Keras tensor an input of the
    layer), which TensorFlow runs by name; for a function of :data:`FUNCTIONS`, also the op it emits, which every
    other backend computes with ``keras.ops``. Returns ``(config, by_name)``: whether only the name serves."""
    settings = layer["config"]
    function = settings.get("function")
    refusal = tensorflow_function_refusal(function)
    if refusal is not None and function not in FUNCTIONS:
        _refuse_function(layer, function, refusal)
    nodes = _nodes(layer)
    if not nodes or len(nodes) != 1:
        _refuse(layer, "it is called other than once with stored arguments", f"inbound_nodes={nodes!r}"[:200])
    first, kwargs, listed = nodes[0]
    first = [entry[2] if entry[:2] == ["_CONSTANT_VALUE", -1] else entry for entry in first]  # a value, not a tensor
    kwargs = {key: value for key, value in kwargs.items() if key != "name"}
    tensors: list = []
    call = {"args": [_call_template(first if listed else first[0], names, tensors)], "kwargs": {}}
    call["kwargs"] = {key: _call_template(value, names, tensors) for key, value in kwargs.items()}
    top_level = [value for value in [*first, *kwargs.values()] if _is_history(value, names)]
    nested = any(tensor not in top_level for tensor in tensors)  # a tensor inside an argument: tf.reshape(x, [n, -1])
    if function not in FUNCTIONS or (nested and refusal is None):
        if not tensors:
            _refuse(layer, f"its call of tf.{function} takes no layer output", f"{function}({kwargs})"[:200])
        layer["inbound_nodes"] = [[[*entry, {}] for entry in tensors]]
        config = _op_config(layer, None, {}, {}, len(tensors))
        config.update(function=function, call=call)
        return config, True
    if nested:
        _refuse(
            layer,
            f"its call of tf.{function} holds another layer's output inside an argument, which mgpu-io computes "
            f"only by calling the function",
            f"function={function!r}",
        )
    spec = FUNCTIONS[function]
    arguments = dict(spec.defaults)
    first_name = spec.arguments[0].lstrip("*")
    arguments[first_name] = first if listed or spec.arguments[0].startswith("*") else first[0]
    for key, value in kwargs.items():
        arguments[key] = value
    attrs, tensors, constants, index = {}, [], {}, 0
    for argument, attr in spec.attrs:
        if argument in arguments:
            attrs[attr] = arguments.pop(argument)
    if spec.op == "Squeeze" and attrs.get("squeeze_dims") is not None and not isinstance(attrs["squeeze_dims"], list):
        attrs["squeeze_dims"] = [attrs["squeeze_dims"]]
    if spec.op == "Cast":
        attrs["DstT"] = str(attrs.get("DstT"))
    for argument in spec.arguments:
        values = arguments.pop(argument.lstrip("*"), None)
        for value in values if argument.startswith("*") else [values]:
            if _is_history(value, names):
                tensors.append(value)
            else:
                if value is None and not (spec.op in _ALL_AXES and argument == "axis"):  # None: every axis
                    _refuse(layer, f"its call leaves out the argument {argument!r}", f"{function}({kwargs})")
                constants[index] = value
            index += 1
    leftover = sorted(key for key, value in arguments.items() if value is not None)
    if leftover:
        _refuse(
            layer,
            f"its call of tf.{function} passes arguments that mgpu-io does not compute",
            f"{', '.join(leftover)}",
        )
    _check_static(layer, spec.op, input_roles(spec.op, index), constants)
    layer["inbound_nodes"] = [[[*entry, {}] for entry in tensors]]
    config = _op_config(layer, spec.op, attrs, constants, index)
    if refusal is None:  # TensorFlow calls it by name, the layer's inputs in the op's order
        ordered: list = list(tensors)
        call = {"args": [_call_template(first if listed else first[0], names, ordered)], "kwargs": {}}
        call["kwargs"] = {key: _call_template(value, names, ordered) for key, value in kwargs.items()}
        if ordered == tensors:
            config.update(function=function, call=call)
    return config, False


def _refuse_function(layer, function, reason):
    raise UnsupportedModel(
        problem=f"Layer {layer_name(layer)!r} is a TFOpLambda that calls tf.{str(function)[:80]}, which mgpu-io "
        f"does not call: {reason}",
        expected="a public TensorFlow function that computes on its inputs and nothing else",
        received=f"function={str(function)[:80]!r}",
        fix=_tf_keras_fix("Rebuild the template in code"),
    )


#: tf.keras' layers of ``model.add_loss(tensor)`` and ``model.add_metric(tensor)`` (TF 2.4+), as mgpu-io's own.
ANCILLARY = {"AddLoss": "mgpu_io>AddLoss", "AddMetric": "mgpu_io>AddMetric"}
#: tf.keras' base ``Wrapper``, which returns its inputs (its ``call`` is ``Layer.call``), as mgpu-io's own.
WRAPPER_CLASS = "mgpu_io>Wrapper"


def _keras_own(layer):
    """Whether a layer entry is of tf.keras' own class (no module, as in HDF5, or tf.keras' own module)."""
    module = layer.get("module")
    return module is None or str(module).startswith(("keras.", "tf_keras.", "tensorflow."))


def _slice_item(layer, item, names, tensors):
    """One item of a stored ``slice_spec`` as data of the ``GetItem`` op: a slice ``{"start", "stop", "step"}``
    (each an int or None), ``"..."``, ``None`` (newaxis), an int, or ``{"input": k}`` for the k-th index tensor."""
    if isinstance(item, dict) and item.get("class_name") == "__ellipsis__":
        return "..."
    if isinstance(item, dict) and set(item) <= {"start", "stop", "step"}:
        bounds = [item.get(key) for key in ("start", "stop", "step")]
        if not all(value is None or (isinstance(value, int) and not isinstance(value, bool)) for value in bounds):
            _refuse(
                layer,
                "its slice takes a bound from another layer's output, which mgpu-io computes only as a number "
                "stored in the file",
                f"slice_spec item {item!r}"[:120],
            )
        return dict(zip(("start", "stop", "step"), bounds))
    if item is None or (isinstance(item, int) and not isinstance(item, bool)):
        return item
    if _is_history(item, names):
        tensors.append(item)
        return {"input": len(tensors)}
    _refuse(layer, "its slice holds an index that mgpu-io does not read", f"slice_spec item {item!r}"[:120])
    return None


def _slicing(layer, names):
    """A ``SlicingOpLambda`` (``x[...]`` on a Keras tensor, TF 2.4+) as ``mgpu_io>TFOp`` of the op ``GetItem``: the
    stored ``slice_spec`` read as data, each index tensor an input of the layer."""
    nodes = _nodes(layer)
    if not nodes or len(nodes) != 1 or len(nodes[0][0]) != 1:
        _refuse(layer, "it is called other than once on one tensor", f"inbound_nodes={nodes!r}"[:200])
    (source,), kwargs, _ = nodes[0]
    if layer["config"].get("function") != "__operators__.getitem" or set(kwargs) - {"slice_spec", "name"}:
        _refuse(layer, "it is not a Python slice of a tensor", f"function={layer['config'].get('function')!r}")
    spec = kwargs.get("slice_spec")
    items = spec if isinstance(spec, list) else [spec]
    tensors = []
    spec = [_slice_item(layer, item, names, tensors) for item in items]
    layer["inbound_nodes"] = [[[*entry, {}] for entry in [source, *tensors]]]
    return _op_config(layer, "GetItem", {"spec": spec}, {}, 1 + len(tensors))


def _registered(layer):
    """The layer entry as mgpu-io's registered class (tf_keras' module and registered name of its own class go)."""
    layer["class_name"] = TF_OP_CLASS
    layer.pop("module", None)
    layer.pop("registered_name", None)


def _rewrite_config(config, context):
    if context.target != KERAS3:
        return []
    changes = []
    for model in walk_models(config):
        layers = model_layers(model)
        names = {layer_name(layer) for layer in layers if isinstance(layer, dict)}
        for layer in layers:
            cls = layer.get("class_name") if isinstance(layer, dict) else None
            if cls == "TensorFlowOpLayer" and isinstance(layer.get("config"), dict):
                layer["config"] = _op_layer(layer)
                _registered(layer)
                changes.append("tf-op-layer")
            elif cls == "TFOpLambda" and isinstance(layer.get("config"), dict):
                layer["config"], by_name = _op_lambda(layer, names)
                _registered(layer)
                changes.append("tf-function-by-name" if by_name else "tf-op-lambda")
            elif cls == "SlicingOpLambda" and isinstance(layer.get("config"), dict):
                layer["config"] = _slicing(layer, names)
                _registered(layer)
                changes.append("slicing-op-lambda")
            elif cls in ANCILLARY and isinstance(layer.get("config"), dict):
                layer["class_name"] = ANCILLARY[cls]
                changes.append("add-loss-metric")
            elif cls in ("Layer", "Wrapper") and isinstance(layer.get("config"), dict) and _keras_own(layer):
                layer["class_name"] = "Identity" if cls == "Layer" else WRAPPER_CLASS
                inner = layer["config"].get("layer")
                if cls == "Wrapper" and isinstance(inner, dict) and inner.get("class_name") == "Layer":
                    inner["class_name"] = "Identity"  # built as Keras 3's own: the module goes with the class
                    inner["module"], inner["registered_name"] = "keras.layers", None
                layer.pop("module", None)
                layer.pop("registered_name", None)
                changes.append("base-layer")
    return changes


FAMILY = Family(
    name="tfops",
    summary="TensorFlow ops called on Keras tensors (TensorFlowOpLayer, TFOpLambda, SlicingOpLambda), computed "
    "with keras.ops, and tf.keras' AddLoss, AddMetric and base Layer and Wrapper",
    rules=(
        Rule(
            "tf-op-layer",
            "a `TensorFlowOpLayer` (tf.keras 1.14-2.3: a TensorFlow op called on a Keras tensor) becomes "
            "mgpu-io's registered `mgpu_io>TFOp`, which computes the op of its stored node_def (read as data, never "
            "run) with `keras.ops`; ops outside mgpu-io's table are refused by name",
            "Keras 3: `Unknown layer: 'TensorFlowOpLayer'`",
            (),
        ),
        Rule(
            "tf-op-lambda",
            "a `TFOpLambda` (tf.keras 2.4+, tf_keras: a TensorFlow function called on a Keras tensor) of mgpu-io's "
            "table becomes `mgpu_io>TFOp` for the op the function emitted, its stored call arguments as the op's "
            "inputs (other backends), and the function's name and call (TensorFlow calls it by name)",
            "Keras 3: `Unknown layer: 'TFOpLambda'`",
            (),
        ),
        Rule(
            "tf-function-by-name",
            "a `TFOpLambda` whose TensorFlow function is outside mgpu-io's table becomes `mgpu_io>TFOp` holding the "
            "function's name and its stored call: on TensorFlow it calls that function by name, as tf_keras does, "
            "if it is a public function of TensorFlow's op modules that computes on its inputs only (no I/O, "
            "summaries, variables or Python callbacks: others are refused by name); on another backend the "
            "`keras.ops` function of the same name",
            "Keras 3: `Unknown layer: 'TFOpLambda'`; before: refused as outside the table",
            (),
        ),
        Rule(
            "slicing-op-lambda",
            "a `SlicingOpLambda` (tf.keras 2.4+: `x[:, 0]`, `x[..., 1:3]`, `x[:, None]`, strides, negative and "
            "tensor indices) becomes `mgpu_io>TFOp` of the op `GetItem`, its stored `slice_spec` read as data",
            "Keras 3: `Unknown layer: 'SlicingOpLambda'`",
            (),
        ),
        Rule(
            "add-loss-metric",
            "tf.keras 2.4+'s `AddLoss` and `AddMetric` (`model.add_loss(tensor)`, `model.add_metric(tensor)` in a "
            "functional model) become `mgpu_io>AddLoss` and `mgpu_io>AddMetric`, which the loaded model runs with "
            "its outputs so that `fit` and `evaluate` count them as the writer did",
            "Keras 3: `Unknown layer: 'AddLoss'`",
            (),
        ),
        Rule(
            "base-layer",
            "tf.keras' base `Layer` (which returns its inputs) becomes Keras 3's `Identity`, and its base "
            "`Wrapper` (which returns its inputs too) `mgpu_io>Wrapper`",
            "Keras 3: `Exception encountered when calling Layer.call()` (NotImplementedError)",
            (),
        ),
    ),
    rewrite_config=_rewrite_config,
)

__all__ = [
    "FAMILY",
    "FUNCTIONS",
    "OPS",
    "TF_OP_CLASS",
    "Function",
    "Op",
    "input_roles",
    "tensorflow_function_refusal",
]
