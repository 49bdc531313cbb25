"""Every output of mgpu-io's 3.9-3.12 decompiler (``lambdas/_decompile39.py``) on the Lambda bytecode the repository
holds, recorded.

Run it before and after a change to the decompiler that must change nothing; the two records must be identical::

    PYTHONPATH=$PWD .venv/bin/python tests/benchmarks/rebuild_outputs.py before.jsonl
    (change lambdas/_decompile39.py)
    PYTHONPATH=$PWD .venv/bin/python tests/benchmarks/rebuild_outputs.py after.jsonl
    cmp before.jsonl after.jsonl

The inputs:

* every Lambda function (and ``output_shape`` function) stored as bytecode in the fixtures' ``model_config``
  (fixtures/lambdas, the applications, the layer sweep, ...), read as each of Python 3.9-3.12 whose marshal format
  reads it (xdis, as ``_decompile.py`` reads it);
* the sources of ``tests/lambdas/test_lambda_recompile.py`` (the shapes Keras Lambdas take, and those refused by name) and
  ``tests/lambdas/test_lambda_recovery.py``'s VAE sampling function, compiled by the real Pythons 3.9-3.12 (pyenv; a Python
  that is not installed is left out, and said);
* hostile variants of each of these (seeded, so the same every run): one instruction of the stream dropped,
  repeated, swapped with the next, or replaced by another opcode of that Python (its argument kept), as
  ``tests/fuzz`` damages stored bytecode.

Each output is the decompiled text, or the refusal (``Unreadable: ...``), or any other exception's type and message.
``lambdas/_decompile39.py`` is loaded by path as the decompiler program loads it (``--rebuild PATH`` reads another copy).
"""

import argparse
import ast
import base64
import contextlib
import hashlib
import importlib.util
import io
import json
import random
import re
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
VERSIONS = ("3.9", "3.10", "3.11", "3.12")
MUTANTS = 100  # hostile variants per (function, Python)
#: Opcodes a replaced instruction may become, besides those of the function itself and those the decompiler skips.
OTHER_OPCODES = (
    "LOAD_CONST", "POP_TOP", "RETURN_VALUE", "BUILD_TUPLE", "CALL", "JUMP_FORWARD", "POP_JUMP_IF_FALSE", "FOR_ITER",
    "SWAP", "COPY", "MAKE_FUNCTION", "GET_ITER", "UNPACK_SEQUENCE", "STORE_FAST", "LIST_APPEND", "KW_NAMES",
    "DICT_MERGE", "LIST_EXTEND", "BUILD_MAP", "FORMAT_VALUE", "RAISE_VARARGS",
)  # fmt: skip
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


def _rebuild(path):
    spec = importlib.util.spec_from_file_location("_rebuild", path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def _list_literal(path, name):
    """The value of the module-level list ``name`` of a test file (read as data, not imported)."""
    tree = ast.parse(Path(path).read_text())
    for node in tree.body:
        if isinstance(node, ast.Assign) and any(isinstance(t, ast.Name) and t.id == name for t in node.targets):
            return ast.literal_eval(node.value)
    raise KeyError(name)


def _sources():
    recompile_tests = ROOT / "tests" / "lambdas" / "test_lambda_recompile.py"
    sources = list(_list_literal(recompile_tests, "SHAPES"))
    tree = ast.parse(recompile_tests.read_text())  # the refused-by-name cases: the parametrize's tuples' sources
    for node in ast.walk(tree):
        if isinstance(node, ast.Call) and getattr(node.func, "attr", "") == "parametrize" and len(node.args) == 2:
            try:
                cases = ast.literal_eval(node.args[1])
            except ValueError:
                continue
            sources += [case[0] for case in cases if isinstance(case, tuple) and isinstance(case[0], str)]
    sources.append(_assigned_string(ROOT / "tests" / "lambdas" / "test_lambda_recovery.py", "VAE_SAMPLING"))
    return sources


def _assigned_string(path, name):
    tree = ast.parse(Path(path).read_text())
    for node in tree.body:
        if isinstance(node, ast.Assign) and any(isinstance(t, ast.Name) and t.id == name for t in node.targets):
            return ast.literal_eval(node.value)
    raise KeyError(name)


def _compiled(sources):
    from mgpu_io.lambdas import proof as recompile

    found = []
    for version in VERSIONS:
        python = recompile.find_python(version)
        if python is None:
            print(f"Python {version} is not installed: its compiled sources are left out", file=sys.stderr)
            continue
        done = subprocess.run(
            [python, "-c", COMPILE], input=json.dumps(sources), capture_output=True, text=True, check=True, timeout=300
        )
        found += [
            (f"compiled by {version}: {source!r}", base64.b64decode(text))
            for source, text in zip(sources, json.loads(done.stdout))
        ]
    return found


def _lambdas(config, found):
    if isinstance(config, dict):
        if config.get("class_name") == "Lambda" and isinstance(config.get("config"), dict):
            found.append(config["config"])
        for value in config.values():
            _lambdas(value, found)
    elif isinstance(config, list):
        for value in config:
            _lambdas(value, found)
    return found


def _stored():
    import h5py

    found = []
    for path in sorted((ROOT / "fixtures").rglob("*.h5")):
        try:
            with h5py.File(path, "r") as h5:
                text = h5.attrs.get("model_config")
        except OSError:
            continue
        if text is None:
            continue
        text = text.decode("utf-8") if isinstance(text, bytes) else str(text)
        if "Lambda" not in text:
            continue
        for layer in _lambdas(json.loads(text), []):
            for field in ("function", "output_shape"):
                value = layer.get(field)
                if isinstance(value, dict):
                    value = [value.get("config", {}).get("code")]
                if isinstance(value, list) and value and isinstance(value[0], str) and len(value[0]) > 16:
                    try:
                        data = base64.b64decode(value[0])
                    except ValueError:
                        continue
                    found.append((f"{path.relative_to(ROOT)}: {layer.get('name')}.{field}", data))
    unique, seen = [], set()
    for name, data in found:  # the same bytes stored in many files are one input
        if data not in seen:
            seen.add(data)
            unique.append((name, data))
    return unique


def _load(data, version):
    from xdis import iscode
    from xdis.magics import magics
    from xdis.unmarshal import _VersionIndependentUnmarshaller

    stream = io.BytesIO(data)
    try:
        with contextlib.redirect_stdout(io.StringIO()), contextlib.redirect_stderr(io.StringIO()):  # xdis prints
            code = _VersionIndependentUnmarshaller(
                stream, int.from_bytes(magics[version][:2], "little"), False, {}
            ).load()
    except (Exception, RecursionError):
        return None
    return code if iscode(code) and stream.tell() == len(data) else None


def _instructions(code, version):
    from xdis.bytecode import Bytecode
    from xdis.op_imports import get_opcode_module

    return list(Bytecode(code, get_opcode_module(tuple(int(p) for p in version.split(".")))))


def _outcome(rebuild, code, version, instructions):
    triple = tuple(int(p) for p in version.split("."))
    try:
        return "text", rebuild.decompile(code, triple, instructions, lambda c: _instructions(c, version))
    except rebuild.Unreadable as error:
        return "Unreadable", f"Unreadable: {error}"
    except (Exception, RecursionError) as error:
        return "other", re.sub(r" at 0x[0-9a-f]+", " at 0x...", f"{type(error).__name__}: {error}")  # no addresses


def _mutant(instructions, rng, opnames):
    ins = list(instructions)
    if not ins:
        return ins, "empty"
    n = rng.randrange(len(ins))
    how = rng.choice(["drop", "repeat", "swap", "replace", "replace", "replace"])
    if how == "drop":
        del ins[n]
    elif how == "repeat":
        ins.insert(n, ins[n])
    elif how == "swap" and n + 1 < len(ins):
        ins[n], ins[n + 1] = ins[n + 1], ins[n]
    else:
        how = "replace"
        ins[n] = ins[n]._replace(opname=rng.choice(opnames))
    return ins, f"{how} {n}"


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("out", help="the record to write (one JSON line per input)")
    parser.add_argument("--rebuild", default=str(ROOT / "mgpu_io" / "lambdas" / "_decompile39.py"))
    args = parser.parse_args()
    sys.setrecursionlimit(5000)
    rebuild = _rebuild(args.rebuild)
    inputs = _stored() + _compiled(_sources())
    lines, kinds = [], {"text": 0, "Unreadable": 0, "other": 0}
    for name, data in inputs:
        for version in VERSIONS:
            code = _load(data, version)
            if code is None:
                continue
            try:
                instructions = _instructions(code, version)
            except (Exception, RecursionError):
                continue
            variants = [("as stored", instructions)]
            rng = random.Random(f"{name}|{version}")
            opnames = sorted({i.opname for i in instructions} | set(rebuild._SKIP) | set(OTHER_OPCODES))
            variants += [_mutant(instructions, rng, opnames)[::-1] for _ in range(MUTANTS)]
            for what, stream in variants:
                kind, result = _outcome(rebuild, code, version, stream)
                kinds[kind] += 1
                lines.append(json.dumps({"input": name, "python": version, "variant": what, "output": result}))
    text = "\n".join(lines) + "\n"
    Path(args.out).write_text(text)
    print(
        f"{len(inputs)} stored or compiled functions, {len(lines)} readings (with {MUTANTS} hostile variants each): "
        f"{kinds['text']} decompiled, {kinds['Unreadable']} refused by name, {kinds['other']} other exceptions; "
        f"sha256 {hashlib.sha256(text.encode()).hexdigest()[:16]}"
    )


if __name__ == "__main__":
    main()
