"""Load any multi-GPU wrapper file (or plain legacy Keras file) as a Keras 3 model, on a CPU-only machine.

This is a Keras adapter over the format core: the file is repaired into a temporary clean legacy file by
:func:`mgpu_io.unwrap` (so nothing stored in it ever runs), Keras 3 loads that with its own loader and its own safe
mode, and mgpu-io then restores what Keras 3's legacy loader drops: the training configuration keyed by the
template's outputs and the optimizer state in Keras 3's layout.
"""

import json
import tempfile
import warnings
import zipfile
from pathlib import Path

from mgpu_io.errors import InvalidArgument, MgpuIOWarning
from mgpu_io.h5attrs import read_str_list
from mgpu_io.optimizer_state import read_optimizer_state
from mgpu_io.stored import CONFIG, WEIGHTS, open_stored
from mgpu_io.unwrap import unwrap


def load_model(path, custom_objects=None, compile=True, *, weights=None, safe_mode=True):
    """Load the innermost template of a wrapper file (or a plain legacy file) as a Keras 3 model.

    Args:
        path: a full-model ``.h5`` of any supported writer (wrapper, nested wrapper, or plain legacy model), a
            JSON config (``model.to_json()``) together with ``weights``, or a Keras 3 ``.keras`` file (loaded by
            Keras as it is).
        custom_objects: passed to Keras for the template's own custom layers.
        compile: restore the training configuration (loss, metrics, loss weights keyed by the template's output
            names) and the optimizer state, so that ``fit`` continues where the old run stopped.
        weights: the weights file saved beside a JSON config (a weights-only ``.h5``, wrapper or not).
        safe_mode: Keras' safe mode, left as the caller sets it: the template's own Lambda layers are refused by
            Keras unless ``safe_mode=False``. Slice layers never reach Keras: they are removed first.

    Returns:
        A ``keras.Model``.

    Raises:
        MgpuIOError: the file cannot be repaired (see :func:`mgpu_io.unwrap`), or a weights-only file came without
            its architecture.

    Warns:
        MgpuIOWarning: BatchNormalization statistics are NaN/Inf (see :func:`recalibrate_batchnorm`), or the
            optimizer cannot be restored as saved (the reason is given).

    Example:
        >>> model = load_model("fixtures/files/k224_functional_bn_x2_full.h5")
        >>> model.name, model.output_names, model.optimizer.__class__.__name__
        ('template', ['out_a', 'out_b'], 'Adam')
    """
    import keras

    path = Path(path)
    if zipfile.is_zipfile(path):  # Keras 3's own .keras format needs no repair
        model = keras.models.load_model(path, custom_objects=custom_objects, compile=compile, safe_mode=safe_mode)
        _warn_non_finite_batchnorm(model, path)
        return model
    with open_stored(path) as stored:
        file_type = stored.file_type
        training_config = stored.training_config
    if file_type == WEIGHTS and weights is None:
        raise InvalidArgument(
            f"A weights-only file holds no architecture to build a model from. Expected a full model file, or a "
            f"JSON config with weights=. Received: filepath={path} (weights only). Pass the architecture: "
            f"load_model('model.json', weights='{path.name}'), or build the model in code and call "
            f"mgpu_io.transfer_weights('{path.name}', model)."
        )
    if file_type != CONFIG and weights is not None:
        raise InvalidArgument(
            f"weights= goes with a JSON config. Expected a JSON config as the first argument. Received: "
            f"filepath={path} ({file_type} file). Leave out weights=."
        )
    with tempfile.TemporaryDirectory(prefix="mgpu-io-") as scratch:
        scratch = Path(scratch)
        if file_type == CONFIG:
            unwrap(path, scratch / "model.json", allow_plain=True)
            unwrap(weights, scratch / "weights.h5", config=path, allow_plain=True)
            from keras.src.saving.serialization_lib import SafeModeScope  # model_from_json takes no safe_mode

            with SafeModeScope(safe_mode):
                model = keras.models.model_from_json((scratch / "model.json").read_text(),
                                                     custom_objects=custom_objects)
            model.load_weights(scratch / "weights.h5")
        else:
            clean = scratch / "model.h5"
            unwrap(path, clean, allow_plain=True)
            model = keras.models.load_model(clean, custom_objects=custom_objects, compile=False,
                                            safe_mode=safe_mode)
            if compile and training_config is not None:
                _compile(model, clean, custom_objects)
    _warn_non_finite_batchnorm(model, path)
    return model


def _compile(model, clean, custom_objects):
    """Compile from the repaired file's training config, then restore the optimizer state in Keras 3's layout."""
    import h5py
    from keras.src.legacy.saving import saving_utils  # Keras' own reader of legacy training configs

    with h5py.File(clean, "r") as h5:
        training_config = json.loads(h5.attrs["training_config"])
        stored = h5.get("optimizer_weights")
        arrays = None
        if stored is not None:
            arrays = [stored[name][()] for name in read_str_list(stored.attrs, "weight_names")]
    optimizer_name = training_config["optimizer_config"]["class_name"]
    try:
        arguments = saving_utils.compile_args_from_training_config(training_config, custom_objects)
    except (ValueError, TypeError, KeyError) as error:
        warnings.warn(
            f"The saved optimizer {optimizer_name} cannot be rebuilt in Keras 3 ({error}); the model is compiled "
            f"with Keras' default optimizer and the saved loss and metrics. Compile it again to choose one.",
            MgpuIOWarning,
            stacklevel=3,
        )
        training_config = dict(training_config, optimizer_config={"class_name": "RMSprop", "config": {}})
        arguments = saving_utils.compile_args_from_training_config(training_config, custom_objects)
        arrays = None
    model.compile(**arguments)
    if arrays is not None:
        _restore_optimizer_state(model, optimizer_name, arrays)


def _restore_optimizer_state(model, optimizer_name, arrays):
    variables = model.trainable_variables
    state = read_optimizer_state(optimizer_name, arrays, [tuple(v.shape) for v in variables])
    if state.problem is None:
        optimizer = model.optimizer
        optimizer.build(variables)
        by_role = {}
        for variable in optimizer.variables:
            leaf = variable.path.rsplit("/", 1)[-1]
            for role in state.slots:
                if leaf.endswith("_" + role):
                    by_role.setdefault(role, []).append(variable)
        for role, values in state.slots.items():
            targets = by_role.get(role, [])
            if targets and len(targets) != len(values):
                state.problem = f"Keras 3's {optimizer_name} has {len(targets)} {role} slots, the file {len(values)}"
                break
        else:
            for role, values in state.slots.items():
                for variable, value in zip(by_role.get(role, []), values):
                    variable.assign(value)
            if state.iterations is not None:
                optimizer.iterations.assign(state.iterations)
            return
    warnings.warn(
        f"The saved optimizer state is not restored: {state.problem}. Training continues with a fresh "
        f"{optimizer_name} state.",
        MgpuIOWarning,
        stacklevel=4,
    )


def _warn_non_finite_batchnorm(model, path):
    import numpy as np

    broken = []
    for layer in _all_layers(model):
        if type(layer).__name__ == "BatchNormalization":
            if any(not np.isfinite(np.asarray(v)).all() for v in layer.weights):
                broken.append(layer.name)
    if broken:
        warnings.warn(
            f"BatchNormalization statistics are NaN or Inf in layers {broken} of {path}: predictions will be NaN. "
            f"This is the uneven-last-batch bug of multi-GPU training. Recompute the moving statistics from your "
            f"data with mgpu_io.recalibrate_batchnorm(model, data); its report lists any learned weights (gamma, "
            f"beta) that are lost too.",
            MgpuIOWarning,
            stacklevel=3,
        )


def _all_layers(model):
    for layer in model.layers:
        yield layer
        if hasattr(layer, "layers"):
            yield from _all_layers(layer)
