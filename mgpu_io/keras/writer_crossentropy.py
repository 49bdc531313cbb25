"""Cross-entropy computed from the model's probabilities, as standalone Keras 1 and 2.0-2.2 computed it.

Keras 3 on TensorFlow computes a cross-entropy whose predictions come out of a ``softmax`` or ``sigmoid`` from the
logits underneath (the activation marks its output with ``_keras_logits``; an op of that type is looked through
too), as tf.keras did (TF 1.15's ``backend.categorical_crossentropy``: ``output.op.type == 'Softmax'``) and as Keras
2.3.x did through tf.keras' backend. Standalone Keras 1 and 2.0-2.2 on TensorFlow computed it from the
probabilities: ``output /= reduce_sum(output)``, ``clip(output, ε, 1 - ε)``, ``-reduce_sum(target·log(output))``
(``binary_crossentropy``: the clipped probabilities taken back to logits; ``sparse_categorical_crossentropy``: their
log). The loss is the same to rounding, and nothing at all where a probability is clipped (its gradient is zero in
the writer's arithmetic); its gradient's rounding differs, which an optimizer with tiny accumulators scales up:
RMSprop (ρ 0.8, ε 1e-7/1e-8) on the convolution kernels before a BatchNormalization of the ``conv_bn`` fixtures,
whose accumulators are 1e-14 to 1e-11, took steps 0.0065 (Keras 2.1.6, 2.2.4) and 0.10 (Keras 2.0.8) of the change
off the writer's with the logits, 0.00015 and 0.0011 from the probabilities (docs/resuming.md).

:func:`follow_writers_crossentropy` gives a model built to train on (its writer one of those) the writer's route:
its ``compute_loss``, on the instance, hands the losses the predictions as plain tensors (``tf.identity``, the
Keras mask kept), so that Keras 3's own loss functions take their probabilities' branch. The compiled losses, the
config and anything saved are unchanged.

On the other backends Keras 3 computes every cross-entropy from the probabilities already, but clips them with its
backend's ``clip``: JAX's ``jnp.clip`` (``minimum`` of ``maximum``, whose gradients split a tie) hands a probability
that lands exactly on the bound (``1 - 1e-7`` is float32's ``0.99999988``) half its gradient, where TensorFlow's
``clip_by_value`` hands it the whole (its ``Minimum``/``Maximum`` gradients go to ``x`` where ``x <= y``/``x >= y``).
A model trained 1000 steps is confident, and its softmax lands on the bound: a ``conv_bn`` fixture's first batch has
a sample there (16 in the batch, 8 more above it), and RMSprop's tiny accumulators take the halved gradients 0.0084 of
the change off the writer's (Keras 2.1.6, 2.2.4; 0.00013 with the whole). There the model's compiled losses, before
their first call, are the writer's functions (:func:`writers_loss`: categorical, sparse categorical and binary
cross-entropy as Keras 2's TensorFlow backend computed them, written in ``keras.ops`` with TensorFlow's clip), under
the same names; the compile config, which is what a saved file holds, still names Keras 3's.
"""

import functools
import re

from mgpu_io.keras._compat import import_keras


def computes_from_probabilities(keras_version):
    """Whether the writer of ``keras_version`` computed cross-entropies from the probabilities on TensorFlow:
    standalone Keras 1 and 2.0-2.2 (not tf.keras, ``-tf``; not 2.3, which called tf.keras' backend).

    Example:
        >>> [computes_from_probabilities(v) for v in ("1.2.2", "2.0.8", "2.2.4", "2.3.1", "2.2.4-tf", "2.10.0", "")]
        [True, True, True, False, False, False, False]
    """
    match = re.match(r"(\d+)\.(\d+)", str(keras_version or ""))
    if match is None or str(keras_version).endswith("-tf"):
        return False
    return (int(match.group(1)), int(match.group(2))) < (2, 3)


def follow_writers_crossentropy(model, keras_version):
    """Make ``model``'s losses see its predictions as the writer's did (see the module's docstring); whether it did
    (``False`` where the writer computed from logits too, or the model's losses were built before).

    Example:
        >>> import keras, numpy as np
        >>> model = keras.Sequential([keras.Input((2,)), keras.layers.Dense(2, activation="softmax")])
        >>> model.set_weights([np.zeros((2, 2)), np.array([0.0, 40.0])])  # the first class at e^-40
        >>> model.compile(loss="categorical_crossentropy")
        >>> x, y = np.zeros((1, 2)), np.array([[1.0, 0.0]])
        >>> round(float(model.evaluate(x, y, verbose=0)), 3)  # Keras 3: from the logits
        40.0
        >>> follow_writers_crossentropy(model, "2.2.4")
        True
        >>> round(float(model.evaluate(x, y, verbose=0)), 3)  # Keras 2: the probability, clipped to 1e-7
        16.118
    """
    keras = import_keras()
    if not computes_from_probabilities(keras_version):
        return False
    if keras.backend.backend() != "tensorflow":
        return _writers_functions(model, keras)
    if getattr(model.compute_loss, "mgpu_io_probabilities", False):
        return True
    import tensorflow as tf

    compute_loss = model.compute_loss

    def probabilities(tensor):
        if not tf.is_tensor(tensor):
            return tensor
        plain = tf.identity(tensor)  # neither _keras_logits nor a Softmax/Sigmoid op to look through
        mask = getattr(tensor, "_keras_mask", None)
        if mask is not None:
            plain._keras_mask = mask
        return plain

    def from_probabilities(x=None, y=None, y_pred=None, sample_weight=None, training=True):
        y_pred = keras.tree.map_structure(probabilities, y_pred)
        return compute_loss(x=x, y=y, y_pred=y_pred, sample_weight=sample_weight, training=training)

    from_probabilities.mgpu_io_probabilities = True
    model.compute_loss = from_probabilities
    model.train_function = model.test_function = None  # a function traced before would keep Keras' route
    return True


def _writers_functions(model, keras):
    """Give ``model``'s compiled losses, not yet built, the writer's functions in place of Keras 3's three
    cross-entropies, under the same names (Keras builds its losses from ``compile``'s ``loss`` at their first call,
    the compile config keeps what ``compile`` was given); whether any was replaced."""
    compiled = getattr(model, "_compile_loss", None)
    if compiled is None or getattr(compiled, "built", True) or not hasattr(compiled, "_user_loss"):
        return False
    replaced = []

    def writers(loss):
        function = writers_loss(loss)
        if function is None:
            return loss
        replaced.append(loss)
        return _loss_class()(function, name=loss if isinstance(loss, str) else function.__name__)

    compiled._user_loss = keras.tree.map_structure(writers, compiled._user_loss)
    return bool(replaced)


def writers_loss(loss):
    """The writer's function for a compiled loss's name (or Keras 3's function) that is one of Keras 3's three
    cross-entropies; ``None`` for any other loss.

    Example:
        >>> import keras, numpy as np
        >>> writers = writers_loss("categorical_crossentropy")
        >>> y_true, y_pred = np.array([[0.0, 1.0], [1.0, 0.0]]), np.array([[0.3, 0.7], [1.0, 0.0]], "float32")
        >>> ours, theirs = writers(y_true, y_pred), keras.losses.categorical_crossentropy(y_true, y_pred)
        >>> np.testing.assert_allclose(ours, theirs, rtol=1e-6)
        >>> writers_loss("mse") is None
        True
    """
    keras = import_keras()
    if not (isinstance(loss, str) or callable(loss)) or isinstance(loss, keras.losses.Loss):
        return None
    try:
        function = keras.losses.get(loss)
    except (ValueError, TypeError):  # "crossentropy", which Keras resolves from the shapes
        return None
    return _writers_functions_by_keras().get(function)


@functools.cache
def _loss_class():
    """A Keras 3 ``Loss`` computing a function (Keras' own ``LossFunctionWrapper`` is not public)."""
    keras = import_keras()

    class WritersLoss(keras.losses.Loss):
        def __init__(self, function, name):
            super().__init__(name=name)
            self.function = function

        def call(self, y_true, y_pred):
            return self.function(y_true, y_pred)

    return WritersLoss


@functools.cache
def _writers_functions_by_keras():
    keras = import_keras()
    return {
        keras.losses.categorical_crossentropy: categorical_crossentropy,
        keras.losses.sparse_categorical_crossentropy: sparse_categorical_crossentropy,
        keras.losses.binary_crossentropy: binary_crossentropy,
    }


def clip(x, low, high):
    """``x`` clipped to ``[low, high]`` with TensorFlow's gradient: the whole gradient where ``x`` is in the range,
    its bounds included, none outside (JAX's ``jnp.clip`` hands a value on a bound half of it).

    Example:
        >>> import numpy as np
        >>> np.asarray(clip(np.array([-1.0, 0.0, 0.5, 1.0, 2.0], "float32"), 0.0, 1.0)).tolist()
        [0.0, 0.0, 0.5, 1.0, 1.0]
    """
    ops = import_keras().ops
    x = ops.convert_to_tensor(x)
    inside = ops.logical_and(ops.greater_equal(x, low), ops.less_equal(x, high))
    return ops.where(inside, x, ops.stop_gradient(ops.clip(x, low, high)))


def categorical_crossentropy(y_true, y_pred):
    """Keras 2's ``K.categorical_crossentropy`` on TensorFlow: the probabilities normalized, clipped, their log."""
    keras = import_keras()
    ops, epsilon = keras.ops, keras.backend.epsilon()
    y_pred = ops.convert_to_tensor(y_pred)
    y_pred = clip(y_pred / ops.sum(y_pred, axis=-1, keepdims=True), epsilon, 1.0 - epsilon)
    return -ops.sum(ops.cast(y_true, y_pred.dtype) * ops.log(y_pred), axis=-1)


def sparse_categorical_crossentropy(y_true, y_pred):
    """Keras 2's ``K.sparse_categorical_crossentropy`` on TensorFlow: the log of the clipped probabilities taken as
    logits by ``sparse_softmax_cross_entropy_with_logits``."""
    keras = import_keras()
    ops, epsilon = keras.ops, keras.backend.epsilon()
    y_pred, labels = ops.convert_to_tensor(y_pred), ops.convert_to_tensor(y_true)
    if len(labels.shape) == len(y_pred.shape) and labels.shape[-1] == 1:
        labels = ops.squeeze(labels, axis=-1)
    logits = ops.log(clip(y_pred, epsilon, 1.0 - epsilon))
    one_hot = ops.one_hot(ops.cast(labels, "int32"), y_pred.shape[-1], dtype=y_pred.dtype)
    return -ops.sum(one_hot * ops.log_softmax(logits, axis=-1), axis=-1)


def binary_crossentropy(y_true, y_pred):
    """Keras 2's ``binary_crossentropy`` on TensorFlow: the clipped probabilities taken back to logits,
    ``sigmoid_cross_entropy_with_logits``, the mean over the last axis."""
    keras = import_keras()
    ops, epsilon = keras.ops, keras.backend.epsilon()
    y_pred = clip(ops.convert_to_tensor(y_pred), epsilon, 1.0 - epsilon)
    logits, labels = ops.log(y_pred / (1.0 - y_pred)), ops.cast(y_true, y_pred.dtype)
    losses = ops.relu(logits) - logits * labels + ops.log1p(ops.exp(-ops.abs(logits)))
    return ops.mean(losses, axis=-1)
