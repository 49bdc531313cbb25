"""Turn stored Lambda bytecode back into source, as data: a separate program, run by :mod:`mgpu_io.lambdas.recovery`.

This file is run as its own process (``python -I _decompile.py``), never imported by mgpu-io. It reads one JSON
request on standard input: ``{"path": [...], "seconds": N, "memory": BYTES, "functions": [{"code": BASE64}, ...]}``
and writes one JSON answer on standard output: a list, one entry per function (see :func:`recover`).

It runs under the limits its parent set between the fork and the exec
(:func:`mgpu_io.format.sandbox.programs.run_program`; never raising one the environment set): address space to
``memory`` bytes, CPU time to ``seconds``, no file written, no core dumped, and a wall-clock limit past which it is killed.

The bytecode is read by xdis' own unmarshaller, a pure-Python reader of any Python version's marshal format
(it builds xdis' data objects, never a code object of this interpreter), for each candidate writer's Python in
turn; the first one whose reading consumes exactly the stored bytes and whose decompiling succeeds is the writer's.
The decompilers are uncompyle6 (Python 2.7-3.8) and decompyle3 (3.7-3.8, preferred there), both GPL-3.0, installed
with ``pip install "mgpu-io[lambdas]"``, and mgpu-io's own ``_decompile39.py`` for 3.9-3.13 (no maintained decompiler
reads those). Nothing read is ever compiled, evaluated or run here.

Which Python wrote the bytes is proven, not guessed: every candidate is tried; a reading counts only where the marshal
format consumes exactly the stored bytes, every opcode is one of that Python's, and the source it gives is what such
code can be (a lambda is one expression). The parent may narrow the candidates to the Pythons the writer ran on
(``pythons``). Where more than one reading is left, they must give the same source (the label is then e.g.
"3.9 or 3.10"); otherwise the function is refused, naming the versions.
"""

import base64
import io
import json
import sys

#: The writers' Pythons, in the order they are tried: 3.9-3.13 by mgpu-io's own decompiler, the rest by the others.
CANDIDATES = ("3.13", "3.12", "3.11", "3.10", "3.9", "3.8", "3.7", "3.6", "3.5", "2.7")
#: The first Python that mgpu-io's own decompiler (``_decompile39.py``) reads.
OWN_FROM = (3, 9)
#: Names every Python 2.7-3.8 provides without an import (never reported as names the user must supply).
PY2_BUILTINS = {
    "xrange", "unicode", "long", "basestring", "reduce", "unichr", "raw_input", "file", "cmp", "execfile", "apply",
    "buffer", "intern", "coerce", "reload",
}  # fmt: skip
_GLOBAL_OPS = {"LOAD_GLOBAL", "LOAD_NAME", "STORE_GLOBAL", "DELETE_GLOBAL", "STORE_NAME"}
#: Opcodes that the interpreter writes into a running code object's instructions and marshal never stores
#: (``marshal.dumps`` writes the code as compiled: 3.12+'s instrumentation, 3.13's executors, the interpreter's own
#: exit), or that no compiler writes at all.
_NEVER_STORED = ("INSTRUMENTED_", "ENTER_EXECUTOR", "INTERPRETER_EXIT", "RESERVED")
#: The most EXTENDED_ARG prefixes before one instruction that CPython writes: its arguments are 32-bit (2.7 and
#: 3.5: one prefix of 16 bits; 3.6+: up to three of 8 bits).
_MOST_PREFIXES = {"bytes": 1, "words": 3}
_CO_VARARGS, _CO_VARKEYWORDS = 0x04, 0x08


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


def _opcode_module(version):
    from xdis.op_imports import get_opcode_module

    return get_opcode_module(tuple(int(part) for part in version.split(".")))


def _instructions(code, version):
    from xdis.bytecode import Bytecode

    return list(Bytecode(code, _opcode_module(version)))


def _unknown_opcode(code, version):
    """The first opcode of ``code`` (or a code nested in it) that ``version`` does not have, else ``None``."""
    from xdis import iscode

    opc = _opcode_module(version)
    jumps = set(getattr(opc, "hasjrel", [])) | set(getattr(opc, "hasjabs", []))
    stack, seen = [code], 0
    while stack and seen < 1000:
        current = stack.pop()
        seen += 1
        found = _instructions(current, version)
        offsets = {instruction.offset for instruction in found}
        for instruction in found:
            if instruction.opname.startswith("<"):
                return f"opcode {instruction.opname.strip('<>')} at offset {instruction.offset}"
            if instruction.opname.startswith(_NEVER_STORED):  # never in marshalled code: refused, never skipped
                return f"opcode {instruction.opname} at offset {instruction.offset}, which marshal never stores,"
            if instruction.opcode in jumps and instruction.argval not in offsets:  # a jump into no instruction
                return f"a jump of {instruction.opname} at offset {instruction.offset} to {instruction.argval}"
        stack.extend(const for const in current.co_consts if iscode(const))
    return None


def _loops_other_than_for(code, version):
    """Whether ``code`` (or a code nested in it) jumps backwards other than to a ``for`` loop's FOR_ITER."""
    from xdis import iscode

    stack, seen = [code], 0
    while stack and seen < 1000:
        current = stack.pop()
        seen += 1
        found = _instructions(current, version)
        starts = {ins.offset for ins in found if ins.opname == "FOR_ITER"}
        for ins in found:
            backwards = "JUMP" in ins.opname and isinstance(ins.argval, int) and ins.argval <= ins.offset
            if backwards and ins.argval not in starts:
                return True
        stack.extend(const for const in current.co_consts if iscode(const))
    return False


def _line_table_misfit(code, version):
    """Why ``code``'s line table is not ``version``'s, else ``None``: 3.10's covers every byte of the code (its
    byte steps add up to the code's length), 3.6-3.9's ``lnotab`` steps to the start of the last line only."""
    from xdis import iscode

    triple = tuple(int(part) for part in version.split("."))
    if not (3, 6) <= triple <= (3, 10):
        return None
    stack, seen = [code], 0
    while stack and seen < 1000:
        current = stack.pop()
        seen += 1
        table = getattr(current, "co_linetable" if triple == (3, 10) else "co_lnotab", None)
        if isinstance(table, (bytes, bytearray)):
            steps, length = sum(table[0::2]), len(current.co_code)
            if triple == (3, 10) and steps != length:
                return f"its line table does not cover its code ({steps} of {length} bytes), as 3.10's does"
            if triple < (3, 10) and length and steps >= length:
                return f"its line table covers all its code ({steps} of {length} bytes), as 3.10's does"
        stack.extend(const for const in current.co_consts if iscode(const))
    return None


#: Each Python's inline cache entries after an instruction (CPython's ``opcode._inline_cache_entries``, read from
#: the real 3.11, 3.12 and 3.13): code units of zeros that follow it in the stored bytes. The layouts differ (a
#: LOAD_GLOBAL has 5 in 3.11 and 4 in 3.12, a LOAD_ATTR 4 and 9; 3.13's TO_BOOL has 3, its jumps 1), so bytes that
#: one Python wrote misalign as another's, which tells 3.11 from 3.12 where the opcodes alone cannot (3.13 renumbered
#: its opcodes as well).
INLINE_CACHES = {
    (3, 11): {"BINARY_OP": 1, "BINARY_SUBSCR": 4, "CALL": 4, "COMPARE_OP": 2, "LOAD_ATTR": 4, "LOAD_GLOBAL": 5,
              "LOAD_METHOD": 10, "PRECALL": 1, "STORE_ATTR": 4, "STORE_SUBSCR": 1, "UNPACK_SEQUENCE": 1},
    (3, 12): {"BINARY_OP": 1, "BINARY_SUBSCR": 1, "CALL": 3, "COMPARE_OP": 1, "FOR_ITER": 1, "LOAD_ATTR": 9,
              "LOAD_GLOBAL": 4, "LOAD_SUPER_ATTR": 1, "SEND": 1, "STORE_ATTR": 4, "STORE_SUBSCR": 1,
              "UNPACK_SEQUENCE": 1},
    (3, 13): {"BINARY_OP": 1, "BINARY_SUBSCR": 1, "CALL": 3, "COMPARE_OP": 1, "CONTAINS_OP": 1, "FOR_ITER": 1,
              "JUMP_BACKWARD": 1, "LOAD_ATTR": 9, "LOAD_GLOBAL": 4, "LOAD_SUPER_ATTR": 1, "POP_JUMP_IF_FALSE": 1,
              "POP_JUMP_IF_NONE": 1, "POP_JUMP_IF_NOT_NONE": 1, "POP_JUMP_IF_TRUE": 1, "SEND": 1, "STORE_ATTR": 4,
              "STORE_SUBSCR": 1, "TO_BOOL": 3, "UNPACK_SEQUENCE": 1},
}  # fmt: skip


def _cache_misfit(code, version):
    """Why ``code``'s bytes (and those of the code nested in it) do not lie as ``version``'s inline caches lie,
    else ``None``: after each instruction, exactly its number of cache units, each zero (CACHE, as marshal stores
    them), and no zero unit where an instruction stands. Only for the Pythons of :data:`INLINE_CACHES`."""
    from xdis import iscode

    triple = tuple(int(part) for part in version.split("."))
    caches = INLINE_CACHES.get(triple)
    if caches is None:
        return None
    names = list(getattr(_opcode_module(version), "opname", []))
    stack, seen = [code], 0
    while stack and seen < 1000:
        current = stack.pop()
        seen += 1
        raw = bytes(current.co_code)
        offset = 0
        while offset + 1 < len(raw):
            opcode = raw[offset]
            name = names[opcode] if opcode < len(names) else f"<{opcode}>"
            if opcode == 0:
                return f"a cache unit at offset {offset} where an instruction stands, as {version} lays them out"
            want = caches.get(name, 0)
            units = raw[offset + 2 : offset + 2 + 2 * want]
            if len(units) != 2 * want or any(units):
                return f"{name} at offset {offset} is not followed by its {want} cache units, as {version}'s is"
            offset += 2 + 2 * want
        stack.extend(const for const in current.co_consts if iscode(const))
    return None


def _padding_misfit(code, version):
    """Why ``code``'s (or a nested code's) EXTENDED_ARG prefixes are not what ``version``'s compiler writes, else
    ``None``. The compiler writes a prefix only where the argument needs it (3.6+: an argument of 256 or more takes
    one, of 65,536 or more two, ...; 2.7 and 3.5: one of 65,536 or more), and never more than a 32-bit argument
    needs: a body padded with prefixes of argument 0 (which the interpreter runs as the one instruction) is not
    compiled code, whatever it computes."""
    from xdis import iscode

    triple = tuple(int(part) for part in version.split("."))
    opc = _opcode_module(version)
    extended, have_argument = opc.opmap["EXTENDED_ARG"], getattr(opc, "HAVE_ARGUMENT", 90)
    words = triple >= (3, 6)
    shift, most = (8, _MOST_PREFIXES["words"]) if words else (16, _MOST_PREFIXES["bytes"])
    stack, seen = [code], 0
    while stack and seen < 1000:
        current = stack.pop()
        seen += 1
        raw = bytes(current.co_code)
        offset, run, start, value = 0, 0, 0, 0
        while offset < len(raw):
            opcode = raw[offset]
            if words:
                size, arg = 2, raw[offset + 1] if offset + 1 < len(raw) else 0
            elif opcode >= have_argument:
                size, arg = 3, int.from_bytes(raw[offset + 1 : offset + 3], "little")
            else:
                size, arg = 1, 0
            if opcode == extended:
                start = offset if run == 0 else start
                run, value = run + 1, (value << shift) | arg
                if run > most:
                    return f"EXTENDED_ARG at offset {start} is followed by more of them than any argument needs"
            elif run:
                if ((value << shift) | arg) < 1 << (shift * run):
                    return f"EXTENDED_ARG at offset {start} gives an argument that needs no such prefix"
                run, value = 0, 0
            offset += size
        if run:
            return f"EXTENDED_ARG at offset {start} prefixes no instruction"
        stack.extend(const for const in current.co_consts if iscode(const))
    return None


#: Words that are keywords on every Python 2.7-3.13 (``True``, ``print`` or ``async`` were names on some).
_HARD_KEYWORDS = frozenset(
    [
        "and",
        "as",
        "assert",
        "break",
        "class",
        "continue",
        "def",
        "del",
        "elif",
        "else",
        "except",
        "finally",
        "for",
        "from",
        "global",
        "if",
        "import",
        "in",
        "is",
        "lambda",
        "not",
        "or",
        "pass",
        "raise",
        "return",
        "try",
        "while",
        "with",
        "yield",
    ]
)
#: The names CPython gives code objects that are not functions written with ``def``.
_CODE_NAMES = frozenset(("<lambda>", "<listcomp>", "<setcomp>", "<dictcomp>", "<genexpr>", "<module>"))


def _odd_name(code):
    """The first name ``code`` (or a code nested in it) holds that no source could have written, else ``None``:
    a global, attribute, local or free name that is not a Python identifier (``os.system``, text across lines), or a
    function name that is neither an identifier nor one of CPython's own. Such a name would be shown as code that it
    is not: a crafted ``os.system`` is one global name, never the attribute of ``os``."""
    from xdis import iscode

    stack, seen = [code], 0
    while stack and seen < 1000:
        current = stack.pop()
        seen += 1
        names = [*current.co_names, *current.co_varnames, *current.co_freevars, *current.co_cellvars]
        for name in names:
            text = str(name)
            if text.startswith(".") and text[1:].isdigit():  # CPython's own: a comprehension's iterator (".0")
                continue
            if not text.isidentifier() or text in _HARD_KEYWORDS:
                return f"its name {text[:60]!r} is not a Python identifier"
        own = str(current.co_name)
        if own not in _CODE_NAMES and (not own.isidentifier() or own in _HARD_KEYWORDS):
            return f"its function name {own[:60]!r} is not a Python identifier"
        stack.extend(const for const in current.co_consts if iscode(const))
    return None


_DECOMPILE39: list = []


def _decompile39_module():
    """``_decompile39.py`` (next to this file), loaded once."""
    if not _DECOMPILE39:
        import importlib.util
        import os

        where = os.path.join(os.path.dirname(os.path.abspath(__file__)), "_decompile39.py")
        spec = importlib.util.spec_from_file_location("_decompile39", where)
        module = importlib.util.module_from_spec(spec)
        spec.loader.exec_module(module)
        _DECOMPILE39.append(module)
    return _DECOMPILE39[0]


def _own(code, version):
    """mgpu-io's own decompiler for 3.9-3.13 (``_decompile39.py``, next to this file), as the source of the body."""
    rebuild = _decompile39_module()
    triple = tuple(int(part) for part in version.split("."))
    try:
        return rebuild.decompile(code, triple, _instructions(code, version), lambda c: _instructions(c, version)), []
    except rebuild.Unreadable as error:
        return None, [f"mgpu-io's decompiler stopped at {error}"]


def _expression(statements):
    """The one expression that ``if``/``return`` statements (returning on every path) compute, else ``None``.

    uncompyle6 and decompyle3 read a lambda's conditional expression as ``if c: return a`` / ``return b``; a body
    with a path that falls off its end (a misreading: a lambda always returns) gives ``None``.
    """
    import ast

    if not statements:
        return None
    first, rest = statements[0], statements[1:]
    if isinstance(first, ast.Return) and first.value is not None:
        return first.value
    if isinstance(first, ast.If):
        then = _expression(first.body)
        other = _expression(list(first.orelse) + rest)
        if then is not None and other is not None:
            return ast.IfExp(first.test, then, other)
    return None


def _as_lambda_body(body):
    """``body`` as ``return <one expression>`` (what a lambda is), or ``None`` where it is not one."""
    import ast

    tree = ast.parse(body)
    if len(tree.body) == 1 and isinstance(tree.body[0], ast.Return) and tree.body[0].value is not None:
        return body
    expression = _expression(tree.body)
    if expression is None:
        return None
    return ast.unparse(ast.fix_missing_locations(ast.Module([ast.Return(expression)], []))) + "\n"


def _ellipsis(body, code):
    """``body`` with uncompyle6/decompyle3's ``Ellipsis`` (a name) written ``...`` where the code loads the constant."""
    import ast

    if "Ellipsis" not in body or "Ellipsis" in [str(n) for n in code.co_names]:
        return body
    tree = ast.parse(body)

    class Constants(ast.NodeTransformer):
        def visit_Name(self, node):
            return ast.copy_location(ast.Constant(Ellipsis), node) if node.id == "Ellipsis" else node

    return ast.unparse(ast.fix_missing_locations(Constants().visit(tree))) + "\n"


def _problem(body, code):
    """Why ``body`` cannot be the source of ``code`` (a lambda is one expression), else ``None``."""
    import ast

    try:
        ast.parse(body)
    except (SyntaxError, ValueError, RecursionError, MemoryError) as error:
        return f"its reading is not Python ({type(error).__name__})"
    if str(code.co_name) == "<lambda>" and _as_lambda_body(body) is None:
        return "its reading of a lambda is not one expression"
    return None


def _same(a, b):
    """Whether two readings are the same source (uncompyle6/decompyle3 spell `...` as `Ellipsis`)."""
    import ast

    def normal(text):
        tree = ast.parse(text)
        expression = _expression(tree.body)
        if expression is not None:  # `if c: return a` / `return b` and `return a if c else b` are one function
            tree = ast.Module([ast.Return(expression)], [])
        for node in ast.walk(tree):
            for field, value in ast.iter_fields(node):
                if isinstance(value, ast.Name) and value.id == "Ellipsis":
                    setattr(node, field, ast.Constant(Ellipsis))
                elif isinstance(value, list):
                    value[:] = [
                        ast.Constant(Ellipsis) if isinstance(v, ast.Name) and v.id == "Ellipsis" else v for v in value
                    ]
        return ast.dump(tree)

    return normal(a) == normal(b)


def _deparse(code, version):
    """The source of ``code``'s body, by mgpu-io's own decompiler (3.9-3.13), decompyle3 (3.7, 3.8) or uncompyle6."""
    triple = tuple(int(part) for part in version.split("."))
    if triple >= OWN_FROM:
        text, errors = _own(code, version)
        return text, ("mgpu-io" if text is not None else None), errors
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


def recover(data, pythons=None):
    """What the stored function ``data`` (its marshalled code's bytes) was, as source.

    ``pythons``: the Pythons the writer ran on (``["3.9", "3.10", ...]``), where the file says; ``None``: any.

    Returns a dict: ``python`` (the writer's Python, e.g. ``"3.7"``; ``"3.6 or 3.7"`` where both read the same),
    ``formats`` (the Pythons whose marshal format, opcodes, jumps and line table the bytes fit, decompiled or not,
    with no loop but ``for`` loops: where no decompiler reads the bytes, those the running Python may load as Keras
    does),
    ``name`` (the code's name: ``<lambda>`` or the ``def``'s), ``args``, ``kwonly``, ``varargs``, ``varkw``,
    ``body`` (the decompiled body), ``globals`` (names it takes from its module, builtins left out), ``freevars``
    (names from an enclosing function: Keras stored their values as the closure), ``decompiler``; or ``error``.
    """
    attempts, readings, formats = [], [], []
    allowed = [str(v) for v in pythons] if isinstance(pythons, list) and pythons else None
    for version in CANDIDATES:
        reading = _read_as(data, version, formats)
        if isinstance(reading, str):
            attempts.append(f"{version}: {reading}")
        else:
            readings.append(reading)
    found = [r for r in readings if allowed is None or r[0] in allowed]
    error = _no_one_reading(readings, found, allowed, attempts)
    if error is not None:
        return {"error": error, "formats": formats}
    return dict(_source(found), formats=formats)


def _read_as(data, version, formats):
    """``data`` read as Python ``version``'s code and decompiled: ``(version, body, decompiler, code)``, or why
    not (a line). ``version`` is added to ``formats`` where the bytes fit its format with no loop but ``for``
    loops, decompiled or not."""
    try:
        code = _load(data, version)
    except (Exception, RecursionError) as error:
        return f"not its marshal format ({type(error).__name__})"
    if code is None:
        return "not its marshal format"
    try:
        unknown = _unknown_opcode(code, version)
    except (Exception, RecursionError) as error:
        return f"not its instructions ({type(error).__name__})"
    if unknown:
        return f"{unknown} is not one of its"
    misfit = (
        _padding_misfit(code, version)
        or _line_table_misfit(code, version)
        or _cache_misfit(code, version)
        or _odd_name(code)
    )
    if misfit:
        return misfit
    if not _loops_other_than_for(code, version):  # a `while` (or a crafted jump to itself) never runs as Keras'
        formats.append(version)
    try:
        body, decompiler, errors = _deparse(code, version)
    except (Exception, RecursionError) as error:
        return f"{type(error).__name__}: {str(error)[:200]}"
    if body is None:
        return "; ".join(errors)
    problem = _problem(body, code)
    if problem:
        return problem
    if str(code.co_name) == "<lambda>":
        body = _as_lambda_body(body)
    if decompiler != "mgpu-io":
        body = _ellipsis(body, code)
    return version, body, decompiler, code


def _no_one_reading(readings, found, allowed, attempts):
    """Why the readings (``found``: those on the Pythons the writer ran on) give no one source, or ``None``."""
    if readings and not found:
        return (
            f"it reads only as Python {' or '.join(r[0] for r in readings)}, on which its writer did not "
            f"run (the writer ran on Python {', '.join(allowed)})"
        )
    if not found:
        return "no Python of 2.7 and 3.5-3.13 reads it: " + " | ".join(attempts)[:2000]
    differing = [r for r in found if not _same(r[1], found[0][1])]
    if differing:
        return (
            f"it reads differently as Python {found[0][0]} and {differing[0][0]}, which its writer both "
            f"may have run on: the writer's Python is not proven, so neither reading is taken"
        )
    return None


def _source(found):
    """The function the readings ``found`` agree on: its Pythons, name, arguments, body and free names."""
    import builtins

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
        body = f'"""{consts[0]}"""\n' + body  # a def's docstring is its first constant (2.7-3.13)
    return {
        "python": " or ".join(sorted((v for v, *_ in found), key=lambda v: tuple(int(p) for p in v.split(".")))),
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
    sys.setrecursionlimit(5000)
    sys.path[:0] = [entry for entry in request.get("path", []) if isinstance(entry, str) and entry]
    answers = []
    for item in request["functions"]:
        try:
            answers.append(recover(base64.b64decode(item["code"]), item.get("pythons")))
        except MemoryError:
            answers.append({"error": "the decompiler ran out of its memory limit"})
        except (Exception, RecursionError) as error:
            answers.append({"error": f"{type(error).__name__}: {str(error)[:300]}"})
    answer_to.write(json.dumps(answers))


if __name__ == "__main__":
    main()
