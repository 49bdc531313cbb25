"""Mutators for stored bytecode (issue 21, for what issue 22 decompiles): the user's Lambda functions that Keras 1
and 2 stored as base64 of ``marshal.dumps(function.__code__)``, with their defaults and closure values beside them.

They follow :mod:`mutate`'s rules: each is a seeded class applied to a COPY of a real fixture (fixtures/lambdas,
written by the real Keras 2.2.4 on Python 2.7, 3.6 and 3.7, and tf.keras on Python 3.8), never to the fixture
itself. Each picks one of the template's user Lambdas in the copy's ``model_config`` and damages what the file
stores for it, then writes the config back in the attribute's own style:

* :class:`BytecodeBytes`: the marshalled bytes damaged as :func:`mutate_kinds.damage_bytes` damages any file
  (truncated, bits flipped, zeroed, bytes added, emptied, repeated).
* :class:`BytecodeCrafted`: hostile marshal data made on purpose: declared lengths of 2 GiB (a string, a tuple, a
  long integer), 200,000 nested tuples or lists, references to themselves or out of range, unknown type codes,
  marshalled data that is not a code object, a code object's header fields (argument counts, stack size, flags)
  set to extremes, its instructions replaced by random opcodes or a jump to itself, the bytecode of the running
  Python (which no decompiler reads), and one Python's code in a file of another.
* :class:`BytecodeStored`: the layer's fields around the bytecode: ``function`` of another type or length, base64
  that is not, defaults and closure values that are hostile or do not fit the code, ``function_type`` and
  ``output_shape_type`` that lie, ``arguments`` that are not a dict, ``output_shape`` bytecode damaged.

Only the standard library, NumPy and h5py are used. The crafted bytes are written, never read as code: nothing
here unmarshals anything (``marshal.dumps`` makes the running Python's bytecode of a harmless lambda).
"""

import base64
import functools
import json
import marshal
import struct
from pathlib import Path

import h5py

import mutate
from mutate import Mutator, NotApplicable

LAMBDAS = mutate.ROOT / "fixtures" / "lambdas"
BYTECODE = "bytecode"
KINDS = (BYTECODE,)

#: Bytes of a code object's header (after its type code) on each writer's Python: the 32-bit fields before the
#: instructions (2.7: argcount, nlocals, stacksize, flags; 3.6/3.7: + kwonlyargcount; 3.8: + posonlyargcount).
HEADER_FIELDS = {"2.7": 4, "3.6": 5, "3.7": 5, "3.8": 6}
#: Where each field named above sits, by Python (index of the 32-bit field).
FIELD_NAMES = {
    "2.7": ("argcount", "nlocals", "stacksize", "flags"),
    "3.6": ("argcount", "kwonlyargcount", "nlocals", "stacksize", "flags"),
    "3.7": ("argcount", "kwonlyargcount", "nlocals", "stacksize", "flags"),
    "3.8": ("argcount", "posonlyargcount", "kwonlyargcount", "nlocals", "stacksize", "flags"),
}


@functools.cache
def manifest():
    """The fixtures/lambdas entries, as kind ``bytecode``, each with its ``root`` folder and its case's input name."""
    entries = json.loads((LAMBDAS / "manifest.json").read_text())
    return tuple(dict(e, file_type=BYTECODE, root=str(LAMBDAS), input="input.h5") for e in entries)


def entry_of(fixture):
    """The manifest entry of a fixture file name (the worker's way to find a case's globals), or ``None``."""
    return next((e for e in manifest() if e["file"] == fixture), None)


def _python(entry_or_src):
    for entry in manifest():
        if entry["file"] == Path(entry_or_src).name:
            return ".".join(entry["python"].split(".")[:2])
    raise NotApplicable(f"{entry_or_src}: not a fixtures/lambdas file")


# ---------------------------------------------------------------------------------------------------------------
# finding and rewriting a Lambda's stored function


def _lambdas(config, found):
    """Every Lambda config dict under ``config`` (nested models included), in order."""
    if isinstance(config, dict):
        if config.get("class_name") == "Lambda" and isinstance(config.get("config"), dict):
            found.append(config["config"])
        for value in config.values():
            _lambdas(value, found)
    elif isinstance(config, list):
        for value in config:
            _lambdas(value, found)
    return found


def _user_lambda(config, rng):
    """One user Lambda (stored as bytecode) of ``config``, chosen by ``rng``."""
    stored = [c for c in _lambdas(config, []) if c.get("function_type") == "lambda" and isinstance(c.get("function"), list)]
    if not stored:
        raise NotApplicable("no Lambda stored as bytecode")
    return rng.choice(stored)


def _decode(text):
    return base64.b64decode(text.encode("ascii"))


def _encode(data):
    return base64.encodebytes(data).decode("ascii")  # Keras 2's codecs.encode(..., "base64"): lines of 76


class _LambdaMutator(Mutator):
    """Copies the fixture, picks a user Lambda of its ``model_config`` and calls ``edit(layer, rng, python)``."""

    kinds = KINDS

    def apply(self, src, dst, rng):
        mutate._copy(src, dst)
        python = _python(src)
        with h5py.File(dst, "r+") as h5:
            config = json.loads(mutate._attr_text(h5.attrs, "model_config"))
            layer = _user_lambda(config, rng)
            what = self.edit(layer, rng, python)
            mutate._set_attr_text(h5.attrs, "model_config", json.dumps(config))
        return f"Lambda {layer.get('name')!r} (Python {python}): {what}"

    def edit(self, layer, rng, python):  # pragma: no cover - abstract
        raise NotImplementedError


# ---------------------------------------------------------------------------------------------------------------
# the marshalled bytes, damaged


class BytecodeBytes(_LambdaMutator):
    """The function's marshalled bytes damaged as a file's bytes are (truncated, flipped, zeroed, added, emptied)."""

    def edit(self, layer, rng, python):
        import mutate_kinds

        data, what = mutate_kinds.damage_bytes(_decode(layer["function"][0]), rng)
        layer["function"][0] = _encode(data)
        return what


# ---------------------------------------------------------------------------------------------------------------
# hostile marshal data, made on purpose

_I32 = struct.Struct("<i")
_FLAG_REF = 0x80


def _i32(value):
    return _I32.pack(value)


def _nested(opener, depth):
    """``depth`` one-element containers, one inside the next, around None (``(`` tuples, ``[`` lists)."""
    return (opener + _i32(1)) * depth + b"N"


def _crafted(kind, data, python, rng):
    """Hostile marshal data of ``kind``, from the real function's bytes ``data``; returns (bytes, what)."""
    fields = HEADER_FIELDS[python]
    code_at = 1 + 4 * fields  # the instructions' string: type code, length, bytes
    if kind in ("header", "opcodes", "code-length") and (len(data) < code_at + 5 or data[code_at] & ~_FLAG_REF != 0x73):
        raise NotApplicable(f"no code object header where Python {python} puts it")
    if kind == "huge-string":
        return b"s" + _i32(0x7FFFFFFF) + b"x" * 16, "a string declaring 2 GiB"
    if kind == "huge-tuple":
        return b"(" + _i32(0x7FFFFFFF) + b"N" * 16, "a tuple declaring 2**31 - 1 items"
    if kind == "huge-long":
        return b"l" + _i32(0x7FFFFFFF) + b"\x01\x00" * 16, "a long integer declaring 2**31 - 1 digits"
    if kind == "negative-length":
        return b"s" + _i32(-1) + b"x" * 16, "a string of length -1"
    if kind == "deep-tuples":
        return _nested(b"(", 200_000), "200,000 nested tuples"
    if kind == "deep-lists":
        return _nested(b"[", 200_000), "200,000 nested lists"
    if kind == "self-reference":
        return bytes([ord("[") | _FLAG_REF]) + _i32(1) + b"r" + _i32(0), "a list that holds itself (a reference loop)"
    if kind == "bad-reference":
        return b"(" + _i32(2) + b"r" + _i32(0x7FFFFFFF) + b"N", "a reference to object 2**31 - 1 of none"
    if kind == "unknown-type":
        code = rng.choice([b"?", b"\x00", b"\xff", b"Q", b"\x7f"])
        return code + data[1:], f"the code object's type code replaced by {code!r}"
    if kind == "not-code":
        value = rng.choice([b"N", b"T", b"i" + _i32(7), b"z\x03abc", b"{" + b"z\x01a" + b"i" + _i32(1) + b"0"])
        return value, f"marshalled {value!r}, not a code object"
    if kind == "header":
        names = FIELD_NAMES[python]
        field = rng.randrange(fields)
        value = rng.choice([0x7FFFFFFF, -1, -0x80000000, 0xFFFF, 255])
        out = bytearray(data)
        out[1 + 4 * field : 5 + 4 * field] = _i32(value)
        return bytes(out), f"{names[field]} set to {value}"
    if kind == "code-length":
        out = bytearray(data)
        value = rng.choice([0x7FFFFFFF, len(data) * 4, 0, -5])
        out[code_at + 1 : code_at + 5] = _i32(value)
        return bytes(out), f"the instructions' length set to {value}"
    if kind == "opcodes":
        length = _I32.unpack_from(data, code_at + 1)[0]
        start = code_at + 5
        if rng.random() < 0.5:
            body = rng.randbytes(length)
            what = f"{length} bytes of instructions replaced by random bytes"
        else:  # a jump to itself: JUMP_ABSOLUTE 0 (113) in 3.6-3.8's wordcode, and 2.7's 3-byte form
            body = (bytes([113, 0]) * length)[:length] if python != "2.7" else (bytes([113, 0, 0]) * length)[:length]
            what = "every instruction a jump to the first (an endless loop if it ran)"
        return data[:start] + body + data[start + length :], what
    if kind == "running-python":
        return marshal.dumps((lambda x: x * 2).__code__), "bytecode of the running Python (not the writer's)"
    if kind == "other-python":
        others = [e for e in manifest() if not e["python"].startswith(python)]
        entry = rng.choice(others)
        with h5py.File(LAMBDAS / entry["file"], "r") as h5:
            config = json.loads(mutate._attr_text(h5.attrs, "model_config"))
        other = _user_lambda(config, rng)
        return _decode(other["function"][0]), f"Lambda {other['name']!r}'s bytecode of Python {entry['python']}"
    raise ValueError(kind)


CRAFTED = ("huge-string", "huge-tuple", "huge-long", "negative-length", "deep-tuples", "deep-lists", "self-reference",
           "bad-reference", "unknown-type", "not-code", "header", "header", "code-length", "opcodes", "opcodes",
           "running-python", "other-python")


class BytecodeCrafted(_LambdaMutator):
    """Hostile marshal data made on purpose, in place of the function's (see :func:`_crafted`)."""

    def edit(self, layer, rng, python):
        data, what = _crafted(rng.choice(CRAFTED), _decode(layer["function"][0]), python, rng)
        layer["function"][0] = _encode(data)
        return what


# ---------------------------------------------------------------------------------------------------------------
# the fields stored around the bytecode


def _stored(layer, rng, python):
    function = layer["function"]
    how = rng.choice(["function-type", "short-list", "long-list", "not-base64", "base64-junk", "defaults", "defaults",
                      "closure", "closure", "function-kind", "output-shape", "output-shape-type", "arguments",
                      "dict-form"])
    if how == "function-type":
        layer["function"] = rng.choice([None, 7, 1.5, True, {"a": 1}, function[0]])
        return f"function stored as {type(layer['function']).__name__}"
    if how == "short-list":
        layer["function"] = function[: rng.randrange(2)]
        return f"function stored as a list of {len(layer['function'])}"
    if how == "long-list":
        layer["function"] = function + [None] * rng.choice([1, 5, 1000])
        return f"function stored as a list of {len(layer['function'])}"
    if how == "not-base64":
        function[0] = rng.choice(["!!!not base64!!!", "4wEAAAAA=", "", "\u00e9\u00e9\u00e9", "=" * 64, "A"])
        return f"bytecode text {function[0]!r}"
    if how == "base64-junk":
        text = function[0]
        at = rng.randrange(len(text))
        function[0] = text[:at] + rng.choice(["\x00", "*", "====", "\n\n", "\u2028"]) + text[at:]
        return f"a stray character in the base64 at {at}"
    if how == "defaults":
        value = rng.choice([
            "not a list", 3, {"x": 1}, [[[[[]]]]] * 50, [1e308, -1e308, 2**70], list(range(2_000)),
            [{"class_name": "__tuple__", "items": [1, 2]}], [None] * 64, _deep_list(500),
        ])
        function[1] = value
        return f"defaults {str(value)[:60]}"
    if how == "closure":
        value = rng.choice([
            "not a list", 5, [1, 2, 3, 4, 5, 6], [], [{"class_name": "Tensor"}], [_deep_list(500)], [2**80],
        ])
        function[2] = value
        return f"closure {str(value)[:60]}"
    if how == "function-kind":
        layer["function_type"] = rng.choice(["function", "module", "raw", "bytecode", None, 3])
        return f"function_type {layer['function_type']!r} with bytecode stored"
    if how == "output-shape":
        shape = layer.get("output_shape")
        if not (isinstance(shape, list) and shape and isinstance(shape[0], str)):
            layer["output_shape"] = [_encode(_crafted("opcodes", _decode(function[0]), python, rng)[0]), None, None]
            layer["output_shape_type"] = "lambda"
            return "an output-shape function of random instructions"
        import mutate_kinds

        data, what = mutate_kinds.damage_bytes(_decode(shape[0]), rng)
        shape[0] = _encode(data)
        return f"output-shape bytecode {what}"
    if how == "output-shape-type":
        layer["output_shape_type"] = "lambda"
        layer["output_shape"] = rng.choice([[1, 2], "4wEAAA==", [None, None, None], {"x": 1}])
        return f"output_shape_type 'lambda' with output_shape {layer['output_shape']!r}"
    if how == "arguments":
        layer["arguments"] = rng.choice([[1, 2], "factor", 3, {"factor": {"class_name": "Lambda"}}, {"": 1}])
        return f"arguments {layer['arguments']!r}"
    # Keras 3's spelling of a stored function, around the writer's bytecode
    layer["function"] = {"class_name": "__lambda__", "config": {"code": function[0], "defaults": function[1],
                                                              "closure": function[2]}}
    return "Keras 3's __lambda__ form around the writer's bytecode"


def _deep_list(depth):
    value = []
    for _ in range(depth):
        value = [value]
    return value


class BytecodeStored(_LambdaMutator):
    """The fields Keras stored around the bytecode damaged (see :func:`_stored`)."""

    def edit(self, layer, rng, python):
        return _stored(layer, rng, python)


#: The mutators of this module, added to :data:`mutate.MUTATORS` by :func:`mutate.register`.
MUTATORS = [BytecodeBytes(), BytecodeCrafted(), BytecodeStored()]
