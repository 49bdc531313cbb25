"""Prove a recovered Lambda source: compile it again on the writer's own Python and compare its code with the stored one.

A separate program, run by :mod:`mgpu_io.lambdas.proof` with the *writer's* Python (2.7 or 3.5-3.13) as
``python -E -s -c <this text>`` in an empty folder, never imported by mgpu-io. It reads one JSON request on standard input: ``{"seconds": N, "memory": BYTES, "functions":
[{"code": BASE64, "source": TEXT, "freevars": [...]}, ...]}`` and writes one JSON answer: a list, one entry per
function, ``{"same": true}`` or ``{"same": false, "difference": "..."}`` or ``{"error": "..."}``.

Before it reads anything it lowers its own limits (CPU time, address space, no file written, no core dumped). The
stored bytes are unmarshalled here only, on the Python that wrote them, as data: the code object is compared field by
field (instructions, constants, names, argument counts, flags; line numbers and file names left out), never run.
The recovered source is compiled, never run. Written for Python 2.7 and 3 alike (no f-strings).
"""

# ruff: noqa: UP031  (Python 2.7 and 3.5 run this file: no f-strings)
import base64
import json
import sys

#: What is compared (line numbers, file names, qualified names and exception tables' line data are not).
FIELDS = ("co_argcount", "co_posonlyargcount", "co_kwonlyargcount", "co_nlocals", "co_flags", "co_names",
          "co_varnames", "co_freevars", "co_cellvars", "co_name")  # fmt: skip


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


def rebuilt_code(source, name, freevars):
    """The code object of the function ``source`` defines, compiled inside a function giving ``freevars``."""
    if freevars:  # a closure: the names are the enclosing function's, as where it was written
        text = "_f = " + source if source.startswith("lambda") else source
        inner = "\n".join("    " + line for line in text.splitlines())
        body = "def _mgpu_io_outer({}):\n{}\n    return None\n".format(", ".join(freevars), inner)
        outer = next(c for c in compile(body, "<recovered>", "exec").co_consts if hasattr(c, "co_code"))
        consts = outer.co_consts
    elif source.startswith("lambda"):
        consts = compile(source, "<recovered>", "eval").co_consts
    else:
        consts = compile(source, "<recovered>", "exec").co_consts
    codes = [c for c in consts if hasattr(c, "co_code") and c.co_name == name]
    return codes[0] if codes else None


def check(item):
    import marshal  # the writer's own Python reading its own bytes, as data: never called, never run

    stored = marshal.loads(base64.b64decode(item["code"]))
    rebuilt = rebuilt_code(item["source"], stored.co_name, item.get("freevars") or [])
    if rebuilt is None:
        return {"same": False, "difference": "the source defines no function named %s" % stored.co_name}
    found = difference(stored, rebuilt)
    return {"same": found is None, "difference": found} if found else {"same": True}


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
