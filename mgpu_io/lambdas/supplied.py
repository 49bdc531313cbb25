"""Give a repaired template's Lambda layers their functions back: the caller's own code, and Keras' own functions.

A repaired config refers to each Lambda's function by name (``lambdas/by_reference.py``): the layer's name for
the user's code, ``mgpu_io>NAME`` for a function Keras itself wrote. Here those names become ``custom_objects``
for Keras 3, whose safe mode stays on: nothing stored in the file runs, only functions the caller passed.
"""

import functools
import importlib
import importlib.util
from pathlib import Path

from mgpu_io.errors import InvalidArgument, MissingLambda, Param
from mgpu_io.lambdas.by_reference import PACKAGE, needed_functions
from mgpu_io.lambdas.stored import lambda_layers


def functions_param(layers, function="fn"):
    """The Lambda functions to pass for ``layers``, as a parameter of an error's field: the library names it
    ``lambdas={'pre': fn}``, the command line ``--lambda pre=MODULE:FUNCTION``.

    Example:
        >>> str(functions_param(["pre", "gate"]))
        "lambdas={'pre': fn, 'gate': fn}"
    """
    layers = tuple(layers)
    return Param("lambdas", layers, text="lambdas={" + ", ".join(f"{layer!r}: {function}" for layer in layers) + "}")


def module_param(path):
    """A Lambda module (``my_lambdas.py``) as a parameter: ``lambdas='my_lambdas.py'``, ``--lambda-module ...``."""
    return Param("lambdas", str(path))


def lambda_objects(config, lambdas=None, custom_objects=None, *, source=None, original=None):
    """The ``custom_objects`` that build ``config``: the caller's, plus each supplied Lambda function by reference.

    Args:
        config: the repaired template config (its Lambdas refer to functions by name).
        lambdas: ``{layer name: function}`` from the caller.
        custom_objects: the caller's own ``custom_objects`` (a reference already there needs no ``lambdas`` entry).
        source: the file, for messages.
        original: the template's :class:`~mgpu_io.lambdas.stored.LambdaLayer` s as stored (what messages describe).

    Raises:
        MissingLambda: a Lambda holds the user's code and no function was supplied for it.
        InvalidArgument: ``lambdas`` names a layer that is not a Lambda of the template, or a value is not callable.

    Example:
        >>> config = {"class_name": "Model", "config": {"layers": [{"class_name": "Lambda", "name": "double",
        ...     "config": {"name": "double", "function": {"class_name": "function", "config": "double"}}}]}}
        >>> objects = lambda_objects(config, {"double": lambda x: 2 * x})
        >>> objects["double"].__name__, objects["double"](21)
        ('double', 42)
    """
    from mgpu_io.keras import known  # noqa: F401  (registers mgpu_io>NAME with Keras)

    layers = {lam.layer: lam for lam in lambda_layers(config)}
    lambdas = as_mapping(lambdas, layers)
    objects = dict(custom_objects or {})
    unknown = sorted(set(lambdas) - set(layers))
    if unknown:
        raise InvalidArgument(
            problem=(Param("lambdas"), " names layers that are not Lambda layers of the template"),
            parameter="lambdas",
            expected=f"names among {sorted(layers) or 'none (the template has no Lambda layers)'}",
            received=str(unknown),
            fix=("Pass ", Param("lambdas"), " keyed by the Lambda layers' names (`mgpu-io inspect` lists them)"),
        )
    for name, function in resolved(lambdas).items():
        reference = layers[name].reference or name
        objects[reference] = named(reference, function)
    missing = [lam for lam in needed_functions(config) if lam.reference not in objects]
    missing += [lam for lam in layers.values() if lam not in missing and _unresolved_name(lam, objects)]
    if missing:
        from mgpu_io.lambdas.recovery import INSTALL_HINT  # the recoverer, imported only to say how to run it

        described = {lam.layer: lam for lam in original or ()}
        lines = [(described.get(lam.layer) or lam).describe() for lam in missing]
        where = f" in filepath={source}" if source is not None else ""
        stored = any((described.get(lam.layer) or lam).code is not None for lam in missing)
        recovery = (
            (
                f"; `mgpu-io lambdas FILE -o my_lambdas.py` writes their recovered source ({INSTALL_HINT}). Only for "
                f"a file you trust: ",
                Param("safe_mode", False),
                " rebuilds them from that source",
            )
            if stored  # a function stored by name (a .keras output) has no source in the file to recover
            else ()
        )
        raise MissingLambda(
            layers=[lam.layer for lam in missing],
            problem="The template's Lambda layers hold your own code, which mgpu-io never runs from the file (stored "
            "code allows arbitrary code execution)",
            parameter="lambdas",
            expected=f"a function for each of them{where}",
            received=f"no function for {'; '.join(lines)}",
            fix=("Pass them: ", functions_param(lam.layer for lam in missing), *recovery),
        )
    return objects


def _unresolved_name(lam, objects):
    """Whether ``lam`` refers to a function by a name that the writer stored (Keras 2 stored any callable but a
    plain function by its name: a bound method as a ``Merge`` mode) and that neither ``objects`` nor Keras 3 itself
    resolves: the user's code, as a missing bytecode function is. Only names are looked up; nothing runs."""
    import keras

    from mgpu_io.lambdas.stored import reference

    name = lam.reference
    if lam.code is not None or not name or name == lam.layer or name in objects or name.startswith(PACKAGE + ">"):
        return False
    if any(key.split(">")[-1] == name for key in keras.saving.get_custom_objects()):
        return False  # registered by the user under a package: load_model resolves it (with_registered_names)
    try:
        keras.saving.deserialize_keras_object(reference(name, builtin=True), custom_objects=objects)
    except Exception:  # Keras' "Could not locate function", whatever its type
        return True
    return False


def as_mapping(lambdas, layers=None):
    """``lambdas`` as ``{layer name: function}``: a mapping as it is; a module (or the path of a ``.py`` file, such
    as the one ``mgpu-io lambdas FILE -o my_lambdas.py`` writes) gives its function named after each of ``layers``
    (:func:`~mgpu_io.lambdas.recovery.python_name`; with no ``layers``, every function it defines).

    Raises:
        InvalidArgument: the file cannot be imported, or ``lambdas`` is neither a mapping nor a module.
    """
    import types

    if lambdas is None or isinstance(lambdas, dict):
        return dict(lambdas or {})
    from mgpu_io.lambdas.recovery import python_name  # a module's functions are named as the recoverer names them

    if isinstance(lambdas, (str, Path)) and str(lambdas).endswith(".py"):
        lambdas = import_module_file(lambdas)
    if not isinstance(lambdas, types.ModuleType):
        if hasattr(lambdas, "items"):
            return dict(lambdas.items())
        raise InvalidArgument(
            problem=(Param("lambdas"), " takes the functions of the template's Lambda layers"),
            parameter="lambdas",
            expected="a dict {layer name: function}, a module or the path of a .py file",
            received=Param("lambdas", lambdas, text=f"lambdas={lambdas!r}"),
            fix=("Pass e.g. ", module_param("my_lambdas.py"), " (written by `mgpu-io lambdas FILE -o my_lambdas.py`)"),
        )
    module = lambdas
    if layers is None:
        return {
            name: value
            for name, value in vars(module).items()
            if callable(value) and getattr(value, "__module__", None) == module.__name__ and not name.startswith("_")
        }
    return {
        layer: getattr(module, python_name(layer))
        for layer in layers
        if callable(getattr(module, python_name(layer), None))
    }


def import_module_file(path):
    """The module of the ``.py`` file at ``path`` (the caller's own code), run as Python imports it.

    Raises:
        InvalidArgument: there is no such file, or it does not import.
    """
    location = importlib.util.spec_from_file_location(Path(path).stem, path)
    if location is None or not Path(path).is_file():
        raise InvalidArgument(
            problem="The Lambda module cannot be found",
            parameter="lambdas",
            expected="a .py file",
            received=module_param(path),
            fix=f"Write it with `mgpu-io lambdas FILE -o {Path(path).name}` or fix the path",
        )
    module = importlib.util.module_from_spec(location)
    try:
        location.loader.exec_module(module)
    except Exception as error:
        raise InvalidArgument(
            problem="The Lambda module does not import",
            parameter="lambdas",
            expected="a module that defines a function per Lambda layer",
            received=(module_param(path), f" ({type(error).__name__}: {error})"),
            fix="Fix the module",
        ) from None
    return module


def resolved(lambdas):
    """``lambdas`` with every ``"module:function"`` imported, every value checked to be callable.

    Raises:
        InvalidArgument: a value is not callable, or its module or function cannot be found.
    """
    functions = {}
    for name, function in (lambdas or {}).items():
        if isinstance(function, str):
            from mgpu_io.keras.custom import import_function

            function = import_function(function, layer=name)
        if not callable(function):
            raise InvalidArgument(
                problem="A Lambda's function must be callable",
                parameter="lambdas",
                expected=f"a function for layer {name!r}",
                received=type(function).__name__,
                fix=("Pass the function itself, e.g. ", functions_param([name], "my_function")),
            )
        functions[name] = function
    return functions


def named(name, function):
    """``function`` under ``name``: Keras 3 saves it by that name (never as bytecode), so the ``.keras`` file loads
    in safe mode with ``custom_objects={name: function}``. Its signature is the function's own (Keras reads it for
    ``mask`` and ``training``)."""

    @functools.wraps(function)
    def call(*args, **kwargs):
        return function(*args, **kwargs)

    call.__name__ = call.__qualname__ = name
    call.__module__ = None
    return call
