"""Which Pythons a Keras file's writer ran on, from the ``keras_version`` it recorded.

A Lambda's bytecode is that of the writer's Python; several Pythons may read the same bytes, so the version that
:mod:`mgpu_io.lambdas.recovery` proves from the bytes is checked against the ones the writer could have run on. The
ranges are those of the writers' own releases on PyPI (the Pythons their wheels were built for): standalone Keras
1.x-2.3 (Python 2.7, 3.5-3.8), tf.keras of TensorFlow 1.x-2.x (its ``keras_version`` is TensorFlow's Keras API
version: ``2.1.6-tf`` ... ``2.4.0``, then from TensorFlow 2.6 the TensorFlow version), tf_keras 2.15+ and Keras 3.

Example:
    >>> writer_pythons("2.10.0")
    ['3.7', '3.8', '3.9', '3.10']
    >>> writer_pythons("2.2.4")
    ['2.7', '3.5', '3.6', '3.7', '3.8']
    >>> writer_pythons(None) is None
    True
"""

import re

_ALL = ["2.7", "3.5", "3.6", "3.7", "3.8", "3.9", "3.10", "3.11", "3.12", "3.13", "3.14"]
#: keras_version (major, minor) -> the Pythons its writers' wheels were built for (a union where two writers share
#: a version: standalone Keras 2.4 and tf.keras of TensorFlow 2.2-2.5 both wrote "2.4.0").
_RANGES = {
    (2, 4): ("3.5", "3.9"),  # TensorFlow 2.2-2.5 (standalone Keras 2.4 too)
    (2, 5): ("3.6", "3.9"),
    (2, 6): ("3.6", "3.9"),
    (2, 7): ("3.7", "3.9"),
    (2, 8): ("3.7", "3.10"),
    (2, 9): ("3.7", "3.10"),
    (2, 10): ("3.7", "3.10"),
    (2, 11): ("3.7", "3.10"),
    (2, 12): ("3.8", "3.11"),
    (2, 13): ("3.8", "3.11"),
    (2, 14): ("3.9", "3.11"),
    (2, 15): ("3.9", "3.11"),
    (2, 16): ("3.9", "3.12"),
    (2, 17): ("3.9", "3.12"),
    (2, 18): ("3.9", "3.12"),
    (2, 19): ("3.9", "3.12"),
}


def _span(low, high):
    return _ALL[_ALL.index(low) : _ALL.index(high) + 1]


def writer_pythons(keras_version):
    """The Pythons (``["3.9", "3.10"]``) the writer of ``keras_version`` ran on, or ``None`` when not known."""
    found = re.match(r"^\s*(\d+)\.(\d+)", str(keras_version or ""))
    if not found:
        return None
    major, minor = int(found.group(1)), int(found.group(2))
    if major == 1 or (major == 2 and minor <= 3):  # standalone Keras 1.x-2.3, tf.keras of TF 1.x-2.1 ("-tf")
        return _span("2.7", "3.8")
    if major == 2 and (major, minor) in _RANGES:
        return _span(*_RANGES[(major, minor)])
    if major == 2 and minor >= 20:  # tf_keras 2.20+
        return _span("3.9", "3.14")
    if major == 3:
        return _span("3.9", "3.14")
    return None
