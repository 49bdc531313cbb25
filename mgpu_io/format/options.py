"""The options of one repair (:func:`mgpu_io.unwrap`), as one frozen object: built and checked once, at the edge.

:func:`mgpu_io.unwrap` builds an :class:`UnwrapOptions` from its arguments once it knows the output's format, and
passes it down unchanged: to a folder's workers (:mod:`.batch`), to the legacy writer (:mod:`.unwrap`) and to the
``.keras`` writer (:mod:`mgpu_io.keras.save`). A combination that does not apply is refused when the object is
built, naming the parameter (the command line names its flag).

Example:
    >>> options = UnwrapOptions(target="tf_keras", keep_config=True)
    >>> options.plan_options()["target"], options.overwrite
    ('tf_keras', False)
    >>> UnwrapOptions(cpu=True)
    Traceback (most recent call last):
    ...
    mgpu_io.errors.InvalidArgument: cpu=True converts CuDNN layers in a file kept for the old Keras. Expected keep_config=True with cpu=True. Received: cpu=True alone; without keep_config=True CuDNN layers are always converted. Leave out cpu=True, or pass keep_config=True as well.
"""

import dataclasses
from dataclasses import dataclass
from typing import Any, Optional

from mgpu_io.errors import InvalidArgument, Param

#: The Keras that will load an output (the conversions' own names: :mod:`.conversions.base` takes them from here,
#: so that a folder's supervisor, which only passes the options on, does not import the conversions and NumPy).
KERAS3, TF_KERAS = "keras3", "tf_keras"
TARGETS = (KERAS3, TF_KERAS)
#: What an output path's suffix asks for: Keras 3's native format, or a file of the input's own kind.
KERAS_FORMAT, SAME_FORMAT = "keras", "same"


@dataclass(frozen=True)
class UnwrapOptions:
    """What :func:`mgpu_io.unwrap` was asked to do, beyond its source and output (its arguments, documented there),
    and the ``output_format`` its output's name chose (:data:`KERAS_FORMAT` or :data:`SAME_FORMAT`)."""

    config: Optional[Any] = None
    target: str = KERAS3
    keep_config: bool = False
    cpu: bool = False
    include_optimizer: bool = True
    allow_plain: bool = False
    overwrite: bool = False
    dry_run: bool = False
    safe_mode: bool = True
    lambdas: Optional[Any] = None
    custom_objects: Optional[Any] = None
    output_format: str = SAME_FORMAT

    def __post_init__(self):
        _check(self)

    def plan_options(self):
        """The options that :func:`~mgpu_io.format.plan.make_plan` takes."""
        return {
            "config": self.config,
            "target": self.target,
            "keep_config": self.keep_config,
            "cpu": self.cpu,
            "include_optimizer": self.include_optimizer,
            "allow_plain": self.allow_plain,
        }

    def replace(self, **changes):
        """A copy with ``changes`` (checked again)."""
        return dataclasses.replace(self, **changes)


def _check(options):
    """Refuse option combinations that do not apply, naming the parameter (the CLI shows its flag)."""
    target, keep_config, cpu, lambdas = options.target, options.keep_config, options.cpu, options.lambdas
    if target not in TARGETS:
        raise InvalidArgument(
            problem="Unknown target",
            parameter="target",
            expected=f"one of {list(TARGETS)}",
            received=Param("target", target),
            fix=("Pass ", Param("target", KERAS3), " or ", Param("target", TF_KERAS)),
        )
    if lambdas and options.output_format == SAME_FORMAT:
        given = sorted(lambdas) if isinstance(lambdas, dict) else lambdas
        raise InvalidArgument(
            problem=(Param("lambdas"), " applies to a .keras output, which Keras builds"),
            parameter="lambdas",
            expected=("a .keras output with ", Param("lambdas")),
            received=(
                Param("lambdas", given, text=f"lambdas={given}"),
                " with a legacy output, which refers to each Lambda by its layer name and needs no function",
            ),
            fix=(
                "Leave out ",
                Param("lambdas"),
                " and pass the functions when loading the result: mgpu_io.load_model(output, lambdas=...) or "
                "keras.models.load_model(output, custom_objects=...)",
            ),
        )
    if options.output_format != SAME_FORMAT:  # Keras 3 builds the model: a .keras file, or a deployable export of it
        keras_file = options.output_format == KERAS_FORMAT
        what = "a .keras file" if keras_file else f"a {options.output_format} output (Keras 3 exports it)"
        short = ".keras" if keras_file else options.output_format
        if target != KERAS3:
            raise InvalidArgument(
                problem=f"{what[0].upper()}{what[1:]} is for Keras 3 only",
                parameter="target",
                expected=(Param("target", KERAS3), f" with a {short} output"),
                received=Param("target", target),
                fix=("Write a .h5 file for tf_keras, or pass ", Param("target", KERAS3)),
            )
        for name, value in (("keep_config", keep_config), ("cpu", cpu)):
            if value:
                raise InvalidArgument(
                    problem=(
                        Param(name, True),
                        f" keeps the writer's config for the old Keras, which {what} cannot hold",
                    ),
                    parameter=name,
                    expected=("a .h5 output with ", Param(name, True)),
                    received=(Param(name, True), f" with a {short} output"),
                    fix=("Write a .h5 file, or leave out ", Param(name, True)),
                )
    if cpu and not keep_config:
        raise InvalidArgument(
            problem=(Param("cpu", True), " converts CuDNN layers in a file kept for the old Keras"),
            parameter="cpu",
            expected=(Param("keep_config", True), " with ", Param("cpu", True)),
            received=(
                Param("cpu", True),
                " alone; without ",
                Param("keep_config", True),
                " CuDNN layers are always converted",
            ),
            fix=("Leave out ", Param("cpu", True), ", or pass ", Param("keep_config", True), " as well"),
        )
