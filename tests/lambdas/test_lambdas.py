"""Templates that hold Lambda layers: the user's own code and the functions Keras itself wrote.

A user's multi-GPU file holds each Lambda's function as CPython bytecode. mgpu-io reads it as data only (a strings
scan: the function's name, its source file, the names it uses), never unmarshals or runs it, and never copies it:
the repaired config refers to each function by name. The user gives their own functions back
(``lambdas={"layer": fn}``, ``--lambda LAYER=MODULE:FUNCTION``); the functions Keras wrote (InceptionResNetV2's
residual scaling) are rebuilt from mgpu-io's own copies. Every fixture here was written by the real old writers
(fixtures/applications/README.md); predictions are compared with the old Keras' own.
"""

import base64
import importlib
import json
import marshal
import os
import shutil
import subprocess
import sys

import h5py
import numpy as np
import pytest
from helpers import (APP_MANIFEST, ROOT, assert_predictions_match, fixture_batch, fixture_path, fixtures,
                     predict, runner)

import mgpu_io
from mgpu_io.errors import InvalidArgument, MissingLambda
from mgpu_io.lambdas.stored import lambda_layers, scan_code, text_records

keras = pytest.importorskip("keras")
from lambda_functions import USER_FUNCTIONS  # noqa: E402  (needs keras)

@pytest.fixture
def cli():
    
    from mgpu_io.cli import app

    return lambda *args: runner.invoke(app, [str(a) for a in args])


FUNCTIONS_FILE = ROOT / "tests" / "support" / "lambda_functions.py"
USER_LAMBDAS = fixture_path({"folder": "applications", "file": "k224_user_lambdas_x2_full.h5"})
INCEPTION = fixture_path({"folder": "applications", "file": "k224_inception_resnet_x2_full.h5"})


def supplied(entry):
    """The user's functions for a fixture's own Lambdas (none where Keras wrote them)."""
    return {layer: USER_FUNCTIONS[layer] for layer in entry.get("user_functions") or {}} or None


def architecture(entry):
    """The architecture saved beside a weights-only fixture: its JSON config, or the template saved whole."""
    for suffix in ("_config.json", "_template_full.h5"):
        candidate = fixture_path(entry).with_name(entry["file"].replace("_weights.h5", suffix))
        if candidate.exists():
            return candidate
    return None


def stored_payloads(path):
    """Every bytecode string that a file's Lambda layers store (what must never reach an output), as the bytes
    that the stored JSON holds (base64 lines joined by an escaped newline)."""
    with h5py.File(path, "r") as h5:
        config = json.loads(h5.attrs["model_config"])
    found = []
    for lam in lambda_layers(config):
        layer = next(l for l in _walk(config) if l.get("name") == lam.layer or l["config"].get("name") == lam.layer)
        function = layer["config"]["function"]
        if isinstance(function, list):
            found.append(json.dumps(function[0])[1:-1])
    return found


def _walk(config):
    from mgpu_io.format.config import walk_layers

    return list(walk_layers(config, wrapped=True))


# --- the strings scan reads the payload as data ------------------------------------------------------------------


def test_the_scan_names_the_users_function_its_source_file_and_the_names_it_uses():
    lambdas = {lam.layer: lam for lam in lambda_layers(_config(USER_LAMBDAS))}
    stats = lambdas["channel_stats"]
    assert stats.code.function_name == "channel_stats"
    assert stats.code.source_file == "fixtures/generate/applications/write_app_fixtures.py"
    assert {"K", "concatenate", "mean", "max", "x"} <= set(stats.code.names)
    assert lambdas["preprocess"].code.function_name == "<lambda>"
    assert lambdas["scale_by_factor"].arguments == {"factor": 3.0}
    assert lambdas["gate"].inbound == ["embed", "gate_in"]
    assert lambdas["square_features"].output_shape == "function"


def _config(path):
    from mgpu_io.format.detect import unroll

    with h5py.File(path, "r") as h5:
        return unroll(json.loads(h5.attrs["model_config"])).template


def test_text_records_are_read_by_their_length_prefix_only():
    assert text_records(b"\xda\x05scale\xfa\x04a.py") == ["scale", "a.py"]
    assert text_records(b"\xda\x09short") == []  # a length that runs past the end is no text
    assert text_records(b"s\x03\x00\x00\x00\xda\x01x") == []  # bytes (the bytecode itself) are stepped over


@pytest.mark.parametrize("payload", [
    "", "not base64 at all \u00e3\u0003", "A" * 10, base64.b64encode(bytes(range(256)) * 40).decode(),
    "\ud800", 12, None, ["x"], {"class_name": "__lambda__"},
])
def test_any_payload_is_scanned_without_error(payload):
    scan = scan_code(payload)
    assert isinstance(scan.names, list)


def test_a_payload_above_the_scan_limit_is_not_scanned():
    scan = scan_code(base64.b64encode(b"\xda\x01x" * 400_000).decode())
    assert not scan.scanned and scan.size == 1_200_000 and scan.names == []


# --- inspect lists every Lambda -------------------------------------------------------------------------------


def test_inspect_lists_each_lambda_with_what_the_file_says_about_it():
    report = mgpu_io.inspect(USER_LAMBDAS)
    by_layer = {lam["layer"]: lam for lam in report.lambdas}
    assert list(by_layer) == ["preprocess", "channel_stats", "scale_by_factor", "square_features", "gate", "l2_norm"]
    assert {lam["kind"] for lam in report.lambdas} == {"user"}
    assert by_layer["l2_norm"]["code"]["names"] == ["axis", "K", "l2_normalize", "x"]
    assert "template-lambda" in [f.kind for f in report.findings]
    keras_own = mgpu_io.inspect(INCEPTION).lambdas
    assert [(l["layer"], l["kind"], l["known"]) for l in keras_own] == [
        ("block35_1", "keras", "mgpu_io>inception_resnet_scale")]


def test_inspect_json_and_human_output_list_the_lambdas(cli, tmp_path):
    result = cli("inspect", str(USER_LAMBDAS), "--json")
    assert [l["layer"] for l in json.loads(result.stdout)["lambdas"]][:2] == ["preprocess", "channel_stats"]
    human = cli("inspect", str(USER_LAMBDAS)).stdout
    assert "Lambda layers (6, read as data, never run)" in human
    assert "channel_stats (your code): channel_stats; from fixtures/generate/applications/write_app_fixtures.py" \
        in human


# --- the old Keras' predictions, with the user's functions or none ------------------------------------------------


@pytest.mark.parametrize("entry", fixtures("model", manifest=APP_MANIFEST,
                                           where=lambda e: e["writer"] not in ("tf24", "tf28", "tf210", "tf215")))
def test_every_application_and_lambda_template_loads_with_the_old_predictions(entry):
    """The wrapper era's writers (tf.keras 2.4-2.15's templates: tests/load/test_tf2x_applications.py, with their bound)."""
    model = mgpu_io.load_model(fixture_path(entry), compile=False, lambdas=supplied(entry))
    xs, ys = fixture_batch(entry)
    assert_predictions_match(predict(model, xs), ys)


@pytest.mark.parametrize("entry", fixtures("weights", manifest=APP_MANIFEST, where=lambda e: architecture(e)))
def test_weights_only_files_load_with_the_architecture_saved_beside_them(entry):
    """A JSON config: loaded with weights=. Keras 2.1.6 saved the template whole: its weights are then replaced by
    the wrapper checkpoint's, by structure."""
    saved = architecture(entry)
    if saved.suffix == ".json":
        model = mgpu_io.load_model(saved, weights=fixture_path(entry), compile=False, lambdas=supplied(entry))
    else:
        model = mgpu_io.load_model(saved, compile=False, lambdas=supplied(entry))
        for variable in model.weights:
            variable.assign(variable * 0)
        assert mgpu_io.transfer_weights(fixture_path(entry), model).ok
    xs, ys = fixture_batch(entry)
    assert_predictions_match(predict(model, xs), ys)


@pytest.mark.parametrize("entry", fixtures("model", manifest=APP_MANIFEST,
                                           where=lambda e: "template-lambda" in (e.get("findings") or [])))
def test_a_repaired_h5_loads_in_plain_keras3_safe_mode_with_custom_objects(entry, tmp_path):
    out = tmp_path / "model.h5"
    report = mgpu_io.unwrap(fixture_path(entry), out, allow_plain=True)
    assert report.lambdas and all(lam["reference"] for lam in report.lambdas)
    importlib.import_module("mgpu_io.keras.known")  # registers Keras' own functions: mgpu_io>NAME

    model = keras.models.load_model(out, custom_objects=supplied(entry), compile=False)
    xs, ys = fixture_batch(entry)
    assert_predictions_match(predict(model, xs), ys)
    data = out.read_bytes()
    assert not [p for p in stored_payloads(fixture_path(entry)) if p.encode() in data]


def test_keras21_mobilenets_relu6_becomes_relu_max_value_6(tmp_path):
    """'Unknown activation function: relu6' (Keras 2.2+, tf_keras): the same function, as a ReLU layer."""
    entry = next(e for e in APP_MANIFEST if e["file"] == "k216_mobilenet_x2_template_full.h5")
    out = tmp_path / "model.h5"
    report = mgpu_io.unwrap(fixture_path(entry), out, allow_plain=True)
    assert "relu6-activation" in report.config_changes
    model = keras.models.load_model(out, compile=False)
    assert {type(layer).__name__ for layer in model.layers if layer.name.endswith("_relu")} == {"ReLU"}
    xs, ys = fixture_batch(entry)
    assert_predictions_match(predict(model, xs), ys)


@pytest.mark.parametrize("name", ["k224_user_lambdas_x2_full.h5", "tfk115_inception_resnet_x2_full.h5"])
def test_a_keras_output_saves_functions_by_name_and_loads_in_safe_mode(name, tmp_path):
    entry = next(e for e in APP_MANIFEST if e["file"] == name)
    out = tmp_path / "model.keras"
    assert mgpu_io.unwrap(fixture_path(entry), out, lambdas=supplied(entry)).written
    model = keras.models.load_model(out, custom_objects=supplied(entry), compile=False)
    xs, ys = fixture_batch(entry)
    assert_predictions_match(predict(model, xs), ys)
    import zipfile

    with zipfile.ZipFile(out) as archive:
        assert "__lambda__" not in archive.read("config.json").decode()


def test_the_cli_takes_each_function_as_layer_equals_file_colon_function(cli, tmp_path):
    out = tmp_path / "model.keras"
    options = [arg for layer in USER_FUNCTIONS if layer != "double"
               for arg in ("--lambda", f"{layer}={FUNCTIONS_FILE}:{layer}")]
    result = cli("unwrap", str(USER_LAMBDAS), str(out), *options)
    assert result.exit_code == 0, result.stderr
    entry = next(e for e in APP_MANIFEST if e["file"] == USER_LAMBDAS.name)
    model = keras.models.load_model(out, custom_objects=supplied(entry), compile=False)
    xs, ys = fixture_batch(entry)
    assert_predictions_match(predict(model, xs), ys)


# --- missing, wrong and hostile ---------------------------------------------------------------------------------


def test_a_missing_function_is_one_typed_error_that_describes_each_lambda():
    functions = dict(supplied(next(e for e in APP_MANIFEST if e["file"] == USER_LAMBDAS.name)))
    del functions["gate"], functions["l2_norm"]
    with pytest.raises(MissingLambda) as error:
        mgpu_io.load_model(USER_LAMBDAS, lambdas=functions)
    assert error.value.layers == ["gate", "l2_norm"]
    message = str(error.value)
    assert message.startswith("The template's Lambda layers hold your own code, which mgpu-io never runs from the "
                              "file (stored code allows arbitrary code execution). Expected a function for each of "
                              "them in filepath=")
    assert ("Received: no function for gate (<lambda>; from fixtures/generate/applications/write_app_fixtures.py; using t; "
            "inputs embed, gate_in); l2_norm (<lambda>;") in message
    assert message.endswith("Pass them: lambdas={'gate': fn, 'l2_norm': fn}; `mgpu-io lambdas FILE -o "
                            "my_lambdas.py` writes their recovered source (pip install \"mgpu-io[lambdas]\"). Only "
                            "for a file you trust: safe_mode=False rebuilds them from that source.")


def test_the_cli_says_which_lambdas_to_give_in_flags(cli, tmp_path):
    result = cli("unwrap", str(USER_LAMBDAS), str(tmp_path / "m.keras"))
    assert result.exit_code == 1 and result.stderr.count("\n") == 1
    assert "Pass them: --lambda preprocess=MODULE:FUNCTION --lambda channel_stats=MODULE:FUNCTION" in result.stderr
    assert result.stderr.endswith(" Only for a file you trust: --unsafe-trust-file rebuilds them from that source.\n")
    assert "lambdas=" not in result.stderr and "safe_mode" not in result.stderr
    assert not (tmp_path / "m.keras").exists()


def test_a_lambda_error_says_parameters_in_the_library_and_flags_on_the_command_line(cli, tmp_path):
    """One error, raised from its fields: the library names the parameter (lambdas['preprocess']=...), the command
    line the flag the user typed (--lambda preprocess=...), each rendered from the same fields, no text rewritten."""
    given = "no_such_module_here:preprocess"
    common = ("The function cannot be found. Expected a function preprocess in no_such_module_here. Received: {} "
              "(No module named 'no_such_module_here'). Run from the folder that holds the module, or fix the name.")
    with pytest.raises(InvalidArgument) as raised:
        mgpu_io.unwrap(USER_LAMBDAS, tmp_path / "m.keras", lambdas={"preprocess": given})
    assert str(raised.value) == common.format(f"lambdas['preprocess']={given!r}")
    assert raised.value.parameter == "lambdas"

    result = cli("unwrap", str(USER_LAMBDAS), str(tmp_path / "m.keras"), "--lambda", f"preprocess={given}")
    assert result.exit_code == 1
    assert result.stderr == "Error: " + common.format(f"--lambda preprocess={given}") + "\n"
    assert not (tmp_path / "m.keras").exists()


def test_lambdas_must_name_lambda_layers_and_be_callable():
    with pytest.raises(InvalidArgument, match=r"lambdas= names layers that are not Lambda layers of the template\. "
                                              r"Expected names among \['block35_1'\]\. Received: \['conv'\]"):
        mgpu_io.load_model(INCEPTION, lambdas={"conv": USER_FUNCTIONS["double"]})
    with pytest.raises(InvalidArgument, match="A Lambda's function must be callable"):
        mgpu_io.load_model(USER_LAMBDAS, lambdas={"preprocess": 3})


def test_lambdas_with_a_legacy_output_is_refused_since_it_needs_none(tmp_path):
    with pytest.raises(InvalidArgument, match=r"lambdas= applies to a \.keras output"):
        mgpu_io.unwrap(USER_LAMBDAS, tmp_path / "m.h5", lambdas={"preprocess": USER_FUNCTIONS["preprocess"]})
    assert not (tmp_path / "m.h5").exists()


def _hostile_copy(tmp_path, marker):
    """k224_template_lambda with its `double` Lambda's bytecode replaced by code that would create `marker`."""
    path = tmp_path / "hostile.h5"
    shutil.copyfile(fixture_path({"file": "k224_template_lambda_x2_full.h5"}), path)
    code = compile(f"lambda t: open({str(marker)!r}, 'w').write('ran') or t", "<hostile>", "eval")
    payload = base64.b64encode(marshal.dumps(code.co_consts[0])).decode()
    with h5py.File(path, "r+") as h5:
        text = h5.attrs["model_config"]
        text = text.decode() if isinstance(text, bytes) else text
        config = json.loads(text)
        for layer in _walk(config):
            if layer["config"].get("name") == "double":
                layer["config"]["function"] = [payload, None, None]
        h5.attrs["model_config"] = json.dumps(config)
    return path, payload


def test_a_hostile_payload_is_never_run_nor_copied_by_any_path(tmp_path, cli):
    marker = tmp_path / "ran"
    path, payload = _hostile_copy(tmp_path, marker)
    double = {"double": USER_FUNCTIONS["double"]}
    mgpu_io.inspect(path)
    assert cli("inspect", str(path), "--json").exit_code == 0
    mgpu_io.unwrap(path, tmp_path / "out.h5")
    mgpu_io.unwrap(path, tmp_path / "out.keras", lambdas=double)
    mgpu_io.load_model(path, lambdas=double)
    mgpu_io.load_model(tmp_path / "out.h5", lambdas=double)
    with pytest.raises(MissingLambda):
        mgpu_io.load_model(path)
    assert cli("unwrap", str(path), str(tmp_path / "cli.keras")).exit_code == 1
    assert not marker.exists()
    assert payload.encode() not in (tmp_path / "out.h5").read_bytes()
    import zipfile

    with zipfile.ZipFile(tmp_path / "out.keras") as archive:
        assert all(payload.encode() not in archive.read(name) for name in archive.namelist())


def test_a_repaired_file_reloads_through_mgpu_io_with_the_same_functions(tmp_path):
    out = tmp_path / "model.h5"
    mgpu_io.unwrap(USER_LAMBDAS, out)
    entry = next(e for e in APP_MANIFEST if e["file"] == USER_LAMBDAS.name)
    model = mgpu_io.load_model(out, lambdas=supplied(entry))
    xs, ys = fixture_batch(entry)
    assert_predictions_match(predict(model, xs), ys)
    assert model.optimizer.__class__.__name__ == "Adam"


def test_keep_config_keeps_the_writers_bytecode_for_the_old_keras(tmp_path):
    """--keep-config writes the config as the writer did, for the old Keras on the writer's Python: unchanged."""
    out = tmp_path / "model.h5"
    mgpu_io.unwrap(USER_LAMBDAS, out, keep_config=True)
    payloads = stored_payloads(USER_LAMBDAS)
    assert len(payloads) == 10 and all(p.encode() in out.read_bytes() for p in payloads[4:])


def test_verify_compares_a_repaired_keras_file_with_its_original_given_the_functions(cli, tmp_path):
    out = tmp_path / "model.keras"
    entry = next(e for e in APP_MANIFEST if e["file"] == USER_LAMBDAS.name)
    mgpu_io.unwrap(USER_LAMBDAS, out, lambdas=supplied(entry))
    assert mgpu_io.verify(USER_LAMBDAS, out, lambdas=supplied(entry)).agree
    options = [arg for layer in supplied(entry) for arg in ("--lambda", f"{layer}={FUNCTIONS_FILE}:{layer}")]
    assert cli("verify", str(USER_LAMBDAS), str(out), *options).exit_code == 0


@pytest.mark.parametrize("entry", fixtures("config", manifest=APP_MANIFEST, where=lambda e: fixture_path(e).with_name(
    e["file"].replace("_config.json", "_weights.h5")).exists()))
def test_a_repaired_json_and_its_weights_build_in_plain_keras3(entry, tmp_path):
    """The to_json() + save_weights() pair: both repaired, then Keras 3's own model_from_json and load_weights."""
    config_out, weights_out = tmp_path / "model.json", tmp_path / "weights.h5"
    mgpu_io.unwrap(fixture_path(entry), config_out)
    weights = fixture_path(entry).with_name(entry["file"].replace("_config.json", "_weights.h5"))
    mgpu_io.unwrap(weights, weights_out, config=fixture_path(entry))
    importlib.import_module("mgpu_io.keras.known")
    model = keras.models.model_from_json(config_out.read_text(), custom_objects=supplied(entry))
    model.load_weights(weights_out)
    xs, ys = fixture_batch(entry)
    assert_predictions_match(predict(model, xs), ys)


def test_an_activation_layer_with_keras2_hard_sigmoid_computes_keras2s_function():
    """Activation('hard_sigmoid') has no weights to rescale: it refers to mgpu-io's copy of Keras 2's function."""
    import numpy as np

    from mgpu_io.format.conversions import Context, convert_config
    from mgpu_io.keras._compat import model_from_legacy_config

    config = {"class_name": "Sequential", "config": {"name": "s", "layers": [
        {"class_name": "InputLayer", "config": {"batch_input_shape": [None, 5], "name": "i"}},
        {"class_name": "Activation", "config": {"name": "a", "activation": "hard_sigmoid"}}]}}
    converted, changes = convert_config(config, Context())
    assert changes == ["hard-sigmoid-keras2-function"]
    importlib.import_module("mgpu_io.keras.known")
    model = model_from_legacy_config(converted, None, True)
    x = np.array([[-4.0, -1.0, 0.0, 1.0, 2.4]], dtype="float32")
    np.testing.assert_allclose(model.predict(x, verbose=0), np.clip(0.2 * x + 0.5, 0, 1), atol=1e-7)


# --- Keras' own test, and the decompilers' absence (both run with or without the extra) -------------------------


KERAS_TEST_SAVING_LAMBDA = r"""
import sys, numpy as np, tf_keras
mean = np.random.random((4, 2, 3))
std = np.abs(np.random.random((4, 2, 3))) + 1e-5
inputs = tf_keras.layers.Input(shape=(4, 2, 3))
output = tf_keras.layers.Lambda(
    lambda image, mu, std: (image - mu) / std,
    arguments={"mu": mean, "std": std},
    output_shape=inputs.shape,
)(inputs)
tf_keras_model = tf_keras.Model(inputs, output)
tf_keras_model.compile(loss="mean_squared_error", optimizer="sgd", metrics=["acc"])
tf_keras_model.save(sys.argv[1])
np.savez(sys.argv[2], mean=mean, std=std)
"""


def test_keras_own_test_saving_lambda_with_mgpu_io_load_model(tmp_path):
    """Keras' own test, whole, with mgpu_io.load_model in place of Keras' loader: keras-team/keras,
    keras/src/legacy/saving/legacy_h5_format_test.py, LegacyH5WholeModelTest.test_saving_lambda (Keras 3 writes the
    file on this very Python; mgpu-io reads the 3.9-3.12 bytecode as data and rebuilds the function from its source
    when the caller trusts the file). Only the loader and the assertion helpers differ."""
    from keras import layers, models, ops, random
    from keras.src.legacy.saving import legacy_h5_format

    mean = random.uniform((4, 2, 3))  # Keras' test: ops.random.uniform (its `ops` is keras.src's, with `random`)
    std = ops.abs(random.uniform((4, 2, 3))) + 1e-5
    inputs = layers.Input(shape=(4, 2, 3))
    output = layers.Lambda(
        lambda image, mu, std: (image - mu) / std,
        arguments={"mu": mean, "std": std},
    )(inputs)
    model = models.Model(inputs, output)
    model.compile(loss="mean_squared_error", optimizer="sgd", metrics=["acc"])

    temp_filepath = str(tmp_path / "lambda_model.h5")
    legacy_h5_format.save_model_to_hdf5(model, temp_filepath)

    with pytest.raises(ValueError, match="arbitrary code execution"):
        mgpu_io.load_model(temp_filepath)

    with pytest.warns(mgpu_io.MgpuIOWarning, match="runs its function recovered from the file"):
        loaded = mgpu_io.load_model(temp_filepath, safe_mode=False)
    np.testing.assert_allclose(ops.convert_to_numpy(mean), loaded.layers[1].arguments["mu"], rtol=1e-6, atol=1e-6)
    np.testing.assert_allclose(ops.convert_to_numpy(std), loaded.layers[1].arguments["std"], rtol=1e-6, atol=1e-6)
    x = np.random.random((2, 4, 2, 3)).astype("float32")  # and the function is the one Keras wrote
    want = (x - ops.convert_to_numpy(mean)) / ops.convert_to_numpy(std)
    np.testing.assert_allclose(predict(loaded, [x]), want, rtol=1e-5, atol=1e-5)


def test_keras_own_test_saving_lambda_as_tf_keras_writes_it(tf_keras_wrote):
    """The same test with tf_keras writing the file (what users of TF 2.16+ hold), on this very Python."""
    path, arrays = tf_keras_wrote / "lambda_model.h5", tf_keras_wrote / "arrays.npz"
    mean, std = np.load(arrays)["mean"], np.load(arrays)["std"]

    with pytest.raises(ValueError, match="arbitrary code execution"):  # Keras: ValueError, same words
        mgpu_io.load_model(path)
    with pytest.warns(mgpu_io.MgpuIOWarning, match="runs its function recovered from the file"):
        loaded = mgpu_io.load_model(path, safe_mode=False)
    np.testing.assert_allclose(mean, loaded.layers[1].arguments["mu"])
    np.testing.assert_allclose(std, loaded.layers[1].arguments["std"])
    x = np.random.random((2, 4, 2, 3)).astype("float32")
    np.testing.assert_allclose(predict(loaded, [x]), (x - mean) / std, rtol=1e-5, atol=1e-5)


def test_bytecode_this_python_wrote_that_no_decompiler_reads_runs_as_keras_runs_it_when_trusted(tf_keras_wrote):
    """A function mgpu-io's decompiler does not read (a loop), written by this very Python: with safe_mode=False it
    is loaded as Keras' own safe_mode=False loads it, with a warning; without trust, nothing of it runs."""
    path = tf_keras_wrote / "loop.h5"
    [lam] = mgpu_io.inspect(path).lambdas
    assert "WHILE" not in lam["recovered"]["error"] and "mgpu-io's decompiler stopped at" in lam["recovered"]["error"]
    with pytest.raises(MissingLambda):
        mgpu_io.load_model(path)
    with pytest.warns(mgpu_io.MgpuIOWarning, match=r"runs the bytecode stored in the file, as Keras does: this "
                                                   rf"Python \({sys.version_info[0]}\.{sys.version_info[1]}\) wrote it"):
        loaded = mgpu_io.load_model(path, safe_mode=False)
    x = np.arange(6, dtype="float32").reshape(2, 3)
    np.testing.assert_allclose(predict(loaded, [x]), x * 8.0, rtol=1e-6)


KERAS_LOOP_LAMBDA = r"""
import sys, tf_keras


def times_eight(x):
    for _ in range(3):
        x = x * 2.0
    return x


inputs = tf_keras.layers.Input(shape=(3,))
tf_keras.Model(inputs, tf_keras.layers.Lambda(times_eight, name="loop")(inputs)).save(sys.argv[1])
"""
KERAS_WHILE_LAMBDA = KERAS_LOOP_LAMBDA.replace("    for _ in range(3):\n        x = x * 2.0\n",
                                              "    n = 0\n    while n < 3:\n        x, n = x * 2.0, n + 1\n")
#: Runs each writer above as ``python -c WRITER ARGS`` would (a fresh ``__main__``, its own ``sys.argv``), one after
#: the other in one process: the files are what a user's script on this Python writes, for one import of tf_keras.
WRITE_EACH = r"""
import json, sys
import tf_keras
for code, argv in json.loads(sys.argv[1]):
    sys.argv = ["-c"] + argv
    exec(compile(code, "<string>", "exec"), {"__name__": "__main__", "__builtins__": __builtins__})
    tf_keras.backend.clear_session()
"""


@pytest.fixture(scope="module")
def tf_keras_wrote(tmp_path_factory):
    """The folder where tf_keras, on this very Python, wrote the files of the three tests that follow."""
    pytest.importorskip("tf_keras")
    folder = tmp_path_factory.mktemp("tf_keras_wrote")
    jobs = [(KERAS_TEST_SAVING_LAMBDA, [str(folder / "lambda_model.h5"), str(folder / "arrays.npz")]),
            (KERAS_LOOP_LAMBDA, [str(folder / "loop.h5")]), (KERAS_WHILE_LAMBDA, [str(folder / "while.h5")])]
    assert "while n < 3" in KERAS_WHILE_LAMBDA
    done = subprocess.run([sys.executable, "-c", WRITE_EACH, json.dumps(jobs)], capture_output=True, text=True,
                          cwd=folder, timeout=300)
    assert done.returncode == 0, done.stderr[-3000:]
    return folder


def test_without_the_extra_everything_works_and_says_how_to_get_the_source(monkeypatch):
    from mgpu_io.lambdas import recovery as recover

    monkeypatch.setattr(recover, "available", lambda: False)
    path = USER_LAMBDAS
    answers = recover.decompile([b"x"])
    assert answers == [{"error": 'the decompilers are not installed: pip install "mgpu-io[lambdas]" recovers the source'}]
    monkeypatch.setenv("MGPU_IO_PROBE", "0")  # inspect in this process, where `available` is patched
    report = mgpu_io.inspect(path)
    assert all('pip install "mgpu-io[lambdas]"' in lam["recovered"]["error"] for lam in report.lambdas)


def test_a_loop_that_is_not_a_for_loop_is_never_loaded_as_keras_would_even_when_trusted(tf_keras_wrote):
    """A `while` loop (or crafted bytes that jump to themselves) could run forever: it is the caller's to supply."""
    path = tf_keras_wrote / "while.h5"
    with pytest.raises(InvalidArgument, match=r"Lambda layer 'loop''s source cannot be recovered from its bytecode"):
        mgpu_io.load_model(path, safe_mode=False)


#: Run in a child: load the file under trust and say how it ended (a crash of the interpreter is its exit status).
_TRUSTED_LOAD = r"""
import sys, warnings
import mgpu_io
warnings.simplefilter("ignore")
try:
    mgpu_io.load_model(sys.argv[1], safe_mode=False)
    print("loaded")
except mgpu_io.MgpuIOError as error:
    print("refused:", str(error).splitlines()[0])
"""


@pytest.mark.parametrize("other", ["3.13", "3.12", "3.11", "3.10"])
def test_another_pythons_bytecode_under_trust_ends_in_one_line_never_a_crash(tf_keras_wrote, tmp_path, other):
    """The loop file's function, marshalled by another Python (3.12's inline caches lie otherwise than 3.11's, and
    its bytes once passed for "3.11 or 3.12"): loaded with safe_mode=False in a child of this Python, it is refused
    in one line, never handed to this interpreter (where it crashed it: SIGSEGV)."""
    from mgpu_io.lambdas.proof import find_python

    python = find_python(other)
    mine = f"{sys.version_info[0]}.{sys.version_info[1]}"
    if python is None or other == mine:
        pytest.skip(f"no Python {other} other than this one")
    # x * 8 with a global call and an assignment expression, which mgpu-io's decompiler does not read
    function = "lambda x: (y := x * 2.0) * len((y,)) * 4.0"
    code = subprocess.run([str(python), "-c", f"import base64, marshal\nf = {function}\n"
                           "print(base64.b64encode(marshal.dumps(f.__code__)).decode())"],
                          capture_output=True, text=True, check=True).stdout.strip()
    path = tmp_path / "other.h5"
    shutil.copy(tf_keras_wrote / "loop.h5", path)
    with h5py.File(path, "r+") as f:
        config = json.loads(f.attrs["model_config"])
        layer = next(layer for layer in config["config"]["layers"] if layer["class_name"] == "Lambda")
        layer["config"]["function"][0] = code
        f.attrs["model_config"] = json.dumps(config)
    done = subprocess.run([sys.executable, "-c", _TRUSTED_LOAD, str(path)], capture_output=True, text=True,
                          timeout=300, env=dict(os.environ, TF_CPP_MIN_LOG_LEVEL="3"))
    assert done.returncode == 0, f"the interpreter ended with {done.returncode}: {done.stderr[-1500:]}"
    assert done.stdout.strip().startswith("refused: Lambda layer 'loop'"), done.stdout + done.stderr[-1500:]
