"""Describe a legacy Keras file: is it a wrapper, how deep, around which template, and what is wrong with it."""

import functools
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Optional

import h5py
import numpy as np

from mgpu_io.errors import FailedSaveStub, InvalidArgument, Param, Text
from mgpu_io.format import conversions
from mgpu_io.format.config import input_names, layer_name, model_layers, model_name
from mgpu_io.format.conversions.cudnn import cudnn_layout
from mgpu_io.format.conversions.keras1 import is_keras1
from mgpu_io.format.extract import extract, template_outputs
from mgpu_io.format.non_finite import non_finite_message
from mgpu_io.format.read import CONFIG, open_stored, reading
from mgpu_io.format.sandbox import probed
from mgpu_io.format.string_attrs import read_str
from mgpu_io.format.text import names, plural, printable
from mgpu_io.format.weights import scoped_weight_names
from mgpu_io.format.wrapper_writers import BY_NAME
from mgpu_io.lambdas.by_reference import template_lambdas
from mgpu_io.lambdas.recovery import recover_lambdas, recovered_lines

_SCAN_CHUNK = 1 << 22  # elements read at a time when scanning weights for NaN/Inf
#: Above this many bytes of weights, the automatic NaN scan reads only BatchNormalization layers' weights.
SCAN_BUDGET = 256 << 20


@dataclass
class Finding:
    """Something the user should know about the file; ``kind`` is stable for scripts."""

    kind: str
    message: str
    layers: list[str] = field(default_factory=list)


@dataclass
class InspectReport:
    """What :func:`inspect` found; :meth:`to_dict` is the ``--json`` output (documented in docs/cli.md)."""

    file: str
    file_type: str
    is_wrapper: bool
    variant: Optional[str]
    replicas: Optional[int]
    depth: int
    template: Optional[str]
    inputs: list[str]
    outputs: Optional[list[str]]
    keras_version: Optional[str]
    backend: Optional[str]
    has_optimizer_weights: bool
    findings: list[Finding] = field(default_factory=list)
    levels: list[dict] = field(default_factory=list)
    weights: int = 0
    lambdas: list[dict] = field(default_factory=list)
    template_class: Optional[str] = None
    layer_count: int = 0
    parameters: int = 0

    def to_dict(self):
        return asdict(self)

    def converted_from(self, source, note):
        """Report on ``source``, a TensorFlow format read through a legacy copy (:func:`mgpu_io.tf.convert.read_converted`)."""
        self.file = source
        self.findings.append(Finding("tensorflow-format", note))

    def __str__(self):
        """What the file holds, as ``mgpu-io inspect`` prints it: the path once, then the tree of wrapper levels down
        to the template, and counts that say what they count."""
        lines = [f"{printable(self.file)}: {FILE_TYPES[self.file_type]}"]
        if self.file_type != "stub":
            if self.is_wrapper:
                kind = f"multi-GPU wrapper, {plural(self.depth, 'level')}"
            elif self.file_type in ("keras", "keras3-weights"):
                kind = "Keras 3's own format (nothing to repair)"
            else:
                kind = "plain model (not a wrapper)"
            lines.append(
                f"  {kind}; written by Keras {printable(self.keras_version or '?')} "
                f"({printable(self.backend or 'no backend recorded')})"
            )
            depth = 0
            for run in _level_runs(self.levels):
                if len(run) > 2:  # repeated nesting collapses to one line, so the template's line is never cut off
                    entries = [f"{len(run)} levels of {_writer(run[0]['variant'])}, {_replicas(run[0])} each"]
                else:
                    entries = [
                        f"{printable(level['name'] or '(wrapper)')}: {_writer(level['variant'])}, {_replicas(level)}; "
                        f"outputs concatenated along the batch axis by {names(level['merge_layers'])}"
                        for level in run
                    ]
                for entry in entries:
                    lines.append("  " + "    " * depth + "└── " + entry)
                    depth += 1
            outputs = names(self.outputs) if self.outputs is not None else "not recorded"
            role = "template" if self.levels else "model"
            if self.levels or self.template is not None or self.template_class is not None:  # weights: no model
                template = self.template or f"unnamed {self.template_class or 'model'}"  # a Keras 2.0-2.1 Sequential
                lines.append(
                    "  " + "    " * depth + f"└── {role}: {printable(template)}; inputs: "
                    f"{names(self.inputs)}; outputs: {outputs}"
                )
            lines.append(f"  {self.counts()}; optimizer state: {'yes' if self.has_optimizer_weights else 'no'}")
            lines += lambda_lines(self.lambdas)
        for finding in self.findings:
            shown = finding.layers[:6] + (["..."] if len(finding.layers) > 6 else [])
            layers = f" ({names(shown)})" if finding.layers else ""
            lines.append(Text(f"  ! {finding.kind}: ", printable(finding.message), layers))
        return Text("\n").join(lines)

    def counts(self):
        """The counts line: layers (of the template, or that hold weights in a weights-only file), weight tensors,
        parameters (the numbers in them).

        Example:
            >>> inspect("fixtures/files/k224_functional_bn_x2_full.h5").counts()
            '6 layers, 10 weight tensors, 124 parameters'
        """
        layers = plural(self.layer_count, "layer") + (" with weights" if self.file_type in WEIGHTS_ONLY else "")
        return f"{layers}, {plural(self.weights, 'weight tensor')}, {plural(self.parameters, 'parameter')}"


#: The file types whose layers are counted from their weight groups (no architecture in them).
WEIGHTS_ONLY = ("weights", "keras3-weights")


def _replicas(level):
    return plural(level["replicas"], "replica") if level["replicas"] else "replicas not recorded"


#: How ``str(report)`` names each kind of file.
FILE_TYPES = {
    "stub": "failed-save stub (no model inside)",
    "config": "model config (to_json/to_yaml)",
    "weights": "weights-only file",
    "model": "full model file",
    "keras": "Keras 3 .keras archive",
    "keras3-weights": "Keras 3 weights file (.weights.h5)",
}


def _writer(variant):
    return BY_NAME[variant].display if variant in BY_NAME else "writer not recorded"


def _level_runs(levels):
    """Consecutive wrapper levels of the same writer and replica count, grouped."""
    runs = []
    for level in levels:
        if runs and (runs[-1][0]["variant"], runs[-1][0]["replicas"]) == (level["variant"], level["replicas"]):
            runs[-1].append(level)
        else:
            runs.append([level])
    return runs


_LAMBDA_KINDS = {"user": "(your code)", "keras": "(Keras' own)", "reference": "(by name)"}


def lambda_lines(lambdas):
    """The template's Lambda layers, one line each, as read from the file (never run)."""
    if not lambdas:
        return []
    lines = [f"  Lambda layers ({len(lambdas)}, read as data, never run):"]
    for lam in lambdas:
        code = lam.get("code") or {}
        what = [
            f"{code['function_name']}" if code.get("function_name") else None,
            f"from {code['source_file']}" if code.get("source_file") else None,
            f"names: {', '.join(code['names'][:8])}" if code.get("names") else None,
            f"function {lam['known'] or lam['reference']!r}" if lam["kind"] != "user" else None,
            f"arguments: {lam['arguments']}" if lam.get("arguments") else None,
            f"inputs: {', '.join(lam['inbound'])}" if lam.get("inbound") else None,
        ]
        lines.append(
            f"    {printable(lam['layer'])} {_LAMBDA_KINDS[lam['kind']]}: "
            f"{printable('; '.join(part for part in what if part))}"
        )
        lines += [f"      {printable(line)}" for line in recovered_lines(lam.get("recovered"))]
    return lines


def inspect(path, scan_weights=None, *, diagram=None, overwrite=False) -> InspectReport:
    """Inspect the file at ``path`` (full model, weights only, or JSON config) without loading Keras.

    Args:
        path: the file.
        scan_weights: which weights are read to look for NaN/Inf: ``True`` all of them, ``False`` none, ``None``
            (default) all when they total at most :data:`SCAN_BUDGET`, else BatchNormalization layers' only
            (where multi-GPU training leaves NaN), so that inspecting a large file stays fast.
        diagram: also draw the wrapper next to its template, as SVG, to this path (full models and configs).
        overwrite: replace an existing ``diagram`` file.

    Raises:
        NotAModelFile, WeightsMismatch: the file cannot be read as a Keras model.
        InvalidArgument, OutputError: ``diagram`` was asked of a file without a graph, or cannot be written.

    Example:
        >>> report = inspect("fixtures/files/k224_nested_depth3_full.h5")
        >>> report.is_wrapper, report.depth, report.template, report.outputs
        (True, 3, 'template', ['out_a', 'out_b'])
    """
    if diagram is not None:
        from mgpu_io.format.plan import check_output

        check_output(path, diagram, overwrite)
    try:
        # libhdf5 hangs become errors; the diagram is drawn by the child that read the file, and written here
        report, svg = probed(path, functools.partial(_inspect_file, path, scan_weights, diagram is not None))
        if diagram is not None:
            from mgpu_io.format.write import atomic_path

            with atomic_path(Path(diagram)) as temporary:
                temporary.write_text(svg)
        return report
    except FailedSaveStub as stub:
        if diagram is not None:
            raise
        return _stub_report(path, stub)


def _inspect_file(path, scan_weights, draw=False):
    """In the probe's child: ``(report, the wrapper's SVG diagram or None)``."""
    with open_stored(path) as stored, reading(stored.path, "inspecting the file"):
        return _inspect(stored, scan_weights), (_drawn(stored) if draw else None)


def _layout_config(template, keras1):
    """The config that lays out the weights: a Keras 1 one in its Keras 2 spelling, where its layers convert
    (Keras 1, and Keras 2.0-2.1's legacy Merge, kept a Sequential's merged branches inside its Merge layer), else as
    stored."""
    if template is None:
        return template
    if not keras1:
        from mgpu_io.format.conversions.keras2_legacy import branches_unfolded

        return branches_unfolded(template)
    from mgpu_io.errors import UnsupportedModel
    from mgpu_io.format.conversions.keras1 import convert_keras1_config

    try:
        return convert_keras1_config(template)
    except UnsupportedModel:
        return template


def _drawn(stored):
    """The SVG of the wrapper next to its template, from the file's graph."""
    from mgpu_io.format.diagram import wrapper_svg

    if stored.model_config is None:
        raise InvalidArgument(
            problem="A diagram needs a graph",
            parameter="filepath",
            expected="a full model file or a JSON config",
            received=f"filepath={stored.path} ({stored.file_type} file)",
            fix="Pass the model file or its JSON config",
        )
    return wrapper_svg(stored.model_config)


def _inspect(stored, scan_weights):
    extraction = extract(stored)
    template = extraction.template_config
    keras1 = is_keras1(stored.keras_version, template)
    layers = extraction.layout(_layout_config(template, keras1)) if stored.file_type != CONFIG else []
    levels = [level.to_dict() for level in extraction.levels]
    wrapper = extraction.weights_wrapper
    findings = []
    if template is not None:
        findings += _config_findings(template, conversions.Context(keras1=keras1))
    if template is None:
        cudnn = [layer.layer for layer in layers if cudnn_layout([layer.group[n].shape for n in layer.names])]
        if cudnn:
            findings.append(
                Finding(
                    "cudnn-layers",
                    Text(
                        "CuDNN-layout weights (a bias twice the standard size): only CuDNN layers, on NVIDIA GPUs, "
                        "load them as they are. Unwrap with ",
                        Param("config"),
                        " (the JSON saved beside them) to convert them for LSTM/GRU, or load them with "
                        "mgpu_io.transfer_weights into your model, which converts them.",
                    ),
                    cudnn,
                )
            )
    if template is None and wrapper is not None:
        scoped = scoped_weight_names([name for layer in layers for name in layer.names])
        if scoped:
            findings.append(
                Finding(
                    "scoped-weight-names",
                    Text(
                        "Weight names carry scopes (or layer names with '/'): which layer owns each cannot be told "
                        "without the architecture. Unwrap with ",
                        Param("config"),
                        " (the JSON saved beside these weights).",
                    ),
                    scoped[:20],
                )
            )
    if stored.file_type == "weights" and wrapper is not None:
        findings.append(
            Finding(
                "weights-only",
                "A weights-only file has no graph: the template's config and output names come from your model code, "
                "the writer and any nesting are not recorded, and replicas are counted from the slice layers' names.",
            )
        )
    findings += _weight_findings(layers, _configs(template), scan_weights)
    if stored.double_encoded:
        findings.append(
            Finding(
                "double-encoded-json",
                "The config is a JSON string that holds the model's JSON (saved with json.dump(model.to_json(), f)): "
                "it is read one level deeper.",
            )
        )
    if keras1:
        findings.append(Finding("keras1", "Written by Keras 1: configs are converted to Keras 2 spelling on unwrap."))
    return InspectReport(
        file=str(stored.path),
        file_type=stored.file_type,
        is_wrapper=extraction.is_wrapper,
        variant=extraction.levels[-1].variant if extraction.levels else None,
        replicas=levels[-1]["replicas"] if levels else None,
        depth=extraction.depth,
        template=model_name(template) if template is not None else (wrapper.template_layer if wrapper else None),
        inputs=input_names(template) if template is not None else (wrapper.input_layers if wrapper else []),
        outputs=template_outputs(extraction),
        keras_version=stored.keras_version,
        backend=stored.backend,
        has_optimizer_weights=stored.optimizer_weights is not None,
        findings=findings,
        levels=levels,
        weights=sum(len(layer.names) for layer in layers),
        layer_count=len(model_layers(template)) if template is not None else sum(1 for layer in layers if layer.names),
        parameters=sum(layer.group[name].size or 0 for layer in layers for name in layer.names),
        lambdas=[lam.to_dict() for lam in recover_lambdas(template_lambdas(template), stored.keras_version)]
        if template is not None
        else [],
        template_class=template.get("class_name") if template is not None else None,
    )


def _config_findings(template, context):
    return [
        Finding(family.finding, message, layers)
        for family, message, layers in conversions.checks(template, context)
        if family.finding
    ]


def _configs(template):
    return {layer_name(lyr): lyr for lyr in model_layers(template)} if template is not None else {}


def _weight_findings(layers, configs, scan_weights):
    weights = [(layer, name) for layer in layers for name in layer.names]
    total = sum(layer.group[name].size * layer.group[name].dtype.itemsize for layer, name in weights)
    findings = []
    if scan_weights is False:
        weights = []
    elif scan_weights is None and total > SCAN_BUDGET:
        weights = [(layer, name) for layer, name in weights if _is_batchnorm(layer, configs)]
        findings.append(
            Finding(
                "weights-partly-scanned",
                Text(
                    f"Only BatchNormalization weights were checked for NaN/Inf ({total / 2**30:.2f} GiB of weights in "
                    f"all); pass ",
                    Param("scan_weights", True),
                    " to read every weight.",
                ),
            )
        )
    bad = [
        name for layer, name in weights if layer.group[name].dtype.kind == "f" and _has_non_finite(layer.group[name])
    ]
    if not bad:
        return findings
    return [*findings, Finding("non-finite-weights", non_finite_message(bad, "this file"), bad)]


def _is_batchnorm(layer, configs):
    config = configs.get(layer.layer)
    if config is not None:
        return config["class_name"] == "BatchNormalization"
    return any("moving_" in name or "running_" in name for name in layer.names)  # weights only: by its weights


def _has_non_finite(dataset):
    if dataset.shape == ():
        return not np.isfinite(dataset[()])
    flat = dataset.size
    if flat <= _SCAN_CHUNK:
        return not np.isfinite(dataset[()]).all()
    rows = max(1, _SCAN_CHUNK // max(1, flat // dataset.shape[0]))
    return any(not np.isfinite(dataset[i : i + rows]).all() for i in range(0, dataset.shape[0], rows))


def _stub_report(path, stub):
    with reading(path, "reading the stub's attributes"), h5py.File(path, "r") as h5:
        keras_version, backend = read_str(h5.attrs, "keras_version"), read_str(h5.attrs, "backend")
    return InspectReport(
        file=str(path),
        file_type="stub",
        is_wrapper=False,
        variant=None,
        replicas=None,
        depth=0,
        template=None,
        inputs=[],
        outputs=[],
        keras_version=keras_version,
        backend=backend,
        has_optimizer_weights=False,
        findings=[Finding("failed-save-stub", stub.text())],
    )
