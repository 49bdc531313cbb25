"""Arguments: layer arguments that Keras 3 dropped, renamed or changed the default of, written as Keras 3 reads them.

Each rule keeps the layer's meaning exactly: an argument is removed only where its stored value is the only one
Keras 3 has (``time_major=False``, ``groups=1``), and an argument whose stored value Keras 3 cannot express is
refused by name (:class:`~mgpu_io.errors.UnsupportedModel`), never dropped.
"""

import numpy as np

from mgpu_io.errors import Param, UnsupportedModel
from mgpu_io.format.config import layer_name, walk_layers
from mgpu_io.format.conversions.base import KERAS3, Family, Rule

RNN_CLASSES = ("LSTM", "GRU", "SimpleRNN", "ConvLSTM1D", "ConvLSTM2D", "ConvLSTM3D", "RNN", "CuDNNLSTM", "CuDNNGRU")
ATTENTION = ("Attention", "AdditiveAttention")
LOCALLY_CONNECTED = ("LocallyConnected1D", "LocallyConnected2D")
#: Convolutions whose tf.keras/tf_keras configs carry the Conv base class's `groups`, which Keras 3's do not take.
NO_GROUPS = (
    "DepthwiseConv1D",
    "DepthwiseConv2D",
    "SeparableConv1D",
    "SeparableConv2D",
    "Conv1DTranspose",
    "Conv2DTranspose",
    "Conv3DTranspose",
)
_MHA_BUILD_ARGUMENTS = ("query_shape", "key_shape", "value_shape", "softmax_robust_masking")
SPATIAL_DROPOUT = ("SpatialDropout1D", "SpatialDropout2D", "SpatialDropout3D")


def _refuse(layer, argument, value, why):
    raise UnsupportedModel(
        problem=f"Layer {layer_name(layer)!r} ({layer['class_name']}) has {argument}={value!r}, which Keras 3 cannot "
        f"express ({why})",
        expected="the value Keras 3 keeps",
        received=f"{argument}={value!r}",
        fix=(
            "Rebuild the layer in code and load the weights with mgpu_io.transfer_weights, or pass ",
            Param("keep_config", True),
            " for tf_keras",
        ),
    )


def _positive(value):
    return isinstance(value, (int, float)) and not isinstance(value, bool) and value > 0


def _rewrite_config(config, context):
    changes = []
    for layer in walk_layers(config, wrapped=True):
        if not (isinstance(layer, dict) and isinstance(layer.get("config"), dict)):
            continue
        for rewrite in _LAYER_REWRITES:  # each reads the layer as the ones before it left it
            changes += rewrite(layer, layer["config"], layer.get("class_name"), context)
    return changes


def _time_major(layer, settings, cls, context):
    if not (cls in RNN_CLASSES and "time_major" in settings):
        return []
    if settings["time_major"]:
        _refuse(layer, "time_major", settings["time_major"], "Keras 3's RNN layers take batch-major input")
    del settings["time_major"]
    return ["rnn-time-major"]


def _dropout_implementation(layer, settings, cls, context):
    if (
        cls in ("LSTM", "GRU")
        and settings.get("implementation") == 1
        and _positive(settings.get("dropout"))
        and not _positive(settings.get("recurrent_dropout"))
    ):
        settings["implementation"] = 2  # the same arithmetic; Keras 3's training step fails on 1 (see the rule)
        return ["rnn-dropout-implementation"]
    return []


def _gru_reset_before(layer, settings, cls, context):
    if cls == "GRU" and "reset_after" not in settings and not context.keras1:
        settings["reset_after"] = False  # Keras <= 2.1 had only this GRU; Keras 3's default is True
        return ["gru-reset-before"]
    return []


def _spatial_dropout(layer, settings, cls, context):
    if cls in SPATIAL_DROPOUT and ("trainable" in settings or "noise_shape" in settings):
        settings.pop("trainable", None)  # no weights to train
        settings.pop("noise_shape", None)  # Keras 2's SpatialDropout ignored it (its own per-channel shape)
        return ["spatial-dropout-arguments"]
    return []


def _depthwise_groups(layer, settings, cls, context):
    if not (cls in NO_GROUPS and "groups" in settings):
        return []
    if settings["groups"] != 1:
        _refuse(layer, "groups", settings["groups"], f"{cls} has no groups in Keras 3")
    del settings["groups"]
    return ["depthwise-groups"]


def _attention_shapes(layer, settings, cls, context):
    if not (cls == "MultiHeadAttention" and any(key in settings for key in _MHA_BUILD_ARGUMENTS)):
        return []
    if settings.get("softmax_robust_masking"):
        _refuse(layer, "softmax_robust_masking", True, "Keras 3's MultiHeadAttention masks one way only")
    for key in _MHA_BUILD_ARGUMENTS:
        settings.pop(key, None)  # the shapes it was built for: Keras 3 builds it when it is called
    return ["multi-head-attention-shapes"]


def _bilinear_upsampling(layer, settings, cls, context):
    if cls == "UpSampling2D" and settings.get("interpolation") == "bilinear" and context.standalone_keras2:
        raise UnsupportedModel(
            problem=(
                f"Layer {layer_name(layer)!r} (UpSampling2D) resizes with TensorFlow 1's bilinear resize_images (no "
                f"half-pixel centres), as standalone Keras {context.keras_version} did; Keras 3's bilinear "
                "UpSampling2D samples at half-pixel centres, so its predictions would differ"
            ),
            expected="interpolation='nearest', or a tf.keras file",
            received="interpolation='bilinear'",
            fix=(
                "Rebuild the layer in code (on TensorFlow: a Lambda calling tf.compat.v1.image.resize_bilinear with "
                "half_pixel_centers=False) and load the weights with mgpu_io.transfer_weights"
            ),
        )
    return []


def _conv_rnn2d(layer, settings, cls, context):
    if cls != "ConvRNN2D":
        return []
    _conv_lstm2d(layer, settings)  # the rewrites after this one read the layer it became
    return ["conv-rnn2d-cell"]


def _sync_batch_normalization(layer, settings, cls, context):
    if cls == "SyncBatchNormalization" and context.target == KERAS3:
        layer["class_name"] = "BatchNormalization"
        settings["synchronized"] = True  # across replicas when training; the same layer when predicting
        return ["sync-batch-normalization"]
    return []


#: ``RandomCrop`` arguments that Keras 3's ``Resizing`` takes as they are (the others: ``seed``).
_RESIZING_KEYS = ("name", "trainable", "dtype", "batch_input_shape", "height", "width")


def _keras_release(version):
    """``(major, minor)`` of a ``keras_version`` (``"2.10.0"`` -> ``(2, 10)``; ``"2.2.4-tf"`` -> ``(2, 2)``)."""
    parts = str(version or "").split("-")[0].split(".")
    try:
        return int(parts[0]), int(parts[1])
    except (IndexError, ValueError):
        return 0, 0


def _random_crop(layer, settings, cls, context):
    """tf.keras 2.7+'s ``RandomCrop`` predicts with ``smart_resize`` (the largest window of the target's aspect ratio,
    centred, resized bilinearly): Keras 3's ``Resizing(crop_to_aspect_ratio=True)``. Keras 3's own ``RandomCrop``
    returns its input unchanged at inference (shape and all), and tf.keras 2.2-2.6 resized to the shorter side and
    then cropped (read in the keras 2.6.0 and 2.7.0 wheels' ``image_preprocessing.py``), which no Keras 3 layer
    computes: refused by name."""
    if cls != "RandomCrop" or context.target != KERAS3:
        return []
    if _keras_release(context.keras_version) < (2, 7):
        raise UnsupportedModel(
            problem=f"Layer {layer_name(layer)!r} (RandomCrop) of tf.keras {context.keras_version or '(unknown)'} "
            "predicts by resizing its input to the crop's shorter side and then cropping its centre, which no "
            "Keras 3 layer computes (Keras 3's RandomCrop returns its input unchanged when predicting)",
            expected="a RandomCrop of tf.keras 2.7 or later (keras_version '2.7.0' and up), which Keras 3's "
            "Resizing(crop_to_aspect_ratio=True) reproduces",
            received=f"keras_version={context.keras_version!r}",
            fix=(
                "Rebuild the model in code with the crop you want when predicting (for example Resizing then "
                "CenterCrop) and load the weights with mgpu_io.transfer_weights, or pass ",
                Param("keep_config", True),
                " for tf_keras",
            ),
        )
    layer["class_name"] = "Resizing"
    for key in [key for key in settings if key not in _RESIZING_KEYS]:
        del settings[key]
    settings.update(interpolation="bilinear", crop_to_aspect_ratio=True)
    return ["random-crop-inference"]


#: The layers of tf.keras 2.10-2.15's ``keras.applications.convnext`` (not of ``keras.layers``): their arguments.
CONVNEXT_LAYERS = {"LayerScale": {"init_values", "projection_dim"}, "StochasticDepth": {"drop_path_rate"}}
_BASE_KEYS = {"name", "trainable", "dtype", "batch_input_shape"}


def _convnext_layers(layer, settings, cls, context):
    """ConvNeXt's ``LayerScale``/``StochasticDepth``, saved with exactly their arguments, become mgpu-io's copies
    (``mgpu_io>LayerScale``): a layer of the user's with another signature stays theirs to pass."""
    if cls in CONVNEXT_LAYERS and context.target == KERAS3 and set(settings) - _BASE_KEYS == CONVNEXT_LAYERS[cls]:
        layer["class_name"] = f"mgpu_io>{cls}"
        return ["convnext-layers"]
    return []


def _locally_connected_layer(layer, settings, cls, context):
    if cls in LOCALLY_CONNECTED and context.target == KERAS3:
        _locally_connected(layer, settings)
        return ["locally-connected"]
    return []


def _attention_causal(layer, settings, cls, context):
    if not (cls in ATTENTION and "causal" in settings):
        return []
    if settings["causal"]:
        _refuse(
            layer,
            "causal",
            settings["causal"],
            "Keras 3 takes the causal mask as a call argument, use_causal_mask, which a config cannot hold",
        )
    del settings["causal"]
    return ["attention-causal"]


def _thresholded_relu(layer, settings, cls, context):
    if cls != "ThresholdedReLU":
        return []
    theta = settings.pop("theta", 1.0)
    layer["class_name"] = "ReLU"
    settings.update(threshold=theta, negative_slope=0.0, max_value=None)
    return ["thresholded-relu"]


def _weight_regularizers(layer, settings, cls, context):
    changes = []
    for key, value in list(settings.items()):
        if key.endswith("_regularizer") and isinstance(value, dict) and value.get("class_name") == "WeightRegularizer":
            inner = value.get("config") if isinstance(value.get("config"), dict) else {}
            settings[key] = {
                "class_name": "L1L2",
                "config": {"l1": float(inner.get("l1", 0.0)), "l2": float(inner.get("l2", 0.0))},
            }
            changes.append("weight-regularizer")
    return changes


#: The rewrites of one layer's arguments, in order: each ``(layer, its config, its class, context)`` -> the names of
#: the changes it made.
_LAYER_REWRITES = (
    _random_crop,
    _time_major,
    _dropout_implementation,
    _gru_reset_before,
    _spatial_dropout,
    _depthwise_groups,
    _attention_shapes,
    _bilinear_upsampling,
    _conv_rnn2d,
    _sync_batch_normalization,
    _locally_connected_layer,
    _convnext_layers,
    _attention_causal,
    _thresholded_relu,
    _weight_regularizers,
)


def _locally_connected(layer, settings):
    """``LocallyConnected1D/2D``, which Keras 3 removed, as mgpu-io's registered copy of the same computation and
    weight layout (``mgpu_io/keras/known.py``); the layouts of ``implementation=2`` and ``3`` are refused."""
    cls = layer["class_name"]
    implementation = settings.get("implementation", 1)
    channels_last = settings.get("data_format", "channels_last") == "channels_last"
    if (
        implementation not in (1, 2, 3)
        or (implementation != 1 and not channels_last)
        or settings.get("padding", "valid") != "valid"
    ):
        raise UnsupportedModel(
            problem=f"Layer {layer_name(layer)!r} is a {cls} with implementation={implementation!r}, "
            f"padding={settings.get('padding', 'valid')!r}: Keras 3 removed the class, and mgpu-io rebuilds only "
            f"its forms with padding='valid' and implementation=1 (or 2 and 3, channels_last), whose weight "
            f"layouts it reads",
            expected="implementation=1",
            received=f"implementation={implementation!r}",
            fix=(
                "Rebuild the layer in code and load the weights with mgpu_io.transfer_weights, or pass ",
                Param("keep_config", True),
                " and ",
                Param("target", "tf_keras"),
                " for tf_keras",
            ),
        )
    if cls == "LocallyConnected1D" and settings.get("data_format", "channels_last") != "channels_last":
        _refuse(layer, "data_format", settings["data_format"], "mgpu-io's LocallyConnected1D reads channels_last")
    layer["class_name"] = f"mgpu_io>{cls}"


def _weight_steps(layer, shapes, context):
    """tf.keras' ``implementation=2`` keeps a dense, masked kernel over every input and output position; mgpu-io's
    LocallyConnected reads the ``implementation=1`` layout, one (window, filters) block per output position."""
    config = layer.get("config") or {}
    if (
        layer["class_name"] in ("mgpu_io>LocallyConnected1D", "mgpu_io>LocallyConnected2D")
        and config.get("implementation") in (2, 3)
        and shapes
    ):
        unmask = unmask_kernel(config["kernel_size"], config.get("strides", 1))
        if config["implementation"] == 2:
            return [("locally-connected", unmask)]
        return [
            (
                "locally-connected",
                lambda names, arrays: unmask(
                    names,
                    [
                        densify_kernel(arrays[0], arrays[1].shape, config["kernel_size"], config.get("strides", 1)),
                        *list(arrays[1:]),
                    ],
                ),
            )
        ]
    return []


def densify_kernel(values, output_shape, kernel_size, strides):
    """An ``implementation=3`` kernel (the connected entries only, in the order of tf.keras' sorted
    ``conv_kernel_idxs``: (output index, input index) pairs) as the dense ``implementation=2`` one, over the input
    rows the windows cover (a valid convolution's uncovered last rows have no entries).

    Example:
        >>> import numpy as np
        >>> densify_kernel(np.arange(4.0), (2, 1), [2], [1])[:, 0, :, 0].tolist()  # length 3, window 2
        [[0.0, 0.0], [1.0, 2.0], [0.0, 3.0]]
    """
    rank = len(output_shape) - 1
    sizes = list(kernel_size) if isinstance(kernel_size, (list, tuple)) else [kernel_size] * rank
    steps = list(strides) if isinstance(strides, (list, tuple)) else [strides] * rank
    outputs, filters = tuple(output_shape[:-1]), output_shape[-1]
    inputs = tuple((o - 1) * s + k for o, s, k in zip(outputs, steps, sizes))
    channels = int(np.asarray(values).size // (int(np.prod(outputs)) * int(np.prod(sizes)) * filters))
    connected = np.zeros((*outputs, filters, *inputs, channels), dtype=bool)
    for position in np.ndindex(*outputs):
        window = tuple(slice(p * s, p * s + k) for p, s, k in zip(position, steps, sizes))
        index = (*position, slice(None), *window, slice(None))
        connected[index] = True
    dense = np.zeros(connected.shape, dtype=np.asarray(values).dtype)
    dense[connected] = np.asarray(values).reshape(-1)  # C order: sorted (output index, input index), as stored
    first_input = rank + 1  # to (input positions, channels, output positions, filters)
    return dense.transpose(tuple(range(first_input, 2 * rank + 2)) + tuple(range(first_input)))


def unmask_kernel(kernel_size, strides):
    """The step that turns an ``implementation=2`` kernel (input positions, channels, output positions, filters)
    into the ``implementation=1`` one (output positions, window * channels, filters); the bias is unchanged.

    Example:
        >>> import numpy as np
        >>> dense = np.arange(3 * 1 * 2 * 1, dtype="float32").reshape(3, 1, 2, 1)  # 1D: length 3, window 2
        >>> unmask_kernel([2], [1])(["k"], [dense])[1][0][:, :, 0].tolist()
        [[0.0, 2.0], [3.0, 5.0]]
    """

    def step(names, arrays):
        dense, rest = np.asarray(arrays[0]), arrays[1:]
        rank = (dense.ndim - 2) // 2
        sizes = list(kernel_size) if isinstance(kernel_size, (list, tuple)) else [kernel_size] * rank
        steps = list(strides) if isinstance(strides, (list, tuple)) else [strides] * rank
        outputs, filters = dense.shape[rank + 1 : -1], dense.shape[-1]
        blocks = []
        for position in np.ndindex(*outputs):
            window = tuple(slice(p * s, p * s + k) for p, s, k in zip(position, steps, sizes))
            index = (*window, slice(None), *position, slice(None))
            block = dense[index]
            blocks.append(block.reshape(-1, filters))
        return names, [np.stack(blocks), *list(rest)]

    return step


def _conv_lstm2d(layer, settings):
    """``ConvRNN2D(cell=ConvLSTM2DCell(...))`` as the ``ConvLSTM2D`` it computes (the same weights, in place)."""
    cell = settings.get("cell") if isinstance(settings.get("cell"), dict) else {}
    if cell.get("class_name") != "ConvLSTM2DCell" or not isinstance(cell.get("config"), dict):
        raise UnsupportedModel(
            problem=(
                f"Layer {layer_name(layer)!r} is a ConvRNN2D over a {cell.get('class_name')!r} cell: Keras 3 has no "
                "ConvRNN2D, and only its ConvLSTM2DCell form has a Keras 3 equivalent (ConvLSTM2D)"
            ),
            expected="cell=ConvLSTM2DCell",
            received=f"cell={cell.get('class_name')!r}",
            fix="Rebuild the layer in code and load the weights with mgpu_io.transfer_weights",
        )
    merged = {key: value for key, value in cell["config"].items() if key not in ("name", "trainable")}
    merged.update({key: value for key, value in settings.items() if key not in ("cell", "unroll")})
    layer["class_name"], layer["config"] = "ConvLSTM2D", merged


FAMILY = Family(
    name="arguments",
    summary="layer arguments that Keras 3 dropped, renamed or changed the default of",
    rules=(
        Rule(
            "rnn-time-major",
            "`time_major=False` (tf.keras 1.13-2.x RNN and CuDNN RNN configs) is dropped; `True` is refused",
            "Keras 3: `Unrecognized keyword arguments passed to LSTM: {'time_major': False}`",
            (),
        ),
        Rule(
            "rnn-dropout-implementation",
            "an `LSTM`/`GRU` with `implementation=1` (Keras 2.1-2.2 and tf.keras 1.x's default), `dropout` and no "
            "`recurrent_dropout` gets `implementation=2`: the same arithmetic (predictions within float rounding), "
            "its input dropout one mask for all gates, as Keras 2's `implementation=2` and Keras 3's cuDNN path drop",
            "Keras 3.x's LSTM/GRU build one dropout mask per gate for `implementation=1` and then broadcast them as "
            "one, so every training step fails: `Exception encountered when calling LSTM.call(). Shape must be at "
            "most rank 3 but is rank 4` (predict and evaluate run)",
            (),
        ),
        Rule(
            "gru-reset-before",
            "a Keras 2 GRU config without `reset_after` (Keras <= 2.1) gets "
            "`reset_after=False`, the only GRU those versions had",
            "Keras 3 defaults to `reset_after=True`: a bias-shape mismatch, or other predictions",
            (),
        ),
        Rule(
            "spatial-dropout-arguments",
            "`SpatialDropout1D/2D/3D` configs lose `trainable` (no weights) and "
            "`noise_shape` (Keras 2 ignored it: the noise is per channel)",
            "Keras 3: `SpatialDropout1D.__init__() got an unexpected keyword argument 'trainable'`",
            (),
        ),
        Rule(
            "depthwise-groups",
            "`groups=1` on depthwise, separable and transposed convolutions (tf.keras 2.3+ and "
            "tf_keras configs) is dropped; other values are refused",
            "Keras 3: `Unrecognized keyword arguments passed to SeparableConv2D: {'groups': 1}`",
            (),
        ),
        Rule(
            "multi-head-attention-shapes",
            "tf_keras `MultiHeadAttention` configs lose the shapes it was built "
            "for (`query_shape`, `key_shape`, `value_shape`) and `softmax_robust_masking=False`; `True` is refused",
            "Keras 3: `Unrecognized keyword arguments passed to MultiHeadAttention: {'query_shape': ...}`",
            (),
        ),
        Rule(
            "locally-connected",
            "`LocallyConnected1D/2D` (`padding='valid'`), which Keras 3 "
            "removed, becomes mgpu-io's registered copy `mgpu_io>LocallyConnected1D/2D`: the same computation "
            "and weight layout (plain Keras 3 finds it after `import mgpu_io.keras.known`); tf.keras' "
            "`implementation=2` and `3` kernels are laid out as `1`'s (target keras3 only)",
            "Keras 3: `Unknown layer: 'LocallyConnected2D'`",
            (),
        ),
        Rule(
            "sync-batch-normalization",
            "tf.keras' `experimental.SyncBatchNormalization` becomes Keras 3's "
            "`BatchNormalization(synchronized=True)`, the same layer (target keras3 only)",
            "Keras 3: `Unknown layer: 'SyncBatchNormalization'`",
            (),
        ),
        Rule(
            "conv-rnn2d-cell",
            "`ConvRNN2D(cell=ConvLSTM2DCell(...))` (Keras 2.2-2.3) becomes the `ConvLSTM2D` it "
            "computes, with the same weights; other cells are refused",
            "Keras 3: `Unknown layer: 'ConvRNN2D'`",
            (),
        ),
        Rule(
            "attention-causal",
            "`Attention`/`AdditiveAttention(causal=False)` (tf.keras 1.15-2.x) loses "
            "`causal`; `causal=True` is refused (Keras 3 takes it when the layer is called)",
            "Keras 3: `Unrecognized keyword arguments passed to Attention: {'causal': False}`",
            (),
        ),
        Rule(
            "thresholded-relu",
            "`ThresholdedReLU(theta)` becomes `ReLU(threshold=theta)`: equal everywhere "
            "except at x == theta exactly (0 before, theta now)",
            "Keras 3: `Unknown layer: 'ThresholdedReLU'`",
            (),
        ),
        Rule(
            "convnext-layers",
            "`LayerScale` and `StochasticDepth` of tf.keras 2.10-2.15's `keras.applications.convnext` (layers of "
            "that module, saved with exactly their arguments) become mgpu-io's registered copies "
            "`mgpu_io>LayerScale`/`mgpu_io>StochasticDepth`: the same computation and weight (target keras3 only)",
            "Keras 3: `it has no class 'LayerScale'` (the class is not in `keras.layers` of any release)",
            (),
        ),
        Rule(
            "random-crop-inference",
            "tf.keras 2.7+'s `RandomCrop` becomes `Resizing(height, width, crop_to_aspect_ratio=True)`, what it "
            "computes when predicting (`smart_resize`); the random crop is gone from training. tf.keras 2.2-2.6's "
            "(resize to the shorter side, then crop) is refused by name (target keras3 only)",
            "Keras 3's `RandomCrop` returns its input unchanged when predicting: another output shape, or "
            "other predictions",
            (),
        ),
        Rule(
            "weight-regularizer",
            "Keras 1's `WeightRegularizer(l1, l2)` becomes `L1L2(l1, l2)`",
            "Keras 3: `Could not locate class 'WeightRegularizer'`",
            (),
        ),
    ),
    rewrite_config=_rewrite_config,
    weight_steps=_weight_steps,
)
