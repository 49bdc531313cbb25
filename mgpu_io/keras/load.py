"""Load any multi-GPU wrapper file (or plain legacy Keras file) as a Keras 3 model, on a CPU-only machine.

This is a Keras adapter over the format core: the repair that :func:`mgpu_io.unwrap` would write is planned (so
nothing stored in the file ever runs), Keras 3 builds the repaired config with its own legacy config reader under
the caller's safe mode, the planned weights are assigned straight from the file (no temporary copy), and mgpu-io
restores what Keras 3's legacy loader drops: the training configuration keyed by the template's outputs and the
optimizer state in Keras 3's layout.
"""

import contextlib
import copy
import functools
import mmap
import warnings
from pathlib import Path

import h5py
import numpy as np

from mgpu_io import upstream
from mgpu_io.anykeras.wrapper import non_finite_weights
from mgpu_io.errors import (
    InvalidArgument,
    KerasRefused,
    MgpuIOError,
    MgpuIOWarning,
    Param,
    WeightsMismatch,
    first_line,
)
from mgpu_io.format import door
from mgpu_io.format.door import sharing
from mgpu_io.format.optimizer import KERAS2_RULES, TRANSLATED_OPTIMIZERS, read_optimizer_state, slot_name
from mgpu_io.format.plan_data import PlanData, plan_data, source_keras_version
from mgpu_io.format.read import CONFIG, WEIGHTS, file_of, in_memory, on_disk, open_stored, reading
from mgpu_io.format.sandbox import probed
from mgpu_io.format.string_attrs import read_str_list
from mgpu_io.keras._compat import (
    BUILD_ERRORS,
    Deferred,
    import_keras,
    model_from_legacy_config,
    unknown_layer_class,
    with_names_given_after,
    with_registered_names,
    with_scoped_objects,
)
from mgpu_io.keras.compile import Unresolved, compile_arguments
from mgpu_io.keras.optimizers import dense_gradients, legacy_classes, rebuilt_optimizer
from mgpu_io.keras.runtime import adapt
from mgpu_io.keras.writer_batchnorm import follow_writers_batchnorm
from mgpu_io.keras.writer_crossentropy import follow_writers_crossentropy
from mgpu_io.lambdas.supplied import as_mapping, lambda_objects


def load_model(path, custom_objects=None, compile=True, *, weights=None, safe_mode=True, lambdas=None):
    """Load the innermost template of a wrapper file (or a plain legacy file) as a Keras 3 model.

    Args:
        path: a full-model ``.h5`` of any supported writer (wrapper, nested wrapper, or plain legacy model; a path
            or an open ``h5py.File``, one held in memory included), a
            TF 2.x SavedModel folder of one (read as data), a JSON or YAML config (``model.to_json()``) together
            with ``weights``, or a Keras 3 ``.keras`` file (loaded by Keras as it is).
        custom_objects: passed to Keras for the template's own custom layers: ``{name: class}``, or a list of
            ``MODULE:CLASS`` / ``MODULE`` specs, imported here (as the command line's ``--custom-objects``).
        compile: restore the training configuration (loss, metrics, loss weights keyed by the template's output
            names) and the optimizer state, so that ``fit`` continues where the old run stopped.
        weights: the weights saved beside a JSON config (a weights-only ``.h5``, wrapper or not, or a TF-format
            checkpoint).
        safe_mode: Keras' safe mode, left as the caller sets it. Stored bytecode never reaches Keras: slice
            layers are removed and every other Lambda refers to a function by name (see ``lambdas``).
        lambdas: ``{layer name: function}``: the functions of the template's own Lambda layers (your code, which
            the file holds only as bytecode that is never run; ``mgpu-io inspect`` lists them). Lambdas that
            Keras itself wrote (InceptionResNetV2's scaling) need no entry.

    Returns:
        A ``keras.Model``.

    Raises:
        MgpuIOError: the file cannot be repaired (see :func:`mgpu_io.unwrap`), or a weights-only file came without
            its architecture.
        MissingLambda: a Lambda layer holds your code and ``lambdas`` has no function for it (each is described).

    Warns:
        MgpuIOWarning: weights are NaN/Inf (see :func:`recalibrate_batchnorm`), or the optimizer cannot be restored
            as saved (the reason is given).

    Example:
        >>> model = load_model("fixtures/files/k224_functional_bn_x2_full.h5")
        >>> model.name, model.output_names, model.optimizer.__class__.__name__
        ('template', ['out_a', 'out_b'], 'Adam')
    """
    keras = import_keras()
    custom_objects = _given_objects(custom_objects)  # --custom-objects' specs, imported here
    if in_memory(path) or in_memory(weights):  # an h5py.File in memory only (driver='core'), as Keras takes one
        with on_disk(path) as readable, on_disk(weights) as readable_weights:
            return load_model(
                readable, custom_objects, compile, weights=readable_weights, safe_mode=safe_mode, lambdas=lambdas
            )
    path, weights = Path(file_of(path)), file_of(weights, "weights")  # an open h5py.File, as Keras takes one
    # What the input is, decided once (format/door.py); a legacy file is planned in the same child that looked at it,
    # which hands the plan back as data (its weights in shared memory): the file is opened once.
    described, outcome = door.describe_then(path, functools.partial(_plan_in_child, path, weights, compile=compile))
    if described.kind in (door.KERAS3_WEIGHTS, door.FOLDER):
        raise door.refusal(
            described, "load_model", "a model file (legacy .h5, .keras, SavedModel, or a config with weights=)"
        )
    if described.kind == door.TF_CHECKPOINT:
        raise InvalidArgument(
            problem="A TF checkpoint holds weights only, no architecture to build a model from",
            parameter="filepath",
            expected=("a full model (.h5 or SavedModel folder), or a JSON config with ", Param("weights")),
            received=f"filepath={path}",
            fix=f"Pass the architecture: load_model('model.json', weights='{path.name}')",
        )
    weights_described = door.glance(weights) if weights is not None else None  # first bytes only: no probe
    if described.kind == door.SAVEDMODEL or getattr(weights_described, "kind", None) in door.TENSORFLOW_KINDS:
        from mgpu_io.tf.convert import read_converted

        return read_converted(
            lambda readable, readable_weights: load_model(
                readable, custom_objects, compile, weights=readable_weights, safe_mode=safe_mode, lambdas=lambdas
            ),
            (described, None),
            (weights_described, path),
        )
    if described.kind == door.KERAS_ARCHIVE:  # Keras 3's own .keras format needs no repair
        model = _load_archive(keras, path, custom_objects, compile, safe_mode, lambdas)
        _warn_non_finite(model, path)
        adapt(model, keras)
        return model
    plan = _planned(path, weights, outcome[0] if outcome is not None else None, compile)
    model = build(plan, custom_objects=custom_objects, compile=compile, safe_mode=safe_mode, lambdas=lambdas)
    del plan  # its arrays are the model's now
    _warn_non_finite(model, path)
    adapt(model, keras)  # the writer's function by a route this machine runs (channels_first on a CPU, ...)
    return model


def _load_archive(keras, path, custom_objects, compile, safe_mode, lambdas):
    """A ``.keras`` file, loaded by Keras as it is; each Lambda that refers to a function by name (as mgpu-io's
    ``.keras`` outputs do) gets it from ``lambdas``, or a :class:`MissingLambda` error names it first.

    A Lambda that holds stored bytecode (Keras 3's ``__lambda__``) is written by reference, as in a repaired
    ``.h5``, in a copy of the archive that Keras then loads (the input is never changed): its function comes from
    ``lambdas`` or, with ``safe_mode=False``, from its recovered source (:mod:`mgpu_io.lambdas.trusted`)."""
    import tempfile

    from mgpu_io.format.conversions import Context, convert_config
    from mgpu_io.format.keras3 import archive_config, archive_with_config
    from mgpu_io.lambdas.by_reference import template_lambdas

    config = archive_config(path)
    stored = template_lambdas(config)
    if not any(lam.code is not None for lam in stored):
        custom_objects = lambda_objects(config, lambdas, custom_objects, source=path)
        return _keras_loads(keras, path, path, custom_objects, compile, safe_mode)
    rewritten, _ = convert_config(config, Context(keras3_writer=True))
    custom_objects = _lambda_objects(rewritten, stored, lambdas, custom_objects, safe_mode, path)
    with tempfile.TemporaryDirectory(prefix="mgpu-io-") as folder:
        copy = Path(folder) / "model.keras"
        archive_with_config(path, rewritten, copy)
        return _keras_loads(keras, copy, path, custom_objects, compile, safe_mode)


def _keras_loads(keras, archive, path, custom_objects, compile, safe_mode):
    try:
        return keras.models.load_model(archive, custom_objects=custom_objects, compile=compile, safe_mode=safe_mode)
    except MgpuIOError:  # a refusal of ours from inside Keras' load (a ValueError too): already one clear line
        raise
    except (TypeError, ValueError, KeyError, AttributeError) as error:
        raise KerasRefused(  # Keras' own first line is the problem's cause, as Keras said it
            problem=f"Keras 3 cannot load the .keras file: {_sentence(first_line(error))}",
            expected="a .keras file whose layers Keras 3 builds",
            received=f"filepath={path} ({type(error).__name__})",
            fix=(
                "Pass your own layers and functions in ",
                Param("custom_objects"),
                " (and Lambda functions in ",
                Param("lambdas"),
                "); `mgpu-io inspect` lists its Lambda layers",
            ),
        ) from None


def _given_objects(custom_objects):
    """``custom_objects`` as a mapping; a list of ``MODULE:CLASS`` specs imported (the importer of user modules is
    imported only then)."""
    if not isinstance(custom_objects, (list, tuple)):
        return custom_objects
    from mgpu_io.keras.custom import given_objects

    return given_objects(custom_objects)


def _lambda_objects(config, stored, lambdas, custom_objects, safe_mode, source):
    """The ``custom_objects`` that build ``config`` (whose Lambdas refer to functions by name): the caller's, the
    caller's ``lambdas`` and, where the caller trusts the file (``safe_mode=False``), each other stored function
    rebuilt from its recovered source. ``stored``: the Lambdas as the file holds them."""
    lambdas = as_mapping(lambdas, [lam.layer for lam in stored])
    shapes = {}
    if not safe_mode:  # the caller trusts the file, as Keras' safe_mode=False: rebuild its Lambdas from source
        from mgpu_io.lambdas.trusted import recovered_functions, recovered_output_shapes

        rebuilt = recovered_functions(stored, lambdas, custom_objects)
        lambdas.update(rebuilt)
        shapes = recovered_output_shapes(stored, rebuilt, custom_objects)
    objects = lambda_objects(config, lambdas, custom_objects, source=source, original=stored)
    if shapes:  # each kept shape function by reference too, as the Lambda's function is
        from mgpu_io.format.config import layer_name, walk_layers
        from mgpu_io.lambdas.stored import reference

        for layer in walk_layers(config, wrapped=True):
            name = str(layer_name(layer)) if isinstance(layer, dict) else None
            if layer.get("class_name") == "Lambda" and name in shapes and isinstance(layer.get("config"), dict):
                layer["config"]["output_shape"] = reference(f"{name}>output_shape")
                layer["config"].pop("output_shape_type", None)
                objects[f"{name}>output_shape"] = shapes[name]
    return objects


def _sentence(line):
    """Keras' line as the cause inside our sentence (its own final period left to ours)."""
    return line[:-1] if line.endswith(".") else line


def _plan_in_child(path, weights, description, compile=True):
    """In the door's child: the plan of a legacy file, as data (:func:`~mgpu_io.format.plan_data.plan_data`; the
    optimizer state only to ``compile``), else ``None`` (the parent plans what it reads with ``weights=``)."""
    if weights is not None or description.kind not in (door.LEGACY_MODEL, door.LEGACY_WEIGHTS):
        return None
    return plan_data(path, allow_plain=True, optimizer_state=compile, keras2_functions=compile)


def _weights_plan(path, weights):
    """In the sandbox's child: the plan of the weights-only file ``weights`` laid out by the JSON config ``path``,
    as data; the file is opened once, to check what it holds and to plan it."""
    with open_stored(weights) as stored:
        if stored.file_type != WEIGHTS:
            raise InvalidArgument(
                problem=(Param("weights"), " takes a weights-only file"),
                parameter="weights",
                expected="the file of save_weights() (or a weights checkpoint)",
                received=(
                    Param("weights", weights, text=f"weights={weights}"),
                    f" (a {stored.file_type} file, which carries its own architecture)",
                ),
                fix=f"Load it alone: load_model('{Path(weights).name}')",
            )
        with sharing(weights, stored.h5):
            return plan_data(weights, config=path, allow_plain=True)


def _planned(path, weights, handed=None, compile=True):
    """The plan of ``path`` (or of ``weights`` laid out by the JSON config ``path``) as data, refusing what cannot
    load; ``handed``: the plan the door's child made already."""
    if weights is not None:
        if door.sniff(path) == door.HDF5:
            raise InvalidArgument(
                problem=(Param("weights"), " goes with a JSON config"),
                parameter="weights",
                expected="a JSON config as the first argument",
                received=f"filepath={path} (an HDF5 file, which carries its own weights)",
                fix=("Leave out ", Param("weights")),
            )
        return probed(weights, functools.partial(_weights_plan, path, weights))
    plan = (
        handed
        if handed is not None
        else probed(
            path,
            functools.partial(plan_data, path, allow_plain=True, optimizer_state=compile, keras2_functions=compile),
        )
    )
    if plan.file_type == WEIGHTS:
        raise InvalidArgument(
            problem="A weights-only file holds no architecture to build a model from",
            parameter="filepath",
            expected=("a full model file, or a JSON config with ", Param("weights")),
            received=f"filepath={path} (weights only)",
            fix=f"Pass the architecture: load_model('model.json', weights='{path.name}'), or build the model in code "
            f"and call mgpu_io.transfer_weights('{path.name}', model)",
        )
    if plan.file_type == CONFIG:
        raise InvalidArgument(
            problem="A JSON config holds no weights to load",
            parameter="weights",
            expected=("a full model file, or a JSON config with ", Param("weights")),
            received=f"filepath={path} (config only)",
            fix=f"Pass its weights: load_model('{path.name}', weights='weights.h5')",
        )
    return plan


def _build_refusal(error, plan, custom_objects):
    """The error to raise for what Keras raised building ``plan``'s config: ours where Keras re-raised one of ours;
    a layer class it has not, found in the config as Keras looks it up (:func:`unknown_layer_class`: Keras' message
    is never read for it); else Keras' first line."""
    ours = _ours_within(error)
    if ours is not None:  # Keras re-raised ours as its own (a Lambda's shape inference): ours names the cause
        return ours
    name = unknown_layer_class(plan.config, custom_objects)
    if name is not None:
        return KerasRefused(
            problem=f"Keras 3 cannot build the repaired template: it has no class {name!r}, a custom layer or "
            f"object of the code that wrote the file",
            parameter="custom_objects",
            expected="every class of the template to be Keras' own or given",
            received=f"filepath={plan.stored.path} (class_name={name!r})",
            fix=("Pass the class: ", Param("custom_objects", [name], text=f"custom_objects={{{name!r}: {name}}}")),
        )
    return KerasRefused(
        problem=f"Keras 3 cannot build the repaired template: {_sentence(first_line(error))}",
        expected="a config that Keras 3 builds",
        received=f"filepath={plan.stored.path} ({type(error).__name__})",
        fix="Inspect it with `mgpu-io inspect`; if a layer is named, rebuild the template in code and load the "
        "weights with mgpu_io.transfer_weights",
    )


def _ours_within(error):
    """The first of mgpu-io's own errors in ``error``'s chain of causes (Keras re-raises some as its own)."""
    seen, current = 0, error
    while current is not None and seen < 20:
        if isinstance(current, MgpuIOError):
            return current
        current, seen = current.__cause__ or current.__context__, seen + 1
    return None


def build(
    plan, *, custom_objects=None, compile=True, include_optimizer=True, safe_mode=True, lambdas=None, faithful=True
):
    """Build a :class:`~mgpu_io.format.plan.Plan` as a Keras 3 model: config, weights, training setup, optimizer.

    The plan's file must still be open, or the plan be data (:mod:`mgpu_io.format.plan_data`). ``faithful``: rebuild the
    optimizer with its writer's update rule (:mod:`mgpu_io.keras.optimizers`); ``False``: with Keras 3's own class
    (what a ``.keras`` output for plain Keras 3 holds).
    """
    custom_objects = _given_objects(custom_objects)
    custom_objects = _lambda_objects(plan.config, plan.lambdas, lambdas, custom_objects, safe_mode, plan.stored.path)
    custom_objects = with_scoped_objects(custom_objects)  # the caller's custom_object_scope, kept in nested scopes
    custom_objects = with_registered_names(custom_objects, plan.config)  # "Name" for a registered "package>Name"
    custom_objects = with_names_given_after(custom_objects)  # a class whose __init__ takes no name
    from mgpu_io.keras import tfops

    deferred, stored_names = Deferred(), {}

    def create(objects):  # each build on a copy: Keras' from_config may change the config it reads before it fails
        return deferred.create(
            lambda: (  # a second build (see Deferred.create) notes its own layers only
                ancillary.clear(),
                model_from_legacy_config(copy.deepcopy(plan.config), objects, safe_mode),
            )[1]
        )

    try:
        with tfops.collecting() as ancillary:  # tf.keras' AddLoss/AddMetric, outside the path to the outputs
            try:
                model = create(custom_objects)
            except BUILD_ERRORS as error:
                if not upstream.said(upstream.KERAS_EMPTY_CROP, error):
                    raise
                from mgpu_io.keras.known import EMPTY_CROPPING

                # A cropping that leaves a size of 0, which tf.keras sliced to an empty tensor: built as it did
                deferred = Deferred()
                model = create({**EMPTY_CROPPING, **custom_objects})
    except MgpuIOError:  # a refusal of ours from inside the build (a ValueError too): already one clear line
        raise
    except BUILD_ERRORS as error:
        raise _build_refusal(error, plan, custom_objects) from None
    tfops.share_wrapped_layers(model)
    tfops.attach_ancillary(model, ancillary)
    try:
        with reading(plan.stored.path, "reading the weights"):
            _assign_weights(model, plan, deferred, stored_names)
    except BaseException:
        with contextlib.suppress(Exception):
            deferred.finish()
        raise
    try:
        deferred.finish()
        _finalize_states(model)
    except (ValueError, TypeError) as error:  # Keras refuses a stored value (a dtype it has no type for)
        first = first_line(error)
        raise WeightsMismatch(
            problem=f"Keras 3 refuses a stored weight: {first}",
            parameter="filepath",
            expected="weights of the dtypes Keras writes (float16, float32, float64)",
            received=f"filepath={plan.stored.path}",
            fix="The file is damaged; inspect it with `mgpu-io inspect`",
        ) from None
    if compile and plan.training is not None:
        arrays = _optimizer_arrays(plan) if include_optimizer else None
        order = _writer_order(model, plan.config, source_keras_version(plan.stored), stored_names)
        _compile(model, plan.training, arrays, custom_objects, plan.stored.keras_version, faithful, order)
        if faithful:  # trained as its writer trained: BatchNormalization's moving statistics, cross-entropy's route
            follow_writers_batchnorm(model, source_keras_version(plan.stored), plan.stored.backend)
            follow_writers_crossentropy(model, source_keras_version(plan.stored))
        if (
            arrays is None
            and getattr(model, "optimizer", None) is not None
            and model.compiled
            and not model.optimizer.built
        ):
            model.optimizer.build(model.trainable_variables)  # a fresh state that Keras saves and reloads whole
    return model


def _optimizer_arrays(plan):
    """The stored optimizer state as ``(name, array)`` pairs (tf_keras and Keras 3 say each slot's role by name),
    where the plan carries it over; ``None`` otherwise."""
    if isinstance(plan, PlanData):
        return plan.optimizer_arrays
    stored = plan.optimizer_weights
    if stored is None:
        return None
    return [(name, _read(stored[name])) for name in read_str_list(stored.attrs, "weight_names")]


def _finalize_states(model):
    """What Keras' own loaders do after loading a layer's variables: an adapted ``Normalization`` computes its mean
    and variance tensors from them (``finalize_state``); assigned by mgpu-io, they would keep the build's zeros and
    ones (issue 32: tf.keras 2.4-2.15's adapted Normalization predicted otherwise)."""
    for layer in model._flatten_layers(include_self=False, recursive=True):
        if hasattr(layer, "finalize_state") and layer.weights:
            layer.finalize_state()


def _assign_weights(model, plan, deferred=None, stored_names=None):
    """Assign the planned weights to the built model's layers, checking every count and shape (as the initial
    values of variables that ``deferred`` created without any); ``stored_names`` gets each variable's stored name
    (by ``id``)."""
    stored = {layer.layer: layer for layer in plan.layers if layer.names}
    from mgpu_io.keras.tfops import ancillary_layers

    for index, layer in enumerate([*model.layers, *ancillary_layers(model)]):
        state = {id(v) for v in getattr(layer, "state_variables", ())}  # an AddMetric's mean: never stored
        variables = [v for v in [*layer.trainable_weights, *layer.non_trainable_weights] if id(v) not in state]
        source = stored.pop(layer.name, None)
        values = [value for _, value in plan.converted(source)] if source is not None else []
        # read here, or handed over by the sandbox's child, into arrays nothing else holds
        fresh = [isinstance(value, h5py.Dataset) or isinstance(plan, PlanData) for value in values]
        arrays = [_read(value) for value in values]
        if [tuple(v.shape) for v in variables] != [tuple(a.shape) for a in arrays]:
            raise WeightsMismatch(
                problem=f"Weights do not fit layer #{index} (named {layer.name})",
                parameter="filepath",
                expected=f"shapes {[tuple(v.shape) for v in variables]}",
                received=f"{[tuple(a.shape) for a in arrays]} from filepath={plan.stored.path}",
                fix="The file's config and weights disagree; inspect it with `mgpu-io inspect`",
            )
        for variable, array, handed_over in zip(variables, arrays, fresh):
            _assign(variable, array, handed_over, deferred)
        if source is not None and len(source.names) == len(variables) and stored_names is not None:
            stored_names.update({id(variable): name for variable, name in zip(variables, source.names)})
    if stored:
        raise WeightsMismatch(
            problem="Stored weights belong to no layer of the model",
            parameter="filepath",
            expected="one group per weighted layer",
            received=f"{sorted(stored)} in filepath={plan.stored.path}",
            fix="Inspect the file with `mgpu-io inspect`",
        )


#: Bytes: how TensorFlow aligns its own CPU buffers, which its kernels may assume.
_ALIGNMENT = 64
#: Weights of at least this many bytes are read into memory mapped for them with all its pages in place
#: (``MAP_POPULATE``, Linux). NumPy asks for transparent huge pages for large arrays, and where the kernel compacts
#: memory to find them (``defrag=madvise``, the default of many distributions) the first touch of a fresh
#: gigabyte took 0.8-1.5 s on the benchmark machine, against 0.47-0.50 s for small pages mapped in one call.
_MAPPED_FROM = 1 << 20
_POPULATED = (mmap.MAP_PRIVATE | mmap.MAP_ANONYMOUS | mmap.MAP_POPULATE) if hasattr(mmap, "MAP_POPULATE") else None


def _read(value):
    """A dataset's data in a fresh array aligned as TensorFlow aligns its own, so that :func:`_assign` can hand it
    over without a copy; an array (a converted weight) is returned as it is."""
    if not isinstance(value, h5py.Dataset):
        return value
    if value.ndim == 0 or value.size == 0 or value.dtype.kind != "f":
        return value[()]
    nbytes = value.size * value.dtype.itemsize
    if nbytes >= _MAPPED_FROM and _POPULATED is not None:
        raw = np.frombuffer(mmap.mmap(-1, nbytes, flags=_POPULATED), np.uint8)  # page-aligned
    else:
        raw = np.empty(nbytes + _ALIGNMENT, np.uint8)
        raw = raw[-raw.ctypes.data % _ALIGNMENT :][:nbytes]
    array = raw.view(value.dtype).reshape(value.shape)
    value.read_direct(array)
    return array


def _assign(variable, array, handed_over=False, deferred=None):
    """``variable.assign(array)``, or ``array`` as the initial value of a variable that ``deferred`` created without
    one.

    An array ``handed_over`` (read by :func:`_read` for this variable alone, held by nothing else) becomes, on
    TensorFlow, the variable's buffer through DLPack, with no copy, where it is aligned and of the variable's
    dtype: the copy that ``assign`` makes of a NumPy array takes as long as reading the array from the file.
    """
    if (
        handed_over
        and isinstance(array, np.ndarray)
        and array.dtype.kind == "f"
        and array.flags.c_contiguous
        and array.ctypes.data % _ALIGNMENT == 0
        and str(array.dtype) == str(variable.dtype)
        and import_keras().backend.backend() == "tensorflow"
    ):
        import tensorflow as tf

        array = tf.experimental.dlpack.from_dlpack(array.__dlpack__())
    if deferred is None or not deferred.give(variable, array):
        variable.assign(array)


def _compile(model, training_config, arrays, custom_objects, keras_version=None, faithful=True, order=None):
    """Compile from the repaired training config, then restore the optimizer state in Keras 3's layout.

    What Keras 3 cannot rebuild is said in a warning, never a failed load: an unknown optimizer gives Keras'
    default one; a metric that cannot be rebuilt is left out; an unknown loss (a custom function's name) leaves the
    model uncompiled (:mod:`mgpu_io.keras.compile`).
    """
    optimizer_name = (training_config.get("optimizer_config") or {}).get("class_name")
    legacy_classes()  # registered, for a file saved with one of them (mgpu_io>LegacyRMSprop)
    optimizer, rule = rebuilt_optimizer(training_config.get("optimizer_config"), keras_version, faithful)
    if optimizer is not None and faithful and rule.family == KERAS2_RULES:
        dense_gradients(optimizer)  # an Embedding's gradient applied to every row, as the writer applied it
    if optimizer is not None:  # the writer's update rule; Keras' reading of the same config would lose it
        training_config = dict(training_config, optimizer_config={"class_name": "SGD", "config": {}})
    try:
        arguments, dropped = compile_arguments(model, training_config, custom_objects, keras_version)
        if optimizer is not None:
            arguments["optimizer"] = optimizer
    except Unresolved as error:
        return _uncompiled(error)
    except _COMPILE_ERRORS as error:
        fallback = dict(training_config, optimizer_config={"class_name": "RMSprop", "config": {}})
        try:
            arguments, dropped = compile_arguments(model, fallback, custom_objects, keras_version)
        except (Unresolved, *_COMPILE_ERRORS) as loss_error:
            return _uncompiled(loss_error)
        warnings.warn(
            f"The saved optimizer {optimizer_name} cannot be rebuilt in Keras 3 ({error}); the model is compiled "
            f"with Keras' default optimizer and the saved loss and metrics. Compile it again to choose one.",
            MgpuIOWarning,
            stacklevel=4,
        )
        arrays = None
    try:
        model.compile(**arguments)
    except _COMPILE_ERRORS as error:
        return _uncompiled(error)
    if dropped:
        warnings.warn(
            f"The saved metrics {', '.join(dropped)} cannot be rebuilt in Keras 3; the model is compiled without "
            f"them (its loss and other metrics are the saved ones). Pass them to model.compile(...) yourself to "
            f"keep them.",
            MgpuIOWarning,
            stacklevel=4,
        )
    if arrays is not None:
        _restore_optimizer_state(model, optimizer_name, arrays, order)


_COMPILE_ERRORS = (ValueError, TypeError, KeyError, AttributeError)


def _uncompiled(error):
    first = first_line(error)
    warnings.warn(
        f"The model is loaded uncompiled: Keras 3 cannot rebuild its saved loss or metrics ({first}). Compile it "
        f"yourself (model.compile(...)), passing your own functions; the weights are loaded.",
        MgpuIOWarning,
        stacklevel=5,
    )


def _writer_order(model, config, keras_version=None, stored_names=None):
    """Where each of the writer's trainable weights is in ``model.trainable_variables``, in the order its optimizer
    state was stored; ``None`` where the file does not say. Keras 2 and tf.keras stored it in the order of the
    model's layers as the config lists them, which Keras 3 may traverse in another order; Keras 1 (on TensorFlow)
    sorted every trainable weight by its variable name (``collect_trainable_weights``): ``d1_W``, ``out_W``,
    ``tiny_W``."""
    variables = model.trainable_variables
    position = {id(variable): index for index, variable in enumerate(variables)}
    if str(keras_version or "").startswith("1."):
        names = [(stored_names or {}).get(id(variable)) for variable in variables]
        if None in names or len(set(names)) != len(names):
            return None
        return sorted(range(len(variables)), key=lambda i: names[i])
    layers = (config or {}).get("config") if isinstance(config, dict) else None
    layers = layers.get("layers") if isinstance(layers, dict) else None
    if not isinstance(layers, list):
        return None
    order = []
    for layer in layers:
        name = (layer.get("config") or {}).get("name") if isinstance(layer, dict) else None
        try:
            order += [position.get(id(variable)) for variable in model.get_layer(name).trainable_weights]
        except (ValueError, TypeError, AttributeError):
            return None
    return order if sorted(order, key=lambda i: -1 if i is None else i) == list(range(len(position))) else None


def _order_by_name(model, stored, optimizer=None):
    """Where the weight of each of the writer's slots is in ``model.trainable_variables``, where the writer named
    each slot after its weight (:func:`~mgpu_io.format.optimizer.slot_name`): tf.keras'
    ``training/Adam/conv_1/kernel/m:0``, TF 2.11+'s and tf_keras' ``Adam/m/conv_1/kernel:0``, Keras 3's
    ``adam/conv_1_kernel_momentum``. Each role's slots, in their stored order, are matched each to the one variable
    whose path has the slot's layer first, its weight last and the rest in order (``bigru/forward_gru/kernel`` is
    ``bigru/forward_gru/gru_cell/kernel`` in Keras 3), or for Keras 3's names to the one whose path, its ``/`` made
    ``_``, is the slot's. ``None`` where the names do not say (Keras 1/2's ``Variable_3:0``), any slot names no weight
    or two the same one, or the roles' orders differ.

    Example:
        >>> class V:
        ...     def __init__(self, path): self.path = path
        >>> class M: trainable_variables = [V("out/kernel"), V("conv_1/kernel"), V("enc/lstm_cell/kernel")]
        >>> _order_by_name(M, [("training/Adam/iter:0", 0), ("training/Adam/conv_1/kernel/m:0", 0),
        ...                    ("training/Adam/enc/kernel/m:0", 0), ("training/Adam/out/kernel/m:0", 0),
        ...                    ("training/Adam/conv_1/kernel/v:0", 0), ("training/Adam/enc/kernel/v:0", 0),
        ...                    ("training/Adam/out/kernel/v:0", 0)])
        [1, 2, 0]
        >>> _order_by_name(M, [("adam/iteration", 0), ("adam/conv_1_kernel_momentum", 0),
        ...                    ("adam/out_kernel_momentum", 0), ("adam/enc_lstm_cell_kernel_momentum", 0)])
        [1, 0, 2]
    """
    paths = [str(getattr(variable, "path", "")) for variable in model.trainable_variables]
    flat = [path.replace("/", "_") for path in paths]
    by_role = {}
    for name, _ in stored:
        slot = slot_name(name, optimizer)
        if slot is None:
            continue  # the step counter, the learning rate, a scalar
        if slot.flat is not None:
            matches = [i for i, path in enumerate(flat) if path == slot.flat]
        else:
            matches = [i for i, path in enumerate(paths) if _names_weight(list(slot.weight), path.split("/"))]
        if len(matches) != 1:
            return None
        by_role.setdefault(slot.role, []).append(matches[0])
    orders = list(by_role.values())
    if not orders or any(order != orders[0] for order in orders):
        return None
    return orders[0] if sorted(orders[0]) == list(range(len(paths))) else None


def _names_weight(wanted, path):
    """Whether a stored weight path (``[layer, ..., weight]``) names the variable at ``path``."""
    if not path or wanted[0] != path[0] or wanted[-1] != path[-1]:
        return False
    rest = iter(path[1:-1])
    return all(part in rest for part in wanted[1:-1])  # in order: each found after the one before


def _restore_optimizer_state(model, optimizer_name, stored, order=None):
    variables = model.trainable_variables
    by_name = _order_by_name(model, stored, optimizer_name)  # by what each slot is, where its name says
    order = by_name or order or list(range(len(variables)))
    state = read_optimizer_state(
        _translated_class(model.optimizer, optimizer_name),
        [array for _, array in stored],
        [tuple(variables[i].shape) for i in order],
        names=[name for name, _ in stored],
        trainable_names=[str(getattr(variables[i], "path", variables[i].name)) for i in order],
    )
    for role, values in state.slots.items():  # from the writer's order to Keras 3's
        state.slots[role] = [values[order.index(i)] for i in range(len(values))]
    if state.problem is None:
        optimizer, deferred = model.optimizer, Deferred()
        if isinstance(optimizer, import_keras().optimizers.Nadam):
            optimizer.build(variables)  # its u_product is a value, which a deferred build cannot create
        else:
            deferred.create(lambda: optimizer.build(variables))  # the slots' zeros would only be overwritten
        try:
            restored = _fill_slots(optimizer, optimizer_name, state, deferred)
        finally:
            deferred.finish()
        if restored:
            if state.iterations is not None:
                optimizer.iterations.assign(state.iterations)
            if hasattr(optimizer, "_u_product"):  # Nadam's product of momentum factors
                _restore_u_product(optimizer, state)
            return
    warnings.warn(
        f"The saved optimizer state is not restored: {state.problem}. Training continues with a fresh "
        f"{optimizer_name} state.",
        MgpuIOWarning,
        stacklevel=4,
    )


def _restore_u_product(optimizer, state):
    """Nadam's running product of momentum factors: as stored (tf.keras' ``momentum_cache``, Keras 3's); where the
    file lacks it, for Keras 3's rule the product over the stored steps (TF 2.11+ does not save it in a ``.h5``, and
    its own reload of such a file compounds the product once per weight); for Keras 2's rule 1, as Keras 1/2 start
    again from their own files (they save neither ``m_schedule``)."""
    if "u_product" in state.scalars:
        optimizer._u_product.assign(state.scalars["u_product"])
    elif state.iterations and not hasattr(optimizer, "schedule_decay"):
        steps = np.arange(1, state.iterations + 1, dtype="float64")
        factors = float(optimizer.beta_1) * (1.0 - 0.5 * np.power(0.96, steps))
        optimizer._u_product.assign(float(np.prod(factors)))


def _translated_class(optimizer, optimizer_name):
    """The optimizer class whose stored state mgpu-io lays out: the saved one, or for a subclass of Keras' own
    (``class CustomOp(RMSprop)``, rebuilt from ``custom_objects``) the nearest of Keras' classes it derives from,
    whose slots it keeps."""
    if optimizer_name in TRANSLATED_OPTIMIZERS:
        return optimizer_name
    for cls in type(optimizer).__mro__:
        if cls.__name__ in TRANSLATED_OPTIMIZERS and cls.__module__.startswith("keras."):
            return cls.__name__
    return optimizer_name


def _fill_slots(optimizer, optimizer_name, state, deferred):
    """Give each slot of the built ``optimizer`` its stored value, by role; ``False`` (with ``state.problem``) when
    the counts differ."""
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
            return False
    for role, values in state.slots.items():
        for variable, value in zip(by_role.get(role, []), values):
            _assign(variable, value, handed_over=True, deferred=deferred)  # each read by _read, for it alone
    return True


def _warn_non_finite(model, path):
    broken = non_finite_weights(model)
    if broken:
        from mgpu_io.format.non_finite import non_finite_message

        warnings.warn(f"{non_finite_message(broken, str(path))}", MgpuIOWarning, stacklevel=3)
