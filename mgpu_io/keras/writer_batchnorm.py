"""BatchNormalization's moving statistics, updated in training as the file's writer updated them.

Keras 3 updates a ``BatchNormalization`` layer's moving statistics with the batch's mean and *biased* variance,
``moving = moving·momentum + batch·(1 - momentum)``. The writers of the era did not all do that (their sources, read
for each rule; measured on the ``conv_bn`` optimizer fixtures, docs/resuming.md):

- **Keras 2.1.3-2.2.x on TensorFlow** updated both statistics with TensorFlow's zero-debiased moving average
  (``K.moving_average_update``: ``assign_moving_average(x, value, momentum, zero_debias=True)``). Its hidden
  ``biased`` copy and ``local_step`` counter are TensorFlow variables that no ``.h5`` holds, so the writer's own
  reload starts them again from zero: the ``t``-th update after a load sets the statistic to
  ``biased_t / (1 - momentum^t)``, with ``biased_t = biased_(t-1) - (biased_(t-1) - batch)·(1 - momentum)``, and the
  stored statistic does not enter it (the first update sets it to the batch's own). Keras 2.0.x-2.1.2 and 2.3.x
  passed ``zero_debias=False`` (2.3: its own ``assign_sub``), Keras 1.2.2 too.
- **Keras 2.1.4-2.3.x** (every backend but CNTK) multiply the batch variance by ``n / (n - (1 + epsilon))`` before
  the update (``n`` the values reduced per channel: "sample variance - unbiased estimator").
- **TensorFlow's fused batch norm** (``tf.nn.fused_batch_norm``) hands back the batch variance with Bessel's
  correction, ``n / (n - 1)``, and the writers that used it kept it in the moving variance: tf.keras and tf_keras
  for every input where their layer runs fused (4-D with the channels on axis 1 or 3, 5-D on axis 1 or 4 from
  tf.keras 2.6; no ``renorm``, no ``virtual_batch_size``; ``_bessels_correction_test_only = True`` leaves it), and
  standalone Keras 2.1.3+ for 4-D inputs (``_fused_normalize_batch_in_training``; channels-first only where the
  writer had a GPU, as the multi-GPU wrappers did: assumed here). Keras 2.1.4-2.2.x thus corrected twice. Keras
  2.3.x ran fused on TensorFlow 1.x only: the file does not say which TensorFlow, and TensorFlow 1.x is assumed.

The normalization itself (batch statistics in training, moving ones in inference) is the same in all of them and is
left to Keras 3; so is every call with ``training`` false. :func:`follow_writers_batchnorm` gives each
``BatchNormalization`` layer of a model built to train on its writer's update: the layer's ``call`` on the instance
(its class and config are Keras 3's own, so a model saved from it loads in plain Keras 3) runs Keras 3's call and
then assigns the writer's statistics in place of Keras 3's. The zero-debiased average needs one number more than the
layer holds, the updates taken since the load (the ``biased`` copy is the statistic times ``1 - momentum^t``): it is
kept as the state of a seed generator of the layer, which is among the layer's ``variables`` (so JAX's stateless
training carries it) but not among its ``weights`` (so ``get_weights`` and every saved file leave it out), and it
starts from zero at each load, as the writer's own counters did.

Theano and CNTK writers are left to Keras 3's rule (Theano's variance depends on the Theano version; the multi-GPU
wrappers ran on TensorFlow only), as are Keras 1 and Keras 3 writers, whose rule it is.
"""

import functools
import re
from dataclasses import dataclass
from typing import Optional

from mgpu_io.keras._compat import import_keras


@dataclass(frozen=True)
class MovingStatisticsRule:
    """How a writer updated a BatchNormalization layer's moving statistics, where it differs from Keras 3.

    Attributes:
        writer: who, in words (``"Keras 2.2.4 on TensorFlow"``).
        zero_debias: TensorFlow's zero-debiased moving average, its counters from zero at the load.
        sample_variance: the batch variance times ``n / (n - (1 + epsilon))`` (Keras 2.1.4-2.3.x).
        fused_ranks: the input ranks for which the writer's layer ran TensorFlow's fused kernel, whose variance
            carries Bessel's correction ``n / (n - 1)`` (for channels on the first or last axis).
    """

    writer: str
    zero_debias: bool = False
    sample_variance: bool = False
    fused_ranks: tuple = ()

    def fused(self, rank, axis, layer=None):
        """Whether the writer ran the fused kernel for an input of ``rank`` normalized on ``axis`` (``layer``: its
        ``renorm``, which no fused kernel computes).

        Example:
            >>> rule = moving_statistics_rule("2.2.4-tf", "tensorflow")
            >>> rule.fused(4, 3), rule.fused(4, -1), rule.fused(4, 2), rule.fused(2, -1)
            (True, True, False, False)
        """
        if rank not in self.fused_ranks or getattr(layer, "renorm", False):
            return False
        return axis % rank in (1, rank - 1)


def _version(keras_version):
    """``(major, minor, patch)`` of a recorded ``keras_version`` and whether tf.keras wrote it (``-tf``, or 2.4+:
    standalone Keras 2.4 was tf.keras), or ``None``."""
    match = re.match(r"(\d+)\.(\d+)(?:\.(\d+))?", str(keras_version or ""))
    if match is None:
        return None
    number = tuple(int(part or 0) for part in match.groups())
    return number, str(keras_version).endswith("-tf") or (2, 4) <= number[:2] < (3, 0)


def moving_statistics_rule(keras_version, backend=None) -> Optional[MovingStatisticsRule]:
    """The writer's rule for BatchNormalization's moving statistics, from the file's ``keras_version`` and
    ``backend``; ``None`` where it is Keras 3's (or not known).

    Example:
        >>> moving_statistics_rule("2.2.4", "tensorflow")
        MovingStatisticsRule(writer='Keras 2.2.4 on TensorFlow', zero_debias=True, sample_variance=True, fused_ranks=(4,))
        >>> moving_statistics_rule("2.10.0", "tensorflow").fused_ranks
        (4, 5)
        >>> [moving_statistics_rule(v, "tensorflow") for v in ("1.2.2", "2.0.8", "2.1.2", "3.6.0")]
        [None, None, None, None]
        >>> moving_statistics_rule("2.2.4", "theano") is None
        True
    """
    parsed = _version(keras_version)
    if parsed is None:
        return None
    number, tf_keras = parsed
    if tf_keras:
        return MovingStatisticsRule(f"tf.keras {keras_version}", fused_ranks=(4, 5) if number >= (2, 6) else (4,))
    if number[:2] < (2, 1) or number[:2] >= (2, 4) or number < (2, 1, 3) or backend != "tensorflow":
        return None
    return MovingStatisticsRule(
        f"Keras {keras_version} on TensorFlow",
        zero_debias=number[:2] < (2, 3),
        sample_variance=number >= (2, 1, 4),
        fused_ranks=(4,),
    )


def follow_writers_batchnorm(model, keras_version, backend=None):
    """Give every ``BatchNormalization`` layer of ``model`` (nested ones too) its writer's moving-statistics update
    in training (:func:`moving_statistics_rule`); the layers' names, or ``[]`` where the writer's rule is Keras 3's.

    Example:
        >>> import keras, numpy as np
        >>> model = keras.Sequential([keras.Input((4,)), keras.layers.BatchNormalization(momentum=0.9, name="bn")])
        >>> follow_writers_batchnorm(model, "2.2.4", "tensorflow")
        ['bn']
        >>> x = np.arange(8, dtype="float32").reshape(2, 4)
        >>> _ = model(x, training=True)  # the first update after a load: the batch's own statistics
        >>> np.round(model.layers[0].moving_mean.numpy(), 5).tolist()
        [2.0, 3.0, 4.0, 5.0]
    """
    rule = moving_statistics_rule(keras_version, backend)
    if rule is None:
        return []
    keras = import_keras()
    followed = []
    for layer in model._flatten_layers(include_self=False, recursive=True):
        if isinstance(layer, keras.layers.BatchNormalization) and _follow(layer, rule, keras):
            followed.append(layer.name)
    if followed and hasattr(model, "train_function"):
        model.train_function = None  # a function traced before would keep Keras 3's update
    return followed


@functools.cache
def _counter_class():
    """Keras' ``SeedGenerator`` holding a float32 count in its ``state``, in place of a seed (see the module's
    docstring: a layer's seed generators are among its ``variables``, not its ``weights``)."""
    keras = import_keras()

    class UpdatesSinceLoad(keras.random.SeedGenerator):
        def __init__(self, layer):  # not SeedGenerator's: no seed, a count from 0
            self.name, self.backend, self._initial_seed = f"{layer.name}_updates_since_load", keras.backend, None
            self.state = keras.Variable(
                0.0,
                dtype="float32",
                trainable=False,
                aggregation=getattr(layer.moving_mean, "aggregation", "none"),
                name=self.name,
            )

    return UpdatesSinceLoad


def _counter(layer):
    """A count of ``layer``'s updates since the load, from 0, among the layer's ``variables`` only."""
    counter = _counter_class()(layer)
    layer._seed_generators.append(counter)  # the layer's tracker is locked once built; its list is not
    return counter.state


def _follow(layer, rule, keras):
    """Wrap ``layer``'s ``call`` (on the instance) so that training updates its moving statistics by ``rule``;
    whether it did."""
    if getattr(layer.call, "mgpu_io_writer_rule", None) is not None:
        return False
    ops = keras.ops
    original = layer.call
    steps = _counter(layer) if rule.zero_debias else None

    def call(inputs, training=None, mask=None):
        if not (training and layer.trainable) or getattr(layer, "renorm", False):
            return original(inputs, training=training, mask=mask)
        previous = [ops.copy(layer.moving_mean), ops.copy(layer.moving_variance)]  # read now, before Keras assigns
        outputs = original(inputs, training=training, mask=mask)  # Keras 3's normalization and its own update
        x = ops.cast(inputs, keras.backend.result_type(inputs.dtype, "float32"))
        mean, variance = layer._moments(x, mask)  # the batch's statistics that Keras 3 just normalized with
        rank = len(x.shape)
        count = ops.cast(ops.size(x), "float32") / float(x.shape[layer.axis])
        if rule.fused(rank, layer.axis, layer):
            variance = variance * (count / (count - 1.0))
        if rule.sample_variance:
            variance = variance * (count / (count - (1.0 + layer.epsilon)))
        decay = ops.cast(1.0 - layer.momentum, "float32")
        batch = [ops.cast(mean, "float32"), ops.cast(variance, "float32")]
        if steps is None:  # TensorFlow's assign_moving_average: x - (x - value)·(1 - momentum)
            updated = [old - (old - new) * decay for old, new in zip(previous, batch)]
        else:
            done = ops.convert_to_tensor(steps)
            kept = 1.0 - decay
            before, after = 1.0 - ops.power(kept, done), 1.0 - ops.power(kept, done + 1.0)
            updated = []
            for old, new in zip(previous, batch):
                biased = old * before  # the hidden biased copy: the statistic without its debiasing
                updated.append((biased - (biased - new) * decay) / after)
            steps.assign(done + 1.0)
        for variable, value in zip((layer.moving_mean, layer.moving_variance), updated):
            variable.assign(ops.cast(value, variable.dtype))
        return outputs

    call.mgpu_io_writer_rule = rule
    layer.call = call
    return True
