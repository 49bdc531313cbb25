"""Every attribute encoding the historical writers produced reads back the same, and what we write, Keras reads."""

import io

import h5py
import numpy as np
import pytest

from mgpu_io.format.string_attrs import HDF5_OBJECT_HEADER_LIMIT, read_str, read_str_list, set_attr, write_str_list


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
