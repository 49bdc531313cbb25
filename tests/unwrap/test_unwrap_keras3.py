"""A user repairs a wrapper file and loads the result with plain Keras 3 on a CPU.

Every fixture written by the old writers, and every file of the reference set, must load after `unwrap` with
`keras.models.load_model` (safe mode on) and predict what the old Keras predicted.
"""

import json

import pytest
from helpers import (FIXTURES, REFERENCE, has_user_lambda, assert_flat_predictions_match, assert_predictions_match, fixture_batch,
                      fixture_path, fixtures, needs_reference, predict, reference_batch, reference_params)

from mgpu_io import unwrap

keras = pytest.importorskip("keras")
from templates import BUILDERS, unwrap_options  # noqa: E402  (needs keras)


@pytest.mark.parametrize("entry", fixtures("model", where=lambda e: not has_user_lambda(e)))
def test_a_repaired_full_model_loads_in_keras3_and_predicts_like_the_old_keras(entry, tmp_path):
    out = tmp_path / "model.h5"
    report = unwrap(fixture_path(entry), out)
    assert report.written and report.depth == entry["depth"]
    model = keras.models.load_model(out)
    xs, ys = fixture_batch(entry)
    assert_predictions_match(predict(model, xs), ys)


@pytest.mark.parametrize("entry", fixtures("model", where=has_user_lambda))
def test_the_templates_own_lambda_is_written_by_name_and_loads_with_the_users_function(entry, tmp_path):
    """The stored bytecode is not copied: Keras 3 needs the user's function, by the layer's name (docs/lambdas.md)."""
    out = tmp_path / "model.h5"
    unwrap(fixture_path(entry), out)
    with pytest.raises(TypeError, match="Could not locate function 'double'"):
        keras.models.load_model(out)
    model = keras.models.load_model(out, custom_objects={"double": lambda t: t * 2.0})
    xs, ys = fixture_batch(entry)
    assert_predictions_match(predict(model, xs), ys)


@pytest.mark.parametrize("entry", fixtures("weights"))
def test_repaired_weights_load_into_the_template_built_in_keras3_code(entry, tmp_path):
    out = tmp_path / "weights.h5"
    unwrap(fixture_path(entry), out, **unwrap_options(entry["file"], "keras3", FIXTURES))
    model = BUILDERS[entry["file"]](keras)
    model.load_weights(out)
    xs, ys = fixture_batch(entry)
    assert_predictions_match(predict(model, xs), ys)


@pytest.mark.parametrize("entry", fixtures("config"))
def test_a_repaired_json_config_builds_the_template_in_keras3(entry, tmp_path):
    """The architecture-JSON-plus-weights pair users shipped: both halves repaired, then combined."""
    config_out, weights_out = tmp_path / "model.json", tmp_path / "weights.h5"
    unwrap(fixture_path(entry), config_out)
    weights = fixture_path(entry).with_name(entry["file"].replace("_config.json", "_weights.h5"))
    unwrap(weights, weights_out, config=fixture_path(entry))
    model = keras.models.model_from_json(config_out.read_text())
    model.load_weights(weights_out)
    xs, ys = fixture_batch(entry)
    assert_predictions_match(predict(model, xs), ys)
    assert json.loads(config_out.read_text())["config"]["name"] == entry["template"]


def test_the_repaired_model_keeps_the_training_setup_keyed_by_the_template_outputs(tmp_path):
    out = tmp_path / "model.h5"
    report = unwrap(fixture_path({"file": "k224_functional_bn_x2_full.h5"}), out)
    assert report.optimizer == "copied aside"
    model = keras.models.load_model(out)  # compile=True: the training config must be readable by Keras 3
    assert model.optimizer is not None and model.optimizer.__class__.__name__ == "Adam"
    assert model.output_names == ["out_a", "out_b"]
    assert set(model.loss) == {"out_a", "out_b"}


def test_weights_and_json_pair_without_config_works_when_no_conversion_is_needed(tmp_path):
    entry = next(p.values[0] for p in fixtures("config") if p.values[0]["file"].startswith("k224_functional"))
    config_out, weights_out = tmp_path / "model.json", tmp_path / "weights.h5"
    unwrap(fixture_path(entry), config_out)
    unwrap(fixture_path(entry).with_name(entry["file"].replace("_config.json", "_weights.h5")), weights_out)
    model = keras.models.model_from_json(config_out.read_text())
    model.load_weights(weights_out)
    xs, ys = fixture_batch(entry)
    assert_predictions_match(predict(model, xs), ys)


def test_the_siamese_losses_are_re_keyed_from_the_deduplicated_merge_names(tmp_path):
    out = tmp_path / "model.h5"
    report = unwrap(fixture_path({"file": "k224_siamese_x2_full.h5"}), out)
    assert "nested-model-inlined" in report.config_changes
    # The wrapper was compiled with {"add": "mse", "nested_1": "mae", "nested_2": "mae"}; the template repeats
    # its output name, so the losses become a list in output order.
    inner_output = report.outputs[1]  # the nested model was inlined: its last layer is the output now
    assert report.outputs == ["add", inner_output, inner_output]
    assert report.renamed_outputs == {"nested_1": inner_output, "nested_2": inner_output}
    model = keras.models.load_model(out)
    assert len(model.outputs) == 3
    assert [getattr(loss, "__name__", loss) for loss in model.loss] == [
        "mean_squared_error", "mean_absolute_error", "mean_absolute_error"]


def test_keras2_hard_sigmoid_gates_are_made_exact_for_keras3(tmp_path):
    out = tmp_path / "model.h5"
    report = unwrap(fixture_path({"file": "k224_conv1d_bilstm_x2_full.h5"}), out)
    assert "hard-sigmoid-gates-rescaled" in report.config_changes
    assert any("target='tf_keras'" in warning for warning in report.warnings)
    assert "hard-sigmoid-gates-rescaled" not in unwrap(
        fixture_path({"file": "k224_conv1d_bilstm_x2_full.h5"}), tmp_path / "tf.h5", target="tf_keras").config_changes


@needs_reference
@pytest.mark.parametrize("name,facts", reference_params("model"))
def test_reference_full_models_load_in_keras3_after_unwrap(name, facts, tmp_path):
    out = tmp_path / "model.h5"
    unwrap(REFERENCE / name, out)
    xs, reference = reference_batch(facts)
    assert_flat_predictions_match(predict(keras.models.load_model(out), xs), reference)


@needs_reference
@pytest.mark.parametrize("name,facts", reference_params("weights"))
def test_reference_weights_load_into_keras3_templates_after_unwrap(name, facts, tmp_path):
    out = tmp_path / "weights.h5"
    unwrap(REFERENCE / name, out)
    model = BUILDERS[name](keras)
    model.load_weights(out)
    xs, reference = reference_batch(facts)
    assert_flat_predictions_match(predict(model, xs), reference)
