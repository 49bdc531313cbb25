"""A user on Keras 3 with JAX (no TensorFlow) writes a rescued model as ONNX (jax2onnx, run by ONNX Runtime): each
layer mgpu-io adds to a rescued model exports, or is refused naming the layer and the format; LiteRT, which Keras
writes from TensorFlow only, is refused naming the backend. Runs tests/support/check_exports.py in `.venv-jax`."""

import json
import subprocess

import pytest
from helpers import JAX_PYTHON, JAX_TOLERANCE, ROOT, jax_environment


@pytest.fixture(scope="module")
def measured():
    if not JAX_PYTHON.exists():
        pytest.skip("no .venv-jax: `make jax-env` (or `make test`) builds Keras 3 on JAX without TensorFlow")
    done = subprocess.run([str(JAX_PYTHON), str(ROOT / "tests" / "support" / "check_exports.py")], cwd=ROOT,
                          env=jax_environment(PYTHONPATH=str(ROOT)),
                          capture_output=True, text=True, timeout=1200)
    if done.returncode != 0 and "No module named 'jax2onnx'" in done.stderr + done.stdout:
        pytest.skip("no jax2onnx in .venv-jax: pip install 'mgpu-io[onnx-jax]' there")
    assert done.returncode == 0, done.stderr[-3000:]
    found = json.loads(done.stdout.strip().splitlines()[-1])
    assert found["backend"] == "jax" and not found["tensorflow"]
    return found["results"]


def test_keras2s_exact_hard_sigmoid_exports_to_onnx_on_jax(measured):
    result = measured["hard_sigmoid onnx"]
    assert result["status"] == "exported" and result["difference"] <= JAX_TOLERANCE, result


def test_the_tf_op_layer_exports_in_images_and_is_refused_by_name_in_arithmetic(measured):
    assert measured["tfop images onnx"]["status"] == "exported", measured["tfop images onnx"]
    assert measured["tfop images onnx"]["difference"] <= JAX_TOLERANCE
    refused = measured["tfop onnx"]
    assert refused["status"] == "refused" and refused["type"] == "UnsupportedModel"
    assert refused["message"].startswith("The model cannot be written as onnx:")
    assert "TFOp 'tf_op_layer_Reshape'" in refused["message"]


def test_converted_cudnn_layers_in_a_bidirectional_are_refused_by_name_on_jax(measured):
    refused = measured["cudnn onnx"]
    assert refused["status"] == "refused" and refused["message"].startswith("The model cannot be written as onnx:")
    assert "LSTM 'forward_cu_dnnlstm_1'" in refused["message"] and "GRU 'gru'" in refused["message"]


def test_litert_on_jax_is_refused_naming_the_backend(measured):
    refused = measured["siamese litert"]
    assert refused["status"] == "refused" and "KERAS_BACKEND=jax" in refused["message"]
    assert refused["message"].endswith("Run with KERAS_BACKEND=tensorflow.")
