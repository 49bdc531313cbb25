"""The source of the template's own Lambda functions, recovered from their stored bytecode as data.

A Lambda's function is stored as CPython bytecode of the writer's Python (2.7, 3.5-3.8), which no other Python
loads ("bad marshal data"). The decompilers made for it, uncompyle6 and decompyle3 on xdis (GPL-3.0; the optional
extra ``pip install "mgpu-io[lambdas]"``), turn it back into source without running it. They run as a separate
program (``lambdas/_decompile.py``, started with ``python -I`` by
:func:`~mgpu_io.format.sandbox.programs.run_program`) under lowered limits: CPU time, address space
(:data:`MEMORY`), no file written, and a wall-clock limit (:data:`TIMEOUT`) after which it is killed. A crafted
code object gives an ``error`` for its Lambda, never a hang or an exhausted parent. Nothing recovered is compiled or
run here: :mod:`mgpu_io.lambdas.trusted` does that, and only when the caller trusts the file (``safe_mode=False``).

Without the extra, every Lambda's ``recovered`` says how to get its source (:data:`INSTALL_HINT`) and everything
else works as before.
"""

import ast
import base64
import importlib.util
import json
import keyword
import os
import re
import sys
from pathlib import Path

from mgpu_io.errors import InvalidArgument, Param
from mgpu_io.format.sandbox.programs import run_program
from mgpu_io.lambdas.stored import SCAN_LIMIT, decode_payload
from mgpu_io.lambdas.writer_pythons import writer_pythons

#: What gets the decompilers.
INSTALL_HINT = 'pip install "mgpu-io[lambdas]"'
#: Seconds (wall clock) the decompiler program may take for one file's Lambdas (``MGPU_IO_DECOMPILE_TIMEOUT``).
TIMEOUT = float(os.environ.get("MGPU_IO_DECOMPILE_TIMEOUT", "15"))
#: CPU seconds and address space the decompiler program may use (only ever lowered below the current limits).
CPU_SECONDS = 10
#: Seconds (CPU and wall clock) added to both limits per function: every candidate Python is tried on each.
PER_FUNCTION = 1.0
#: The most seconds one file's functions may take, however many there are.
MOST_SECONDS = 300
MEMORY = 1 << 30
_PROGRAM = Path(__file__).with_name("_decompile.py")
_NEEDED = ("xdis", "uncompyle6", "spark_parser")


def available():
    """Whether the decompilers (the ``lambdas`` extra) are installed; nothing is imported to find out."""
    try:
        return all(importlib.util.find_spec(name) is not None for name in _NEEDED)
    except (ImportError, ValueError):
        return False


def decompile(payloads, *, timeout=None, pythons=None):
    """Recover each stored function in ``payloads`` (the bytes of its marshalled code) in the decompiler program.

    ``pythons``: the Pythons the writer ran on (:func:`~mgpu_io.lambdas.writer_pythons.writer_pythons`), or ``None``.

    Returns one dict per payload: what ``_decompile.recover`` found (``python``, ``name``, ``args``, ``body``,
    ``globals``, ``freevars``, ...), or ``{"error": "..."}``.
    """
    if not payloads:
        return []
    if not available():
        return [{"error": f"the decompilers are not installed: {INSTALL_HINT} recovers the source"}] * len(payloads)
    request = {
        "path": [entry for entry in sys.path if entry and Path(entry).is_absolute()],
        "seconds": min(CPU_SECONDS + PER_FUNCTION * len(payloads), MOST_SECONDS),
        "memory": MEMORY,
        "functions": [{"code": base64.b64encode(data).decode("ascii"), "pythons": pythons} for data in payloads],
    }
    limit = min(TIMEOUT + PER_FUNCTION * len(payloads), MOST_SECONDS) if timeout is None else timeout
    try:
        returncode, stdout = run_program(
            [sys.executable, "-I", str(_PROGRAM)],
            json.dumps(request).encode(),
            seconds=request["seconds"],
            memory=MEMORY,
            timeout=limit,
        )
    except TimeoutError:
        return [{"error": f"the decompiler did not finish within {limit:g} s"}] * len(payloads)
    except OSError as error:
        return [{"error": f"the decompiler could not start ({error})"}] * len(payloads)
    try:
        answers = json.loads(stdout.decode("utf-8"))
    except (UnicodeDecodeError, ValueError):
        answers = None
    if returncode != 0 or not isinstance(answers, list) or len(answers) != len(payloads):
        what = f"signal {-returncode}" if returncode < 0 else f"exit code {returncode}"
        return [{"error": f"the decompiler stopped ({what}) within its limits"}] * len(payloads)
    return [answer if isinstance(answer, dict) else {"error": "no answer"} for answer in answers]


def recover_lambdas(lambdas, keras_version=None):
    """Set ``recovered`` on each of ``lambdas`` (:class:`~mgpu_io.lambdas.stored.LambdaLayer`) that stores the
    user's bytecode: ``python``, ``source`` (``lambda x: ...`` or ``def name(...): ...``, defaults included),
    ``free_names`` (module globals it needs, e.g. ``K``, ``np``, the user's own), ``closure`` (names from an
    enclosing function), or ``error``. Lambdas written by Keras itself (``known``) are left as they are.

    ``keras_version``: the file's; the Python proven from the bytes must be one its writer ran on."""
    todo = [lam for lam in lambdas if lam.kind == "user" and lam.payload is not None]
    payloads, shapes = [], []
    for lam in todo:
        payloads.append(_bytes(lam.payload))
        shapes.append(_bytes(lam.output_shape_payload))
    pythons = writer_pythons(keras_version)
    answers = iter(decompile([data for data in payloads + shapes if data], pythons=pythons))  # one program for all
    for lam, data in zip(todo, payloads):
        if data:
            lam.recovered = _recovered(next(answers), lam.defaults, lam.closure)
        else:
            lam.recovered = {"error": f"the stored function is empty or larger than {SCAN_LIMIT} bytes"}
    for lam, data in zip(todo, shapes):
        if data:
            answer = next(answers)
            if "body" in answer and "error" not in lam.recovered:
                lam.recovered["output_shape"] = function_source(answer)
    return lambdas


def _bytes(payload):
    data = decode_payload(payload) if payload else None
    return data if data is not None and len(data) <= SCAN_LIMIT else b""


def _recovered(answer, defaults, closure=None):
    if "error" in answer or "body" not in answer:
        formats = answer.get("formats")
        found = {"error": str(answer.get("error", "no source"))}
        if isinstance(formats, list):
            found["formats"] = [str(f) for f in formats]
        return found
    freevars = list(answer.get("freevars") or [])
    return {
        "closure_values": dict(zip(freevars, closure)) if closure and len(closure) == len(freevars) else None,
        "python": answer.get("python"),
        "source": function_source(answer, defaults),
        "free_names": list(answer.get("globals") or []),
        "closure": list(answer.get("freevars") or []),
        "args": list(answer.get("args") or []),
        "defaults": defaults if isinstance(defaults, list) else None,
        "name": answer.get("name"),
        "body": answer.get("body"),
        "varargs": answer.get("varargs"),
        "varkw": answer.get("varkw"),
        "kwonly": list(answer.get("kwonly") or []),
    }


def signature(answer, defaults):
    """The parameter list (``x, scale=1.0, *rest``) of a recovered function, with the defaults Keras stored."""
    args = list(answer.get("args") or [])
    values = list(defaults) if isinstance(defaults, (list, tuple)) else []
    first_default = len(args) - len(values)
    parts = [name if i < first_default else f"{name}={values[i - first_default]!r}" for i, name in enumerate(args)]
    if answer.get("varargs"):
        parts.append("*" + answer["varargs"])
    elif answer.get("kwonly"):
        parts.append("*")
    parts += list(answer.get("kwonly") or [])
    if answer.get("varkw"):
        parts.append("**" + answer["varkw"])
    return ", ".join(parts)


def _lambda_expression(body):
    """The expression of a body that is one ``return`` (what a ``lambda`` decompiles to), else ``None``."""
    text = body.strip()
    if not text.startswith("return "):
        return None
    lines = text.splitlines()
    depth = 0
    for number, line in enumerate(lines):  # one statement may span lines inside brackets (uncompyle6's tuples)
        depth += sum(line.count(c) for c in "([{") - sum(line.count(c) for c in ")]}")
        if depth <= 0 and number < len(lines) - 1:
            return None
    if len(lines) == 1:
        return text[len("return ") :]
    return " ".join(line.strip() for line in lines)[len("return ") :].replace("( ", "(").replace("[ ", "[")


def function_source(answer, defaults=None, name=None):
    """The recovered function as source: ``lambda x: ...`` for a lambda, else ``def name(...):`` and its body.
    With ``name``, always a ``def`` of that name (what ``mgpu-io lambdas`` writes, one per layer)."""
    body = answer.get("body") or ""
    expression = _lambda_expression(body)
    params = signature(answer, defaults)
    if name is None and answer.get("name") == "<lambda>" and expression is not None:
        return f"lambda {params}: {expression}" if params else f"lambda: {expression}"
    if name is None:
        name = answer.get("name") or "function"
    lines = body.strip("\n").splitlines() or ["pass"]
    return f"def {name}({params}):\n" + "\n".join(("    " + line) if line else "" for line in lines) + "\n"


def python_name(layer):
    """A Python identifier for a layer's function: ``"block/1"`` -> ``"block_1"``, ``"lambda"`` -> ``"lambda_"``.

    Example:
        >>> python_name("conv-1/scale"), python_name("1st"), python_name("lambda")
        ('conv_1_scale', '_1st', 'lambda_')
    """
    name = re.sub(r"\W", "_", str(layer)) or "_"
    if name[0].isdigit():
        name = "_" + name
    return name + "_" if keyword.iskeyword(name) else name


def check_text(check):
    """What ``mgpu-io lambdas --check`` found for one function, as a clause (``""`` when not asked)."""
    if not check:
        return ""
    if "needs" in check:
        return f"; not checked: recompiling it needs {check['needs']}, which is not installed"
    if check.get("same"):
        return f"; proven: recompiled on Python {check['python']}, its code is the stored code"
    if "error" in check:
        return f"; not checked on Python {check['python']}: {check['error']}"
    return f"; DIFFERS when recompiled on Python {check['python']}: {check.get('difference')}"


def recovered_lines(recovered):
    """What ``inspect`` prints under a Lambda about its recovered source (nothing for Keras' own functions)."""
    if not recovered:
        return []
    if "error" in recovered:
        return [f"source not recovered: {recovered['error'][:300]}"]
    lines = [f"recovered source (written on Python {recovered.get('python')}):"]
    lines += ["  " + line for line in (recovered.get("source") or "").rstrip("\n").splitlines()]
    if recovered.get("output_shape"):
        lines.append(
            f"output_shape function (Keras 3 traces the function instead): {recovered['output_shape'].strip()}"
        )
    if recovered.get("free_names") or recovered.get("closure"):
        lines.append(f"free names: {', '.join((recovered.get('free_names') or []) + (recovered.get('closure') or []))}")
    return lines


#: The module names a recovered function sees (:func:`mgpu_io.lambdas.trusted.base_globals`), as the module that
#: ``mgpu-io lambdas -o`` writes imports them.
_IMPORTS = {
    "math": "import math",
    "numpy": "import numpy",
    "np": "import numpy as np",
    "keras": "import keras",
    "ops": "from keras import ops",
    "layers": "from keras import layers",
    "tf": "import tensorflow as tf  # the functions call TensorFlow: they run on its backend only",
    "K": "from mgpu_io.lambdas import backend2 as K",
    "backend": "from mgpu_io.lambdas import backend2 as backend",
}


def module_source(path, lambdas, output="my_lambdas.py"):
    """The text of a reviewable module holding each of ``lambdas``' (``inspect``'s dicts) recovered functions, one
    ``def`` per Lambda layer named after it; a header lists the names to supply. Keras' own functions are left out
    (mgpu-io rebuilds them)."""
    user = [lam for lam in lambdas if lam.get("kind") == "user"]
    free = []
    for lam in user:
        recovered = lam.get("recovered") or {}
        stored = recovered.get("closure_values") or {}
        names = (recovered.get("free_names") or []) + [n for n in recovered.get("closure") or [] if n not in stored]
        free += [name for name in names if name not in _IMPORTS]
    free = list(dict.fromkeys(free))
    used = {name for lam in user for name in ((lam.get("recovered") or {}).get("free_names") or [])}
    header = [
        f'"""The Lambda functions of {Path(path).name}, recovered from its stored bytecode by mgpu-io (as data: '
        f"nothing was run).",
        "",
        "Review every function before you use it: it is what the file holds, decompiled by uncompyle6/decompyle3.",
        "Keras 2's backend is `K` (mgpu_io.lambdas.backend2, on keras.ops); `ops` is keras.ops, `np` NumPy, `tf`",
        "TensorFlow: the names a recovered function sees when you trust the file.",
        f"Names to supply (the file does not hold them): {', '.join(free) if free else 'none'}.",
        "",
        "Use it:",
        f"    mgpu_io.load_model({str(path)!r}, lambdas={str(output)!r})",
        f"    mgpu-io unwrap {path} model.keras --lambda-module {output}",
        '"""',
        "",
    ]
    header += [_IMPORTS[name] for name in ("math", "numpy", "np", "keras") if name in used or name == "np"]
    header += [_IMPORTS[name] for name in ("ops", "layers") if name in used]
    if "tf" in used:
        header.append(_IMPORTS["tf"])
    header += ["", "from mgpu_io.lambdas import backend2 as K"]
    if "backend" in used:
        header.append(_IMPORTS["backend"])
    header.append("")
    for name in free:
        header.append(f"# {name} = ...  # TODO: used by the functions below; the file does not hold it")
    body = []
    for lam in user:
        recovered = lam.get("recovered") or {}
        name = python_name(lam["layer"])
        body += ["", ""]
        if "error" in recovered or "body" not in recovered:
            body += [
                _comment(
                    f"Lambda layer {lam['layer']!r}: its source was not recovered "
                    f"({recovered.get('error', 'no source')})."
                ),
                f"# def {name}(...):  # TODO: write it",
            ]
            continue
        note = f"# Lambda layer {lam['layer']!r}, written on Python {recovered.get('python')}"
        if lam.get("arguments"):
            note += f"; called with arguments {sorted(lam['arguments'])}"
        if recovered.get("output_shape"):
            note += f"; output_shape was {recovered['output_shape'].strip()} (Keras 3 traces the function for it)"
        note += check_text(recovered.get("check"))
        body.append(_comment(note[2:]))
        function = function_source(recovered, recovered.get("defaults"), name=name).rstrip("\n")
        stored = recovered.get("closure_values") or {}
        if stored:  # the enclosing function's values, as the file stored them: rebuilt as a closure
            inner = "\n".join("    " + line if line else "" for line in function.splitlines())
            body.append(f"def _make_{name}({', '.join(stored)}):\n{inner}\n\n    return {name}\n\n")
            body.append(f"{name} = _make_{name}({', '.join(repr(value) for value in stored.values())})")
        else:
            body.append(function)
    text = "\n".join(header + body) + "\n"
    try:
        ast.parse(text)
    except (SyntaxError, ValueError, RecursionError, MemoryError) as error:  # what the file holds made it so
        raise InvalidArgument(
            problem="The recovered functions do not make a Python module",
            expected="source that parses",
            received=f"filepath={path} ({type(error).__name__} at line {getattr(error, 'lineno', '?')})",
            fix=("Write the functions yourself and pass them with ", Param("lambdas")),
        ) from None
    return text


def _comment(text):
    """``text`` as one comment line: what the file or the decompiler said can hold no line break that would end
    the comment and start code."""
    return "# " + " ".join(str(text).split())
