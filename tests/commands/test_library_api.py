"""A Python user does everything the command line does, with one call each, and gets typed errors in parameter
names: unwrap to .keras, folder repair (dry run and every option), transfer-and-save, diagrams, option checks."""

import shutil
import zipfile

import h5py
import pytest
from helpers import FIXTURES, runner

import mgpu_io
from mgpu_io import InvalidArgument, MgpuIOError, NotAModelFile, NotAWrapper, OutputError
from mgpu_io.cli import app

WRAPPER = FIXTURES / "k224_functional_bn_x2_full.h5"


def tree(folder):
    return sorted(str(p.relative_to(folder)) for p in folder.rglob("*")) if folder.exists() else []


@pytest.fixture
def folder(tmp_path):
    source = tmp_path / "in"
    source.mkdir()
    shutil.copyfile(WRAPPER, source / "epoch-01.h5")
    shutil.copyfile(FIXTURES / "k224_conv1d_bilstm_x2_weights.h5", source / "weights-01.h5")
    shutil.copyfile(FIXTURES / "k224_cudnn_x2_full.h5", source / "cudnn.h5")
    clean = tmp_path / "clean.h5"
    mgpu_io.unwrap(FIXTURES / "k224_sequential_x3_full.h5", clean)
    shutil.copyfile(clean, source / "plain.h5")
    return source


# --- unwrap into .keras ---------------------------------------------------------------------------------------


def test_unwrap_to_a_keras_name_writes_keras3_native_format(tmp_path):
    pytest.importorskip("keras")
    report = mgpu_io.unwrap(WRAPPER, tmp_path / "model.keras")
    assert report.written and zipfile.is_zipfile(tmp_path / "model.keras")
    assert (report.template, report.optimizer) == ("template", "copied")


@pytest.mark.parametrize("options, message", [
    (dict(target="tf_keras"), "A .keras file is for Keras 3 only. Expected target='keras3' with a .keras output. "
                              "Received: target='tf_keras'."),
    (dict(keep_config=True), "keep_config=True keeps the writer's config for the old Keras"),
    (dict(cpu=True, keep_config=False), "cpu=True keeps the writer's config for the old Keras"),
])
def test_options_that_do_not_apply_to_a_keras_output_are_refused_not_ignored(tmp_path, options, message):
    with pytest.raises(InvalidArgument, match=message.replace(".", r"\.").replace("(", r"\(").replace(")", r"\)")):
        mgpu_io.unwrap(WRAPPER, tmp_path / "model.keras", **options)
    assert tree(tmp_path) == []


def test_the_cli_says_the_same_in_flags(tmp_path):
    result = runner.invoke(app, ["unwrap", str(WRAPPER), str(tmp_path / "m.keras"), "--target", "tf_keras"])
    assert result.exit_code == 1
    assert result.stderr.strip() == (
        "Error: A .keras file is for Keras 3 only. Expected --target keras3 with a .keras output. Received: "
        "--target tf_keras. Write a .h5 file for tf_keras, or pass --target keras3.")


def test_a_plain_model_needs_allow_plain_for_keras_output_as_for_h5(tmp_path, folder):
    with pytest.raises(NotAWrapper, match="pass allow_plain=True"):
        mgpu_io.unwrap(folder / "plain.h5", tmp_path / "plain.keras")
    pytest.importorskip("keras")
    assert mgpu_io.unwrap(folder / "plain.h5", tmp_path / "plain.keras", allow_plain=True).written


def test_no_optimizer_is_honoured_for_keras_output(tmp_path):
    keras = pytest.importorskip("keras")
    mgpu_io.unwrap(WRAPPER, tmp_path / "with.keras")
    report = mgpu_io.unwrap(WRAPPER, tmp_path / "without.keras", include_optimizer=False)
    assert report.optimizer == "dropped"
    with_state = keras.models.load_model(tmp_path / "with.keras")
    without = keras.models.load_model(tmp_path / "without.keras")
    assert int(with_state.optimizer.iterations.numpy()) > 0
    assert int(without.optimizer.iterations.numpy()) == 0


def test_a_keras_dry_run_plans_without_keras_and_writes_nothing(tmp_path):
    report = mgpu_io.unwrap(WRAPPER, tmp_path / "model.keras", dry_run=True)
    assert not report.written and report.output == str(tmp_path / "model.keras") and tree(tmp_path) == []


# --- folders ------------------------------------------------------------------------------------------------


def test_a_folder_dry_run_writes_nothing(tmp_path, folder):
    report = mgpu_io.unwrap(folder, tmp_path / "out", dry_run=True)
    assert report.dry_run and report.counts()["repaired"] == 3
    assert not (tmp_path / "out").exists()
    result = runner.invoke(app, ["unwrap", str(folder), str(tmp_path / "out"), "--dry-run"])
    assert result.exit_code == 0 and not (tmp_path / "out").exists()
    assert "Would write: 3 repaired" in result.stdout


def test_a_folder_skips_plain_models_unless_allowed(tmp_path, folder):
    skipped = mgpu_io.unwrap(folder, tmp_path / "a")
    assert {f.path: f.status for f in skipped.files}["plain.h5"] == "skipped" and skipped.ok
    assert "plain.h5" not in tree(tmp_path / "a")
    allowed = mgpu_io.unwrap(folder, tmp_path / "b", allow_plain=True)
    assert {f.path: f.status for f in allowed.files}["plain.h5"] == "already clean"


def datasets(path):
    with h5py.File(path, "r") as h5:
        found = {}
        h5.visititems(lambda name, item: found.update({name: item[()].tobytes()}) if isinstance(item, h5py.Dataset)
                      else None)
    return found


def test_a_folder_passes_config_to_its_weights_only_files(tmp_path, folder):
    config = FIXTURES / "k224_conv1d_bilstm_x2_config.json"
    report = mgpu_io.unwrap(folder, tmp_path / "out", config=config)
    assert report.ok, [f.reason for f in report.files]
    mgpu_io.unwrap(folder / "weights-01.h5", tmp_path / "with.h5", config=config)
    mgpu_io.unwrap(folder / "weights-01.h5", tmp_path / "without.h5")
    repaired = datasets(tmp_path / "out" / "weights-01.h5")
    assert repaired == datasets(tmp_path / "with.h5")  # laid out and converted by the config's graph
    assert repaired != datasets(tmp_path / "without.h5")  # (its LSTM's hard_sigmoid gates are rescaled)


def test_a_folder_passes_cpu_and_keep_config_to_every_file(tmp_path, folder):
    report = mgpu_io.unwrap(folder, tmp_path / "out", keep_config=True, cpu=True)
    assert report.ok, [f.reason for f in report.files]
    findings = [f.kind for f in mgpu_io.inspect(tmp_path / "out" / "cudnn.h5").findings]
    assert "cudnn-layers" not in findings and "cudnn-layers" in [f.kind for f in mgpu_io.inspect(
        folder / "cudnn.h5").findings]
    assert mgpu_io.unwrap(folder / "epoch-01.h5", tmp_path / "x.h5", keep_config=True).config == "verbatim"


# --- transfer, inspect --------------------------------------------------------------------------------------


def test_transfer_builds_loads_and_saves_in_one_call(tmp_path):
    keras = pytest.importorskip("keras")

    def build():
        inp = keras.Input((4,))
        return keras.Model(inp, keras.layers.Dense(3)(keras.layers.Activation("tanh")(keras.layers.Dense(8)(inp))))

    result = mgpu_io.transfer(FIXTURES / "k216_kuza55_x2_weights.h5", tmp_path / "m.keras", build)
    assert result.ok and result.written and result.report.loaded == 2
    with pytest.raises(OutputError, match="Pass overwrite=True"):
        mgpu_io.transfer(FIXTURES / "k216_kuza55_x2_weights.h5", tmp_path / "m.keras", build)


def test_a_diagram_never_replaces_an_input_or_an_existing_file(tmp_path):
    source = tmp_path / "m.h5"
    shutil.copyfile(WRAPPER, source)
    before = source.read_bytes()
    with pytest.raises(OutputError, match="The output is an input file"):
        mgpu_io.inspect(source, diagram=source)
    assert source.read_bytes() == before
    (tmp_path / "d.svg").write_text("mine")
    with pytest.raises(OutputError, match="Pass overwrite=True"):
        mgpu_io.inspect(source, diagram=tmp_path / "d.svg")
    assert (tmp_path / "d.svg").read_text() == "mine"
    mgpu_io.inspect(source, diagram=tmp_path / "d.svg", overwrite=True)
    assert (tmp_path / "d.svg").read_text().startswith("<svg")
    result = runner.invoke(app, ["inspect", str(source), "--diagram", str(tmp_path / "d.svg")])
    assert result.exit_code == 1 and "Pass --force to replace it." in result.stderr


def test_a_diagram_of_a_weights_only_file_is_a_typed_error():
    with pytest.raises(InvalidArgument, match="A diagram needs a graph"):
        mgpu_io.inspect(FIXTURES / "k224_siamese_x2_weights.h5", diagram="unused.svg")


def test_damaged_attributes_are_typed_errors(tmp_path):
    path = tmp_path / "bad.h5"
    shutil.copyfile(WRAPPER, path)
    with h5py.File(path, "r+") as h5:
        h5.attrs["keras_version"] = [b"2.2.4", b"2.2.5"]
    with pytest.raises(NotAModelFile, match="The attribute 'keras_version' is damaged"):
        mgpu_io.inspect(path)
    assert issubclass(NotAModelFile, MgpuIOError)


def test_every_report_prints_readably_not_as_a_dataclass(tmp_path):
    source = FIXTURES / "k224_nested_depth3_full.h5"
    inspected = str(mgpu_io.inspect(source))
    assert inspected.splitlines()[:2] == [f"{source}: full model file",
                                          "  multi-GPU wrapper, 3 levels; written by Keras 2.2.4 (tensorflow)"]
    unwrapped = str(mgpu_io.unwrap(source, tmp_path / "out.h5"))
    assert unwrapped.splitlines()[:2] == [f"Wrote {tmp_path / 'out.h5'}: template 'template', 10 weight tensors in 4 layers",
                                          "  removed 3 wrapper levels (2 replicas innermost); outputs: out_a, out_b"]
    folder = tmp_path / "in"
    folder.mkdir()
    shutil.copy(source, folder / "a.h5")
    batch = str(mgpu_io.unwrap(folder, tmp_path / "repaired", jobs=1))
    assert batch.splitlines()[1:] == ["  file  status    detail", "  a.h5  repaired  3 wrapper levels removed",
                                      "1 repaired, 0 failed"]
    for text in (inspected, unwrapped, batch):
        assert "Report(" not in text
