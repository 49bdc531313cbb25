"""Run in `.venv-jax` (Keras 3 on JAX, no TensorFlow) by tests/deploy/test_deploy_jax.py: each layer mgpu-io adds to a
rescued model, written as ONNX on JAX (jax2onnx) and run by ONNX Runtime, or refused. Prints one JSON line: per case,
``exported`` with the largest difference from the old writer's own predictions, or ``refused`` with the message."""

import json
import sys
import tempfile
import warnings
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT))
warnings.simplefilter("ignore")

import mgpu_io  # noqa: E402
from mgpu_io.keras.exports import model_input_names, run_artifact  # noqa: E402

FILES, TFOPS, LAYERS = ROOT / "fixtures" / "files", ROOT / "fixtures" / "tfops", ROOT / "fixtures" / "layers"


def stored(folder, name):
    entry = next(e for e in json.loads((folder / "manifest.json").read_text()) if e["file"] == name)
    data = np.load(folder / entry["data"])
    numbered = lambda prefix: [data[k] for k in sorted((k for k in data.files if k.startswith(prefix)),  # noqa: E731
                                                       key=lambda k: int(k[1:]))]
    return numbered("x"), numbered("y")


def case(source, name, xs, ys, **options):
    with tempfile.TemporaryDirectory() as folder:
        out = Path(folder) / ("model" + {"onnx": ".onnx", "litert": ".tflite"}.get(name, ""))
        try:
            mgpu_io.unwrap(source, out, inputs=xs, **options)
        except mgpu_io.MgpuIOError as error:
            return {"status": "refused", "type": type(error).__name__, "message": str(error)}
        model = mgpu_io.load_model(source, compile=False)
        got = run_artifact(out, xs, model_input_names(model))
        got = got if isinstance(got, list) else [got]
        return {"status": "exported", "difference": max(float(np.max(np.abs(np.asarray(g) - y)))
                                                         for g, y in zip(got, ys))}


def main():
    activation = LAYERS / "k122" / "Activation.h5"
    data = np.load(activation.with_name("data.npz"))
    hard_sigmoid = ([data["Activation/x0"]],
                    [data[f"Activation/y{i}"] for i in range(sum(k.startswith("Activation/y") for k in data.files))])
    results = {
        "hard_sigmoid onnx": case(activation, "onnx", *hard_sigmoid, allow_plain=True),
        "tfop onnx": case(TFOPS / "tf23_arithmetic_x2_full.h5", "onnx", *stored(TFOPS, "tf23_arithmetic_x2_full.h5")),
        "tfop images onnx": case(TFOPS / "tf23_images_full.h5", "onnx", *stored(TFOPS, "tf23_images_full.h5"),
                                 allow_plain=True),
        "cudnn onnx": case(FILES / "k224_cudnn_x2_full.h5", "onnx", *stored(FILES, "k224_cudnn_x2_full.h5")),
        "siamese litert": case(FILES / "k224_siamese_x2_full.h5", "litert", *stored(FILES, "k224_siamese_x2_full.h5")),
    }
    print(json.dumps({"backend": __import__("keras").backend.backend(), "tensorflow": "tensorflow" in sys.modules,
                      "results": results}))


if __name__ == "__main__":  # pytest's --doctest-modules imports this file: it must do nothing then
    main()
