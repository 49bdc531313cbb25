"""Bad input gets one clear line, exit code 1, and nothing written: the user's story when something is wrong.

Damaged files are made from real fixtures (truncated, a group deleted, a dataset reshaped), never by hand.
"""

import shutil

import h5py
import numpy as np
import pytest
from helpers import FIXTURES, runner

from mgpu_io.cli import app

WRAPPER = FIXTURES / "k224_functional_bn_x2_full.h5"


def run(*args):
    return runner.invoke(app, [str(a) for a in args])


def assert_clean_failure(result, out_dir, expected):
    assert result.exit_code == 1
    assert result.stdout == ""
    lines = result.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("Error: ")
    assert expected in lines[0]
    assert "Traceback" not in result.stderr
    assert sorted(p.name for p in out_dir.iterdir() if p.name.startswith("out")) == []
    assert not [p for p in out_dir.iterdir() if p.name.endswith(".tmp")]


@pytest.fixture
def copy_of(tmp_path):
    def make(name=WRAPPER.name):
        target = tmp_path / f"in-{name}"
        shutil.copyfile(FIXTURES / name, target)
        return target
    return make


def test_a_truncated_file(tmp_path, copy_of):
    damaged = copy_of()
    damaged.write_bytes(damaged.read_bytes()[: damaged.stat().st_size // 2])
    result = run("unwrap", damaged, tmp_path / "out.h5")
    assert_clean_failure(result, tmp_path, "The HDF5 file is damaged and cannot be opened (truncated or partly "
                                           "overwritten?). Expected a complete Keras .h5 file.")


def test_a_file_that_is_not_hdf5(tmp_path):
    notes = tmp_path / "notes.txt"
    notes.write_text("epoch 10: loss 0.31\n")
    result = run("unwrap", notes, tmp_path / "out.h5")
    assert_clean_failure(result, tmp_path, (
        f"Error: The file is neither HDF5 nor a JSON config. Expected a Keras .h5 file or the JSON of "
        f"`model.to_json()` (or the YAML of `to_yaml()`). Received: filepath={notes} (text that is not JSON, 20 "
        f"bytes). Check the path; "
        f"a Keras 3 `.keras` file is a zip archive that needs no repair."))


def test_an_hdf5_file_without_a_model(tmp_path):
    data = tmp_path / "data.h5"
    with h5py.File(data, "w") as f:
        f["images"] = np.zeros((2, 2))
    result = run("inspect", data)
    assert_clean_failure(result, tmp_path, (
        f"Error: The HDF5 file holds no Keras model. Expected a `model_config` attribute (full model) or "
        f"`layer_names` (weights only). Received: filepath={data} (root attributes: [], groups: ['images'])."))


def test_invalid_json(tmp_path):
    config = tmp_path / "model.json"
    config.write_text('{"class_name": "Model", "config": {"layers": [')
    result = run("unwrap", config, tmp_path / "out.json")
    assert_clean_failure(result, tmp_path, "The JSON in the file cannot be parsed. Expected valid JSON as Keras "
                                           "writes it.")


def test_json_that_is_not_a_model_config(tmp_path):
    config = tmp_path / "history.json"
    config.write_text('{"loss": [0.5, 0.4]}')
    result = run("inspect", config)
    assert_clean_failure(result, tmp_path, "The JSON file is not a Keras model config. Expected an object with "
                                           "`class_name` and `config` keys")


def test_a_missing_template_weight_group(tmp_path, copy_of):
    damaged = copy_of()
    with h5py.File(damaged, "a") as f:
        del f["model_weights/template"]
    result = run("unwrap", damaged, tmp_path / "out.h5")
    assert_clean_failure(result, tmp_path, (
        "Error: The weight group of layer 'template' is missing. Expected a group 'template' in '/model_weights', "
        "as `layer_names` lists it."))


def test_a_listed_weight_that_is_missing(tmp_path, copy_of):
    damaged = copy_of()
    with h5py.File(damaged, "a") as f:
        del f["model_weights/template/bn/moving_variance:0"]
    result = run("unwrap", damaged, tmp_path / "out.h5")
    assert_clean_failure(result, tmp_path, "Weights of layer 'bn' are listed but missing. Expected datasets "
                                           "['bn/moving_variance:0'] in group '/model_weights/template'.")


def test_a_wrong_shaped_weight(tmp_path, copy_of):
    damaged = copy_of()
    with h5py.File(damaged, "a") as f:
        del f["model_weights/template/d1/bias:0"]
        f["model_weights/template/d1/bias:0"] = np.zeros(7, dtype="float32")
    result = run("unwrap", damaged, tmp_path / "out.h5")
    assert_clean_failure(result, tmp_path, (
        f"Error: Shape mismatch for weight 'd1/bias:0' of Dense layer 'd1'. Expected shape (8,) from the layer's "
        f"config. Received: shape=(7,) in filepath={damaged}. The weights do not belong to this config; pair them "
        f"with the config they were saved with."))


def test_the_failed_save_stub_cannot_be_unwrapped(tmp_path):
    result = run("unwrap", FIXTURES / "k216_failed_save_stub.h5", tmp_path / "out.h5")
    assert_clean_failure(result, tmp_path, "The file is the stub that a failed `save()` of a multi-GPU model leaves "
                                           "behind: it holds no model config and no weights.")


def test_a_plain_model_is_refused_unless_allowed(tmp_path):
    clean = tmp_path / "clean.h5"
    assert run("unwrap", WRAPPER, clean).exit_code == 0
    result = run("unwrap", clean, tmp_path / "out.h5")
    assert_clean_failure(result, tmp_path, "The model is not a multi-GPU wrapper; there is nothing to unwrap.")
    assert "pass --allow-plain to copy it through" in result.stderr
    assert run("unwrap", clean, tmp_path / "copy.h5", "--allow-plain").exit_code == 0


def test_a_missing_input(tmp_path):
    result = run("inspect", tmp_path / "nowhere.h5")
    assert_clean_failure(result, tmp_path, "Cannot read the input file. Expected a Keras .h5 file or a JSON config.")


def test_config_is_refused_for_a_full_model(tmp_path):
    result = run("unwrap", WRAPPER, tmp_path / "out.h5", "--config", FIXTURES / "k224_functional_bn_x2_config.json")
    assert_clean_failure(result, tmp_path, "--config applies to weights-only files.")


def test_config_from_another_model_is_refused(tmp_path):
    result = run("unwrap", FIXTURES / "k224_nested_depth3_weights.h5", tmp_path / "out.h5",
                 "--config", FIXTURES / "k224_siamese_x2_config.json")
    assert_clean_failure(result, tmp_path, "The config and the weights come from different models.")


def test_usage_errors_exit_with_code_2(tmp_path):
    assert run("unwrap", WRAPPER).exit_code == 2
    assert run("frobnicate").exit_code == 2
