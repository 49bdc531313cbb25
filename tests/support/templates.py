"""The fixtures' templates, built with Keras code as a user would write them today.

Weights-only files carry no architecture: the user builds the model in code and loads the unwrapped weights.
These builders mirror fixtures/generate/write_fixtures.py (and the reference set's MANIFEST.md) layer for layer.
Each takes the Keras module to build with: ``keras`` (Keras 3) or ``tf_keras`` (the Keras 2 API).
"""


def functional_bn(keras, inputs=6, d1_activation="relu", two_outputs=True, out_units=3):
    layers = keras.layers
    inp = keras.Input((inputs,), name="inp")
    x = layers.Dense(8, activation=d1_activation, name="d1")(inp)
    x = layers.BatchNormalization(name="bn")(x)
    x = layers.Dropout(0.25, name="drop")(x)
    if two_outputs:
        outputs = [layers.Dense(3, activation="softmax", name="out_a")(x), layers.Dense(1, name="out_b")(x)]
    else:
        outputs = layers.Dense(out_units, activation="softmax", name="out")(x)
    return keras.Model(inp, outputs, name="template")


def sequential_mlp(keras):
    layers = keras.layers
    return keras.Sequential([
        keras.Input((5,)),
        layers.Dense(10, activation="tanh"),
        layers.Dropout(0.1),
        layers.Dense(4, activation="softmax"),
    ])


def multi_io(keras):
    layers = keras.layers
    a, b = keras.Input((4,), name="in_a"), keras.Input((3,), name="in_b")
    x = layers.concatenate([layers.Dense(5, name="da")(a), layers.Dense(5, name="db")(b)], name="join")
    x = layers.Dense(6, activation="relu", name="trunk")(x)
    return keras.Model([a, b], [layers.Dense(2, activation="softmax", name="cls")(x),
                                layers.Dense(1, name="reg")(x)], name="multi_io")


def siamese(keras):
    layers = keras.layers
    nested = keras.Sequential([keras.Input((3,)), layers.Dense(4), layers.Dense(2)], name="nested")
    a, b = keras.Input((3,), name="input_a"), keras.Input((3,), name="input_b")
    ea, eb = nested(a), nested(b)
    return keras.Model([a, b], [layers.add([ea, eb], name="add"), ea, eb], name="siamese")


def cudnn_equivalent(keras):
    """What a CuDNN template is on a CPU: LSTM/GRU with sigmoid gates (GRU with reset_after), per the Keras docs."""
    layers = keras.layers
    inp = keras.Input((10, 4), name="inp")
    x = layers.Bidirectional(layers.LSTM(4, return_sequences=True, recurrent_activation="sigmoid"), name="bilstm")(inp)
    x = layers.GRU(5, recurrent_activation="sigmoid", reset_after=True, name="gru")(x)
    return keras.Model(inp, layers.Dense(3, name="out")(x), name="cudnn_template")


def keras1_conv(keras):
    layers = keras.layers
    inp = keras.Input((8, 8, 1), name="inp")
    x = layers.Conv2D(4, 3, padding="same", activation="relu", name="conv")(inp)
    x = layers.BatchNormalization(name="bn")(x)
    x = layers.Flatten(name="flat")(layers.MaxPooling2D(2, name="pool")(x))
    return keras.Model(inp, layers.Dense(3, activation="softmax", name="out")(x), name="conv_template")


def keras1_rnn(keras):
    """Keras 1's LSTM and GRU defaults: hard_sigmoid gates, and GRU applying the reset gate before the product."""
    layers = keras.layers
    inp = keras.Input((6, 4), name="inp")
    x = layers.LSTM(5, return_sequences=True, recurrent_activation="hard_sigmoid", name="lstm")(inp)
    x = layers.GRU(4, recurrent_activation="hard_sigmoid", reset_after=False, name="gru")(x)
    return keras.Model(inp, layers.Dense(2, name="out")(x), name="rnn_template")


def lambda_template(keras):
    """The user rebuilds their own Lambda in code (its stored bytecode is never loaded)."""
    layers = keras.layers
    inp = keras.Input((4,), name="inp")
    x = layers.Lambda(lambda t: t * 2.0, name="double")(layers.Dense(4, name="d1")(inp))
    return keras.Model(inp, layers.Dense(2, name="out")(x), name="lambda_template")


def two_dense(keras, activation=None):
    layers = keras.layers
    inp = keras.Input((4,), name="inp")
    x = layers.Dense(8, name="d1")(inp)
    if activation:
        x = layers.Activation(activation, name="act")(x)
    return keras.Model(inp, layers.Dense(3, name="out")(x), name="template")


def conv1d_bilstm(keras):
    layers = keras.layers
    return keras.Sequential([
        keras.Input((20, 3)),
        layers.Conv1D(8, 5, activation="relu"),
        layers.MaxPooling1D(2),
        layers.Bidirectional(layers.LSTM(6, recurrent_activation="hard_sigmoid")),
        layers.Dense(2, activation="softmax"),
    ])


def mini_googlenet(keras, width=4):
    layers = keras.layers

    def conv(x, k, kx, ky, stride, padding="same"):
        x = layers.Conv2D(k, (kx, ky), strides=stride, padding=padding)(x)
        x = layers.BatchNormalization(axis=-1)(x)
        return layers.Activation("relu")(x)

    def inception(x, k1, k3):
        return layers.concatenate([conv(x, k1, 1, 1, (1, 1)), conv(x, k3, 3, 3, (1, 1))], axis=-1)

    def downsample(x, k):
        return layers.concatenate([conv(x, k, 3, 3, (2, 2), padding="valid"),
                                   layers.MaxPooling2D((3, 3), strides=(2, 2))(x)], axis=-1)

    w = width
    inp = keras.Input((32, 32, 3))
    x = conv(inp, 96 // w, 3, 3, (1, 1))
    x = inception(x, 32 // w, 32 // w)
    x = inception(x, 32 // w, 48 // w)
    x = downsample(x, 80 // w)
    x = inception(x, 112 // w, 48 // w)
    x = inception(x, 96 // w, 64 // w)
    x = downsample(x, 96 // w)
    x = inception(x, 176 // w, 160 // w)
    x = layers.GlobalAveragePooling2D()(x)
    x = layers.Dropout(0.5)(x)
    return keras.Model(inp, layers.Dense(10, activation="softmax")(x), name="minigooglenet")


# The builder for each weights-only file, fixtures and reference set alike.
BUILDERS = {
    "k224_functional_bn_x2_weights.h5": functional_bn,
    "k216_functional_bn_x2_weights.h5": functional_bn,
    "k231_functional_bn_x2_weights.h5": functional_bn,
    "tfk115_functional_bn_x2_weights.h5": functional_bn,
    "k224_nested_depth3_weights.h5": functional_bn,
    "k224py27_functional_bn_x2_weights.h5": functional_bn,
    "k224_sequential_x3_weights.h5": sequential_mlp,
    "k224_sequential_reloc_x2_weights.h5": sequential_mlp,
    "k224_conv1d_bilstm_x2_weights.h5": conv1d_bilstm,
    "k224_minigooglenet_x2_weights.h5": mini_googlenet,
    "k224_avolkov1_x3_weights.h5": multi_io,
    "k224_siamese_x2_weights.h5": siamese,
    "k224_cudnn_x2_weights.h5": cudnn_equivalent,
    "k122_kuza55_conv_x2_weights.h5": keras1_conv,
    "k122_kuza55_rnn_x2_weights.h5": keras1_rnn,
    "k224_template_lambda_x2_weights.h5": lambda_template,
    "k216_kuza55_x2_weights.h5": lambda k: two_dense(k, "tanh"),
    "k122_kuza55_x2_weights.h5": lambda k: two_dense(k, "tanh"),
    "k224_functional_2out_weights.h5": lambda k: functional_bn(k, inputs=4),
    "tfk115_functional_weights.h5": lambda k: functional_bn(k, inputs=4, two_outputs=False),
    "k216_weights.h5": two_dense,
    "k216_kuza_weights.h5": two_dense,
    "k122_kuza_weights.h5": two_dense,
}
# Weights-only files that need their architecture (`unwrap --config`), and whether the model built in code keeps the
# writer's nesting (`--keep-config`). Paths are relative to fixtures/files.
# - CuDNN, Keras 1 recurrent and Keras 2 hard_sigmoid weights: only the graph says which layer a weight belongs to
#   and what it is, and so how to convert it;
# - a template that nests a model: a model built in code nests it too, so the weights keep the writer's layout
#   (without --keep-config they are laid out for the repaired JSON, which inlines the nested model).
ARCHITECTURE = {
    "k224_conv1d_bilstm_x2_weights.h5": ("k224_conv1d_bilstm_x2_config.json", False),
    "k224_siamese_x2_weights.h5": ("k224_siamese_x2_config.json", True),
    "k224_cudnn_x2_weights.h5": ("k224_cudnn_x2_full.h5", False),
    "k122_kuza55_rnn_x2_weights.h5": ("k122_kuza55_rnn_x2_full.h5", False),
}


def unwrap_options(file, target, fixtures_dir):
    """The `unwrap` keyword arguments that repair a weights-only fixture for a model built in code."""
    if file not in ARCHITECTURE:
        return {"target": target}
    config, keep_nesting = ARCHITECTURE[file]
    return {"config": fixtures_dir / config, "keep_config": keep_nesting, "target": target}
