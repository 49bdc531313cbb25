"""Read a Keras 1/2 or tf.keras optimizer state as roles that a Keras 3 optimizer can take.

Keras 2 stored an optimizer's state as one flat list in ``optimizer_weights`` (legacy-format.md §3.1): Adam
``[iterations, m_1..m_n, v_1..v_n, vhat_1..vhat_n]``, SGD ``[iterations, moment_1..moment_n]``, RMSprop
``[accumulator_1..accumulator_n]`` (2.3: with ``iterations`` first); tf.keras' optimizer v2 the same per kind
(``iter``, then all ``m``, then all ``v``). Keras 3 names each of its optimizer variables by role
(``…_momentum``, ``…_velocity``, ``…_accumulator``, ``iteration``). This module maps one onto the other by position
and checks every shape against the model's trainable weights; it imports neither TensorFlow nor Keras.
"""

from dataclasses import dataclass, field
from typing import Dict, List, Optional

import numpy as np

# Keras 3 variable-name suffix of each Keras 2 per-weight slot, per optimizer class.
_SLOTS = {
    "Adam": ("momentum", "velocity"),
    "SGD": ("momentum",),
    "RMSprop": ("velocity",),
    "Adagrad": ("accumulator",),
}


@dataclass
class OptimizerState:
    """Slot arrays by Keras 3 role (each in trainable-weight order) and the step count, or why there are none."""

    optimizer: str
    iterations: Optional[int] = None
    slots: Dict[str, List[np.ndarray]] = field(default_factory=dict)
    problem: Optional[str] = None


def read_optimizer_state(optimizer, arrays, trainable_shapes):
    """Map a stored Keras 2 optimizer state onto Keras 3 roles.

    Args:
        optimizer: the optimizer's class name from the training config (``"Adam"``, ``"SGD"``, ...).
        arrays: the stored ``optimizer_weights`` arrays, in order.
        trainable_shapes: the shapes of the model's trainable weights, in order.

    Returns:
        An :class:`OptimizerState`; ``problem`` says why the state cannot be used (then ``slots`` is empty).

    Example:
        >>> state = read_optimizer_state("Adam", [np.int64(7), np.ones(2), np.zeros(2)], [(2,)])
        >>> state.iterations, [role for role in state.slots], state.problem
        (7, ['momentum', 'velocity'], None)
    """
    state = OptimizerState(optimizer)
    if optimizer not in _SLOTS:
        state.problem = f"mgpu-io does not translate the state of {optimizer} (only {sorted(_SLOTS)})"
        return state
    n, roles = len(trainable_shapes), _SLOTS[optimizer]
    arrays = [np.asarray(a) for a in arrays]
    layouts = [(1, len(roles)), (0, len(roles))]  # [iterations] + slots, or slots alone (Keras 2.2 RMSprop)
    if optimizer == "Adam":
        layouts.insert(1, (1, len(roles) + 1))  # + vhat (kept as shape-(1,) dummies when amsgrad is off)
    if optimizer == "SGD":
        layouts.append((1, 0))  # tf.keras v2 SGD without momentum: [iter]
    for head, slot_count in layouts:
        if len(arrays) == head + slot_count * n:
            break
    else:
        state.problem = (f"the stored {optimizer} state has {len(arrays)} arrays, which fits no known layout for "
                         f"{n} trainable weights")
        return state
    if head:
        state.iterations = int(arrays[0].reshape(-1)[0])
    for index, role in enumerate(roles[:slot_count]):
        values = arrays[head + index * n: head + (index + 1) * n]
        mismatched = [(i, v.shape, tuple(s)) for i, (v, s) in enumerate(zip(values, trainable_shapes))
                      if v.shape != tuple(s)]
        if mismatched:
            i, got, want = mismatched[0]
            state.problem = (f"the stored {optimizer} {role} #{i} has shape {got}, but trainable weight #{i} has "
                             f"shape {want}")
            state.slots = {}
            return state
        state.slots[role] = values
    return state
