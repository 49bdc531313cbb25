"""The user's Lambda functions of fixtures/applications (their sources are in its manifest, `user_functions`),
ported from Keras 2's backend (`K.concatenate`, `K.l2_normalize`) to Keras 3's `keras.ops`, as their owner would.

Keyed by layer name, as `mgpu_io.load_model(path, lambdas=USER_FUNCTIONS)` takes them; the CLI names them as
`tests/support/lambda_functions.py:preprocess`. fixtures/files' `k224_template_lambda` template has one more: `double`.
"""

from keras import ops


def preprocess(x):
    return x / 127.5 - 1


def channel_stats(x):
    return ops.concatenate([ops.mean(x, axis=-1, keepdims=True), ops.max(x, axis=-1, keepdims=True)], axis=-1)


def scale_by_factor(x, factor):
    return x * factor


def square_features(x):
    return ops.concatenate([x, ops.square(x)], axis=-1)


def gate(t):
    return t[0] * t[1]


def l2_norm(x):
    """K.l2_normalize(x, axis=-1) of Keras 2: x / sqrt(max(sum(x**2), 1e-12))."""
    return x / ops.sqrt(ops.maximum(ops.sum(ops.square(x), axis=-1, keepdims=True), 1e-12))


def double(t):
    return t * 2.0


USER_FUNCTIONS = {f.__name__: f for f in (preprocess, channel_stats, scale_by_factor, square_features, gate,
                                          l2_norm, double)}
