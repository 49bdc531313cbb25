"""Write the innermost template of a wrapper file as a clean file of the same kind.

Full model in, full model out; weights-only in, weights-only out; JSON config in, JSON config out. Every wrapper
level is removed, the template config is normalised for Keras 3 (unless ``keep_config``), the training config is
re-keyed to the template's outputs, and the optimizer state is carried over. The input is opened read-only; the
output is written fresh to a temporary file beside it (weight bytes copied by the kernel, see
:mod:`mgpu_io.writer`) and renamed.
"""

import contextlib
import json
import os
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Dict, List, Optional

from mgpu_io import __version__
from mgpu_io.conversions import inexact_in_keras3, weight_conversion
from mgpu_io.errors import InvalidArgument, NotAWrapper, OutputError, WeightsMismatch
from mgpu_io.extract import extract, template_outputs
from mgpu_io.graph import MODEL_CLASSES, layer_name, model_layers, model_name, unroll, walk_layers
from mgpu_io.keras1 import convert_config, is_keras1
from mgpu_io.normalize import cudnn_to_standard, normalize_for_keras3, normalize_training_config
from mgpu_io.stored import CONFIG, MODEL, WEIGHTS, open_stored
from mgpu_io.training import rekey_training_config
from mgpu_io.writer import atomic_path, group_bytes, write_json_config, write_legacy_h5

#: The Keras a repaired file is written for. Both load either; they differ in what `hard_sigmoid` computes.
TARGETS = ("keras3", "tf_keras")


@dataclass
class UnwrapReport:
    """What :func:`unwrap` did (or, with ``dry_run``, would do)."""

    source: str
    output: str
    file_type: str
    was_wrapper: bool
    depth: int
    replicas: Optional[int]
    template: Optional[str]
    outputs: Optional[List[str]]
    config: str
    target: str
    config_changes: List[str] = field(default_factory=list)
    layers: List[Dict] = field(default_factory=list)
    weights: int = 0
    weight_bytes: int = 0
    optimizer: str = "absent"
    renamed_outputs: Dict[str, str] = field(default_factory=dict)
    warnings: List[str] = field(default_factory=list)
    written: bool = False

    def to_dict(self):
        return asdict(self)


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
    progress=None,
):
    """Write the innermost template of the wrapper file ``source`` to ``output``.

    Args:
        source: a full-model ``.h5``, a weights-only ``.h5`` or a JSON config written from a multi-GPU wrapper.
        output: where to write the clean file (same kind as ``source``).
        config: for a weights-only ``source``, the architecture saved beside it (the wrapper's or the template's
            JSON config, or a full-model file). The weights are then laid out and converted by that graph.
        target: ``"keras3"`` (default) or ``"tf_keras"``: the Keras that will load the output. Both load either
            file; Keras 2's ``hard_sigmoid`` is made exact for the target only (Keras 3 changed its slope).
        keep_config: write the writer's template config and weights verbatim (no normalisation, no conversion).
        cpu: with ``keep_config``, still convert CuDNN layers (and their weights) to the standard layers that run
            on a CPU, as Keras 2 did; without ``keep_config`` that conversion always happens.
        include_optimizer: carry the optimizer state over (full models only).
        allow_plain: copy a plain (non-wrapper) model through instead of refusing it.
        overwrite: replace an existing ``output``.
        dry_run: plan and report, write nothing.
        progress: called with ``(bytes done, bytes in all)`` as weights are written (for a progress bar).

    Returns:
        An :class:`UnwrapReport`.

    Raises:
        NotAModelFile, FailedSaveStub, WeightsMismatch, UnsupportedModel: the input cannot be repaired.
        NotAWrapper: ``source`` is a plain model and ``allow_plain`` is false.
        OutputError: ``output`` is ``source``, exists without ``overwrite``, or its folder is missing.

    Example:
        >>> import tempfile, pathlib
        >>> out = pathlib.Path(tempfile.mkdtemp()) / "clean.h5"
        >>> report = unwrap("fixtures/files/k224_nested_depth3_full.h5", out)
        >>> report.depth, report.template, report.optimizer, report.written
        (3, 'template', 'copied', True)
    """
    source, output = Path(source), Path(output)
    check_output(source, output, overwrite)
    with open_stored(source) as stored:
        if target not in TARGETS:
            raise InvalidArgument(
                f"Unknown target. Expected one of {list(TARGETS)}. Received: target={target!r}. "
                f"Pass --target keras3 or --target tf_keras."
            )
        plan = _plan(stored, output, config, target, keep_config, include_optimizer, allow_plain, cpu)
        if not dry_run:
            _write(plan, output, progress)
            plan.report.written = True
        return plan.report


@contextlib.contextmanager
def planned(source, *, config=None, target="keras3", keep_config=False, include_optimizer=True, allow_plain=False,
            cpu=False):
    """Open ``source`` and yield the :class:`Plan` that :func:`unwrap` would write, with the file still open.

    For readers that take the repaired template without writing a file (:func:`mgpu_io.load_model`).
    """
    with open_stored(Path(source)) as stored:
        yield _plan(stored, None, config, target, keep_config, include_optimizer, allow_plain, cpu)


@dataclass
class Plan:
    """Everything :func:`unwrap` will write, decided before anything is written.

    ``layers`` are the template's stored weights per layer of ``config``; ``conversions`` the per-layer weight
    conversions; :meth:`arrays` reads one layer's weights, converted.
    """

    stored: object
    extraction: object
    config: Optional[dict]
    layers: list
    conversions: dict
    training: Optional[dict]
    keras_version: str
    report: UnwrapReport

    def arrays(self, layer):
        """The weights of one planned layer as ``(name, numpy array)`` pairs, converted where planned."""
        return [(name, value if not hasattr(value, "file") else value[()]) for name, value in
                _converted(layer, self.conversions)]


def _plan(stored, output, config_path, target, keep_config, include_optimizer, allow_plain, cpu=False):
    extraction = extract(stored)
    if config_path is not None:
        _attach_config(extraction, config_path)
    if not extraction.is_wrapper and not allow_plain:
        raise NotAWrapper(
            f"The model is not a multi-GPU wrapper; there is nothing to unwrap. Expected a wrapper of slice "
            f"layers, one nested template and axis-0 merges. Received: filepath={stored.path} ({stored.file_type} "
            f"file, plain model). Load it as it is, or pass --allow-plain to copy it through."
        )
    config, changes = extraction.template_config, []
    conversions, warnings = {}, []
    written_by_keras3 = str(stored.keras_version or "").startswith("3.")  # Keras 3 reads its own configs
    normalise = config is not None and not keep_config and not written_by_keras3
    cudnn_only = config is not None and keep_config and cpu  # the old Keras on a CPU: CuDNN layers only
    keras1 = normalise and is_keras1(stored.keras_version)
    if normalise:
        if keras1:
            config = convert_config(config)
            changes.append("keras1-to-keras2")
        config, normalised = normalize_for_keras3(config)
        changes += normalised
    elif cudnn_only:
        config, normalised = cudnn_to_standard(config)
        changes += normalised
    layers = extraction.layout(config)
    if normalise or cudnn_only:
        conversions, notes, found = _conversions(config, layers, keras1, target if normalise else "tf_keras",
                                                 stored.file_type == WEIGHTS)
        changes += notes
        warnings = found if normalise else []
    outputs = template_outputs(extraction, config)
    training, renamed = None, {}
    if stored.training_config is not None:
        training, renamed = rekey_training_config(stored.training_config, extraction.merge_names, outputs)
        if not keep_config:
            training, optimizer_changes = normalize_training_config(training)
            changes += optimizer_changes
    optimizer = "absent"
    if stored.optimizer_weights is not None:
        optimizer = "copied" if include_optimizer else "dropped"
    report = UnwrapReport(
        source=str(stored.path),
        output=str(output) if output is not None else None,
        file_type=stored.file_type,
        was_wrapper=extraction.is_wrapper,
        depth=extraction.depth,
        replicas=_replicas(extraction),
        template=_template_name(extraction),
        outputs=outputs,
        config="verbatim" if keep_config else "normalized",
        target=target,
        config_changes=changes,
        layers=[{"layer": layer.layer, "weights": len(layer.names)} for layer in layers if layer.names],
        weights=sum(len(layer.names) for layer in layers),
        weight_bytes=sum(layer.group[n].size * layer.group[n].dtype.itemsize for layer in layers for n in layer.names),
        optimizer=optimizer,
        renamed_outputs=renamed,
        warnings=warnings,
    )
    keras_version = "2.2.4" if keras1 else (stored.keras_version or "2.2.4")  # Keras 1 configs now read as 2.x
    return Plan(stored, extraction, config, layers, conversions, training, keras_version, report)


def _write(plan, output, progress=None):
    """Write the plan to a temporary file beside ``output`` and rename it over ``output``."""
    stored, report = plan.stored, plan.report
    with atomic_path(output) as temporary:
        if stored.file_type == CONFIG:
            config = plan.config if report.config == "verbatim" else dict(plan.config, module="keras.models")
            write_json_config(temporary, config)
            return
        provenance = json.dumps({
            "tool": f"mgpu-io {__version__}",
            "source_keras_version": stored.keras_version,
            "removed_wrapper_levels": report.depth,
            "config": report.config,
        })
        versions = {"keras_version": plan.keras_version, "backend": stored.backend or "tensorflow"}
        optimizer = stored.optimizer_weights if report.optimizer == "copied" else None
        total = report.weight_bytes + (group_bytes(optimizer) if optimizer is not None else 0)
        tick = _byte_counter(progress, total) if progress else None
        if stored.file_type == MODEL:
            by_name = {layer.layer: layer for layer in plan.layers}
            order = [layer_name(layer) for layer in model_layers(plan.config)]
            layers = [(name, _converted(by_name[name], plan.conversions) if name in by_name else []) for name in order]
            attrs = dict(versions, model_config=json.dumps(plan.config), mgpu_io=provenance,
                         training_config=json.dumps(plan.training) if plan.training is not None else None)
            write_legacy_h5(temporary, layers, root_attrs=attrs, weights_root_attrs=versions, layer_order=order,
                            optimizer_group=optimizer, progress=tick)
        else:
            layers = [(layer.layer, _converted(layer, plan.conversions)) for layer in plan.layers if layer.names]
            write_legacy_h5(temporary, layers, weights_root="/", root_attrs=dict(versions, mgpu_io=provenance),
                            progress=tick)


def _byte_counter(progress, total):
    """Turn ``progress(done, total)`` into a per-dataset ``tick(nbytes)``."""
    done = [0]

    def tick(nbytes):
        done[0] += nbytes
        progress(done[0], total)

    return tick


def _template_name(extraction):
    if extraction.template_config is not None:
        return model_name(extraction.template_config)
    return extraction.weights_wrapper.template_layer if extraction.weights_wrapper else None


def _converted(layer, conversions):
    """``(name, dataset)`` pairs of a layer, or ``(name, array)`` where a conversion rewrites them in memory."""
    sources = [(name, layer.group[name]) for name in layer.names]
    conversion = conversions.get(layer.layer)
    if not conversion or not sources:
        return sources
    names, arrays = conversion.apply(layer.names, [dataset[()] for _, dataset in sources])
    return list(zip(names, arrays))


def _conversions(config, layers, keras1, target, for_weights_file):
    """Per-layer weight conversions, the names of the steps, and what stays inexact in Keras 3."""
    by_name = {layer.layer: layer for layer in layers}
    conversions, notes, warnings = {}, [], []
    for layer in model_layers(config):
        stored = by_name.get(layer_name(layer))
        if stored is not None and stored.names:
            shapes = [stored.group[n].shape for n in stored.names]
            conversion = weight_conversion(layer, shapes, keras1, for_keras3=target == "keras3")
            if conversion:
                conversions[stored.layer] = conversion
                notes += conversion.notes
        nested = list(walk_layers(layer)) if layer["class_name"] in MODEL_CLASSES else []
        for sub in nested:
            if sub["class_name"] in ("LSTM", "GRU", "Bidirectional", "CuDNNLSTM", "CuDNNGRU"):
                warnings.append(
                    f"recurrent layer {layer_name(sub)!r} inside nested model {layer_name(layer)!r} is not converted "
                    f"(CuDNN, Keras 1 or hard_sigmoid weights); check its predictions"
                )
        for candidate in [layer] + nested if target == "keras3" else []:
            reason = inexact_in_keras3(candidate)
            if reason:
                warnings.append(reason)
    if "hard-sigmoid-gates-rescaled" in notes or "hard-sigmoid-rescaled" in notes:
        what = "load these weights into a Keras 3 model" if for_weights_file else "the file is for Keras 3"
        warnings.append(f"Keras 2 hard_sigmoid weights were rescaled for Keras 3: {what}; for tf_keras unwrap "
                        f"with --target tf_keras")
    return conversions, list(dict.fromkeys(notes)), warnings


def _attach_config(extraction, config_path):
    """Give a weights-only extraction the graph of the architecture file saved beside it."""
    if extraction.stored.file_type != WEIGHTS:
        raise InvalidArgument(
            f"--config applies to weights-only files. Expected a weights-only input, since a "
            f"{extraction.stored.file_type} file carries its own architecture. Received: "
            f"filepath={extraction.stored.path}. Leave out --config."
        )
    with open_stored(config_path) as architecture:
        if architecture.model_config is None:
            raise InvalidArgument(
                f"The --config file holds no architecture. Expected a JSON config or a full-model .h5. "
                f"Received: filepath={config_path} (a weights-only file). Pass the JSON saved with to_json()."
            )
        unrolled = unroll(architecture.model_config)
    wrapper = extraction.weights_wrapper
    if wrapper is not None and unrolled.levels and unrolled.levels[0].template_layer != wrapper.template_layer:
        raise WeightsMismatch(
            f"The config and the weights come from different models. Expected the config's nested template "
            f"layer to be the weights' group {wrapper.template_layer!r}. Received: "
            f"{unrolled.levels[0].template_layer!r} in filepath={config_path}. Pass the config saved with "
            f"these weights."
        )
    extraction.unrolled = unrolled


def _replicas(extraction):
    if extraction.unrolled is not None and extraction.unrolled.levels:
        return extraction.unrolled.levels[-1].replicas
    return extraction.weights_wrapper.replicas if extraction.weights_wrapper else None


def check_output(source, output, overwrite):
    if not output.parent.is_dir():
        raise OutputError(
            f"The output folder does not exist. Expected an existing folder for the output file. "
            f"Received: output={output}. Create {output.parent} first."
        )
    if output.exists() and source.exists() and os.path.samefile(source, output):
        raise OutputError(
            f"The output is the input file. Expected a different path: the input is never modified. "
            f"Received: input={source}, output={output}. Choose another output path."
        )
    if output.exists() and not overwrite:
        raise OutputError(
            f"The output file already exists. Expected a new path. Received: output={output}. "
            f"Pass --force to replace it."
        )
    if output.is_dir():
        raise OutputError(
            f"The output is a folder. Expected a file path. Received: output={output}. Name the output file."
        )
