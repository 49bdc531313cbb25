"""Read a Keras 1/2, tf.keras, tf_keras or Keras 3 optimizer state as roles that a Keras 3 optimizer can take.

Keras 2 stored an optimizer's state as one flat list in ``optimizer_weights`` (legacy-format.md §3.1): Adam
``[iterations, m_1..m_n, v_1..v_n, vhat_1..vhat_n]``, SGD ``[iterations, moment_1..moment_n]``, RMSprop
``[accumulator_1..accumulator_n]`` (2.3: with ``iterations`` first); tf.keras' optimizer v2 the same per kind
(``iter``, then all ``m``, then all ``v``). Keras 3 names each of its optimizer variables by role
(``…_momentum``, ``…_velocity``, ``…_accumulator``, ``iteration``). This module maps one onto the other by position
and checks every shape against the model's trainable weights; it imports neither TensorFlow nor Keras. tf_keras
(``iteration``, then ``Adam/m/…`` and ``Adam/v/…`` per weight in turn) and Keras 3 (``iteration``, ``learning_rate``,
``…_momentum`` and ``…_velocity`` per weight in turn) say each array's role in its name, and are read by name.
"""

import re
from dataclasses import dataclass, field
from typing import Optional

import numpy as np

# Keras 3 variable-name suffix of each per-weight slot, per optimizer class, in the order Keras 1/2 stored them
# (legacy-format.md §3.1: Adam ``[iterations, m.., v.., vhat..]``, Adadelta ``[accumulators.., delta_accumulators..]``,
# Adamax ``[iterations, m.., u..]``; keras/optimizers.py of 1.2.2 and 2.2.4).
_SLOTS = {
    "Adam": ("momentum", "velocity", "velocity_hat"),
    "SGD": ("momentum",),
    "RMSprop": ("velocity", "momentum", "average_gradient"),
    "Adagrad": ("accumulator",),
    "Adadelta": ("accumulated_grad", "accumulated_delta_var"),
    "Adamax": ("momentum", "norm"),
    "Nadam": ("momentum", "velocity"),
    "Ftrl": ("accumulator", "linear"),
}
#: Positional layouts (Keras 1/2 name their arrays ``Variable_N``): ``(arrays before the slots, slot roles)``, tried
#: in turn. Keras 1.2.2 and 2.2.4 store no step count for RMSprop, Adagrad and Adadelta; Keras 2.2.4's Adam keeps a
#: ``vhat`` per weight (shape ``(1,)`` dummies without amsgrad); Keras 2.3 puts ``iterations`` first everywhere and
#: Nadam's ``m_schedule`` second.
_POSITIONAL = {
    "Adam": ((1, ("momentum", "velocity")), (1, ("momentum", "velocity", "velocity_hat"))),
    "SGD": ((1, ("momentum",)), (0, ("momentum",)), (1, ())),
    "RMSprop": ((0, ("velocity",)), (1, ("velocity",))),
    "Adagrad": ((0, ("accumulator",)), (1, ("accumulator",))),
    "Adadelta": (
        (0, ("accumulated_grad", "accumulated_delta_var")),
        (1, ("accumulated_grad", "accumulated_delta_var")),
    ),
    "Adamax": ((1, ("momentum", "norm")),),
    "Nadam": ((1, ("momentum", "velocity")), (2, ("momentum", "velocity"))),
    "Ftrl": ((1, ("accumulator", "linear")),),
}
#: The optimizer classes whose stored state is translated (a subclass keeps its base class's slots).
TRANSLATED_OPTIMIZERS = tuple(_SLOTS)
#: One-value states besides the slots, by Keras 3 name: Nadam's product of momentum factors (Keras 2's
#: ``m_schedule``, tf.keras' ``momentum_cache``, Keras 3's ``u_product``).
_SCALARS = {"Nadam": "u_product"}


@dataclass
class OptimizerState:
    """Slot arrays by Keras 3 role (each in trainable-weight order) and the step count, or why there are none."""

    optimizer: str
    iterations: Optional[int] = None
    slots: dict[str, list[np.ndarray]] = field(default_factory=dict)
    problem: Optional[str] = None
    scalars: dict[str, float] = field(default_factory=dict)


@dataclass
class SlotLayout:
    """Where each part of a stored optimizer state is: the index of the step counter, and per Keras 3 role the
    indices of its slots in trainable-weight order (or ``problem``: why the state cannot be laid out)."""

    iterations: Optional[int] = None
    slots: dict[str, list[int]] = field(default_factory=dict)
    problem: Optional[str] = None
    scalars: dict[str, int] = field(default_factory=dict)


#: Slot names as the writers spelled them (tf.keras v2 ``…/kernel/m``, tf_keras ``Adam/m/…``, Keras 3
#: ``…_momentum``), by Keras 3 role.
_NAMED = {
    "m": "momentum",
    "v": "velocity",
    "vhat": "velocity_hat",
    "momentum": "momentum",
    "velocity": "velocity",
    "velocity_hat": "velocity_hat",
    "accumulator": "accumulator",
    "rms": "velocity",
    "mg": "average_gradient",
    "average_gradient": "average_gradient",
    "accum_grad": "accumulated_grad",
    "accum_var": "accumulated_delta_var",
    "accumulated_grad": "accumulated_grad",
    "accumulated_delta_var": "accumulated_delta_var",
    "linear": "linear",
    "u": "norm",
    "norm": "norm",
}
#: Where one optimizer's slot names mean another role: tf.keras' Adamax keeps its norm as ``v``.
_NAMED_BY_OPTIMIZER = {"Adamax": {"v": "norm"}}
#: Names of one-value states (tf.keras' Nadam ``momentum_cache``, Keras 3's ``u_product``).
_SCALAR_NAMES = {"momentum_cache": "u_product", "u_product": "u_product", "m_schedule": "u_product"}
_COUNTERS = ("iteration", "iterations", "iter")
#: Keras 3 suffixes, longest first (``…_velocity_hat`` before ``…_velocity``).
_SUFFIXES = tuple(sorted(set(_NAMED.values()), key=len, reverse=True))


def _named_roles(names, optimizer=None):
    """The role of each stored optimizer array by its name (``"iterations"``, a Keras 3 role, ``"scalar:<name>"``
    or ``None`` for a learning-rate variable), or ``None`` when the names do not say (Keras 2's
    ``training/Adam/Variable_3:0``)."""
    overrides = _NAMED_BY_OPTIMIZER.get(optimizer, {})
    named = {**_NAMED, **overrides}
    roles = []
    for name in names:
        parts = re.sub(r":\d+$", "", name).split("/")
        leaf = parts[-1]
        if leaf in _COUNTERS:
            roles.append("iterations")
        elif leaf == "learning_rate":
            roles.append(None)
        elif leaf in _SCALAR_NAMES:
            roles.append("scalar:" + _SCALAR_NAMES[leaf])
        elif optimizer in _SCALARS and re.fullmatch(r"variable(_\d+)?", leaf):  # Keras 3 leaves Nadam's unnamed
            roles.append("scalar:" + _SCALARS[optimizer])
        elif len(parts) >= 3 and leaf in named:  # tf.keras v2: Adam/dense/kernel/m
            roles.append(named[leaf])
        elif len(parts) >= 3 and parts[1] in named:  # tf_keras: Adam/m/dense/kernel
            roles.append(named[parts[1]])
        else:  # Keras 3: adam/dense_kernel_momentum
            role = next((r for r in _SUFFIXES if leaf.endswith("_" + r)), False)
            if not role:
                return None
            roles.append(role)
    return roles


@dataclass(frozen=True)
class SlotName:
    """What a stored slot's name says: its Keras 3 role, and the weight it belongs to, as a path (``("bn_1",
    "gamma")``) or, where Keras 3 wrote the weight's path with its ``/`` made ``_``, as that string (``flat``)."""

    role: str
    weight: tuple = ()
    flat: Optional[str] = None


def slot_name(name, optimizer=None) -> Optional[SlotName]:
    """The role and weight a stored optimizer array's name says, where it names a weight: tf.keras' legacy
    optimizers (``[training/]Adam/bn_1/gamma/m:0``), the optimizers of TF 2.11+ and tf_keras (``Adam/m/bn_1/gamma:0``),
    Keras 3 (``[adam/]bn_1_gamma_momentum``); ``None`` for any other (a step counter, a learning rate, Keras 1/2's
    ``Variable_3:0``).

    Example:
        >>> slot_name("training/Adam/bn_1/gamma/m:0")
        SlotName(role='momentum', weight=('bn_1', 'gamma'), flat=None)
        >>> slot_name("Adam/v/bigru/forward_gru/kernel:0")
        SlotName(role='velocity', weight=('bigru', 'forward_gru', 'kernel'), flat=None)
        >>> slot_name("adam/bn_1_gamma_velocity_hat")
        SlotName(role='velocity_hat', weight=(), flat='bn_1_gamma')
        >>> [slot_name(n) for n in ("training/Adam/Variable_3:0", "adam/iteration", "Adam/iter:0")]
        [None, None, None]
    """
    named = {**_NAMED, **_NAMED_BY_OPTIMIZER.get(optimizer, {})}
    parts = re.sub(r":\d+$", "", str(name)).split("/")
    parts = parts[1:] if parts[0] == "training" else parts
    if len(parts) >= 4 and parts[-1] in named:  # OPTIMIZER/LAYER/.../WEIGHT/SLOT
        return SlotName(named[parts[-1]], tuple(parts[1:-1]))
    if len(parts) >= 4 and parts[1] in named:  # OPTIMIZER/SLOT/LAYER/.../WEIGHT
        return SlotName(named[parts[1]], tuple(parts[2:]))
    leaf = parts[-1]
    role = next((r for r in _SUFFIXES if leaf.endswith("_" + r) and len(leaf) > len(r) + 1), None)
    if role is None or len(parts) > 2:
        return None
    return SlotName(role, flat=leaf[: -len(role) - 1])


def slot_layout(optimizer, shapes, trainable_shapes, names=None, trainable_names=None):
    """Lay out a stored optimizer state (the shapes of its arrays, and their names where they say it) onto Keras 3
    roles, checking every slot's shape against the model's trainable weights (``trainable_names``: theirs, for the
    message that refuses a slot that does not fit its weight). Reads no data.

    Example:
        >>> layout = slot_layout("Adam", [(), (2,), (2,)], [(2,)])
        >>> layout.iterations, layout.slots, layout.problem
        (0, {'momentum': [1], 'velocity': [2]}, None)
        >>> slot_layout("Adam", [(), (), (2,), (2,)], [(2,)], ["iteration", "learning_rate", "d_k_momentum",
        ...                                                      "d_k_velocity"]).slots
        {'momentum': [2], 'velocity': [3]}
        >>> slot_layout("Adadelta", [(2,), (2,)], [(2,)]).slots
        {'accumulated_grad': [0], 'accumulated_delta_var': [1]}
    """
    layout = SlotLayout()
    if optimizer not in _SLOTS:
        layout.problem = (
            f"mgpu-io does not translate the state of {optimizer} (only {sorted(_SLOTS)} and their subclasses; pass "
            f"the class in custom_objects= if it derives from one of them)"
        )
        return layout
    n, roles = len(trainable_shapes), _SLOTS[optimizer]
    named = _named_roles(names, optimizer) if names is not None and len(names) == len(shapes) else None
    if named is not None:
        counters = [i for i, role in enumerate(named) if role == "iterations"]
        layout.iterations = counters[0] if counters else None
        for i, role in enumerate(named):
            if role and role.startswith("scalar:") and _SCALARS.get(optimizer) == role[len("scalar:") :]:
                layout.scalars[role[len("scalar:") :]] = i
        unknown = sorted({r for r in named if r and r != "iterations" and not r.startswith("scalar:")} - set(roles))
        if unknown:
            layout.problem = f"the stored {optimizer} state has slots that {optimizer} does not keep ({unknown})"
            return layout
        for role in roles:
            indices = [i for i, r in enumerate(named) if r == role]
            if indices and len(indices) != n:
                layout.problem = (
                    f"the stored {optimizer} state has {len(indices)} {role} slots for {n} trainable weights"
                )
                return layout
            if indices:
                layout.slots[role] = indices
    else:
        for head, slot_roles in _POSITIONAL[optimizer]:
            if len(shapes) == head + len(slot_roles) * n:
                break
        else:
            layout.problem = (
                f"the stored {optimizer} state has {len(shapes)} arrays, which fits no known layout "
                f"for {n} trainable weights"
            )
            return layout
        layout.iterations = 0 if head else None
        if head == 2 and optimizer in _SCALARS:
            layout.scalars[_SCALARS[optimizer]] = 1
        for index, role in enumerate(slot_roles):
            indices = list(range(head + index * n, head + (index + 1) * n))
            if role == "velocity_hat" and any(tuple(shapes[j]) != tuple(s) for j, s in zip(indices, trainable_shapes)):
                continue  # Keras 2.2.4 without amsgrad: shape-(1,) placeholders, no state
            layout.slots[role] = indices
    for role, indices in layout.slots.items():
        mismatched = [
            (i, tuple(shapes[j]), tuple(s))
            for i, (j, s) in enumerate(zip(indices, trainable_shapes))
            if tuple(shapes[j]) != tuple(s)
        ]
        if mismatched:
            i, got, want = mismatched[0]
            weight = f"weight {trainable_names[i]!r}" if trainable_names else f"trainable weight #{i}"
            layout.problem = (
                f"the stored {optimizer} {role} slot of {weight} has shape {got}, but the weight has {want}"
            )
            layout.slots = {}
            return layout
    return layout


def read_optimizer_state(optimizer, arrays, trainable_shapes, names=None, trainable_names=None):
    """Map a stored optimizer state (Keras 1/2, tf.keras, tf_keras or Keras 3 layout) onto Keras 3 roles.

    Args:
        optimizer: the optimizer's class name from the training config (``"Adam"``, ``"SGD"``, ...).
        arrays: the stored ``optimizer_weights`` arrays, in order.
        trainable_shapes: the shapes of the model's trainable weights, in order.
        names: the stored ``weight_names``, where the writer's names say each array's role.
        trainable_names: the trainable weights' names, in the same order, for messages.

    Returns:
        An :class:`OptimizerState`; ``problem`` says why the state cannot be used (then ``slots`` is empty).

    Example:
        >>> state = read_optimizer_state("Adam", [np.int64(7), np.ones(2), np.zeros(2)], [(2,)])
        >>> state.iterations, [role for role in state.slots], state.problem
        (7, ['momentum', 'velocity'], None)
    """
    layout = slot_layout(optimizer, [np.shape(a) for a in arrays], trainable_shapes, names, trainable_names)
    state = OptimizerState(optimizer, problem=layout.problem)
    if layout.problem is None:
        if layout.iterations is not None:
            state.iterations = int(np.asarray(arrays[layout.iterations]).reshape(-1)[0])
        state.slots = {role: [np.asarray(arrays[i]) for i in indices] for role, indices in layout.slots.items()}
        state.scalars = {
            name: float(np.asarray(arrays[i]).reshape(-1)[0])
            for name, i in layout.scalars.items()
            if np.asarray(arrays[i]).size == 1
        }
    return state


#: The classes whose update rule the writers of Keras 1/2 and tf.keras up to TF 2.10 computed differently from
#: Keras 3, and the faithful class mgpu-io builds for each (``mgpu_io>Legacy…``, :mod:`mgpu_io.keras.optimizers`).
LEGACY_CLASSES = {"RMSprop": "LegacyRMSprop", "Adagrad": "LegacyAdagrad", "Nadam": "LegacyNadam"}
_WHY = {
    "RMSprop": "epsilon outside the square root",
    "Adagrad": "epsilon outside the square root",
    "Nadam": "the momentum schedule 0.96^(0.004·t)",
}
KERAS2_RULES, KERAS3_RULES = "Keras 2", "Keras 3"


@dataclass
class UpdateRule:
    """Which update rule a stored optimizer trained by, and how mgpu-io rebuilds it in Keras 3.

    Attributes:
        optimizer: the stored class name (``"RMSprop"``).
        family: :data:`KERAS2_RULES` (Keras 1/2, tf.keras up to TF 2.10, tf_keras' legacy optimizers) or
            :data:`KERAS3_RULES` (tf.keras 2.11+'s optimizers, tf_keras' default ones, Keras 3).
        faithful: the ``mgpu_io>`` class that computes the writer's rule, or ``None`` where Keras 3's own class does.
        decay: Keras 2's time-based ``decay`` (``lr / (1 + decay·t)``), rebuilt as Keras 3's ``InverseTimeDecay``.
    """

    optimizer: str
    family: str
    faithful: Optional[str] = None
    decay: Optional[float] = None

    def describe(self, faithful=True):
        """One line for a report: the rule kept (``faithful=False``: where Keras 3's own class is written)."""
        text = f"{self.optimizer} by {self.family}'s rule"
        if self.faithful and faithful:
            text += f" (mgpu_io>{self.faithful}: {_WHY[self.optimizer]})"
        elif not self.faithful:
            text += f" (Keras 3's {self.optimizer} computes it)"
        else:
            text = (
                f"{self.optimizer} by Keras 3's rule, not the writer's ({self.family}: {_WHY[self.optimizer]}): "
                f"Keras 3's own class is written so that plain Keras 3 loads it"
            )
        if self.decay:
            text += f"; decay={self.decay:g} as InverseTimeDecay from the stored step"
        return text


def _writer_version(keras_version):
    try:
        return tuple(int(part) for part in str(keras_version or "").split("-")[0].split(".")[:2])
    except ValueError:
        return None


def update_rule(optimizer_config, keras_version):
    """The update rule the writer of ``keras_version`` trained ``optimizer_config`` by (``None`` for a class that is
    not one of Keras' own). Before TF 2.11 every optimizer of Keras and tf.keras is the legacy kind; from TF 2.11
    the new optimizers (TF 2.11+, tf_keras' default, Keras 3) store ``use_ema`` and ``weight_decay`` (and TF 2.11+
    ``is_legacy_optimizer``), the legacy ones (``tf_keras.optimizers.legacy``) neither.

    Example:
        >>> update_rule({"class_name": "RMSprop", "config": {"lr": 0.001, "decay": 1e-3}}, "2.2.4").describe()
        "RMSprop by Keras 2's rule (mgpu_io>LegacyRMSprop: epsilon outside the square root); decay=0.001 as InverseTimeDecay from the stored step"
        >>> update_rule({"class_name": "Adam", "config": {"use_ema": False}}, "2.15.0").family
        'Keras 3'
        >>> update_rule({"class_name": "Adam", "config": {"learning_rate": 0.1}}, "2.21.0").family  # tf_keras' legacy
        'Keras 2'
    """
    if not isinstance(optimizer_config, dict):
        return None
    name = str(optimizer_config.get("class_name") or "")
    name = name[len("Custom>") :] if name.startswith("Custom>") else name
    if name not in _SLOTS:
        return None
    config = optimizer_config.get("config") if isinstance(optimizer_config.get("config"), dict) else {}
    legacy = config.get("is_legacy_optimizer")
    if legacy is None:  # the optimizers of TF 2.11+, tf_keras and Keras 3 all store `use_ema`; the legacy ones never
        version = _writer_version(keras_version)
        legacy = (version is not None and version < (2, 11)) or not ({"use_ema", "weight_decay"} & set(config))
    if not legacy:
        return UpdateRule(name, KERAS3_RULES)
    faithful = LEGACY_CLASSES.get(name)
    if name == "RMSprop" and float(config.get("momentum") or 0) > 0:
        faithful = None  # tf.keras' RMSprop with momentum: TF's ApplyRMSProp, epsilon inside, as Keras 3
    decay = config.get("decay") if name != "Nadam" else None  # tf.keras' Nadam stores its schedule_decay as decay
    try:
        decay = float(decay) if decay else None
    except (TypeError, ValueError):
        decay = None
    return UpdateRule(name, KERAS2_RULES, faithful, decay or None)
