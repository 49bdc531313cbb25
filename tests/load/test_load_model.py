"""A data scientist on a laptop without a GPU loads a file from 2018 with `mgpu_io.load_model`."""

import shutil
import warnings

import h5py
import json
import pytest
from helpers import (FIXTURES, MANIFEST, REFERENCE, assert_flat_predictions_match, assert_predictions_match,
                      fixture_batch, fixture_path, fixtures, has_user_lambda, needs_reference, predict,
                      reference_batch, reference_params, REFERENCE_FILES)

import mgpu_io
from mgpu_io import InvalidArgument, MgpuIOWarning, MissingLambda

keras = pytest.importorskip("keras")

LOADABLE = lambda e: not has_user_lambda(e)  # noqa: E731


@pytest.mark.parametrize("entry", fixtures("model", where=LOADABLE))
def test_load_model_returns_the_template_predicting_like_the_old_keras(entry):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", MgpuIOWarning)  # NaN statistics warn; covered below
        model = mgpu_io.load_model(fixture_path(entry))
    assert model.name == entry["template"]
    xs, ys = fixture_batch(entry)
    assert_predictions_match(predict(model, xs), ys)


@pytest.mark.parametrize("entry", fixtures("config"))
def test_a_json_config_and_its_weights_load_together(entry):
    weights = fixture_path(entry).with_name(entry["file"].replace("_config.json", "_weights.h5"))
    model = mgpu_io.load_model(fixture_path(entry), weights=weights)
    xs, ys = fixture_batch(entry)
    assert_predictions_match(predict(model, xs), ys)


@needs_reference
@pytest.mark.parametrize("name,facts", reference_params("model"))
def test_reference_wrappers_load(name, facts):
    xs, reference = reference_batch(facts)
    assert_flat_predictions_match(predict(mgpu_io.load_model(REFERENCE / name), xs), reference)


@needs_reference
@pytest.mark.parametrize("name", sorted(p.name for p in REFERENCE.glob("*_template*.h5")) if REFERENCE.is_dir()
                         else [])
def test_clean_legacy_files_that_keras3_cannot_load_load_here(name):
    """The writers' own template saves (no wrapper): Keras 3 fails on several (legacy-format.md §7)."""
    stem = name.replace("_template_full.h5", "").replace("_template.h5", "")
    facts = next(f for f in REFERENCE_FILES.values() if f["data"].startswith(stem))
    xs, reference = reference_batch(facts)
    assert_flat_predictions_match(predict(mgpu_io.load_model(REFERENCE / name), xs), reference)


def test_cudnn_layers_run_on_the_cpu_like_the_old_keras_conversion():
    entry = {"file": "k224_cudnn_x2_full.h5", "data": "k224_cudnn_x2.npz"}
    model = mgpu_io.load_model(fixture_path(entry))
    assert [type(layer).__name__ for layer in model.layers][1:3] == ["Bidirectional", "GRU"]
    assert model.layers[2].get_config()["reset_after"] is True
    xs, ys = fixture_batch(entry)
    assert_predictions_match(predict(model, xs), ys)


def test_the_compiled_model_is_keyed_by_the_template_outputs():
    model = mgpu_io.load_model(fixture_path({"file": "k224_functional_bn_x2_full.h5"}))
    assert model.output_names == ["out_a", "out_b"]
    assert set(model.loss) == {"out_a", "out_b"}
    assert model.optimizer.__class__.__name__ == "Adam"


def test_compile_false_leaves_the_model_uncompiled():
    model = mgpu_io.load_model(fixture_path({"file": "k224_functional_bn_x2_full.h5"}), compile=False)
    assert not model.compiled and getattr(model, "optimizer", None) is None


def test_compile_false_reads_no_optimizer_state(monkeypatch):
    """An uncompiled load builds no optimizer, so the file's optimizer state (Adam's: two thirds of the bytes) is
    not read; the weights are the same."""
    from mgpu_io.format.plan_data import plan_data
    from mgpu_io.format.sandbox import probed

    path = fixture_path({"file": "k224_functional_bn_x2_full.h5"})
    full = probed(path, lambda: plan_data(path, allow_plain=True))
    weights_only = probed(path, lambda: plan_data(path, allow_plain=True, optimizer_state=False))
    assert full.optimizer_arrays and weights_only.optimizer_arrays is None
    assert {n: [a.tolist() for _, a in v] for n, v in full.values.items()} == {
        n: [a.tolist() for _, a in v] for n, v in weights_only.values.items()}
    asked = []
    monkeypatch.setenv("MGPU_IO_PROBE", "0")  # planned here, so that what load_model asks is seen
    monkeypatch.setattr(mgpu_io.keras.load, "plan_data", lambda *a, **k: asked.append(k) or plan_data(*a, **k))
    mgpu_io.load_model(path, compile=False)
    mgpu_io.load_model(path)
    assert [k.get("optimizer_state") for k in asked] == [False, True]


def test_the_templates_own_lambda_needs_its_function_and_the_stored_code_never_runs():
    path = fixture_path({"file": "k224_template_lambda_x2_full.h5"})
    with pytest.raises(MissingLambda, match=r"Received: no function for double \(<lambda>; from "
                                            r"fixtures/generate/write_fixtures.py; using t; inputs d1\)"):
        mgpu_io.load_model(path)
    model = mgpu_io.load_model(path, lambdas={"double": lambda t: t * 2.0})
    xs, ys = fixture_batch({"file": path.name, "data": "k224_template_lambda_x2.npz"})
    assert_predictions_match(predict(model, xs), ys)
    # safe_mode=False (the caller trusts the file): the stored Python 3.7 bytecode still never reaches Keras; its
    # source, recovered as data, is compiled here (with the decompilers), or the file is refused saying why.
    from mgpu_io.lambdas.recovery import available

    if available():
        with pytest.warns(MgpuIOWarning, match="Lambda layer 'double' runs its function recovered from the file"):
            trusted = mgpu_io.load_model(path, safe_mode=False)
        assert_predictions_match(predict(trusted, xs), ys)
    else:
        with pytest.raises(mgpu_io.InvalidArgument, match="Lambda layer 'double''s source cannot be recovered"):
            mgpu_io.load_model(path, safe_mode=False)


def test_nan_batchnorm_statistics_warn_and_name_the_layer():
    with pytest.warns(MgpuIOWarning, match=r"Weights of .* hold NaN or Inf.* bn/moving_mean"):
        mgpu_io.load_model(fixture_path({"file": "k224_bn_uneven_batch_x2_full.h5"}))


def test_a_weights_only_file_alone_is_refused_with_the_fix():
    with pytest.raises(InvalidArgument, match="mgpu_io.transfer_weights"):
        mgpu_io.load_model(FIXTURES / "k224_functional_bn_x2_weights.h5")


def test_a_full_model_file_as_weights_is_refused_in_the_callers_terms():
    full = FIXTURES / "k224_functional_bn_x2_full.h5"
    with pytest.raises(InvalidArgument) as raised:
        mgpu_io.load_model(FIXTURES / "k224_functional_bn_x2_config.json", weights=full)
    assert str(raised.value) == (
        f"weights= takes a weights-only file. Expected the file of save_weights() (or a weights checkpoint). "
        f"Received: weights={full} (a model file, which carries its own architecture). Load it alone: "
        f"load_model('k224_functional_bn_x2_full.h5')."
    )


def test_an_optimizer_keras3_lacks_compiles_what_it_can_and_warns(tmp_path):
    path = tmp_path / "custom_optimizer.h5"
    shutil.copyfile(FIXTURES / "k224_functional_bn_x2_full.h5", path)
    with h5py.File(path, "a") as f:  # as if trained with a custom optimizer class
        config = json.loads(f.attrs["training_config"])
        config["optimizer_config"]["class_name"] = "YellowFin"
        f.attrs["training_config"] = json.dumps(config).encode()
    with pytest.warns(MgpuIOWarning, match="The saved optimizer YellowFin cannot be rebuilt in Keras 3"):
        model = mgpu_io.load_model(path)
    assert set(model.loss) == {"out_a", "out_b"}


def test_training_resumes_on_a_multi_output_template_with_one_metrics_list():
    """Keras 2 applied `metrics=['accuracy']` to every output; Keras 3 needs one list per output, else the first
    `fit` fails with 'tuple arity mismatch'."""
    import numpy as np

    model = mgpu_io.load_model(fixture_path({"file": "k224_functional_bn_x2_full.h5"}))
    history = model.fit(np.ones((4, 6)), [np.eye(3)[[0, 1, 2, 0]], np.ones((4, 1))], verbose=0)
    assert np.isfinite(history.history["loss"][0])


def _with_losses(tmp_path, losses):
    path = tmp_path / "losses.h5"
    shutil.copyfile(FIXTURES / "k224_functional_bn_x2_full.h5", path)
    with h5py.File(path, "r+") as h5:
        training = json.loads(h5.attrs["training_config"])
        training["loss"] = losses
        h5.attrs["training_config"] = json.dumps(training)
    return path


def test_a_custom_loss_name_loads_the_model_uncompiled_with_a_warning(tmp_path):
    path = _with_losses(tmp_path, {"out_a": "my_custom_loss", "out_b": "mse"})
    with pytest.warns(MgpuIOWarning, match=r"The model is loaded uncompiled: Keras 3 cannot rebuild its saved loss "
                                           r"or metrics \(Could not interpret loss identifier: my_custom_loss\)"):
        model = mgpu_io.load_model(path)
    assert not model.compiled and model.get_layer("d1").get_weights()[0].any()


def test_a_tf_keras_loss_object_with_reduction_auto_compiles(tmp_path):
    path = _with_losses(tmp_path, {"out_a": "categorical_crossentropy", "out_b": {
        "class_name": "MeanSquaredError", "config": {"reduction": "auto", "name": "mean_squared_error"}}})
    model = mgpu_io.load_model(path)
    assert model.compiled and "loss-reduction-auto" in mgpu_io.unwrap(path, tmp_path / "o.h5").config_changes


def test_no_weight_is_filled_from_its_initializer_before_the_files_values(monkeypatch):
    # Keras' own load fills every weight with random numbers and then overwrites them (most of the build's time for
    # a large model); load_model creates the variables without values and gives each the file's values at once.
    calls = []
    original = keras.initializers.VarianceScaling.__call__  # glorot_uniform, as Keras 2 wrote it, and its family
    monkeypatch.setattr(keras.initializers.VarianceScaling, "__call__",
                        lambda self, *args, **kwargs: calls.append(self) or original(self, *args, **kwargs))
    entry = next(e for e in MANIFEST if e["file"] == "k224_resume_adam_x2_full.h5")
    model = mgpu_io.load_model(fixture_path(entry))
    assert calls == []
    assert any(layer.get_config().get("kernel_initializer") for layer in model.layers)  # the config keeps them
    xs, ys = fixture_batch(entry)
    assert_predictions_match(predict(model, xs), ys)


def test_a_layer_that_makes_variables_as_it_runs_is_built_as_keras_builds_it():
    # A stateful RNN creates its states when it is first called, which a model built without values refuses:
    # that model is built again, as Keras builds it, and predicts what the old Keras did.
    from layer_sweep import evaluate, manifest

    entry = manifest("k224")["cases"]["GRU"]
    model = mgpu_io.load_model(FIXTURES.parent / "layers" / "k224" / entry["file"], compile=False)
    assert model.get_layer("stateful").stateful
    outcome = evaluate("k224", "GRU", entry)
    assert outcome.status in ("loads", "converted"), outcome.detail
