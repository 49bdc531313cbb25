"""Write what a checkpoint or SavedModel holds as a legacy Keras HDF5 file: the :class:`ConversionPlan` worked out without
reading any value, then each value read from the bundle and written, atomically."""

import contextlib
import json
from dataclasses import dataclass, field
from pathlib import Path
from typing import Optional

from mgpu_io._version import __version__
from mgpu_io.errors import NotAModelFile, OutputError, UnsupportedModel, first_line
from mgpu_io.tf.bundle import open_reader, reader_errors


@dataclass
class Weight:
    """One dataset to write: its legacy name (``d1/kernel:0``) and where its value is in the bundle."""

    name: str
    key: str
    shape: tuple[int, ...]
    dtype: str


@dataclass
class ConversionPlan:
    """A legacy HDF5 file to write, worked out from a SavedModel or checkpoint without reading any weight value.

    ``root_attrs`` and ``weights_attrs`` values are written as given: ``str`` as variable-length UTF-8, ``bytes`` as
    variable-length ASCII, the two encodings tf.keras 2.x used (docs/tf2-writers.md §2).
    """

    prefix: str
    full_model: bool
    layers: list[tuple[str, list[Weight]]]
    root_attrs: dict[str, object]
    weights_attrs: dict[str, object]
    optimizer: Optional[list[Weight]] = None
    summary: dict = field(default_factory=dict)


def provenance(kind, tensorflow_version):
    """The ``mgpu_io`` attribute: which tool converted which kind of input (Keras itself never reads it)."""
    return json.dumps(
        {"tool": f"mgpu-io {__version__}", "converted_from": kind, "tensorflow_version": tensorflow_version}
    ).encode("utf8")


def check_h5_output(output, inputs=()):
    """Refuse an output that is a folder, one of the input's own files, or in a folder that does not exist."""
    output = Path(output)
    if output.is_dir():
        raise OutputError(
            problem="The output is a folder",
            parameter="output",
            expected="a file name ending in .h5",
            received=f"output={output}",
            fix=f"Name the file to write, for example {output / 'model.h5'}",
        )
    if not output.parent.is_dir():
        raise OutputError(
            problem="The output's folder does not exist",
            parameter="output",
            expected="an existing folder",
            received=f"output={output}",
            fix=f"Create {output.parent} first",
        )
    resolved = output.resolve()
    for source in inputs:
        if Path(source).exists() and Path(source).resolve() == resolved:
            raise OutputError(
                problem="The output is one of the input's own files",
                parameter="output",
                expected="a new file",
                received=f"output={output}",
                fix="Write the converted file elsewhere; the input is never changed",
            )


def write_conversion(tf, plan, output, path, what="TF checkpoint"):
    """Read each planned value from the bundle and write the legacy HDF5 file at ``output``, atomically.

    Every value is checked against its planned shape and dtype once more as it is read.

    Raises:
        NotAModelFile: a value cannot be read (a data file is missing, truncated or fails its checksum).
        OutputError: ``output`` cannot be written.
    """
    import h5py
    import numpy as np

    from mgpu_io.format.string_attrs import write_str_list
    from mgpu_io.format.write import atomic_path

    reader = open_reader(tf, plan.prefix, path, what)

    def value(weight):
        try:
            array = np.asarray(reader.get_tensor(weight.key))
        except reader_errors(tf) as error:
            raise NotAModelFile(
                problem=f"The {what} is damaged: the value of {weight.name!r} cannot be read",
                parameter="filepath",
                expected="the .data files that belong to the index, intact",
                received=f"filepath={path} ({first_line(error, 300)})",
                fix="Copy the whole checkpoint again from its source",
            ) from None
        if array.shape != tuple(weight.shape) or array.dtype.name != weight.dtype:
            raise NotAModelFile(
                problem=f"The {what} is damaged: the value of {weight.name!r} is not what its index declares",
                parameter="filepath",
                expected=f"shape {tuple(weight.shape)} {weight.dtype}",
                received=f"shape {array.shape} {array.dtype} in filepath={path}",
                fix="Restore it from its source",
            )
        return array

    # libhdf5 cannot name a file that has none yet (atomic_path's O_TMPFILE): hand it the open file instead.
    with atomic_path(output) as temporary, contextlib.ExitStack() as stack:
        named = not str(temporary).startswith("/proc/self/fd/")
        handle = None if named else stack.enter_context(open(temporary, "w+b"))
        h5 = stack.enter_context(h5py.File(handle if handle is not None else temporary, "w"))
        for key, text in plan.root_attrs.items():
            if text is not None:
                h5.attrs[key] = text
        root = h5.create_group("model_weights") if plan.full_model else h5
        write_str_list(root.attrs, "layer_names", [name for name, _ in plan.layers])
        for key, text in plan.weights_attrs.items():
            if text is not None:
                root.attrs[key] = text
        for name, weights in plan.layers:
            group = root.create_group(name)
            write_str_list(group.attrs, "weight_names", [weight.name for weight in weights])
            for weight in weights:
                group.create_dataset(weight.name, data=value(weight))
        if plan.optimizer:
            group = h5.create_group("optimizer_weights")
            write_str_list(group.attrs, "weight_names", [weight.name for weight in plan.optimizer])
            for weight in plan.optimizer:
                group.create_dataset(weight.name, data=value(weight))


def unique_names(layer, weights, path):
    """Refuse two weights of one layer group with the same name: HDF5 (and Keras' loader) cannot keep both."""
    seen = set()
    for weight in weights:
        if weight.name in seen:
            raise UnsupportedModel(
                problem=f"Two weights of layer {layer!r} have the same name {weight.name!r}",
                parameter="filepath",
                expected="distinct names, as a legacy HDF5 file keys weights by name",
                received=f"filepath={path}",
                fix="Save the model in the TensorFlow that wrote it with model.save('model.h5') instead",
            )
        seen.add(weight.name)


def ascii_attr(text):
    """An attribute value stored as variable-length ASCII, as tf.keras 2.x stored most of them (``None`` stays)."""
    return str(text).encode("utf8") if text is not None else None
