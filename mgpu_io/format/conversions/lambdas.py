"""Lambdas: the template's own Lambda layers and the functions Keras itself stored, written without bytecode.

This file is the family's entry in the registry only: its rules, and the hooks it runs, which the Lambda feature's
package holds (:mod:`mgpu_io.lambdas.by_reference`, with every other part of the feature in ``mgpu_io/lambdas/``).
"""

from mgpu_io.format.conversions.base import Family, Rule
from mgpu_io.lambdas.by_reference import KNOWN_FUNCTIONS, check, rewrite_config

FAMILY = Family(
    name="lambdas",
    summary="Lambda layers' stored bytecode, replaced by references that Keras 3 resolves in safe mode",
    rules=(
        Rule(
            "lambda-by-reference",
            "a template Lambda whose function is stored bytecode refers to its layer name "
            "instead; the user supplies the function (`lambdas=`, `--lambda`, or Keras' `custom_objects`)",
            "Keras 3: `Requested the deserialization of a Lambda layer whose function is a Python lambda`; "
            "`safe_mode=False` runs the stored bytecode, which fails on any other Python (`bad marshal data`)",
            ("keras216", "keras224", "keras231", "tfkeras115"),
        ),
        Rule(
            "lambda-function-name",
            "a Lambda whose function the writer stored by name is written in Keras 3's "
            "spelling of a function reference",
            "Keras 3: `TypeError: Could not parse config: <function ...>`",
            (),
        ),
        Rule(
            "lambda-known-function",
            "a Lambda that Keras itself wrote (InceptionResNetV2's residual scaling) "
            "refers to mgpu-io's registered copy, `mgpu_io>NAME`, identified by its stored metadata",
            "the same refusal, for code the user never wrote",
            KNOWN_FUNCTIONS[0].verified,
        ),
        Rule(
            "lambda-output-shape-traced",
            "a Lambda's output-shape function (stored bytecode) is left out; Keras 3 "
            "infers the shape by tracing the function",
            "the same refusal, for the shape function",
            ("keras224", "keras231", "tfkeras115"),
        ),
        Rule(
            "lambda-mask-dropped",
            "a Lambda's mask function (stored bytecode, tf.keras) is left out: the layer passes no mask",
            "the same refusal, for the mask function",
            (),
        ),
        Rule(
            "relu6-activation",
            "Keras 2.1 MobileNet's `Activation('relu6')` becomes `ReLU(max_value=6)`, the same function",
            "Keras 2.2+ and tf_keras: `Unknown activation function: relu6`",
            ("keras216",),
        ),
    ),
    rewrite_config=rewrite_config,
    check=check,
    finding="template-lambda",
    warn=True,
    keras3=True,  # Keras 3's own `__lambda__` bytecode fails on any other Python, and in Keras 3 itself
)


__all__ = ["FAMILY"]
