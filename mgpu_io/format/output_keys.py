"""Re-key per-output values from a wrapper's output names to its template's: the one place this is done.

A wrapper was compiled against its merge layers, so a per-output loss, metric or loss weight is keyed by the merge
names (which differ from the template's output names for Siamese templates, kuza55 and avolkov1 wrappers). The
template's output at the same position is the same tensor, so keys are renamed position by position. Standard
library only: the Keras 2.2.4 callback uses it too.
"""


def rekey(value, old_names, new_names):
    """Return ``(value, renamed)``: a dict keyed by ``old_names`` re-keyed by position to ``new_names``.

    Where ``new_names`` repeats a name (a Siamese branch returned twice), a dict cannot hold both, so the value
    becomes a list in output order, which Keras accepts as well. Anything else comes back unchanged.

    Example:
        >>> rekey({"add": "mse", "nested_1": "mae", "nested_2": "mae"}, ["add", "nested_1", "nested_2"],
        ...       ["add", "nested", "nested"])
        (['mse', 'mae', 'mae'], {'nested_1': 'nested', 'nested_2': 'nested'})
        >>> rekey({"merge_1": 1.0}, ["merge_1"], ["out"])
        ({'out': 1.0}, {'merge_1': 'out'})
    """
    position = dict((name, index) for index, name in enumerate(old_names))
    if not isinstance(value, dict) or not set(value) <= set(position):
        return value, {}
    renamed = dict((name, new_names[position[name]]) for name in value)
    if len(set(new_names)) == len(new_names):
        value = dict((new_names[position[name]], entry) for name, entry in value.items())
    else:
        value = [value.get(name) for name in old_names]
    return value, dict((old, new) for old, new in renamed.items() if old != new)
