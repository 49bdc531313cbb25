"""Load any multi-GPU wrapper file (or plain legacy Keras file) as a Keras 3 model, on a CPU-only machine.

This is a Keras adapter over the format core: the repair that :func:`mgpu_io.unwrap` would write is planned (so
nothing stored in the file ever runs), Keras 3 builds the repaired config with its own legacy config reader under
the caller's safe mode, the planned weights are assigned straight from the file (no temporary copy), and mgpu-io
restores what Keras 3's legacy loader drops: the training configuration keyed by the template's outputs and the
optimizer state in Keras 3's layout.
"""

import tempfile
import warnings
import zipfile
from pathlib import Path

from mgpu_io.errors import InvalidArgument, MgpuIOWarning, WeightsMismatch
from mgpu_io.h5attrs import read_str_list
from mgpu_io.optimizer_state import read_optimizer_state
from mgpu_io.stored import CONFIG, WEIGHTS, open_stored
from mgpu_io.unwrap import planned, unwrap


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
            with planned(path, allow_plain=True) as plan:
                model = _build(plan.config, custom_objects, safe_mode)
                _assign_weights(model, plan)
                optimizer_arrays = None
                stored_optimizer = plan.stored.optimizer_weights
                if compile and stored_optimizer is not None:
                    optimizer_arrays = [stored_optimizer[name][()]
                                        for name in read_str_list(stored_optimizer.attrs, "weight_names")]
                training = plan.training
            if compile and training is not None:
                _compile(model, training, optimizer_arrays, custom_objects)
    _warn_non_finite_batchnorm(model, path)
    return model


def _build(config, custom_objects, safe_mode):
    """Build a legacy model config as Keras 3's own legacy loader does (its reader, its scopes)."""
    from keras.src.legacy.saving import saving_options, saving_utils
    from keras.src.saving.serialization_lib import SafeModeScope

    with saving_options.keras_option_scope(use_legacy_config=True), SafeModeScope(safe_mode):
        return saving_utils.model_from_config(config, custom_objects=custom_objects)


def _assign_weights(model, plan):
    """Assign the planned weights to the built model's layers, checking every count and shape."""
    stored = {layer.layer: layer for layer in plan.layers if layer.names}
    for index, layer in enumerate(model.layers):
        variables = list(layer.trainable_weights) + list(layer.non_trainable_weights)
        source = stored.pop(layer.name, None)
        arrays = [array for _, array in plan.arrays(source)] if source is not None else []
        if [tuple(v.shape) for v in variables] != [tuple(a.shape) for a in arrays]:
            raise WeightsMismatch(
                f"Weights do not fit layer #{index} (named {layer.name}). Expected shapes "
                f"{[tuple(v.shape) for v in variables]}. Received: {[tuple(a.shape) for a in arrays]} from "
                f"filepath={plan.stored.path}. The file's config and weights disagree; inspect it with "
                f"`mgpu-io inspect`."
            )
        for variable, array in zip(variables, arrays):
            variable.assign(array)
    if stored:
        raise WeightsMismatch(
            f"Stored weights belong to no layer of the model. Expected one group per weighted layer. Received: "
            f"{sorted(stored)} in filepath={plan.stored.path}. Inspect the file with `mgpu-io inspect`."
        )


def _compile(model, training_config, arrays, custom_objects):
    """Compile from the repaired training config, then restore the optimizer state in Keras 3's layout."""
    from keras.src.legacy.saving import saving_utils  # Keras' own reader of legacy training configs

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
