"""Run inside an environment with Keras 3 on a non-TensorFlow backend (``KERAS_BACKEND=jax`` or ``torch``) and no
TensorFlow: load every full-model fixture with mgpu_io.load_model, compare with the old Keras' predictions, write a
.keras output and transfer weights into a model built in code. Prints one JSON object; tests/load/test_backends.py reads it.
"""

import json
import sys
import tempfile
import warnings
from pathlib import Path

import numpy as np

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))

import keras  # noqa: E402
from helpers import APP_MANIFEST, MANIFEST, TF2_MANIFEST, fixture_batch, fixture_path, predict  # noqa: E402
from lambda_functions import USER_FUNCTIONS  # noqa: E402

import mgpu_io  # noqa: E402

#: JAX's float32 kernels vs TF 1.15's: 1.4e-5 measured at most (tests/load/test_backends.py states the same bound).
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


def tf_ops():
    """tf.keras 2.4+ files (fixtures/tfops, TF 2.5/2.8/2.15): the largest difference from the writer's predictions,
    evaluate numbers and predictions after one SGD step, per file (or the error)."""
    folder = HERE.parent.parent / "fixtures" / "tfops"
    measured = {}
    for entry in json.loads((folder / "manifest.json").read_text()):
        if entry["writer"] not in ("tf25", "tf28", "tf215"):
            continue
        try:
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")
                model = mgpu_io.load_model(folder / entry["file"])
            data = np.load(folder / entry["data"])
            xs = [data[f"x{i}"] for i in range(len([k for k in data.files if k.startswith("x")]))]
            ys = [data[f"y{i}"] for i in range(len([k for k in data.files if k.startswith("y")]))]
            worst = largest_difference(model.predict(xs if len(xs) > 1 else xs[0], verbose=0), ys)
            if entry.get("compiled"):
                labels = data["t0"] if "t0" in data.files else None
                ours = model.evaluate(xs[0], labels, batch_size=len(xs[0]), verbose=0, return_dict=True)
                theirs = {k[len("eval_"):]: float(data[k]) for k in data.files if k.startswith("eval_")}
                if sorted(ours) != sorted(theirs):
                    raise AssertionError(f"evaluate reports {sorted(ours)}, the writer {sorted(theirs)}")
                worst = max([worst] + [abs(float(ours[k]) - v) / max(1.0, abs(v)) for k, v in theirs.items()])
                model.fit(xs[0], labels, batch_size=len(xs[0]), epochs=1, shuffle=False, verbose=0)
                worst = max(worst, largest_difference(model.predict(xs[0], verbose=0), [data["step_y0"]]))
            measured[entry["file"]] = worst
        except Exception as error:
            measured[entry["file"]] = f"{type(error).__name__}: {error}"[:300]
    return measured


#: fixtures/applications' templates of tf.keras 2.4-2.15 (the wrapper era's writers are keras216 ... tfkeras115).
TF2X_APPLICATIONS = [e for e in APP_MANIFEST if e["writer"] in ("tf24", "tf28", "tf210", "tf215")]


def tf2x_applications():
    """tf.keras 2.4-2.15's keras.applications templates (fixtures/applications, writers tf24-tf215): per file
    ``[largest difference, max|prediction|]``, or the error (tests/load/test_tf2x_applications.py on TensorFlow)."""
    measured = {}
    for entry in TF2X_APPLICATIONS:
        try:
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")
                model = mgpu_io.load_model(fixture_path(entry), compile=False)
            xs, ys = fixture_batch(entry)
            measured[entry["file"]] = [largest_difference(predict(model, xs), ys), float(np.abs(ys[0]).max())]
        except Exception as error:
            measured[entry["file"]] = f"{type(error).__name__}: {error}"[:300]
        keras.backend.clear_session(free_memory=False)
    return measured


def main():
    result = {"backend": keras.backend.backend(), "keras": keras.__version__, "models": {}, "failures": {}}
    for entry in MANIFEST + APP_MANIFEST + TF2_MANIFEST:
        if entry["file_type"] != "model" or not entry.get("data") or entry in TF2X_APPLICATIONS:
            continue  # tf.keras 2.4-2.15's applications: tf2x_applications()
        try:
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")
                model = mgpu_io.load_model(fixture_path(entry), lambdas=functions(entry))
            xs, ys = fixture_batch(entry)
            result["models"][entry["file"]] = largest_difference(predict(model, xs), ys)
        except Exception as error:
            result["failures"][entry["file"]] = f"{type(error).__name__}: {error}"[:300]
    result["tfops"] = tf_ops()
    result["tf2x_applications"] = tf2x_applications()
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
