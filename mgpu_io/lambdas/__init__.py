"""The Lambda feature in one place: a ``Lambda`` layer's stored function, read as data, written by reference, its
source recovered and proven, and given back to Keras 3, with the h5py-only parts and the Keras parts side by side.

A floor is checked per module here, not per folder (``tests/project/test_architecture.py``, and the table in
docs/architecture.md): :data:`FLOORS` gives each module's. A ``format`` module imports what ``format/`` may (h5py,
NumPy, the standard library; no Keras, TensorFlow, typer or rich, at any depth), so that ``inspect``, ``unwrap`` to
``.h5`` and ``mgpu-io lambdas`` work on a core install; a ``keras`` module imports Keras only inside its functions
(through ``keras/_compat.py``), as ``keras/`` does; a ``program`` is never imported: it is run as a separate process
under lowered limits, because it reads stored code.

Importing this package imports nothing else.

Example:
    >>> FLOORS["stored"], FLOORS["trusted"], FLOORS["_decompile"]
    ('format', 'keras', 'program')
"""

#: Each module of the package and its floor: ``format`` (h5py and the standard library), ``keras`` (Keras inside
#: functions) or ``program`` (run as a separate process, never imported).
FLOORS = {
    "stored": "format",  # the Lambda layers of a config, read as data (a strings scan of their bytecode); references
    "by_reference": "format",  # the lambdas conversion's work; the functions Keras itself wrote, defined once as code
    "recovery": "format",  # the source recovered from the bytecode, by running the decompiler program
    "writer_pythons": "format",  # which Pythons a writer's keras_version ran on
    "source_module": "format",  # `mgpu-io lambdas`: the recovered functions as a reviewable module
    "proof": "format",  # `mgpu-io lambdas --check`: a recovered source compiled on the writer's own Python
    "supplied": "keras",  # the caller's functions (lambdas=) and Keras' own, as Keras 3's custom_objects
    "trusted": "keras",  # safe_mode=False: a recovered source compiled and run
    "backend2": "keras",  # Keras 2's backend API (K.*) on keras.ops, for recovered functions
    "_decompile": "program",  # the decompiler program (uncompyle6, decompyle3, _decompile39)
    "_decompile39": "program",  # mgpu-io's own decompiler for Python 3.9-3.13, loaded by _decompile only
    "_recompile": "program",  # compiles a recovered source on the writer's Python and compares the code
}
