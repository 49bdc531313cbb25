"""Damaged and hostile files, one class at a time: each gets one clear typed error (one line from the CLI), the
input is never modified, nothing is left behind, and nothing is followed, allocated or run beyond what the file
can hold. Each file is a real fixture damaged the way the issue reports found them."""

import json
import os
import shutil

import h5py
import numpy as np
import pytest
from helpers import FIXTURES, digest, runner

import mgpu_io
from mgpu_io import MgpuIOError, NotAModelFile, WeightsMismatch
from mgpu_io.cli import app

SOURCE = FIXTURES / "k224_functional_bn_x2_full.h5"
KERNEL = "model_weights/template/d1/kernel:0"


def config_edit(change):
    def mutate(path):
        with h5py.File(path, "r+") as h5:
            config = json.loads(h5.attrs["model_config"])
            change(config)
            h5.attrs["model_config"] = json.dumps(config).encode()
    return mutate


def attribute(name, value):
    def mutate(path):
        with h5py.File(path, "r+") as h5:
            h5.attrs[name] = value
    return mutate


def replace(name, make):
    def mutate(path):
        with h5py.File(path, "r+") as h5:
            del h5[name]
            make(h5, name)
    return mutate


def deep_config(path):
    depth = 700  # json.dumps itself cannot write this: the text is built by hand
    text = '{"class_name": "Sequential", "config": {"name": "s", "layers": [' * depth + \
        '{"class_name": "Dense", "config": {"name": "d"}}' + "]}}" * depth
    with h5py.File(path, "r+") as h5:
        h5.attrs["model_config"] = text.encode()


def fletcher32_flipped(path):
    with h5py.File(path, "r+") as h5:
        data = h5[KERNEL][()]
        del h5[KERNEL]
        h5.create_dataset(KERNEL, data=data, fletcher32=True, chunks=data.shape)
        offset = h5[KERNEL].id.get_chunk_info(0).byte_offset
    with open(path, "r+b") as handle:
        handle.seek(offset)
        byte = handle.read(1)
        handle.seek(offset)
        handle.write(bytes([byte[0] ^ 0xFF]))


def bomb(path):
    with h5py.File(path, "r+") as h5:
        del h5[KERNEL]
        h5.create_dataset(KERNEL, shape=(6, 2 ** 29), dtype="float32", chunks=(1, 2 ** 20), compression="gzip")


CASES = {
    "model_config is a number": (attribute("model_config", 7), NotAModelFile, "The file is damaged"),
    "model_config is not UTF-8": (attribute("model_config", b"\xff\xfe{"), NotAModelFile, "The file is damaged"),
    "model_config is null": (attribute("model_config", b"null"), NotAModelFile, "The file is damaged"),
    "model_config is a list of strings": (attribute("model_config", [b"{}", b"{}"]), NotAModelFile,
                                          "The attribute 'model_config' is damaged"),
    "JSON NaN": (config_edit(lambda c: c["config"]["layers"][0]["config"].update(x=float("nan"))),
                 NotAModelFile, "NaN is not standard JSON"),
    "a layer without class_name": (config_edit(lambda c: c["config"]["layers"][1].pop("class_name")),
                                   NotAModelFile, "The file is damaged: planning the repair failed"),
    "layers is a number": (config_edit(lambda c: c["config"].update(layers=3)), NotAModelFile, "The file is damaged"),
    "a config 700 levels deep": (deep_config, NotAModelFile, "levels deep. Expected at most 400"),
    "a group where a weight belongs": (replace(KERNEL, lambda h5, n: h5.create_group(n)), WeightsMismatch,
                                       "is not a dataset"),
    "string weights": (replace(KERNEL, lambda h5, n: h5.create_dataset(n, data=np.array([b"ab"] * 8))),
                       NotAModelFile, "is not an array of numbers. Expected floating-point, integer or boolean "
                                      "values, as Keras stores weights. Received: strings"),
    "record weights": (replace(KERNEL, lambda h5, n: h5.create_dataset(n, data=np.zeros(3, [("a", "f4"), ("b", "i4")]))),
                       NotAModelFile, "Received: records of the fields"),
    "empty weights": (replace(KERNEL, lambda h5, n: h5.create_dataset(n, data=np.ones((0, 8), "float32"))),
                      NotAModelFile, "Received: no values"),
    "the template group is a dataset": (replace("model_weights/template", lambda h5, n: h5.create_dataset(
        n, data=np.ones(3))), WeightsMismatch, "is a dataset"),
    "weight_names deleted": (lambda p: _delete_attr(p, "model_weights/template", "weight_names"), WeightsMismatch,
                             "has no `weight_names`"),
    "a soft link": (replace(KERNEL, lambda h5, n: h5.__setitem__(n, h5py.SoftLink("/model_weights/template/d1/bias:0"))),
                    NotAModelFile, "holds a soft link at /model_weights/template/d1/kernel:0"),
    "a soft-link loop": (replace(KERNEL, lambda h5, n: h5.__setitem__(n, h5py.SoftLink(n))), NotAModelFile,
                         "holds a soft link"),
    "an external link": (replace(KERNEL, lambda h5, n: h5.__setitem__(n, h5py.ExternalLink("/etc/passwd", "/x"))),
                         NotAModelFile, "holds an external link to '/etc/passwd'"),
    "a corrupt Fletcher-32 checksum": (fletcher32_flipped, NotAModelFile, "copying the weights failed"),
    "a 12 GB compressed kernel in a small file": (bomb, NotAModelFile, "declares 12884901888 bytes in a file of"),
}


def _delete_attr(path, group, name):
    with h5py.File(path, "r+") as h5:
        del h5[group].attrs[name]


@pytest.mark.parametrize("case", CASES)
def test_each_damage_is_one_typed_error_and_nothing_changes(tmp_path, case):
    mutate, error, message = CASES[case]
    damaged = tmp_path / "in" / "damaged.h5"
    damaged.parent.mkdir()
    shutil.copyfile(SOURCE, damaged)
    mutate(damaged)
    before = digest(damaged)
    out = tmp_path / "out"
    out.mkdir()
    with pytest.raises(error, match=message.replace(".", r"\.").replace("(", r"\(")):
        mgpu_io.unwrap(damaged, out / "m.h5")
    assert issubclass(error, MgpuIOError)
    result = runner.invoke(app, ["unwrap", str(damaged), str(out / "m.h5")])
    assert result.exit_code == 1 and result.stdout == ""
    assert len(result.stderr.strip().splitlines()) == 1 and result.stderr.startswith("Error: ")
    result = runner.invoke(app, ["inspect", str(damaged)])
    assert result.exit_code in (0, 1) and "Traceback" not in result.output
    assert result.exception is None or isinstance(result.exception, SystemExit)
    assert digest(damaged) == before and os.listdir(out) == []


def test_a_huge_file_that_is_not_hdf5_is_refused_without_reading_it(tmp_path):
    huge = tmp_path / "huge.json"
    with open(huge, "wb") as handle:
        handle.write(b'{"class_name": "Model", ')
        handle.truncate(3 << 30)  # sparse: 3 GiB that cost nothing to make
    with pytest.raises(NotAModelFile, match="too large for a model config"):
        mgpu_io.inspect(huge)


# --- libhdf5 hangs and crashes: the structure is read in a child first ----------------------------------------


def test_a_reader_that_hangs_becomes_a_clear_error_within_the_time_limit(monkeypatch):
    import time

    from mgpu_io.format.sandbox import probe

    monkeypatch.setattr(probe, "TIMEOUT", 1.0)
    started = time.monotonic()
    with pytest.raises(NotAModelFile, match="did not finish within 1 s"):
        probe.probed("hanging.h5", lambda: time.sleep(30))
    assert time.monotonic() - started < 10


def test_a_reader_that_crashes_becomes_a_clear_error():
    import signal

    from mgpu_io.format import sandbox

    with pytest.raises(NotAModelFile, match=r"crashed the HDF5 library \(signal 11\)"):
        sandbox.probed("crashing.h5", lambda: os.kill(os.getpid(), signal.SIGSEGV))


def test_a_typed_error_in_the_child_is_the_same_error_here():
    from mgpu_io.format import sandbox

    def refuse():
        raise WeightsMismatch("exactly this")

    with pytest.raises(WeightsMismatch, match="^exactly this$"):
        sandbox.probed("x.h5", refuse)


def test_a_number_too_large_for_a_float_is_refused_not_written_as_infinity(tmp_path):
    config = json.loads((FIXTURES / "k224_conv1d_bilstm_x2_config.json").read_text())
    text = json.dumps(config)
    damaged = tmp_path / "config.json"
    damaged.write_text(text.replace('"units": ', '"units": 1e400', 1).replace("1e400", "1e400 ", 1) if '"units": '
                       in text else text.replace("0.001", "1e400", 1))
    with pytest.raises(NotAModelFile, match="too large for a float"):
        mgpu_io.unwrap(damaged, tmp_path / "out.json")


@pytest.mark.parametrize("dtype", ["int32", "uint8", "bool"])
def test_integer_and_boolean_weights_are_read_as_they_are(tmp_path, dtype):
    """A layer may hold integer or boolean variables (a quantizer's settings, a counter, a lookup table): the repair
    copies them as stored, values and type."""
    path = tmp_path / "ints.h5"
    shutil.copyfile(SOURCE, path)
    values = (np.arange(6 * 8).reshape(6, 8) % 3).astype(dtype)
    replace(KERNEL, lambda h5, n: h5.create_dataset(n, data=values))(path)
    mgpu_io.unwrap(path, tmp_path / "out.h5")
    with h5py.File(tmp_path / "out.h5", "r") as h5:
        kernel = h5["model_weights/d1/d1/kernel:0"]
        assert kernel.dtype == np.dtype(dtype)
        assert np.array_equal(kernel[()], values)
    assert mgpu_io.inspect(path).file_type == "model"
