"""The HDF5 work of a small file's repair alone, with no planning: a floor under `unwrap`'s cost per file.

For each file of a folder, mgpu-io's own repair is written first (untimed) and serves as a blueprint. Then, timed,
the same HDF5 calls are made through h5py's low-level API, with nothing else around them:

- read: open the input, walk its links (as the link check does), read its root attributes and parse its configs,
  and open each weight the output holds (the template's and the optimizer's) with its type, shape and offset, as
  the checks read them;
- write: make the output's groups and attributes again in an in-memory file, copy its datasets (``H5Ocopy``), take
  the image;
- sync: write the image to a new file and ``fsync`` it.

Usage: python tests/benchmarks/hdf5_floor.py FOLDER (run_benchmarks.py runs it on its folder of small files)
"""

import argparse
import json
import os
import shutil
import sys
import tempfile
import time
from pathlib import Path

import h5py
import numpy as np

import mgpu_io
from mgpu_io.format.string_attrs import read_str_list

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "support"))
from plans import planned  # noqa: E402 - tests/support, beside this folder


def blueprint(source, repaired):
    """What the timed run reads and writes for one file: the input's weight paths, and the repaired file's objects
    (groups in creation order, attributes as arrays, datasets) opened from the repaired file."""
    with planned(source) as plan:
        weights = [f"{layer.group.name}/{name}" for layer in plan.layers for name in layer.names]
        if plan.optimizer_weights is not None:
            group = plan.optimizer_weights
            weights += [f"{group.name}/{name}" for name in read_str_list(group.attrs, "weight_names")]
    out = h5py.File(repaired, "r")
    objects = [("/", None)]
    out.visititems(lambda name, obj: objects.append((name, obj.id if isinstance(obj, h5py.Dataset) else None)))
    objects.sort(key=lambda item: item[0].count("/"))  # parents first
    attributes = {name: [(key.encode(), _raw(out[name], key)) for key in out[name].attrs] for name, _ in objects}
    return [w.encode() for w in weights], objects, attributes, out


def _raw(obj, key):
    """An attribute's values as stored (variable-length strings as bytes), to be written back as they were."""
    attribute = h5py.h5a.open(obj.id, key.encode())
    value = np.empty(attribute.shape, attribute.dtype)
    attribute.read(value)
    return value


def repair(source, weights, objects, attributes, destination, times):
    start = time.perf_counter()
    fid = h5py.h5f.open(str(source).encode(), h5py.h5f.ACC_RDONLY)
    fid.links.visit(lambda name, info: None, info=True)
    root = h5py.h5g.open(fid, b"/")
    for key in (b"model_config", b"training_config", b"keras_version", b"backend", b"layer_names"):
        if h5py.h5a.exists(root, key):
            attribute = h5py.h5a.open(root, key)
            value = np.empty(attribute.shape, attribute.dtype)
            attribute.read(value)
            if key.endswith(b"config"):
                json.loads(value[()])
    for weight in weights:
        dataset = h5py.h5o.open(fid, weight)
        dataset.get_type(), dataset.shape, dataset.get_offset()
    read = time.perf_counter()
    properties = h5py.h5p.create(h5py.h5p.FILE_ACCESS)
    properties.set_fapl_core(1 << 16, False)
    image = h5py.h5f.create(b"floor", h5py.h5f.ACC_TRUNC, fapl=properties)
    made = {"/": h5py.h5g.open(image, b"/")}
    for name, dataset in objects:
        if name != "/" and dataset is None:
            made[name] = h5py.h5g.create(image, name.encode())
        elif dataset is not None:
            h5py.h5o.copy(dataset, b".", image, name.encode())
            continue
        for key, value in attributes[name]:
            h5py.h5a.create(made[name], key, h5py.h5t.py_create(value.dtype, logical=True),
                            h5py.h5s.create_simple(value.shape)).write(value)
    h5py.h5f.flush(image)
    data = image.get_file_image()
    image.close()
    fid.close()
    written = time.perf_counter()
    with open(destination, "wb") as handle:
        handle.write(data)
        handle.flush()
        os.fsync(handle.fileno())
    synced = time.perf_counter()
    for key, value in (("read", read - start), ("write", written - read), ("sync", synced - written)):
        times[key] += value


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("folder")
    args = parser.parse_args()
    files = sorted(p for p in Path(args.folder).iterdir() if p.suffix == ".h5")
    work = Path(tempfile.mkdtemp())
    times = {"read": 0.0, "write": 0.0, "sync": 0.0}
    for index, path in enumerate(files):
        mgpu_io.unwrap(path, work / f"{index}.h5", allow_plain=True)
        weights, objects, attributes, out = blueprint(path, work / f"{index}.h5")
        try:
            repair(path, weights, objects, attributes, work / f"floor-{index}.h5", times)
        finally:
            out.close()
    each = {key: value / len(files) * 1e3 for key, value in times.items()}
    print(json.dumps(dict({key: round(value, 3) for key, value in each.items()}, total=round(sum(each.values()), 3),
                          files=len(files))))
    shutil.rmtree(work)

if __name__ == "__main__":
    main()
