"""How a loaded model computes on the machine it runs on: its writer's function, by a route this machine's Keras 3
runs, at the writer's speed. Nothing here changes a layer's class or config, so a model saved from it (``.h5``,
``.keras``, exports) keeps Keras' own classes and the writer's ``data_format`` and loads on a GPU unchanged.

- **channels_first on a CPU-only TensorFlow.** TensorFlow's CPU kernels without oneDNN (AMD CPUs, or
  ``TF_ENABLE_ONEDNN_OPTS=0``) run convolutions in ``NHWC`` only: ``Conv1D/2D``, every ``Conv*Transpose`` and
  ``ConvLSTM1D/2D`` fail with ``UnimplementedError``/``InvalidArgumentError``. Keras 3 already transposes its
  channels_first pooling, depthwise and separable convolutions on a CPU-only runtime (its ``_cpu_only`` rule);
  :func:`channels_first_on_cpu` extends that same rule to its ``conv`` and ``conv_transpose`` ops: the input is
  transposed to channels_last, the op runs there, and its output is transposed back: the same convolution
  (the layer sweep's channels_first cases predict their writers' outputs within 1e-5 and train a step).
- **TimeDistributed as one batched call.** Keras 3's ``TimeDistributed`` calls its layer once per timestep when the
  time axis is static, a Python loop that ``predict`` traces step by step (9 s for 1,000 steps of a ``Dense``).
  Keras 2 and tf.keras folded time into the batch (a reshape) and called the layer once: the loaded model does that.
- **Recurrent loops called eagerly run compiled.** ``model(x)`` outside ``predict`` runs Keras 3's recurrent loop
  one eager op at a time (about 270 µs an op); each ``RNN``'s inner loop then runs as one ``tf.function``, traced
  once per input signature, as ``predict`` runs it. Training calls (``training=True``) keep Keras' own eager loop,
  where a dropout mask must be new on every call.

:func:`adapt` applies what this backend and machine need and returns one line per change, which
:func:`mgpu_io.load_model` logs (logger ``mgpu_io``, level INFO).
"""

import functools
import inspect as _inspect
import logging

from mgpu_io.anykeras.wrapper import all_layers
from mgpu_io.keras._compat import tensorflow_nn

log = logging.getLogger("mgpu_io")

#: The ops of Keras 3's TensorFlow backend that TensorFlow's CPU kernels run channels_last only (measured on
#: TensorFlow 2.21 without oneDNN: ``conv`` for 3-D/4-D inputs, ``conv_transpose`` for every rank).
CHANNELS_LAST_ONLY_OPS = ("conv", "conv_transpose")


def adapt(model, keras):
    """Make ``model`` (just loaded) compute its writer's function fast on this machine; one line per change.

    Example:
        >>> import keras, numpy as np
        >>> model = keras.Sequential([keras.Input((3, 8, 8)), keras.layers.Conv2D(2, 3, data_format="channels_first")])
        >>> notes = adapt(model, keras)
        >>> model.predict(np.ones((1, 3, 8, 8)), verbose=0).shape
        (1, 2, 6, 6)
    """
    notes = []
    layers = list(_every_layer(model))
    first = sorted({layer.name for layer in layers if getattr(layer, "data_format", None) == "channels_first"})
    if first and keras.backend.backend() == "tensorflow" and channels_first_on_cpu():
        notes.append(
            f"Layers {first} compute channels_first; TensorFlow's CPU kernels run convolutions channels_last only, "
            f"so on this CPU-only runtime each convolution runs transposed to channels_last and back (the same "
            f"arithmetic; the layers and their data_format are unchanged)."
        )
    batched = [layer.name for layer in layers if _fold_time_into_batch(layer, keras)]
    if batched:
        notes.append(
            f"TimeDistributed layers {batched} call their layer once over batch x time, as Keras 2 and tf.keras "
            f"did, not once per timestep."
        )
    if keras.backend.backend() == "tensorflow":
        compiled = [layer.name for layer in layers if _compile_eager_loop(layer, keras)]
        if compiled:
            notes.append(f"Recurrent layers {compiled} run their loop as one compiled function when called eagerly.")
    for note in notes:
        log.info("%s: %s", model.name, note)
    return notes


def _every_layer(model):
    """Every layer of ``model``, nested models' and wrappers' inner layers included, each once."""
    seen = set()
    for layer in all_layers(model):
        for inner in (
            layer,
            getattr(layer, "layer", None),
            getattr(layer, "forward_layer", None),
            getattr(layer, "backward_layer", None),
        ):
            if inner is not None and id(inner) not in seen:
                seen.add(id(inner))
                yield inner


def cpu_only():
    """Whether TensorFlow sees CPU devices only (Keras 3's own rule where it has one)."""
    nn = tensorflow_nn()
    rule = getattr(nn, "_cpu_only", None)
    if rule is not None:
        return rule()
    import tensorflow as tf

    return all(device.device_type == "CPU" for device in tf.config.list_logical_devices())


def channels_first_on_cpu():
    """Let Keras 3's TensorFlow backend run channels_first convolutions on a CPU-only runtime, transposed to
    channels_last and back (:data:`CHANNELS_LAST_ONLY_OPS`); once per process. Returns whether it runs them now:
    ``False`` where this Keras has none of these ops (a Keras that moved them: the layers then fail as they would
    in plain Keras)."""
    nn = tensorflow_nn()
    if all(getattr(getattr(nn, name, None), "mgpu_io_channels_last", False) for name in CHANNELS_LAST_ONLY_OPS):
        return True
    if not all(callable(getattr(nn, name, None)) for name in CHANNELS_LAST_ONLY_OPS):
        return False
    for name in CHANNELS_LAST_ONLY_OPS:
        original = getattr(nn, name)
        if not getattr(original, "mgpu_io_channels_last", False):
            setattr(nn, name, _transposed_on_cpu(original))
    return True


def _transposed_on_cpu(op):
    """``op`` (``conv`` or ``conv_transpose`` of Keras 3's TensorFlow backend), which runs a channels_first input
    transposed to channels_last where TensorFlow sees CPUs only."""
    import tensorflow as tf

    signature = _inspect.signature(op)

    @functools.wraps(op)
    def transposed(*args, **kwargs):
        bound = signature.bind(*args, **kwargs)
        data_format = bound.arguments.get("data_format")
        if data_format is None:
            import keras

            data_format = keras.config.image_data_format()
        if data_format != "channels_first" or not cpu_only():
            return op(*args, **kwargs)
        inputs = tf.convert_to_tensor(bound.arguments["inputs"])
        rank = len(inputs.shape)
        bound.arguments["inputs"] = tf.transpose(inputs, (0, *range(2, rank), 1))
        bound.arguments["data_format"] = "channels_last"
        outputs = op(*bound.args, **bound.kwargs)
        return tf.transpose(outputs, (0, rank - 1, *range(1, rank - 1)))

    transposed.mgpu_io_channels_last = True
    return transposed


def _fold_time_into_batch(layer, keras):
    """Give a ``TimeDistributed`` layer Keras 2's and tf.keras' call: time folded into the batch, its layer called
    once. Not for a stateful layer, whose state runs along the batch. Returns whether it did."""
    if not isinstance(layer, keras.layers.TimeDistributed) or getattr(layer.layer, "stateful", False):
        return False
    if "call" in vars(layer):  # already given it
        return False
    ops, inner = keras.ops, layer.layer

    def call(inputs, training=None, mask=None):
        shape = ops.shape(inputs)
        kwargs = {}
        if inner._call_has_training_arg:
            kwargs["training"] = training
        if mask is not None and inner._call_has_mask_arg:
            kwargs["mask"] = ops.reshape(mask, (-1, *ops.shape(mask)[2:]))
        outputs = inner.call(ops.reshape(inputs, (-1, *shape[2:])), **kwargs)
        return keras.tree.map_structure(
            lambda output: ops.reshape(output, (shape[0], shape[1], *ops.shape(output)[1:])), outputs
        )

    layer.call = call
    return True


def _compile_eager_loop(layer, keras):
    """Run a Keras 3 ``RNN``'s inner loop as one ``tf.function`` when it is called eagerly and not to train.
    Returns whether it did."""
    if not isinstance(layer, keras.layers.RNN) or "inner_loop" in vars(layer):
        return False
    import tensorflow as tf

    loop = layer.inner_loop
    compiled = tf.function(loop, reduce_retracing=True, autograph=False)

    def inner_loop(sequences, initial_state, mask, training=False):
        if tf.executing_eagerly() and not _training(training):
            return compiled(sequences, initial_state, mask, training=bool(training))
        return loop(sequences, initial_state, mask, training=training)

    layer.inner_loop = inner_loop
    return True


def _training(training):
    """Whether ``training`` (a Python bool, ``None`` or a tensor) may be true: a tensor counts as training."""
    if training is None or isinstance(training, bool):
        return bool(training)
    return True
