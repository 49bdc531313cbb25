"""Prove a recovered Lambda source: compile it again on the writer's own Python and compare its code with the stored one.

A separate program, run by :mod:`mgpu_io.lambdas.proof` with the *writer's* Python (2.7 or 3.5-3.13) as
``python -E -s -c <this text>`` in an empty folder, never imported by mgpu-io. It reads one JSON request on standard input: ``{"seconds": N, "memory": BYTES, "functions":
[{"code": BASE64, "source": TEXT, "freevars": [...]}, ...]}`` and writes one JSON answer: a list, one entry per
function, ``{"same": true}`` or ``{"same": false, "difference": "..."}`` or ``{"error": "..."}``.

Before it reads anything it lowers its own limits (CPU time, address space, no file written, no core dumped).

"Proven" means the recompiled bytes are the stored ones. First the stored marshal data is walked here as bytes
(:class:`Walker`, never building a code object): each stored code object's instructions, byte for byte, must be
the recompiled ones (the function's and those of the code nested in it, in marshal's order), and nothing may follow
the code. Only then, the bytes being the compiler's own, are they unmarshalled (on the Python that wrote them, as
data, never run) and compared field by field: constants (recursively), names, argument counts, flags (line numbers
and file names left out). A body padded with EXTENDED_ARG prefixes of argument 0, or holding an ``INSTRUMENTED_*``
opcode (which 3.12+'s ``co_code`` turns back into the plain one, and which may crash the interpreter that unmarshals
it), runs as the same instructions but is not those bytes: not proven, with the offset where they differ.

On 3.11+ a call of a module's attribute (``ops.sum(x)``) compiles otherwise where the writer's module imported that
name (``from keras import ops``): before the bytes are called different, the source is compiled again in a module
that imports such names (:func:`import_contexts`), and the answer names those that made the stored bytes
(``imported``).
The recovered source is compiled, never run. Written for Python 2.7 and 3 alike (no f-strings).
"""

# ruff: noqa: UP031  (Python 2.7 and 3.5 run this file: no f-strings)
import base64
import json
import sys

#: What is compared (line numbers, file names, qualified names and exception tables' line data are not).
FIELDS = ("co_argcount", "co_posonlyargcount", "co_kwonlyargcount", "co_nlocals", "co_flags", "co_names",
          "co_varnames", "co_freevars", "co_cellvars", "co_name")  # fmt: skip


#: Deepest nesting of marshalled objects the walker follows (a code object's constants hold a few levels).
MOST_DEPTH = 200
_FLAG_REF = 0x80
_NULL = object()
#: How stored text is decoded (Python 2.7 has no "surrogatepass", and its UTF-8 codec passes surrogates).
_ERRORS = "surrogatepass" if sys.version_info[0] >= 3 else "strict"
#: Whether instructions are 2 bytes each (3.6+; 2.7 and 3.5: 1 byte, or 3 with an argument).
_WORDCODE = sys.version_info[:2] >= (3, 6)


class StoredCode:
    """A code object as marshalled: its name, its instructions' bytes, the code objects among its constants."""

    def __init__(self):
        self.name, self.code, self.codes = None, None, []


class Walker:
    """A reader of this Python's marshal format that keeps each code object's instructions as the stored bytes.

    It builds no code object (what it reads is never run, nor handed to the interpreter): numbers are skipped,
    strings kept as bytes (text decoded), containers as lists. Raises ``ValueError`` where the data does not read.
    """

    def __init__(self, data):
        self.data, self.at, self.depth = bytearray(data), 0, 0
        self.refs, self.interned = [], []

    def take(self, count):
        if count < 0 or self.at + count > len(self.data):
            raise ValueError("the marshalled data ends within an object")
        part = bytes(self.data[self.at : self.at + count])
        self.at += count
        return part

    def byte(self):
        return bytearray(self.take(1))[0]

    def long(self):
        b = bytearray(self.take(4))
        value = b[0] | b[1] << 8 | b[2] << 16 | b[3] << 24
        return value - (1 << 32) if value >= 1 << 31 else value

    def read(self):
        self.depth += 1
        if self.depth > MOST_DEPTH:
            raise ValueError("the marshalled data nests deeper than %d" % MOST_DEPTH)
        try:
            kind = self.byte()
            index = None
            if kind & _FLAG_REF:  # marshal's reference table: its place is taken before what it holds is read
                index = len(self.refs)
                self.refs.append(None)
            value = self.value(chr(kind & ~_FLAG_REF & 0xFF))
            if index is not None:
                self.refs[index] = value
            return value
        finally:
            self.depth -= 1

    def items(self, count):
        if count < 0 or count > len(self.data):
            raise ValueError("a container of %d items" % count)
        return [self.read() for _ in range(count)]

    def value(self, kind):
        if kind in "NFTS.":
            return kind
        if kind == "0":
            return _NULL
        sizes = {"i": 4, "I": 8, "g": 8, "y": 16}
        if kind in sizes:
            return self.take(sizes[kind])
        if kind == "l":
            return self.take(2 * abs(self.long()))
        if kind in "fx":  # floats (complex: two) as text, Python 2.7
            return [self.take(self.byte()) for _ in range(2 if kind == "x" else 1)]
        if kind in "stuaA":
            text = self.take(self.long())
            if kind == "t":  # Python 2.7's interned string
                self.interned.append(text)
            return text.decode("utf-8", _ERRORS) if kind in "uaA" else text
        if kind in "zZ":
            return self.take(self.byte()).decode("utf-8", _ERRORS)
        if kind == "R":  # Python 2.7: an interned string again
            at = self.long()
            if not 0 <= at < len(self.interned):
                raise ValueError("a reference to interned string %d of %d" % (at, len(self.interned)))
            return self.interned[at]
        if kind == "r":
            at = self.long()
            if not 0 <= at < len(self.refs) or self.refs[at] is None:
                raise ValueError("a reference to object %d, which is not read yet" % at)
            return self.refs[at]
        if kind in "([<>":
            return self.items(self.long())
        if kind == ")":
            return self.items(self.byte())
        if kind == "{":
            found = []
            while True:
                key = self.read()
                if key is _NULL:
                    return found
                found.append((key, self.read()))
        if kind == "c":
            return self.code()
        raise ValueError("type code %r at byte %d is not one of marshal's" % (kind, self.at - 1))

    def code(self):
        """A code object's fields, in the order this Python's marshal writes them (Python/marshal.c)."""
        version = sys.version_info[:2]
        head = 4 if version < (3, 0) else 5 if version < (3, 8) else 6 if version < (3, 11) else 5
        for _ in range(head):  # argument counts, locals, stack size, flags
            self.long()
        found = StoredCode()
        found.code = self.read()
        if not isinstance(found.code, bytes):
            raise ValueError("a code object whose instructions are no bytes")
        consts = self.read()
        found.codes = [c for c in (consts if isinstance(consts, list) else []) if isinstance(c, StoredCode)]
        self.read()  # names
        self.read()  # varnames (3.11+: the names of all locals)
        self.read()  # freevars (3.11+: the kinds of all locals)
        if version < (3, 11):
            self.read()  # cellvars
        self.read()  # filename
        found.name = self.read()
        if version >= (3, 11):
            self.read()  # qualname
        self.long()  # first line number
        self.read()  # line table
        if version >= (3, 11):
            self.read()  # exception table
        return found


def stored_code(data):
    """The stored function's :class:`StoredCode` of marshalled ``data``; ``ValueError`` where it is no code object
    or where bytes follow it."""
    walker = Walker(data)
    found = walker.read()
    if not isinstance(found, StoredCode):
        raise ValueError("the stored data is no code object")
    if walker.at != len(walker.data):
        raise ValueError("%d bytes follow the stored code object" % (len(walker.data) - walker.at))
    return found


def _codes(top, nested):
    """``top`` and the code nested in it, in marshal's order (each before its constants)."""
    found, stack = [], [top]
    while stack:
        current = stack.pop()
        found.append(current)
        stack.extend(reversed(nested(current)))
    return found


def _unit(raw, offset):
    """The instruction at ``offset`` of ``raw`` as text (its opcode's name, and its argument on 3.6+)."""
    import dis

    raw = bytearray(raw)
    if offset >= len(raw):
        return "nothing"
    name = dis.opname[raw[offset]] if raw[offset] < len(dis.opname) else "<%d>" % raw[offset]
    if _WORDCODE and offset + 1 < len(raw):
        return "%s %d" % (name, raw[offset + 1])
    return name


def bytes_difference(stored, rebuilt):
    """Where the stored instructions' bytes (:class:`StoredCode`) are not ``rebuilt``'s, as text, or ``None``."""
    mine = _codes(stored, lambda c: c.codes)
    theirs = _codes(rebuilt, lambda c: [k for k in c.co_consts if hasattr(k, "co_code")])
    if len(mine) != len(theirs):
        return "the function: %d code objects stored, %d recompiled" % (len(mine), len(theirs))
    for n, (a, b) in enumerate(zip(mine, theirs)):
        where = "the function" if n == 0 else "the function's %s" % b.co_name
        x, y = bytearray(a.code), bytearray(b.co_code)
        if x == y:
            continue
        at = next((k for k in range(min(len(x), len(y))) if x[k] != y[k]), min(len(x), len(y)))
        if _WORDCODE:
            at -= at % 2
        return (
            "%s: its bytecode is not the recompiled bytes (%d bytes stored, %d recompiled; at offset %d: %s "
            "stored, %s recompiled)" % (where, len(x), len(y), at, _unit(x, at), _unit(y, at))
        )
    return None


def lower_limits(seconds, memory):
    import resource

    for kind, value in ((resource.RLIMIT_CPU, int(seconds)), (resource.RLIMIT_AS, int(memory)),
                        (resource.RLIMIT_FSIZE, 0), (resource.RLIMIT_CORE, 0)):  # fmt: skip
        soft, hard = resource.getrlimit(kind)
        if hard != resource.RLIM_INFINITY:
            value = min(value, hard)
        if soft != resource.RLIM_INFINITY:
            value = min(value, soft)
        resource.setrlimit(kind, (value, hard))


def _instructions_27(code):
    """Python 2.7's instructions (its dis has no get_instructions): ``[(opname, argument)]``."""
    import dis

    raw, found, n, extended = bytearray(code.co_code), [], 0, 0
    while n < len(raw):
        op = raw[n]
        if op < dis.HAVE_ARGUMENT:
            found.append((dis.opname[op], None))
            n += 1
            continue
        arg = raw[n + 1] + raw[n + 2] * 256 + extended
        n += 3
        if op == dis.EXTENDED_ARG:
            extended = arg * 65536
            continue
        extended = 0
        if op in dis.hasconst:
            value = None  # constants are compared one by one below
        elif op in dis.hasname:
            value = repr(code.co_names[arg])
        elif op in dis.haslocal:
            value = repr(code.co_varnames[arg])
        elif op in dis.hasfree:
            value = repr((code.co_cellvars + code.co_freevars)[arg])
        elif op in dis.hasjrel:
            value = repr(n + arg)
        else:
            value = repr(arg)
        found.append((dis.opname[op], value))
    return found


def instructions(code):
    """``[(opname, argument)]`` of ``code``, without NOPs; jumps as targets, constants and names by value."""
    import dis

    if not hasattr(dis, "get_instructions"):
        return _instructions_27(code)
    found = []
    for ins in dis.get_instructions(code):
        if ins.opname in ("NOP", "CACHE", "EXTENDED_ARG"):
            continue
        value = ins.argval
        if hasattr(value, "co_code"):
            value = "<code %s>" % value.co_name
        found.append((ins.opname, repr(value) if ins.opname not in ("LOAD_CONST", "RETURN_CONST") else None))
    return found


def difference(stored, rebuilt, where="the function"):
    """The first difference between two code objects, as text, or ``None``."""
    for field in FIELDS:
        if field == "co_flags":  # CO_NESTED (0x10) says where the function was defined, not what it does
            if (stored.co_flags & ~0x10) != (rebuilt.co_flags & ~0x10):
                return "%s: co_flags is %r stored, %r recompiled" % (where, stored.co_flags, rebuilt.co_flags)
            continue
        if getattr(stored, field, None) != getattr(rebuilt, field, None):
            return "%s: %s is %r stored, %r recompiled" % (
                where,
                field,
                getattr(stored, field, None),
                getattr(rebuilt, field, None),
            )
    a, b = instructions(stored), instructions(rebuilt)
    if a != b:
        for n, (x, y) in enumerate(zip(a, b)):
            if x != y:
                return "%s: instruction %d is %s %s stored, %s %s recompiled" % (
                    where,
                    n,
                    x[0],
                    x[1] or "",
                    y[0],
                    y[1] or "",
                )
        return "%s: %d instructions stored, %d recompiled" % (where, len(a), len(b))
    consts_a, consts_b = stored.co_consts, rebuilt.co_consts
    if len(consts_a) != len(consts_b):
        return "%s: %d constants stored, %d recompiled" % (where, len(consts_a), len(consts_b))
    for x, y in zip(consts_a, consts_b):
        if hasattr(x, "co_code") and hasattr(y, "co_code"):
            found = difference(x, y, "%s's %s" % (where, x.co_name))
            if found:
                return found
        elif type(x) is not type(y) or repr(x) != repr(y):
            return "%s: constant %r stored, %r recompiled" % (where, x, y)
    return None


def rebuilt_code(source, name, freevars, imported=()):
    """The code object of the function ``source`` defines, compiled inside a function giving ``freevars``, in a
    module that imports ``imported`` (compiled, never run)."""
    imports = "".join("import %s\n" % module for module in imported)
    if freevars:  # a closure: the names are the enclosing function's, as where it was written
        text = "_f = " + source if source.startswith("lambda") else source
        inner = "\n".join("    " + line for line in text.splitlines())
        body = "def _mgpu_io_outer({}):\n{}\n    return None\n".format(", ".join(freevars), inner)
        outer = next(c for c in compile(imports + body, "<recovered>", "exec").co_consts if hasattr(c, "co_code"))
        consts = outer.co_consts
    elif imports:
        text = "_f = " + source if source.startswith("lambda") else source
        consts = compile(imports + text, "<recovered>", "exec").co_consts
    elif source.startswith("lambda"):
        consts = compile(source, "<recovered>", "eval").co_consts
    else:
        consts = compile(source, "<recovered>", "exec").co_consts
    codes = [c for c in consts if hasattr(c, "co_code") and c.co_name == name]
    return codes[0] if codes else None


#: The most names whose every combination is tried as the writer's module's imports (2**4 - 1 compiles at most).
MOST_IMPORTED = 4


def import_contexts(source):
    """The combinations of names that the writer's module may have imported which change ``source``'s bytes, fewest
    first: 3.11+ compiles a call of an imported name's attribute (``ops.sum(x)``, after ``from keras import ops``)
    as a plain call, never as a method's (CPython's ``is_import_originated``), so the stored bytes show which of the
    names the call's owners were. Empty before 3.11."""
    import ast
    import itertools

    if sys.version_info[:2] < (3, 11):
        return []
    owners = []
    for node in ast.walk(ast.parse(source)):
        func = getattr(node, "func", None) if isinstance(node, ast.Call) else None
        if isinstance(func, ast.Attribute) and isinstance(func.value, ast.Name) and func.value.id not in owners:
            owners.append(func.value.id)
    if len(owners) > MOST_IMPORTED:
        return [owners]
    return [list(c) for n in range(1, len(owners) + 1) for c in itertools.combinations(owners, n)]


def check(item):
    import marshal  # the writer's own Python reading its own bytes, as data: never called, never run

    data = base64.b64decode(item["code"])
    try:
        walked = stored_code(data)
    except (ValueError, UnicodeDecodeError) as error:
        return {"same": False, "difference": "the stored bytes are not this Python's marshalled code (%s)" % error}
    rebuilt = rebuilt_code(item["source"], walked.name, item.get("freevars") or [])
    if rebuilt is None:
        return {"same": False, "difference": "the source defines no function named %s" % walked.name}
    found, imported = bytes_difference(walked, rebuilt), []
    for names in import_contexts(item["source"]) if found else []:  # the writer's module imported these names
        other = rebuilt_code(item["source"], walked.name, item.get("freevars") or [], names)
        if other is not None and bytes_difference(walked, other) is None:
            rebuilt, found, imported = other, None, names
            break
    if found:  # never unmarshalled: bytes that are not the compiler's may crash the interpreter that loads them
        return {"same": False, "difference": found}
    stored = marshal.loads(data)
    found = difference(stored, rebuilt)
    if found:
        return {"same": False, "difference": found}
    return {"same": True, "imported": imported} if imported else {"same": True}


def main():
    request = json.loads(sys.stdin.read())
    lower_limits(request["seconds"], request["memory"])
    answers = []
    for item in request["functions"]:
        try:
            answers.append(check(item))
        except MemoryError:
            answers.append({"error": "the check ran out of its memory limit"})
        except Exception as error:  # bad marshal data, a source that does not compile: one answer each
            answers.append({"error": "%s: %s" % (type(error).__name__, str(error)[:300])})
    sys.stdout.write(json.dumps(answers))


if __name__ == "__main__":  # run as `python -c <this text>` too, where __name__ is "__main__" as well
    main()
