"""What crosses between a probe's child and its parent: messages on the pipe, and arrays in memory shared with it.

A message is a length (:data:`_FRAME`) and a pickle: the child's answer, its progress, the word that the structure
is read. Weight arrays do not cross the pipe: :func:`~mgpu_io.format.sandbox.inside.hand_over` copies them into a
``memfd`` the parent made before the fork (:class:`_Shared`), and the pickle holds where each is (:class:`_Handed`);
the parent unpickles each as a view of that memory (:func:`_loads`), so that it builds from them without opening
the file again.
"""

import contextlib
import io
import mmap
import os
import pickle
import select
import struct

from mgpu_io.errors import NotAModelFile

_FRAME = struct.Struct("<Q")  # each message on the pipe: its length, then its pickle


def _send(fd, answer):
    try:
        data = _dumps(answer)
    except Exception:
        data = pickle.dumps(("error", NotAModelFile(str(answer[1]))))
    view = memoryview(_FRAME.pack(len(data)) + data)
    while view:
        view = view[os.write(fd, view) :]


def _messages(fd, time_left, shared=None):
    """The child's messages, as ``(kind, value)``, until it closes the pipe; ``TimeoutError`` once ``time_left()``
    (seconds, or ``None`` for no limit) runs out."""
    buffer, wanted = bytearray(), _FRAME.size  # a bytearray grows in place: a large answer is not copied per read
    while True:
        left = time_left()
        if left is not None and left <= 0:
            raise TimeoutError
        ready, _, _ = select.select([fd], [], [], left)
        if not ready:
            continue
        chunk = os.read(fd, max(1 << 16, min(wanted - len(buffer), 1 << 24)))
        if not chunk:
            return
        buffer += chunk
        while len(buffer) >= _FRAME.size:
            (size,) = _FRAME.unpack_from(buffer)
            wanted = _FRAME.size + size
            if len(buffer) < wanted:
                break
            yield _loads(bytes(buffer[_FRAME.size : wanted]), shared)  # our own child's answer, our own pipe
            del buffer[:wanted]
            wanted = _FRAME.size


# --- arrays handed back through memory shared with the parent -----------------------------------------------------

#: Arrays of at least this many bytes start on a page of their own (64 bytes, TensorFlow's alignment, for the rest).
_PAGE_FROM = 1 << 20
_ALIGNMENT = 64


class _Shared:
    """In a probe's child: the memory (a ``memfd``) the parent made before the fork, filled by
    :func:`~mgpu_io.format.sandbox.inside.hand_over`."""

    def __init__(self, fd):
        self.fd, self.size = fd, 0

    def place(self, nbytes):
        """The offset of ``nbytes`` new bytes at the end, the memory grown to hold them."""
        alignment = mmap.PAGESIZE if nbytes >= _PAGE_FROM else _ALIGNMENT
        offset = -(-self.size // alignment) * alignment
        self.size = offset + nbytes
        os.ftruncate(self.fd, self.size)
        return offset

    def write(self, value, dtype, shape):
        """Copy ``value`` (a dataset or an array) there; the :class:`_Handed` that stands for it."""
        import numpy as np

        nbytes = int(np.prod(shape, dtype=np.int64)) * dtype.itemsize
        offset = self.place(nbytes)
        if not isinstance(value, np.ndarray) and self._sent(value, dtype, offset, nbytes):
            return _Handed(offset, dtype.str, tuple(shape))
        start = offset - offset % mmap.PAGESIZE
        region = mmap.mmap(self.fd, offset - start + nbytes, offset=start)
        try:
            target = np.frombuffer(region, dtype, count=nbytes // dtype.itemsize, offset=offset - start)
            target = target.reshape(shape)
            if isinstance(value, np.ndarray):
                np.copyto(target, value, casting="no")
            else:
                value.read_direct(target)
            del target
        finally:
            with contextlib.suppress(BufferError):  # a failed read's traceback still views it: unmapped with it
                region.close()
        return _Handed(offset, dtype.str, tuple(shape))

    def _sent(self, dataset, dtype, offset, nbytes):
        """Whether the kernel copied ``dataset``'s bytes to ``offset`` here (``sendfile``, from the file's pages in
        memory to these): done where they are one plain block of the file (a contiguous dataset, no filters, the
        asked type as stored) that HDF5 opened with its default driver, and lie within the file.

        A gigabyte of weights took 0.39-0.53 s so against 0.76-1.03 s read through HDF5 into the same memory mapped
        here (page by page, each page faulted in), on this project's 2-core benchmark machine; a dataset of 4 KiB
        49 us against 96 us, of 1 MiB 0.61 ms against 1.17 ms (200 each). Anything else (and a kernel that refuses
        the call) is read by HDF5, as before.
        """
        import h5py

        location = getattr(dataset, "location", None)  # a stored weight (read.py's _StoredDataset) knows its offset
        source = dataset.offset if location is not None else dataset.id.get_offset()  # None unless one plain block
        if source is None or dtype != dataset.dtype or dataset.id.get_storage_size() != nbytes:
            return False
        file_id = h5py.h5i.get_file_id(location[0] if location is not None else dataset.id)
        if file_id.get_access_plist().get_driver() != h5py.h5fd.SEC2:  # a file in memory, split, family...
            return False
        fd = file_id.get_vfd_handle()
        if source + nbytes > os.fstat(fd).st_size:  # a block past the file's end: HDF5 says what is wrong
            return False
        try:
            os.lseek(self.fd, offset, os.SEEK_SET)
            done = 0
            while done < nbytes:
                sent = os.sendfile(self.fd, fd, source + done, nbytes - done)
                if sent == 0:
                    return False
                done += sent
        except (AttributeError, OSError):  # no sendfile, or one that takes no memfd: HDF5 reads it
            return False
        return True


class _Handed:
    """An array in the shared memory, as it crosses the pipe: where it is and what it is."""

    def __init__(self, offset, dtype, shape):
        self.offset, self.dtype, self.shape = offset, dtype, shape


def _fresh(value, dtype, shape):
    """``value``'s data in a new array, aligned to :data:`_ALIGNMENT` (whole pages from :data:`_PAGE_FROM`)."""
    import numpy as np

    nbytes = int(np.prod(shape, dtype=np.int64)) * dtype.itemsize
    if nbytes >= _PAGE_FROM:
        raw = np.frombuffer(mmap.mmap(-1, nbytes), np.uint8)  # page-aligned
    else:
        raw = np.empty(nbytes + _ALIGNMENT, np.uint8)
        raw = raw[-raw.ctypes.data % _ALIGNMENT :][:nbytes]
    array = raw.view(dtype).reshape(shape)
    if isinstance(value, np.ndarray):
        np.copyto(array, value, casting="no")
    else:
        value.read_direct(array)
    return array


def _shared_memory():
    """A new ``memfd`` for a probe's child to hand arrays back in, or ``None`` where there is none (then they cross
    the pipe)."""
    if not hasattr(os, "memfd_create"):
        return None
    try:
        return os.memfd_create("mgpu-io-arrays", getattr(os, "MFD_CLOEXEC", 0))
    except OSError:
        return None


def _close(fd):
    if fd is not None:
        os.close(fd)


class _Pickler(pickle.Pickler):
    def persistent_id(self, obj):
        if isinstance(obj, _Handed):
            return ("handed", obj.offset, obj.dtype, obj.shape)
        return None


def _dumps(answer):
    buffer = io.BytesIO()
    _Pickler(buffer).dump(answer)
    return buffer.getvalue()


def _loads(data, shared):
    """Unpickle a message of our own child; each handed-over array becomes a view of the shared memory."""
    mapping = []

    class Unpickler(pickle.Unpickler):
        def persistent_load(self, pid):
            import numpy as np

            _, offset, dtype, shape = pid
            if not mapping:
                mapping.append(mmap.mmap(shared, 0))  # the whole memory, shared: it stays while an array views it
            dtype = np.dtype(dtype)
            count = int(np.prod(shape, dtype=np.int64))
            return np.frombuffer(mapping[0], dtype, count=count, offset=offset).reshape(shape)

    return Unpickler(io.BytesIO(data)).load()
