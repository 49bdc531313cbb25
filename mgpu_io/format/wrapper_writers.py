"""The registry of wrapper writers: who built data-parallel wrappers, and how their files can be recognised.

A wrapper is always recognised by its graph (:mod:`mgpu_io.format.detect`); a writer record only names it, from the
slice layers' plain ``arguments`` (never from their stored code) and, in weights-only files that have no graph, from
the slice layers' default names. To add a writer, add one :class:`Writer` to :data:`WRITERS`
(docs/architecture.md; a test walks this registry against the docs).
"""

import re
from dataclasses import dataclass, replace
from typing import Optional


@dataclass(frozen=True)
class Writer:
    """One writer of wrapper files.

    Attributes:
        name: the stable name reported by ``inspect`` (``variant``) and ``--json``.
        display: how people know it.
        slice_arguments: the key sets of its slice Lambdas' ``arguments`` (``{"i", "parts"}`` for Keras).
        index_key, parts_key: which argument holds the replica index and the replica count.
        module_contains: a text that the slice Lambda's stored ``module`` holds for this writer (tf.keras shares
            Keras' arguments; its module is ``tensorflow.python.keras.utils.multi_gpu_utils``).
        slice_names: the default names of its slice layers (weights-only files list only names).
        files: what its files look like (legacy-format.md's section).
    """

    name: str
    display: str
    slice_arguments: tuple[frozenset[str], ...] = ()
    index_key: Optional[str] = None
    parts_key: Optional[str] = None
    module_contains: Optional[str] = None
    slice_names: str = r"$^"
    files: str = ""

    def matches(self, keys, modules):
        if frozenset(keys) not in self.slice_arguments:
            return False
        return self.module_contains is None or any(self.module_contains in module for module in modules)


KERAS = Writer(
    name="keras",
    display="keras.utils.multi_gpu_model",
    slice_arguments=(frozenset({"i", "parts"}),),
    index_key="i",
    parts_key="parts",
    slice_names=r"lambda(_\d+)?",
    files="Keras 2.0.9-2.3.1: slices lambda_1.. with arguments {i, parts}, module keras.utils.multi_gpu_utils "
    "(legacy-format.md 1.1-1.3)",
)
TF_KERAS = replace(  # Keras' algorithm and arguments; only the slices' module tells them apart
    KERAS,
    name="tf.keras",
    display="tf.keras.utils.multi_gpu_model",
    module_contains="tensorflow",
    files="TF 1.x-2.3: Keras' algorithm, module tensorflow.python.keras.utils.multi_gpu_utils (legacy-format.md 1.4-1.5)",
)
KUZA55 = Writer(
    name="kuza55",
    display="kuza55 make_parallel",
    slice_arguments=(frozenset({"idx", "parts"}),),
    index_key="idx",
    parts_key="parts",
    slice_names=r"lambda(_\d+)?",
    files="keras-extras make_parallel: slices with {idx, parts}, merges merge_1.. (legacy-format.md 2)",
)
AVOLKOV1 = Writer(
    name="avolkov1",
    display="avolkov1 make_parallel",
    slice_arguments=(frozenset({"ngpus", "part"}), frozenset({"ngpus", "part", "dev"})),
    index_key="part",
    parts_key="ngpus",
    slice_names=r"stage_cpuSliceIn\d+_Dev\d+",
    files="keras_experiments make_parallel: slices stage_cpuSliceIn<k>_Dev<r> with {ngpus, part[, dev]} "
    "(legacy-format.md 2)",
)
GENERIC = Writer(
    name="generic",
    display="data-parallel wrapper of an unknown writer",
    files="any wrapper with the graph shape whose slice arguments name no known writer",
)

#: Every known writer, most specific first; :data:`GENERIC` is the fallback and stays last.
WRITERS = (TF_KERAS, KERAS, KUZA55, AVOLKOV1, GENERIC)
BY_NAME = {writer.name: writer for writer in WRITERS}


def identify(slice_configs, replicas):
    """The :class:`Writer` whose slices these are, or ``None`` when their arguments contradict a replica split.

    Example:
        >>> slices = [{"arguments": {"i": r, "parts": 2}, "module": "keras.utils.multi_gpu_utils"} for r in (0, 1)]
        >>> identify(slices, 2).name
        'keras'
        >>> identify([dict(s, module="tensorflow.python.keras.utils.multi_gpu_utils") for s in slices], 2).name
        'tf.keras'
        >>> identify([{"arguments": {"i": 0, "parts": 3}}, {"arguments": {"i": 1, "parts": 3}}], 2) is None
        True
    """
    keys = {frozenset((config.get("arguments") or {}).keys()) for config in slice_configs}
    if len(keys) != 1:
        return None
    keys = keys.pop()
    modules = [str(config.get("module") or "") for config in slice_configs]
    writer = next((w for w in WRITERS if w.slice_arguments and w.matches(keys, modules)), GENERIC)
    if writer is GENERIC:
        return writer
    arguments = [config["arguments"] for config in slice_configs]
    if any(args.get(writer.parts_key) != replicas for args in arguments):
        return None
    per_replica = len(arguments) // replicas
    if [args.get(writer.index_key) for args in arguments] != [r for r in range(replicas) for _ in range(per_replica)]:
        return None
    return writer


#: Slice-layer names of every writer, for counting replicas in weights-only files.
SLICE_NAME = re.compile("^(" + "|".join(sorted({w.slice_names for w in WRITERS if w.slice_arguments})) + ")$")
