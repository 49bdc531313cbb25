"""The verbs of mgpu-io that work on files: :func:`inspect` and :func:`unwrap`.

``unwrap`` is the one entry point for every repair the command line offers: one file into a legacy file of its own
kind (the format core, no Keras), one file into Keras 3's ``.keras`` format (the Keras floor, imported only then),
or a folder into a mirror folder. Options that do not apply to the chosen output are refused, never ignored.
"""

import dataclasses
import functools
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any, Optional

from mgpu_io.errors import InvalidArgument, NotAModelFile, Param, Text, does_not_apply
from mgpu_io.format import door

if TYPE_CHECKING:
    from mgpu_io.format.inspect import InspectReport
    from mgpu_io.format.unwrap_report import UnwrapReport

__all__ = [
    "InspectReport",
    "InspectRoute",
    "UnwrapReport",
    "UnwrapRoute",
    "inspect",
    "inspect_route",
    "unwrap",
    "unwrap_route",
]


def __getattr__(name):  # imported on first use: unwrap needs no inspect report, inspect neither h5py nor NumPy
    if name == "InspectReport":
        from mgpu_io.format.inspect import InspectReport

        return InspectReport
    if name == "UnwrapReport":
        from mgpu_io.format.unwrap_report import UnwrapReport

        return UnwrapReport
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


def inspect(path, scan_weights=None, *, diagram=None, overwrite=False, config=None) -> "InspectReport":
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
    from mgpu_io.format.inspect import inspect as _inspect_legacy

    if door.is_url(path):  # object storage: its structure read through fsspec, no weights (mgpu_io.remote)
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
        return inspect_remote(path, scan_weights=bool(scan_weights), inspect_local=inspect)
    if "h5py" in sys.modules:  # an open h5py.File, as Keras takes one (a caller who passes one imported h5py)
        from mgpu_io.format.read import file_of

        path = file_of(path)
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
            problem="inspect reads one file",
            parameter="filepath",
            expected="a model file",
            received=f"filepath={path} (a folder)",
            fix=(
                "Inspect its files one by one (`mgpu-io inspect DIR/*`), or list what a repair of the folder would "
                "do: mgpu_io.unwrap(folder, output_folder, dry_run=True) (`mgpu-io unwrap DIR OUT --dry-run`)"
            ),
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
    from mgpu_io.tf.convert import read_converted

    return read_converted(  # the TensorFlow kinds: read as data into the legacy layout, then as one
        lambda readable: _inspect_legacy(readable, scan_weights, diagram=diagram, overwrite=overwrite),
        (description, config if kind == door.TF_CHECKPOINT else None),
    )


def _checkpoint_outline(path):
    """A TF checkpoint inspected without its architecture: what its object graph alone says."""
    from mgpu_io.format.inspect import Finding, InspectReport
    from mgpu_io.tf.checkpoint import describe_checkpoint

    held = describe_checkpoint(path)
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
            Text(
                "pass ",
                Param("config"),
                " the JSON saved beside the checkpoint (the wrapper's or the template's to_json()) adds the layer "
                "names, the wrapper's levels and the template's inputs and outputs; or build the template in code "
                "and load the weights with mgpu_io.transfer_weights(checkpoint, model)",
            ),
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
    call = _Call(
        source,
        output,
        dict(  # the one bundle of options: an UnwrapOptions once the output's format is known (_options)
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
        ),
        format=format,
        inputs=inputs,
        jobs=jobs,
        progress=progress,
    )
    if door.is_url(source) or door.is_url(output):  # object storage, through fsspec, file by file (mgpu_io.remote)
        return _unwrap_remote(call)
    return _unwrap_local(call.replace(source=Path(source), output=Path(output)))


@dataclass(frozen=True)
class _Call:
    """One :func:`unwrap` call: its ``source`` and ``output``, the ``fields`` of its
    :class:`~mgpu_io.format.options.UnwrapOptions` (all but ``output_format``, which the output's name and the input
    choose), and what is not an option of the repair itself."""

    source: Any
    output: Any
    fields: dict
    format: Optional[str] = None
    inputs: Any = None
    jobs: Optional[int] = None
    progress: Any = None
    #: One file of a folder or bucket prefix: ``config`` applies to it only where it is weights-only.
    in_folder: bool = False

    def replace(self, **changes):
        return dataclasses.replace(self, **changes)


def _unwrap_remote(call):
    """A source or output in object storage: repaired file by file by :func:`mgpu_io.remote.unwrap`, which calls
    :func:`unwrap` on local copies (``jobs``: the files transferred at once); a dry run does not apply."""
    from mgpu_io.remote import unwrap as unwrap_remote

    if call.fields["dry_run"]:
        raise does_not_apply(
            Param("dry_run", True),
            "applies to a local repair: a remote one runs file by file and writes",
            "local paths",
            f"source={call.source}, output={call.output}",
            also=" (scale out with the Dask recipe, docs/scale.md)",
        )
    fields = {name: value for name, value in call.fields.items() if name != "dry_run"}
    return unwrap_remote(
        call.source,
        call.output,
        repair=_unwrap_folder_file,
        progress=call.progress,
        jobs=call.jobs,
        format=call.format,
        inputs=call.inputs,
        **fields,
    )


def _unwrap_folder_file(source, output, *, format=None, inputs=None, **fields):
    """:func:`unwrap` of one local copy of a bucket prefix's file, as a local folder's repair takes each of its
    files: ``config`` is the architecture of the folder's weights-only files, and a full model keeps its own
    (decided by the door's one look at the file, :func:`_options`)."""
    from mgpu_io.format.options import UnwrapOptions

    defaults = {f.name: f.default for f in dataclasses.fields(UnwrapOptions) if f.name != "output_format"}
    call = _Call(source, output, dict(defaults, **fields), format=format, inputs=inputs, in_folder=True)
    return _unwrap_local(call.replace(source=Path(source), output=Path(output)))


def _unwrap_local(call):
    """A local source: described by the door and, for an HDF5 file, repaired (or planned) in the child that looked
    at it (:func:`_in_child`); what the child hands back decides what is left to do here."""
    from mgpu_io.format.sandbox.fork_server import started_early
    from mgpu_io.format.unwrap_report import UnwrapReport

    if not started_early():  # else the command line's fork server has imported it, and the child comes from there
        from mgpu_io.format.unwrap import unwrap_file  # noqa: F401 - imported here, once, not in each child

    description, outcome = door.describe_then(call.source, functools.partial(_in_child, call), progress=call.progress)
    handed = outcome[0] if outcome is not None else None
    if isinstance(handed, UnwrapReport):  # repaired in the child (else handed is a model's plan, as data, or None)
        return handed
    return _unwrap(call, description, _options(call, description), plan=handed)


def _in_child(call, description):
    """In the door's child, for an HDF5 file, so that it is read once, in one child: a legacy output (or a dry run)
    is repaired here and its report handed back; a model that Keras builds in the parent (a ``.keras`` or deployable
    output) is planned here and its plan handed back as data (:mod:`mgpu_io.format.plan_data`)."""
    from mgpu_io.format.options import SAME_FORMAT
    from mgpu_io.format.plan import check_output

    options = _options(call, description)
    if options.output_format == SAME_FORMAT or options.dry_run:
        return _unwrap(call, description, options)
    config = options.config
    check_output(call.source, call.output, options.overwrite, inputs=(config,) if config is not None else ())
    from mgpu_io.keras.save import plan_for_keras

    return plan_for_keras(call.source, call.output, options)


def _options(call, description):
    """The call's :class:`~mgpu_io.format.options.UnwrapOptions`, built and checked once: what does not apply to
    this input is refused, then the output's format is chosen (:func:`_output_format`)."""
    from mgpu_io.format.options import UnwrapOptions

    if call.in_folder and call.fields["config"] is not None and description.kind not in door.WEIGHTS_ONLY_KINDS:
        call = call.replace(fields=dict(call.fields, config=None))  # a folder's config is its weights files' own
    _refuse_for_input(call, description)
    output_format = _output_format(call, description)
    if call.inputs is not None and output_format not in door.EXPORT_FORMATS:
        raise does_not_apply(
            Param("inputs"),
            "are what a deployable output's runtime is checked on",
            "an .onnx, .tflite or SavedModel output",
            f"output={call.output}",
            description.kind,
        )
    return UnwrapOptions(**call.fields, output_format=output_format)  # passed down unchanged


def _refuse_for_input(call, description):
    """Refuse what cannot apply to this kind of input: ``jobs`` but for a folder, a Keras 3 file, and
    ``include_optimizer=False`` for an input that holds no optimizer state."""
    kind, source = description.kind, call.source
    if call.jobs is not None and kind != door.FOLDER:
        received = (
            Param("jobs", call.jobs, text=f"jobs={call.jobs}"),
            f" with filepath={source} ({description.name}), which is repaired in one process",
        )
        raise does_not_apply(
            Param("jobs"), "sets the worker processes of a folder's repair", "a folder source", received, kind
        )
    if kind in door.KERAS3_KINDS:
        raise door.refusal(description, "unwrap", "a file written by a legacy Keras or tf.keras")
    if not call.fields["include_optimizer"] and kind in door.WEIGHTS_ONLY_KINDS + door.CONFIG_KINDS:
        raise does_not_apply(
            Param("include_optimizer", False),
            "leaves out a full model's optimizer state",
            "a full-model source",
            f"filepath={source} ({description.name}, which holds no optimizer state)",
            kind,
        )


def _output_format(call, description):
    """What the output is to be: for a folder, one format for every file (a deployable one, or each file's own
    kind); for a file, what its name and the input say (:func:`mgpu_io.format.door.output_format`)."""
    from mgpu_io.format.options import SAME_FORMAT

    if description.kind == door.FOLDER:
        suffix = door.EXPORT_FORMATS.get(call.format or "", "")
        return door.export_format(Path(call.output, "x" + suffix), call.format) or SAME_FORMAT
    return door.output_format(description, call.output, config=call.fields["config"], format=call.format)


def _unwrap(call, description, options, *, plan=None):
    """Send the call's source, as ``description`` says it is, to what repairs it. ``plan``: the plan of a model that
    Keras builds, handed back as data by the door's child."""
    from mgpu_io.format.options import KERAS_FORMAT, SAME_FORMAT

    kind = description.kind
    if kind in door.TENSORFLOW_KINDS:
        return _unwrap_converted(call, description, options)
    if kind == door.FOLDER:
        return _unwrap_folder(call, options)
    if options.output_format == SAME_FORMAT or options.dry_run:
        from mgpu_io.format.unwrap import unwrap_file

        return unwrap_file(call.source, call.output, options, progress=call.progress)
    if options.output_format == KERAS_FORMAT:
        from mgpu_io.keras.save import unwrap_to_keras

        return unwrap_to_keras(call.source, call.output, options, plan=plan)
    from mgpu_io.keras.save import unwrap_to_export

    return unwrap_to_export(call.source, call.output, options, plan=plan, inputs=call.inputs)


def _unwrap_converted(call, description, options):
    """A SavedModel or TF checkpoint: read as data into a legacy copy (:func:`mgpu_io.tf.convert.read_converted`), which is
    then repaired as one."""
    from mgpu_io.tf.convert import read_converted

    config = options.config if description.kind == door.TF_CHECKPOINT else None
    return read_converted(
        lambda readable: _unwrap(call.replace(source=readable, jobs=None), door.glance(readable), options),
        (description, config),
    )


def _unwrap_folder(call, options):
    """A folder, file by file into the output folder: exported by :mod:`mgpu_io.keras.exports.tree` for a
    deployable format, else repaired by :mod:`mgpu_io.format.batch`."""
    if options.output_format in door.EXPORT_FORMATS:
        from mgpu_io.keras.exports.tree import export_tree

        return export_tree(call.source, call.output, options, jobs=call.jobs, progress=call.progress)
    from mgpu_io.format.batch import unwrap_tree

    return unwrap_tree(call.source, call.output, options, jobs=call.jobs, progress=call.progress)


@dataclass(frozen=True)
class UnwrapRoute:
    """What an :func:`unwrap` call will go through, told from the paths' names and the source's first bytes before
    it starts, for a front end's choices (the command line's progress bar, the runtimes it starts quietly):
    ``remote`` (a URL on either side), ``folder`` (file by file into a folder), ``tensorflow`` (the input is read by
    TensorFlow), ``keras`` (Keras builds the output: a ``.keras`` or deployable output, not a dry run) and ``size``
    (a local source file's bytes, else ``None``)."""

    remote: bool
    folder: bool
    tensorflow: bool
    keras: bool
    size: Optional[int]


def unwrap_route(source, output, *, format=None, dry_run=False) -> UnwrapRoute:
    """The :class:`UnwrapRoute` of ``unwrap(source, output, format=format, dry_run=dry_run)``; refuses nothing
    (:func:`unwrap` does).

    Example:
        >>> unwrap_route("fixtures/files/k224_siamese_x2_full.h5", "model.onnx")
        UnwrapRoute(remote=False, folder=False, tensorflow=False, keras=True, size=...)
        >>> unwrap_route("fixtures/files", "repaired", dry_run=True).folder
        True
    """
    remote = door.is_url(source) or door.is_url(output)
    path = Path(source)
    kind = None if remote else door.sniff(path)
    built_by_keras = {door.KERAS_SUFFIX, *(suffix for suffix in door.EXPORT_FORMATS.values() if suffix)}
    return UnwrapRoute(
        remote=remote,
        folder=kind == door.FOLDER or (remote and str(source).endswith("/")),  # a SavedModel folder is one model
        tensorflow=kind in door.TENSORFLOW_KINDS,
        keras=not dry_run and (Path(output).suffix in built_by_keras or bool(format)),
        size=path.stat().st_size if not remote and path.is_file() else None,
    )


@dataclass(frozen=True)
class InspectRoute:
    """What an :func:`inspect` call will go through, told from the path's name and first bytes before it starts,
    for a front end's choices (the runtimes the command line starts quietly): ``remote`` (a URL, read through
    fsspec) and ``tensorflow`` (the input is read by TensorFlow: a SavedModel folder or a TF checkpoint)."""

    remote: bool
    tensorflow: bool


def inspect_route(path) -> InspectRoute:
    """The :class:`InspectRoute` of ``inspect(path)``; refuses nothing (:func:`inspect` does).

    Example:
        >>> inspect_route("fixtures/tf2/tf23_nested_depth2_savedmodel")
        InspectRoute(remote=False, tensorflow=True)
        >>> inspect_route("fixtures/files/k224_siamese_x2_full.h5").tensorflow
        False
    """
    remote = door.is_url(path)
    return InspectRoute(remote=remote, tensorflow=not remote and door.sniff(Path(path)) in door.TENSORFLOW_KINDS)
