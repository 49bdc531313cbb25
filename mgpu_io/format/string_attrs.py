"""Read and write the string attributes of legacy Keras HDF5 files.

Every historical writer stored strings differently: Keras 2 wrote ``bytes``, tf.keras wrote ``str``, h5py 2 turned
lists into fixed-length ``|S`` arrays, h5py 3 into variable-length object arrays, an empty list became an empty
float64 array, and since Keras 2.1.5 long lists are split into ``name0``, ``name1``, ... chunks to stay under the
64 KB object-header limit. These helpers accept all of them and write what Keras 2, tf_keras and Keras 3 read back.
"""

import functools

import h5py
import numpy as np

from mgpu_io.errors import NotAModelFile, UnsupportedModel

#: HDF5's object header limit, as Keras uses it to decide when to split a list attribute into chunks.
HDF5_OBJECT_HEADER_LIMIT = 64512


def _to_str(value):
    if isinstance(value, (bytes, np.bytes_)):
        return bytes(value).decode("utf8")
    text = str(value)
    try:
        text.encode("utf8")  # h5py hands undecodable variable-length strings over with surrogates
    except UnicodeEncodeError:
        raise NotAModelFile(
            problem="A string attribute is not valid UTF-8",
            expected="UTF-8 text, as Keras writes it",
            received=f"{text.encode('utf8', 'backslashreplace')[:80]!r}",
            fix="The file is damaged; restore it from its source",
        ) from None
    return text


#: What :func:`attribute` answers for an attribute that is not there.
ABSENT = object()


def attribute(attrs, name):
    """``attrs[name]`` as h5py reads it (an array, or one value), or :data:`ABSENT` where there is none.

    h5py's ``attrs[name]`` converts the attribute's HDF5 type to NumPy and back on every read, and ``name in attrs``
    before it looks the name up twice: 39 us a read of a model config, a layer list or a weight list against 25 us
    here, where the two types are made once per kind of attribute (by the HDF5 type's encoding) and the lookup is
    the read's own; a small file's repair reads about a dozen, measured on this project's 2-core benchmark machine.
    The rest is h5py's own reading, step for step (a variable-length string decoded as it decodes one); an empty
    attribute or one of array-typed elements, and anything but an h5py attribute manager (a test's dict), are read
    by h5py itself. The 22,675 attributes of the fixtures and of ``../shared/reference`` read alike both ways.

    Example:
        >>> import h5py, io
        >>> f = h5py.File(io.BytesIO(), "w"); f.attrs["backend"] = "tensorflow"
        >>> attribute(f.attrs, "backend"), attribute(f.attrs, "keras_version") is ABSENT
        ('tensorflow', True)
    """
    parent = getattr(attrs, "_id", None) if isinstance(attrs, h5py.AttributeManager) else None
    if parent is None:
        return attrs.get(name, ABSENT)
    try:
        stored = h5py.h5a.open(parent, name.encode("utf8"))
    except KeyError:
        return ABSENT
    shape = stored.shape
    if shape is None:  # an empty dataspace: h5py's Empty
        return attrs[name]
    key = stored.get_type().encode()
    found = _READ_TYPES.get(key)
    if found is None:
        dtype = stored.dtype
        if dtype.subdtype is not None:  # elements of an array type: h5py reshapes them
            return attrs[name]
        text = h5py.h5t.check_string_dtype(dtype)
        found = (dtype, h5py.h5t.py_create(dtype), bool(text and text.length is None))
        if len(_READ_TYPES) < 256:
            _READ_TYPES[key] = found
    dtype, memory, variable_text = found
    value = np.zeros(shape, dtype=dtype, order="C")
    stored.read(value, mtype=memory)
    if variable_text:
        value = np.array([b.decode("utf-8", "surrogateescape") for b in value.flat], dtype=dtype).reshape(value.shape)
    return value[()] if value.ndim == 0 else value


#: An attribute's NumPy type, its in-memory HDF5 type and whether it is variable-length text, by the encoding of its
#: stored HDF5 type (a few kinds in any real file; bounded whatever the file).
_READ_TYPES: dict = {}


def read_str(attrs, name, default=None):
    """Return the scalar string attribute ``name`` as ``str``, or ``default`` when it is absent.

    Example:
        >>> import h5py, io
        >>> f = h5py.File(io.BytesIO(), "w"); f.attrs["keras_version"] = b"2.2.4"
        >>> read_str(f.attrs, "keras_version")
        '2.2.4'
    """
    value = attribute(attrs, name)
    if value is ABSENT:
        return default
    if isinstance(value, np.ndarray):
        if value.size != 1:
            raise NotAModelFile(
                problem=f"The attribute {name!r} is damaged",
                expected="one string, as Keras writes it",
                received=f"an array of {value.size} values",
                fix="The file was not written by Keras as it is; restore it from its source",
            )
        value = value.reshape(-1)[0]
    return _to_str(value)


def read_str_list(attrs, name):
    """Return the list attribute ``name`` (possibly chunked as ``name0``, ``name1``...) as a list of ``str``.

    An absent attribute reads as ``[]``, like the empty float arrays Keras writes for weightless layers.

    Example:
        >>> import h5py, io
        >>> f = h5py.File(io.BytesIO(), "w"); f.attrs["weight_names"] = np.array([b"d1/kernel:0"])
        >>> read_str_list(f.attrs, "weight_names")
        ['d1/kernel:0']
    """
    whole = attribute(attrs, name)
    if whole is not ABSENT:
        chunks = [whole]
    else:
        chunks = []
        while (chunk := attribute(attrs, f"{name}{len(chunks)}")) is not ABSENT:
            chunks.append(chunk)
    values = []
    for chunk in chunks:
        array = np.asarray(chunk)
        if array.dtype.kind == "f":  # Keras writes np.asarray([]) for an empty list
            if array.size:
                raise NotAModelFile(
                    problem=f"The attribute {name!r} is damaged",
                    expected="a list of names, as Keras writes it",
                    received=f"{array.size} numbers",
                    fix="The file was not written by Keras as it is; restore it from its source",
                )
            continue
        values.extend(_to_str(v) for v in array.reshape(-1))
    return values


def write_str_list(attrs, name, values):
    """Write ``values`` as Keras does: a fixed-length bytes array, split into chunks above the header limit.

    Example:
        >>> import h5py, io
        >>> f = h5py.File(io.BytesIO(), "w"); write_str_list(f.attrs, "layer_names", ["inp", "d1"])
        >>> read_str_list(f.attrs, "layer_names")
        ['inp', 'd1']
    """
    encoded = [v.encode("utf8") for v in values]
    too_long = [v for v in encoded if len(v) > HDF5_OBJECT_HEADER_LIMIT]
    if too_long:
        raise UnsupportedModel(
            problem="A name is too long for a legacy HDF5 file",
            expected=f"names of at most {HDF5_OBJECT_HEADER_LIMIT} bytes",
            received=f"a name of {len(too_long[0])} bytes in {name!r}",
            fix="Write a .keras file instead",
        )
    if not encoded:
        set_attr(attrs, name, np.asarray([], dtype="float64"))
        return
    data = np.asarray(encoded)
    pieces = [data]
    while any(piece.nbytes > HDF5_OBJECT_HEADER_LIMIT for piece in pieces):
        pieces = np.array_split(data, len(pieces) + 1)
    if len(pieces) == 1:
        set_attr(attrs, name, data)
        return
    for index, piece in enumerate(pieces):
        set_attr(attrs, f"{name}{index}", piece)


def set_attr(attrs, name, data):
    """``attrs[name] = data`` for a NumPy array ``data``, stored exactly as h5py stores it, with less work.

    h5py's assignment converts the array again and builds both of its HDF5 types anew on every call; here the types
    are made once per kind of array. Twelve attributes on a new in-memory file took 87 us each this way against
    124 us (fixed-length string lists) and 110 us against 145 us (a variable-length string), measured on this
    project's 2-core benchmark machine; a small file's repair writes about a dozen. Anything but an h5py attribute
    manager (a test's dict) is assigned as usual.

    Example:
        >>> import h5py, io
        >>> f = h5py.File(io.BytesIO(), "w"); set_attr(f.attrs, "backend", np.asarray(b"tensorflow", dtype="S"))
        >>> f.attrs["backend"]
        np.bytes_(b'tensorflow')
    """
    parent = getattr(attrs, "_id", None) if isinstance(attrs, h5py.AttributeManager) else None
    if parent is None:
        attrs[name] = data
        return
    encoded = name.encode("utf8")
    if h5py.h5a.exists(parent, encoded):
        h5py.h5a.delete(parent, encoded)
    stored, memory = _hdf5_types(data.dtype)
    h5py.h5a.create(parent, encoded, stored, h5py.h5s.create_simple(data.shape)).write(data, mtype=memory)


def _hdf5_types(dtype):
    """The stored and in-memory HDF5 types of ``dtype``, as h5py's attribute assignment makes them.

    A string's encoding lives in its dtype's metadata, which dtype equality ignores: it is part of the cache key,
    and other object dtypes (references, variable-length arrays) are not cached at all.
    """
    if dtype.kind != "O":
        return _cached_hdf5_types(dtype)
    text = h5py.check_string_dtype(dtype)
    return _cached_hdf5_types(dtype, text) if text is not None else _new_hdf5_types(dtype)


def _new_hdf5_types(dtype, text=None):
    return h5py.h5t.py_create(dtype, logical=True), h5py.h5t.py_create(dtype)


_cached_hdf5_types = functools.lru_cache(maxsize=64)(_new_hdf5_types)
