"""Rewrite a TF 2.x SavedModel folder or TF-format checkpoint as the legacy Keras HDF5 file, and read it so.

:func:`to_legacy_h5` writes the legacy file that the same ``model.save("x.h5")`` / ``save_weights("x.h5")`` would
have written; :func:`read_converted` is the one place where ``inspect``, ``unwrap``, ``load_model`` and
``transfer_weights`` read a TensorFlow input through such a copy. TensorFlow is imported only inside
:mod:`mgpu_io.tf.savedmodel` and :mod:`mgpu_io.tf.checkpoint`'s functions; nothing stored is ever run.
"""

import contextlib
import shutil
import tempfile
from pathlib import Path

from mgpu_io.format.kinds import SAVEDMODEL, TENSORFLOW_KINDS, TF_CHECKPOINT  # the one vocabulary (no h5py)

__all__ = ["checkpoint_copy_for", "converted_note", "read_converted", "to_legacy_h5"]


def to_legacy_h5(path, output, *, config=None):
    """Rewrite a SavedModel folder or a TF-format checkpoint as the legacy Keras HDF5 file ``output``.

    A SavedModel becomes a full-model file (``model_config``, ``training_config``, ``model_weights`` and, when the
    folder holds it, ``optimizer_weights``); a checkpoint becomes a weights-only file laid out by ``config``. The
    file is then what mgpu-io repairs: ``mgpu_io.unwrap(output, ...)``, ``mgpu_io.load_model(output)``, or
    ``mgpu_io.load_model(config, weights=output)``. An existing ``output`` is replaced, atomically.

    Args:
        path: a SavedModel folder, or a checkpoint's ``.index`` / ``.data-…`` file or prefix.
        output: the ``.h5`` file to write.
        config: for a checkpoint only (required there): the JSON config saved beside it, or a full-model ``.h5``.

    Returns:
        A dict describing what was read and written: ``kind``, ``input``, ``output``, ``output_type``
        (``"model"`` or ``"weights"``), ``tensorflow_version`` (``None`` where unknown), ``keras_version``,
        ``backend``, ``model``, ``layers``, ``weights``, ``optimizer_found``, ``optimizer`` (written or not) and
        ``notes`` (what was left out, and why); see :func:`mgpu_io.tf.savedmodel.savedmodel_to_h5` and
        :func:`mgpu_io.tf.checkpoint.checkpoint_to_h5`.

    Raises:
        NotAModelFile: ``path`` is neither, or is damaged.
        InvalidArgument: ``config`` is missing for a checkpoint, or was given for a SavedModel.
        UnsupportedModel, WeightsMismatch: the contents cannot be placed in a legacy file with certainty.
        MissingDependency: TensorFlow is not installed.
        OutputError: ``output`` cannot be written.

    Example:
        >>> import tempfile, pathlib, mgpu_io
        >>> out = pathlib.Path(tempfile.mkdtemp()) / "model.h5"
        >>> to_legacy_h5("fixtures/tf2/tf21_functional_bn_x2_savedmodel", out)["optimizer"]
        True
        >>> report = mgpu_io.inspect(out)
        >>> report.depth, report.replicas, report.template
        (1, 2, 'template')
    """
    from mgpu_io.errors import InvalidArgument, NotAModelFile, Param
    from mgpu_io.tf import checkpoint, savedmodel

    path = Path(path)
    if path.is_dir():
        if config is not None:
            raise InvalidArgument(
                problem=(Param("config"), " does not apply to a SavedModel: the folder holds its own model config"),
                parameter="config",
                expected=Param("config", None),
                received=(f"filepath={path}, ", Param("config", config, text=f"config={config}")),
                fix=("Leave out ", Param("config")),
            )
        return savedmodel.savedmodel_to_h5(path, output)
    prefix = checkpoint.checkpoint_prefix(path)
    if path.name == "saved_model.pb":
        return to_legacy_h5(path.parent, output, config=config)
    if Path(prefix + ".index").exists() or str(path).endswith(".index"):
        return checkpoint.checkpoint_to_h5(path, output, config=config)
    what = "nothing is there" if not path.exists() else "a file that is neither"
    raise NotAModelFile(
        problem="The input is neither a SavedModel folder nor a TF checkpoint",
        parameter="filepath",
        expected="a folder holding saved_model.pb, or a checkpoint's .index file (or its prefix)",
        received=f"filepath={path} ({what})",
        fix="Check the path; .h5 and JSON files need no conversion",
    )


def read_converted(call, *inputs):
    """Call ``call`` with a path to read for each of ``inputs``: the one place where a TensorFlow input is converted
    and then read like every other file. This is how ``inspect``, ``unwrap``, ``load_model`` and
    ``transfer_weights`` accept SavedModels and TF checkpoints.

    Each input is ``(description, config)`` or ``(description, config, targets)``: a
    :class:`~mgpu_io.format.door.Description` (or ``None``, passed on as ``None``), the ``config`` for
    :func:`to_legacy_h5` (the architecture saved beside a checkpoint), and for a checkpoint without one the weighted layers of a freshly built model (see
    :func:`checkpoint_copy_for`). A TensorFlow kind is read through a private temporary legacy ``.h5`` of it (see
    :func:`to_legacy_h5`), removed afterwards; any other kind is passed on as its own path. A result with a
    ``converted_from(source, note)`` method (the reports) is told what was converted.

    Example:
        >>> from mgpu_io.format.door import describe
        >>> read_converted(lambda readable: readable.name, (describe("fixtures/files/k224_functional_bn_x2_full.h5"), None))
        'k224_functional_bn_x2_full.h5'
    """
    with contextlib.ExitStack() as stack:
        readable, notes = [], []
        for description, config, *targets in inputs:
            if description is None or description.kind not in TENSORFLOW_KINDS:
                readable.append(None if description is None else Path(description.path))
                continue
            path = Path(description.path)
            if targets and targets[0] is not None and description.kind == TF_CHECKPOINT and config is None:
                copy = checkpoint_copy_for(path, targets[0])
            else:
                copy = _legacy_copy(path, config)
            output, converted = stack.enter_context(copy)
            readable.append(output)
            notes.append(converted_note(converted))
        result = call(*readable)
    if notes and hasattr(result, "converted_from"):
        result.converted_from(str(inputs[0][0].path), "; ".join(notes))
    return result


@contextlib.contextmanager
def _legacy_copy(path, config=None):
    """Yield ``(path of a private temporary legacy .h5 of path, what was converted)``; removed afterwards."""
    folder = Path(tempfile.mkdtemp(prefix="mgpu-io-tf-"))
    try:
        output = folder / (path.name.replace(".index", "") + ".h5")
        converted = to_legacy_h5(path, output, config=config)
        yield output, converted
    finally:
        shutil.rmtree(folder, ignore_errors=True)


@contextlib.contextmanager
def checkpoint_copy_for(path, targets):
    """Yield a private temporary legacy weights-only ``.h5`` of the TF checkpoint at ``path``, holding the weights
    of the model inside it that matches ``targets`` (a freshly built model's weighted layers: see
    :func:`mgpu_io.tf.checkpoint.checkpoint_to_h5_for`), and what was converted; removed afterwards."""
    from mgpu_io.tf import checkpoint

    folder = Path(tempfile.mkdtemp(prefix="mgpu-io-tf-"))
    try:
        output = folder / (Path(path).name.replace(".index", "") + ".h5")
        converted = checkpoint.checkpoint_to_h5_for(path, output, targets)
        yield output, converted
    finally:
        shutil.rmtree(folder, ignore_errors=True)


def converted_note(converted):
    """One line for reports: what a TensorFlow format was read as, and what it did not hold."""
    kind = "SavedModel" if converted["kind"] == SAVEDMODEL else "TF checkpoint"
    version = f" (TensorFlow {converted['tensorflow_version']})" if converted.get("tensorflow_version") else ""
    notes = "; ".join(converted.get("notes") or [])
    return f"read from a {kind}{version} as data (its protocol buffers and variables; nothing in it was run)" + (
        f": {notes}" if notes else ""
    )
