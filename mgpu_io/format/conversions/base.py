"""What a conversion is: named rules, grouped in families, each family one file of this package."""

from dataclasses import dataclass, field
from typing import Callable, Optional

import numpy as np

from mgpu_io.format.options import KERAS3, TF_KERAS  # noqa: F401 - the conversions' names for the targets


@dataclass(frozen=True)
class Rule:
    """One named change that a repair can make; the name is what reports list (``config_changes``).

    Attributes:
        name: stable, kebab-case; reports, docs/cli.md and tests use it.
        summary: what it does, in a line.
        avoids: the Keras 3 (or tf_keras) error or silent difference that the file would hit without it.
        verified: the writers (fixture manifest ``writer`` names, e.g. ``"keras224"``) whose real files in
            fixtures/ trigger it and load with the old Keras' predictions; a test checks every claim.
    """

    name: str
    summary: str
    avoids: str
    verified: tuple[str, ...] = ()


@dataclass(frozen=True)
class Context:
    """What the plan knows when it converts one file.

    Attributes:
        keras1: the file was written by Keras 1.
        target: ``"keras3"`` or ``"tf_keras"``, the Keras that will load the result.
        cpu_only: ``keep_config`` with ``cpu``: only the families marked ``cpu`` run (the old Keras on a CPU).
        weights_file: the input is a weights-only file (the result is loaded into a model built in code).
        keras_version: the writer's ``keras_version`` (``"2.2.4"``; tf.keras ``"2.2.4-tf"``), where recorded.
        keras2_functions: the model is built to train on in this process (``load_model(..., compile=True)``):
            Keras 2's functions stay functions (mgpu-io's registered copies) rather than being made exact by
            rescaling weights, so that the weights, their gradients and their optimizer state stay the writer's.
        keras3_writer: Keras 3 wrote the config itself: it needs no conversion but the families marked ``keras3``
            (what no Keras of today loads from its own files: a Lambda's stored bytecode, written by reference).
    """

    keras1: bool = False
    target: str = KERAS3
    cpu_only: bool = False
    weights_file: bool = False
    keras_version: str = ""
    keras2_functions: bool = False
    keras3_writer: bool = False

    @property
    def standalone_keras2(self):
        """Written by standalone Keras 2.0-2.3 (with its own backend functions), not by tf.keras (``-tf``, or 2.4+:
        TF 2.3 wrote ``2.4.0``, and standalone Keras 2.4 was tf.keras).

        Example:
            >>> [Context(keras_version=v).standalone_keras2 for v in ("2.2.4", "2.3.1", "2.2.4-tf", "2.4.0", "")]
            [True, True, False, False, False]
        """
        version = self.keras_version or ""
        return version[:4] in ("2.0.", "2.1.", "2.2.", "2.3.") and not version.endswith("-tf")


@dataclass(frozen=True)
class Family:
    """A family of rules, all in one file: the config rewrite, the weight steps and the findings they share.

    Every hook is optional:

    - ``rewrite_config(config, context) -> [rule names]`` rewrites a model config in place;
    - ``weight_steps(layer, shapes, context) -> [(rule name, step)]`` plans the conversion of one layer's stored
      weights, from its *final* config and the stored shapes; a step maps ``(names, arrays)`` to new ones;
    - ``rewrite_training(training_config, context) -> [rule names]`` rewrites a training config in place;
    - ``check(template, context) -> [(message, layer names)]``: what is unusual or stays inexact, for
      ``inspect``'s findings (kind ``finding``) and, where ``warn`` is set, ``unwrap``'s warnings.
    """

    name: str
    summary: str
    rules: tuple[Rule, ...]
    rewrite_config: Optional[Callable] = None
    weight_steps: Optional[Callable] = None
    rewrite_training: Optional[Callable] = None
    check: Optional[Callable] = None
    finding: Optional[str] = None
    warn: bool = False  # check's messages are warnings of the repair too
    cpu: bool = False  # also runs for keep_config + cpu
    keras3: bool = False  # also runs on the configs Keras 3 wrote itself (Context.keras3_writer)


@dataclass
class Conversion:
    """What one layer's weights go through: ``notes`` name the rules, ``apply`` maps (names, arrays) to new ones."""

    notes: list[str] = field(default_factory=list)
    steps: list[Callable] = field(default_factory=list)

    def add(self, note, step):
        self.notes.append(note)
        self.steps.append(step)

    def apply(self, names, arrays):
        for step in self.steps:
            names, arrays = step(names, [np.asarray(a) for a in arrays])
        return names, arrays

    def __bool__(self):
        return bool(self.steps)
