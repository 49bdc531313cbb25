"""Run inside an environment with Keras 3 on a non-TensorFlow backend (``KERAS_BACKEND=jax`` or ``torch``) and no
TensorFlow: load every full-model fixture with mgpu_io.load_model, compare with the old Keras' predictions, write a
.keras output and transfer weights into a model built in code. Prints one JSON object; tests/test_backends.py reads it.
"""

import json
import sys
import tempfile
import warnings
from pathlib import Path

import numpy as np

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parent))

import keras  # noqa: E402
from helpers import APP_MANIFEST, MANIFEST, TF2_MANIFEST, fixture_batch, fixture_path, predict  # noqa: E402
from lambda_functions import USER_FUNCTIONS  # noqa: E402

import mgpu_io  # noqa: E402


#: JAX's float32 kernels vs TF 1.15's: 1.4e-5 measured at most (tests/test_backends.py states the same bound).
BOUND = 2e-5


def functions(entry):
    names = list(entry.get("user_functions") or {}) + (["double"] if "template_lambda" in entry["file"] else [])
    return {name: USER_FUNCTIONS[name] for name in names} or None


def largest_difference(outputs, expected):
    outputs = outputs if isinstance(outputs, (list, tuple)) else [outputs]
    worst = 0.0
    for got, want in zip(outputs, expected):
        got = np.asarray(got).reshape(want.shape)
        finite = np.isfinite(want)
        if finite.any():
            worst = max(worst, float(np.abs(got[finite] - want[finite]).max()))
    return worst


def main():
    result = {"backend": keras.backend.backend(), "keras": keras.__version__, "models": {}, "failures": {}}
    for entry in MANIFEST + APP_MANIFEST + TF2_MANIFEST:
        if entry["file_type"] != "model" or not entry.get("data"):
            continue
        try:
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")
                model = mgpu_io.load_model(fixture_path(entry), lambdas=functions(entry))
            xs, ys = fixture_batch(entry)
            result["models"][entry["file"]] = largest_difference(predict(model, xs), ys)
        except Exception as error:  # noqa: BLE001 - reported, and the test fails on it
            result["failures"][entry["file"]] = f"{type(error).__name__}: {error}"[:300]
    folder = Path(tempfile.mkdtemp())
    wrapper = fixture_path({"file": "k224_functional_bn_x2_full.h5"})
    out = folder / "model.keras"
    mgpu_io.unwrap(wrapper, out)
    reloaded = keras.models.load_model(out)
    xs, ys = fixture_batch({"file": wrapper.name, "data": "k224_functional_bn_x2.npz"})
    result["keras_output"] = largest_difference(predict(reloaded, xs), ys)
    fresh = keras.models.clone_model(reloaded)
    result["transfer_ok"] = mgpu_io.transfer_weights(fixture_path({"file": "k224_functional_bn_x2_weights.h5"}),
                                                     fresh).ok
    result["transfer"] = largest_difference(predict(fresh, xs), ys)
    result["tensorflow_imported"] = "tensorflow" in sys.modules
    print(json.dumps(result))
    if "--check" in sys.argv:  # for noxfile.py: a failure or a difference above the stated bound fails the session
        worst = max(result["models"].values(), default=0.0)
        ok = not result["failures"] and worst <= BOUND and result["transfer_ok"] and \
            max(result["keras_output"], result["transfer"]) <= BOUND
        print(f"{result['backend']} / Keras {result['keras']}: {len(result['models'])} models, worst difference "
              f"{worst:.2g} (bound {BOUND:g}), {len(result['failures'])} failures: {'ok' if ok else 'FAILED'}")
        sys.exit(0 if ok else 1)


if __name__ == "__main__":
    main()
