"""Whether a path is a TF 2.x SavedModel folder or a TF-format checkpoint, told without TensorFlow.

The door (:mod:`mgpu_io.format.door`) asks this leaf and nothing else of ``tf/``: it needs the standard library and
:mod:`mgpu_io.tf.bundle`'s constants only, so that the door's question never imports the converter, which reads
legacy files back through the door (:mod:`mgpu_io.tf.convert`). Named apart from :mod:`mgpu_io.format.detect`, which recognises wrappers.

Example:
    >>> tf_format("fixtures/tf2/tf22_functional_bn_x2_savedmodel"), tf_format("fixtures/tf2/tf22_functional_bn_x2_ckpt")
    ('savedmodel', 'tf-checkpoint')
    >>> tf_format("fixtures/tf2/tf22_functional_bn_x2_full.h5") is None
    True
"""

from pathlib import Path

from mgpu_io.format.kinds import SAVEDMODEL, TF_CHECKPOINT  # the one vocabulary (no h5py)

#: Most bytes of an ``.index`` file searched for the object graph's key (index files of huge models are a few MB).
_INDEX_SCAN_BYTES = 64 << 20

__all__ = ["tf_format"]


def tf_format(path):
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
        >>> tf_format("fixtures/tf2/tf20_nested_depth2_ckpt.index"), tf_format("fixtures/tf2") is None
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
