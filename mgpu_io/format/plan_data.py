"""A repair's plan as data: what Keras needs to build the repaired model, handed back by the sandbox's child.

A :class:`~mgpu_io.format.plan.Plan` holds h5py handles, which cannot cross processes; so ``load_model``,
``transfer_weights`` and the ``.keras`` output used to plan the file in the sandbox's child (to see that it neither
hangs nor crashes libhdf5) and then open and plan it again in the parent, where Keras builds. :func:`plan_data`
runs in that child instead and hands back a :class:`PlanData`: the config, the training config, the Lambda layers,
the report and every weight array (converted where a conversion rewrites them, the optimizer state too), the arrays
in memory shared with the parent (:func:`~mgpu_io.format.sandbox.hand_over`). The parent builds from it without
opening the file.

Example:
    >>> from mgpu_io.format.sandbox import probed
    >>> path = "fixtures/files/k224_functional_bn_x2_full.h5"
    >>> plan = probed(path, lambda: plan_data(path, allow_plain=True))
    >>> plan.file_type, plan.stored.keras_version, [layer.layer for layer in plan.layers][:3]
    ('model', '2.2.4', ['inp', 'd1', 'bn'])
    >>> sorted(name for name, _ in plan.converted(plan.layers[2]))
    ['bn/beta:0', 'bn/gamma:0', 'bn/moving_mean:0', 'bn/moving_variance:0']
"""

import json
from dataclasses import dataclass, field
from pathlib import Path
from typing import Optional

from mgpu_io.format.read import CONFIG, open_stored, reading
from mgpu_io.format.sandbox import hand_over
from mgpu_io.format.string_attrs import read_str_list
from mgpu_io.format.weights import LayerWeights


@dataclass(frozen=True)
class StoredFacts:
    """What a builder asks of the opened input, with the file closed: its path, the ``keras_version`` it records,
    the Keras that trained it (a file mgpu-io repaired says so in its provenance), what it holds (``file_type``) and
    the writer's ``backend``."""

    path: str
    keras_version: Optional[str]
    source_keras_version: Optional[str]
    file_type: str
    h5: None = None  # no file is open
    backend: Optional[str] = None


@dataclass
class PlanData:
    """A :class:`~mgpu_io.format.plan.Plan` without file handles: the same ``stored`` facts, ``config``,
    ``training``, ``layers`` (their names, no group), ``report`` and ``lambdas``; the weights as arrays that nothing
    else holds (``handed_over``: a builder may give them to its tensors without a copy)."""

    stored: StoredFacts
    config: Optional[dict]
    training: Optional[dict]
    layers: list
    report: object
    lambdas: list = field(default_factory=list)
    values: dict = field(default_factory=dict)  # layer name -> [(weight name, array)]
    optimizer_arrays: Optional[list] = None  # [(slot name, array)] where the plan carries the optimizer state over
    handed_over = True

    @property
    def file_type(self):
        return self.stored.file_type

    @property
    def optimizer_weights(self):
        return None  # the state is in optimizer_arrays

    def converted(self, layer):
        """``(name, array)`` pairs of one planned layer, as :meth:`~mgpu_io.format.plan.Plan.converted` gives."""
        return list(self.values.get(layer.layer, ()))


def plan_data(source, *, output=None, optimizer_state=True, **options):
    """Plan ``source`` (:func:`~mgpu_io.format.plan.make_plan`'s ``options``) and return it as a :class:`PlanData`;
    the weights are read only where there is a model to build (a weights-only file without its config, or a config
    alone, is refused by the caller), the optimizer state only with ``optimizer_state`` (``load_model(...,
    compile=False)`` builds no optimizer: for Adam, the state is two thirds of the bytes)."""
    from mgpu_io.format.plan import make_plan

    with open_stored(Path(source)) as stored, reading(stored.path, "planning the repair"):
        plan = make_plan(stored, output=output, **options)
        facts = StoredFacts(
            str(stored.path),
            stored.keras_version,
            source_keras_version(stored),
            stored.file_type,
            backend=stored.backend,
        )
        data = PlanData(
            facts,
            plan.config,
            plan.training,
            [LayerWeights(layer.layer, layer.class_name, list(layer.names)) for layer in plan.layers],
            plan.report,
            plan.lambdas,
        )
        if plan.config is None or stored.file_type == CONFIG:  # nothing to build: the caller refuses it
            return data
        pairs = [plan.converted(layer) for layer in plan.layers]
        optimizer = plan.optimizer_weights
        slots = read_str_list(optimizer.attrs, "weight_names") if optimizer is not None and optimizer_state else None
        handed = iter(hand_over([value for layer in pairs for _, value in layer] + [optimizer[n] for n in slots or ()]))
        data.values = {
            layer.layer: [(name, next(handed)) for name, _ in pair] for layer, pair in zip(plan.layers, pairs) if pair
        }
        data.optimizer_arrays = [(name, next(handed)) for name in slots] if slots is not None else None
        return data


def source_keras_version(stored):
    """The ``keras_version`` of the Keras that trained the file: a ``.h5`` that mgpu-io repaired says it in its
    provenance (``mgpu_io`` attribute, ``source_keras_version``), where its ``keras_version`` is the one it is
    written for (Keras 1 files become 2.2.4)."""
    if isinstance(stored, StoredFacts):
        return stored.source_keras_version
    h5 = getattr(stored, "h5", None)
    try:
        provenance = json.loads(h5.attrs["mgpu_io"]) if h5 is not None and "mgpu_io" in h5.attrs else {}
    except (TypeError, ValueError):
        provenance = {}
    source = provenance.get("source_keras_version") if isinstance(provenance, dict) else None
    return source if isinstance(source, str) else stored.keras_version
