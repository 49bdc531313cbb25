"""Instance and group normalization of Keras' add-on packages, as layers of Keras 3 that compute the same.

- tensorflow-addons' ``InstanceNormalization`` and ``GroupNormalization`` (stored as ``Addons>InstanceNormalization``
  by tf.keras 2.x) normalise each group with ``tf.nn.batch_normalization``: ``(x - mean) * rsqrt(var + epsilon)``,
  then ``gamma`` and ``beta`` per channel. That is Keras 3's ``GroupNormalization`` with the same ``groups`` (the
  instance one stores ``groups`` = its channels), ``axis``, ``epsilon``, ``center`` and ``scale``; the weights are
  the same ``gamma`` and ``beta``, in that order.
- keras_contrib's ``InstanceNormalization`` (not on PyPI; CycleGAN, pix2pix and style-transfer code) divides by
  ``std + epsilon``, not ``sqrt(var + epsilon)``: ``GroupNormalization(groups=-1)`` would differ by about
  ``epsilon / (2 std)`` of each value (measured at the layers of k224's file: 5.4e-4 at epsilon=1e-3, 1.1e-4 at
  1e-5). Its config (axis,
  epsilon, center, scale and their initializers, nothing else of its own) becomes mgpu-io's registered copy
  ``mgpu_io>InstanceNormalization`` (``mgpu_io/keras/known.py``), which computes as it did, on any ``axis``.

A class of the same name with other arguments is the user's own: it is left to the caller's ``custom_objects``
(the load names the class and how to pass it). Target keras3 only; tf_keras builds neither (no add-on installed).
"""

from mgpu_io.errors import Param, UnsupportedModel
from mgpu_io.format.config import layer_name, walk_layers
from mgpu_io.format.conversions.base import KERAS3, Family, Rule

#: tensorflow-addons' registered names and the Keras 3 class that computes each.
ADDONS = {"Addons>InstanceNormalization": "GroupNormalization", "Addons>GroupNormalization": "GroupNormalization"}
CONTRIB_CLASS = "mgpu_io>InstanceNormalization"
#: The keys of keras_contrib's ``InstanceNormalization.get_config``, and those of ``Layer.get_config`` and of the
#: first layer of a Sequential, which any layer's config may hold.
_CONTRIB_KEYS = {
    "axis",
    "epsilon",
    "center",
    "scale",
    "beta_initializer",
    "gamma_initializer",
    "beta_regularizer",
    "gamma_regularizer",
    "beta_constraint",
    "gamma_constraint",
}
_LAYER_KEYS = {"name", "trainable", "dtype", "batch_input_shape", "batch_size", "input_dtype"}


def is_contrib_instance_normalization(layer):
    """Whether a layer entry is keras_contrib's ``InstanceNormalization`` (by its class name and its config's keys).

    Example:
        >>> is_contrib_instance_normalization({"class_name": "InstanceNormalization", "config": {
        ...     "name": "n", "axis": -1, "epsilon": 1e-3, "center": True, "scale": True}})
        True
        >>> is_contrib_instance_normalization({"class_name": "InstanceNormalization", "config": {
        ...     "name": "n", "axis": -1, "epsilon": 1e-3, "center": True, "scale": True, "momentum": 0.9}})
        False
    """
    config = layer.get("config")
    if layer.get("class_name") != "InstanceNormalization" or not isinstance(config, dict):
        return False
    module = layer.get("module")
    if module is not None and not str(module).startswith("keras_contrib"):
        return False
    keys = set(config)
    return {"axis", "epsilon", "center", "scale"} <= keys <= _CONTRIB_KEYS | _LAYER_KEYS


def _refuse(layer, argument, value, expected):
    raise UnsupportedModel(
        problem=f"Layer {layer_name(layer)!r} ({layer['class_name']}) has {argument}={value!r}, which its own package "
        f"refuses too",
        expected=expected,
        received=f"{argument}={value!r}",
        fix=(
            "Pass the class that wrote it: ",
            Param("custom_objects", [layer["class_name"]], text=f"custom_objects={{{layer['class_name']!r}: ...}}"),
        ),
    )


def _rewrite_config(config, context):
    if context.target != KERAS3:
        return []
    changes = []
    for layer in walk_layers(config, wrapped=True):
        if not isinstance(layer, dict) or not isinstance(layer.get("config"), dict):
            continue
        settings = layer["config"]
        if layer.get("class_name") in ADDONS:
            axis, groups = settings.get("axis", -1), settings.get("groups", -1)
            if not isinstance(axis, int) or isinstance(axis, bool) or axis == 0:
                _refuse(layer, "axis", axis, "one axis, not the batch's")
            if not isinstance(groups, int) or isinstance(groups, bool) or (groups <= 0 and groups != -1):
                _refuse(layer, "groups", groups, "a positive number of groups, or -1")
            layer["class_name"] = ADDONS[layer["class_name"]]
            layer.pop("module", None)
            layer.pop("registered_name", None)
            changes.append("addons-group-normalization")
        elif is_contrib_instance_normalization(layer):
            axis = settings.get("axis")
            if axis is not None and (not isinstance(axis, int) or isinstance(axis, bool) or axis == 0):
                _refuse(layer, "axis", axis, "None or one axis, not the batch's")
            layer["class_name"] = CONTRIB_CLASS
            layer.pop("module", None)
            layer.pop("registered_name", None)
            changes.append("contrib-instance-normalization")
    return changes


FAMILY = Family(
    name="normalization",
    summary="instance and group normalization of tensorflow-addons and keras_contrib, as Keras 3 layers that "
    "compute the same",
    rules=(
        Rule(
            "addons-group-normalization",
            "tensorflow-addons' `InstanceNormalization` and `GroupNormalization` (`Addons>...`) become Keras 3's "
            "`GroupNormalization` with the same groups, axis, epsilon, center and scale: the same computation and "
            "weights (target keras3 only)",
            "Keras 3: `Could not locate class 'Addons>InstanceNormalization'`",
            ("tf28tfa",),
        ),
        Rule(
            "contrib-instance-normalization",
            "keras_contrib's `InstanceNormalization` (recognised by its config's keys) becomes mgpu-io's registered "
            "copy `mgpu_io>InstanceNormalization`, which divides by `std + epsilon` as it did (Keras 3's "
            "`GroupNormalization(groups=-1)` divides by `sqrt(var + epsilon)`); plain Keras 3 finds it after "
            "`import mgpu_io.keras.known` (target keras3 only)",
            "Keras 3: `Could not locate class 'InstanceNormalization'`",
            ("k224",),
        ),
    ),
    rewrite_config=_rewrite_config,
)
