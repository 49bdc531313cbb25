"""Keras 2's backend API (``from keras import backend as K``) on Keras 3's ``keras.ops`` and ``keras.random``.

Code written for Keras 2 calls ``K.concatenate``, ``K.l2_normalize``, ``K.random_normal``, ``K.shape`` ... Keras 3
has no such module. This one implements those functions with Keras 2's signatures and defaults on ``keras.ops``, so
a recovered (or hand-ported) Lambda function runs on Keras 3 unchanged, on every backend::

    from mgpu_io.lambdas import backend2 as K

    def l2_norm(x):
        return K.l2_normalize(x, axis=-1)

``mgpu_io.load_model(..., safe_mode=False)`` puts it in recovered functions' globals as ``K`` (with ``np``, and
``tf`` on the TensorFlow backend). A Keras 2 function that Keras 3 cannot express raises ``NotImplementedError``
naming it.
"""

import numpy as np

from mgpu_io.keras._compat import import_keras

keras = import_keras()
ops = keras.ops
_random = keras.random

_EPSILON = 1e-7
_FLOATX = "float32"


def backend():
    """The backend's name, as Keras 2 spelled it (``"tensorflow"``, ``"jax"``, ``"torch"``, ``"numpy"``)."""
    return keras.backend.backend()


def epsilon():
    return _EPSILON


def set_epsilon(value):
    global _EPSILON
    _EPSILON = float(value)


def floatx():
    return _FLOATX


def set_floatx(value):
    global _FLOATX
    _FLOATX = str(value)


def image_data_format():
    return keras.config.image_data_format()


def image_dim_ordering():
    """Keras 1's name: ``"tf"`` for channels last, ``"th"`` for channels first."""
    return "tf" if image_data_format() == "channels_last" else "th"


def learning_phase():
    return 0


def is_keras_tensor(x):
    return keras.backend.is_keras_tensor(x)


def is_tensor(x):
    return ops.is_tensor(x)


# --- tensors ---------------------------------------------------------------------------------------------------


def variable(value, dtype=None, name=None, constraint=None):
    return keras.Variable(np.asarray(value, dtype=dtype or _FLOATX), name=name, constraint=constraint)


def constant(value, dtype=None, shape=None, name=None):
    value = np.asarray(value, dtype=dtype or _FLOATX)
    if shape is not None:
        value = np.broadcast_to(value, shape)
    return ops.convert_to_tensor(value)


def placeholder(*args, **kwargs):
    raise NotImplementedError("K.placeholder: Keras 3 has no placeholders; use keras.Input")


def cast(x, dtype):
    return ops.cast(x, dtype)


def cast_to_floatx(x):
    return np.asarray(x, dtype=_FLOATX)


def dtype(x):
    return keras.backend.standardize_dtype(x.dtype)


def eval(x):
    return ops.convert_to_numpy(x)


def get_value(x):
    return ops.convert_to_numpy(x)


def batch_get_value(xs):
    return [get_value(x) for x in xs]


def set_value(x, value):
    x.assign(value)


def shape(x):
    return ops.shape(x) if not ops.is_tensor(x) else _dynamic_shape(x)


def _dynamic_shape(x):
    """The shape as a tensor (Keras 2's ``K.shape``), so that slicing and arithmetic on it work in graphs."""
    if backend() == "tensorflow":
        import tensorflow as tf

        return tf.shape(x)
    return ops.convert_to_tensor([d if d is not None else -1 for d in ops.shape(x)], dtype="int32")


def int_shape(x):
    try:
        return tuple(x.shape)
    except (AttributeError, TypeError):
        return None


def ndim(x):
    return len(x.shape)


def count_params(x):
    return int(np.prod(int_shape(x)))


def zeros(shape, dtype=None, name=None):
    return ops.zeros(shape, dtype=dtype or _FLOATX)


def ones(shape, dtype=None, name=None):
    return ops.ones(shape, dtype=dtype or _FLOATX)


def eye(size, dtype=None, name=None):
    return ops.eye(size, dtype=dtype or _FLOATX)


def zeros_like(x, dtype=None, name=None):
    return ops.zeros_like(x, dtype=dtype)


def ones_like(x, dtype=None, name=None):
    return ops.ones_like(x, dtype=dtype)


def identity(x, name=None):
    return ops.copy(x)


def arange(start, stop=None, step=1, dtype="int32"):
    return ops.arange(start, stop, step, dtype=dtype)


# --- element-wise ------------------------------------------------------------------------------------------------


def abs(x):
    return ops.abs(x)


def square(x):
    return ops.square(x)


def sqrt(x):
    return ops.sqrt(ops.maximum(x, 0.0))


def exp(x):
    return ops.exp(x)


def log(x):
    return ops.log(x)


def pow(x, a):
    return ops.power(x, a)


def sign(x):
    return ops.sign(x)


def round(x):
    return ops.round(x)


def sin(x):
    return ops.sin(x)


def cos(x):
    return ops.cos(x)


def tanh(x):
    return ops.tanh(x)


def sigmoid(x):
    return ops.sigmoid(x)


def hard_sigmoid(x):
    return ops.clip(0.2 * x + 0.5, 0.0, 1.0)


def softplus(x):
    return ops.softplus(x)


def softsign(x):
    return ops.softsign(x)


def relu(x, alpha=0.0, max_value=None, threshold=0.0):
    return keras.activations.relu(x, negative_slope=alpha, max_value=max_value, threshold=threshold)


def elu(x, alpha=1.0):
    return keras.activations.elu(x, alpha=alpha)


def softmax(x, axis=-1):
    return ops.softmax(x, axis=axis)


def maximum(x, y):
    return ops.maximum(x, y)


def minimum(x, y):
    return ops.minimum(x, y)


def clip(x, min_value, max_value):
    if max_value is not None and min_value is not None and max_value < min_value:
        max_value = min_value
    return ops.clip(x, min_value, max_value)


def equal(x, y):
    return ops.equal(x, y)


def not_equal(x, y):
    return ops.not_equal(x, y)


def greater(x, y):
    return ops.greater(x, y)


def greater_equal(x, y):
    return ops.greater_equal(x, y)


def less(x, y):
    return ops.less(x, y)


def less_equal(x, y):
    return ops.less_equal(x, y)


def switch(condition, then_expression, else_expression):
    then_value = then_expression() if callable(then_expression) else then_expression
    else_value = else_expression() if callable(else_expression) else else_expression
    return ops.where(condition, then_value, else_value)


# --- reductions --------------------------------------------------------------------------------------------------


def sum(x, axis=None, keepdims=False):
    return ops.sum(x, axis=axis, keepdims=keepdims)


def mean(x, axis=None, keepdims=False):
    return ops.mean(x, axis=axis, keepdims=keepdims)


def max(x, axis=None, keepdims=False):
    return ops.max(x, axis=axis, keepdims=keepdims)


def min(x, axis=None, keepdims=False):
    return ops.min(x, axis=axis, keepdims=keepdims)


def prod(x, axis=None, keepdims=False):
    return ops.prod(x, axis=axis, keepdims=keepdims)


def var(x, axis=None, keepdims=False):
    return ops.var(x, axis=axis, keepdims=keepdims)


def std(x, axis=None, keepdims=False):
    return ops.std(x, axis=axis, keepdims=keepdims)


def any(x, axis=None, keepdims=False):
    return ops.any(ops.cast(x, "bool"), axis=axis, keepdims=keepdims)


def all(x, axis=None, keepdims=False):
    return ops.all(ops.cast(x, "bool"), axis=axis, keepdims=keepdims)


def argmax(x, axis=-1):
    return ops.argmax(x, axis=axis)


def argmin(x, axis=-1):
    return ops.argmin(x, axis=axis)


def cumsum(x, axis=0):
    return ops.cumsum(x, axis=axis)


def logsumexp(x, axis=None, keepdims=False):
    return ops.logsumexp(x, axis=axis, keepdims=keepdims)


def l2_normalize(x, axis=None):
    """Keras 2's: ``x / sqrt(max(sum(x ** 2, axis), 1e-12))``."""
    return x / ops.sqrt(ops.maximum(ops.sum(ops.square(x), axis=axis, keepdims=True), 1e-12))


# --- shapes ------------------------------------------------------------------------------------------------------


def concatenate(tensors, axis=-1):
    return ops.concatenate(list(tensors), axis=axis)


def stack(x, axis=0):
    return ops.stack(list(x), axis=axis)


def reshape(x, shape):
    return ops.reshape(x, shape)


def permute_dimensions(x, pattern):
    return ops.transpose(x, pattern)


def transpose(x):
    return ops.transpose(x)


def expand_dims(x, axis=-1):
    return ops.expand_dims(x, axis)


def squeeze(x, axis):
    return ops.squeeze(x, axis)


def flatten(x):
    return ops.reshape(x, (-1,))


def batch_flatten(x):
    return ops.reshape(x, (ops.shape(x)[0], -1))


def repeat(x, n):
    """Keras 2's: ``(batch, dim)`` to ``(batch, n, dim)``."""
    return ops.repeat(ops.expand_dims(x, 1), n, axis=1)


def repeat_elements(x, rep, axis):
    return ops.repeat(x, rep, axis=axis)


def tile(x, n):
    return ops.tile(x, n)


def gather(reference, indices):
    return ops.take(reference, indices, axis=0)


def one_hot(indices, num_classes):
    return ops.one_hot(indices, num_classes)


def reverse(x, axes):
    return ops.flip(x, axis=axes)


def slice(x, start, size):
    return ops.slice(x, start, size)


def spatial_2d_padding(x, padding=((1, 1), (1, 1)), data_format=None):
    channels_last = (data_format or image_data_format()) == "channels_last"
    pads = (
        [[0, 0], list(padding[0]), list(padding[1]), [0, 0]]
        if channels_last
        else [[0, 0], [0, 0]] + [list(p) for p in padding]
    )
    return ops.pad(x, pads)


def resize_images(x, height_factor, width_factor, data_format, interpolation="nearest"):
    channels_last = data_format == "channels_last"
    rows, cols = (1, 2) if channels_last else (2, 3)
    return ops.repeat(ops.repeat(x, height_factor, axis=rows), width_factor, axis=cols)


# --- products ----------------------------------------------------------------------------------------------------


def dot(x, y):
    return ops.dot(x, y) if len(x.shape) <= 2 and len(y.shape) <= 2 else ops.tensordot(x, y, axes=[[-1], [-2]])


def batch_dot(x, y, axes=None):
    """Keras 2's ``batch_dot`` for the common cases: ``axes`` an int or a pair, batch dimension 0 kept."""
    x_ndim, y_ndim = len(x.shape), len(y.shape)
    if axes is None:
        axes = [x_ndim - 1, y_ndim - 2]
    if isinstance(axes, int):
        axes = (axes, axes)
    a, b = (axis % ndim_ for axis, ndim_ in zip(axes, (x_ndim, y_ndim)))
    if x_ndim == 2 and y_ndim == 2:
        return ops.sum(x * y, axis=a, keepdims=True) if a == b else ops.sum(x * ops.transpose(y), axis=a)
    x = ops.moveaxis(x, a, -1)
    y = ops.moveaxis(y, b, 1)
    x2 = ops.expand_dims(x, -2) if x_ndim == 2 else x
    y2 = ops.expand_dims(y, -1) if y_ndim == 2 else y
    out = ops.matmul(x2, y2) if x_ndim <= 3 and y_ndim <= 3 else ops.einsum("b...i,bi...->b...", x, y)
    if x_ndim == 2:
        out = ops.squeeze(out, -2)
    if y_ndim == 2:
        out = ops.squeeze(out, -1)
    if len(out.shape) == 1:
        out = ops.expand_dims(out, 1)
    return out


# --- random ------------------------------------------------------------------------------------------------------


def random_normal(shape, mean=0.0, stddev=1.0, dtype=None, seed=None):
    return _random.normal(shape, mean=mean, stddev=stddev, dtype=dtype or _FLOATX, seed=seed)


def random_uniform(shape, minval=0.0, maxval=1.0, dtype=None, seed=None):
    return _random.uniform(shape, minval=minval, maxval=maxval, dtype=dtype or _FLOATX, seed=seed)


def random_binomial(shape, p=0.0, dtype=None, seed=None):
    return ops.cast(_random.uniform(shape, dtype=dtype or _FLOATX, seed=seed) < p, dtype or _FLOATX)


def truncated_normal(shape, mean=0.0, stddev=1.0, dtype=None, seed=None):
    return _random.truncated_normal(shape, mean=mean, stddev=stddev, dtype=dtype or _FLOATX, seed=seed)


def dropout(x, level, noise_shape=None, seed=None):
    return _random.dropout(x, level, noise_shape=noise_shape, seed=seed)


# --- losses and activations of Keras 2's backend -----------------------------------------------------------------


def categorical_crossentropy(target, output, from_logits=False, axis=-1):
    return keras.losses.categorical_crossentropy(target, output, from_logits=from_logits, axis=axis)


def binary_crossentropy(target, output, from_logits=False):
    return ops.binary_crossentropy(target, output, from_logits=from_logits)


def in_train_phase(x, alt, training=None):
    return alt() if callable(alt) else alt


def in_test_phase(x, alt, training=None):
    return x() if callable(x) else x


def stop_gradient(variables):
    return ops.stop_gradient(variables)


#: Keras 2's names that exist here (what ``K.*`` code may call).
__all__ = sorted(name for name, value in dict(globals()).items() if callable(value) and not name.startswith("_"))
__all__ = [name for name in __all__ if name not in ("np", "ops", "keras")]
