"""Repair a wrapper file straight into Keras 3's native ``.keras`` format."""

from pathlib import Path

from mgpu_io.unwrap import check_output, planned
from mgpu_io.writer import atomic_path


def unwrap_to_keras(source, output, *, config=None, overwrite=False, safe_mode=True):
    """Write the innermost template of ``source`` as a Keras 3 ``.keras`` file (with its training setup).

    Args:
        source: a full-model wrapper file (or plain legacy file), or a weights-only file with ``config``.
        output: the ``.keras`` path to write.
        config: for a weights-only ``source``, the architecture saved beside it.
        overwrite: replace an existing ``output``.
        safe_mode: Keras' safe mode for the template's own Lambda layers (see :func:`mgpu_io.load_model`).

    Returns:
        The :class:`~mgpu_io.unwrap.UnwrapReport` of the repair (``written`` is true once the file exists).

    Example:
        >>> import tempfile, pathlib
        >>> out = pathlib.Path(tempfile.mkdtemp()) / "model.keras"
        >>> unwrap_to_keras("fixtures/files/k224_siamese_x2_full.h5", out).written
        True
    """
    from mgpu_io.loading import load_model

    source, output = Path(source), Path(output)
    check_output(source, output, overwrite)
    with planned(source, config=config, allow_plain=True) as plan:
        report = plan.report
    if config is not None:
        model = load_model(config, weights=source, safe_mode=safe_mode)
    else:
        model = load_model(source, safe_mode=safe_mode)
    with atomic_path(output, suffix=".keras") as temporary:
        model.save(temporary)
    report.output, report.written = str(output), True
    return report
