"""A user saved a multi-GPU wrapper with tf.keras 2.0–2.3 as a SavedModel folder, or its weights as a TF checkpoint.

Neither is HDF5, and neither reloads: `load_model` of the TF 2.0/2.1 SavedModels fails in their own TensorFlow, and
nothing stored should run anyway. mgpu_io.tf reads them as data and writes the legacy HDF5 file the same writer's
`model.save("x.h5")` / `save_weights("x.h5")` would have written (compared here, byte for byte in every attribute and
array, with the files that writer did write beside them); from there mgpu-io's own pipeline repairs and loads it.

The story, in order: she finds out what she has (`tf_format`), converts the SavedModel and gets her model back with
its optimizer state, converts the checkpoint with the JSON saved beside it, and learns exactly what went wrong when
a folder is not a SavedModel or a file is damaged.
"""

import json
import shutil
import subprocess
import sys

import h5py
import numpy as np
import pytest
from helpers import ROOT, TF2, TF2_MANIFEST, TOLERANCE, fixture_batch, fixture_path, fixtures, predict, runner

tf = pytest.importorskip("tensorflow")

import mgpu_io  # noqa: E402
from mgpu_io.errors import (  # noqa: E402
    InvalidArgument,
    MissingDependency,
    MgpuIOError,
    NotAModelFile,
    OutputError,
    WeightsMismatch,
)
from mgpu_io.format.string_attrs import read_str, read_str_list  # noqa: E402
from mgpu_io.format.kinds import SAVEDMODEL, TF_CHECKPOINT  # noqa: E402
from mgpu_io.tf.convert import to_legacy_h5  # noqa: E402
from mgpu_io.tf.recognise import tf_format  # noqa: E402

SAVEDMODELS = fixtures("savedmodel", manifest=TF2_MANIFEST)
CHECKPOINTS = fixtures("tf_checkpoint", manifest=TF2_MANIFEST)
#: The fixture manifest's file types (written by the generators) as the library's kinds (format/kinds.py).
KIND_OF_MANIFEST_TYPE = {"savedmodel": SAVEDMODEL, "tf_checkpoint": TF_CHECKPOINT}


def beside(entry, suffix):
    """The file the same writer saved next to a SavedModel / checkpoint (``_full.h5``, ``_config.json``, ...)."""
    stem = entry["file"].replace("_savedmodel", "").replace("_ckpt.index", "")
    return TF2 / f"{stem}{suffix}"


@pytest.fixture(scope="module")
def converted(tmp_path_factory):
    """Convert each fixture once for the whole module: ``converted(entry) -> (h5 path, summary)``."""
    folder, done = tmp_path_factory.mktemp("converted"), {}

    def convert(entry):
        if entry["file"] not in done:
            out = folder / (entry["file"].replace(".index", "") + ".h5")
            config = beside(entry, "_config.json") if entry["file_type"] == "tf_checkpoint" else None
            summary = to_legacy_h5(fixture_path(entry), out, **({"config": config} if config else {}))
            done[entry["file"]] = (out, summary)
        return done[entry["file"]]

    return convert


def assert_same_predictions(model, entry):
    """Within TOLERANCE of the old TensorFlow's predictions; the measured maximum is returned (printed with -s)."""
    xs, ys = fixture_batch(entry)
    outputs = predict(model, xs)
    outputs = outputs if isinstance(outputs, list) else [outputs]
    assert len(outputs) == len(ys)
    worst = max(float(np.abs(np.asarray(got).reshape(np.shape(want)) - want).max()) for got, want in zip(outputs, ys))
    print(f"{entry['file']}: max |prediction - old TF| = {worst:.3g}")
    assert worst <= TOLERANCE
    return worst


def layer_groups(root):
    """``{layer: [(weight name, array)]}`` of a weights root, in its ``layer_names`` and ``weight_names`` order."""
    return {name: [(w, root[name][w][()]) for w in read_str_list(root[name].attrs, "weight_names")]
            for name in read_str_list(root.attrs, "layer_names")}


def assert_same_layers(written, original):
    got, want = layer_groups(written), layer_groups(original)
    assert list(got) == list(want)
    for layer in want:
        assert [name for name, _ in got[layer]] == [name for name, _ in want[layer]], layer
        for (name, a), (_, b) in zip(got[layer], want[layer]):
            assert a.dtype == b.dtype and np.array_equal(a, b), f"{layer}/{name}"


def string_kind(attrs, name):
    """How an attribute string is stored: (variable-length?, UTF-8?) -- tf.keras 2.x used both encodings."""
    kind = attrs.get_id(name).get_type()
    return kind.is_variable_str(), kind.get_cset() == h5py.h5t.CSET_UTF8


# --- 1. What do I have? ------------------------------------------------------------------------------------------


@pytest.mark.parametrize("entry", SAVEDMODELS + CHECKPOINTS)
def test_tf_format_names_each_savedmodel_and_checkpoint(entry):
    path = fixture_path(entry)
    assert tf_format(path) == KIND_OF_MANIFEST_TYPE[entry["file_type"]]
    if entry["file_type"] == "tf_checkpoint":  # the prefix given to save_weights, and each data file, say the same
        prefix = str(path)[: -len(".index")]
        assert tf_format(prefix) == TF_CHECKPOINT
        for data in entry.get("checkpoint_files", []):
            assert tf_format(TF2 / data) == TF_CHECKPOINT


def test_tf_format_says_none_for_ordinary_files_folders_and_damaged_indexes(tmp_path):
    garbage = tmp_path / "garbage.index"
    garbage.write_bytes(bytes(range(256)) * 8)
    plain_folder = tmp_path / "folder"
    plain_folder.mkdir()
    for path in [TF2 / "tf22_functional_bn_x2_full.h5", TF2 / "tf22_functional_bn_x2_weights.h5",
                 TF2 / "tf22_functional_bn_x2_config.json", TF2 / "tf22_functional_bn_x2_config.yaml",
                 TF2 / "tf22_functional_bn_x2.npz", TF2 / "manifest.json", TF2, plain_folder, garbage,
                 tmp_path / "garbage", tmp_path / "missing.index", tmp_path / "missing"]:
        assert tf_format(path) is None, path


def test_tf_format_and_import_need_no_tensorflow():
    code = ("import sys, mgpu_io.tf.recognise as t; "
            "print(t.tf_format('fixtures/tf2/tf20_functional_bn_x2_savedmodel'), 'tensorflow' in sys.modules)")
    result = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, cwd=ROOT)
    assert result.returncode == 0, result.stderr
    assert result.stdout.split() == ["savedmodel", "False"]


# --- 2. The SavedModel becomes the full-model .h5 the same writer would have written ----------------------------


@pytest.mark.parametrize("entry", SAVEDMODELS)
def test_savedmodel_becomes_the_h5_its_writer_wrote(entry, converted):
    out, _ = converted(entry)
    with h5py.File(out, "r") as written, h5py.File(beside(entry, "_full.h5"), "r") as original:
        for key in ("model_config", "training_config", "keras_version", "backend"):
            assert read_str(written.attrs, key) == read_str(original.attrs, key), key  # the very same JSON text
            assert string_kind(written.attrs, key) == string_kind(original.attrs, key), key
        for key in ("keras_version", "backend"):
            assert read_str(written["model_weights"].attrs, key) == read_str(original["model_weights"].attrs, key)
        assert_same_layers(written["model_weights"], original["model_weights"])


@pytest.mark.parametrize("entry", SAVEDMODELS)
def test_converted_savedmodel_loads_and_predicts_like_the_old_tensorflow(entry, converted):
    out, _ = converted(entry)
    assert_same_predictions(mgpu_io.load_model(out, compile=False), entry)


@pytest.mark.parametrize("entry", SAVEDMODELS)
def test_inspect_sees_the_wrapper_the_manifest_records(entry, converted):
    out, _ = converted(entry)
    report = mgpu_io.inspect(out)
    assert report.is_wrapper and report.file_type == "model"
    assert (report.depth, report.replicas, report.template, report.outputs) == (
        entry["depth"], entry["replicas"], entry["template"], entry["outputs"])
    assert report.has_optimizer_weights == entry["has_optimizer_weights"]


@pytest.mark.parametrize("entry", SAVEDMODELS)
def test_the_optimizer_state_is_the_one_its_writer_stored(entry, converted):
    """[iter, m_1..m_n, v_1..v_n] with the writer's own names; a nested save keeps the outer optimizer only."""
    out, summary = converted(entry)
    assert summary["optimizer_found"] and summary["optimizer"] and summary["optimizer_class"] == "Adam"
    with h5py.File(out, "r") as written, h5py.File(beside(entry, "_full.h5"), "r") as original:
        names = read_str_list(original["optimizer_weights"].attrs, "weight_names")
        assert read_str_list(written["optimizer_weights"].attrs, "weight_names") == names
        for name in names:
            a, b = written["optimizer_weights"][name][()], original["optimizer_weights"][name][()]
            assert a.dtype == b.dtype and np.array_equal(a, b), name


@pytest.mark.parametrize("name", ["tf20_functional_bn_x2", "tf23_nested_depth2"])
def test_training_resumes_at_the_step_it_stopped(name, converted):
    entry = next(p.values[0] for p in SAVEDMODELS if p.values[0]["file"] == f"{name}_savedmodel")
    out, _ = converted(entry)
    with h5py.File(beside(entry, "_full.h5"), "r") as original:
        stored = int(original["optimizer_weights"]["Adam/iter:0"][()])
    model = mgpu_io.load_model(out)
    assert stored > 0 and int(model.optimizer.iterations.numpy()) == stored


@pytest.mark.parametrize("entry", SAVEDMODELS)
def test_the_summary_says_what_was_read_and_what_was_left_out(entry, converted):
    out, summary = converted(entry)
    assert summary["kind"] == "savedmodel" and summary["output_type"] == "model" and summary["output"] == str(out)
    assert summary["tensorflow_version"] == entry["tensorflow_version"]
    assert summary["keras_version"] == entry["keras_version"] and summary["backend"] == entry["backend"]
    assert summary["layers"][summary["layers"].index(entry["inputs"][0]) + 1].startswith("lambda")
    assert summary["weights"] == 10  # d1, bn (4), out_a, out_b
    notes = " | ".join(summary["notes"])
    assert "optimizer hyper-parameters" in notes
    if entry["depth"] == 2:
        assert "inner models' optimizers left out" in notes


def test_the_repaired_savedmodel_unwraps_like_any_legacy_file(converted, tmp_path):
    entry = next(p.values[0] for p in SAVEDMODELS if p.values[0]["file"] == "tf22_nested_depth2_savedmodel")
    out, _ = converted(entry)
    report = mgpu_io.unwrap(out, tmp_path / "clean.h5")
    assert (report.depth, report.template, report.optimizer) == (2, "template", "copied aside")


def test_config_does_not_apply_to_a_savedmodel(tmp_path):
    with pytest.raises(InvalidArgument, match=r"^config= does not apply to a SavedModel"):
        to_legacy_h5(TF2 / "tf22_functional_bn_x2_savedmodel", tmp_path / "x.h5",
                     config=TF2 / "tf22_functional_bn_x2_config.json")


def test_nothing_stored_is_loaded_or_run(monkeypatch, tmp_path):
    """The loaders that would run the SavedModel's graphs fail here if anything calls them (no module of mgpu_io
    imports marshal at all: tests/project/test_architecture.py)."""
    import keras

    def forbidden(*args, **kwargs):
        raise AssertionError("a loader that runs stored code was called")

    for owner, name in [(tf.saved_model, "load"), (tf.compat.v1.saved_model, "load"), (keras.models, "load_model"),
                        (keras.saving, "load_model")]:
        monkeypatch.setattr(owner, name, forbidden)
    summary = to_legacy_h5(TF2 / "tf20_nested_depth2_savedmodel", tmp_path / "model.h5")
    assert summary["optimizer"]
    to_legacy_h5(TF2 / "tf20_nested_depth2_ckpt.index", tmp_path / "weights.h5",
                 config=TF2 / "tf20_nested_depth2_config.json")


# --- 3. The checkpoint becomes the weights-only .h5, laid out by the JSON saved beside it -----------------------


@pytest.mark.parametrize("entry", CHECKPOINTS)
def test_checkpoint_with_its_config_becomes_the_weights_file_its_writer_wrote(entry, converted):
    out, summary = converted(entry)
    with h5py.File(out, "r") as written, h5py.File(beside(entry, "_weights.h5"), "r") as original:
        assert_same_layers(written, original)
        for key in ("keras_version", "backend"):
            assert read_str(written.attrs, key) == read_str(original.attrs, key), key
            assert string_kind(written.attrs, key) == string_kind(original.attrs, key), key
        assert "optimizer_weights" not in written
    assert summary["kind"] == TF_CHECKPOINT and summary["output_type"] == "weights"
    assert summary["optimizer_found"] and not summary["optimizer"]
    assert any("a weights-only file has no place for it" in note for note in summary["notes"])


@pytest.mark.parametrize("entry", CHECKPOINTS)
def test_converted_checkpoint_loads_with_its_config_and_predicts_like_the_old_tensorflow(entry, converted):
    out, _ = converted(entry)
    assert_same_predictions(mgpu_io.load_model(beside(entry, "_config.json"), weights=out, compile=False), entry)


@pytest.mark.parametrize("entry", CHECKPOINTS)
def test_inspect_reads_the_converted_checkpoint_as_the_writers_weights_file(entry, converted):
    out, _ = converted(entry)
    got, want = mgpu_io.inspect(out), mgpu_io.inspect(beside(entry, "_weights.h5"))
    assert got.file_type == "weights" and got.is_wrapper
    assert (got.depth, got.replicas, got.template, got.weights) == (want.depth, want.replicas, want.template,
                                                                    want.weights)


def test_the_full_h5_saved_beside_it_serves_as_config_too(tmp_path):
    out = tmp_path / "weights.h5"
    to_legacy_h5(TF2 / "tf21_nested_depth2_ckpt", out, config=TF2 / "tf21_nested_depth2_full.h5")
    with h5py.File(out, "r") as written, h5py.File(TF2 / "tf21_nested_depth2_weights.h5", "r") as original:
        assert_same_layers(written, original)


def test_without_its_config_a_checkpoint_is_refused_with_what_to_pass(tmp_path):
    """The checkpoint records no layer name of the wrapper at all: its layout cannot be rebuilt by a guess."""
    with pytest.raises(InvalidArgument, match=r"^A TF checkpoint records no layer names") as error:
        to_legacy_h5(TF2 / "tf22_functional_bn_x2_ckpt.index", tmp_path / "weights.h5")
    assert "config=" in str(error.value) and not (tmp_path / "weights.h5").exists()


def test_a_config_of_another_model_is_refused(tmp_path):
    with pytest.raises(WeightsMismatch, match=r"^The config does not describe this checkpoint: model 'model' has 5 "):
        to_legacy_h5(TF2 / "tf22_functional_bn_x2_ckpt", tmp_path / "w.h5",
                     config=TF2 / "tf22_sequential_x2_config.json")
    with pytest.raises(InvalidArgument, match=r"^config= must describe the architecture"):
        to_legacy_h5(TF2 / "tf22_functional_bn_x2_ckpt", tmp_path / "w.h5",
                     config=TF2 / "tf22_functional_bn_x2_weights.h5")


# --- 4. What went wrong, said exactly ----------------------------------------------------------------------------


def copy_savedmodel(name, tmp_path):
    folder = tmp_path / name
    shutil.copytree(TF2 / name, folder)
    return folder


def test_a_folder_that_is_not_a_savedmodel(tmp_path):
    (tmp_path / "notes.txt").write_text("not a model")
    with pytest.raises(NotAModelFile, match=r"^The folder is not a SavedModel: it holds no saved_model\.pb\. "):
        to_legacy_h5(tmp_path, tmp_path / "out.h5")


@pytest.mark.parametrize("damage", ["a folder", "a link to nothing"])
def test_a_savedmodel_whose_saved_model_pb_is_not_a_file_is_refused_not_read_as_a_folder_of_files(damage, tmp_path):
    """Found by the fuzzer (issue 21): such a folder was repaired as a folder of legacy files ("0 repaired")."""
    folder = copy_savedmodel("tf22_functional_bn_x2_savedmodel", tmp_path)
    pb = folder / "saved_model.pb"
    pb.unlink()
    pb.mkdir() if damage == "a folder" else pb.symlink_to(tmp_path / "missing.pb")
    assert tf_format(folder) == "savedmodel"
    with pytest.raises(NotAModelFile, match=rf"^The SavedModel folder is damaged: its saved_model\.pb is {damage}\. "):
        mgpu_io.unwrap(folder, tmp_path / "out.h5")
    assert not (tmp_path / "out.h5").exists()


def test_a_truncated_saved_model_pb(tmp_path):
    folder = copy_savedmodel("tf22_functional_bn_x2_savedmodel", tmp_path)
    pb = folder / "saved_model.pb"
    pb.write_bytes(pb.read_bytes()[:100_000])
    with pytest.raises(NotAModelFile, match=r"^The SavedModel's saved_model\.pb is damaged and cannot be parsed "
                                            r"\(truncated\?\)\. Expected a SavedModel protocol buffer"):
        to_legacy_h5(folder, tmp_path / "out.h5")
    assert not (tmp_path / "out.h5").exists()


def test_variables_from_another_save_are_refused(tmp_path):
    folder = copy_savedmodel("tf22_functional_bn_x2_savedmodel", tmp_path)
    shutil.rmtree(folder / "variables")
    shutil.copytree(TF2 / "tf22_nested_depth2_savedmodel" / "variables", folder / "variables")
    with pytest.raises(NotAModelFile, match=r"^The SavedModel's variables do not belong to its saved_model\.pb"):
        to_legacy_h5(folder, tmp_path / "out.h5")


def test_an_index_of_garbage(tmp_path):
    (tmp_path / "w_ckpt.index").write_bytes(bytes(range(256)) * 12)
    with pytest.raises(NotAModelFile, match=r"^The TF checkpoint is damaged and cannot be read\. Expected a "
                                            r"TensorFlow checkpoint"):
        to_legacy_h5(tmp_path / "w_ckpt.index", tmp_path / "out.h5", config=TF2 / "tf22_functional_bn_x2_config.json")


def test_a_checkpoint_whose_data_fails_its_checksum(tmp_path):
    shutil.copy(TF2 / "tf22_functional_bn_x2_ckpt.index", tmp_path / "w_ckpt.index")
    data = bytearray((TF2 / "tf22_functional_bn_x2_ckpt.data-00000-of-00001").read_bytes())
    data[:64] = bytes(b ^ 0xFF for b in data[:64])  # the first weight's bytes
    (tmp_path / "w_ckpt.data-00000-of-00001").write_bytes(bytes(data))
    with pytest.raises(NotAModelFile, match=r"^The TF checkpoint is damaged: the value of 'd1/kernel:0' cannot be "
                                            r"read\..*Checksum does not match"):
        to_legacy_h5(tmp_path / "w_ckpt", tmp_path / "out.h5", config=TF2 / "tf22_functional_bn_x2_config.json")
    assert not (tmp_path / "out.h5").exists()  # nothing half-written


def test_a_checkpoint_without_its_data_files(tmp_path):
    shutil.copy(TF2 / "tf22_functional_bn_x2_ckpt.index", tmp_path / "w_ckpt.index")
    with pytest.raises(NotAModelFile, match=r"^The TF checkpoint is damaged and cannot be read: its object graph "
                                            r"cannot be loaded"):
        to_legacy_h5(tmp_path / "w_ckpt.index", tmp_path / "out.h5", config=TF2 / "tf22_functional_bn_x2_config.json")


def test_inputs_that_are_neither_and_outputs_that_cannot_be(tmp_path):
    with pytest.raises(NotAModelFile, match=r"^The input is neither a SavedModel folder nor a TF checkpoint\."):
        to_legacy_h5(TF2 / "tf22_functional_bn_x2_full.h5", tmp_path / "out.h5")
    with pytest.raises(OutputError, match=r"^The output's folder does not exist\."):
        to_legacy_h5(TF2 / "tf22_functional_bn_x2_savedmodel", tmp_path / "missing" / "out.h5")
    with pytest.raises(OutputError, match=r"^The output is one of the input's own files\."):
        to_legacy_h5(TF2 / "tf22_functional_bn_x2_ckpt", TF2 / "tf22_functional_bn_x2_ckpt.index",
                     config=TF2 / "tf22_functional_bn_x2_config.json")


def test_without_tensorflow_the_user_is_told_what_to_install(monkeypatch, tmp_path):
    monkeypatch.setitem(sys.modules, "tensorflow", None)  # `import tensorflow` now raises ImportError
    with pytest.raises(MissingDependency, match=r"^Reading a SavedModel needs TensorFlow, which is not installed\. "
                                                r"Expected an importable `tensorflow`\. Received: .*Install it: "
                                                r"pip install 'mgpu-io\[tensorflow\]'\.$"):
        to_legacy_h5(TF2 / "tf22_functional_bn_x2_savedmodel", tmp_path / "out.h5")


def test_every_refusal_is_a_typed_error_in_the_keras_idiom(tmp_path):
    (tmp_path / "w.index").write_bytes(b"\x00" * 100)
    for call in [lambda: to_legacy_h5(tmp_path, tmp_path / "a.h5"),
                 lambda: to_legacy_h5(tmp_path / "w.index", tmp_path / "b.h5",
                                      config=TF2 / "tf22_functional_bn_x2_config.json"),
                 lambda: to_legacy_h5(tmp_path / "nothing", tmp_path / "c.h5")]:
        with pytest.raises(MgpuIOError) as error:
            call()
        message = str(error.value)
        assert "Expected" in message and "Received: " in message and "filepath=" in message, message
    assert json.dumps(sorted(p.name for p in tmp_path.iterdir())) == '["w.index"]'  # nothing written


# --- through every entry point: inspect, unwrap (.h5 and .keras), load_model, transfer_weights, the CLI ----------


@pytest.mark.parametrize("entry", SAVEDMODELS)
def test_every_entry_point_takes_a_savedmodel_folder_as_it_is(entry, tmp_path):
    path = fixture_path(entry)
    report = mgpu_io.inspect(path)
    assert (report.file, report.depth, report.template) == (str(path), entry["depth"], entry["template"])
    assert report.findings[-1].kind == "tensorflow-format"
    xs, ys = fixture_batch(entry)
    model = mgpu_io.load_model(path)
    assert_close(predict(model, xs), ys)
    assert int(model.optimizer.iterations) > 0
    out = tmp_path / "model.h5"
    unwrapped = mgpu_io.unwrap(path, out)
    assert unwrapped.source == str(path) and unwrapped.optimizer == "copied aside" and unwrapped.depth == entry["depth"]
    assert "read from a SavedModel" in unwrapped.warnings[0]
    keras = pytest.importorskip("keras")
    assert_close(predict(keras.models.load_model(out), xs), ys)
    assert mgpu_io.unwrap(path, tmp_path / "model.keras").written


@pytest.mark.parametrize("entry", CHECKPOINTS)
def test_a_checkpoint_goes_with_its_architecture_everywhere(entry, tmp_path):
    keras = pytest.importorskip("keras")
    path, config = fixture_path(entry), beside(entry, "_config.json")
    xs, ys = fixture_batch(entry)
    assert_close(predict(mgpu_io.load_model(config, weights=path, compile=False), xs), ys)
    assert mgpu_io.inspect(path, config=config).file_type == "weights"
    weights_out, config_out = tmp_path / "weights.h5", tmp_path / "model.json"
    assert mgpu_io.unwrap(path, weights_out, config=config).file_type == "weights"
    mgpu_io.unwrap(config, config_out)
    model = keras.models.model_from_json(config_out.read_text())
    model.load_weights(weights_out)
    assert_close(predict(model, xs), ys)
    fresh = keras.models.model_from_json(config_out.read_text())
    assert mgpu_io.transfer_weights(path, fresh, config=config).ok
    assert_close(predict(fresh, xs), ys)
    with pytest.raises(InvalidArgument, match=r"^A TF checkpoint holds weights only, no architecture"):
        mgpu_io.load_model(path)


def test_the_cli_reads_a_savedmodel_and_a_checkpoint(tmp_path):
    
    from mgpu_io.cli import app

    saved = TF2 / "tf23_functional_bn_x2_savedmodel"
    result = runner.invoke(app, ["unwrap", str(saved), str(tmp_path / "m.h5"), "--json"])
    assert result.exit_code == 0, result.output
    assert json.loads(result.stdout)["source"] == str(saved)
    checkpoint = TF2 / "tf23_functional_bn_x2_ckpt.index"
    result = runner.invoke(app, ["inspect", str(checkpoint)])  # what the object graph alone says
    assert result.exit_code == 0 and "config-needed: pass --config the JSON saved beside the checkpoint" in result.stdout
    result = runner.invoke(app, ["inspect", str(checkpoint), "--config",
                                      str(TF2 / "tf23_functional_bn_x2_config.json"), "--json"])
    assert result.exit_code == 0 and json.loads(result.stdout)["replicas"] == 2


def assert_close(outputs, expected):
    outputs = outputs if isinstance(outputs, (list, tuple)) else [outputs]
    for got, want in zip(outputs, expected):
        assert np.abs(np.asarray(got).reshape(want.shape) - want).max() <= TOLERANCE
