"""A folder of legacy files into deployable artifacts, file by file, in this process (each file's export runs
Keras and its exporter's runtime, which do not survive a fork): the folder mode of ``unwrap --format``."""

import os
from pathlib import Path

from mgpu_io.errors import InvalidArgument, MgpuIOError, NotAModelFile, NotAWrapper, OutputError
from mgpu_io.format.batch import (
    CLEAN,
    DONE,
    DONE_REASON,
    FAILED,
    REPAIRED,
    SKIPPED,
    STOPPED,
    BatchReport,
    FileResult,
    model_files,
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


def completed(source, artifact):
    """Whether ``artifact`` exists (a file or a folder: written whole or not at all) and is newer than ``source``."""
    try:
        return os.stat(artifact).st_mtime_ns >= os.stat(source).st_mtime_ns
    except OSError:
        return False


def export_tree(
    source,
    output,
    name,
    *,
    dry_run=False,
    progress=None,
    overwrite=False,
    allow_plain=False,
    config=None,
    safe_mode=True,
    lambdas=None,
    custom_objects=None,
    **options,
):
    """Write every full model (a wrapper, or with ``allow_plain`` a plain model) under ``source`` as format ``name``
    into the same place under ``output``; weights-only files are written where ``config`` gives their architecture.
    An output newer than its input is ``done before`` (a stopped run resumes). Returns a
    :class:`~mgpu_io.format.batch.BatchReport`; ``progress`` is called with ``(done, total, FileResult)``."""
    from mgpu_io.keras.exports import check_available
    from mgpu_io.keras.save import unwrap_to_export

    source, output = Path(source).resolve(), Path(output).resolve()
    if output == source or source in output.parents:
        raise OutputError(
            f"The output folder is the input folder or inside it. Expected a folder elsewhere, so that inputs are "
            f"never overwritten or read back. Received: input={source}, output={output}. Choose another output folder."
        )
    unused = {key: value for key, value in options.items() if value not in (None, False, True, "keras3")}
    if unused:
        raise InvalidArgument(
            f"A folder export takes no {sorted(unused)}. Expected the options of a {name} output. Received: {unused}. "
            f"Leave them out."
        )
    if not dry_run:
        check_available(name)
    files = model_files(source)
    if not files:
        raise NotAModelFile(
            f"The folder holds no Keras file. Expected legacy Keras HDF5 files under it. Received: {source}. Check "
            f"the folder; `mgpu-io inspect FILE` says what a file is."
        )
    report = BatchReport(source=str(source), output=str(output), dry_run=dry_run)
    results = []

    def finished(result):
        result.path = str(Path(result.path).relative_to(source))
        results.append(result)
        if progress is not None:
            progress(len(results), len(files), result)

    try:
        for path in files:
            artifact = artifact_path(output, path.relative_to(source), name)
            kind = describe(path).kind
            if kind not in (LEGACY_MODEL, SAVEDMODEL) and config is None:
                finished(
                    FileResult(
                        str(path),
                        SKIPPED,
                        reason=f"{describe(path).name}: a {name} output needs a "
                        f"whole model (config= gives weights theirs)",
                    )
                )
                continue
            if not overwrite and completed(path, artifact):
                finished(FileResult(str(path), DONE, output=str(artifact), reason=DONE_REASON))
                continue
            if dry_run:
                finished(FileResult(str(path), REPAIRED))
                continue
            artifact.parent.mkdir(parents=True, exist_ok=True)
            arguments = dict(
                config=config if kind not in (LEGACY_MODEL, SAVEDMODEL) else None,
                overwrite=True,
                safe_mode=safe_mode,
                lambdas=lambdas,
                custom_objects=custom_objects,
            )
            try:
                try:
                    done = unwrap_to_export(path, artifact, name, **arguments)
                    status = REPAIRED
                except NotAWrapper:
                    if not allow_plain:
                        finished(
                            FileResult(
                                str(path),
                                SKIPPED,
                                reason="a plain model, not a wrapper: pass allow_plain=True to export it too",
                            )
                        )
                        continue
                    done = unwrap_to_export(path, artifact, name, allow_plain=True, **arguments)
                    status = CLEAN
            except MgpuIOError as error:
                finished(FileResult(str(path), FAILED, reason=str(error)))
                continue
            finished(FileResult(str(path), status, output=str(artifact), depth=done.depth))
    except BaseException as stop:  # Ctrl-C: what was done before it, and what was not
        seen = {r.path for r in results}
        report.files = results + [
            FileResult(str(p.relative_to(source)), FAILED, reason=STOPPED)
            for p in files
            if str(p.relative_to(source)) not in seen
        ]
        stop.report = report
        raise
    report.files = results
    return report
