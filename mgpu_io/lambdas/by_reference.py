"""Lambdas: the template's own Lambda layers and the functions Keras itself stored, written without bytecode.

A Lambda's function was stored as CPython bytecode, which Keras 3 refuses in safe mode and which no other Python
can read ("bad marshal data"). A repair never keeps it: each such Lambda is written *by reference*
(:func:`mgpu_io.lambdas.stored.reference`), and the bytecode does not reach the output.

- A function Keras itself wrote is recognised from its stored metadata only (module or recorded source file,
  argument names, inputs; never by running it) and refers to mgpu-io's own registered copy, ``mgpu_io>NAME``
  (:data:`KNOWN_FUNCTIONS`). Each such function is defined once, here, as code in plain Python operators (which
  Keras tensors support): :mod:`mgpu_io.keras.known` registers these very functions with Keras.
- Any other function is the user's: it refers to its layer's name, which the user maps to their code:
  ``mgpu_io.load_model(path, lambdas={"preprocess": fn})``, or Keras 3's own
  ``keras.models.load_model(out, custom_objects={"preprocess": fn})``. A stored output-shape function is left out:
  Keras 3 traces the function for the shape.

``keep_config`` (the writer's config, for the old Keras) keeps the bytecode as stored: this family does not run.
"""

from dataclasses import dataclass
from typing import Callable

from mgpu_io.errors import Param, Text
from mgpu_io.format.config import layer_name, walk_layers
from mgpu_io.lambdas.stored import LambdaLayer, lambda_layers, reference, reference_name, stored_code

PACKAGE = "mgpu_io"


@dataclass(frozen=True)
class KnownFunction:
    """A Lambda function that Keras itself wrote, and how its stored metadata identifies it.

    Attributes:
        name: mgpu-io's registered name is ``mgpu_io>{name}``.
        function: the function itself, as the writer wrote it (registered with Keras by :mod:`mgpu_io.keras.known`).
        origin: where it comes from, for reports.
        matches: ``(LambdaLayer) -> bool``, from stored metadata only.
        verified: fixture writers whose files hold it and load with the old Keras' predictions.
    """

    name: str
    function: Callable
    origin: str
    matches: Callable
    verified: tuple[str, ...]

    @property
    def registered(self):
        return f"{PACKAGE}>{self.name}"


def _from_file(lam, module):
    recorded = [lam.module or "", (lam.code.source_file if lam.code else None) or ""]
    return any(module in text.replace("\\", "/").replace("/", ".") for text in recorded)


def inception_resnet_scale(inputs, scale):
    """InceptionResNetV2's residual scaling, as keras_applications wrote it:
    ``lambda inputs, scale: inputs[0] + inputs[1] * scale``.

    Example:
        >>> inception_resnet_scale([1.0, 2.0], scale=0.5)
        2.0
    """
    return inputs[0] + inputs[1] * scale


def _is_inception_resnet_scale(lam):
    """keras_applications' (and Keras 2.1's) InceptionResNetV2 residual scaling: two inputs, one ``scale``."""
    arguments = lam.arguments or {}
    return (
        set(arguments) == {"scale"}
        and isinstance(arguments["scale"], (int, float))
        and len(lam.inbound) == 2
        and _from_file(lam, "inception_resnet_v2")
    )


#: Every function Keras itself stored as a Lambda that a repair rebuilds without the user's help.
KNOWN_FUNCTIONS = (
    KnownFunction(
        name="inception_resnet_scale",
        function=inception_resnet_scale,
        origin="InceptionResNetV2's residual scaling (keras.applications / keras_applications inception_resnet_v2)",
        matches=_is_inception_resnet_scale,
        verified=("keras216", "keras224", "keras231", "tfkeras115"),
    ),
)


def known_function(lam):
    """The :class:`KnownFunction` that ``lam`` (a :class:`~mgpu_io.lambdas.stored.LambdaLayer`) is, or ``None``."""
    if lam.code is None:
        return None
    return next((known for known in KNOWN_FUNCTIONS if known.matches(lam)), None)


def template_lambdas(template):
    """The template's Lambda layers, each marked with the Keras function it is (``known``), if any."""
    found = lambda_layers(template)
    for lam in found:
        known = known_function(lam)
        lam.known = known.registered if known else None
    return found


def rewrite_config(config, context):
    """Write every stored-bytecode Lambda by reference (and one whose stored function is neither code nor a name,
    as only a damaged file holds: the caller supplies it); Keras 2.1's ``relu6`` activation as ``ReLU(6)``.

    The hook of the ``lambdas`` family (``format/conversions/lambdas.py``, which imports this module: the registry is
    imported here inside the function only)."""
    from mgpu_io.format.conversions.base import KERAS3

    changes = []
    by_name = {lam.layer: lam for lam in template_lambdas(config)}
    for layer in walk_layers(config, wrapped=True):
        if not isinstance(layer, dict) or not isinstance(layer.get("config"), dict):
            continue
        settings = layer["config"]
        if layer.get("class_name") == "Activation" and settings.get("activation") == "relu6":
            layer["class_name"] = "ReLU"
            del settings["activation"]
            settings.update(max_value=6.0, negative_slope=0.0, threshold=0.0)
            changes.append("relu6-activation")
        if layer.get("class_name") != "Lambda":
            continue
        lam = by_name.get(str(layer_name(layer)))
        function = settings.get("function")
        code = stored_code(function)
        unreadable = code is None and reference_name(function) is None  # a damaged file's number
        if lam is not None and (code is not None or unreadable):
            name = lam.known or lam.layer
            settings["function"] = reference(name, context.target)
            if not context.keras3_writer:  # Keras 2's keys (Keras 3's Lambda takes no others than its own)
                settings["function_type"] = "function"
                settings["module"] = None
            changes.append("lambda-known-function" if lam.known else "lambda-by-reference")
        elif isinstance(settings.get("function"), str) and context.target == KERAS3:
            # a name the writer stored (function_type 'function'): Keras 3 reads it in its own dict spelling
            settings["function"] = reference(settings["function"], context.target, builtin=True)
            changes.append("lambda-function-name")
        shape_by_name = settings.get("output_shape_type") == "function" and isinstance(
            settings.get("output_shape"), str
        )
        if (lam is not None and lam.output_shape == "function") or shape_by_name:
            # bytecode, or the name of a function of the writer's code (a Merge given a method: Keras 2's
            # get_config stored any callable but a plain function by name): Keras 3 traces the shape instead
            settings["output_shape"] = None
            if not context.keras3_writer:
                settings["output_shape_type"] = "raw"
            settings.pop("output_shape_module", None)
            changes.append("lambda-output-shape-traced")
        if stored_code(settings.get("mask")) is not None or settings.get("mask_type") == "lambda":
            settings["mask"] = None
            settings.pop("mask_type", None)
            settings.pop("mask_module", None)
            changes.append("lambda-mask-dropped")
    return changes


def check(template, context):
    """What a user must supply (their own functions) and what is rebuilt for them (Keras' own)."""
    found = template_lambdas(template)
    messages = []
    user = [lam for lam in found if lam.kind == "user" or (lam.reference == lam.layer and lam.code is None)]
    if user:
        functions = Param(  # the command line names every layer: --lambda LAYER=MODULE:FUNCTION each
            "lambdas", tuple(lam.layer for lam in user), text=f"lambdas={{{user[0].layer!r}: fn, ...}}"
        )
        messages.append(
            (
                Text(
                    "Lambda layers hold your own code, stored as bytecode that mgpu-io never runs nor copies: the "
                    "repaired config refers to each by its layer name. Supply the functions: ",
                    functions,
                    f" (load_model, a .keras output), or custom_objects={{{user[0].layer!r}: fn, ...}} when Keras 3 "
                    "loads a repaired .h5",
                ),
                [lam.layer for lam in user],
            )
        )
    known = [lam for lam in found if lam.kind == "keras" or (lam.reference or "").startswith(PACKAGE + ">")]
    if known:
        names = sorted({lam.known or lam.reference for lam in known})
        messages.append(
            (
                f"Lambda layers written by Keras itself are rebuilt from mgpu-io's copy ({', '.join(names)}); "
                f"mgpu_io.load_model supplies them, plain Keras 3 after `import mgpu_io.keras.known`",
                [lam.layer for lam in known],
            )
        )
    return messages


def needed_functions(config):
    """The Lambda layers of a repaired ``config`` that refer to a user function by their own name."""
    return [
        lam
        for lam in lambda_layers(config)
        if lam.code is None and lam.reference == lam.layer and not lam.reference.startswith(PACKAGE + ">")
    ]


__all__ = [
    "KNOWN_FUNCTIONS",
    "KnownFunction",
    "LambdaLayer",
    "known_function",
    "needed_functions",
    "template_lambdas",
]
