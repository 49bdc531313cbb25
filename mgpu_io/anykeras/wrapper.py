"""A data-parallel wrapper in memory: find its template, count its replicas, scan its weights.

The same answers serve :class:`~mgpu_io.anykeras.callbacks.BaseModelCheckpoint` (which runs on Keras 2.2.4 and
Python 3.7 too) and :func:`~mgpu_io.keras.transfer.transfer_weights`, so this module imports only the standard
library, keeps to Python 3.7 syntax, and reads models by duck typing (``layers``, ``trainable_weights``, ...).
"""

import importlib

from mgpu_io.errors import AmbiguousTemplate

_MERGES = ("Concatenate", "Merge")


def legacy_weights(layer):
    """A layer's weights in the order legacy files store them: trainable, then non-trainable."""
    return list(layer.trainable_weights) + list(layer.non_trainable_weights)


def is_keras_model(layer):
    return hasattr(layer, "layers") and hasattr(layer, "save")


def wrapper_template(model):
    """The nested template of a data-parallel wrapper, or ``None`` when ``model`` is not one.

    A wrapper's only weighted layer is one nested model, fed by Lambda slices and merged by Concatenate/Merge.

    Raises:
        AmbiguousTemplate: several nested models hold weights, so which one is the template is not clear.
    """
    layers = list(model.layers)
    nested = [layer for layer in layers if is_keras_model(layer) and legacy_weights(layer)]
    slices = [layer for layer in layers if type(layer).__name__ == "Lambda"]
    merges = [layer for layer in layers if type(layer).__name__ in _MERGES]
    weighted = [layer for layer in layers if legacy_weights(layer)]
    if not (slices and merges and nested):
        return None
    if len(nested) > 1:
        raise AmbiguousTemplate(
            problem="The model holds {} nested models with weights ({}), so its template is ambiguous".format(
                len(nested), ", ".join(layer.name for layer in nested)
            ),
            parameter="model",
            expected="one template inside a data-parallel wrapper",
            received=f"model={model.name}",
            fix="Pass the template model itself",
        )
    return nested[0] if weighted == nested else None


def find_template(model):
    """The innermost template of an in-memory wrapper (at any depth); the model itself when it is no wrapper."""
    current = model
    while True:
        template = wrapper_template(current)
        if template is None:
            return current
        current = template


def replica_count(model):
    """How many replicas a wrapper splits each batch into (slices per input), or ``None`` for a plain model."""
    if wrapper_template(model) is None:
        return None
    slices = [layer for layer in model.layers if type(layer).__name__ == "Lambda"]
    inputs = max(1, len(model.inputs))
    return len(slices) // inputs or None


def all_layers(model):
    """Every layer of ``model``, nested models' layers included (depth first)."""
    stack = list(reversed(list(model.layers)))
    while stack:
        layer = stack.pop()
        yield layer
        if is_keras_model(layer):
            stack.extend(reversed(list(layer.layers)))


def non_finite_weights(model):
    """Names (paths) of the model's weights that hold NaN or Inf, nested models included, each once."""
    import numpy as np  # wherever Keras is

    broken, seen = [], set()
    for layer in all_layers(model):
        if is_keras_model(layer):
            continue
        for variable in legacy_weights(layer):
            if id(variable) in seen:
                continue
            seen.add(id(variable))
            value = _value(variable, model)
            # min and max are NaN where any value is NaN, and infinite where any is: two passes with no array of
            # flags as large as the weights.
            if value.dtype.kind == "f" and value.size and not (np.isfinite(value.min()) and np.isfinite(value.max())):
                broken.append(getattr(variable, "path", None) or variable.name)
    return broken


def _value(variable, model):
    import numpy as np

    # TensorFlow's variable (Keras 3's on TensorFlow holds one in ``value``): a read gives a tensor whose array is a
    # view, where ``numpy()`` copies (0.13 to 0.19 s for the 1 GB benchmark wrapper's weights).
    read = getattr(getattr(variable, "value", None), "read_value", None)
    if callable(read):
        try:
            return np.asarray(read())
        except Exception:
            pass
    try:
        return np.asarray(variable.numpy())  # Keras 3, tf_keras (eager)
    except Exception:
        pass
    package = type(model).__module__.split(".")[0]
    backend = "tensorflow.keras.backend" if package == "tensorflow" else package + ".backend"
    return np.asarray(importlib.import_module(backend).get_value(variable))
