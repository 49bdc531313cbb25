"""The update rules of Keras 1/2 and tf.keras up to TF 2.10, as Keras 3 optimizers: training resumes as it ran.

Keras 3's optimizers compute three of the era's rules differently (docs/resuming.md):

- ``RMSprop`` divides by ``√(v+ε)``; Keras 1/2 and tf.keras' RMSprop without momentum (TF 1.x to 2.10) by
  ``√v+ε``. Where the accumulated squares are small (tiny gradients, a long run), ε dominates and the steps differ
  by a large factor. tf.keras' RMSprop with momentum ran TF's ``ApplyRMSProp``, ε inside, as Keras 3 does.
- ``Adagrad``: the same ε placement.
- ``Nadam``'s momentum schedule is ``β₁(1 - ½·0.96^t)`` in Keras 3, ``β₁(1 - ½·0.96^(0.004·t))`` in Keras 2 and
  tf.keras up to 2.10 (``schedule_decay``).

:class:`LegacyRMSprop`, :class:`LegacyAdagrad` and :class:`LegacyNadam` (registered as ``mgpu_io>LegacyRMSprop``
and so on) are Keras 3's classes with the writer's arithmetic, on ``keras.ops`` (every backend); they keep Keras 3's
variable names, so their state saves and loads as Keras 3's. Keras 2's time-based ``decay`` (``lr / (1 + decay·t)``,
``t`` the steps taken) is Keras 3's own ``InverseTimeDecay`` with ``decay_steps=1``, continuing from the restored step
count. The other optimizers (SGD, Adam, Adamax, Adadelta, Ftrl) compute the writer's rule in Keras 3's own class.
"""

import functools
import warnings

from mgpu_io.errors import MgpuIOWarning
from mgpu_io.format.optimizer import KERAS2_RULES, update_rule
from mgpu_io.keras._compat import import_keras

#: Arguments of the writers' optimizer configs that no Keras 3 optimizer takes.
_DROPPED = ("decay", "is_legacy_optimizer", "jit_compile", "lr", "schedule_decay")


@functools.cache
def legacy_classes():
    """``{name: class}`` of the faithful optimizers, defined and registered with Keras on first use.

    Example:
        >>> sorted(legacy_classes())
        ['LegacyAdagrad', 'LegacyNadam', 'LegacyRMSprop']
    """
    keras = import_keras()
    ops = keras.ops
    register = functools.partial(keras.saving.register_keras_serializable, package="mgpu_io")

    @register()
    class LegacyRMSprop(keras.optimizers.RMSprop):
        """Keras 2's RMSprop (and tf.keras' up to TF 2.10 without momentum): ``lr·g / (√v + ε)``.

        Example:
            >>> import keras, numpy as np
            >>> w = keras.Variable(np.ones(2, "float32"))
            >>> optimizer = legacy_classes()["LegacyRMSprop"](learning_rate=0.1, epsilon=1.0)
            >>> optimizer.apply([np.full(2, 0.5, "float32")], [w])
            >>> round(float(w[0]), 6)  # 1 - 0.1·0.5 / (√(0.1·0.25) + 1)
            0.95635
        """

        def update_step(self, gradient, variable, learning_rate):
            lr = ops.cast(learning_rate, variable.dtype)
            gradient = ops.cast(gradient, variable.dtype)
            index = self._get_variable_index(variable)
            velocity = self._velocities[index]
            rho = self.rho
            self.assign(velocity, ops.add(ops.multiply(rho, velocity), ops.multiply(1 - rho, ops.square(gradient))))
            denominator = velocity
            if self.centered:
                average_grad = self._average_gradients[index]
                self.assign(average_grad, ops.add(ops.multiply(rho, average_grad), ops.multiply(1 - rho, gradient)))
                denominator = ops.subtract(velocity, ops.square(average_grad))
            increment = ops.divide(ops.multiply(lr, gradient), ops.add(ops.sqrt(denominator), self.epsilon))
            if self.momentum > 0:
                momentum = self._momentums[index]
                self.assign(momentum, ops.add(ops.multiply(self.momentum, momentum), increment))
                self.assign_sub(variable, momentum)
            else:
                self.assign_sub(variable, increment)

    @register()
    class LegacyAdagrad(keras.optimizers.Adagrad):
        """Keras 2's Adagrad (and tf.keras' up to TF 2.10): ``lr·g / (√a + ε)``.

        Example:
            >>> import keras, numpy as np
            >>> w = keras.Variable(np.ones(1, "float32"))
            >>> optimizer = legacy_classes()["LegacyAdagrad"](0.1, initial_accumulator_value=0.0, epsilon=1.0)
            >>> optimizer.apply([np.full(1, 2.0, "float32")], [w])
            >>> round(float(w[0]), 6)  # 1 - 0.1·2 / (√4 + 1)
            0.933333
        """

        def update_step(self, gradient, variable, learning_rate):
            lr = ops.cast(learning_rate, variable.dtype)
            gradient = ops.cast(gradient, variable.dtype)
            accumulator = self._accumulators[self._get_variable_index(variable)]
            self.assign_add(accumulator, ops.square(gradient))
            self.assign_sub(
                variable, ops.divide(ops.multiply(lr, gradient), ops.add(ops.sqrt(accumulator), self.epsilon))
            )

    @register()
    class LegacyNadam(keras.optimizers.Nadam):
        """Keras 2's Nadam (and tf.keras' up to TF 2.10): the momentum schedule ``β₁(1 - ½·0.96^(d·t))`` with
        ``d = schedule_decay`` (0.004), and its running product (Keras 2's ``m_schedule``, tf.keras'
        ``momentum_cache``).

        Example:
            >>> optimizer = legacy_classes()["LegacyNadam"](learning_rate=0.002, schedule_decay=0.004)
            >>> optimizer.get_config()["schedule_decay"]
            0.004
        """

        def __init__(self, *args, schedule_decay=0.004, **kwargs):
            super().__init__(*args, **kwargs)
            self.schedule_decay = schedule_decay

        def _factor(self, step, dtype):
            power = ops.multiply(ops.cast(self.schedule_decay, dtype), ops.cast(step, dtype))
            return ops.multiply(ops.cast(self.beta_1, dtype), 1.0 - 0.5 * ops.power(ops.cast(0.96, dtype), power))

        def _backend_update_step(self, grads, trainable_variables, learning_rate):
            dtype = self._u_product.dtype
            self.assign(self._u_product, self._u_product * self._factor(self.iterations + 1, dtype))
            keras.optimizers.Optimizer._backend_update_step(self, grads, trainable_variables, learning_rate)

        def update_step(self, gradient, variable, learning_rate):
            dtype = variable.dtype
            lr = ops.cast(learning_rate, dtype)
            gradient = ops.cast(gradient, dtype)
            local_step = ops.cast(self.iterations + 1, dtype)
            u_t = self._factor(self.iterations + 1, dtype)
            u_t_1 = self._factor(self.iterations + 2, dtype)
            u_product_t = ops.cast(self._u_product, dtype)
            u_product_t_1 = u_product_t * u_t_1
            beta_1, beta_2 = ops.cast(self.beta_1, dtype), ops.cast(self.beta_2, dtype)
            index = self._get_variable_index(variable)
            m, v = self._momentums[index], self._velocities[index]
            self.assign_add(m, ops.multiply(ops.subtract(gradient, m), 1 - beta_1))
            self.assign_add(v, ops.multiply(ops.subtract(ops.square(gradient), v), 1 - beta_2))
            m_hat = ops.add(
                ops.divide(ops.multiply(u_t_1, m), 1 - u_product_t_1),
                ops.divide(ops.multiply(1 - u_t, gradient), 1 - u_product_t),
            )
            v_hat = ops.divide(v, 1 - ops.power(beta_2, local_step))
            self.assign_sub(variable, ops.divide(ops.multiply(m_hat, lr), ops.add(ops.sqrt(v_hat), self.epsilon)))

        def get_config(self):
            return {**super().get_config(), "schedule_decay": self.schedule_decay}

    return {cls.__name__: cls for cls in (LegacyRMSprop, LegacyAdagrad, LegacyNadam)}


def rebuilt_optimizer(optimizer_config, keras_version, faithful=True):
    """``(optimizer, rule)``: the stored optimizer as a Keras 3 optimizer computing its writer's update rule, and
    the :class:`~mgpu_io.format.optimizer.UpdateRule` kept; ``(None, rule)`` for a class mgpu-io leaves to Keras.

    With ``faithful=False`` Keras 3's own class is built (what plain Keras 3 loads from a ``.keras`` file), with the
    writer's ``decay`` kept as ``InverseTimeDecay``.

    Example:
        >>> optimizer, rule = rebuilt_optimizer({"class_name": "RMSprop", "config": {"learning_rate": 0.002,
        ...     "rho": 0.9, "epsilon": 1e-7, "decay": 0.001}}, "2.2.4")
        >>> type(optimizer).__name__, rule.family
        ('LegacyRMSprop', 'Keras 2')
    """
    rule = update_rule(optimizer_config, keras_version)
    if rule is None:
        return None, None
    keras = import_keras()
    config = dict(optimizer_config.get("config") or {})
    learning_rate = config.get("learning_rate", config.get("lr"))
    schedule_decay = config.get("schedule_decay", config.get("decay"))  # tf.keras' Nadam: `decay` (0.004)
    for key in _DROPPED:
        config.pop(key, None)
    if rule.family == KERAS2_RULES and rule.optimizer == "Adagrad" and "initial_accumulator_value" not in config:
        config["initial_accumulator_value"] = 0.0  # Keras 1/2 started Adagrad's accumulators at zero
    if learning_rate is not None:
        config["learning_rate"] = learning_rate
        if rule.decay:
            if isinstance(learning_rate, (int, float)):
                config["learning_rate"] = keras.optimizers.schedules.InverseTimeDecay(
                    float(learning_rate), decay_steps=1, decay_rate=rule.decay
                )
            else:
                warnings.warn(
                    f"The saved {rule.optimizer} has both a learning-rate schedule and decay={rule.decay:g}; Keras 3 "
                    f"cannot apply both, and the model trains with the schedule alone.",
                    MgpuIOWarning,
                    stacklevel=4,
                )
    if rule.faithful and faithful:
        cls = legacy_classes()[rule.faithful]
        if rule.optimizer == "Nadam" and schedule_decay is not None:
            config["schedule_decay"] = schedule_decay
    else:
        cls = getattr(keras.optimizers, rule.optimizer)
    try:
        return cls.from_config(config), rule
    except (ValueError, TypeError, KeyError, AttributeError):
        return None, rule  # Keras' own reading of the config decides, and warns


def dense_gradients(optimizer):
    """Apply every gradient densely, as the writers of Keras 2's rules did: an ``Embedding``'s gradient reaches
    Keras 3 on TensorFlow as ``tf.IndexedSlices``, whose accumulators Keras 3 updates only in the rows the batch
    used (``scatter_add``), where Keras 1/2 on TensorFlow 1.x turned it into a dense tensor and decayed every row.
    Measured on the optimizer fixtures of Keras 2.0.8-2.2.4 and tf.keras 1.15 (an LSTM stack, a bidirectional GRU and
    a sequence-to-sequence model, each with an ``Embedding``): 0.008-0.62 of the writer's change off, within 1e-3
    after. Other backends compute embeddings' gradients densely already."""
    keras = import_keras()
    if keras.backend.backend() != "tensorflow" or getattr(optimizer.apply, "mgpu_io_dense", False):
        return
    import tensorflow as tf

    apply = optimizer.apply

    def dense_apply(grads, trainable_variables=None):
        grads = [tf.convert_to_tensor(g) if isinstance(g, tf.IndexedSlices) else g for g in grads]
        return apply(grads, trainable_variables)

    dense_apply.mgpu_io_dense = True
    optimizer.apply = dense_apply
