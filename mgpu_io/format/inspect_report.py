"""What :func:`mgpu_io.format.inspect.inspect` says of a file: the report, as data and as it prints. No h5py or
NumPy here: the report crosses from the child that read the file to a process that need not import them."""

from dataclasses import asdict, dataclass, field
from typing import Optional

from mgpu_io.errors import Text
from mgpu_io.format.text import names, plural, printable
from mgpu_io.format.wrapper_writers import BY_NAME
from mgpu_io.lambdas.recovery import recovered_lines


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
            >>> from mgpu_io.format.inspect import inspect
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
