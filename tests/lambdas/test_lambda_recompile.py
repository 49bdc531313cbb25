"""Every recovered Lambda source is proven: compiled again on the writer's own Python, its code is the stored code.

The writers' Pythons are pyenv's (2.7, 3.6-3.13 here); where one is absent its cases are skipped. The comparison runs
in that Python's own process (lambdas/_recompile.py): instructions, constants, names, argument counts and flags, not
line numbers. The functions are the real writers' (fixtures/lambdas, fixtures/applications, the layer sweep) and the
shapes Keras Lambdas take, compiled here by each Python from source.
"""

import base64
import json
import subprocess

import pytest
from helpers import APP_MANIFEST, ROOT, fixture_path, runner

import mgpu_io
from mgpu_io.lambdas import proof as recompile
from mgpu_io.lambdas import recovery as recover

pytestmark = pytest.mark.skipif(not recover.available(), reason='needs the decompilers: pip install "mgpu-io[lambdas]"')

LAMBDA_FIXTURES = ROOT / "fixtures" / "lambdas"
LAMBDA_MANIFEST = json.loads((LAMBDA_FIXTURES / "manifest.json").read_text())

#: The shapes Keras Lambda functions take (module-level `f = lambda ...` or a `def`; `make` returns a closure).
SHAPES = [
    "f = lambda x, flag=True: x * 2.0 if flag else x - 1.0",
    "f = lambda x: x * SCALE + OFFSET",
    "f = lambda x, mask=None: x if mask is None else x * mask",
    "f = lambda x, mask=None: x * mask if mask is not None else x",
    "f = lambda x: x[:, 1:3, ::2]",
    "f = lambda x: x[:, 0]",
    "f = lambda x: x[1:]",
    "f = lambda x: x[..., None]",
    "f = lambda t: K.concatenate([*t[:2], *t[2:]], axis=-1)",
    "f = lambda t: K.concatenate([t[0], t[1]], axis=-1)",
    "f = lambda x, mode='a': x * 2 if mode in ('a', 'b') else -x",
    "f = lambda x, mode='a': x * 2 if mode not in ('a', 'b') else -x",
    "f = lambda x: K.sum(K.square(x), axis=[1, 2], keepdims=True)",
    "f = lambda x: tf.reduce_mean(x, *AXES, **KW)",
    "f = lambda x: np.mean(x, *AXES)",
    "f = lambda x: x.shape[0] in SIZES and x.ndim > 1 or not x.ndim",
    "f = lambda x: K.stack([x[:, i] * 2 for i in range(3)], axis=1)",
    "f = lambda x: K.stack([x[:, i] for i in range(3) if i != 1], axis=1)",
    "f = lambda x: K.concatenate(list(v * 2 for v in x), axis=-1)",
    "f = lambda x: {k: v for k, v in x.items()}",
    "f = lambda x: tf.map_fn(lambda y: y * 2.0, x)",
    "f = lambda x: (x if x.ndim == 2 else K.flatten(x)) if DO else x",
    "f = lambda x: x * 2 if a and b else x",
    "f = lambda x: x * 2 if a or b else x",
    "f = lambda x: -x if x is not None and FLAG else +x",
    "f = lambda x: x if not FLAG else x * 2",
    "f = lambda x: (x, x ** 2, ~x)",
    "f = lambda inputs: inputs[0] + inputs[1] * 0.2",
    "f = lambda x: K.l2_normalize(x, axis=-1)",
    "f = lambda x: x.reshape((-1, 4)).astype('float32')",
    "f = lambda a, b=1, *args, c, **kw: a + b",
    "f = lambda x: f'{x}' + 'a'",
    "f = lambda x: K.sum(x, axis=-1) < 0.5",
    "f = lambda x: [x, *EXTRA]",
    "def f(x, scale=1.0):\n    a, b = x\n    y = a * scale\n    y += b\n    return K.relu(y)\n",
    "def f(args):\n    z_mean, z_log_var = args\n    eps = K.random_normal(shape=(K.shape(z_mean)[0], 8))\n"
    "    return z_mean + K.exp(0.5 * z_log_var) * eps\n",
    "def f(x, mode=None):\n    if mode is None:\n        return x\n    return x * mode\n",
    'def f(x):\n    """Doc."""\n    if x.ndim > 2:\n        x = K.flatten(x)\n    return x\n',
    "def f(x):\n    if FLAG:\n        y = x\n    else:\n        y = -x\n    return y\n",
    "def make(p):\n    def power(x):\n        return K.pow(x, p)\n    return power\n",
    "def f(x):\n    a, b = x[:, :3], x[:, 3:]\n    return a + b\n",
    "def f(x):\n    a, b, c = x[0], x[1], x[2]\n    return a + b * c\n",
]
MODERN = ["3.9", "3.10", "3.11", "3.12", "3.13"]
OLDER = ["3.6", "3.7", "3.8"]

COMPILE = r"""
import base64, json, marshal, sys
out = []
for source in json.loads(sys.stdin.read()):
    code = compile(source, "/home/user/train.py", "exec")
    function = [c for c in code.co_consts if hasattr(c, "co_code")][0]
    if function.co_name == "make":
        function = [c for c in function.co_consts if hasattr(c, "co_code")][0]
    out.append(base64.b64encode(marshal.dumps(function)).decode("ascii"))
sys.stdout.write(json.dumps(out))
"""


def _python(version):
    python = recompile.find_python(version)
    if python is None:
        pytest.skip(f"Python {version} is not installed (pyenv)")
    return python


def _written_by(python, sources):
    """Each source's function, marshalled by the real ``python``: the bytes Keras stores."""
    done = subprocess.run([python, "-c", COMPILE], input=json.dumps(sources), capture_output=True, text=True,
                          check=True, timeout=120)
    return [base64.b64decode(text) for text in json.loads(done.stdout)]


def _prove(python, payloads, answers):
    items = [{"code": data, "source": recover.function_source(answer), "freevars": answer.get("freevars")}
             for data, answer in zip(payloads, answers) if "body" in answer]
    return items, recompile.compare_recompiled(items, python)


@pytest.mark.parametrize("version", MODERN)
def test_every_shape_of_a_modern_pythons_lambdas_is_recovered_and_proven_by_recompiling_it(version):
    python = _python(version)
    payloads = _written_by(python, SHAPES)
    answers = recover.decompile(payloads)
    refused = [(source, a["error"]) for source, a in zip(SHAPES, answers) if "error" in a]
    assert refused == []
    assert all(version in a["python"].split(" or ") for a in answers)
    items, checks = _prove(python, payloads, answers)
    assert [(i["source"], c) for i, c in zip(items, checks) if not c.get("same")] == []


@pytest.mark.parametrize("version", OLDER)
def test_what_the_older_decompilers_recover_is_proven_and_what_they_misread_is_refused(version):
    """uncompyle6 and decompyle3 read some conditional lambdas of 3.6-3.8 as statements that fall off the end (not
    the function): those are refused; everything recovered recompiles to the stored code."""
    python = _python(version)
    payloads = _written_by(python, SHAPES)
    answers = recover.decompile(payloads)
    items, checks = _prove(python, payloads, answers)
    assert [(i["source"], c) for i, c in zip(items, checks) if not c.get("same")] == []
    assert len(items) >= len(SHAPES) - 3, [a.get("error", "")[:200] for a in answers if "error" in a]


def test_bytecode_of_python_3_10_is_labelled_3_10_never_3_8():
    """The issue's example: decompyle3 read tf.keras 2.10's 3.10 bytecode as 3.8 and gave another function."""
    python = _python("3.10")
    [payload] = _written_by(python, [SHAPES[0]])
    [answer] = recover.decompile([payload])
    assert answer["python"] == "3.10"
    assert recover.function_source(answer, [True]) == "lambda x, flag=True: x * 2.0 if flag else x - 1.0"


def test_the_writers_pythons_narrow_the_label_and_a_reading_outside_them_is_refused():
    python = _python("3.9")
    [payload] = _written_by(python, ["f = lambda x: x * 2.0\n"])
    [free] = recover.decompile([payload])
    assert free["python"] == "3.8 or 3.9"  # the same bytes in both: either Python may have written them
    [narrowed] = recover.decompile([payload], pythons=["3.9", "3.10", "3.11"])  # tf.keras 2.15's Pythons
    assert narrowed["python"] == "3.9"
    [outside] = recover.decompile([payload], pythons=["3.11", "3.12"])
    assert outside["error"] == ("it reads only as Python 3.9 or 3.8, on which its writer did not run (the writer "
                                "ran on Python 3.11, 3.12)")


@pytest.mark.parametrize("source,stopped_at", [
    ("def f(x):\n    while x.ndim > 2:\n        x = x[0]\n    return x\n", r"POP_JUMP_BACKWARD_IF_TRUE"),
    ("def f(x):\n    try:\n        return x[0]\n    except IndexError:\n        return x\n", "PUSH_EXC_INFO"),
    ("f = lambda x: 0 < x < 1\n", "SWAP|COPY|DUP_TOP|ROT_THREE"),
])
def test_what_the_decompiler_does_not_read_is_refused_by_name_with_its_opcode(source, stopped_at):
    import re

    python = _python("3.11")
    [payload] = _written_by(python, [source])
    [answer] = recover.decompile([payload])
    assert "mgpu-io's decompiler stopped at" in answer["error"]
    assert re.search(rf"3\.11: mgpu-io's decompiler stopped at ({stopped_at}) at offset \d+", answer["error"])


# --- the real writers' files ---------------------------------------------------------------------------------------


def _check_file(path):
    lambdas = [lam for lam in mgpu_io.inspect(path).lambdas if lam.get("kind") == "user"]
    recompile.check_recovered(path, lambdas)
    return {lam["layer"]: lam["recovered"] for lam in lambdas}


def _proven_or_skipped(recovered):
    checks = {layer: r.get("check") for layer, r in recovered.items()}
    if any(c and "needs" in c for c in checks.values()):
        pytest.skip(f"the writer's Python is not installed: {checks}")
    assert all(c and c.get("same") for c in checks.values()), checks


@pytest.mark.parametrize("entry", LAMBDA_MANIFEST, ids=lambda e: e["file"])
def test_each_fixtures_recovered_lambdas_recompile_to_the_stored_code_on_the_writers_python(entry):
    recovered = _check_file(LAMBDA_FIXTURES / entry["file"])
    assert sorted(recovered) == sorted(entry["user_functions"])
    _proven_or_skipped(recovered)
    writer = entry["python"].rsplit(".", 1)[0]
    assert all(writer in r["check"]["python"].split(" and ") for r in recovered.values()), recovered


@pytest.mark.parametrize("entry", [e for e in APP_MANIFEST if e.get("user_functions") and e["file_type"] == "model"],
                         ids=lambda e: e["file"])
def test_the_applications_recovered_lambdas_recompile_to_the_stored_code(entry):
    _proven_or_skipped(_check_file(fixture_path(entry)))


def _sweep_lambda_cases():
    from layer_sweep import cases, writers

    return [(writer, entry) for writer in writers() for case, entry in cases(writer) if entry.get("class") == "Lambda"]


@pytest.mark.parametrize("writer,entry", _sweep_lambda_cases(), ids=lambda v: v if isinstance(v, str) else "")
def test_the_layer_sweeps_recovered_lambdas_recompile_to_the_stored_code(writer, entry):
    from layer_sweep import SWEEP

    _proven_or_skipped(_check_file(SWEEP / writer / entry["file"]))


def test_the_lambdas_command_checks_on_the_writers_python_or_says_which_it_needs(tmp_path, monkeypatch):
    
    from mgpu_io.cli import app

    entry = next(e for e in LAMBDA_MANIFEST if e["python"].startswith("3.10"))
    path = LAMBDA_FIXTURES / entry["file"]
    _python("3.10")
    result = runner.invoke(app, ["lambdas", str(path), "-o", str(tmp_path / "m.py"), "--check"])
    assert result.exit_code == 0, result.output
    assert "cond: Python 3.10; proven: recompiled on Python 3.10, its code is the stored code" in result.stdout
    monkeypatch.setattr(recompile, "find_python", lambda version: None)
    result = runner.invoke(app, ["lambdas", str(path), "-o", str(tmp_path / "m.py"), "--check", "--force"])
    assert "cond: Python 3.10; not checked: recompiling it needs Python 3.10, which is not installed" in result.stdout
