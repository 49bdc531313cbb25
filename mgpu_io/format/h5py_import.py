"""h5py's import without the subprocess that it starts (since h5py 3.12; seen here with 3.14): a fork and an exec of
the importing process, once per process.

As it is imported, h5py's ``h5t`` reads ``platform.uname()[4]`` (the machine, to know the platform's long double).
Indexing platform's uname result first completes it with the processor, which Python asks ``uname -p`` for, in a
subprocess: a fork of a process that has just imported NumPy, and an exec. In mgpu-io's fork server that was on the
path of every command that reads a file: `mgpu-io unwrap` of the 1 GB wrapper took 0.78-0.81 s without it against
0.85-0.87 s (medians of three sets of 12-16 runs in turn, this project's 2-core machine), a folder of 425 small
wrappers 1.2% less.

:func:`install` puts a finder first on ``sys.meta_path`` that acts on one import, ``h5py.h5t``'s: while that module
is made, ``platform.uname()`` answers with the same result indexed by its five fields (system, node, release,
version, machine: the processor is still there by name, asked for as before when someone reads it), and platform's
own function is back once the module is made; the finder then removes itself. Nothing else of the import changes.
Only mgpu-io's own processes install it (the command line's, as it starts, and the fork server's), and only while
they run one thread; a library caller's process imports h5py as it always does.

The standard library only (the command line installs it as it starts, before typer).

Example:
    >>> import subprocess, sys
    >>> script = ("import platform; asked = []; platform._Processor.get = lambda: asked.append(1) or '';"
    ...           "from mgpu_io.format import h5py_import; h5py_import.install(); import h5py; print(asked)")
    >>> subprocess.run([sys.executable, "-c", script], capture_output=True, text=True).stdout
    '[]\\n'
"""

import sys

#: The module whose import indexes ``platform.uname()`` (h5py's ``h5t``: ``_UNAME_MACHINE``).
MODULE = "h5py.h5t"


def install():
    """Make this process's first import of h5py start no subprocess (see above); nothing where h5py's ``h5t`` is
    imported already or another thread runs (``platform`` is changed for the whole process while ``h5t`` is made)."""
    import threading

    if MODULE in sys.modules or threading.active_count() > 1 or any(isinstance(f, _Finder) for f in sys.meta_path):
        return
    sys.meta_path.insert(0, _Finder())


def uninstall():
    """Remove the finder (:func:`install`), if it is there."""
    sys.meta_path[:] = [finder for finder in sys.meta_path if not isinstance(finder, _Finder)]


class _Finder:
    """The finder of ``h5py.h5t`` alone: the spec the other finders give, its module made by :class:`_Loader`."""

    def find_spec(self, name, path=None, target=None):
        if name != MODULE:
            return None
        uninstall()  # once: the finders after it find the spec
        from importlib.util import find_spec

        spec = find_spec(name)
        if spec is not None and spec.loader is not None:
            spec.loader = _Loader(spec.loader)
        return spec


class _Loader:
    """A loader that makes its module (an extension's two steps, or one) while ``platform.uname()`` answers with
    its result indexed by its five fields (:func:`_by_fields`)."""

    def __init__(self, loader):
        self.loader = loader

    def create_module(self, spec):
        return _with_uname_by_fields(self.loader.create_module, spec)

    def exec_module(self, module):
        _with_uname_by_fields(self.loader.exec_module, module)
        module.__loader__ = module.__spec__.loader = self.loader  # the import is done: as any other module's

    def __getattr__(self, name):  # what else importlib asks of a loader (get_filename, is_package, ...)
        return getattr(self.loader, name)


def _with_uname_by_fields(step, argument):
    import platform
    import threading

    own = platform.uname
    by_fields = _by_fields(own())
    if by_fields is None or threading.active_count() > 1:  # a platform module unlike CPython's (3.9-3.13), or
        return step(argument)  # a thread started since install() (TensorFlow's, say): the import as it is
    platform.uname = lambda: by_fields
    try:
        return step(argument)
    finally:
        platform.uname = own


def _by_fields(found):
    """``found`` (platform's uname result) as one whose ``[i]`` reads its five fields without asking for the
    processor, which it still has by name; ``None`` where it cannot be made."""
    import platform

    class UnameByFields(platform.uname_result):
        def __getitem__(self, key):
            return tuple.__getitem__(self, key)

    try:
        made = UnameByFields(found.system, found.node, found.release, found.version, found.machine)
        if "processor" in vars(found):  # asked for already: known by name as well
            vars(made)["processor"] = found.processor
    except Exception:
        return None
    return made
