"""What other libraries say in their messages, matched in one place.

mgpu-io tells some errors apart only by their text: libhdf5's out-of-memory, the C library's "File too large",
the dynamic loader's "failed to map", Keras' refusal of an empty cropping, TensorFlow's channels-last-only CPU
kernels, LiteRT's Flex ops. Each such text is one named :class:`Saying` here, with the library that says it, and
``tests/project/test_upstream.py`` pins every pattern against the real library's own message (raised where it can
be, else found in the library's files), so that a rewording upstream fails a test instead of a user's error.

The standard library only: every floor may ask.

Example:
    >>> said(FILE_TOO_LARGE, OSError(27, "File too large"))
    True
    >>> said(H5_NO_MEMORY, OSError("Unable to open file (file read failed)"))
    False
"""

import re
from dataclasses import dataclass


@dataclass(frozen=True)
class Saying:
    """One text of another library's messages: ``pattern`` is searched in ``str(error)``."""

    name: str
    library: str
    pattern: "re.Pattern[str]"
    meaning: str


def said(saying, error):
    """Whether ``error``'s message says ``saying``."""
    return bool(saying.pattern.search(str(error)))


def _saying(name, library, pattern, meaning, flags=0):
    return Saying(name, library, re.compile(pattern, flags), meaning)


H5_NO_MEMORY = _saying(
    "h5-no-memory", "libhdf5 (through h5py)", r"memory allocation failed", "libhdf5 ran out of memory", re.IGNORECASE
)
FILE_TOO_LARGE = _saying(
    "file-too-large",
    "the C library's strerror(EFBIG), and libhdf5's 'errno = 27'",
    r"File too large|errno = 27\b",
    "a write past the file-size limit",
)
#: libhdf5's way of naming the errno of a system call it made (``errno = 28``), the C library's text beside it.
H5_ERRNO = _saying("h5-errno", "libhdf5 (through h5py)", r"errno = (\d+)\b", "the errno of libhdf5's system call")
CANNOT_MAP = _saying(
    "cannot-map",
    "the dynamic loader (ld.so), and strerror(ENOMEM)",
    r"failed to map|cannot allocate",
    "a shared library that could not be mapped under the address-space limit",
    re.IGNORECASE,
)
NO_MODULE = _saying("no-module", "Python's import system", r"No module named", "a module that is not installed")
KERAS_UNKNOWN_BACKEND = _saying(
    "keras-unknown-backend", "Keras 3 (keras/src/backend/config.py)", r"backend", "a KERAS_BACKEND Keras does not know"
)
KERAS_EMPTY_CROP = _saying(
    "keras-empty-crop",
    "Keras 3's Cropping1D/2D/3D.compute_output_shape",
    r"calling Cropping[123]D\.call\(\)[\s\S]*should be smaller than the corresponding spatial",
    "a cropping that leaves a spatial size of 0 or less",
)
TF_CHANNELS_LAST_ONLY = _saying(
    "tf-channels-last-only",
    "TensorFlow's CPU kernels ('The Conv2D op currently only supports the NHWC tensor format on the CPU',"
    " 'Conv2DCustomBackpropInputOp only supports NHWC')",
    r"only supports (?:the )?NHWC",
    "a channels_first op that TensorFlow runs on a GPU only",
)
LITERT_FLEX = _saying(
    "litert-flex",
    "the LiteRT converter and interpreter",
    r"Select TensorFlow op|Flex",
    "TensorFlow (Flex) ops that LiteRT runs only with the Flex delegate",
)
MISSING_BUCKET = _saying(
    "missing-bucket",
    "object stores (S3's NoSuchBucket, GCS' 404 on a bucket)",
    r"bucket",
    "a bucket that does not exist",
    re.IGNORECASE,
)

#: Every saying, by name.
SAYINGS = {
    saying.name: saying
    for saying in (
        H5_NO_MEMORY,
        FILE_TOO_LARGE,
        H5_ERRNO,
        CANNOT_MAP,
        NO_MODULE,
        KERAS_UNKNOWN_BACKEND,
        KERAS_EMPTY_CROP,
        TF_CHANNELS_LAST_ONLY,
        LITERT_FLEX,
        MISSING_BUCKET,
    )
}


def strerror_code(error, codes):
    """The errno among ``codes`` whose text, as this C library words it (``os.strerror``), ``error``'s message
    quotes (h5py's messages quote libhdf5's ``error message = 'No space left on device'``), or ``None``.

    Example:
        >>> import errno
        >>> strerror_code(OSError("Unable to create file (... error message = 'No space left on device')"),
        ...               [errno.ENOSPC, errno.EROFS]) == errno.ENOSPC
        True
    """
    import os

    text = str(error)
    return next((code for code in codes if os.strerror(code) in text), None)


def h5_errno(error):
    """The errno that libhdf5 named in ``error``'s message (``errno = 28``), or ``None``."""
    found = H5_ERRNO.pattern.search(str(error))
    return int(found.group(1)) if found else None
