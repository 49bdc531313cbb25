"""Rebuild the template's own Lambda functions from their recovered source, for a caller who trusts the file.

This is Keras' own ``safe_mode=False``, done so that it works on today's Python: where Keras would
``marshal.loads`` the stored bytecode (which fails on any other Python than the writer's, and runs whatever a
hostile file holds), mgpu-io recovers the function's *source* from the bytecode as data
(:mod:`mgpu_io.lambdas.recovery`), then compiles that source fresh here and runs it as the model runs. Each function
rebuilt is named in a warning. It is the only place in mgpu-io that compiles anything, and only ever with
``safe_mode=False`` from the caller. Bytecode that no decompiler reads is run as Keras' own ``safe_mode=False`` runs
it (``marshal.loads``, with a warning) only where the running Python itself wrote it (the decompiler program found
its marshal format, opcodes and line table to be this Python's): anywhere else Keras' way fails too ("bad marshal
data"), and it is refused, naming ``lambdas=``.

The function's module globals are what Keras 2 code of the era expected: ``K`` (Keras 2's backend API,
:mod:`mgpu_io.lambdas.backend2`), ``np`` and, on the TensorFlow backend, ``tf``; then the caller's
``custom_objects`` (Keras 2's own ``Lambda.from_config`` took the function's globals from them), and the closure
values Keras stored. A name the function needs that none of these gives is one error naming it.
"""

import re
import warnings

from mgpu_io.errors import InvalidArgument, MgpuIOWarning, Param
from mgpu_io.lambdas.recovery import INSTALL_HINT, available, function_source, python_name, recover_lambdas
from mgpu_io.lambdas.supplied import functions_param


def recovered_functions(stored_lambdas, supplied=None, custom_objects=None):
    """``{layer name: function}`` for each of the template's own Lambdas that ``supplied`` has no function for,
    rebuilt from its recovered source (a warning names each).

    Args:
        stored_lambdas: the template's :class:`~mgpu_io.lambdas.stored.LambdaLayer` s as stored (with payloads).
        supplied: the caller's ``lambdas`` (those layers are left alone).
        custom_objects: the caller's ``custom_objects``: also the recovered functions' globals, as in Keras 2.

    Raises:
        InvalidArgument: the decompilers are missing, a source cannot be recovered or compiled, or a name that
            a function needs is given nowhere.
    """
    todo = [lam for lam in stored_lambdas if lam.kind == "user" and lam.payload and lam.layer not in (supplied or {})]
    if not todo:
        return {}
    if available():
        recover_lambdas([lam for lam in todo if lam.recovered is None])
    else:
        for lam in todo:
            lam.recovered = lam.recovered or {"error": f"the decompilers are not installed ({INSTALL_HINT})"}
    namespace = base_globals()
    namespace.update(custom_objects or {})
    functions, missing, ready, keras_way = {}, {}, [], []
    for lam in todo:
        recovered = lam.recovered or {}
        if "error" in recovered and (recovered.get("formats") or []) == [_this_python()]:
            # this very Python wrote it, and no other Python's layout fits the bytes (an "or" label is not proof:
            # 3.12 bytes run on 3.11 crash the interpreter), and no decompiler reads it: as Keras loads it
            keras_way.append(lam)
            continue
        if "error" in recovered:
            raise InvalidArgument(
                problem=f"Lambda layer {lam.layer!r}'s source cannot be recovered from its bytecode "
                f"({_short(recovered['error'])})",
                parameter="lambdas",
                expected=f"bytecode of Python 2.7 or 3.5-3.13 that a decompiler reads ({INSTALL_HINT}), or that this "
                f"very Python ({_this_python()}) wrote, which runs as Keras runs it",
                received="the layer's stored function",
                fix=("Pass your own function: ", functions_param([lam.layer])),
            )
        if "tf" in (recovered.get("free_names") or []) and "tf" not in namespace:
            calls = sorted(set(re.findall(r"\btf(?:\.\w+)+", recovered.get("body") or ""))) or ["tf"]
            raise InvalidArgument(
                problem=f"Lambda layer {lam.layer!r} calls TensorFlow ({', '.join(calls)}), which runs on Keras' "
                "TensorFlow backend only",
                parameter="lambdas",
                expected="KERAS_BACKEND=tensorflow",
                received=f"the {base_backend()} backend",
                fix=(
                    "Load it with the TensorFlow backend, or port the function to keras.ops and pass ",
                    functions_param([lam.layer]),
                ),
            )
        closure = recovered.get("closure_values") or dict(zip(recovered.get("closure") or [], lam.closure or []))
        needed = [name for name in recovered.get("free_names") or [] if name not in namespace]
        needed += [name for name in recovered.get("closure") or [] if name not in closure and name not in namespace]
        if needed:
            missing[lam.layer] = needed
            continue
        ready.append((lam, recovered, dict(namespace, **closure)))
    if missing:
        names = list(dict.fromkeys(name for needed in missing.values() for name in needed))
        where = "; ".join(f"{layer} uses {', '.join(needed)}" for layer, needed in missing.items())
        raise InvalidArgument(
            problem="The recovered Lambda functions use names that the file does not hold",
            parameter="custom_objects",
            expected=f"a value for each of {names}",
            received=where,
            fix=(
                "Pass them as Keras 2 did: ",
                Param("custom_objects", text=f"custom_objects={{{', '.join(repr(name) + ': ...' for name in names)}}}"),
                ", or write the functions with `mgpu-io lambdas FILE -o my_lambdas.py`, define the names there and "
                "pass ",
                Param("lambdas", "my_lambdas.py"),
            ),
        )
    for lam, recovered, scope in ready:  # nothing is compiled before every name is known
        functions[lam.layer] = _compiled(lam, recovered, scope)
    for lam in keras_way:
        functions[lam.layer] = _as_keras_loads_it(lam, namespace)
    return functions


def recovered_output_shapes(stored_lambdas, rebuilt, custom_objects=None):
    """``{layer name: function}``: the output-shape function stored beside each Lambda in ``rebuilt`` (rebuilt
    from the file by :func:`recovered_functions`), compiled from its recovered source, as Keras' ``safe_mode=False``
    keeps it (a warning names each). A shape function whose source was not recovered is left out: Keras 3 then
    traces the Lambda's function for its shape, as for any repaired file."""
    import ast

    found = {}
    for lam in stored_lambdas:
        source = (lam.recovered or {}).get("output_shape")
        if lam.layer not in rebuilt or not source or "error" in (lam.recovered or {}):
            continue
        try:
            tree = ast.parse(source.strip())
        except SyntaxError:
            continue
        statement = tree.body[0] if len(tree.body) == 1 else None
        if isinstance(statement, ast.Expr) and isinstance(statement.value, ast.Lambda):
            text, name = f"_output_shape = {source.strip()}", "_output_shape"
        elif isinstance(statement, ast.FunctionDef):
            text, name = source, statement.name
        else:
            continue
        warnings.warn(
            MgpuIOWarning(
                f"safe_mode=False: Lambda layer {lam.layer!r} keeps its output_shape function, recovered from the "
                f"file: {' '.join(source.split())[:120]}"
            ),
            stacklevel=4,
        )
        scope = dict(base_globals(), **(custom_objects or {}))
        exec(compile(text, f"<output_shape of Lambda {lam.layer} recovered from the file>", "exec"), scope)  # trusted
        found[lam.layer] = scope[name]
    return found


def _this_python():
    import sys

    return f"{sys.version_info[0]}.{sys.version_info[1]}"


def _as_keras_loads_it(lam, namespace):
    """The stored function as Keras' ``safe_mode=False`` builds it (``python_utils.func_load``): its bytecode
    unmarshalled, with the stored defaults and closure and the globals Keras 2 code expects. Only for bytecode this
    very Python wrote, which no decompiler reads, and only for a caller who trusts the file."""
    import marshal
    import types

    from mgpu_io.lambdas.stored import decode_payload

    data = decode_payload(lam.payload)
    warnings.warn(
        MgpuIOWarning(
            f"safe_mode=False: Lambda layer {lam.layer!r} runs the bytecode stored in the file, as Keras does: this "
            f"Python ({_this_python()}) wrote it and no decompiler reads it ({_short(lam.recovered['error'])})"
        ),
        stacklevel=4,
    )
    try:
        code = marshal.loads(data)  # the caller trusts the file (safe_mode=False), as Keras' own func_load
        if not isinstance(code, types.CodeType):
            raise TypeError(f"a {type(code).__name__}, not code")
        closure = None
        if code.co_freevars:
            values = list(lam.closure or [])
            if len(values) != len(code.co_freevars):
                raise ValueError(f"{len(values)} closure values for {len(code.co_freevars)} free names")
            closure = tuple(types.CellType(value) for value in values)
        defaults = tuple(lam.defaults) if isinstance(lam.defaults, (list, tuple)) else None
        return types.FunctionType(code, dict(namespace), code.co_name, defaults, closure)
    except (ValueError, TypeError, EOFError) as error:
        raise InvalidArgument(
            problem=f"Lambda layer {lam.layer!r}'s stored bytecode does not load on this Python ({error})",
            parameter="lambdas",
            expected="the bytecode Keras wrote",
            received="the layer's stored function",
            fix=("Pass your own function: ", functions_param([lam.layer])),
        ) from None


def base_backend():
    from mgpu_io.lambdas import backend2

    return backend2.backend()


def base_globals():
    """The globals Keras 2 code expects: ``K`` and ``backend`` (Keras 2's backend on Keras 3), ``np``, ``keras``,
    ``layers`` (Keras 3's, which has Keras 2's layers and merge functions), ``math``, and ``tf`` on the TensorFlow
    backend; and Keras 3 code's ``ops`` (``from keras import ops``)."""
    import math

    import numpy as np

    from mgpu_io.lambdas import backend2

    # the module aliases Keras 2 code imported, onto what they meant for the writer: `from keras import backend as K`,
    # `from keras import layers` (Keras 2's layers and merge functions are Keras 3's), `import math`
    namespace = {"K": backend2, "np": np, "numpy": np, "keras": backend2.keras, "backend": backend2, "math": math,
                 "layers": backend2.keras.layers, "ops": backend2.keras.ops}  # fmt: skip
    if backend2.backend() == "tensorflow":
        import tensorflow as tf

        namespace["tf"] = tf
    return namespace


def _compiled(lam, recovered, namespace):
    name = python_name(lam.layer)
    source = function_source(recovered, recovered.get("defaults"), name=name)
    warnings.warn(
        MgpuIOWarning(
            f"safe_mode=False: Lambda layer {lam.layer!r} runs its function recovered from the file "
            f"(written on Python {recovered.get('python')}): {_one_line(recovered)}"
        ),
        stacklevel=4,
    )
    try:
        code = compile(source, f"<Lambda {lam.layer} recovered from the file>", "exec")
    except SyntaxError as error:
        raise InvalidArgument(
            problem=f"Lambda layer {lam.layer!r}'s recovered source does not compile on this Python ({error.msg}, "
            f"line {error.lineno})",
            parameter="lambdas",
            expected="Python 3 source",
            received=_one_line(recovered),
            fix=(
                "Write it with `mgpu-io lambdas FILE -o my_lambdas.py`, port it, and pass ",
                Param("lambdas", "my_lambdas.py"),
            ),
        ) from None
    scope = dict(namespace)
    exec(code, scope)  # the caller trusts the file (safe_mode=False); this is the recovered source, compiled here
    return _naming_errors(scope[name], lam.layer, _one_line(recovered))


def _naming_errors(function, layer, what):
    """``function``, raising one error that names the layer, the function and the call where it raises."""
    import functools

    @functools.wraps(function)
    def called(*args, **kwargs):
        try:
            return function(*args, **kwargs)
        except InvalidArgument:
            raise
        except Exception as error:  # the user's code: any error it raises, named
            shapes = ", ".join(_describe(a) for a in args)
            keywords = ", ".join(f"{k}={_describe(v)}" for k, v in kwargs.items())
            raise InvalidArgument(
                problem=f"Lambda layer {layer!r}'s function raised {type(error).__name__}: {str(error).strip()[:300]}",
                parameter="lambdas",
                expected="it to run on Keras 3 as it ran for its writer",
                received=f"the call {what} with ({', '.join(p for p in (shapes, keywords) if p)})",
                fix=("Port it to Keras 3 (keras.ops) and pass it: ", functions_param([layer])),
            ) from error

    return called


def _describe(value):
    shape = getattr(value, "shape", None)
    if shape is not None:
        return f"a tensor of shape {tuple(shape)}"
    if isinstance(value, (list, tuple)):
        return "[" + ", ".join(_describe(v) for v in value) + "]"
    text = repr(value)
    return text if len(text) <= 40 else text[:37] + "..."


def _short(error):
    text = str(error).split(": 3.8:")[0]
    return text if len(text) <= 200 else text[:197] + "..."


def _one_line(recovered):
    source = function_source(recovered, recovered.get("defaults"))
    text = " ".join(line.strip() for line in source.splitlines() if line.strip())
    return text if len(text) <= 160 else text[:157] + "..."
