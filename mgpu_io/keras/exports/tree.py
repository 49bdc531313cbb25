"""A folder of legacy files into deployable artifacts: the folder mode of ``unwrap --format``, with the folder
repair's options (one :class:`~mgpu_io.format.options.UnwrapOptions`), workers (``jobs``), progress and resume."""

import functools
from pathlib import Path

from mgpu_io.errors import InvalidArgument, MgpuIOError, NotAWrapper, Param, Text
from mgpu_io.format.batch import (
    CLEAN,
    DONE,
    DONE_REASON,
    FAILED,
    REPAIRED,
    SKIPPED,
    FileResult,
)
from mgpu_io.format.door import EXPORT_FORMATS, LEGACY_MODEL, SAVEDMODEL, describe


def artifact_path(output, relative, name):
    """Where the artifact of the input at ``relative`` goes under ``output``: its name with the format's suffix (a
    SavedModel folder: the name without its suffix).

    Example:
        >>> str(artifact_path(Path("out"), Path("run1/epoch_10.h5"), "onnx"))
        'out/run1/epoch_10.onnx'
    """
    return output / relative.with_suffix(EXPORT_FORMATS[name])


def export_tree(source, output, options, *, jobs=None, progress=None):
    """Write every full model (a wrapper, or with ``allow_plain`` a plain model) under ``source`` as a deployable
    format into the same place under ``output``; weights-only files are written where ``config`` gives their
    architecture. An output newer than its input is ``done before`` (a stopped run resumes).

    Args:
        source: the folder to read (never modified).
        output: the folder to write; may not be ``source`` or lie inside it.
        options: the :class:`~mgpu_io.format.options.UnwrapOptions` that :func:`mgpu_io.unwrap` built (its
            ``output_format`` names the format), passed down unchanged.
        jobs: worker processes, as the folder repair's (:func:`mgpu_io.format.batch.unwrap_tree`); each holds its
            own Keras and exporter. Default 1: the files are exported in this process, one after another. Workers
            are forked: where this process has run Keras already (a TensorFlow or JAX runtime started here, which
            does not survive a fork) the files are exported here, one by one.
        progress: called with ``(done, total, FileResult)`` after each file.

    Returns:
        A :class:`~mgpu_io.format.batch.BatchReport`.
    """
    from mgpu_io.format.batch import TreeJob, run_tree
    from mgpu_io.keras.exports import check_available

    name = options.output_format
    if name not in EXPORT_FORMATS:
        raise InvalidArgument(
            problem="A folder export needs a deployable format",
            parameter="format",
            expected=f"output_format one of {sorted(EXPORT_FORMATS)}",
            received=f"output_format={name!r}",
            fix=("Pass ", Param("format")),
        )
    if not options.dry_run:
        check_available(name)

    def before(path, artifact, done_before):
        if not options.dry_run and not done_before:  # looked at in its export, by the child that plans it
            return None
        described = describe(path)
        if skipped := _needs_config(described, options):
            return FileResult(str(path), SKIPPED, reason=skipped)
        if done_before:
            return FileResult(str(path), DONE, output=str(artifact), reason=DONE_REASON)
        return FileResult(str(path), REPAIRED)

    here = (jobs or 1) <= 1 or _runtime_started()
    job = TreeJob(
        output_for=lambda folder, relative: artifact_path(folder, relative, name),
        work=functools.partial(export_one, options=options) if here else _in_worker(options),
        before=before,
        here=here,
    )
    return run_tree(source, output, options, job, jobs=jobs, progress=progress)


def _runtime_started():
    """Whether this process has started a TensorFlow or JAX runtime (their threads do not survive a fork)."""
    import sys

    if "tensorflow" in sys.modules:
        try:
            from tensorflow.python.eager import context

            made = context.context_safe()
            if made is not None and made._context_handle is not None:
                return True
        except Exception:  # another TensorFlow: assume it runs
            return True
    jax = sys.modules.get("jax")
    return jax is not None and bool(getattr(sys.modules.get("jax._src.xla_bridge"), "_backends", None))


def _needs_config(described, options):
    """Why a file of a folder is skipped for want of its architecture (a weights-only file, where the folder's
    ``config`` gives none), or ``None``."""
    if described.kind in (LEGACY_MODEL, SAVEDMODEL) or options.config is not None:
        return None
    name = options.output_format
    return Text(f"{described.name}: a {name} output needs a whole model (", Param("config"), " gives weights theirs)")


def _file_options(described, options, allow_plain=False):
    """The options of one file's export: the folder's ``config`` for a weights-only file only."""
    whole = described.kind in (LEGACY_MODEL, SAVEDMODEL)
    return options.replace(config=None if whole else options.config, overwrite=True, allow_plain=allow_plain)


def export_one(source, output, options):
    """Export one file of a folder; a :class:`~mgpu_io.format.batch.FileResult`. The file is looked at and planned
    in one child (:func:`~mgpu_io.format.door.describe_then`), which opens it once; Keras builds and exports the
    plan here."""
    from mgpu_io.format.door import describe_then
    from mgpu_io.format.sandbox import probed
    from mgpu_io.keras.save import unwrap_to_export

    Path(output).parent.mkdir(parents=True, exist_ok=True)

    plan_one = functools.partial(_plan_in_child, source, output, options)  # it crosses to the fork server

    try:
        described, planned = describe_then(source, plan_one)
        if skipped := _needs_config(described, options):
            return FileResult(source, SKIPPED, reason=skipped)
        plan, status = planned[0] if planned is not None else probed(source, lambda: plan_one(described))  # no HDF5
        if status == SKIPPED:
            reason = Text("a plain model, not a wrapper: pass ", Param("allow_plain", True), " to export it too")
            return FileResult(source, SKIPPED, reason=reason)
        done = unwrap_to_export(source, output, _file_options(described, options, status == CLEAN), plan=plan)
    except MgpuIOError as error:
        return FileResult(source, FAILED, reason=error.text())
    return FileResult(source, status, output=output, depth=done.depth)


def _plan_in_child(source, output, options, described):
    return _plan_one(described, source, output, options)


def _plan_one(described, source, output, options):
    """In the door's child: the plan of one file's export and its status (a wrapper's, or with ``allow_plain`` a
    plain model's; ``(None, SKIPPED)`` for a plain model without it, ``(None, None)`` for a file to skip)."""
    from mgpu_io.format.plan import check_output
    from mgpu_io.keras.save import plan_for_keras

    if _needs_config(described, options):
        return None, None
    wrapper = _file_options(described, options)
    config = wrapper.config
    check_output(source, output, True, inputs=(config,) if config is not None else ())
    try:
        return plan_for_keras(source, output, wrapper), REPAIRED
    except NotAWrapper:
        if not options.allow_plain:
            return None, SKIPPED
        return plan_for_keras(source, output, wrapper.replace(allow_plain=True)), CLEAN  # read through the same handle


def _in_worker(options):
    """What a folder worker (:mod:`mgpu_io.format.batch`) runs for one file: :func:`export_one`, with ``options``
    from the fork (a user's functions, ``lambdas=``, need not pickle)."""

    def work(source, output):  # pragma: no cover - runs in a worker process
        from mgpu_io.format.sandbox import inside

        # The supervisor's time limit is for a legacy repair's reading of the structure; here each reading of the
        # file runs in its own probe's child, under the same limit, and Keras' export after it takes what it takes.
        inside.structure_read()
        supervisor = inside._supervisor
        inside.supervise(None)
        try:
            return export_one(source, output, options)
        finally:
            inside.supervise(supervisor)

    return work
