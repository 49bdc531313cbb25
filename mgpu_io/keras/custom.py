"""The caller's own code, named on the command line: custom classes (``--custom-objects MODULE:CLASS`` or
``MODULE``) and functions (``MODULE:FUNCTION``: ``--builder``, ``--lambda LAYER=MODULE:FUNCTION``).

Keras builds a template's custom layers (a DEC ``ClusteringLayer``, keras-contrib's ``InstanceNormalization``) from
the classes the caller gives in ``custom_objects``; the file stores only their names. Importing the named module runs
the caller's own code, never anything stored in a file.
"""

import importlib
import importlib.util
import inspect
import sys
from pathlib import Path

from mgpu_io.errors import InvalidArgument, Param


def given_objects(custom_objects):
    """The caller's ``custom_objects`` as a mapping: a mapping as it is; a list of ``MODULE:CLASS`` / ``MODULE`` /
    ``path/to/file.py`` specs (what the command line's ``--custom-objects`` gives) imported here
    (:func:`custom_objects_from`), as ``lambdas=`` takes named functions.

    Example:
        >>> sorted(given_objects(["collections:OrderedDict"])), given_objects({"A": int}), given_objects(None)
        (['OrderedDict'], {'A': <class 'int'>}, None)
    """
    if isinstance(custom_objects, (list, tuple)) and all(isinstance(spec, (str, Path)) for spec in custom_objects):
        return custom_objects_from(custom_objects)
    return custom_objects


def custom_objects_from(specs):
    """``{name: class}`` from the command line's ``MODULE:CLASS`` (one class) or ``MODULE`` / ``path/to/file.py``
    (every public class defined in that module) specs, in order; ``None`` for no specs. Its errors name the spec at
    fault as a field (``custom_objects='dec:Clustering'``; the command line: ``--custom-objects dec:Clustering``).

    Raises:
        InvalidArgument: a module or class cannot be found.

    Example:
        >>> sorted(custom_objects_from(["collections:OrderedDict"]))
        ['OrderedDict']
    """
    if not specs:
        return None
    objects = {}
    for spec in specs:
        spec = str(spec)
        if ":" in spec and not spec.endswith(".py"):
            module_name, _, name = spec.rpartition(":")
            found = getattr(_import_module(module_name, spec), name, None)
            if found is None or not callable(found):
                raise InvalidArgument(
                    problem="The class cannot be found",
                    parameter="custom_objects",
                    expected=f"a class {name} in {module_name}",
                    received=Param("custom_objects", spec),
                    fix="Fix the name, or give the module alone for every class it defines",
                )
            objects[name] = found
            continue
        module = _import_module(spec, spec)
        classes = {
            name: value
            for name, value in vars(module).items()
            if inspect.isclass(value) and value.__module__ == module.__name__ and not name.startswith("_")
        }
        if not classes:
            raise InvalidArgument(
                problem="The module defines no class",
                parameter="custom_objects",
                expected="a module that defines the template's custom classes",
                received=Param("custom_objects", spec),
                fix="Name the class itself as MODULE:CLASS",
            )
        objects.update(classes)
    return objects


def _import_module(module, spec):
    here = str(Path.cwd())
    sys.path.insert(0, here)
    try:
        if module.endswith(".py"):
            location = importlib.util.spec_from_file_location(Path(module).stem, module)
            if location is None or not Path(module).is_file():
                raise ImportError(f"no file {module}")
            loaded = importlib.util.module_from_spec(location)
            location.loader.exec_module(loaded)
            return loaded
        return importlib.import_module(module)
    except (ImportError, OSError) as error:
        raise InvalidArgument(
            problem="The module of the custom classes cannot be imported",
            parameter="custom_objects",
            expected="a module (or .py file) importable from the current folder",
            received=(Param("custom_objects", spec), f" ({error})"),
            fix="Run from the folder that holds it, or fix the name",
        ) from None
    finally:
        sys.path.remove(here)


def import_function(spec, parameter="builder", layer=None):
    """The function named by ``spec``: ``"module:function"`` (the module imported from the current folder first)
    or ``"path/to/file.py:function"``. This runs the caller's own module, never anything stored in a file.

    ``parameter`` is the argument that named it (``builder``), or ``layer`` the Lambda layer it is given for
    (``lambdas={layer: spec}``): errors name either.

    Raises:
        InvalidArgument: ``spec`` is not ``MODULE:FUNCTION``, or the module or the function cannot be found.
    """
    if layer is not None:
        parameter = "lambdas"
        given = Param("lambdas", {layer: str(spec)}, text=f"lambdas[{layer!r}]={str(spec)!r}")
    else:
        given = Param(parameter, str(spec), text=f"{parameter}={spec!r}")
    module_name, _, function_name = str(spec).rpartition(":")
    if not module_name or not function_name:
        raise InvalidArgument(
            problem="A function is named as MODULE:FUNCTION",
            parameter=parameter,
            expected="e.g. train:build_model or lambdas.py:preprocess",
            received=given,
            fix="Name the module (or .py file) and the function",
        )
    here = str(Path.cwd())
    sys.path.insert(0, here)
    try:
        if module_name.endswith(".py"):
            location = importlib.util.spec_from_file_location(Path(module_name).stem, module_name)
            if location is None or not Path(module_name).is_file():
                raise ImportError(f"no file {module_name}")
            module = importlib.util.module_from_spec(location)
            location.loader.exec_module(module)
        else:
            module = importlib.import_module(module_name)
        return getattr(module, function_name)
    except (ImportError, AttributeError, OSError) as error:
        raise InvalidArgument(
            problem=f"The {'builder' if parameter == 'builder' else 'function'} cannot be found",
            parameter=parameter,
            expected=f"a function {function_name} in {module_name}",
            received=(given, f" ({error})"),
            fix="Run from the folder that holds the module, or fix the name",
        ) from None
    finally:
        sys.path.remove(here)
