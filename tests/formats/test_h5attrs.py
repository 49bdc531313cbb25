"""Every attribute encoding the historical writers produced reads back the same, and what we write, Keras reads."""

import io

import h5py
import numpy as np
import pytest

from helpers import FIXTURES, REFERENCE, needs_reference

from mgpu_io.format.string_attrs import (
    ABSENT,
    HDF5_OBJECT_HEADER_LIMIT,
    attribute,
    read_str,
    read_str_list,
    set_attr,
    write_str_list,
)


@pytest.fixture
def attrs():
    with h5py.File(io.BytesIO(), "w") as f:
        yield f.attrs


@pytest.mark.parametrize("value", ["2.2.4", b"2.2.4", np.bytes_(b"2.2.4"), np.array([b"2.2.4"])],
                         ids=["str (tf.keras)", "bytes (Keras 2)", "np.bytes_", "1-element |S array"])
def test_scalar_strings_in_every_encoding(attrs, value):
    attrs["keras_version"] = value
    assert read_str(attrs, "keras_version") == "2.2.4"


def test_an_absent_scalar_reads_as_the_default(attrs):
    assert read_str(attrs, "backend") is None
    assert read_str(attrs, "backend", "tensorflow") == "tensorflow"


@pytest.mark.parametrize("value", [
    np.array([b"d1/kernel:0", b"d1/bias:0"]),  # h5py 2: fixed-length |S
    np.array(["d1/kernel:0", "d1/bias:0"], dtype=h5py.string_dtype()),  # h5py 3: variable-length str
    [b"d1/kernel:0", b"d1/bias:0"],  # a list of bytes as h5py 3 stores it
], ids=["|S array", "vlen object array", "list of bytes"])
def test_string_lists_in_every_encoding(attrs, value):
    attrs["weight_names"] = value
    assert read_str_list(attrs, "weight_names") == ["d1/kernel:0", "d1/bias:0"]


def test_an_empty_float_array_is_an_empty_list(attrs):
    attrs["weight_names"] = np.asarray([])  # what Keras writes for a weightless layer
    assert read_str_list(attrs, "weight_names") == []


def test_chunked_lists_are_joined_in_order(attrs):
    attrs["layer_names0"] = np.array([b"a", b"b"])
    attrs["layer_names1"] = np.array([b"c"])
    assert read_str_list(attrs, "layer_names") == ["a", "b", "c"]


def test_long_lists_are_written_in_chunks_that_keras3_reads_back(attrs):
    keras_saving = pytest.importorskip("keras.src.legacy.saving.legacy_h5_format")
    names = [f"layer_{i:05d}/some/long/variable/name/kernel:0" for i in range(4000)]
    write_str_list(attrs, "weight_names", names)
    assert "weight_names" not in attrs and "weight_names1" in attrs
    assert all(attrs[key].nbytes <= HDF5_OBJECT_HEADER_LIMIT for key in attrs)
    assert read_str_list(attrs, "weight_names") == names
    with h5py.File(io.BytesIO(), "w") as f:
        write_str_list(f.attrs, "weight_names", names)
        assert keras_saving.load_attributes_from_hdf5_group(f, "weight_names") == names


def test_an_empty_list_is_written_as_keras_writes_it(attrs):
    write_str_list(attrs, "weight_names", [])
    assert attrs["weight_names"].dtype == np.float64 and attrs["weight_names"].size == 0


def stored(f, name):
    """An attribute's HDF5 type and shape (its handle closed again: libhdf5 keeps handing out an open one)."""
    attribute = h5py.h5a.open(f.id, name)
    return attribute.get_type(), attribute.shape


@pytest.mark.parametrize("value", [
    np.asarray(b"2.2.4", dtype=h5py.string_dtype("ascii")),  # how the writer stores keras_version
    np.array([b"dense_1/kernel:0", b"dense_1/bias:0"]),  # weight_names
    np.asarray([], dtype="float64"),  # a weightless layer's weight_names
    np.array(["d1/kernel:0"], dtype=h5py.string_dtype()),  # variable-length UTF-8
], ids=["vlen ascii scalar", "|S array", "empty float array", "vlen utf-8 array"])
def test_the_fast_attribute_writer_stores_what_h5pys_assignment_stores(value):
    with h5py.File(io.BytesIO(), "w") as f:
        set_attr(f.attrs, "ours", value)
        f.attrs["theirs"] = value
        assert stored(f, b"ours") == stored(f, b"theirs")
        np.testing.assert_array_equal(f.attrs["ours"], f.attrs["theirs"])
        set_attr(f.attrs, "ours", np.array([b"replaced"]))  # an existing attribute is replaced, as h5py does
        assert list(f.attrs["ours"]) == [b"replaced"]


def _same(ours, theirs):
    if isinstance(theirs, np.ndarray):
        return (type(ours) is np.ndarray and ours.dtype == theirs.dtype and ours.shape == theirs.shape
                and (ours.tolist() == theirs.tolist() or np.array_equal(ours, theirs, equal_nan=True)))
    return type(ours) is type(theirs) and (ours == theirs or (ours != ours and theirs != theirs))


@pytest.mark.parametrize("value", [
    "tf.keras's str", b"Keras 2's bytes", np.array([b"d1/kernel:0", b"d1/bias:0"]),
    np.array(["d1/kernel:0", "caf\u00e9"], dtype=h5py.string_dtype()), np.asarray(b"2.2.4", dtype=h5py.string_dtype("ascii")),
    np.asarray([], dtype="float64"), np.float32(1.5), np.arange(6).reshape(2, 3), h5py.Empty("f4"),
    np.zeros(2, dtype=np.dtype((np.float32, (3,)))), np.array([(1, 2.0)], dtype=[("a", "i4"), ("b", "f8")]),
], ids=["str", "bytes", "|S array", "vlen utf-8 array", "vlen ascii scalar", "empty float array", "float scalar",
        "int matrix", "empty dataspace", "array-typed elements", "compound"])
def test_the_fast_attribute_reader_reads_what_h5py_reads(attrs, value):
    """``attribute`` (read_str's and read_str_list's reader, issue 50) answers what ``attrs[name]`` does, whatever
    the attribute: the same type, dtype, shape and values; read twice, its types come from its cache."""
    attrs["value"] = value
    for _ in range(2):
        ours, theirs = attribute(attrs, "value"), attrs["value"]
        if isinstance(theirs, h5py.Empty):
            assert isinstance(ours, h5py.Empty) and ours.dtype == theirs.dtype
        else:
            assert _same(ours, theirs), (ours, theirs)
    assert attribute(attrs, "absent") is ABSENT and attribute({"value": 1}, "value") == 1


@needs_reference
def test_the_fast_attribute_reader_reads_every_attribute_of_the_fixtures_and_reference_files_as_h5py_does():
    """Every attribute of every fixture and of ../shared/reference's files reads alike through ``attribute`` and
    through h5py (22,675 of them when written)."""
    paths = sorted(FIXTURES.parent.rglob("*.h5")) + sorted(REFERENCE.rglob("*.h5"))
    compared = 0
    for path in paths:
        try:
            h5 = h5py.File(path, "r")
        except OSError:  # the damaged files the tests make unreadable on purpose
            continue
        with h5:
            groups = [h5]
            h5.visititems(lambda _, obj: groups.append(obj) if isinstance(obj, (h5py.Group, h5py.Dataset)) else None)
            for obj in groups:
                for name in obj.attrs:
                    assert _same(attribute(obj.attrs, name), obj.attrs[name]), (path, obj.name, name)
                    compared += 1
    assert compared > 10000
