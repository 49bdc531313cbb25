"""A data-parallel wrapper in `multi_gpu_model`'s shape, built with today's Keras (Keras 3 or tf_keras).

Slices as Keras 2.2.4's `get_slice` cuts them (the last replica takes the remainder), the template called once per
replica under its own device, one axis-0 Concatenate per output named after it: the graph BaseModelCheckpoint must
see through. `devices` are TensorFlow device names (logical CPUs in the tests).
"""


def get_slice(data, i, parts):
    import tensorflow as tf

    batch = tf.shape(data)[0]
    step = batch // parts
    size = batch - step * i if i == parts - 1 else step
    return data[i * step:i * step + size]


def make_parallel(keras, template, replicas, devices=None):
    import tensorflow as tf

    devices = devices or [None] * replicas
    towers = []
    for i, device in enumerate(devices):
        with tf.device(device) if device else _nothing():
            slices = [keras.layers.Lambda(get_slice, output_shape=tuple(x.shape[1:]),
                                          arguments={"i": i, "parts": replicas})(x) for x in template.inputs]
            outputs = template(slices if len(slices) > 1 else slices[0])
            towers.append(outputs if isinstance(outputs, (list, tuple)) else [outputs])
    names = [t.name.split("/")[0] for t in template.outputs] if not hasattr(template, "output_names") \
        else list(template.output_names)
    merged = [keras.layers.Concatenate(axis=0, name=name)([tower[k] for tower in towers])
              for k, name in enumerate(names)]
    return keras.Model(template.inputs, merged if len(merged) > 1 else merged[0])


class _nothing:
    def __enter__(self):
        return self

    def __exit__(self, *exc):
        return False


def template(keras, name="template", seed=1):
    """A small classifier without Dropout or BatchNormalization: the batch split cannot change a training step."""
    initializer = keras.initializers.GlorotUniform(seed=seed)
    inp = keras.Input((6,), name="inp")
    hidden = keras.layers.Dense(8, activation="tanh", name="hidden", kernel_initializer=initializer)(inp)
    out = keras.layers.Dense(3, activation="softmax", name="out", kernel_initializer=initializer)(hidden)
    return keras.Model(inp, out, name=name)


def data(samples=48, seed=3):
    import numpy as np

    rng = np.random.RandomState(seed)
    x = rng.standard_normal((samples, 6)).astype("float32")
    return x, np.eye(3, dtype="float32")[rng.randint(0, 3, samples)]
