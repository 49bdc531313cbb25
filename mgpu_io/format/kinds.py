"""The one vocabulary of input kinds: every name for what an input is, and what each kind means to the callers.

:func:`mgpu_io.format.door.describe` decides which kind a path is (the only place that does); this module holds the
table it answers from, so that the entry points, the reports and the command line all spell a kind one way. A
kind is a plain string (it is printed in ``--json`` output and stored in reports).

Example:
    >>> KINDS[TF_CHECKPOINT].name, KINDS[TF_CHECKPOINT].file_type
    ('a TF-format checkpoint', 'weights')
    >>> hdf5_kind({"model_config", "keras_version"}, {"model_weights"})
    'legacy-model'
"""

import re
from dataclasses import dataclass
from typing import Optional

LEGACY_MODEL = "legacy-model"
LEGACY_WEIGHTS = "legacy-weights"
KERAS_ARCHIVE = "keras-archive"
KERAS3_WEIGHTS = "keras3-weights"
JSON_CONFIG = "json-config"
YAML_CONFIG = "yaml-config"
SAVEDMODEL = "savedmodel"
TF_CHECKPOINT = "tf-checkpoint"
FOLDER = "folder"
STUB = "failed-save-stub"
MISSING = "missing"
UNKNOWN = "unknown"
#: What the first bytes alone say of a file that :func:`~mgpu_io.format.door.describe` then reads further.
HDF5, ZIP = "hdf5", "zip"

#: ``InspectReport.file_type`` values (the public JSON field ``file_type``).
MODEL_FILE, WEIGHTS_FILE, CONFIG_FILE, STUB_FILE, KERAS_FILE, KERAS3_WEIGHTS_FILE = (
    "model",
    "weights",
    "config",
    "stub",
    "keras",
    "keras3-weights",
)


@dataclass(frozen=True)
class Kind:
    """One kind of input: ``name`` as a user names it, ``file_type`` as a report names what it holds (``None``:
    nothing to report), ``handled_by``: the call (and command) that reads it, for a refusal."""

    name: str
    file_type: Optional[str] = None
    handled_by: str = ""


#: Every kind, as the door describes it.
KINDS = {
    LEGACY_MODEL: Kind(
        "a legacy Keras full-model HDF5 file",
        MODEL_FILE,
        "mgpu_io.load_model(path), mgpu_io.unwrap(path, 'clean.h5') or mgpu_io.inspect(path)",
    ),
    LEGACY_WEIGHTS: Kind(
        "a legacy Keras weights-only HDF5 file",
        WEIGHTS_FILE,
        "it holds weights only: mgpu_io.load_model('model.json', weights=path), "
        "mgpu_io.transfer_weights(path, model), or mgpu_io.unwrap(path, 'weights.h5')",
    ),
    KERAS_ARCHIVE: Kind(
        "a Keras 3 .keras archive",
        KERAS_FILE,
        "it needs no repair: load it with mgpu_io.load_model(path) or keras.models.load_model(path) "
        "(`mgpu-io inspect` describes it, `mgpu-io verify` compares it)",
    ),
    KERAS3_WEIGHTS: Kind(
        "a Keras 3 .weights.h5 file",
        KERAS3_WEIGHTS_FILE,
        "it needs no repair: build the model in code and call model.load_weights(path) (`mgpu-io inspect` describes it)",
    ),
    JSON_CONFIG: Kind(
        "a JSON model config",
        CONFIG_FILE,
        "it holds an architecture only: mgpu_io.load_model(path, weights='weights.h5'), or "
        "mgpu_io.unwrap(path, 'clean.json')",
    ),
    YAML_CONFIG: Kind(
        "a YAML model config",
        CONFIG_FILE,
        "it holds an architecture only: mgpu_io.load_model(path, weights='weights.h5'), or "
        "mgpu_io.unwrap(path, 'clean.json')",
    ),
    SAVEDMODEL: Kind(
        "a TF SavedModel folder",
        MODEL_FILE,
        "read it with mgpu_io.unwrap or mgpu_io.load_model (it needs TensorFlow)",
    ),
    TF_CHECKPOINT: Kind(
        "a TF-format checkpoint",
        WEIGHTS_FILE,
        "it holds weights only: mgpu_io.load_model('model.json', weights=path), or "
        "mgpu_io.unwrap(path, 'weights.h5', config='model.json')",
    ),
    FOLDER: Kind(
        "a folder of files",
        None,
        "a folder is repaired file by file with mgpu_io.unwrap(folder, output_folder) (`mgpu-io unwrap DIR OUT`)",
    ),
    STUB: Kind(
        "a failed-save stub (no model inside)",
        STUB_FILE,
        "nothing can be recovered from it; look for weights saved with save_weights instead",
    ),
    MISSING: Kind("nothing (no such file or folder)"),
    UNKNOWN: Kind("a file that is no Keras format"),
}

#: Each kind as a user names it.
KIND_NAMES = {kind: entry.name for kind, entry in KINDS.items()}
#: The kinds that the format core repairs file by file (``unwrap`` to a legacy file, ``inspect``).
LEGACY_KINDS = (LEGACY_MODEL, LEGACY_WEIGHTS, JSON_CONFIG, YAML_CONFIG)
#: The kinds read as data by :mod:`mgpu_io.tf` first (it needs TensorFlow).
TENSORFLOW_KINDS = (SAVEDMODEL, TF_CHECKPOINT)
#: The kinds that hold weights and no architecture.
WEIGHTS_ONLY_KINDS = (LEGACY_WEIGHTS, TF_CHECKPOINT)
#: The kinds that hold an architecture and no weights.
CONFIG_KINDS = (JSON_CONFIG, YAML_CONFIG)
#: Keras 3's own files: they need no repair.
KERAS3_KINDS = (KERAS_ARCHIVE, KERAS3_WEIGHTS)

#: The groups of a Keras 3 ``save_weights`` file.
_KERAS3_GROUPS = {"layers", "vars", "optimizer", "_layer_checkpoint_dependencies"}


def hdf5_kind(attributes, groups):
    """The kind of an HDF5 file from the names of its root attributes and groups: the one rule that tells a legacy
    full model (``model_config``), legacy weights (``layer_names``), a Keras 3 weights file (its groups only) and a
    failed-save stub (``keras_version`` only) apart. :data:`UNKNOWN` for anything else.

    Example:
        >>> hdf5_kind({"layer_names", "backend"}, {"dense_1"}), hdf5_kind({"keras_version"}, set())
        ('legacy-weights', 'failed-save-stub')
    """
    attributes = set(attributes)
    if "model_config" in attributes:
        return LEGACY_MODEL
    if "layer_names" in attributes or "layer_names0" in attributes:
        return LEGACY_WEIGHTS
    groups = set(groups)  # listed only here: a legacy file's root may hold thousands of groups
    if groups and groups <= _KERAS3_GROUPS and not attributes:
        return KERAS3_WEIGHTS
    if "keras_version" in attributes and not groups:
        return STUB
    return UNKNOWN


#: Schemes read as local paths.
_LOCAL_SCHEMES = ("", "file", "local")
_URL = re.compile(r"^([a-zA-Z][a-zA-Z0-9+.\-]*)://")


def is_url(path):
    """Whether ``path`` is a URL of a filesystem other than the local one (object storage: :mod:`mgpu_io.remote`).

    Example:
        >>> is_url("s3://bucket/model.h5"), is_url("model.h5"), is_url("file:///tmp/model.h5")
        (True, False, False)
    """
    found = _URL.match(str(path))
    return bool(found) and found.group(1).lower() not in _LOCAL_SCHEMES
