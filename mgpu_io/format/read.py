"""Open a legacy Keras file read-only and say what it holds, with h5py and the standard library only.

Three kinds of input carry a model: a full-model HDF5 file (``model.save``), a weights-only HDF5 file
(``model.save_weights`` or ``ModelCheckpoint(save_weights_only=True)``) and a JSON config (``model.to_json()``).
:func:`open_stored` is the one reader: it opens a file once, tells the kinds apart, decodes their attributes whichever writer made them, and refuses everything
else with a message that names what it found.
"""

import contextlib
import json
from dataclasses import dataclass, field
from pathlib import Path
from typing import Optional

import h5py

from mgpu_io.errors import FailedSaveStub, NotAModelFile
from mgpu_io.format.attrs import read_str, read_str_list

MODEL, WEIGHTS, CONFIG = "model", "weights", "config"


@dataclass
class StoredModel:
    """What one input file holds. HDF5 handles stay valid only inside :func:`open_stored`'s ``with`` block."""

    path: Path
    file_type: str
    model_config: Optional[dict] = None
    training_config: Optional[dict] = None
    keras_version: Optional[str] = None
    backend: Optional[str] = None
    h5: Optional[h5py.File] = field(default=None, repr=False)
    weights_root: Optional[h5py.Group] = field(default=None, repr=False)

    @property
    def layer_names(self):
        """Names of the top-level layers that have a group in the weights root, in ``model.layers`` order."""
        return read_str_list(self.weights_root.attrs, "layer_names") if self.weights_root is not None else []

    def weight_names(self, layer_name):
        """The ``weight_names`` of one layer group, in the order the writer stored them."""
        return read_str_list(self.weights_root[layer_name].attrs, "weight_names")

    @property
    def optimizer_weights(self):
        """The ``optimizer_weights`` group of a full-model file, or ``None``."""
        if self.h5 is None or self.file_type != MODEL:
            return None
        return self.h5.get("optimizer_weights")


@contextlib.contextmanager
def open_stored(path):
    """Open ``path`` read-only and yield a :class:`StoredModel`.

    Raises:
        NotAModelFile: the file is missing, truncated, not HDF5 and not JSON, or holds no Keras model.
        FailedSaveStub: the file is what a failed Keras <= 2.1.6 ``save()`` leaves behind.

    Example:
        >>> with open_stored("fixtures/files/k122_kuza55_x2_weights.h5") as stored:
        ...     stored.file_type, stored.keras_version, stored.layer_names
        ('weights', None, ['inp', 'lambda_1', 'lambda_2', 'template', 'merge_1'])
    """
    path = Path(path)
    if not path.is_file():
        what = "a folder" if path.is_dir() else "nothing"
        raise NotAModelFile(
            f"Cannot read the input file. Expected a Keras .h5 file or a JSON config. "
            f"Received: filepath={path} ({what} is there). Check the path."
        )
    if not h5py.is_hdf5(path):
        yield _read_json_config(path)
        return
    try:
        h5 = h5py.File(path, "r")
    except OSError as exc:
        raise NotAModelFile(
            f"The HDF5 file is damaged and cannot be opened (truncated or partly overwritten?). "
            f"Expected a complete Keras .h5 file. Received: filepath={path} ({_first_line(exc)}). "
            f"Copy the file again from its source; a partial download or a full disk leaves files like this."
        ) from None
    try:
        yield _read_hdf5(path, h5)
    finally:
        h5.close()


def _read_hdf5(path, h5):
    attrs = h5.attrs
    if "model_config" in attrs:
        model_config = _decode_json(path, read_str(attrs, "model_config"), "model_config")
        training = read_str(attrs, "training_config")
        weights_root = h5.get("model_weights")
        if weights_root is None:
            raise NotAModelFile(
                f"The file has a model config but no `model_weights` group. Expected a full Keras model file. "
                f"Received: filepath={path} (groups: {sorted(h5.keys())}). The weights are not in this file; "
                f"look for a weights file saved beside it."
            )
        return StoredModel(
            path=path,
            file_type=MODEL,
            model_config=model_config,
            training_config=_decode_json(path, training, "training_config") if training else None,
            keras_version=read_str(attrs, "keras_version") or read_str(weights_root.attrs, "keras_version"),
            backend=read_str(attrs, "backend") or read_str(weights_root.attrs, "backend"),
            h5=h5,
            weights_root=weights_root,
        )
    if "layer_names" in attrs or "layer_names0" in attrs:
        return StoredModel(
            path=path,
            file_type=WEIGHTS,
            keras_version=read_str(attrs, "keras_version"),
            backend=read_str(attrs, "backend"),
            h5=h5,
            weights_root=h5,
        )
    if "keras_version" in attrs and not len(h5):
        raise FailedSaveStub(
            f"The file is the stub that a failed `save()` of a multi-GPU model leaves behind: it holds no model "
            f"config and no weights. Expected a Keras model or weights file. Received: filepath={path} "
            f"(keras_version={read_str(attrs, 'keras_version')}, root attributes only). Nothing can be recovered "
            f"from it; Keras <= 2.1.6 cannot save a multi_gpu_model whole. Look for weights saved with "
            f"`save_weights` or `ModelCheckpoint(save_weights_only=True)` instead."
        )
    raise NotAModelFile(
        f"The HDF5 file holds no Keras model. Expected a `model_config` attribute (full model) or `layer_names` "
        f"(weights only). Received: filepath={path} (root attributes: {sorted(attrs.keys())}, groups: "
        f"{sorted(h5.keys())[:10]}). Check that this is the file Keras wrote."
    )


def _read_json_config(path):
    try:
        text = path.read_text(encoding="utf8")
    except UnicodeDecodeError:
        text = None
    if text is None or not text.lstrip().startswith(("{", "[")):
        what = "binary data" if text is None else "text that is not JSON"
        raise NotAModelFile(
            f"The file is neither HDF5 nor a JSON config. Expected a Keras .h5 file or the JSON of "
            f"`model.to_json()`. Received: filepath={path} ({what}, {path.stat().st_size} bytes). "
            f"Check the path; a Keras 3 `.keras` file is a zip archive that needs no repair."
        )
    config = _decode_json(path, text, "the file")
    if not (isinstance(config, dict) and "class_name" in config and "config" in config):
        raise NotAModelFile(
            f"The JSON file is not a Keras model config. Expected an object with `class_name` and `config` "
            f"keys, as `model.to_json()` writes it. Received: filepath={path} (top-level "
            f"{type(config).__name__}{' with keys ' + str(sorted(config)[:6]) if isinstance(config, dict) else ''})."
            f" Pass the architecture JSON that was saved beside the weights."
        )
    return StoredModel(
        path=path,
        file_type=CONFIG,
        model_config=config,
        keras_version=config.get("keras_version"),
        backend=config.get("backend"),
    )


def _decode_json(path, text, what):
    try:
        return json.loads(text)
    except ValueError as exc:
        raise NotAModelFile(
            f"The JSON in {what} cannot be parsed. Expected valid JSON as Keras writes it. "
            f"Received: filepath={path} ({exc}). The file is damaged or was edited by hand; restore it from "
            f"its source."
        ) from None


def _first_line(exc):
    return str(exc).splitlines()[0] if str(exc) else type(exc).__name__
