"""The plan of a repair: everything decided about one file before anything is written or built.

A :class:`Plan` is made once per file, from one opened :class:`~mgpu_io.format.read.StoredModel`, and used by every
consumer: :func:`mgpu_io.unwrap` writes it (``.h5``/JSON by :mod:`mgpu_io.format.write`, ``.keras`` by
:mod:`mgpu_io.keras.save`), :func:`mgpu_io.load_model` builds it, ``--dry-run`` reports it. It holds the template's
converted config, its weights per layer with their planned conversions, the wrapper levels and their writer, the
re-keyed training config and what happens to the optimizer state.
"""

import collections
import copy
import os
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Optional

from mgpu_io.errors import InvalidArgument, MgpuIOError, NotAWrapper, OutputError, Param, Text, WeightsMismatch
from mgpu_io.format import conversions
from mgpu_io.format.config import (
    RECURRENT_CLASSES,
    is_model,
    layer_name,
    model_layers,
    model_name,
    name_unnamed_models,
    walk_layers,
    wrapped_layers,
)
from mgpu_io.format.conversions.base import Conversion
from mgpu_io.format.conversions.cudnn import cudnn_layout
from mgpu_io.format.conversions.keras1 import is_keras1
from mgpu_io.format.conversions.training_config import metrics_per_output, rekey_training_config
from mgpu_io.format.detect import WrapperLevel, unroll
from mgpu_io.format.extract import Block, Extraction, _group, extract, template_outputs
from mgpu_io.format.optimizer import update_rule
from mgpu_io.format.read import MODEL, WEIGHTS, check_weight, is_group, open_stored
from mgpu_io.format.string_attrs import read_str_list
from mgpu_io.format.text import first_sentence
from mgpu_io.format.unwrap_report import ABSENT, ASIDE_GROUP, COPIED, COPIED_ASIDE, DROPPED, UnwrapReport
from mgpu_io.format.weights import LayerWeights, scoped_weight_names
from mgpu_io.lambdas.by_reference import template_lambdas


@dataclass
class Plan:
    """Everything a repair will do, decided before anything is written.

    Attributes:
        stored: the opened input (its HDF5 handles are valid while that file is open).
        extraction: where the template and its weights are.
        levels: the wrapper levels removed, outermost first.
        config: the template config as it will be written or built (``None`` for a weights-only file without one).
        layers: the template's stored weights per layer of ``config``.
        conversions: per-layer weight conversions (layer name -> :class:`~mgpu_io.format.conversions.Conversion`).
        training: the re-keyed, converted training config, or ``None``.
        keras_version: the ``keras_version`` to write (Keras 1 configs now read as 2.x).
        report: what the user is told.
        lambdas: the template's Lambda layers as stored (:class:`~mgpu_io.lambdas.stored.LambdaLayer`).
    """

    stored: object
    extraction: Extraction
    levels: list[WrapperLevel]
    config: Optional[dict]
    layers: list[LayerWeights]
    conversions: dict
    training: Optional[dict]
    keras_version: str
    report: UnwrapReport
    lambdas: list = field(default_factory=list)

    @property
    def file_type(self):
        return self.stored.file_type

    @property
    def optimizer_weights(self):
        """The stored optimizer group when the plan carries it over, else ``None``."""
        return self.stored.optimizer_weights if self.report.optimizer in (COPIED, COPIED_ASIDE) else None

    @property
    def optimizer_group(self):
        """Where the written file keeps the optimizer state: ``optimizer_weights``, or beside it (see
        :data:`COPIED_ASIDE`)."""
        return ASIDE_GROUP if self.report.optimizer == COPIED_ASIDE else "optimizer_weights"

    def converted(self, layer):
        """``(name, dataset)`` pairs of one planned layer, or ``(name, array)`` where a conversion rewrites them."""
        sources = [(name, layer.group[name]) for name in layer.names]
        conversion = self.conversions.get(layer.layer)
        if not conversion or not sources:
            return sources
        names, arrays = conversion.apply(layer.names, [dataset[()] for _, dataset in sources])
        return list(zip(names, arrays))


def _plain_advice(template, context, normalise):
    """What to do with a plain model instead of unwrapping it: load it as it is where Keras 3 can, else convert it.
    The fix of :class:`~mgpu_io.errors.NotAWrapper`, naming ``allow_plain=True`` as a parameter."""
    allow_plain = Param("allow_plain", True)
    if template is None:
        return Text(
            "Load the weights into your model with model.load_weights or mgpu_io.transfer_weights, or pass ",
            allow_plain,
            " to copy them through",
        )
    if normalise:
        try:
            _, changes = conversions.convert_config(template, context)
        except MgpuIOError as error:
            return Text("Neither Keras 3 nor mgpu_io.load_model loads it as it is: ", first_sentence(error.text(), ""))
        if changes:
            return Text(
                f"Keras 3 cannot load it as it is (it needs {', '.join(changes[:4])}"
                f"{', ...' if len(changes) > 4 else ''}): load it with mgpu_io.load_model, or pass ",
                allow_plain,
                " to write it converted",
            )
    return Text("Load it as it is, or pass ", allow_plain, " to copy it through")


def _converted(extraction, template, context, normalise, cpu_only):
    """The template's config converted and its weights laid out by it: ``(template, layers, changes, conversions by
    layer, warnings)``; nothing converted where neither ``normalise`` nor ``cpu_only`` asks for it."""
    changes, conversions_by_layer, warnings = [], {}, []
    if normalise or cpu_only or context.keras3_writer:
        template, changes = conversions.convert_config(template, context)
    layers = extraction.layout(template)
    if normalise or cpu_only:
        conversions_by_layer, notes = _weight_conversions(template, layers, context)
        changes += notes
        if normalise:
            warnings = _warnings(template, notes, context, layers)
    return template, layers, changes, conversions_by_layer, warnings


def _training(stored, extraction, outputs, keep_config, context):
    """The stored training config re-keyed by the template's outputs and, unless ``keep_config``, converted:
    ``(training config or None, renamed outputs, changes)``."""
    if stored.training_config is None:
        return None, {}, []
    training, renamed = rekey_training_config(stored.training_config, extraction.merge_names, outputs)
    if keep_config:
        return training, renamed, []
    training, changes = conversions.convert_training(training, context)
    return training, renamed, changes + metrics_per_output(training, outputs)


def _optimizer_plan(stored, training, include_optimizer, conversions_by_layer, warnings, *, converted, target, output):
    """What becomes of the optimizer state (:func:`_optimizer_fate`; copied aside where Keras 3's own load_model
    would build the optimizer on no variables) and the update rule the writer's optimizer followed:
    ``(fate, rule's description or None)``."""
    optimizer = _optimizer_fate(stored, include_optimizer, conversions_by_layer, warnings)
    keras_output = output is not None and Path(output).suffix == ".keras"
    to_keras3_legacy = converted and target == conversions.KERAS3 and stored.file_type == MODEL and not keras_output
    if optimizer == COPIED and to_keras3_legacy:
        optimizer = COPIED_ASIDE
    if training is None or stored.file_type != MODEL:
        return optimizer, None
    rule = update_rule(training.get("optimizer_config"), stored.keras_version)
    return optimizer, rule.describe(faithful=not keras_output) if rule is not None else None


def make_plan(stored, *, reuse=False, **options):
    """Plan the repair of the opened file ``stored`` (see :func:`mgpu_io.unwrap` for the options): where the
    template is, how its config and weights are converted, what becomes of its training config and optimizer
    state, each decided by its own function below. ``keras2_functions``: for a model :func:`mgpu_io.load_model`
    builds to train on (see :class:`~mgpu_io.format.conversions.base.Context`).

    ``reuse`` (a folder's repair): a wrapper whose stored configs, versions, layer list and options are those of a
    file planned before in this process (one training run's checkpoints) takes that plan, once this file's own
    weights are read and checked as a plan checks them and found to be the same names, shapes and types
    (:func:`_replanned`); anything else is planned anew.
    """
    key = _reuse_key(stored, options) if reuse else None
    kept = _PLANS.get(key) if key is not None else None
    if kept is not None:
        plan = _replanned(kept, stored, options.get("output"))
        if plan is not None:
            _PLANS.move_to_end(key)
            return plan
    plan = _plan(stored, **options)
    if key is not None and plan.extraction.unrolled is not None and plan.extraction.is_wrapper:
        _PLANS[key] = _Kept.of(plan, checked_optimizer=options.get("include_optimizer", True))
        while len(_PLANS) > 1 and (
            len(_PLANS) > _PLANS_KEPT or sum(len(text or "") for key in _PLANS for text in key[0]) > _REUSE_CHARACTERS
        ):
            _PLANS.popitem(last=False)
    return plan


#: Plans a folder's repair keeps for its later files, by :func:`_reuse_key`, the latest last.
_PLANS: collections.OrderedDict = collections.OrderedDict()
#: How many :data:`_PLANS` keeps (a folder holds one model or a few; the benchmark's small files 45 in turn).
_PLANS_KEPT = 64
#: A config whose text is longer is planned each time, and the configs kept hold at most _REUSE_CHARACTERS in all:
#: what is kept stays bounded whatever the files.
_REUSE_MAX_CHARACTERS = 4 << 20
_REUSE_CHARACTERS = 16 << 20


def _reuse_key(stored, options):
    """What decides a full model's plan but its weights: its stored configs (as text), versions, layer list and
    whether it holds optimizer state, and the options; ``None`` where no plan is kept (not a full model, a config
    too long, a config= given)."""
    texts = stored.config_texts
    if stored.file_type != MODEL or texts is None or options.get("config") is not None:
        return None
    if sum(len(text or "") for text in texts) > _REUSE_MAX_CHARACTERS:
        return None
    output = options.get("output")
    return (
        texts,
        stored.keras_version,
        stored.backend,
        tuple(stored.layer_names),
        stored.double_encoded,
        stored.optimizer_weights is not None,
        Path(output).suffix.lower() if output is not None else None,
        tuple(sorted((name, value) for name, value in options.items() if name not in ("output", "config"))),
    )


@dataclass
class _Kept:
    """A wrapper's plan as a later file of the same key takes it: all but what is read from the file itself. The
    plan is kept without its file's HDF5 objects (:func:`_without_handles`)."""

    plan: "Plan"
    grouped: list  # whether each of the plan's layers reads its weights from the template's group
    group: str  # the template's weight group, whose weight_names list every weight
    names: list  # those names, in order
    facts: list  # (shape, dtype) of each weight, in that order
    optimizer_names: Optional[list]  # the optimizer state's weight_names, where the plan copies it
    optimizer_facts: Optional[list]

    @classmethod
    def of(cls, plan, checked_optimizer):
        """``plan``'s weights, as :func:`_replanned` checks a later file's: the optimizer state's wherever
        ``checked_optimizer`` (the plan read and checked it: to copy it, or to drop it for its CuDNN layout)."""
        block = plan.extraction.blocks[0]
        optimizer = plan.stored.optimizer_weights if checked_optimizer else None
        names = read_str_list(optimizer.attrs, "weight_names") if optimizer is not None else None
        return cls(
            plan=_without_handles(plan),
            grouped=[layer.group is not None for layer in plan.layers],
            group=plan.extraction.unrolled.levels[0].template_layer,
            names=list(block.names),
            facts=[_facts(block.group[name]) for name in block.names],
            optimizer_names=names,
            optimizer_facts=[_facts(optimizer[name]) for name in names] if names is not None else None,
        )


def _without_handles(plan):
    """``plan`` less its file's HDF5 objects (the file, its groups and datasets), which a later file's own replace
    (:func:`_replanned`). Kept, they lived on after their file closed, and h5py goes through every live object at
    each file's close (``h5py._objects.nonlocal_close``, twice a close): with the benchmark's folder of 45 kinds of
    file, 288 objects more and 95 us a call against 36 us: about 0.2 ms of a small file's 5 ms repair."""
    return replace(
        plan,
        stored=None,
        extraction=replace(plan.extraction, stored=None, blocks=[]),
        layers=[replace(layer, group=None) for layer in plan.layers],
    )


def _facts(dataset):
    return dataset.shape, dataset.dtype


def _replanned(kept, stored, output):
    """``kept``'s plan for ``stored``, whose configs and options are ``kept``'s: this file's template weights and
    optimizer state are read and checked (:func:`~mgpu_io.format.read.check_weight`, as a plan checks them) and
    must have ``kept``'s names, shapes and types; ``None`` where anything differs (the file is planned anew)."""
    before = kept.plan
    group = _group(stored, kept.group)
    names = stored.weight_names(kept.group)
    if names != kept.names or any(name not in group for name in names):
        return None
    facts = dict(zip(names, kept.facts))
    for name in [name for layer in before.layers for name in layer.names]:  # in the plan's order, as it checks
        check_weight(group[name], name, stored)
        if _facts(group[name]) != facts[name]:
            return None
    if kept.optimizer_names is not None:
        optimizer = stored.optimizer_weights
        if not is_group(optimizer) or read_str_list(optimizer.attrs, "weight_names") != kept.optimizer_names:
            return None
        for name, expected in zip(kept.optimizer_names, kept.optimizer_facts):
            if name not in optimizer:
                return None
            check_weight(optimizer[name], name, stored, counter=True)
            if _facts(optimizer[name]) != expected:
                return None
    extraction = Extraction(stored=stored, unrolled=before.extraction.unrolled, blocks=[Block(group, names)])
    layers = [
        LayerWeights(layer.layer, layer.class_name, list(layer.names), group if grouped else None)
        for layer, grouped in zip(before.layers, kept.grouped)
    ]
    report = copy.deepcopy(before.report)
    report.source, report.output, report.written = str(stored.path), str(output) if output is not None else None, False
    return replace(before, stored=stored, extraction=extraction, layers=layers, report=report)


def _plan(
    stored,
    *,
    config=None,
    target="keras3",
    keep_config=False,
    include_optimizer=True,
    allow_plain=False,
    cpu=False,
    output=None,
    keras2_functions=False,
):
    """:func:`make_plan`, planned from the file alone."""
    extraction = extract(stored)
    if config is not None:
        _attach_config(extraction, config)
    template = extraction.template_config
    normalise, cpu_only, keras1, context = _conversion_context(stored, template, target, keep_config, cpu)
    context = replace(context, keras2_functions=keras2_functions)
    if not extraction.is_wrapper and not allow_plain:
        raise NotAWrapper(
            problem="The model is not a multi-GPU wrapper; there is nothing to unwrap",
            expected="a wrapper of slice layers, one nested template and axis-0 merges",
            received=f"filepath={stored.path} ({stored.file_type} file, plain model)",
            fix=_plain_advice(template, context, normalise),
        )
    template, layers, changes, conversions_by_layer, warnings = _converted(
        extraction, template, context, normalise, cpu_only
    )
    if template is None:
        _refuse_unplaceable_weights(extraction, layers, stored, keep_config)
    outputs = template_outputs(extraction, template)
    training, renamed, training_changes = _training(stored, extraction, outputs, keep_config, context)
    changes += training_changes
    optimizer, optimizer_rule = _optimizer_plan(
        stored,
        training,
        include_optimizer,
        conversions_by_layer,
        warnings,
        converted=normalise,
        target=target,
        output=output,
    )
    levels = extraction.levels
    lambdas = template_lambdas(extraction.template_config) if extraction.template_config is not None else []
    for lam in lambdas:
        written_by_reference = normalise or context.keras3_writer  # lambdas/by_reference.py
        if written_by_reference and lam.code is not None:
            lam.reference = lam.known or lam.layer
    report = UnwrapReport(
        source=str(stored.path),
        output=str(output) if output is not None else None,
        file_type=stored.file_type,
        was_wrapper=extraction.is_wrapper,
        depth=extraction.depth,
        replicas=levels[-1].replicas if levels else None,
        template=_template_name(extraction),
        outputs=outputs,
        config="verbatim" if keep_config else "normalized",
        target=target,
        config_changes=list(dict.fromkeys(changes)),
        layers=[{"layer": layer.layer, "weights": len(layer.names)} for layer in layers if layer.names],
        weights=sum(len(layer.names) for layer in layers),
        weight_bytes=sum(_nbytes(layer.group[n]) for layer in layers for n in layer.names),
        optimizer=optimizer,
        optimizer_rule=optimizer_rule,
        renamed_outputs=renamed,
        warnings=warnings,
        lambdas=[lam.to_dict() for lam in lambdas],
    )
    keras_version = "2.2.4" if keras1 else (stored.keras_version or "2.2.4")
    return Plan(
        stored, extraction, levels, template, layers, conversions_by_layer, training, keras_version, report, lambdas
    )


def _conversion_context(stored, template, target, keep_config, cpu):
    """``(normalise, cpu_only, keras1, context)``: whether the config is converted for Keras 3 and tf_keras, or
    only its CuDNN layers (the old Keras on a CPU), whether it is read as Keras 1's, and the conversions' context."""
    written_by_keras3 = str(stored.keras_version or "").startswith("3.")  # Keras 3 reads its own configs
    normalise = template is not None and not keep_config and not written_by_keras3
    cpu_only = template is not None and keep_config and cpu  # the old Keras on a CPU: CuDNN layers only
    keras1 = normalise and is_keras1(stored.keras_version, template)
    keras3_writer = template is not None and not keep_config and written_by_keras3  # its Lambdas' bytecode only
    context = conversions.Context(
        keras1=keras1,
        target=target if normalise or keras3_writer else conversions.TF_KERAS,
        cpu_only=cpu_only,
        weights_file=stored.file_type == WEIGHTS,
        keras_version=str(stored.keras_version or ""),
        keras3_writer=keras3_writer,
    )
    return normalise, cpu_only, keras1, context


def _refuse_unplaceable_weights(extraction, layers, stored, keep_config):
    """Weights without an architecture that no file could place: scoped names, or CuDNN layouts to convert."""
    if extraction.weights_wrapper is not None:
        scoped = scoped_weight_names([name for layer in layers for name in layer.names])
        if scoped:
            raise InvalidArgument(
                problem="Which layer owns each weight cannot be told from these names: they carry scopes (or layer "
                "names with '/')",
                parameter="config",
                expected="names of the form layer/weight, or the architecture",
                received=f"{len(scoped)} such weights in filepath={stored.path}, e.g. {scoped[0]!r}",
                fix=(
                    "Pass ",
                    Param("config"),
                    " (the JSON saved beside these weights, or the full model file), or load them with "
                    "mgpu_io.transfer_weights into your model",
                ),
            )
    if not keep_config:
        cudnn = [layer.layer for layer in layers if cudnn_layout([layer.group[n].shape for n in layer.names])]
        if cudnn:  # the written file would load nowhere but in CuDNN layers: refused, never written
            raise InvalidArgument(
                problem=f"Layers {cudnn} hold CuDNN-layout weights, which no loader of LSTM/GRU accepts and which "
                f"cannot be converted without the architecture",
                parameter="config",
                expected=(Param("config"), " with CuDNN weights"),
                received=(f"filepath={stored.path} (weights only, no ", Param("config"), ")"),
                fix=(
                    "Pass ",
                    Param("config"),
                    " (the JSON saved beside these weights), or load them with mgpu_io.transfer_weights into your "
                    "model, which converts them; ",
                    Param("keep_config", True),
                    " copies them unconverted for the old Keras",
                ),
            )


def _optimizer_fate(stored, include_optimizer, conversions_by_layer, warnings):
    """What happens to the stored optimizer state (:data:`COPIED`, :data:`DROPPED` or :data:`ABSENT`), its group
    checked where it is copied; a reason to drop it is added to ``warnings``."""
    if stored.optimizer_weights is None:
        return ABSENT
    if not include_optimizer:
        return DROPPED
    group = stored.optimizer_weights
    if not is_group(group):
        raise WeightsMismatch(
            problem="The optimizer state is not a group",
            parameter="include_optimizer",
            expected="`optimizer_weights` to be a group of arrays",
            received=f"a dataset in filepath={stored.path}",
            fix=("Pass ", Param("include_optimizer", False), " to leave it out"),
        )
    for name in read_str_list(group.attrs, "weight_names"):
        if name not in group:
            raise WeightsMismatch(
                problem="An optimizer weight is listed but missing",
                parameter="include_optimizer",
                expected=f"a dataset {name!r} in `optimizer_weights`",
                received=f"filepath={stored.path}",
                fix=("Pass ", Param("include_optimizer", False), " to leave the optimizer state out"),
            )
        check_weight(group[name], name, stored, counter=True)
    if any("cudnn-weights" in c.notes for c in conversions_by_layer.values()):
        warnings.append(
            "the optimizer state is left out: its slots have the CuDNN layout of the weights, "
            "which no loader of the converted LSTM/GRU accepts; training resumes with a fresh state"
        )
        return DROPPED
    return COPIED


def _nbytes(dataset):
    return dataset.size * dataset.dtype.itemsize


def _weight_conversions(template, layers, context):
    """Per-layer weight conversions and the names of their rules."""
    by_name = {layer_name(layer): layer for layer in model_layers(template)}
    planned_conversions, notes = {}, []
    for layer in layers:
        if layer.names and layer.layer in by_name:
            shapes = [layer.group[n].shape for n in layer.names]
            if is_model(by_name[layer.layer]):
                conversion = _nested_conversion(by_name[layer.layer], layer.names, shapes, context)
            else:
                conversion = conversions.weight_conversion(by_name[layer.layer], shapes, context)
            if conversion:
                planned_conversions[layer.layer] = conversion
                notes += conversion.notes
    return planned_conversions, list(dict.fromkeys(notes))


def _inner_prefix(name, inner):
    """The inner layer (of the names ``inner``) that a nested model's weight belongs to: the first part of the
    weight's name that names one (``bidirectional_5`` of ``bidirectional_5/forward_lstm_3/kernel:0``, and of
    Keras 2.2's ``encoder_1/bidirectional_5/...``, scoped by the nested model), or ``None``.

    Example:
        >>> _inner_prefix("encoder_1/bidirectional_5/forward_lstm_3/kernel:0", {"bidirectional_5"})
        'bidirectional_5'
    """
    return next((part for part in name.split("/")[:-1] if part in inner), None)


def _nested_conversion(model, names, shapes, context):
    """The conversion of a nested model's weights (one group for the whole model): each inner layer's weights, found
    by the prefix of their names, converted as that layer's own at the top level would be (hard_sigmoid gates,
    CuDNN layouts). Inner layers whose conversion would change the number of weights are left as stored (and
    warned about)."""
    inner = {layer_name(sub): sub for sub in walk_layers(model) if not is_model(sub)}
    parts = {}
    for index, name in enumerate(names):
        parts.setdefault(_inner_prefix(name, inner), []).append(index)
    planned = []
    for prefix, indices in parts.items():
        if prefix in inner:
            conversion = conversions.weight_conversion(inner[prefix], [shapes[i] for i in indices], context)
            if conversion:
                planned.append((indices, conversion))
    if not planned:
        return Conversion()

    def each(names, arrays):
        names, arrays = list(names), list(arrays)
        for indices, conversion in planned:
            new_names, new_arrays = conversion.apply([names[i] for i in indices], [arrays[i] for i in indices])
            if len(new_arrays) != len(indices):
                raise WeightsMismatch(
                    problem=(
                        f"The weights of a layer inside nested model {layer_name(model)!r} cannot be converted in place"
                    ),
                    expected="a conversion that keeps their number",
                    received=f"{len(indices)} weights becoming {len(new_arrays)}",
                    fix="Rebuild the template in code and load the weights with mgpu_io.transfer_weights",
                )
            for i, new_name, array in zip(indices, new_names, new_arrays):
                names[i], arrays[i] = new_name, array
        return names, arrays

    return Conversion(list(dict.fromkeys(note for _, c in planned for note in c.notes)), [each])


def _warnings(template, notes, context, layers=()):
    """What stays inexact or unconverted: said with the report, never silently."""
    warnings = []
    stored = {layer.layer: layer.names for layer in layers}
    for layer in model_layers(template):
        if is_model(layer):
            inner = {layer_name(sub) for sub in walk_layers(layer)}
            found = {_inner_prefix(name, inner) for name in stored.get(layer_name(layer), ())}
            for holder in walk_layers(layer):
                if layer_name(holder) in found:
                    continue  # its weights are found by name and converted as a top-level layer's
                for sub in [holder, *wrapped_layers(holder)]:
                    if sub["class_name"] not in RECURRENT_CLASSES:
                        continue
                    warnings.append(
                        f"recurrent layer {layer_name(sub)!r} inside nested model {layer_name(layer)!r} is not "
                        f"converted (CuDNN, Keras 1 or hard_sigmoid weights); check its predictions"
                    )
    warnings += [message for family, message, _ in conversions.checks(template, context) if family.warn]
    if "hard-sigmoid-gates-rescaled" in notes or "hard-sigmoid-rescaled" in notes:
        what = "load these weights into a Keras 3 model" if context.weights_file else "the file is for Keras 3"
        warnings.append(
            Text(
                f"Keras 2 hard_sigmoid weights were rescaled for Keras 3: {what}; for tf_keras unwrap with ",
                Param("target", "tf_keras"),
            )
        )
    return list(dict.fromkeys(warnings))


def _template_name(extraction):
    if extraction.template_config is not None:
        return model_name(extraction.template_config)
    return extraction.weights_wrapper.template_layer if extraction.weights_wrapper else None


def _attach_config(extraction, config_path):
    """Give a weights-only extraction the graph of the architecture file saved beside it."""
    if extraction.stored.file_type != WEIGHTS:
        raise InvalidArgument(
            problem=(Param("config"), " applies to weights-only files"),
            parameter="config",
            expected=f"a weights-only input, since a {extraction.stored.file_type} file carries its own architecture",
            received=f"filepath={extraction.stored.path}",
            fix=("Leave out ", Param("config")),
        )
    with open_stored(config_path) as architecture:
        if architecture.model_config is None:
            raise InvalidArgument(
                problem="The architecture file holds no architecture",
                parameter="config",
                expected=("a JSON config or a full-model .h5 as ", Param("config")),
                received=(Param("config", config_path, text=f"config={config_path}"), " (a weights-only file)"),
                fix="Pass the JSON saved with to_json()",
            )
        unrolled = unroll(name_unnamed_models(architecture.model_config, extraction.stored.layer_names))
    wrapper = extraction.weights_wrapper
    if wrapper is not None and unrolled.levels and unrolled.levels[0].template_layer != wrapper.template_layer:
        raise WeightsMismatch(
            problem="The config and the weights come from different models",
            parameter="config",
            expected=f"the config's nested template layer to be the weights' group {wrapper.template_layer!r}",
            received=f"{unrolled.levels[0].template_layer!r} in filepath={config_path}",
            fix="Pass the config saved with these weights",
        )
    extraction.unrolled = unrolled


def check_output(source, output, overwrite, *, inputs=(), folder_made_later=False):
    """Refuse an output path that would lose something: an input, an existing file, a missing folder."""
    source, output = Path(source), Path(output)
    try:
        _check_output(source, output, overwrite, inputs, folder_made_later)
    except OSError as error:  # a name the file system refuses (too long, a component that is a file, ...)
        raise OutputError(
            problem="The output path cannot be used",
            parameter="output",
            expected="a path this file system accepts",
            received=f"output={output} ({error.strerror or error})",
            fix="Choose another output path",
        ) from None


def _check_output(source, output, overwrite, inputs, folder_made_later):
    if not output.parent.is_dir() and not folder_made_later:
        raise OutputError(
            problem="The output folder does not exist",
            parameter="output",
            expected="an existing folder for the output file",
            received=f"output={output}",
            fix=f"Create {output.parent} first",
        )
    for candidate in (source, *inputs):
        if (
            candidate is not None
            and output.exists()
            and Path(candidate).exists()
            and os.path.samefile(candidate, output)
        ):
            raise OutputError(
                problem="The output is an input file",
                parameter="output",
                expected="a different path: inputs are never modified",
                received=f"input={candidate}, output={output}",
                fix="Choose another output path",
            )
    if output.is_dir():
        raise OutputError(
            problem="The output is a folder",
            parameter="output",
            expected="a file path",
            received=f"output={output}",
            fix="Name the output file",
        )
    if output.exists() and not overwrite:
        raise OutputError(
            problem="The output file already exists",
            parameter="output",
            expected="a new path",
            received=f"output={output}",
            fix=("Pass ", Param("overwrite", True), " to replace it"),
        )
