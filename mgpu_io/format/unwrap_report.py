"""What :func:`mgpu_io.unwrap` did, as the report the caller gets (:class:`UnwrapReport`).

Apart from the plan (:mod:`mgpu_io.format.plan`), which imports h5py and NumPy: a report crosses from the child that
wrote the file to a parent that imports neither (the command line's, whose fork server the child came from).
"""

from dataclasses import asdict, dataclass, field
from typing import Optional

from mgpu_io.errors import Text
from mgpu_io.format.text import names, plural, printable

#: What happens to the optimizer state (``UnwrapReport.optimizer``). Keras 3's own ``load_model`` of a ``.h5`` file
#: that holds ``optimizer_weights`` builds its optimizer on none of the model's variables (Keras 3.12-3.15): it
#: restores only the step count, and the first ``fit`` fails ("Unknown variable"). So a ``.h5`` repaired for Keras 3
#: keeps the state beside that group (:data:`ASIDE_GROUP`), where plain Keras 3 starts a fresh optimizer and trains,
#: and :func:`mgpu_io.load_model` restores it; a ``.keras`` output holds it where Keras 3 restores it.
COPIED, COPIED_ASIDE, DROPPED, ABSENT = "copied", "copied aside", "dropped", "absent"
ASIDE_GROUP = "mgpu_io_optimizer_weights"


@dataclass
class UnwrapReport:
    """What :func:`mgpu_io.unwrap` did (or, with ``dry_run``, would do); ``to_dict`` is the ``--json`` output."""

    source: str
    output: Optional[str]
    file_type: str
    was_wrapper: bool
    depth: int
    replicas: Optional[int]
    template: Optional[str]
    outputs: Optional[list[str]]
    config: str
    target: str
    config_changes: list[str] = field(default_factory=list)
    layers: list[dict] = field(default_factory=list)
    weights: int = 0
    weight_bytes: int = 0
    optimizer: str = ABSENT
    optimizer_rule: Optional[str] = None
    renamed_outputs: dict[str, str] = field(default_factory=dict)
    warnings: list[str] = field(default_factory=list)
    lambdas: list[dict] = field(default_factory=list)
    written: bool = False
    #: For a deployable output (``.onnx``, ``.tflite``, SavedModel): its format, its runtime and the largest
    #: difference that runtime's predictions showed from the Keras model's (``mgpu_io.keras.exports.export``).
    export: dict = field(default_factory=dict)

    def to_dict(self):
        return asdict(self)

    def converted_from(self, source, note):
        """Report on ``source``, a TensorFlow format read through a legacy copy (:func:`mgpu_io.tf.convert.read_converted`)."""
        self.source = source
        self.warnings.insert(0, note)

    def __str__(self):
        """What was (or would be) written, as ``mgpu-io unwrap`` prints it."""
        verb = "Wrote" if self.written else "Would write"
        what = f"template {printable(repr(self.template))}" if self.was_wrapper else "plain model (copied through)"
        held = (
            "config only (its weights are in their own file)"
            if self.file_type == "config"
            else f"{plural(self.weights, 'weight tensor')} in {plural(len(self.layers), 'layer')}"
        )
        lines = [f"{verb} {printable(self.output)}: {what}, {held}"]
        if self.was_wrapper:
            outputs = names(self.outputs) if self.outputs is not None else "not recorded (weights only)"
            lines.append(
                f"  removed {plural(self.depth, 'wrapper level')} ({self.replicas or '?'} replicas "
                f"innermost); outputs: {outputs}"
            )
        changes = f" ({names(self.config_changes)})" if self.config_changes else ""
        lines.append(f"  config: {self.config}{changes}")
        if self.file_type == "model":
            lines.append(
                f"  optimizer state: {self.optimizer}"
                + (
                    " (mgpu_io.load_model restores it; Keras 3's own load_model cannot restore a .h5's and starts "
                    "a fresh one; a .keras output keeps it for Keras 3)"
                    if self.optimizer == COPIED_ASIDE
                    else ""
                )
            )
        if self.optimizer_rule:
            lines.append(f"  optimizer rule: {printable(self.optimizer_rule)}")
        if self.renamed_outputs:
            lines.append(
                "  training config re-keyed: "
                + printable(", ".join(f"{old} -> {new}" for old, new in self.renamed_outputs.items()))
            )
        if self.export:
            lines.append(
                f"  {self.export['format']}: run by {self.export['runtime']} on {self.export['rows']} rows of "
                f"{self.export['inputs']} inputs, largest difference from the Keras model "
                f"{self.export['difference']:.2g} (bound {self.export['bound']:.2g})"
            )
        lines += ["  ! " + printable(warning) for warning in self.warnings]
        return Text("\n").join(lines)
