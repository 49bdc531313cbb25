"""Write clean legacy Keras HDF5 files and JSON configs, atomically.

The layout is the one Keras 2.2/2.3 wrote and every later loader reads (legacy-format.md §3): root attributes
``keras_version``, ``backend``, ``model_config`` and ``training_config``; a ``model_weights`` group (or the root,
for weights-only files) with ``layer_names`` and one group per layer holding ``weight_names`` and the datasets;
an ``optimizer_weights`` group. Datasets are copied inside HDF5 (``h5py.Group.copy``), never through Python memory.
"""

import contextlib
import json
import os
import tempfile
from pathlib import Path

import h5py
import numpy as np

from mgpu_io.h5attrs import write_str_list


@contextlib.contextmanager
def atomic_path(destination, suffix=".tmp"):
    """Yield a temporary path beside ``destination``; rename it over ``destination`` only on success.

    ``suffix`` is the temporary file's suffix (Keras insists on ``.keras`` when it writes its own format).

    A crash or an error leaves either the old ``destination`` or none, never a partial file.

    Example:
        >>> import tempfile, pathlib
        >>> out = pathlib.Path(tempfile.mkdtemp()) / "x.txt"
        >>> with atomic_path(out) as tmp:
        ...     _ = tmp.write_text("done")
        >>> out.read_text()
        'done'
    """
    destination = Path(destination)
    fd, name = tempfile.mkstemp(prefix=f".{destination.name}.", suffix=suffix, dir=destination.parent)
    os.close(fd)
    temporary = Path(name)
    try:
        yield temporary
        with open(temporary, "rb+") as handle:
            os.fsync(handle.fileno())
        os.replace(temporary, destination)
    finally:
        temporary.unlink(missing_ok=True)


def write_json_config(destination, model_config):
    """Write a model config as ``model.to_json()`` would, atomically."""
    with atomic_path(destination) as temporary:
        temporary.write_text(json.dumps(model_config), encoding="utf8")


class LegacyH5Writer:
    """Builds one legacy Keras HDF5 file; use :meth:`model_file` or :meth:`weights_file` as a context manager."""

    def __init__(self, h5, weights_root, keras_version, backend, progress=None):
        self.h5 = h5
        self.progress = progress
        self.weights_root = weights_root
        self._version = keras_version
        self._backend = backend
        self._layer_names = []

    @classmethod
    @contextlib.contextmanager
    def model_file(cls, path, model_config, keras_version, backend, training_config=None, provenance=None,
                   progress=None):
        with h5py.File(path, "w") as h5:
            _set_str(h5.attrs, "keras_version", keras_version)
            _set_str(h5.attrs, "backend", backend)
            h5.attrs["model_config"] = json.dumps(model_config).encode("utf8")
            if training_config is not None:
                h5.attrs["training_config"] = json.dumps(training_config).encode("utf8")
            if provenance is not None:
                h5.attrs["mgpu_io"] = json.dumps(provenance).encode("utf8")
            writer = cls(h5, h5.create_group("model_weights"), keras_version, backend, progress)
            yield writer
            writer._finish()

    @classmethod
    @contextlib.contextmanager
    def weights_file(cls, path, keras_version, backend, provenance=None, progress=None):
        with h5py.File(path, "w") as h5:
            if provenance is not None:
                h5.attrs["mgpu_io"] = json.dumps(provenance).encode("utf8")
            writer = cls(h5, h5, keras_version, backend, progress)
            yield writer
            writer._finish()

    def add_layer(self, name, weights):
        """Add a layer group. ``weights`` is a list of ``(weight name, h5py.Dataset or numpy array)``."""
        group = self.weights_root.create_group(name)
        write_str_list(group.attrs, "weight_names", [weight_name for weight_name, _ in weights])
        for weight_name, value in weights:
            _put(group, weight_name, value)
            if self.progress is not None:
                self.progress(value.nbytes if hasattr(value, "nbytes") else value.size * value.dtype.itemsize)
        self._layer_names.append(name)

    def copy_optimizer_weights(self, source_group):
        """Copy an ``optimizer_weights`` group whole, inside HDF5."""
        self.h5.copy(source_group, self.h5, name="optimizer_weights")
        if self.progress is not None:
            self.progress(group_bytes(source_group))


    def _finish(self):
        write_str_list(self.weights_root.attrs, "layer_names", self._layer_names)
        _set_str(self.weights_root.attrs, "backend", self._backend)
        _set_str(self.weights_root.attrs, "keras_version", self._version)


def _put(group, weight_name, value):
    parent, _, leaf = weight_name.rpartition("/")
    target = group.require_group(parent) if parent else group
    if isinstance(value, h5py.Dataset):
        value.file.copy(value, target, name=leaf)
    else:
        target.create_dataset(leaf, data=np.asarray(value))


def _set_str(attrs, name, value):
    if value is not None:
        attrs[name] = str(value).encode("utf8")


def group_bytes(group):
    """The bytes of all datasets under an HDF5 group."""
    sizes = []
    group.visititems(lambda _, item: sizes.append(item.size * item.dtype.itemsize) if isinstance(item, h5py.Dataset)
                     else None)
    return sum(sizes)
