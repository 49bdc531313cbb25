"""A user with a model that Keras 3 itself saved, Lambdas and all, on Python 3.9-3.13 (as `.keras` and as `.h5`),
loads it on today's Python: from their own functions (`lambdas=`), or, for a file they trust, from the sources
mgpu-io recovers (`safe_mode=False`), where Keras 3 fails on its own files (issue 47).

The files are written by the real Keras 3.1, 3.3, 3.6, 3.8 and 3.10 (fixtures/generate/keras3_lambdas/run.sh), with
their predictions; manifest.json holds each Lambda's source as written.
"""

import ast
import inspect
import json
import warnings

import numpy as np
import pytest

import mgpu_io
from helpers import ROOT, runner
from tiers import FULL_MATRIX

FIXTURES = ROOT / "fixtures" / "keras3_lambdas"
MANIFEST = json.loads((FIXTURES / "manifest.json").read_text()) if (FIXTURES / "manifest.json").exists() else []
#: The writers `make test` loads: the oldest Python (whose bytecode this one cannot read) and the newest; the others
#: run in `make test-all`.
SAMPLE = ("py39", "py313")


def _cases(entries):
    return [
        pytest.param(entry, id=entry["file"],
                     marks=[] if any(f"_{p}_" in entry["file"] for p in SAMPLE) else [getattr(pytest.mark, FULL_MATRIX)])
        for entry in entries
    ]


CASES = _cases(MANIFEST)
ARCHIVES = _cases([entry for entry in MANIFEST if entry["container"] == "keras"])


def _literal(value):
    """A manifest field the generator wrote as a Python literal's text, or as JSON."""
    return ast.literal_eval(value) if isinstance(value, str) else value


def _bytecode_layers(entry):
    """The Lambdas whose function Keras 3 stored as bytecode (its `__lambda__`); a `def` is stored by name."""
    by_name = set(entry.get("stored_by_name") or [])
    return [name for name in entry["lambda_layers"] if name not in by_name and name not in entry.get("left_out", {})]


def _named_def():
    from keras import ops

    def named_def(x):
        return ops.tanh(x) * 2.0

    return named_def


def _predict(model, entry):
    data = np.load(FIXTURES / entry["data"])
    inputs = [data[f"x{i}"] for i in range(len(entry["inputs"]))]
    return model.predict(inputs, verbose=0), data["y0"]


def _writers_functions(entry):
    """The user's own functions, as they wrote them (the manifest's sources, compiled here with their globals)."""
    import keras
    import tensorflow as tf
    from keras import ops

    sources = _literal(entry["user_functions"])
    closures = _literal(entry.get("closure") or {})
    functions = {}
    for layer in _bytecode_layers(entry):
        scope = {"ops": ops, "keras": keras, "tf": tf, "np": np, **closures.get(layer, {})}
        functions[layer] = eval(sources[layer], scope)  # the test's own copy of the writer's source
    functions["named_def"] = _named_def()
    return functions


@pytest.mark.parametrize("entry", CASES)
def test_a_trusted_keras3_file_loads_its_lambdas_from_recovered_source_and_predicts_like_its_writer(entry):
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        model = mgpu_io.load_model(
            FIXTURES / entry["file"], safe_mode=False, compile=False, lambdas={"named_def": _named_def()}
        )
    predicted, expected = _predict(model, entry)
    assert np.abs(predicted - expected).max() <= 1e-5
    rebuilt = sorted({str(w.message).split("'")[1] for w in caught if " runs " in str(w.message)})
    assert rebuilt == sorted(_bytecode_layers(entry))  # each named once, none hidden
    signature = inspect.signature(model.get_layer("default").function)
    assert signature.parameters["s"].default == 0.25  # Keras 3 fails here: 'arg 4 (defaults) must be None or tuple'
    assert "arg 4 (defaults)" in entry["own_reload"]  # the writer itself could not reload its file (measured)


@pytest.mark.parametrize("entry", CASES)
def test_without_trust_the_stored_code_is_refused_by_layer_and_the_users_functions_load_it(entry):
    path = FIXTURES / entry["file"]
    with pytest.raises(mgpu_io.MissingLambda) as refused:
        mgpu_io.load_model(path, compile=False)
    assert sorted(refused.value.layers) == sorted(_bytecode_layers(entry) + ["named_def"])
    assert "Only for a file you trust: safe_mode=False rebuilds them from that source" in str(refused.value)
    model = mgpu_io.load_model(path, compile=False, lambdas=_writers_functions(entry))
    predicted, expected = _predict(model, entry)
    assert np.abs(predicted - expected).max() <= 1e-5


def test_the_input_archive_is_never_changed_by_a_trusted_load(tmp_path):
    import shutil

    entry = next(e for e in MANIFEST if e["container"] == "keras")
    path = tmp_path / entry["file"]
    shutil.copy(FIXTURES / entry["file"], path)
    before = path.read_bytes()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        mgpu_io.load_model(path, safe_mode=False, compile=False, lambdas={"named_def": _named_def()})
    assert path.read_bytes() == before
    assert sorted(p.name for p in tmp_path.iterdir()) == [entry["file"]]


@pytest.mark.parametrize("entry", ARCHIVES)
def test_the_lambdas_command_recovers_every_source_of_a_keras_archive(entry, tmp_path):
    from mgpu_io.cli import app

    result = runner.invoke(app, ["lambdas", str(FIXTURES / entry["file"]), "--json"])
    assert result.exit_code == 0, result.output
    found = {lam["layer"]: lam["recovered"] for lam in json.loads(result.output)["lambdas"]}
    sources = _literal(entry["user_functions"])
    python = ".".join(entry["python"].split(".")[:2])
    for layer in _bytecode_layers(entry):
        recovered = found[layer]
        assert ast.dump(ast.parse(recovered["source"])) == ast.dump(ast.parse(sources[layer])), layer
        assert python in recovered["python"].split(" or "), (layer, recovered["python"])
    out = tmp_path / "my_lambdas.py"
    result = runner.invoke(app, ["lambdas", str(FIXTURES / entry["file"]), "-o", str(out)])
    assert result.exit_code == 0, result.output
    text = out.read_text()
    ast.parse(text)
    assert "from keras import ops" in text and "import keras" in text and "import tensorflow as tf" in text


def test_inspect_shows_a_keras_archives_recovered_sources():
    from mgpu_io.cli import app

    entry = next(e for e in MANIFEST if e["container"] == "keras")
    result = runner.invoke(app, ["inspect", str(FIXTURES / entry["file"])])
    assert result.exit_code == 0, result.output
    assert "lambda x: ops.expand_dims(x, -1)" in result.output
    assert "lambda x, s=0.25: x * s" in result.output


@pytest.mark.parametrize("entry", ARCHIVES)
def test_every_recovered_source_is_proven_on_its_writers_python(entry, tmp_path):
    """`--check` recompiles each source on the writer's Python (pyenv) and finds the stored bytes, byte for byte."""
    from mgpu_io.lambdas.proof import find_python

    python = ".".join(entry["python"].split(".")[:2])
    if find_python(python) is None:
        pytest.skip(f"Python {python} is not installed")
    report = mgpu_io.lambda_sources(FIXTURES / entry["file"], check=True)
    checks = {lam["layer"]: lam["recovered"].get("check") or {} for lam in report.lambdas}
    assert sorted(checks) == sorted(_bytecode_layers(entry))
    assert {layer: check.get("same") for layer, check in checks.items()} == dict.fromkeys(checks, True), checks
