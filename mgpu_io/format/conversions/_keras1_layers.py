"""The Keras 1 layer tables that the Keras 1 conversions (``keras1.py``, ``keras1_weights.py``) and the Merge
conversion (``_merge.py``) share: each Keras 1 class and its Keras 2 spelling, what has no Keras 3 equivalent, the
argument names only Keras 1 wrote, and the refusal every one of them raises. No family: data and one helper.

Checked against Keras 1.2.2's own source (``layers/*.py``, ``engine/topology.py``) and Keras 2.1.6's
``keras/legacy/interfaces.py``.
"""

from mgpu_io.errors import Param, Text, UnsupportedModel

DATA_FORMAT = {"tf": "channels_last", "th": "channels_first"}
#: The fix of every Keras 1 refusal: the other ways to the weights.
FIX = Text(
    "Rebuild that layer in code and load the weights with mgpu_io.transfer_weights, or pass ",
    Param("keep_config", True),
    " to write the Keras 1 config as it is (Keras 1 and 2 can load it)",
)

# --- argument renames, per Keras 1 class (keras/legacy/interfaces.py of Keras 2.1.6, checked against 1.2.2) ---------

WEIGHTED = {
    "init": "kernel_initializer",
    "W_regularizer": "kernel_regularizer",
    "b_regularizer": "bias_regularizer",
    "W_constraint": "kernel_constraint",
    "b_constraint": "bias_constraint",
    "bias": "use_bias",
}
CONV = dict(WEIGHTED, nb_filter="filters", subsample="strides", border_mode="padding", dim_ordering="data_format")
RECURRENT = {
    "output_dim": "units",
    "init": "kernel_initializer",
    "inner_init": "recurrent_initializer",
    "inner_activation": "recurrent_activation",
    "W_regularizer": "kernel_regularizer",
    "U_regularizer": "recurrent_regularizer",
    "b_regularizer": "bias_regularizer",
    "dropout_W": "dropout",
    "dropout_U": "recurrent_dropout",
}
POOLING = {"border_mode": "padding", "dim_ordering": "data_format"}
POOLING1D = {"pool_length": "pool_size", "stride": "strides", "border_mode": "padding"}
ORDERED = {"dim_ordering": "data_format"}
RNN_DROPPED = ("input_dim", "input_length", "consume_less")

#: Keras 1 class -> (Keras 2/3 class, renamed arguments, arguments dropped). Each is exact: what it drops is
#: Keras 1 bookkeeping (``input_dim``, ``consume_less``: the same arithmetic) or training-only.
CONVERSIONS = {
    "InputLayer": ("InputLayer", {"input_dtype": "dtype"}, ()),
    "Dense": ("Dense", dict(WEIGHTED, output_dim="units"), ("input_dim",)),
    "TimeDistributedDense": ("Dense", dict(WEIGHTED, output_dim="units"), ("input_dim", "input_length")),
    "Dropout": ("Dropout", {"p": "rate"}, ()),
    "SpatialDropout1D": ("SpatialDropout1D", {"p": "rate"}, ()),
    "SpatialDropout2D": ("SpatialDropout2D", {"p": "rate", "dim_ordering": "data_format"}, ()),
    "SpatialDropout3D": ("SpatialDropout3D", {"p": "rate", "dim_ordering": "data_format"}, ()),
    "GaussianNoise": ("GaussianNoise", {"sigma": "stddev"}, ()),
    "GaussianDropout": ("GaussianDropout", {"p": "rate"}, ()),
    "ActivityRegularization": ("ActivityRegularization", {}, ()),
    "Activation": ("Activation", {}, ()),
    "Masking": ("Masking", {}, ()),
    "Flatten": ("Flatten", {}, ()),
    "Reshape": ("Reshape", {}, ()),
    "Permute": ("Permute", {}, ()),
    "RepeatVector": ("RepeatVector", {}, ()),
    "Lambda": ("Lambda", {}, ()),  # Keras 1 and Keras <= 2.1.1 wrote the same keys (legacy-format.md §3.4)
    "Embedding": (
        "Embedding",
        {
            "init": "embeddings_initializer",
            "W_regularizer": "embeddings_regularizer",
            "W_constraint": "embeddings_constraint",
        },
        ("input_length", "dropout"),
    ),
    "LeakyReLU": ("LeakyReLU", {"alpha": "negative_slope"}, ()),
    "PReLU": ("PReLU", {"init": "alpha_initializer"}, ()),
    "ELU": ("ELU", {}, ()),
    "ThresholdedReLU": ("ThresholdedReLU", {}, ()),  # the arguments family makes it ReLU(threshold=theta)
    "BatchNormalization": (
        "BatchNormalization",
        {"beta_init": "beta_initializer", "gamma_init": "gamma_initializer"},
        ("mode",),
    ),
    "Convolution1D": (
        "Conv1D",
        dict(
            WEIGHTED,
            nb_filter="filters",
            filter_length="kernel_size",
            subsample_length="strides",
            border_mode="padding",
        ),
        ("input_dim", "input_length"),
    ),
    "AtrousConvolution1D": (
        "Conv1D",
        dict(
            WEIGHTED,
            nb_filter="filters",
            filter_length="kernel_size",
            subsample_length="strides",
            border_mode="padding",
            atrous_rate="dilation_rate",
        ),
        ("input_dim", "input_length"),
    ),
    "Convolution2D": ("Conv2D", CONV, ()),
    "AtrousConvolution2D": ("Conv2D", dict(CONV, atrous_rate="dilation_rate"), ()),
    "Deconvolution2D": ("Conv2DTranspose", CONV, ()),
    "SeparableConvolution2D": (
        "SeparableConv2D",
        {
            "nb_filter": "filters",
            "subsample": "strides",
            "border_mode": "padding",
            "dim_ordering": "data_format",
            "b_regularizer": "bias_regularizer",
            "b_constraint": "bias_constraint",
            "bias": "use_bias",
        },
        (),
    ),
    "Convolution3D": ("Conv3D", CONV, ()),
    "UpSampling1D": ("UpSampling1D", {"length": "size"}, ()),
    "UpSampling2D": ("UpSampling2D", ORDERED, ()),
    "UpSampling3D": ("UpSampling3D", ORDERED, ()),
    "ZeroPadding1D": ("ZeroPadding1D", {}, ()),
    "ZeroPadding2D": ("ZeroPadding2D", ORDERED, ()),
    "ZeroPadding3D": ("ZeroPadding3D", ORDERED, ()),
    "Cropping1D": ("Cropping1D", {}, ()),
    "Cropping2D": ("Cropping2D", ORDERED, ()),
    "Cropping3D": ("Cropping3D", ORDERED, ()),
    "MaxPooling1D": ("MaxPooling1D", POOLING1D, ()),
    "AveragePooling1D": ("AveragePooling1D", POOLING1D, ()),
    "MaxPooling2D": ("MaxPooling2D", POOLING, ()),
    "AveragePooling2D": ("AveragePooling2D", POOLING, ()),
    "MaxPooling3D": ("MaxPooling3D", POOLING, ()),
    "AveragePooling3D": ("AveragePooling3D", POOLING, ()),
    "GlobalMaxPooling1D": ("GlobalMaxPooling1D", {}, ()),
    "GlobalAveragePooling1D": ("GlobalAveragePooling1D", {}, ()),
    "GlobalMaxPooling2D": ("GlobalMaxPooling2D", ORDERED, ()),
    "GlobalAveragePooling2D": ("GlobalAveragePooling2D", ORDERED, ()),
    "GlobalMaxPooling3D": ("GlobalMaxPooling3D", ORDERED, ()),
    "GlobalAveragePooling3D": ("GlobalAveragePooling3D", ORDERED, ()),
    "SimpleRNN": ("SimpleRNN", RECURRENT, RNN_DROPPED),
    "LSTM": ("LSTM", RECURRENT, (*RNN_DROPPED, "forget_bias_init")),
    "GRU": ("GRU", RECURRENT, RNN_DROPPED),
    "ConvLSTM2D": (
        "ConvLSTM2D",
        dict(CONV, **{k: v for k, v in RECURRENT.items() if k != "output_dim"}),
        ("forget_bias_init",),
    ),
    "TimeDistributed": ("TimeDistributed", {}, ()),
    "Bidirectional": ("Bidirectional", {}, ()),
    "Merge": ("Merge", {}, ()),  # becomes Add, Multiply, Average, Maximum, Concatenate or Dot by its mode
}

#: Keras 1 classes that Keras 3 cannot compute exactly, and why.
NO_EQUIVALENT = {
    "Highway": "Keras 3 has no Highway layer (Keras 2.2 removed it)",
    "MaxoutDense": "Keras 3 has no MaxoutDense layer (Keras 2.2 removed it)",
    "SReLU": "Keras 3 has no SReLU layer (Keras 2 moved it to keras-contrib)",
    "ParametricSoftplus": "Keras 3 has no ParametricSoftplus layer (Keras 2 moved it to keras-contrib)",
    "LocallyConnected1D": "Keras 3 has no LocallyConnected1D layer (Keras 3 removed it)",
    "LocallyConnected2D": "Keras 3 has no LocallyConnected2D layer (Keras 3 removed it)",
}

#: Keras 1 classes whose config never stored ``dim_ordering`` (their ``get_config`` left it out): the layer took
#: ``image_dim_ordering()`` from the keras.json of whichever machine built it.
ORDERING_NOT_STORED = (
    "UpSampling2D",
    "UpSampling3D",
    "ZeroPadding2D",
    "ZeroPadding3D",
    "Cropping2D",
    "Cropping3D",
    "SpatialDropout2D",
    "SpatialDropout3D",
)
DROPOUT_ONLY = ("SpatialDropout2D", "SpatialDropout3D")  # the ordering changes training only, never predictions

#: Keras 1 merge modes and the Keras 2/3 layer that computes each exactly.
MERGE_MODES = {
    "sum": "Add",
    "mul": "Multiply",
    "ave": "Average",
    "max": "Maximum",
    "concat": "Concatenate",
    "dot": "Dot",
}
MERGE_KEYS = (
    "mode",
    "mode_type",
    "concat_axis",
    "dot_axes",
    "output_shape",
    "output_shape_type",
    "output_mask",
    "output_mask_type",
    "arguments",
    "node_indices",
    "tensor_indices",
    "layers",
)

#: Keras 1 regularizer and constraint configs (``{"name": ..., ...}``) in Keras 2's spelling.
KERAS1_OBJECTS = {
    "L1L2Regularizer": ("L1L2", {"l1": "l1", "l2": "l2"}),
    "WeightRegularizer": ("L1L2", {"l1": "l1", "l2": "l2"}),  # Keras 1.0 and 1.1: the same penalty
    "ActivityRegularizer": ("L1L2", {"l1": "l1", "l2": "l2"}),
    "MaxNorm": ("MaxNorm", {"m": "max_value", "axis": "axis"}),
    "NonNeg": ("NonNeg", {}),
    "UnitNorm": ("UnitNorm", {"axis": "axis"}),
    "MinMaxNorm": ("MinMaxNorm", {"low": "min_value", "high": "max_value", "rate": "rate", "axis": "axis"}),
}

# Argument names only Keras 1 wrote, and only Keras 2 and later: a config without `keras_version` (a bare
# `model_config` saved to a file) is told apart by them, never by the missing key.
KERAS1_ARGUMENTS = frozenset(
    {
        "output_dim",
        "init",
        "inner_init",
        "inner_activation",
        "nb_filter",
        "nb_row",
        "nb_col",
        "border_mode",
        "subsample",
        "dim_ordering",
        "W_regularizer",
        "b_regularizer",
        "W_constraint",
        "b_constraint",
        "input_dtype",
        "consume_less",
        "dropout_W",
        "dropout_U",
        "beta_init",
        "gamma_init",
    }
)
KERAS2_ARGUMENTS = frozenset(
    {
        "units",
        "kernel_initializer",
        "recurrent_initializer",
        "recurrent_activation",
        "filters",
        "kernel_size",
        "data_format",
        "kernel_regularizer",
        "bias_regularizer",
        "rate",
        "use_bias",
    }
)  # not `padding` or `strides`: Keras 1 pooling had them too
KERAS1_CLASSES = frozenset(
    {
        "Merge",
        "Convolution1D",
        "Convolution2D",
        "Convolution3D",
        "AtrousConvolution2D",
        "TimeDistributedDense",
        "MaxoutDense",
        "Highway",
    }
)


#: Layers whose output has the rank of their input (Keras 1 names, and the Keras 2 names of a legacy Merge's file):
#: what tells the rank of a ``dot`` Merge's inputs.
SAME_RANK = frozenset(
    {
        "Conv1D",
        "Conv2D",
        "Conv3D",
        "Conv2DTranspose",
        "SeparableConv2D",
        "Dense",
        "Activation",
        "Dropout",
        "SpatialDropout1D",
        "SpatialDropout2D",
        "SpatialDropout3D",
        "GaussianNoise",
        "GaussianDropout",
        "ActivityRegularization",
        "Masking",
        "BatchNormalization",
        "LeakyReLU",
        "PReLU",
        "ELU",
        "ThresholdedReLU",
        "Highway",
        "MaxoutDense",
        "TimeDistributedDense",
        "Convolution1D",
        "AtrousConvolution1D",
        "Convolution2D",
        "AtrousConvolution2D",
        "Deconvolution2D",
        "SeparableConvolution2D",
        "Convolution3D",
        "UpSampling1D",
        "UpSampling2D",
        "UpSampling3D",
        "ZeroPadding1D",
        "ZeroPadding2D",
        "ZeroPadding3D",
        "Cropping1D",
        "Cropping2D",
        "Cropping3D",
        "MaxPooling1D",
        "AveragePooling1D",
        "MaxPooling2D",
        "AveragePooling2D",
        "MaxPooling3D",
        "AveragePooling3D",
    }
)

#: Layers that predict their input unchanged (Keras 1 could record them as a model input).
IDENTITY_AT_PREDICTION = (
    "ActivityRegularization",
    "Dropout",
    "SpatialDropout1D",
    "SpatialDropout2D",
    "SpatialDropout3D",
    "GaussianNoise",
    "GaussianDropout",
)


def keras1_refusal(name, cls, problem, expected, received, fix=FIX):
    """The :class:`UnsupportedModel` for one Keras 1 layer, in the Keras idiom, from its fields (``fix`` names
    its parameters as :class:`~mgpu_io.errors.Param`\\ s: the command line says them in flags).

    Example:
        >>> print(keras1_refusal("h", "Highway", "is gone", "a layer Keras 3 has", "class_name='Highway'", "Rebuild it"))
        The Keras 1 layer 'h' (Highway) is gone. Expected a layer Keras 3 has. Received: class_name='Highway'. ...
    """
    return UnsupportedModel(
        problem=f"The Keras 1 layer {name!r} ({cls}) {problem}", expected=expected, received=received, fix=fix
    )
