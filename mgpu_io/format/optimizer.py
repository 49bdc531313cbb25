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

# Keras 3 variable-name suffix of each Keras 2 per-weight slot, per optimizer class.
_SLOTS = {
    "Adam": ("momentum", "velocity"),
    "SGD": ("momentum",),
    "RMSprop": ("velocity",),
    "Adagrad": ("accumulator",),
}
#: The optimizer classes whose stored state is translated (a subclass keeps its base class's slots).
TRANSLATED_OPTIMIZERS = tuple(_SLOTS)


@dataclass
class OptimizerState:
    """Slot arrays by Keras 3 role (each in trainable-weight order) and the step count, or why there are none."""

    optimizer: str
    iterations: Optional[int] = None
    slots: dict[str, list[np.ndarray]] = field(default_factory=dict)
    problem: Optional[str] = None


@dataclass
class SlotLayout:
    """Where each part of a stored optimizer state is: the index of the step counter, and per Keras 3 role the
    indices of its slots in trainable-weight order (or ``problem``: why the state cannot be laid out)."""

    iterations: Optional[int] = None
    slots: dict[str, list[int]] = field(default_factory=dict)
    problem: Optional[str] = None


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
}
_COUNTERS = ("iteration", "iterations", "iter")


def _named_roles(names):
    """The role of each stored optimizer array by its name (``"iterations"``, a Keras 3 role, or ``None`` for a
    learning-rate variable), or ``None`` when the names do not say (Keras 2's ``training/Adam/Variable_3:0``)."""
    roles = []
    for name in names:
        parts = re.sub(r":\d+$", "", name).split("/")
        leaf = parts[-1]
        if leaf in _COUNTERS:
            roles.append("iterations")
        elif leaf == "learning_rate":
            roles.append(None)
        elif len(parts) >= 3 and leaf in _NAMED:  # tf.keras v2: Adam/dense/kernel/m
            roles.append(_NAMED[leaf])
        elif len(parts) >= 3 and parts[1] in _NAMED:  # tf_keras: Adam/m/dense/kernel
            roles.append(_NAMED[parts[1]])
        else:  # Keras 3: adam/dense_kernel_momentum
            role = next(
                (r for r in ("velocity_hat", "momentum", "velocity", "accumulator") if leaf.endswith("_" + r)), False
            )
            if not role:
                return None
            roles.append(role)
    return roles


def slot_layout(optimizer, shapes, trainable_shapes, names=None):
    """Lay out a stored optimizer state (the shapes of its arrays, and their names where they say it) onto Keras 3
    roles, checking every slot's shape against the model's trainable weights. Reads no data.

    Example:
        >>> layout = slot_layout("Adam", [(), (2,), (2,)], [(2,)])
        >>> layout.iterations, layout.slots, layout.problem
        (0, {'momentum': [1], 'velocity': [2]}, None)
        >>> slot_layout("Adam", [(), (), (2,), (2,)], [(2,)], ["iteration", "learning_rate", "d_k_momentum",
        ...                                                      "d_k_velocity"]).slots
        {'momentum': [2], 'velocity': [3]}
    """
    layout = SlotLayout()
    if optimizer not in _SLOTS:
        layout.problem = (
            f"mgpu-io does not translate the state of {optimizer} (only {sorted(_SLOTS)} and their subclasses; pass "
            f"the class in custom_objects= if it derives from one of them)"
        )
        return layout
    n, roles = len(trainable_shapes), _SLOTS[optimizer]
    named = _named_roles(names) if names is not None and len(names) == len(shapes) else None
    if named is not None:
        counters = [i for i, role in enumerate(named) if role == "iterations"]
        layout.iterations = counters[0] if counters else None
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
        layouts = [(1, len(roles)), (0, len(roles))]  # [iterations] + slots, or slots alone (Keras 2.2 RMSprop)
        if optimizer == "Adam":
            layouts.insert(1, (1, len(roles) + 1))  # + vhat (kept as shape-(1,) dummies when amsgrad is off)
        if optimizer == "SGD":
            layouts.append((1, 0))  # tf.keras v2 SGD without momentum: [iter]
        for head, slot_count in layouts:
            if len(shapes) == head + slot_count * n:
                break
        else:
            layout.problem = (
                f"the stored {optimizer} state has {len(shapes)} arrays, which fits no known layout "
                f"for {n} trainable weights"
            )
            return layout
        layout.iterations = 0 if head else None
        for index, role in enumerate(roles[:slot_count]):
            layout.slots[role] = list(range(head + index * n, head + (index + 1) * n))
    for role, indices in layout.slots.items():
        mismatched = [
            (i, tuple(shapes[j]), tuple(s))
            for i, (j, s) in enumerate(zip(indices, trainable_shapes))
            if tuple(shapes[j]) != tuple(s)
        ]
        if mismatched:
            i, got, want = mismatched[0]
            layout.problem = (
                f"the stored {optimizer} {role} #{i} has shape {got}, but trainable weight #{i} has shape {want}"
            )
            layout.slots = {}
            return layout
    return layout


def read_optimizer_state(optimizer, arrays, trainable_shapes, names=None):
    """Map a stored optimizer state (Keras 1/2, tf.keras, tf_keras or Keras 3 layout) onto Keras 3 roles.

    Args:
        optimizer: the optimizer's class name from the training config (``"Adam"``, ``"SGD"``, ...).
        arrays: the stored ``optimizer_weights`` arrays, in order.
        trainable_shapes: the shapes of the model's trainable weights, in order.
        names: the stored ``weight_names``, where the writer's names say each array's role.

    Returns:
        An :class:`OptimizerState`; ``problem`` says why the state cannot be used (then ``slots`` is empty).

    Example:
        >>> state = read_optimizer_state("Adam", [np.int64(7), np.ones(2), np.zeros(2)], [(2,)])
        >>> state.iterations, [role for role in state.slots], state.problem
        (7, ['momentum', 'velocity'], None)
    """
    layout = slot_layout(optimizer, [np.shape(a) for a in arrays], trainable_shapes, names)
    state = OptimizerState(optimizer, problem=layout.problem)
    if layout.problem is None:
        if layout.iterations is not None:
            state.iterations = int(np.asarray(arrays[layout.iterations]).reshape(-1)[0])
        state.slots = {role: [np.asarray(arrays[i]) for i in indices] for role, indices in layout.slots.items()}
    return state
