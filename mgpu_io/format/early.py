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
    >>> early_modules("unwrap", ["fixtures/files", "repaired"])[0]
    'mgpu_io.format.batch'
"""

import os

#: What each command's server imports: ``inspect`` reads its file in a child of that server, and ``unwrap`` of one
#: file repairs it there into a legacy file; the command's own process imports neither h5py nor NumPy for it.
READERS = {
    "inspect": ("mgpu_io.format.inspect_reader", "mgpu_io.tf.recognise"),
    "unwrap": ("mgpu_io.api", "mgpu_io.format.unwrap", "mgpu_io.format.options", "mgpu_io.tf.recognise"),
}
#: What the server of ``unwrap`` of a folder into legacy files imports: it forks the folder's workers, which repair
#: file after file (:mod:`mgpu_io.format.batch`), while the command's own process lists the folder and supervises.
FOLDER_WORKERS = ("mgpu_io.format.batch", "mgpu_io.format.unwrap", "mgpu_io.tf.recognise")
#: Outputs that Keras builds (door.py's ``KERAS_SUFFIX`` and ``EXPORT_FORMATS``; a test keeps the two alike): the
#: command imports Keras for them, which imports h5py and NumPy, so a server importing them beside it works twice.
BUILT_BY_KERAS = (".keras", ".onnx", ".tflite")


def early_modules(command, arguments, format=None):
    """The modules ``command``'s fork server imports as the command line starts, or ``None`` where it starts none:
    a command without one, and an ``unwrap`` of anything but a file or a folder into legacy files (an output that
    Keras builds, or a ``format``, imports the repair here anyway; a bucket is read here). ``arguments``: those
    after the command's name."""
    if command not in READERS:
        return None
    if command != "unwrap":
        return READERS[command]
    if format is not None or not _legacy_output(arguments):
        return None
    source = _first_path(arguments)
    if source is not None and os.path.isdir(source):
        return FOLDER_WORKERS
    return READERS[command] if source is not None and os.path.isfile(source) else None


def _legacy_output(arguments):
    """Whether no argument names an output that Keras builds."""
    return not any(argument.lower().endswith(BUILT_BY_KERAS) for argument in arguments)


def _first_path(arguments):
    """The first of ``arguments`` that names an existing path (options' values that name none, such as
    ``--jobs 4``, are passed over), or ``None``, as where a URL comes first (a bucket's source)."""
    for argument in arguments:
        if argument.startswith("-"):
            continue
        if "://" in argument:
            return None
        try:
            if os.path.exists(argument):
                return argument
        except (OSError, ValueError):  # a name the system refuses
            continue
    return None
