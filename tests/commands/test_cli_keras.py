"""The Keras-facing commands: `unwrap ... OUT.keras`, `transfer --builder`, `verify`."""

import json
import textwrap

import pytest
from helpers import FIXTURES, assert_predictions_match, fixture_batch, newcomer_environment, predict, runner

from mgpu_io.cli import app

keras = pytest.importorskip("keras")
WRAPPER = FIXTURES / "k224_functional_bn_x2_full.h5"
ENTRY = {"file": WRAPPER.name, "data": "k224_functional_bn_x2.npz"}


def run(*args):
    return runner.invoke(app, [str(a) for a in args])


def test_unwrap_to_keras_native_format(tmp_path):
    out = tmp_path / "model.keras"
    result = run("unwrap", WRAPPER, out)
    assert result.exit_code == 0, result.output
    assert f"Wrote {out}: template 'template'" in result.stdout
    model = keras.models.load_model(out)
    xs, ys = fixture_batch(ENTRY)
    assert_predictions_match(predict(model, xs), ys)
    assert model.optimizer.__class__.__name__ == "Adam" and int(model.optimizer.iterations) > 0
    assert [p.name for p in tmp_path.iterdir()] == ["model.keras"]


def test_unwrap_weights_to_keras_needs_the_architecture(tmp_path):
    out = tmp_path / "model.keras"
    result = run("unwrap", FIXTURES / "k224_siamese_x2_weights.h5", out, "--config",
                 FIXTURES / "k224_siamese_x2_config.json")
    assert result.exit_code == 0, result.output
    xs, ys = fixture_batch({"file": "k224_siamese_x2_weights.h5", "data": "k224_siamese_x2.npz"})
    assert_predictions_match(predict(keras.models.load_model(out), xs), ys)


@pytest.fixture
def builder_module(tmp_path, monkeypatch):
    (tmp_path / "train.py").write_text(textwrap.dedent("""
        import keras
        from keras import layers

        def build_model(inputs=6):
            inp = keras.Input((inputs,), name="inp")
            x = layers.Dense(8, activation="relu", name="d1")(inp)
            x = layers.Dropout(0.25)(layers.BatchNormalization(name="bn")(x))
            return keras.Model(inp, [layers.Dense(3, activation="softmax", name="out_a")(x),
                                     layers.Dense(1, name="out_b")(x)], name="template")

        def build_wrong_model():
            return build_model(inputs=5)
    """))
    monkeypatch.chdir(tmp_path)
    return tmp_path


@pytest.mark.parametrize("suffix", [".keras", ".h5"])
def test_transfer_builds_with_the_users_code_and_saves(builder_module, suffix):
    out = builder_module / f"model{suffix}"
    result = run("transfer", FIXTURES / "k224_functional_bn_x2_weights.h5", out, "--builder", "train:build_model")
    assert result.exit_code == 0, result.output
    assert "all 4 weighted layers loaded" in result.stdout
    xs, ys = fixture_batch(ENTRY)
    assert_predictions_match(predict(keras.models.load_model(out, compile=False), xs), ys)


def test_transfer_refuses_a_wrong_model_with_the_layer_and_shapes(builder_module):
    result = run("transfer", FIXTURES / "k224_functional_bn_x2_weights.h5", builder_module / "m.keras",
                 "--builder", "train:build_wrong_model")
    assert result.exit_code == 1
    assert result.stderr.startswith("Error: The weights do not fit the model: layer #0 (named d1 in the model, d1 "
                                    "in the source) expects 2 weight(s) of shapes (5, 8) (8,); received 2 of "
                                    "shapes (6, 8) (8,).")
    assert not (builder_module / "m.keras").exists()


def test_transfer_json_report_without_strict(builder_module):
    result = run("transfer", FIXTURES / "k224_functional_bn_x2_weights.h5", builder_module / "m.h5",
                 "--builder", "train:build_wrong_model", "--no-strict", "--json")
    assert result.exit_code == 1  # saved, but not everything matched
    report = json.loads(result.stdout)
    assert (report["ok"], report["loaded"], [m["target"] for m in report["mismatched"]]) == (False, 3, ["d1"])


def test_a_builder_that_cannot_be_found(builder_module):
    result = run("transfer", WRAPPER, builder_module / "m.keras", "--builder", "train:nothing_here")
    assert result.exit_code == 1 and "The builder cannot be found" in result.stderr


def test_verify_agrees_on_a_repair_and_its_original(tmp_path):
    out = tmp_path / "model.keras"
    run("unwrap", WRAPPER, out)
    result = run("verify", WRAPPER, out)
    assert result.exit_code == 0, result.output
    assert "agree" in result.stdout and "10 weight tensors compared" in result.stdout


def test_verify_fails_on_different_models(tmp_path):
    result = run("verify", WRAPPER, FIXTURES / "k224_functional_bn_x3_full.h5", "--json")
    assert result.exit_code == 1
    report = json.loads(result.stdout)
    assert report["agree"] is False and report["problems"][0].startswith("weight #0")


def test_an_h5_beside_the_keras_output_is_left_alone(tmp_path):
    (tmp_path / "model.h5").write_text("someone else's file")
    result = run("unwrap", WRAPPER, tmp_path / "model.keras")
    assert result.exit_code == 0, result.output
    assert (tmp_path / "model.h5").read_text() == "someone else's file"


def test_commands_that_load_keras_print_no_tensorflow_log_lines(tmp_path):
    """TensorFlow's C++ start-up lines (cudart, cuInit, absl) bypass Python; the CLI keeps them out of its output."""
    import subprocess
    import sys
    from pathlib import Path

    script = Path(sys.executable).parent / "mgpu-io"
    if not script.exists():
        pytest.skip("the console script is not installed in this environment")
    done = subprocess.run([str(script), "unwrap", str(WRAPPER), str(tmp_path / "m.keras")], capture_output=True,
                          text=True, env=newcomer_environment(), timeout=300)
    assert done.returncode == 0 and done.stderr == "", done.stderr
    assert done.stdout.startswith(f"Wrote {tmp_path / 'm.keras'}")
