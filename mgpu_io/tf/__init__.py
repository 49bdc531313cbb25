"""TF 2.0–2.3 SavedModel folders and TF-format weight checkpoints of multi-GPU wrappers, read as data.

tf.keras 2.x can save a wrapper as a SavedModel folder (``model.save(dir, save_format="tf")``) or its weights as a
TF-format checkpoint (``model.save_weights("x_ckpt")``) instead of HDF5. :func:`to_legacy_h5` rewrites either one as
the legacy Keras HDF5 file the same ``model.save("x.h5")`` / ``save_weights("x.h5")`` would have written, which the
rest of mgpu-io (``inspect``, ``unwrap``, ``load_model``) reads as it reads every other wrapper file.

Nothing stored is ever run: the protocol buffers are parsed, the variable values are read with TensorFlow's
``CheckpointReader``, and neither ``tf.saved_model.load`` nor any ``load_model`` is called (docs/tf2-writers.md
§4–5 describe what is read). TensorFlow is imported only by :func:`to_legacy_h5`; :func:`detect` needs the standard
library only.

Example:
    >>> detect("fixtures/tf2/tf22_functional_bn_x2_savedmodel"), detect("fixtures/tf2/tf22_functional_bn_x2_ckpt")
    ('savedmodel', 'tf-checkpoint')
    >>> detect("fixtures/tf2/tf22_functional_bn_x2_full.h5") is None
    True
"""

import contextlib
import shutil
import tempfile
from pathlib import Path

from mgpu_io.format.kinds import SAVEDMODEL, TENSORFLOW_KINDS, TF_CHECKPOINT  # the one vocabulary (no h5py)

#: Most bytes of an ``.index`` file searched for the object graph's key (index files of huge models are a few MB).
_INDEX_SCAN_BYTES = 64 << 20

__all__ = ["SAVEDMODEL", "TF_CHECKPOINT", "detect", "read_converted", "to_legacy_h5"]


def detect(path):
    """Say whether ``path`` is a SavedModel folder or a TF-format (object-based) checkpoint, without TensorFlow.

    Only the door (:func:`mgpu_io.format.door.describe` and :func:`~mgpu_io.format.door.sniff`) asks this: every
    entry point asks the door.

    Args:
        path: a folder, a checkpoint's ``.index`` or ``.data-NNNNN-of-NNNNN`` file, or a checkpoint prefix (``x``
            with ``x.index`` beside it), or anything else.

    Returns:
        ``"savedmodel"`` for a folder holding ``saved_model.pb``; ``"tf-checkpoint"`` for a checkpoint whose index is
        a TF table that holds an object graph (what tf.keras 2.x ``save_weights`` writes); ``None`` for anything
        else (HDF5 and JSON files, name-based TF 1 checkpoints, damaged indexes, missing paths).

    Example:
        >>> detect("fixtures/tf2/tf20_nested_depth2_ckpt.index"), detect("fixtures/tf2") is None
        ('tf-checkpoint', True)
    """
    path = Path(path)
    try:
        if path.is_dir():
            # saved_model.pb of any kind (a folder, a dangling link: damaged) makes the folder a SavedModel, which
            # savedmodel.check_folder then refuses in one line; it is never a folder of legacy files.
            pb = path / "saved_model.pb"
            return SAVEDMODEL if pb.exists() or pb.is_symlink() else None
        if path.is_file() and not path.name.endswith(".index") and ".data-" not in path.name:
            return None  # an .h5 or a config, the common case: known without the checkpoint reader's import
    except OSError:
        return None
    from mgpu_io.tf.bundle import OBJECT_GRAPH_KEY, TABLE_MAGIC, checkpoint_prefix

    try:
        prefix = checkpoint_prefix(path)
        index = Path(prefix + ".index")
        if prefix == str(path) and path.exists():
            return None  # an existing file that is neither an index nor a data file: not a checkpoint
        if not index.is_file():
            return None
        size = index.stat().st_size
        if size < len(TABLE_MAGIC):
            return None
        with open(index, "rb") as handle:
            handle.seek(size - len(TABLE_MAGIC))
            if handle.read(len(TABLE_MAGIC)) != TABLE_MAGIC:
                return None
            handle.seek(0)
            head = handle.read(_INDEX_SCAN_BYTES)
    except OSError:
        return None
    return TF_CHECKPOINT if OBJECT_GRAPH_KEY.encode("ascii") in head else None


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
        ``notes`` (what was left out, and why); see :func:`mgpu_io.tf.savedmodel.to_legacy_h5` and
        :func:`mgpu_io.tf.checkpoint.to_legacy_h5`.

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
        return savedmodel.to_legacy_h5(path, output)
    prefix = checkpoint.checkpoint_prefix(path)
    if path.name == "saved_model.pb":
        return to_legacy_h5(path.parent, output, config=config)
    if Path(prefix + ".index").exists() or str(path).endswith(".index"):
        return checkpoint.to_legacy_h5(path, output, config=config)
    what = "nothing is there" if not path.exists() else "a file that is neither"
    raise NotAModelFile(
        f"The input is neither a SavedModel folder nor a TF checkpoint. Expected a folder holding saved_model.pb, "
        f"or a checkpoint's .index file (or its prefix). Received: filepath={path} ({what}). Check the path; "
        f".h5 and JSON files need no conversion."
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
    :func:`mgpu_io.tf.checkpoint.to_legacy_h5_for`), and what was converted; removed afterwards."""
    from mgpu_io.tf import checkpoint

    folder = Path(tempfile.mkdtemp(prefix="mgpu-io-tf-"))
    try:
        output = folder / (Path(path).name.replace(".index", "") + ".h5")
        converted = checkpoint.to_legacy_h5_for(path, output, targets)
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
