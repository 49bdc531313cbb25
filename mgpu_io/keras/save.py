"""Repair a wrapper file straight into Keras 3's native ``.keras`` format: the ``.keras`` output of ``unwrap``."""

import functools
from pathlib import Path

from mgpu_io.format.options import KERAS_FORMAT, UnwrapOptions
from mgpu_io.format.plan import check_output
from mgpu_io.format.plan_data import plan_data
from mgpu_io.format.sandbox import probed
from mgpu_io.format.write import atomic_path
from mgpu_io.keras.load import build


def unwrap_to_keras(source, output, options: UnwrapOptions, *, plan=None):
    """Write the innermost template of ``source`` as a Keras 3 ``.keras`` file (with its training setup).

    The file is planned once (as :func:`mgpu_io.unwrap` plans a legacy output), built in Keras 3 and saved;
    ``options`` is the :class:`~mgpu_io.format.options.UnwrapOptions` that :func:`mgpu_io.unwrap` built and
    checked, passed down unchanged, and it calls this for an output ending in
    ``.keras``. ``plan``: the :func:`plan_for_keras` that the door's child made already, after its look (the file
    is then not opened here); without it, the file is planned in the sandbox's child and handed back as data.
    Each Lambda function is saved by its reference name (never as bytecode), so the ``.keras`` file loads in safe
    mode with ``custom_objects={layer name: function}`` (Keras' own functions: after ``import mgpu_io.keras.known``).

    Returns:
        The :class:`~mgpu_io.format.unwrap_report.UnwrapReport` of the repair (``written`` is true once the file exists).

    Example:
        >>> import tempfile, pathlib
        >>> out = pathlib.Path(tempfile.mkdtemp()) / "model.keras"
        >>> unwrap_to_keras("fixtures/files/k224_siamese_x2_full.h5", out, UnwrapOptions(output_format=KERAS_FORMAT)).written
        True
    """
    source, output = Path(source), Path(output)
    config = options.config
    check_output(source, output, options.overwrite, inputs=(config,) if config is not None else ())
    if plan is None:
        plan = probed(source, functools.partial(plan_for_keras, source, output, options))
    model = build(
        plan,
        include_optimizer=options.include_optimizer,
        safe_mode=options.safe_mode,
        lambdas=options.lambdas,
        custom_objects=options.custom_objects,
        faithful=False,  # Keras 3's own optimizer classes: the .keras file is for plain Keras 3
    )
    report = plan.report
    del plan  # its arrays are the model's now
    with atomic_path(output, suffix=".keras") as temporary:
        model.save(temporary)
    report.written = True
    return report


def plan_for_keras(source, output, options):
    """In the sandbox's child: the plan of a model Keras 3 builds (a ``.keras`` output, or a deployable one, whose
    optimizer state is never planned), as data (:func:`~mgpu_io.format.plan_data.plan_data`)."""
    return plan_data(
        source,
        output=Path(output),
        config=options.config,
        include_optimizer=options.include_optimizer and options.output_format == KERAS_FORMAT,
        allow_plain=options.allow_plain,
    )


def unwrap_to_export(source, output, options: UnwrapOptions, *, plan=None, inputs=None):
    """Write the innermost template of ``source`` as a deployable artifact, run by its own runtime and compared with
    the built model before it is moved into place (:func:`mgpu_io.keras.exports.export`).

    ``options`` is the :class:`~mgpu_io.format.options.UnwrapOptions` that :func:`mgpu_io.unwrap` built and checked
    (its ``output_format``: ``"onnx"``, ``"litert"`` or ``"saved_model"``), which calls this for an output ending
    in ``.onnx`` or ``.tflite``, or with ``format="saved_model"``, passed down unchanged. ``plan``: the :func:`plan_for_keras` that the door's child made already (the
    file is then not opened here); without it, the file is planned in the sandbox's child and handed back as data.
    ``inputs``: what the runtime is checked on (default: generated from the input shapes).

    Returns:
        The :class:`~mgpu_io.format.unwrap_report.UnwrapReport`, with ``export``: the format, its runtime and the largest
        difference measured.

    Example:
        >>> import tempfile, pathlib
        >>> out = pathlib.Path(tempfile.mkdtemp()) / "model.onnx"
        >>> report = unwrap_to_export("fixtures/files/k224_siamese_x2_full.h5", out, UnwrapOptions(output_format="onnx"))
        >>> report.written, report.export["runtime"]
        (True, 'ONNX Runtime')
    """
    from mgpu_io.keras._compat import import_keras
    from mgpu_io.keras.exports import check_available, export
    from mgpu_io.keras.runtime import adapt

    source, output = Path(source), Path(output)
    name, config = options.output_format, options.config
    check_available(name)  # before the model is read: a missing extra is one line
    if not output.is_dir():  # the file checks and their messages (an input as output, a missing folder)
        check_output(source, output, options.overwrite, inputs=(config,) if config is not None else ())
    if plan is None:
        plan = probed(source, functools.partial(plan_for_keras, source, output, options))
    model = build(
        plan,
        compile=False,
        include_optimizer=False,
        safe_mode=options.safe_mode,
        lambdas=options.lambdas,
        custom_objects=options.custom_objects,
    )
    adapt(model, import_keras())  # channels_first on a CPU-only TensorFlow, TimeDistributed in one call
    report = plan.report
    del plan  # its arrays are the model's now
    report.export = export(model, output, name, inputs=inputs, overwrite=options.overwrite)
    report.written = True
    return report
