"""Python 3.13's Lambda bytecode, read as data: recovered as written, labelled 3.13 alone, and proven.

Every function here is marshalled by the real Python that writes it (pyenv's 3.13.0 and 3.12, in a subprocess: this
process never unmarshals anything); where that Python is not installed its cases are skipped.

3.13 writes the shapes Keras Lambdas take with other instructions than 3.12 (pairs of locals in one instruction,
TO_BOOL before each test, the NULL above a callable, CALL_KW, MAKE_FUNCTION + SET_FUNCTION_ATTRIBUTE,
CONVERT_VALUE / FORMAT_SIMPLE / FORMAT_WITH_SPEC, an inlined comprehension's END_FOR + POP_TOP): each is recovered as
written, labelled 3.13 alone (never "3.12 or 3.13": the opcodes and inline caches tell them apart), and proven by
recompiling it on 3.13 (``mgpu-io lambdas --check``: the recompiled bytes are the stored ones). 3.13's padded and
instrumented bytes are refused in ``test_proof_bytes.py``.
"""

import ast
import base64
import json
import shutil
import subprocess

import h5py
import pytest
from helpers import fixture_path, runner

import mgpu_io
from mgpu_io.format.config import walk_layers
from mgpu_io.lambdas import proof
from mgpu_io.lambdas import recovery as recover

pytestmark = pytest.mark.skipif(not recover.available(), reason='needs the decompilers: pip install "mgpu-io[lambdas]"')

#: Keras 3 style Lambdas (``lambda x: ops...``) and the shapes 3.9-3.12 read: (what the user wrote, the defaults
#: Keras stored beside the code, the source recovered). ``make`` returns a closure (Keras stores its values).
KERAS3 = [
    ("f = lambda x: x / 255.0", None, "lambda x: x / 255.0"),
    ("f = lambda x: ops.expand_dims(x, -1)", None, "lambda x: ops.expand_dims(x, -1)"),
    ("f = lambda x: x[:, :4]", None, "lambda x: x[:, :4]"),
    ("def make(k):\n    return lambda x: x * k\n", None, "lambda x: x * k"),
    ("f = lambda x, factor: x * factor", None, "lambda x, factor: x * factor"),
    ("f = lambda t: t[0] - t[1]", None, "lambda t: t[0] - t[1]"),
    ("f = lambda x: x * 2.0 if x.shape[-1] > 2 else x", None, "lambda x: x * 2.0 if x.shape[-1] > 2 else x"),
    ("f = lambda x, s=0.25: x * s", [0.25], "lambda x, s=0.25: x * s"),
    ("f = lambda x: tf.nn.relu(x) + tf.math.square(x)", None, "lambda x: tf.nn.relu(x) + tf.math.square(x)"),
    ("f = lambda x: ops.mean(x, axis=1, keepdims=True)", None, "lambda x: ops.mean(x, axis=1, keepdims=True)"),
    ("f = lambda x: ops.sum(*x)", None, "lambda x: ops.sum(*x)"),
    ("f = lambda x: ops.sum(**x)", None, "lambda x: ops.sum(**x)"),
    ("f = lambda x: ops.sum(x, *AX, keepdims=True, **KW)", None, "lambda x: ops.sum(x, *AX, keepdims=True, **KW)"),
    ("f = lambda x, *a, **k: fn(x, *a, **k)", None, "lambda x, *a, **k: fn(x, *a, **k)"),
    ("f = lambda x: [v * 2 for v in x]", None, "lambda x: [v * 2 for v in x]"),
    ("f = lambda x: {v for v in x if v}", None, "lambda x: {v for v in x if v}"),
    ("f = lambda x: {k: v * 2 for k, v in x.items() if k}", None, "lambda x: {k: v * 2 for k, v in x.items() if k}"),
    ("f = lambda x: [a + b for a, b in x]", None, "lambda x: [a + b for a, b in x]"),
    ("f = lambda x: ops.sum(v for v in x)", None, "lambda x: ops.sum(v for v in x)"),
    ("f = lambda x: ops.stack([x[:, i] for i in range(3) if i != 1], axis=1)", None,
     "lambda x: ops.stack([x[:, i] for i in range(3) if i != 1], axis=1)"),
    ("def make(k):\n    return lambda x: ops.map(lambda y, s=2: y * k * s, x)\n", None,
     "lambda x: ops.map(lambda y, s=2: y * k * s, x)"),
    ("f = lambda x: f'{x!r:>10}' + f'{x:{w}}' + f'{x!s}' + f'{x}'", None,
     "lambda x: f'{x!r:>10}' + f'{x:{w}}' + f'{x!s}' + f'{x}'"),
    ("f = lambda x: not x", None, "lambda x: not x"),
    ("f = lambda x: (x and y) or z", None, "lambda x: x and y or z"),
    ("f = lambda x: x.method(1, key=2)", None, "lambda x: x.method(1, key=2)"),
    ("f = lambda x: g(x)(y)", None, "lambda x: g(x)(y)"),
    ("f = lambda x: x @ W", None, "lambda x: x @ W"),
    ("def f(x):\n    y = x\n    return y + x\n", None, "def f(x):\n    y = x\n    return y + x\n"),
    ("def f(x):\n    a, b = x[:, :3], x[:, 3:]\n    return a + b\n", None,
     "def f(x):\n    a, b = (x[:, :3], x[:, 3:])\n    return a + b\n"),
]  # fmt: skip

#: The function of each source (a `make`'s closure), marshalled by the running Python, with its instructions' bytes
#: and the running Python's opcodes.
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


def _same_code(a, b):
    return ast.dump(ast.parse(a)) == ast.dump(ast.parse(b))


def _prove(python, payloads, answers):
    items = [{"code": data, "source": recover.function_source(answer), "freevars": answer.get("freevars")}
             for data, answer in zip(payloads, answers)]  # fmt: skip
    return proof.compare_recompiled(items, python)


# --- Python 3.13 ----------------------------------------------------------------------------------------------------


def test_keras3_style_lambdas_written_on_python_3_13_are_recovered_as_written_and_proven():
    python = _python("3.13")
    payloads, _, _ = _marshalled(python, [source for source, _, _ in KERAS3])
    answers = recover.decompile(payloads)
    refused = [(source, a["error"][:300]) for (source, _, _), a in zip(KERAS3, answers) if "error" in a]
    assert refused == []
    assert {a["python"] for a in answers} == {"3.13"}  # never "3.12 or 3.13"
    for (source, defaults, recovered), answer in zip(KERAS3, answers):
        assert _same_code(recover.function_source(answer, defaults), recovered), (source, answer["body"])
    closures = [a["freevars"] for (source, _, _), a in zip(KERAS3, answers) if source.startswith("def make")]
    assert closures == [["k"], ["k"]]
    checks = _prove(python, payloads, answers)
    assert [(s, c) for (s, _, _), c in zip(KERAS3, checks) if not c.get("same")] == []


def test_the_bytes_of_3_12_and_3_13_are_each_labelled_by_their_own_python_only():
    """The same sources, marshalled by 3.12 and by 3.13: each reading names its writer alone, or (3.12) the 3.11
    whose bytes are the same; 3.13 is never in a label of 3.12's bytes, nor 3.12 in one of 3.13's."""
    sources = [source for source, _, _ in KERAS3]
    labels = {}
    for version in ("3.12", "3.13"):
        payloads, _, _ = _marshalled(_python(version), sources)
        labels[version] = [a.get("python") for a in recover.decompile(payloads)]
    assert set(labels["3.13"]) == {"3.13"}
    assert all(label and "3.12" in label.split(" or ") and "3.13" not in label for label in labels["3.12"]), labels


def test_what_3_13_compiles_that_the_decompiler_does_not_read_is_refused_by_name():
    python = _python("3.13")
    sources = ["def f(x):\n    a = b = x\n    return a\n", "f = lambda x: 0 < x < 1\n",
               "def f(x):\n    while x.ndim > 2:\n        x = x[0]\n    return x\n"]  # fmt: skip
    payloads, _, _ = _marshalled(python, sources)
    for source, answer in zip(sources, recover.decompile(payloads)):
        assert "3.13: mgpu-io's decompiler stopped at " in answer["error"], (source, answer)


def test_a_lambda_written_on_3_13_in_a_file_is_shown_and_proven_by_the_lambdas_command(tmp_path):
    """A tf_keras 2.20 file (its writers ran on Python 3.9-3.14) whose Lambda a user wrote on 3.13."""
    python = _python("3.13")
    [payload], _, _ = _marshalled(python, ["def double(t, factor=1.0):\n    return ops.multiply(t, factor) * 2\n"])
    path = tmp_path / "model.h5"
    shutil.copyfile(fixture_path({"file": "k224_template_lambda_x2_full.h5"}), path)
    with h5py.File(path, "r+") as h5:
        config = json.loads(h5.attrs["model_config"])
        [layer] = [layer for layer in walk_layers(config, wrapped=True) if layer["config"].get("name") == "double"]
        layer["config"]["function"] = [base64.b64encode(payload).decode("ascii"), [1.0], None]
        h5.attrs["model_config"] = json.dumps(config)
        h5.attrs["keras_version"] = "2.20.0"
    [double] = [lam for lam in mgpu_io.inspect(path).lambdas if lam["layer"] == "double"]
    assert double["recovered"]["python"] == "3.13"
    assert double["recovered"]["source"] == "def double(t, factor=1.0):\n    return ops.multiply(t, factor) * 2\n"
    from mgpu_io.cli import app

    result = runner.invoke(app, ["lambdas", str(path), "-o", str(tmp_path / "m.py"), "--check"])
    assert result.exit_code == 0, result.output
    assert "double: Python 3.13; proven: recompiled on Python 3.13, its code is the stored code" in result.stdout
