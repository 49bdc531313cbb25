"""mgpu-io's registered objects: the functions that Keras itself wrote into files as Lambdas (defined once, by the
Lambda feature, ``lambdas/by_reference.py``'s ``KNOWN_FUNCTIONS``), Keras 2's ``hard_sigmoid`` (which Keras 3
redefined), the layers Keras 3 removed that a repair rebuilds exactly (``LocallyConnected1D/2D``, written
``mgpu_io>LocallyConnected2D`` by ``conversions/arguments.py``), keras_contrib's ``InstanceNormalization``
(``mgpu_io>InstanceNormalization``, by ``conversions/normalization.py``), tf.keras' cropping layers that may
leave an empty tensor, and the layers of tf.keras' ConvNeXt module (``LayerScale``, ``StochasticDepth``).

A repair writes such a Lambda as a reference to ``mgpu_io>NAME`` (``lambdas/by_reference.py`` recognises it
from the file's metadata); importing this module registers each with Keras, so that Keras 3 resolves the reference
with its safe mode on::

    import keras, mgpu_io.keras.known  # registers mgpu_io>inception_resnet_scale
    model = keras.models.load_model("repaired.h5")

:func:`mgpu_io.load_model` imports it itself.
"""

from typing import TYPE_CHECKING

from mgpu_io.keras._compat import import_keras
from mgpu_io.lambdas.by_reference import KNOWN_FUNCTIONS

keras = import_keras()  # a core-only install gets MissingDependency, naming the extra to install
if TYPE_CHECKING:
    from keras.layers import Cropping1D as _Cropping1D
    from keras.layers import Cropping2D as _Cropping2D
    from keras.layers import Cropping3D as _Cropping3D
    from keras.layers import Layer
else:
    Layer = keras.layers.Layer
    _Cropping1D, _Cropping2D, _Cropping3D = keras.layers.Cropping1D, keras.layers.Cropping2D, keras.layers.Cropping3D


for _known in KNOWN_FUNCTIONS:  # each is defined once, as code, by the Lambda feature (lambdas/by_reference.py)
    keras.saving.register_keras_serializable(package="mgpu_io", name=_known.name)(_known.function)


@keras.saving.register_keras_serializable(package="mgpu_io", name="hard_sigmoid")
def hard_sigmoid(x):
    """Keras 2's (and tf_keras') ``hard_sigmoid``: ``clip(0.2 x + 0.5, 0, 1)``; Keras 3's own has slope 1/6.

    Example:
        >>> [round(float(v), 6) for v in hard_sigmoid(keras.ops.convert_to_tensor([-3.0, 0.0, 1.0, 3.0]))]
        [0.0, 0.5, 0.7, 1.0]
    """
    return keras.ops.clip(0.2 * x + 0.5, 0.0, 1.0)


class _LocallyConnected(Layer):
    """Keras 2's and tf.keras' ``LocallyConnected1D/2D`` (``implementation=1``, ``padding='valid'``), which Keras 3
    removed: an unshared convolution, one kernel per output position, with the old weight layout (kernel
    ``(positions, window * channels, filters)``; bias ``(rows, columns, filters)``, one per output position and
    filter), so the stored weights load as they are. Each window is flattened as tf.keras did: (rows, columns, channels), or channels first."""

    rank: int  # 1 or 2, set by each subclass

    def __init__(
        self,
        filters,
        kernel_size,
        strides=1,
        padding="valid",
        data_format=None,
        activation=None,
        use_bias=True,
        implementation=1,
        **kwargs,
    ):
        for key in [k for k in kwargs if k.endswith(("_initializer", "_regularizer", "_constraint"))]:
            kwargs.pop(key)  # the stored weights replace the initial ones; training options are not kept
        super().__init__(**kwargs)

        def pair(v):
            return tuple(v) if isinstance(v, (list, tuple)) else (v,) * self.rank

        self.filters, self.kernel_size, self.strides = filters, pair(kernel_size), pair(strides)
        self.padding, self.implementation = padding, implementation
        self.data_format = data_format or "channels_last"
        self.activation, self.use_bias = keras.activations.get(activation), use_bias

    def build(self, input_shape):
        first = self.data_format == "channels_first"
        spatial = input_shape[2:] if first else input_shape[1:-1]
        channels = input_shape[1] if first else input_shape[-1]
        self.outputs = tuple((size - k) // s + 1 for size, k, s in zip(spatial, self.kernel_size, self.strides))
        positions = 1
        for size in self.outputs:
            positions *= size
        window = channels
        for k in self.kernel_size:
            window *= k
        self.kernel = self.add_weight(name="kernel", shape=(positions, window, self.filters))
        if self.use_bias:  # as every writer stored it, whatever the data_format
            self.bias = self.add_weight(name="bias", shape=(*self.outputs, self.filters))

    def call(self, inputs):
        first = self.data_format == "channels_first"
        windows = []
        for position in _positions(self.outputs):
            index = [slice(None)] * len(inputs.shape)
            for axis, (i, k, s) in enumerate(zip(position, self.kernel_size, self.strides)):
                index[axis + (2 if first else 1)] = slice(i * s, i * s + k)
            windows.append(keras.ops.reshape(inputs[tuple(index)], (-1, self.kernel.shape[1])))
        outputs = keras.ops.einsum("bpf,pfo->bpo", keras.ops.stack(windows, axis=1), self.kernel)
        outputs = keras.ops.reshape(outputs, (-1, *self.outputs, self.filters))
        if first and self.rank == 2:
            outputs = keras.ops.transpose(outputs, (0, 3, 1, 2))
        if self.use_bias:
            bias = self.bias
            if first and self.rank == 2:
                # Keras 2's and tf.keras' bias_add *reshapes* the (rows, columns, filters) bias to
                # (1, filters, rows, columns) for channels_first, which is not a transpose: kept exactly
                bias = keras.ops.reshape(bias, (1, self.filters, *self.outputs))
            outputs = outputs + bias
        return self.activation(outputs)

    def compute_output_shape(self, input_shape):
        if self.data_format == "channels_first" and self.rank == 2:
            return (input_shape[0], self.filters, *self.outputs)
        return (input_shape[0], *self.outputs, self.filters)

    def get_config(self):
        return dict(
            super().get_config(),
            filters=self.filters,
            kernel_size=self.kernel_size,
            strides=self.strides,
            padding=self.padding,
            data_format=self.data_format,
            use_bias=self.use_bias,
            activation=keras.activations.serialize(self.activation),
            implementation=self.implementation,
        )


def _positions(outputs):
    """Every output position, rows first: ``[(0, 0), (0, 1), ...]``."""
    positions = [()]
    for size in outputs:
        positions = [(*p, i) for p in positions for i in range(size)]
    return positions


@keras.saving.register_keras_serializable(package="mgpu_io", name="LocallyConnected1D")
class LocallyConnected1D(_LocallyConnected):
    """``LocallyConnected1D`` as Keras 2 computed it (see :class:`_LocallyConnected`).

    Example:
        >>> import numpy as np
        >>> layer = LocallyConnected1D(1, 2, use_bias=False)
        >>> layer.build((None, 3, 1))
        >>> _ = layer.kernel.assign(np.ones((2, 2, 1)))
        >>> np.asarray(layer(np.array([[[1.0], [2.0], [3.0]]]))).ravel().tolist()
        [3.0, 5.0]
    """

    rank = 1


@keras.saving.register_keras_serializable(package="mgpu_io", name="LocallyConnected2D")
class LocallyConnected2D(_LocallyConnected):
    """``LocallyConnected2D`` as Keras 2 and tf.keras computed it (see :class:`_LocallyConnected`)."""

    rank = 2


@keras.saving.register_keras_serializable(package="mgpu_io", name="InstanceNormalization")
class InstanceNormalization(Layer):
    """keras_contrib's ``InstanceNormalization`` as it computed: ``(x - mean) / (std + epsilon) * gamma + beta``, the
    statistics over every axis but the batch and ``axis`` (``axis=None``: every axis, one ``gamma`` and ``beta``).

    Keras 3's ``GroupNormalization(groups=-1)`` divides by ``sqrt(var + epsilon)`` instead, which differs by about
    ``epsilon / (2 std)`` of each value; ``conversions/normalization.py`` writes this class for keras_contrib's.

    Example:
        >>> import numpy as np
        >>> layer = InstanceNormalization(axis=-1, epsilon=0.5, center=False, scale=False)
        >>> np.asarray(layer(np.array([[[1.0], [3.0]]]))).ravel().tolist()
        [-0.6666666865348816, 0.6666666865348816]
    """

    def __init__(
        self,
        axis=None,
        epsilon=1e-3,
        center=True,
        scale=True,
        beta_initializer="zeros",
        gamma_initializer="ones",
        beta_regularizer=None,
        gamma_regularizer=None,
        beta_constraint=None,
        gamma_constraint=None,
        **kwargs,
    ):
        super().__init__(**kwargs)
        self.supports_masking = True
        self.axis, self.epsilon, self.center, self.scale = axis, epsilon, center, scale
        self.beta_initializer = keras.initializers.get(beta_initializer)
        self.gamma_initializer = keras.initializers.get(gamma_initializer)
        self.beta_regularizer = keras.regularizers.get(beta_regularizer)
        self.gamma_regularizer = keras.regularizers.get(gamma_regularizer)
        self.beta_constraint = keras.constraints.get(beta_constraint)
        self.gamma_constraint = keras.constraints.get(gamma_constraint)

    def build(self, input_shape):
        shape = (1,) if self.axis is None else (input_shape[self.axis],)
        self.gamma = self.beta = None
        if self.scale:
            self.gamma = self.add_weight(
                name="gamma",
                shape=shape,
                initializer=self.gamma_initializer,
                regularizer=self.gamma_regularizer,
                constraint=self.gamma_constraint,
            )
        if self.center:
            self.beta = self.add_weight(
                name="beta",
                shape=shape,
                initializer=self.beta_initializer,
                regularizer=self.beta_regularizer,
                constraint=self.beta_constraint,
            )

    def call(self, inputs):
        ops, rank = keras.ops, len(inputs.shape)
        kept = None if self.axis is None else self.axis % rank
        axes = [axis for axis in range(1, rank) if axis != kept]
        mean = ops.mean(inputs, axis=axes, keepdims=True)
        normed = (inputs - mean) / (ops.sqrt(ops.var(inputs, axis=axes, keepdims=True)) + self.epsilon)
        broadcast = [1] * rank
        if kept is not None:
            broadcast[kept] = inputs.shape[kept]
        if self.scale:
            normed = normed * ops.reshape(self.gamma, broadcast)
        if self.center:
            normed = normed + ops.reshape(self.beta, broadcast)
        return normed

    def compute_output_shape(self, input_shape):
        return input_shape

    def get_config(self):
        return dict(
            super().get_config(),
            axis=self.axis,
            epsilon=self.epsilon,
            center=self.center,
            scale=self.scale,
            beta_initializer=keras.initializers.serialize(self.beta_initializer),
            gamma_initializer=keras.initializers.serialize(self.gamma_initializer),
            beta_regularizer=keras.regularizers.serialize(self.beta_regularizer),
            gamma_regularizer=keras.regularizers.serialize(self.gamma_regularizer),
            beta_constraint=keras.constraints.serialize(self.beta_constraint),
            gamma_constraint=keras.constraints.serialize(self.gamma_constraint),
        )


class _EmptyCropping:
    """A cropping layer that slices as tf.keras' did, where the cropping leaves a spatial size of 0 or less: an
    empty tensor there (Keras 3's own refuses: "Values in `cropping` argument should be smaller than the
    corresponding spatial dimension"). :func:`mgpu_io.keras.load.build` builds with it only when Keras 3 refuses."""

    def _spans(self):
        pairs = [self.cropping] if len(self.cropping) == 2 and isinstance(self.cropping[0], int) else self.cropping
        first = getattr(self, "data_format", "channels_last") == "channels_first"
        return [
            (axis + (2 if first else 1), slice(start, -end if end else None)) for axis, (start, end) in enumerate(pairs)
        ]

    def compute_output_shape(self, input_shape):
        shape = list(input_shape)
        for axis, span in self._spans():
            if shape[axis] is not None:
                shape[axis] = len(range(shape[axis])[span])
        return tuple(shape)

    def call(self, inputs):
        index = [slice(None)] * len(inputs.shape)
        for axis, span in self._spans():
            index[axis] = span
        return inputs[tuple(index)]


@keras.saving.register_keras_serializable(package="mgpu_io", name="Cropping1D")
class Cropping1D(_EmptyCropping, _Cropping1D):
    """``Cropping1D`` that may leave an empty tensor, as tf.keras' (see :class:`_EmptyCropping`)."""


@keras.saving.register_keras_serializable(package="mgpu_io", name="Cropping2D")
class Cropping2D(_EmptyCropping, _Cropping2D):
    """``Cropping2D`` that may leave an empty tensor, as tf.keras' (see :class:`_EmptyCropping`)."""


@keras.saving.register_keras_serializable(package="mgpu_io", name="Cropping3D")
class Cropping3D(_EmptyCropping, _Cropping3D):
    """``Cropping3D`` that may leave an empty tensor, as tf.keras' (see :class:`_EmptyCropping`).

    Example:
        >>> import numpy as np
        >>> tuple(Cropping3D(((2, 2), (0, 0), (0, 0)))(np.zeros((1, 4, 3, 3, 1))).shape)
        (1, 0, 3, 3, 1)
    """


#: Keras' cropping classes by the name a file gives them, as mgpu-io's that may leave an empty tensor.
EMPTY_CROPPING = {"Cropping1D": Cropping1D, "Cropping2D": Cropping2D, "Cropping3D": Cropping3D}


@keras.saving.register_keras_serializable(package="mgpu_io", name="LayerScale")
class LayerScale(Layer):
    """ConvNeXt's ``LayerScale`` of tf.keras 2.10-2.15 (``keras.applications.convnext``, a layer of that module, not
    of ``keras.layers``): the input times a learned vector ``gamma`` of ``projection_dim`` values, started at
    ``init_values``.

    Example:
        >>> import numpy as np
        >>> layer = LayerScale(0.5, 2)
        >>> np.asarray(layer(np.ones((1, 2), "float32"))).tolist()
        [[0.5, 0.5]]
    """

    def __init__(self, init_values, projection_dim, **kwargs):
        super().__init__(**kwargs)
        self.init_values, self.projection_dim = init_values, projection_dim

    def build(self, input_shape):
        self.gamma = self.add_weight(
            shape=(self.projection_dim,), initializer=keras.initializers.Constant(self.init_values), name="gamma"
        )

    def call(self, x):
        return x * self.gamma

    def get_config(self):
        return {**super().get_config(), "init_values": self.init_values, "projection_dim": self.projection_dim}


@keras.saving.register_keras_serializable(package="mgpu_io", name="StochasticDepth")
class StochasticDepth(Layer):
    """ConvNeXt's ``StochasticDepth`` of tf.keras 2.10-2.15: when training, each sample's residual branch is dropped
    with probability ``drop_path_rate`` (the others scaled by ``1 / (1 - rate)``); when predicting, the identity.

    Example:
        >>> import numpy as np
        >>> np.asarray(StochasticDepth(0.5)(np.ones((1, 2), "float32"))).tolist()
        [[1.0, 1.0]]
    """

    def __init__(self, drop_path_rate, seed=None, **kwargs):
        super().__init__(**kwargs)
        self.drop_path_rate, self.seed = drop_path_rate, seed
        self.seed_generator = keras.random.SeedGenerator(seed)

    def call(self, x, training=None):
        if not training or not self.drop_path_rate:
            return x
        keep = 1.0 - self.drop_path_rate
        shape = (keras.ops.shape(x)[0],) + (1,) * (len(x.shape) - 1)
        mask = keras.ops.floor(keep + keras.random.uniform(shape, seed=self.seed_generator, dtype=x.dtype))
        return x / keep * mask

    def get_config(self):
        return {**super().get_config(), "drop_path_rate": self.drop_path_rate, "seed": self.seed}


#: mgpu-io's registered name -> function: every Lambda function in KNOWN_FUNCTIONS (lambdas/by_reference.py) and
#: Keras 2's hard_sigmoid (conversions/hard_sigmoid.py).
FUNCTIONS = {**{known.registered: known.function for known in KNOWN_FUNCTIONS}, "mgpu_io>hard_sigmoid": hard_sigmoid}


from mgpu_io.keras import tfops  # noqa: E402, F401  (registers mgpu_io>TFOp: TensorFlow ops of tf.keras files)
