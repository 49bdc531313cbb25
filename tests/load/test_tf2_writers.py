"""The last TensorFlow releases that had multi_gpu_model (TF 2.0-2.3), Keras 2.3.1 on TF 2 and Keras 2.0.9.

Every HDF5, JSON, YAML and bare-config fixture of fixtures/tf2 (written by the real writers, docs/tf2-writers.md) is
inspected, repaired and loaded in Keras 3, and predicts what the old TensorFlow predicted. SavedModel directories
and TF-format checkpoints are tested in test_tf_formats.py.
"""

import json

import pytest
from helpers import TF2_MANIFEST, assert_predictions_match, fixture_batch, fixture_path, fixtures, predict, runner

import mgpu_io
from mgpu_io.errors import FailedSaveStub, NotAModelFile

HDF5_AND_TEXT = ("model", "weights", "config", "yaml")


def beside(entry, suffix):
    """The file the same writer saved beside ``entry`` with another suffix (``_weights.h5``, ``_config.json``)."""
    stem = entry["file"]
    for ending in ("_bare_config.json", "_config.json", "_config.yaml", "_weights.h5", "_full.h5"):
        if stem.endswith(ending):
            stem = stem[: -len(ending)]
    candidate = fixture_path(entry).with_name(stem + suffix)
    return candidate if candidate.exists() else None


@pytest.mark.parametrize("entry", fixtures(*HDF5_AND_TEXT, manifest=TF2_MANIFEST))
def test_inspect_names_the_writer_nesting_and_template(entry):
    report = mgpu_io.inspect(fixture_path(entry))
    assert (report.is_wrapper, report.depth) == (entry["is_wrapper"], entry["depth"])
    assert report.replicas == entry["replicas"]
    if entry["file_type"] != "weights":
        assert report.template == entry["template"] and report.outputs == entry["outputs"]
        assert report.variant == entry["variant"]


@pytest.mark.parametrize("entry", fixtures("model", manifest=TF2_MANIFEST))
def test_a_full_model_loads_with_the_old_predictions_and_its_optimizer(entry, tmp_path):
    model = mgpu_io.load_model(fixture_path(entry))
    xs, ys = fixture_batch(entry)
    assert_predictions_match(predict(model, xs), ys)
    assert int(model.optimizer.iterations) > 0
    keras = pytest.importorskip("keras")
    out = tmp_path / "model.h5"
    assert mgpu_io.unwrap(fixture_path(entry), out).optimizer == "copied aside"
    assert_predictions_match(predict(keras.models.load_model(out), xs), ys)


@pytest.mark.parametrize("entry", fixtures("config", "yaml", manifest=TF2_MANIFEST,
                                           where=lambda e: beside(e, "_weights.h5")))
def test_a_json_yaml_or_bare_config_with_its_weights_loads_with_the_old_predictions(entry):
    model = mgpu_io.load_model(fixture_path(entry), weights=beside(entry, "_weights.h5"), compile=False)
    xs, ys = fixture_batch(entry)
    assert_predictions_match(predict(model, xs), ys)


@pytest.mark.parametrize("entry", fixtures("yaml", manifest=TF2_MANIFEST))
def test_a_yaml_config_is_repaired_to_json_that_plain_keras3_builds(entry, tmp_path):
    keras = pytest.importorskip("keras")
    config_out, weights_out = tmp_path / "model.json", tmp_path / "weights.h5"
    report = mgpu_io.unwrap(fixture_path(entry), config_out)
    assert report.file_type == "config" and report.depth == entry["depth"]
    mgpu_io.unwrap(beside(entry, "_weights.h5"), weights_out, config=fixture_path(entry))
    model = keras.models.model_from_json(config_out.read_text())
    model.load_weights(weights_out)
    xs, ys = fixture_batch(entry)
    assert_predictions_match(predict(model, xs), ys)
    assert json.loads(config_out.read_text())["config"]["name"] == entry["template"]


@pytest.mark.parametrize("entry", fixtures("yaml", manifest=TF2_MANIFEST, where=lambda e: beside(e, "_config.json")))
def test_yaml_and_json_of_the_same_model_read_the_same(entry):
    from mgpu_io.format.read import open_stored

    with open_stored(fixture_path(entry)) as from_yaml, open_stored(beside(entry, "_config.json")) as from_json:
        assert from_yaml.model_config == from_json.model_config


def test_keras_209_saved_only_weights_and_a_stub():
    stub = next(e for e in TF2_MANIFEST if e["file_type"] == "stub")
    with pytest.raises(FailedSaveStub):
        mgpu_io.unwrap(fixture_path(stub), fixture_path(stub).with_name("never.h5"))
    assert mgpu_io.inspect(fixture_path(stub)).file_type == "stub"


def test_keras_216s_yaml_is_the_only_architecture_of_its_wrapper_and_it_repairs(tmp_path):
    """Keras 2.1.6 on TF 1.15: save() and to_json() fail on the wrapper, to_yaml() writes the slice's closure over the
    tensorflow module as a Python object. Read as the text '<module tensorflow>', nothing constructed."""
    entry = next(e for e in TF2_MANIFEST if e["file"] == "k216_functional_bn_x2_config.yaml")
    report = mgpu_io.inspect(fixture_path(entry))
    assert (report.is_wrapper, report.template, report.outputs) == (True, "template", ["out_a", "out_b"])
    model = mgpu_io.load_model(fixture_path(entry), weights=beside(entry, "_weights.h5"), compile=False)
    xs, ys = fixture_batch(entry)
    assert_predictions_match(predict(model, xs), ys)


def test_a_repaired_config_is_json_even_from_yaml(tmp_path):
    entry = next(e for e in TF2_MANIFEST if e["file"] == "tf22_sequential_x2_config.yaml")
    with pytest.raises(mgpu_io.InvalidArgument, match=r"A repaired config is written as JSON: Keras 3 and TF >= "
                                                      r"2\.6 read no YAML\. Expected an output ending in \.json\."):
        mgpu_io.unwrap(fixture_path(entry), tmp_path / "out.yaml")
    assert not (tmp_path / "out.yaml").exists()


# --- YAML is read with a safe loader only -------------------------------------------------------------------


@pytest.mark.parametrize("text, message", [
    ("class_name: Model\nconfig: !!python/object/apply:os.system ['touch /tmp/mgpu-io-yaml-ran']\n",
     "The YAML config holds a Python object that Keras' writers never wrote"),
    ("class_name: Model\nconfig: !!python/name:os.system\n", "The YAML config holds a Python object tag"),
    ("class_name: Model\nconfig: !custom {}\n", "The YAML config holds a Python object tag"),
    ("class_name: Model\nconfig: [a, b\n", "The YAML config cannot be parsed"),
    ("class_name: Model\nconfig: {x: .nan}\n", "The YAML config holds nan"),
    ("a: &a [1, 2]\nb: &b [*a, *a, *a, *a, *a, *a, *a, *a, *a]\nc: &c [*b, *b, *b, *b, *b, *b, *b, *b, *b]\n"
     "d: &d [*c, *c, *c, *c, *c, *c, *c, *c, *c]\ne: &e [*d, *d, *d, *d, *d, *d, *d, *d, *d]\n"
     "f: &f [*e, *e, *e, *e, *e, *e, *e, *e, *e]\ng: &g [*f, *f, *f, *f, *f, *f, *f, *f, *f]\n"
     "class_name: Model\nconfig: [*g, *g, *g, *g, *g, *g, *g, *g, *g]\n",
     "The YAML config expands to too many values"),
    ("class_name: Model\nconfig: &x [*x]\n", "The YAML config expands to too many values"),
    ("class_name: Model\nconfig: !!binary aGVsbG8=\n", "The YAML config holds a value that Keras' writers never wrote"),
    ("class_name: Model\nconfig: !!set {a, b}\n", "The YAML config holds a value that Keras' writers never wrote"),
])
def test_hostile_yaml_is_refused_without_constructing_anything(tmp_path, text, message):
    path = tmp_path / "model.yaml"
    path.write_text(text)
    with pytest.raises(NotAModelFile, match=message):
        mgpu_io.inspect(path)
    assert not (tmp_path.parent / "mgpu-io-yaml-ran").exists()


def test_a_date_like_name_in_a_hand_edited_yaml_is_its_text_and_inspect_json_prints_it(tmp_path):
    """Found by the fuzzer (issue 21): PyYAML read an unquoted 2002-12-14 as a date, which --json could not print."""
    from mgpu_io.cli import app
    
    path = tmp_path / "model.yaml"
    path.write_text("class_name: 2001-12-14t21:59:43.10-05:00\nconfig: {name: 2002-12-14}\n")
    result = runner.invoke(app, ["inspect", "--json", str(path)])
    assert result.exit_code == 0, result.output
    assert json.loads(result.stdout)["template"] == "2002-12-14"
