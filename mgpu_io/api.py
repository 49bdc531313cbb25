"""The verbs of mgpu-io that work on files: :func:`inspect` and :func:`unwrap`.

``unwrap`` is the one entry point for every repair the command line offers: one file into a legacy file of its own
kind (the format core, no Keras), one file into Keras 3's ``.keras`` format (the Keras floor, imported only then),
or a folder into a mirror folder. Options that do not apply to the chosen output are refused, never ignored.
"""

from pathlib import Path

from mgpu_io.errors import InvalidArgument, NotAModelFile, Param, does_not_apply
from mgpu_io.format import door
from mgpu_io.format.inspect import Finding, InspectReport
from mgpu_io.format.inspect import inspect as _inspect_legacy
from mgpu_io.format.options import KERAS_FORMAT, SAME_FORMAT, UnwrapOptions
from mgpu_io.format.plan import UnwrapReport, check_output, plan_only
from mgpu_io.format.plan_data import PlanData
from mgpu_io.format.read import file_of
from mgpu_io.tf import read_converted

__all__ = ["InspectReport", "UnwrapReport", "inspect", "unwrap"]


def inspect(path, scan_weights=None, *, diagram=None, overwrite=False, config=None) -> InspectReport:
    """Say what any Keras file holds: a legacy Keras file (see :func:`mgpu_io.format.inspect.inspect`), a Keras 3
    ``.keras`` archive or ``.weights.h5`` file (read as data, without Keras), a TF 2.x SavedModel folder or a
    TF-format checkpoint (with ``config``, the architecture saved beside it: a checkpoint records no layer names).

    What the input is, is decided by :func:`mgpu_io.format.door.describe`, from its content. A SavedModel or
    checkpoint is read as data into the legacy layout first (:mod:`mgpu_io.tf`, which needs TensorFlow); the report
    then says so in a ``tensorflow-format`` finding.

    Example:
        >>> report = inspect("fixtures/tf2/tf23_nested_depth2_savedmodel")
        >>> report.file_type, report.depth, [f.kind for f in report.findings][-1]
        ('model', 2, 'tensorflow-format')
    """
    from mgpu_io.remote import is_url

    if is_url(path):  # object storage: its structure read through fsspec, no weights (mgpu_io.remote)
        from mgpu_io.remote import inspect as inspect_remote

        if diagram is not None or config is not None:
            given = Param("diagram") if diagram is not None else Param("config")
            raise does_not_apply(
                given,
                "reads a local file: a remote file is inspected alone",
                "a local path",
                f"filepath={path}",
                also=", or copy the file locally",
            )
        return inspect_remote(path, scan_weights=bool(scan_weights))
    path = file_of(path)  # an open h5py.File, as Keras takes one
    if config is None and door.sniff(path) == door.HDF5:  # the common case, read at once (one probe, not two)
        try:
            return _inspect_legacy(path, scan_weights, diagram=diagram, overwrite=overwrite)
        except NotAModelFile as error:
            if error.kind != door.KERAS3_WEIGHTS:  # damaged, hostile, no model: the reader's own error stands
                raise
    description = door.describe(path)  # what the input is, by its content
    kind = description.kind
    if kind not in door.TENSORFLOW_KINDS and config is not None:
        raise does_not_apply(
            Param("config"), "applies to TF checkpoints when inspecting", "a TF checkpoint", f"filepath={path}", kind
        )
    if kind == door.FOLDER:
        raise InvalidArgument(
            f"inspect reads one file. Expected a model file. Received: filepath={path} (a folder). Inspect its files "
            f"one by one (`mgpu-io inspect DIR/*`), or list what a repair of the folder would do: "
            f"mgpu_io.unwrap(folder, output_folder, dry_run=True) (`mgpu-io unwrap DIR OUT --dry-run`)."
        )
    if kind in door.KERAS3_KINDS:
        if diagram is not None:
            raise does_not_apply(
                Param("diagram"),
                "draws a multi-GPU wrapper next to its template",
                "a legacy full model file or JSON config",
                f"filepath={path} ({description.name}, which holds no wrapper)",
                kind,
            )
        from mgpu_io.format.keras3 import inspect_keras3

        return inspect_keras3(path, description)
    if kind not in door.TENSORFLOW_KINDS:  # legacy files, and what is none: open_stored names what it found
        return _inspect_legacy(path, scan_weights, diagram=diagram, overwrite=overwrite)
    if kind == door.TF_CHECKPOINT and config is None:
        return _checkpoint_outline(path)
    return read_converted(  # the TensorFlow kinds: read as data into the legacy layout, then as one
        lambda readable: _inspect_legacy(readable, scan_weights, diagram=diagram, overwrite=overwrite),
        (description, config if kind == door.TF_CHECKPOINT else None),
    )


def _checkpoint_outline(path):
    """A TF checkpoint inspected without its architecture: what its object graph alone says."""
    from mgpu_io.tf.checkpoint import describe

    held = describe(path)
    nested = [model for model in held["models"] if model["where"] != "root"]
    depth = held["template"].count("/layer-") if held["template"] else 0
    shown = ", ".join(f"{v['name']} {tuple(v['shape'])}" for v in held["variables"][:8])
    more = f", ... ({held['weights']} in all)" if held["weights"] > 8 else ""
    models = "; ".join(f"{m['where']}: {m['layers']} layers, {m['weighted']} with weights" for m in held["models"])
    findings = [
        Finding(
            "tensorflow-format",
            f"read from a TF checkpoint as data (its object graph and variable index; nothing in it was run). It "
            f"records no layer names nor classes: models {models}; the weights of {held['template'] or 'no model'}: "
            f"{shown or 'none'}{more}; optimizer: {held['optimizer_variables']} variables ({held['slots']} slots)",
        ),
        Finding(
            "config-needed",
            "pass config= the JSON saved beside the checkpoint (the wrapper's or the template's to_json()) "
            "adds the layer names, the wrapper's levels and the template's inputs and outputs; or build the template "
            "in code and load the weights with mgpu_io.transfer_weights(checkpoint, model)",
        ),
    ]
    return InspectReport(
        file=str(path),
        file_type=door.KINDS[door.TF_CHECKPOINT].file_type,
        is_wrapper=bool(nested) and depth > 0,
        variant=None,
        replicas=None,
        depth=depth,
        template=None,
        inputs=[],
        outputs=None,
        keras_version=None,
        backend=None,
        has_optimizer_weights=held["optimizer_variables"] > 0,
        findings=findings,
        levels=[{"name": None, "variant": None, "replicas": None, "merge_layers": []} for _ in range(depth)],
        weights=held["weights"],
    )


def unwrap(
    source,
    output,
    *,
    config=None,
    target="keras3",
    keep_config=False,
    cpu=False,
    include_optimizer=True,
    allow_plain=False,
    overwrite=False,
    dry_run=False,
    jobs=None,
    progress=None,
    safe_mode=True,
    lambdas=None,
    custom_objects=None,
    format=None,
    inputs=None,
):
    """Write the innermost template of the wrapper file ``source`` to ``output``.

    The output's name is its format: an ``output`` ending in ``.keras`` gets Keras 3's native format (this needs
    Keras); ``.h5``/``.hdf5`` a legacy HDF5 file of ``source``'s own kind (full model in, full model out;
    weights-only in, weights-only out); ``.json`` a JSON config, from a JSON or YAML config. Any other name, or one
    that cannot hold what ``source`` holds, is refused before anything is written
    (:func:`mgpu_io.format.door.output_format`). A folder ``source`` is repaired file by
    file into the folder ``output`` (see :func:`mgpu_io.format.batch.unwrap_tree`).

    Args:
        source: a full-model ``.h5``, a weights-only ``.h5``, a JSON or YAML config written from a multi-GPU wrapper,
            a TF 2.x SavedModel folder or TF-format checkpoint of one (read as data; needs TensorFlow), or a
            folder of legacy files.
        output: where to write the clean file (or folder).
        config: for a weights-only ``source`` (or a TF checkpoint), the architecture saved beside it (the wrapper's
            or the template's JSON config, or a full-model file). The weights are then laid out and converted by
            that graph.
        target: ``"keras3"`` (default) or ``"tf_keras"``: the Keras that will load the output. Both load either
            file; Keras 2's ``hard_sigmoid`` is made exact for the target only (Keras 3 changed its slope).
            A ``.keras`` output is for Keras 3 only.
        keep_config: write the writer's template config and weights verbatim (no normalisation, no conversion);
            legacy outputs only.
        cpu: with ``keep_config``, still convert CuDNN layers (and their weights) to the standard layers that run
            on a CPU, as Keras 2 did; without ``keep_config`` that conversion always happens.
        include_optimizer: carry the optimizer state over (full models only).
        allow_plain: copy a plain (non-wrapper) model through instead of refusing it (skipping it, in a folder).
        overwrite: replace an existing ``output``.
        dry_run: plan and report, write nothing (and import no Keras).
        jobs: worker processes for a folder ``source`` (default: the machine's cores); for a bucket prefix, the
            files transferred at once while this process repairs (default: one file after another).
        progress: called as weights are written, with ``(bytes done, bytes in all)``; for a folder, with
            ``(files done, files in all, FileResult)``.
        safe_mode: for a ``.keras`` output, Keras' safe mode while the template is built. Stored bytecode never
            reaches Keras either way: every Lambda is written by reference (docs/lambdas.md).
        lambdas: for a ``.keras`` output, ``{layer name: function}``: the functions of the template's own Lambda
            layers (your code; ``inspect`` lists them). A ``.h5``/JSON output needs none: it refers to each
            Lambda by its layer name, and you pass the functions when you load it.
        format: a deployable output where the name cannot say it: ``"saved_model"`` (a SavedModel folder for TF
            Serving); ``"onnx"`` and ``"litert"`` are also named by ``.onnx`` and ``.tflite``. For a folder
            ``source``, every repaired file is written in that format (docs/deploy.md).
        inputs: for a deployable output, the inputs its runtime is checked on (an array, a list, or a dict by
            input name); default: generated from the input shapes.
        custom_objects: for a ``.keras`` output, ``{class name: class}``: the template's own custom layers and
            objects (your code), as Keras takes them. A ``.h5``/JSON output needs none: it names each class, and you
            pass them when you load it.

    Returns:
        An :class:`UnwrapReport` (for a folder, a :class:`~mgpu_io.format.batch.BatchReport`).

    Raises:
        NotAModelFile, FailedSaveStub, WeightsMismatch, UnsupportedModel: the input cannot be repaired.
        NotAWrapper: ``source`` is a plain model and ``allow_plain`` is false.
        InvalidArgument: an option does not apply to this input or output.
        MissingLambda: a ``.keras`` output of a template whose own Lambda has no function in ``lambdas``.
        OutputError: ``output`` is ``source``, exists without ``overwrite``, or its folder is missing.
        MissingDependency: a ``.keras`` output without Keras installed.

    Example:
        >>> import tempfile, pathlib
        >>> out = pathlib.Path(tempfile.mkdtemp()) / "clean.h5"
        >>> report = unwrap("fixtures/files/k224_nested_depth3_full.h5", out)
        >>> report.depth, report.template, report.optimizer, report.written
        (3, 'template', 'copied aside', True)
    """
    from mgpu_io.remote import is_url

    if is_url(source) or is_url(output):  # object storage, through fsspec, file by file (mgpu_io.remote)
        from mgpu_io.remote import unwrap as unwrap_remote

        if dry_run:
            raise does_not_apply(
                Param("dry_run", True),
                "applies to a local repair: a remote one runs file by file and writes",
                "local paths",
                f"source={source}, output={output}",
                also=" (scale out with the Dask recipe, docs/scale.md)",
            )
        return unwrap_remote(
            source,
            output,
            progress=progress,
            overwrite=overwrite,
            jobs=jobs,
            config=config,
            target=target,
            keep_config=keep_config,
            cpu=cpu,
            include_optimizer=include_optimizer,
            allow_plain=allow_plain,
            safe_mode=safe_mode,
            lambdas=lambdas,
            custom_objects=custom_objects,
            format=format,
            inputs=inputs,
        )
    source, output = Path(source), Path(output)

    def checked(description):  # what does not apply is refused; then the options, built and checked once
        kind = description.kind
        if jobs is not None and kind != door.FOLDER:
            received = (
                Param("jobs", jobs, text=f"jobs={jobs}"),
                f" with filepath={source} ({description.name}), which is repaired in one process",
            )
            raise does_not_apply(
                Param("jobs"), "sets the worker processes of a folder's repair", "a folder source", received, kind
            )
        if kind in door.KERAS3_KINDS:
            raise door.refusal(description, "unwrap", "a file written by a legacy Keras or tf.keras")
        if not include_optimizer and kind in door.WEIGHTS_ONLY_KINDS + door.CONFIG_KINDS:
            raise does_not_apply(
                Param("include_optimizer", False),
                "leaves out a full model's optimizer state",
                "a full-model source",
                f"filepath={source} ({description.name}, which holds no optimizer state)",
                kind,
            )
        if kind == door.FOLDER:  # every file in one format: a deployable one, or each file's own kind
            exported = door.export_format(Path(output, "x" + door.EXPORT_FORMATS.get(format or "", "")), format)
            output_format = exported or SAME_FORMAT
        else:
            output_format = door.output_format(description, output, config=config, format=format)
        if inputs is not None and output_format not in door.EXPORT_FORMATS:
            raise does_not_apply(
                Param("inputs"),
                "are what a deployable output's runtime is checked on",
                "an .onnx, .tflite or SavedModel output",
                f"output={output}",
                kind,
            )
        return UnwrapOptions(  # built and checked once, here; passed down unchanged
            config=config,
            target=target,
            keep_config=keep_config,
            cpu=cpu,
            include_optimizer=include_optimizer,
            allow_plain=allow_plain,
            overwrite=overwrite,
            dry_run=dry_run,
            safe_mode=safe_mode,
            lambdas=lambdas,
            custom_objects=custom_objects,
            output_format=output_format,
        )

    def repaired(description):  # in the door's child, for an HDF5 file: read once, in one child
        options = checked(description)
        if options.output_format != SAME_FORMAT and not options.dry_run:  # Keras builds it in the parent
            check_output(source, output, overwrite, inputs=(config,) if config is not None else ())
            if options.output_format == KERAS_FORMAT:  # the plan as data: the parent builds it, opening nothing
                from mgpu_io.keras.save import plan_for_keras

                return plan_for_keras(source, output, options)
            plan_only(source, **options.plan_options())  # so that the parent plans it without a probe of its own
            return None
        return _unwrap(source, output, description, options, jobs=jobs, progress=progress)

    from mgpu_io.format.unwrap import unwrap_file  # noqa: F401 - imported here, once, not in each child that runs it

    description, outcome = door.describe_then(source, repaired, progress=progress)
    handed = outcome[0] if outcome is not None else None
    if handed is not None and not isinstance(handed, PlanData):  # the child's report: repaired in the child
        return handed
    options = checked(description)
    return _unwrap(source, output, description, options, jobs=jobs, progress=progress, plan=handed, inputs=inputs)


def _unwrap(source, output, description, options, *, jobs=None, progress=None, plan=None, inputs=None):
    """Send ``source``, as ``description`` says it is, to what repairs it: a TensorFlow format through its legacy
    copy, a folder to :mod:`mgpu_io.format.batch` (or, for a deployable format, :mod:`mgpu_io.keras.exports.tree`),
    a ``.keras`` output to :mod:`mgpu_io.keras.save`, a deployable one to its exporter, anything else to
    :mod:`mgpu_io.format.unwrap`. ``plan``: a ``.keras`` output's plan, handed back as data by the door's child."""
    kind = description.kind
    if kind in door.TENSORFLOW_KINDS:  # read as data into the legacy layout, then as one
        return read_converted(
            lambda readable: _unwrap(
                readable, output, door.glance(readable), options, progress=progress, inputs=inputs
            ),
            (description, options.config if kind == door.TF_CHECKPOINT else None),
        )
    exported = options.output_format in door.EXPORT_FORMATS
    if kind == door.FOLDER and exported:
        from mgpu_io.keras.exports.tree import export_tree

        return export_tree(source, output, options, jobs=jobs, progress=progress)
    if kind == door.FOLDER:
        from mgpu_io.format.batch import unwrap_tree

        return unwrap_tree(source, output, options, jobs=jobs, progress=progress)
    if exported and not options.dry_run:
        from mgpu_io.keras.save import unwrap_to_export

        return unwrap_to_export(
            source,
            output,
            options.output_format,
            config=options.config,
            allow_plain=options.allow_plain,
            overwrite=options.overwrite,
            safe_mode=options.safe_mode,
            lambdas=options.lambdas,
            custom_objects=options.custom_objects,
            inputs=inputs,
        )
    if options.output_format == KERAS_FORMAT and not options.dry_run:
        from mgpu_io.keras.save import unwrap_to_keras

        return unwrap_to_keras(source, output, options, plan=plan)
    from mgpu_io.format.unwrap import unwrap_file

    return unwrap_file(source, output, options, progress=progress)
