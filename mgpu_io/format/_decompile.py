"""Turn stored Lambda bytecode back into source, as data: a separate program, run by :mod:`mgpu_io.format.recover`.

This file is run as its own process (``python -I _decompile.py``), never imported by mgpu-io. It reads one JSON
request on standard input: ``{"path": [...], "seconds": N, "memory": BYTES, "functions": [{"code": BASE64}, ...]}``
and writes one JSON answer on standard output: a list, one entry per function (see :func:`recover`).

Before it reads anything it lowers its own limits (never raises one the environment set): address space to
``memory`` bytes, CPU time to ``seconds``, no file written, no core dumped. The parent also keeps a wall-clock
limit and kills it past that.

The bytecode is read by xdis' own unmarshaller, a pure-Python reader of any Python version's marshal format
(it builds xdis' data objects, never a code object of this interpreter), for each candidate writer's Python in
turn; the first one whose reading consumes exactly the stored bytes and whose decompiling succeeds is the writer's.
The decompilers are uncompyle6 (Python 2.7-3.8) and decompyle3 (3.7-3.8, preferred there), both GPL-3.0, installed
with ``pip install "mgpu-io[lambdas]"``. Nothing read is ever compiled, evaluated or run here.
"""

import base64
import io
import json
import sys

#: The writers' Pythons of the Keras 1/2 era, in the order they are tried.
CANDIDATES = ("3.8", "3.7", "3.6", "3.5", "2.7")
#: Names every Python 2.7-3.8 provides without an import (never reported as names the user must supply).
PY2_BUILTINS = {
    "xrange", "unicode", "long", "basestring", "reduce", "unichr", "raw_input", "file", "cmp", "execfile", "apply",
    "buffer", "intern", "coerce", "reload",
}  # fmt: skip
_GLOBAL_OPS = {"LOAD_GLOBAL", "LOAD_NAME", "STORE_GLOBAL", "DELETE_GLOBAL", "STORE_NAME"}
_CO_VARARGS, _CO_VARKEYWORDS = 0x04, 0x08


def lower_limits(seconds, memory):
    """Lower this process's CPU time, address space, file size and core size limits (never raise them)."""
    import resource

    def lower(kind, value):
        soft, hard = resource.getrlimit(kind)
        if hard != resource.RLIM_INFINITY:
            value = min(value, hard)
        if soft != resource.RLIM_INFINITY:
            value = min(value, soft)
        resource.setrlimit(kind, (value, hard))

    lower(resource.RLIMIT_CPU, int(seconds))
    lower(resource.RLIMIT_AS, int(memory))
    lower(resource.RLIMIT_FSIZE, 0)
    lower(resource.RLIMIT_CORE, 0)


def _load(data, version):
    """xdis' code object for ``data`` read as ``version``'s marshal format, or ``None`` when it does not read."""
    from xdis import iscode
    from xdis.magics import magics
    from xdis.unmarshal import _VersionIndependentUnmarshaller

    stream = io.BytesIO(data)
    reader = _VersionIndependentUnmarshaller(stream, int.from_bytes(magics[version][:2], "little"), False, {})
    code = reader.load()
    if not iscode(code) or stream.tell() != len(data):
        return None
    return code


def _deparse(code, version):
    """The source of ``code``'s body, by decompyle3 (3.7, 3.8) or uncompyle6."""
    triple = tuple(int(part) for part in version.split("."))
    errors = []
    decompilers = ["decompyle3", "uncompyle6"] if triple >= (3, 7) else ["uncompyle6"]
    for name in decompilers:
        try:
            if name == "decompyle3":
                from decompyle3.semantics.pysource import code_deparse
            else:
                from uncompyle6.semantics.pysource import code_deparse
        except ImportError as error:
            errors.append(f"{name}: not installed ({error})")
            continue
        out = io.StringIO()
        try:
            walker = code_deparse(code, out=out, version=triple, compile_mode="exec")
        except (Exception, RecursionError) as error:  # the decompilers raise many kinds on code they cannot read
            errors.append(
                f"{name}: {type(error).__name__}: {str(error).strip().splitlines()[0][:200] if str(error).strip() else ''}"
            )
            continue
        text = out.getvalue()
        if walker is not None and getattr(walker, "ERROR", None):
            errors.append(f"{name}: {walker.ERROR}")
            continue
        return text, name, errors
    return None, None, errors


def _names(code, version):
    """Global names (read, written) that ``code`` and the code objects nested in it use, in order."""
    from xdis import iscode
    from xdis.bytecode import Bytecode
    from xdis.op_imports import get_opcode_module

    opc = get_opcode_module(tuple(int(part) for part in version.split(".")))
    found, stack, seen = [], [code], 0
    while stack and seen < 1000:
        current = stack.pop()
        seen += 1
        for instruction in Bytecode(current, opc):
            if instruction.opname in _GLOBAL_OPS and isinstance(instruction.argval, str):
                found.append(instruction.argval)
        stack.extend(const for const in current.co_consts if iscode(const))
    return list(dict.fromkeys(found))


def recover(data):
    """What the stored function ``data`` (its marshalled code's bytes) was, as source.

    Returns a dict: ``python`` (the writer's Python, e.g. ``"3.7"``; ``"3.6 or 3.7"`` where both read the same),
    ``name`` (the code's name: ``<lambda>`` or the ``def``'s), ``args``, ``kwonly``, ``varargs``, ``varkw``,
    ``body`` (the decompiled body), ``globals`` (names it takes from its module, builtins left out), ``freevars``
    (names from an enclosing function: Keras stored their values as the closure), ``decompiler``; or ``error``.
    """
    import builtins

    attempts, found = [], []
    for version in CANDIDATES:
        try:
            code = _load(data, version)
        except (Exception, RecursionError) as error:
            attempts.append(f"{version}: not its marshal format ({type(error).__name__})")
            continue
        if code is None:
            attempts.append(f"{version}: not its marshal format")
            continue
        body, decompiler, errors = _deparse(code, version)
        if body is None:
            attempts.append(f"{version}: {'; '.join(errors)}")
            continue
        if found and body == found[0][1]:
            found.append((version, body, decompiler, code))
            continue
        if found:
            break
        found.append((version, body, decompiler, code))
    if not found:
        return {"error": "no Python of 2.7 and 3.5-3.8 reads it: " + " | ".join(attempts)[:2000]}
    version, body, decompiler, code = found[0]
    argcount = code.co_argcount  # 3.8 counts the positional-only ones in it
    kwonly = getattr(code, "co_kwonlyargcount", 0) or 0
    names = list(code.co_varnames)
    flags = code.co_flags
    position = argcount + kwonly
    varargs = names[position] if flags & _CO_VARARGS else None
    varkw = names[position + (1 if varargs else 0)] if flags & _CO_VARKEYWORDS else None
    builtin = set(dir(builtins)) | PY2_BUILTINS
    consts = list(code.co_consts)
    if code.co_name != "<lambda>" and consts and isinstance(consts[0], str) and consts[0] and '"""' not in consts[0]:
        body = f'"""{consts[0]}"""\n' + body  # a def's docstring is its first constant (2.7-3.8)
    return {
        "python": " or ".join(sorted(v for v, *_ in found)),
        "name": str(code.co_name),
        "args": [str(n) for n in names[:argcount]],
        "kwonly": [str(n) for n in names[argcount:position]],
        "varargs": varargs,
        "varkw": varkw,
        "body": body,
        "globals": [n for n in _names(code, version) if n not in builtin],
        "freevars": [str(n) for n in code.co_freevars],
        "decompiler": decompiler,
    }


def main():
    request = json.loads(sys.stdin.read())
    answer_to, sys.stdout = sys.stdout, sys.stderr  # the decompilers print their diagnostics: keep them apart
    lower_limits(request["seconds"], request["memory"])
    sys.setrecursionlimit(5000)
    sys.path[:0] = [entry for entry in request.get("path", []) if isinstance(entry, str) and entry]
    answers = []
    for item in request["functions"]:
        try:
            answers.append(recover(base64.b64decode(item["code"])))
        except MemoryError:
            answers.append({"error": "the decompiler ran out of its memory limit"})
        except (Exception, RecursionError) as error:
            answers.append({"error": f"{type(error).__name__}: {str(error)[:300]}"})
    answer_to.write(json.dumps(answers))


if __name__ == "__main__":
    main()
