"""Repair a wrapper file straight into Keras 3's native ``.keras`` format: the ``.keras`` output of ``unwrap``."""

from pathlib import Path

from mgpu_io.format.plan import check_output, planned
from mgpu_io.format.write import atomic_path
from mgpu_io.keras.load import build


def unwrap_to_keras(
    source,
    output,
    *,
    config=None,
    include_optimizer=True,
    allow_plain=False,
    overwrite=False,
    safe_mode=True,
    lambdas=None,
    custom_objects=None,
):
    """Write the innermost template of ``source`` as a Keras 3 ``.keras`` file (with its training setup).

    The file is planned once (as :func:`mgpu_io.unwrap` plans a legacy output), built in Keras 3 and saved; the
    options are :func:`mgpu_io.unwrap`'s, which checks them and calls this for an output ending in ``.keras``.
    Each Lambda function is saved by its reference name (never as bytecode), so the ``.keras`` file loads in safe
    mode with ``custom_objects={layer name: function}`` (Keras' own functions: after ``import mgpu_io.keras.known``).

    Returns:
        The :class:`~mgpu_io.format.plan.UnwrapReport` of the repair (``written`` is true once the file exists).

    Example:
        >>> import tempfile, pathlib
        >>> out = pathlib.Path(tempfile.mkdtemp()) / "model.keras"
        >>> unwrap_to_keras("fixtures/files/k224_siamese_x2_full.h5", out).written
        True
    """
    source, output = Path(source), Path(output)
    check_output(source, output, overwrite, inputs=(config,) if config is not None else ())
    with planned(
        source, output=output, config=config, include_optimizer=include_optimizer, allow_plain=allow_plain
    ) as plan:
        model = build(
            plan,
            include_optimizer=include_optimizer,
            safe_mode=safe_mode,
            lambdas=lambdas,
            custom_objects=custom_objects,
            faithful=False,  # Keras 3's own optimizer classes: the .keras file is for plain Keras 3
        )
        report = plan.report
    with atomic_path(output, suffix=".keras") as temporary:
        model.save(temporary)
    report.written = True
    return report
