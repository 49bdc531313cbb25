"""What "proven" means for a recovered Lambda (``mgpu-io lambdas --check``): the recompiled bytes are the stored ones.

Every function here is marshalled by the real Python that writes it (pyenv's 2.7, 3.6, ..., 3.13, in a subprocess:
this process never unmarshals anything); where that Python is not installed its cases are skipped.

A body padded with EXTENDED_ARG prefixes of argument 0, or holding an ``INSTRUMENTED_*`` opcode (which 3.12+'s
``co_code`` turns back into the plain one, and whose unmarshalling may crash the interpreter), runs as the same
instructions and was once called proven: both are refused by the decompiler and "not proven" by the check, which
compares the stored instructions' bytes before it unmarshals anything. Bytes after the code, and a nested code's
bytes, count too; a NOP that 3.10+ keeps for a line of its own is recovered as ``pass``, which compiles to it.
"""

import base64
import json
import struct
import subprocess

import pytest

from mgpu_io.lambdas import proof
from mgpu_io.lambdas import recovery as recover

pytestmark = pytest.mark.skipif(not recover.available(), reason='needs the decompilers: pip install "mgpu-io[lambdas]"')

#: The function of each source, marshalled by the running Python, with its instructions' bytes and the running
#: Python's opcodes (the tests below damage the bytes with them).
MARSHAL = r"""
import base64, dis, json, marshal, sys
out = []
for source in json.loads(sys.stdin.read()):
    code = compile(source, "/home/user/train.py", "exec")
    function = [c for c in code.co_consts if hasattr(c, "co_code")][0]
    if function.co_name == "make":
        function = [c for c in function.co_consts if hasattr(c, "co_code")][0]
    out.append({"data": base64.b64encode(marshal.dumps(function)).decode("ascii"),
                "code": base64.b64encode(function.co_code).decode("ascii")})
ops = dict(getattr(dis, "_all_opmap", dis.opmap))
sys.stdout.write(json.dumps({"functions": out, "ops": ops}))
"""


def _python(version):
    python = proof.find_python(version)
    if python is None:
        pytest.skip(f"Python {version} is not installed (pyenv)")
    return python


def _marshalled(python, sources):
    """``(payloads, instruction bytes, opcodes)``: each source's function as ``python`` marshals it."""
    done = subprocess.run([python, "-c", MARSHAL], input=json.dumps(sources), capture_output=True, text=True,
                          check=True, timeout=120)  # fmt: skip
    found = json.loads(done.stdout)
    payloads = [base64.b64decode(f["data"]) for f in found["functions"]]
    codes = [base64.b64decode(f["code"]) for f in found["functions"]]
    return payloads, codes, found["ops"]


def _prove(python, payloads, answers):
    items = [{"code": data, "source": recover.function_source(answer), "freevars": answer.get("freevars")}
             for data, answer in zip(payloads, answers)]  # fmt: skip
    return proof.compare_recompiled(items, python)


#: A function with no jump (the padding shifts no target): the bytes the tests below damage.
PLAIN = "f = lambda x: x * 2.0"
#: Builds ``PLAIN``'s code with 10,000 EXTENDED_ARG prefixes of argument 0 before its first instruction after
#: RESUME, as the running Python's own ``CodeType`` (never run) and writes it marshalled: what the interpreter runs
#: as the same instructions.
PADDED = r"""
import base64, dis, marshal, sys, types
code = compile(sys.argv[1], "/home/user/train.py", "exec")
function = [c for c in code.co_consts if hasattr(c, "co_code")][0]
raw = function.co_code
start = 2 if "RESUME" in dis.opmap and bytearray(raw)[0] == dis.opmap["RESUME"] else 0
extended = dis.opmap["EXTENDED_ARG"]
unit = bytearray([extended, 0]) if sys.version_info >= (3, 6) else bytearray([extended, 0, 0])
padded = bytes(bytearray(raw[:start]) + unit * 10000 + bytearray(raw[start:]))
if hasattr(function, "replace"):
    crafted = function.replace(co_code=padded)
else:
    head = [function.co_argcount] + ([function.co_kwonlyargcount] if sys.version_info[0] >= 3 else [])
    crafted = types.CodeType(*(head + [function.co_nlocals, function.co_stacksize, function.co_flags, padded,
                               function.co_consts, function.co_names, function.co_varnames, function.co_filename,
                               function.co_name, function.co_firstlineno, function.co_lnotab]))
sys.stdout.write(base64.b64encode(marshal.dumps(crafted)).decode("ascii"))
"""


@pytest.mark.parametrize("version", ["2.7", "3.6", "3.8", "3.10", "3.11", "3.12", "3.13"])
def test_a_body_padded_with_extended_args_is_refused_and_not_proven(version):
    python = _python(version)
    done = subprocess.run([python, "-c", PADDED, PLAIN], capture_output=True, text=True, check=True, timeout=120)
    padded = base64.b64decode(done.stdout)
    [answer] = recover.decompile([padded])
    assert "body" not in answer
    assert f"{version}: EXTENDED_ARG at offset " in answer["error"], answer["error"]
    [check] = proof.compare_recompiled([{"code": padded, "source": "lambda x: x * 2.0", "freevars": []}], python)
    assert check["same"] is False
    assert check["difference"].startswith("the function: its bytecode is not the recompiled bytes ("), check
    assert "EXTENDED_ARG 0 stored" in check["difference"] or "EXTENDED_ARG stored" in check["difference"]


@pytest.mark.parametrize("version", ["3.12", "3.13"])
@pytest.mark.parametrize("opname", ["INSTRUMENTED_RETURN_VALUE", "INSTRUMENTED_LINE", "INSTRUMENTED_INSTRUCTION"])
def test_an_instrumented_opcode_is_refused_and_not_proven_never_unmarshalled(version, opname):
    """The real Python's marshalled bytes with its RETURN_VALUE made ``opname``: 3.12+'s ``co_code`` shows
    INSTRUMENTED_RETURN_VALUE as RETURN_VALUE (it was proven), and unmarshalling INSTRUMENTED_LINE crashes the
    interpreter: the check compares the stored bytes before it unmarshals anything, and answers."""
    python = _python(version)
    [payload], [code], ops = _marshalled(python, [PLAIN])
    where = payload.index(struct.pack("<i", len(code)) + code) + 4  # the instructions' bytes within marshal's
    at = max(k for k in range(0, len(code), 2) if code[k] == ops["RETURN_VALUE"])
    crafted = bytearray(payload)
    crafted[where + at] = ops[opname]
    crafted = bytes(crafted)
    [answer] = recover.decompile([crafted])
    assert f"{version}: opcode {opname} at offset {at}, which marshal never stores," in answer["error"], answer
    [check] = proof.compare_recompiled([{"code": crafted, "source": "lambda x: x * 2.0", "freevars": []}], python)
    assert check == {"same": False, "difference": f"the function: its bytecode is not the recompiled bytes "
                     f"({len(code)} bytes stored, {len(code)} recompiled; at offset {at}: {opname} 0 stored, "
                     f"RETURN_VALUE 0 recompiled)"}  # fmt: skip


@pytest.mark.parametrize("version", ["2.7", "3.8", "3.12", "3.13"])
def test_bytes_after_the_stored_code_or_a_damaged_one_are_not_proven(version):
    python = _python(version)
    [payload], _, _ = _marshalled(python, [PLAIN])
    item = {"source": "lambda x: x * 2.0", "freevars": []}
    same, longer, short = proof.compare_recompiled([dict(item, code=payload), dict(item, code=payload + b"N"),
                                       dict(item, code=payload[:-3])], python)  # fmt: skip
    assert same == {"same": True}
    assert longer == {"same": False, "difference": "the stored bytes are not this Python's marshalled code (1 bytes "
                                                   "follow the stored code object)"}  # fmt: skip
    assert short["same"] is False and "ends within an object" in short["difference"]


def test_a_nested_functions_bytes_are_compared_too():
    """A comprehension's instructions (its own code object up to 3.11) are stored bytes too, in marshal's order:
    where only they differ, the difference names the comprehension."""
    python = _python("3.10")
    [payload], _, _ = _marshalled(python, ["f = lambda x: [v * 2 for v in x]"])
    [check] = proof.compare_recompiled([{"code": payload, "source": "lambda x: [v + 2 for v in x]", "freevars": []}], python)
    assert check["same"] is False
    assert check["difference"].startswith("the function's <listcomp>: its bytecode is not the recompiled bytes ")
    assert "BINARY_MULTIPLY 0 stored, BINARY_ADD 0 recompiled" in check["difference"], check


@pytest.mark.parametrize("version", ["3.10", "3.11", "3.12", "3.13"])
def test_a_line_that_holds_only_a_nop_is_recovered_as_pass_so_that_the_bytes_are_the_same(version):
    """3.10+ keeps a NOP for a line with no other instruction (`pass`, a bare string): the stored bytes hold it, so
    the recovered source must too for its bytes to be the stored ones (they were proven with NOPs left out before)."""
    python = _python(version)
    sources = ["def f(x):\n    y = x\n    'a note'\n    return y\n",
               "def f(x, mode=None):\n    if mode is None:\n        pass\n    return x\n"]  # fmt: skip
    payloads, _, _ = _marshalled(python, sources)
    answers = recover.decompile(payloads)
    assert [a.get("body") for a in answers] == ["y = x\npass\nreturn y\n", "if mode is None:\n    pass\nreturn x\n"]
    assert [c.get("same") for c in _prove(python, payloads, answers)] == [True, True]


@pytest.mark.parametrize("version", ["3.8", "3.10", "3.12", "3.13"])
def test_an_argument_that_needs_its_extended_arg_is_read_and_proven(version):
    """300 constants: LOAD_CONST 256 and above take an EXTENDED_ARG, which the compiler writes and the check keeps."""
    python = _python(version)
    source = "f = lambda x: x + " + " + ".join(f"{n}.5" for n in range(300))
    payloads, _, _ = _marshalled(python, [source])
    [answer] = recover.decompile(payloads)
    assert version in answer["python"].split(" or "), answer.get("error")
    assert [c.get("same") for c in _prove(python, payloads, [answer])] == [True]


@pytest.mark.parametrize("version", ["3.11", "3.12", "3.13"])
def test_a_call_of_an_imported_modules_attribute_is_proven_in_a_module_that_imports_it(version):
    """3.11+ compiles `ops.sum(x)` as a plain call where the writer's module imported `ops` (as Keras 3 code does:
    `from keras import ops`) and as a method's call where it did not: the check compiles the source again in a
    module importing such names, and names those that made the stored bytes."""
    python = _python(version)
    sources = ["from keras import ops\nimport numpy as np\nf = lambda x: ops.sum(x) + np.mean(x) + K.max(x)",
               "f = lambda x: ops.sum(x) + np.mean(x) + K.max(x)"]  # fmt: skip
    payloads, _, _ = _marshalled(python, sources)
    answers = recover.decompile(payloads)
    assert [a.get("body") for a in answers] == ["return ops.sum(x) + np.mean(x) + K.max(x)\n"] * 2
    assert _prove(python, payloads, answers) == [{"same": True, "imported": ["ops", "np"]}, {"same": True}]
    [other] = proof.compare_recompiled([{"code": payloads[0], "source": "lambda x: ops.sum(x) + np.mean(x) + K.min(x)"}], python)
    assert other["same"] is False and "difference" in other  # what differs otherwise is still a difference
