"""Arguments: layer arguments that Keras 3 dropped, renamed or changed the default of, written as Keras 3 reads them.

Each rule keeps the layer's meaning exactly: an argument is removed only where its stored value is the only one
Keras 3 has (``time_major=False``, ``groups=1``), and an argument whose stored value Keras 3 cannot express is
refused by name (:class:`~mgpu_io.errors.UnsupportedModel`), never dropped.
"""

from mgpu_io.errors import UnsupportedModel
from mgpu_io.format.config import layer_name, walk_layers
from mgpu_io.format.conversions.base import Family, Rule

RNN_CLASSES = ("LSTM", "GRU", "SimpleRNN", "ConvLSTM1D", "ConvLSTM2D", "ConvLSTM3D", "RNN")
SPATIAL_DROPOUT = ("SpatialDropout1D", "SpatialDropout2D", "SpatialDropout3D")


def _refuse(layer, argument, value, why):
    raise UnsupportedModel(
        f"Layer {layer_name(layer)!r} ({layer['class_name']}) has {argument}={value!r}, which Keras 3 cannot "
        f"express ({why}). Expected the value Keras 3 keeps. Received: {argument}={value!r}. Rebuild the layer in "
        f"code and load the weights with mgpu_io.transfer_weights, or pass keep_config=True for tf_keras."
    )


def _rewrite_config(config, context):
    changes = []
    for layer in walk_layers(config, wrapped=True):
        settings = layer.get("config") if isinstance(layer, dict) else None
        if not isinstance(settings, dict):
            continue
        cls = layer.get("class_name")
        if cls in RNN_CLASSES and "time_major" in settings:
            if settings["time_major"]:
                _refuse(layer, "time_major", settings["time_major"], "Keras 3's RNN layers take batch-major input")
            del settings["time_major"]
            changes.append("rnn-time-major")
        if cls == "GRU" and "reset_after" not in settings and not context.keras1:
            settings["reset_after"] = False  # Keras <= 2.1 had only this GRU; Keras 3's default is True
            changes.append("gru-reset-before")
        if cls in SPATIAL_DROPOUT and ("trainable" in settings or "noise_shape" in settings):
            settings.pop("trainable", None)  # no weights to train
            settings.pop("noise_shape", None)  # Keras 2's SpatialDropout ignored it (its own per-channel shape)
            changes.append("spatial-dropout-arguments")
        if cls == "DepthwiseConv2D" and "groups" in settings:
            if settings["groups"] != 1:
                _refuse(layer, "groups", settings["groups"], "DepthwiseConv2D has no groups in Keras 3")
            del settings["groups"]
            changes.append("depthwise-groups")
        if cls == "ThresholdedReLU":
            theta = settings.pop("theta", 1.0)
            layer["class_name"] = "ReLU"
            settings.update(threshold=theta, negative_slope=0.0, max_value=None)
            changes.append("thresholded-relu")
        for key, value in list(settings.items()):
            if key.endswith("_regularizer") and isinstance(value, dict) and \
                    value.get("class_name") == "WeightRegularizer":
                inner = value.get("config") if isinstance(value.get("config"), dict) else {}
                settings[key] = {"class_name": "L1L2", "config": {"l1": float(inner.get("l1", 0.0)),
                                                                  "l2": float(inner.get("l2", 0.0))}}
                changes.append("weight-regularizer")
    return changes


FAMILY = Family(
    name="arguments",
    summary="layer arguments that Keras 3 dropped, renamed or changed the default of",
    rules=(
        Rule("rnn-time-major", "`time_major=False` (tf.keras 1.13-2.x RNN configs) is dropped; `True` is refused",
             "Keras 3: `Unrecognized keyword arguments passed to LSTM: {'time_major': False}`", ()),
        Rule("gru-reset-before", "a Keras 2 GRU config without `reset_after` (Keras <= 2.1) gets "
             "`reset_after=False`, the only GRU those versions had",
             "Keras 3 defaults to `reset_after=True`: a bias-shape mismatch, or other predictions", ()),
        Rule("spatial-dropout-arguments", "`SpatialDropout1D/2D/3D` configs lose `trainable` (no weights) and "
             "`noise_shape` (Keras 2 ignored it: the noise is per channel)",
             "Keras 3: `SpatialDropout1D.__init__() got an unexpected keyword argument 'trainable'`", ()),
        Rule("depthwise-groups", "`DepthwiseConv2D(groups=1)` (tf.keras 2.4+ configs) loses `groups`; other "
             "values are refused", "Keras 3: `DepthwiseConv2D.__init__() got an unexpected keyword argument "
             "'groups'`", ()),
        Rule("thresholded-relu", "`ThresholdedReLU(theta)` becomes `ReLU(threshold=theta)`: equal everywhere "
             "except at x == theta exactly (0 before, theta now)", "Keras 3: `Unknown layer: 'ThresholdedReLU'`",
             ()),
        Rule("weight-regularizer", "Keras 1's `WeightRegularizer(l1, l2)` becomes `L1L2(l1, l2)`",
             "Keras 3: `Could not locate class 'WeightRegularizer'`", ()),
    ),
    rewrite_config=_rewrite_config,
)
