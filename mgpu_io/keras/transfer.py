"""Transfer a wrapper's weights into a freshly built base model, by structure, with a report.

The user has the code that builds the base model and a file (or an in-memory model) from the wrapper. Weighted
layers are matched in order, each layer's weights in ``trainable + non_trainable`` order as the legacy files store
them; names are ignored (``cpu_relocation`` renamed them, Keras 1 spelled them differently). Every shape is checked,
stored layouts are converted for the target layer (Keras 1 gates, CuDNN, Keras 2 ``hard_sigmoid``), and the result
is a :class:`TransferReport`: what matched, what was converted, what is missing, what was left over.
"""

import functools
from dataclasses import asdict, dataclass, field
from pathlib import Path

import numpy as np

from mgpu_io.anykeras.wrapper import find_template, legacy_weights
from mgpu_io.errors import InvalidArgument, Param, WeightsMismatch
from mgpu_io.format import conversions, door
from mgpu_io.format.conversions.keras1 import is_keras1
from mgpu_io.format.extract import extract
from mgpu_io.format.plan import check_output
from mgpu_io.format.plan_data import StoredFacts
from mgpu_io.format.read import CONFIG, file_of, open_stored, reading
from mgpu_io.format.sandbox import hand_over, probed
from mgpu_io.format.text import columns, printable
from mgpu_io.format.write import atomic_path


@dataclass
class TransferReport:
    """The result of :func:`transfer_weights`. ``ok`` when every layer matched and nothing was left over."""

    source: str
    model: str
    matched: list[dict] = field(default_factory=list)
    converted: list[dict] = field(default_factory=list)
    mismatched: list[dict] = field(default_factory=list)
    missing: list[dict] = field(default_factory=list)
    unexpected: list[dict] = field(default_factory=list)
    loaded: int = 0
    #: With ``strict=False``, each weight left as it was: ``{"index", "layer", "weight", "expected", "received"}``
    #: (a layer whose weights fit in part gets the ones that fit, as tf_keras' ``skip_mismatch=True`` does).
    skipped: list[dict] = field(default_factory=list)

    @property
    def ok(self):
        return not (self.mismatched or self.missing or self.unexpected)

    def to_dict(self):
        return dict(asdict(self), ok=self.ok)

    def converted_from(self, source, note):
        """Report on ``source``, a TensorFlow format read through a legacy copy (:func:`mgpu_io.tf.convert.read_converted`)."""
        self.source = source

    def __str__(self):
        """Every weighted layer, matched or not, as ``mgpu-io transfer`` prints it."""
        converted = {c["layer"]: ", ".join(c["conversions"]) for c in self.converted}
        rows = [
            (
                m["index"],
                m["target"],
                m["source"],
                _shapes(m["shapes"]),
                "converted: " + converted[m["target"]] if m["target"] in converted else "matched",
            )
            for m in self.matched
        ]
        rows += [
            (m["index"], m["target"], m["source"], f"{_shapes(m['expected'])} vs {_shapes(m['received'])}", "MISMATCH")
            for m in self.mismatched
        ]
        rows += [(m["index"], m["layer"], "-", _shapes(m["shapes"]), "MISSING in source") for m in self.missing]
        rows += [(m["index"], "-", m["layer"], _shapes(m["shapes"]), "UNEXPECTED in source") for m in self.unexpected]
        title = f"{printable(self.source)} -> {printable(self.model)}: {self.loaded} layers loaded"
        skipped = [
            f"! weight {printable(s['weight'])} of layer #{s['index']} left as it was: expected {s['expected']}, "
            f"received {s['received']}"
            for s in self.skipped
        ]
        return "\n".join(
            [
                title,
                *columns(
                    ("#", "model layer", "source layer", "shapes", "status"),
                    [tuple(map(str, row)) for row in sorted(rows, key=lambda r: r[0])],
                ),
                *skipped,
            ]
        )


def _shapes(shapes):
    return " ".join(str(tuple(s)) for s in shapes)


@dataclass
class _Layer:
    name: str
    arrays: object  # callable returning the list of numpy arrays
    shapes: list[tuple]


def transfer_weights(source, model, *, strict=True, config=None):
    """Load the template weights of ``source`` into ``model``, matching weighted layers in order.

    Args:
        source: a path (full-model or weights-only wrapper file, nested wrapper, plain legacy file) or an in-memory
            Keras model (a wrapper or not).
        model: the freshly built base model (Keras 3, or tf_keras).
        strict: raise :class:`WeightsMismatch` listing every mismatch, and load nothing; with ``strict=False``
            load the layers that match and return the report.
        config: for a TF-format checkpoint ``source`` only: the architecture saved beside it (a checkpoint records
            no layer names). A SavedModel folder needs none.

    Returns:
        A :class:`TransferReport`.

    Example:
        >>> import keras
        >>> inp = keras.Input((4,))
        >>> model = keras.Model(inp, keras.layers.Dense(3)(keras.layers.Activation("tanh")(keras.layers.Dense(8)(inp))))
        >>> report = transfer_weights("fixtures/files/k216_kuza55_x2_weights.h5", model)
        >>> report.ok, report.loaded, [m["source"] for m in report.matched]
        (True, 2, ['d1', 'out'])
    """
    source = file_of(source, "source")  # an open h5py.File, as Keras takes one
    targets = [layer for layer in model.layers if legacy_weights(layer)]
    handed = None
    if isinstance(source, (str, Path)):
        # What the input is, decided once (format/door.py); a legacy file's layers are read in the same child, which
        # hands them back as data (their arrays in shared memory): the file is opened once.
        shape = _WeightCounts.of(targets)  # what the child needs of the target layers, as data: it crosses
        described, outcome = door.describe_then(source, functools.partial(_layers_in_child, source, shape))
        handed = outcome[0] if outcome is not None else None
        if described.kind in (*door.KERAS3_KINDS, door.FOLDER):
            raise door.refusal(described, "transfer_weights", "a legacy full-model or weights-only file")
        if described.kind in door.TENSORFLOW_KINDS:
            # A checkpoint without config: the freshly built model is the architecture; its weighted layers find
            # the checkpoint's model.
            weighted = [
                (type(layer).__name__, [tuple(v.shape) for v in legacy_weights(layer)]) for layer in model.layers
            ]
            from mgpu_io.tf.convert import read_converted

            return read_converted(
                lambda readable: transfer_weights(readable, model, strict=strict),
                (described, config, [target for target in weighted if target[1]]),
            )
    keras3 = not type(model).__module__.startswith("tf_keras")
    if isinstance(source, (str, Path)):
        if handed is None:  # libhdf5 hangs and crashes become errors
            handed = probed(source, functools.partial(_layers_as_data, source, shape))
        data, stored = handed
        layers = [_Layer(layer.name, (lambda arrays=layer.arrays: list(arrays)), layer.shapes) for layer in data]
        with reading(stored.path, "reading the weights"):  # a conversion that the stored shapes defeat: its error
            return _transfer(layers, stored, str(source), model, targets, keras3, strict)
    template = find_template(source)
    layers = [
        _Layer(
            layer.name,
            (lambda lyr=layer: [np.asarray(v) for v in legacy_weights(lyr)]),
            [tuple(v.shape) for v in legacy_weights(layer)],
        )
        for layer in template.layers
        if legacy_weights(layer)
    ]
    return _transfer(layers, None, f"in-memory model {source.name!r}", model, targets, keras3, strict)


def _transfer(sources, stored, source_name, model, targets, keras3, strict):
    report = TransferReport(source=source_name, model=model.name)
    keras1 = stored is not None and is_keras1(stored.keras_version)
    from_keras2 = stored is not None and not str(stored.keras_version or "").startswith("3.")
    plan = []
    for index, (source, target) in enumerate(zip(sources, targets)):
        expected = [tuple(v.shape) for v in legacy_weights(target)]
        conversion = None
        if stored is not None:
            layer_config = {"class_name": type(target).__name__, "config": target.get_config()}
            context = conversions.Context(keras1=keras1, target="keras3" if keras3 and from_keras2 else "tf_keras")
            conversion = conversions.weight_conversion(layer_config, source.shapes, context)
        received = source.shapes
        if conversion:
            received = [
                tuple(a.shape)
                for a in conversion.apply([None] * len(source.shapes), [np.zeros(s, "float32") for s in source.shapes])[
                    1
                ]
            ]
        entry = {"index": index, "target": target.name, "source": source.name}
        if received != expected:
            report.mismatched.append(dict(entry, expected=expected, received=received))
            plan.append((target, source, conversion, _fitting(expected, received)))
            continue
        report.matched.append(dict(entry, shapes=expected))
        if conversion:
            report.converted.append({"layer": target.name, "conversions": conversion.notes})
        plan.append((target, source, conversion, None))
    for index, target in enumerate(targets[len(sources) :], start=len(sources)):
        report.missing.append(
            {"index": index, "layer": target.name, "shapes": [tuple(v.shape) for v in legacy_weights(target)]}
        )
    for index, source in enumerate(sources[len(targets) :], start=len(targets)):
        report.unexpected.append({"index": index, "layer": source.name, "shapes": source.shapes})
    if strict and not report.ok:
        raise WeightsMismatch(**_strict_fields(report))
    for target, source, conversion, fitting in plan:
        variables = legacy_weights(target)
        if fitting is not None:  # a mismatched layer (strict=False): the weights that fit, each other one reported
            for position, variable in enumerate(variables):
                if position not in fitting:
                    report.skipped.append(
                        {
                            "index": targets.index(target),
                            "layer": target.name,
                            "weight": getattr(variable, "path", variable.name),
                            "expected": tuple(variable.shape),
                            "received": _received_shape(source, conversion, position),
                        }
                    )
            if not fitting:
                continue
        arrays = source.arrays()
        if conversion:
            arrays = conversion.apply([None] * len(arrays), arrays)[1]
        for position, (variable, value) in enumerate(zip(variables, arrays)):
            if fitting is None or position in fitting:
                variable.assign(value)
        report.loaded += fitting is None
    return report


def _fitting(expected, received):
    """The positions of a layer's weights whose stored shape fits, where the layer has as many weights stored as it
    has; none where the counts differ (the weights cannot be paired)."""
    if len(expected) != len(received):
        return set()
    return {i for i, (want, got) in enumerate(zip(expected, received)) if tuple(want) == tuple(got)}


def _received_shape(source, conversion, position):
    shapes = source.shapes
    if conversion:
        shapes = [
            tuple(a.shape) for a in conversion.apply([None] * len(shapes), [np.zeros(s, "float32") for s in shapes])[1]
        ]
    return tuple(shapes[position]) if position < len(shapes) else None


def _strict_fields(report):
    """The fields of the :class:`WeightsMismatch` that a strict transfer raises: every layer that does not fit."""
    problems = []
    for m in report.mismatched:
        problems.append(
            f"layer #{m['index']} (named {m['target']} in the model, {m['source']} in the source) expects "
            f"{len(m['expected'])} weight(s) of shapes {_shapes(m['expected'])}; received "
            f"{len(m['received'])} of shapes {_shapes(m['received'])}"
        )
    if report.missing:
        problems.append(
            "the source has no weights for model layers "
            + ", ".join(f"#{m['index']} {m['layer']}" for m in report.missing)
        )
    if report.unexpected:
        problems.append(
            "the source has weights for more layers than the model: "
            + ", ".join(f"#{m['index']} {m['layer']}" for m in report.unexpected)
        )
    more = f" ({len(problems) - 1} more: {'; '.join(problems[1:])})" if len(problems) > 1 else ""
    return dict(
        problem=f"The weights do not fit the model: {problems[0]}",
        expected="the template that was wrapped, built by the same code",
        received=f"source={report.source}, model={report.model}{more}",
        fix=(
            "Check the model code (layer sizes, order), or pass ",
            Param("strict", False),
            " to load the layers that match",
        ),
    )


@dataclass(frozen=True)
class _WeightCounts:
    """The target layers as the file's reading needs them: each one's name and its numbers of trainable and of
    non-trainable weights."""

    layers: tuple

    @classmethod
    def of(cls, targets):
        return cls(tuple((t.name, len(t.trainable_weights), len(t.non_trainable_weights)) for t in targets))

    def __len__(self):
        return len(self.layers)


def _layers_in_child(source, targets, description):
    """In the door's child: the layers of a legacy file, as data (:func:`_layers_as_data`), else ``None``."""
    if description.kind not in (door.LEGACY_MODEL, door.LEGACY_WEIGHTS):
        return None
    return _layers_as_data(source, targets)


def _layers_as_data(source, targets):
    """In the sandbox's child: the stored layers that fit ``targets`` (:class:`_WeightCounts`), their arrays handed
    over to the parent (:func:`~mgpu_io.format.sandbox.hand_over`), and what the file records
    (:class:`StoredFacts`)."""
    with open_stored(source) as stored, reading(stored.path, "reading the weights"):
        layers = _file_layers(stored, targets)
        data = [_Layer(layer.name, hand_over(layer.arrays()), layer.shapes) for layer in layers]
        facts = StoredFacts(str(stored.path), stored.keras_version, None, stored.file_type)
    return data, facts  # plain data: it crosses the pipe


def _file_layers(stored, targets):
    """The stored template's weighted layers, grouped to fit ``targets`` where the structure allows."""
    if stored.file_type == CONFIG:
        raise InvalidArgument(
            problem="A JSON config holds no weights",
            parameter="filepath",
            expected="a full-model or weights-only file",
            received=f"filepath={stored.path}",
            fix="Pass the weights file saved beside it",
        )
    extraction = extract(stored)
    layers = [
        _stored_layer(layer.layer, layer.group, list(layer.names)) for layer in extraction.layout() if layer.names
    ]
    if len(layers) != len(targets) and extraction.is_wrapper and len(extraction.blocks) == 1:
        by_structure = _split_by_targets(extraction.blocks[0], targets)
        if by_structure is not None:
            return by_structure
    return layers


def _stored_layer(name, group, names):
    return _Layer(name, (lambda: [group[w][()] for w in names]), [tuple(group[w].shape) for w in names])


def _split_by_targets(block, targets):
    """Split a template's flat weights (every layer's trainable weights, then every layer's non-trainable ones)
    by the target layers' own counts: structure alone, where the names group differently (nested models)."""
    trainable = [t for _, t, _ in targets.layers]
    frozen = [n for _, _, n in targets.layers]
    if sum(trainable) + sum(frozen) != len(block.names):
        return None
    first, second = block.names[: sum(trainable)], block.names[sum(trainable) :]
    layers, i, j = [], 0, 0
    for name, t, n in targets.layers:
        names = first[i : i + t] + second[j : j + n]
        i, j = i + t, j + n
        layers.append(_stored_layer(names[0].split("/")[0] if names else name, block.group, names))
    return layers


@dataclass
class TransferResult:
    """What :func:`transfer` did: the :class:`TransferReport` and where the model was saved."""

    report: TransferReport
    output: str
    written: bool

    @property
    def ok(self):
        return self.report.ok

    def to_dict(self):
        return dict(self.report.to_dict(), output=self.output, written=self.written)

    def __str__(self):
        report = self.report
        if report.ok:
            last = f"Saved {printable(self.output)}: all {report.loaded} weighted layers loaded"
        else:
            last = (
                f"! Saved {printable(self.output)} with {report.loaded} layers loaded; "
                f"{len(report.mismatched) + len(report.missing)} did not match"
            )
        return f"{report}\n{last}"


def transfer(source, output, builder, *, strict=True, overwrite=False, config=None):
    """Build the base model with the user's code, load ``source``'s template weights into it, save it to ``output``.

    Args:
        source: a wrapper file (full model or weights only), nested or not, or a plain legacy file.
        output: where to save the base model (``.keras``, or ``.h5`` for the legacy format).
        builder: a function that returns the freshly built base model, or its name as ``"module:function"``
            (the module is imported from the current folder first).
        strict: see :func:`transfer_weights`; with ``strict=False`` the layers that match are loaded and saved.
        overwrite: replace an existing ``output``.
        config: for a TF-format checkpoint ``source``: the architecture saved beside it.

    Returns:
        A :class:`TransferResult`; its ``report`` lists what matched, was converted, is missing or left over.

    Example:
        >>> import keras, tempfile, pathlib
        >>> def build():
        ...     inp = keras.Input((4,))
        ...     hidden = keras.layers.Activation("tanh")(keras.layers.Dense(8)(inp))
        ...     return keras.Model(inp, keras.layers.Dense(3)(hidden))
        >>> out = pathlib.Path(tempfile.mkdtemp()) / "model.keras"
        >>> transfer("fixtures/files/k216_kuza55_x2_weights.h5", out, build).written
        True
    """
    source, output = Path(source), Path(output)
    check_output(source, output, overwrite)
    model = build_model(builder)
    report = transfer_weights(source, model, strict=strict, config=config)
    with atomic_path(output, suffix=output.suffix or ".keras") as temporary:
        model.save(temporary)
    return TransferResult(report=report, output=str(output), written=True)


def build_model(builder):
    """Call ``builder`` (a function, or ``"module:function"`` imported from the current folder)."""
    if callable(builder):
        return builder()
    from mgpu_io.keras.custom import import_function

    return import_function(builder, "builder")()
