"""The functions that Keras itself wrote into files, as mgpu-io's own registered copies (and Keras 2's
``hard_sigmoid``, which Keras 3 redefined).

A repair writes such a Lambda as a reference to ``mgpu_io>NAME`` (``format/conversions/lambdas.py`` recognises it
from the file's metadata and lists it in ``KNOWN_FUNCTIONS``); importing this module registers each copy with Keras,
so that Keras 3 resolves the reference with its safe mode on::

    import keras, mgpu_io.keras.known  # registers mgpu_io>inception_resnet_scale
    model = keras.models.load_model("repaired.h5")

:func:`mgpu_io.load_model` imports it itself. Each copy is the writer's own source, in Keras 3 operations.
"""

from mgpu_io.keras._compat import import_keras

keras = import_keras()  # a core-only install gets MissingDependency, naming the extra to install


@keras.saving.register_keras_serializable(package="mgpu_io", name="inception_resnet_scale")
def inception_resnet_scale(inputs, scale):
    """InceptionResNetV2's residual scaling, as keras_applications wrote it:
    ``lambda inputs, scale: inputs[0] + inputs[1] * scale``.

    Example:
        >>> import numpy as np
        >>> float(inception_resnet_scale([np.float32(1.0), np.float32(2.0)], scale=0.5))
        2.0
    """
    return inputs[0] + inputs[1] * scale


@keras.saving.register_keras_serializable(package="mgpu_io", name="hard_sigmoid")
def hard_sigmoid(x):
    """Keras 2's (and tf_keras') ``hard_sigmoid``: ``clip(0.2 x + 0.5, 0, 1)``; Keras 3's own has slope 1/6.

    Example:
        >>> [round(float(v), 6) for v in hard_sigmoid(keras.ops.convert_to_tensor([-3.0, 0.0, 1.0, 3.0]))]
        [0.0, 0.5, 0.7, 1.0]
    """
    return keras.ops.clip(0.2 * x + 0.5, 0.0, 1.0)


#: mgpu-io's registered name -> function: every Lambda function in KNOWN_FUNCTIONS (conversions/lambdas.py) and
#: Keras 2's hard_sigmoid (conversions/hard_sigmoid.py).
FUNCTIONS = {"mgpu_io>inception_resnet_scale": inception_resnet_scale, "mgpu_io>hard_sigmoid": hard_sigmoid}
