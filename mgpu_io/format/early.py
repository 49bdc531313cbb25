"""What a command's fork server imports when the command line starts it first (:func:`early_modules`): the
library's answer from the command's name and arguments alone, before anything else is imported.

The console script (``mgpu_io.cli.run``) forks the fork server before it imports typer
(:func:`mgpu_io.format.sandbox.start_early`): the server imports what reads the file while the command line imports
itself, and the file is read in a child of that server. This module imports only the standard library's ``os``, so
that asking costs nothing before the fork.

Example:
    >>> early_modules("unwrap", ["fixtures/files/k224_siamese_x2_full.h5", "clean.h5"])[:2]
    ('mgpu_io.api', 'mgpu_io.format.unwrap')
    >>> early_modules("unwrap", ["fixtures/files/k224_siamese_x2_full.h5", "clean.keras"]) is None
    True
"""

import os

#: What each command's server imports: ``inspect`` reads its file in a child of that server, and ``unwrap`` of one
#: file repairs it there into a legacy file; the command's own process imports neither h5py nor NumPy for it.
READERS = {
    "inspect": ("mgpu_io.format.inspect_reader", "mgpu_io.tf.recognise"),
    "unwrap": ("mgpu_io.api", "mgpu_io.format.unwrap", "mgpu_io.format.options", "mgpu_io.tf.recognise"),
}
#: Outputs that Keras builds (door.py's ``KERAS_SUFFIX`` and ``EXPORT_FORMATS``; a test keeps the two alike): the
#: command imports Keras for them, which imports h5py and NumPy, so a server importing them beside it works twice.
BUILT_BY_KERAS = (".keras", ".onnx", ".tflite")


def early_modules(command, arguments, format=None):
    """The modules ``command``'s fork server imports as the command line starts, or ``None`` where it starts none:
    a command without one, and an ``unwrap`` of anything but one file into a legacy file (a folder's workers import
    the repair themselves; an output that Keras builds, or a ``format``, imports it here anyway). ``arguments``:
    those after the command's name."""
    if command not in READERS:
        return None
    if command == "unwrap" and (format is not None or not _legacy_output(arguments) or not _names_a_file(arguments)):
        return None
    return READERS[command]


def _legacy_output(arguments):
    """Whether no argument names an output that Keras builds."""
    return not any(argument.lower().endswith(BUILT_BY_KERAS) for argument in arguments)


def _names_a_file(arguments):
    """Whether the first of ``arguments`` that names an existing path names a regular file (options' values that
    name none, such as ``--jobs 4``, are passed over)."""
    for argument in arguments:
        if argument.startswith("-"):
            continue
        try:
            if os.path.exists(argument):
                return os.path.isfile(argument)
        except (OSError, ValueError):  # a name the system refuses
            continue
    return False
