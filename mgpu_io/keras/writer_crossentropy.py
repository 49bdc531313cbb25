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
config and anything saved are unchanged. On JAX Keras 3 computes every cross-entropy from the probabilities already.
"""

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
    (``False`` where the writer computed from logits too, or the backend is not TensorFlow).

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
    if not computes_from_probabilities(keras_version) or keras.backend.backend() != "tensorflow":
        return False
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
