"""A user with every kind of Keras file in one folder asks the tool what each is, and every command answers.

One door (mgpu_io/format/door.py) decides what an input is, by its content; `inspect`, `unwrap`, `load_model`,
`transfer_weights`, `verify` and the command line all ask it. What an entry point does not handle, it refuses in
one line that names the command or call that does, never with an internal error.
"""

import json
import shutil
import subprocess
import sys
import zipfile

import h5py
import pytest
from helpers import FIXTURES, ROOT, TF2, runner

import mgpu_io
from mgpu_io import InvalidArgument, MgpuIOError, MissingLambda, NotAModelFile
from mgpu_io.cli import app
from mgpu_io.format import door
from mgpu_io.format.door import describe



# --- Keras 3's own files, written by Keras 3 itself and by mgpu-io's own .keras writer --------------------------


@pytest.fixture(scope="module")
def keras3_files(tmp_path_factory):
    """A ``.keras`` of `unwrap`, one holding a Lambda (written with its function), and Keras 3's ``save_weights``."""
    keras = pytest.importorskip("keras")
    folder = tmp_path_factory.mktemp("keras3")
    mgpu_io.unwrap(FIXTURES / "k224_siamese_x2_full.h5", folder / "siamese.keras")
    (folder / "lambdas_here.py").write_text("def double(t):\n    return t * 2\n")
    mgpu_io.unwrap(FIXTURES / "k224_template_lambda_x2_full.h5", folder / "lambda.keras",
                   lambdas={"double": lambda t: t * 2})
    model = mgpu_io.load_model(FIXTURES / "k224_functional_bn_x2_full.h5")
    model.save_weights(folder / "model.weights.h5")
    assert keras.__version__.startswith("3.")
    return folder


def test_every_kind_is_told_by_its_content_not_its_name(tmp_path, keras3_files):
    shutil.copyfile(FIXTURES / "k224_siamese_x2_config.json", tmp_path / "architecture")  # no extension
    shutil.copyfile(FIXTURES / "k224_functional_bn_x2_full.h5", tmp_path / "model.bin")
    shutil.copyfile(keras3_files / "siamese.keras", tmp_path / "model.zip")
    (tmp_path / "notes.txt").write_text("lr 1e-3\n")
    kinds = {
        FIXTURES / "k224_functional_bn_x2_full.h5": "legacy-model",
        FIXTURES / "k224_functional_bn_x2_weights.h5": "legacy-weights",
        FIXTURES / "k224_siamese_x2_config.json": "json-config",
        TF2 / "k224_functional_bn_x2_config.yaml": "yaml-config",
        TF2 / "tf22_functional_bn_x2_savedmodel": "savedmodel",
        TF2 / "tf22_functional_bn_x2_ckpt.index": "tf-checkpoint",
        TF2 / "tf22_functional_bn_x2_ckpt": "tf-checkpoint",
        FIXTURES / "k216_failed_save_stub.h5": "failed-save-stub",
        keras3_files / "siamese.keras": "keras-archive",
        keras3_files / "model.weights.h5": "keras3-weights",
        FIXTURES: "folder",
        tmp_path / "architecture": "json-config",
        tmp_path / "model.bin": "legacy-model",
        tmp_path / "model.zip": "keras-archive",
        tmp_path / "notes.txt": "unknown",
        FIXTURES / "k224_siamese_x2.npz": "unknown",
        tmp_path / "nothing.h5": "missing",
    }
    assert {path: describe(path).kind for path in kinds} == kinds


def test_a_description_says_the_writer_what_the_file_holds_and_what_it_needs(keras3_files):
    model = describe(FIXTURES / "k224_resume_adam_x2_full.h5")
    assert (model.writer, model.holds, model.needs) == (
        "Keras 2.2.4", ("architecture", "weights", "training config", "optimizer state"), ())
    weights = describe(FIXTURES / "k224_functional_bn_x2_weights.h5")
    assert (weights.writer, weights.holds, weights.needs) == ("Keras 2.2.4", ("weights",), ("architecture",))
    archive = describe(keras3_files / "siamese.keras")
    assert archive.writer.startswith("Keras 3.") and archive.holds == ("architecture", "weights")
    assert archive.needs == ("Keras",)
    assert describe(TF2 / "tf22_functional_bn_x2_ckpt").needs == ("architecture", "TensorFlow")
    with pytest.raises(Exception, match="cannot assign|frozen"):
        model.kind = "other"  # one frozen answer


def test_inspect_describes_a_keras_archive_without_importing_keras(keras3_files):
    code = ("import sys, json, mgpu_io; r = mgpu_io.inspect(sys.argv[1]);"
            "print(json.dumps([r.file_type, r.template, r.inputs, r.outputs, r.layer_count, r.weights, "
            "r.has_optimizer_weights, sorted(m for m in sys.modules if m.split('.')[0] in ('keras', 'tensorflow'))]))")
    result = subprocess.run([sys.executable, "-c", code, str(keras3_files / "siamese.keras")], cwd=ROOT,
                            capture_output=True, text=True, timeout=120)
    assert result.returncode == 0, result.stderr
    legacy = mgpu_io.inspect(FIXTURES / "k224_siamese_x2_full.h5")
    with zipfile.ZipFile(keras3_files / "siamese.keras") as archive:  # Keras 3 lists the nested model's layers
        config = json.loads(archive.read("config.json"))["config"]
    outputs = [ref[0] for ref in config["output_layers"]]
    assert json.loads(result.stdout) == ["keras", legacy.template, legacy.inputs, outputs, len(config["layers"]),
                                         legacy.weights, True, []]


def test_inspect_describes_keras3_weights_and_counts_what_it_says(keras3_files):
    report = mgpu_io.inspect(keras3_files / "model.weights.h5")
    legacy = mgpu_io.inspect(FIXTURES / "k224_functional_bn_x2_full.h5")
    assert (report.file_type, report.weights, report.parameters) == ("keras3-weights", legacy.weights,
                                                                    legacy.parameters)
    text = str(report)
    assert "Keras 3 weights file (.weights.h5)" in text and "model.load_weights(path)" in text
    with h5py.File(keras3_files / "model.weights.h5") as h5:  # the parameters are the numbers stored
        sizes = []
        h5["layers"].visititems(lambda name, obj: sizes.append(obj.size) if isinstance(obj, h5py.Dataset) else None)
    assert report.parameters == sum(sizes)


def test_a_keras_archives_lambda_layers_are_listed_by_the_function_they_need(keras3_files):
    result = runner.invoke(app, ["inspect", str(keras3_files / "lambda.keras")])
    assert result.exit_code == 0, result.output
    assert "    double (by name): function 'double'; inputs: d1" in result.stdout


# --- item 5: the words inspect prints --------------------------------------------------------------------------


def test_inspect_shows_the_path_once_and_counts_that_say_what_they_count():
    path = FIXTURES / "k224_functional_bn_x2_full.h5"
    result = runner.invoke(app, ["inspect", str(path)])
    assert result.stdout.count(str(path)) == 1
    lines = result.stdout.splitlines()
    assert lines[2] == ("  └── model_1: keras.utils.multi_gpu_model, 2 replicas; outputs concatenated along the batch "
                        "axis by out_a, out_b")
    assert lines[3] == "      └── template: template; inputs: inp; outputs: out_a, out_b"
    with h5py.File(FIXTURES / "k224_functional_bn_x2_full.h5") as h5:  # counted here from the file itself
        sizes = []
        h5["model_weights/template"].visititems(
            lambda name, obj: sizes.append(obj.size) if isinstance(obj, h5py.Dataset) else None)
        template = next(layer for layer in json.loads(h5.attrs["model_config"])["config"]["layers"]
                        if layer["name"] == "template")
    layers = len(template["config"]["layers"])
    assert lines[4] == (f"  {layers} layers, {len(sizes)} weight tensors, {sum(sizes)} parameters; optimizer state: "
                        f"yes")
    assert (layers, len(sizes), sum(sizes)) == (6, 10, 124)


def test_a_weights_only_file_counts_the_layers_that_hold_weights():
    report = mgpu_io.inspect(FIXTURES / "k224_functional_bn_x2_weights.h5")
    assert report.counts() == "4 layers with weights, 10 weight tensors, 124 parameters"  # as the full model's


# --- item 1: entry points refuse what they do not handle, naming what does -------------------------------------


def test_unwrap_refuses_keras3_files_naming_the_call_that_loads_them(keras3_files, tmp_path):
    with pytest.raises(InvalidArgument) as archive:
        mgpu_io.unwrap(keras3_files / "siamese.keras", tmp_path / "x.h5")
    assert str(archive.value).startswith("unwrap does not read a Keras 3 .keras archive. Expected a file written by "
                                         "a legacy Keras or tf.keras.")
    assert "mgpu_io.load_model(path) or keras.models.load_model(path)" in str(archive.value)
    result = runner.invoke(app, ["unwrap", str(keras3_files / "model.weights.h5"), str(tmp_path / "x.h5")])
    assert result.exit_code == 1 and "model.load_weights(path)" in result.stderr
    assert not (tmp_path / "x.h5").exists()


def test_load_model_and_transfer_weights_refuse_what_they_do_not_read(keras3_files):
    with pytest.raises(InvalidArgument, match=r"load_model does not read a Keras 3 \.weights\.h5 file.*"
                                              r"model\.load_weights\(path\)"):
        mgpu_io.load_model(keras3_files / "model.weights.h5")
    with pytest.raises(InvalidArgument, match=r"load_model does not read a folder of files.*mgpu-io unwrap DIR OUT"):
        mgpu_io.load_model(FIXTURES)
    model = mgpu_io.load_model(FIXTURES / "k224_functional_bn_x2_full.h5", compile=False)
    with pytest.raises(InvalidArgument, match=r"transfer_weights does not read a Keras 3 \.keras archive"):
        mgpu_io.transfer_weights(keras3_files / "siamese.keras", model)


def test_inspect_of_a_folder_names_the_commands_that_take_one():
    result = runner.invoke(app, ["inspect", str(FIXTURES)])
    assert result.exit_code == 1
    assert "Inspect its files one by one (`mgpu-io inspect DIR/*`)" in result.stderr
    assert "`mgpu-io unwrap DIR OUT --dry-run`" in result.stderr


# --- item 2: the output's name is its format -------------------------------------------------------------------


@pytest.mark.parametrize("source, output, expected", [
    ("k224_functional_bn_x2_full.h5", "clean.json",
     "A .json output holds a model config only, and the input's weights would be lost. Expected an output ending in "
     ".h5, .hdf5 or .keras for a legacy Keras full-model HDF5 file."),
    ("k224_functional_bn_x2_full.h5", "clean",
     "The output's name says no format (no extension). Expected an output ending in .h5, .hdf5 or .keras"),
    ("k224_functional_bn_x2_full.h5", "clean.pt", "The output's name says no format (.pt)."),
    ("k224_functional_bn_x2_weights.h5", "clean.json", "A .json output holds a model config only"),
    ("k224_functional_bn_x2_weights.h5", "clean.keras",
     "A .keras file holds a whole model, and a weights-only file holds no architecture. Expected an output ending in "
     ".h5 or .hdf5 (or .keras with config=, the architecture saved beside the weights)"),
    ("k224_siamese_x2_config.json", "clean.h5", "A .h5 output of a config would hold no weights. Expected an output "
                                                "ending in .json for a JSON model config."),
    ("k224_siamese_x2_config.json", "clean.keras", "A .keras file holds a whole model, and a config holds no weights"),
])
def test_an_output_named_for_no_format_or_the_wrong_one_is_refused_before_anything_is_written(
        tmp_path, source, output, expected):
    with pytest.raises(InvalidArgument) as refused:
        mgpu_io.unwrap(FIXTURES / source, tmp_path / output)
    assert str(refused.value).startswith(expected), str(refused.value)
    assert list(tmp_path.iterdir()) == []


def test_each_output_name_gets_its_writer(tmp_path):
    mgpu_io.unwrap(FIXTURES / "k224_functional_bn_x2_full.h5", tmp_path / "clean.hdf5")
    mgpu_io.unwrap(FIXTURES / "k224_siamese_x2_config.json", tmp_path / "clean.json")
    assert h5py.is_hdf5(tmp_path / "clean.hdf5")
    assert json.loads((tmp_path / "clean.json").read_text())["class_name"] in ("Model", "Functional")


def test_weights_only_to_keras_without_config_is_one_line_not_a_type_error(tmp_path):
    """The crash of issue 27: "internal error (TypeError: 'NoneType' object is not subscriptable)"."""
    result = runner.invoke(app, ["unwrap", str(FIXTURES / "k224_functional_bn_x2_weights.h5"),
                                 str(tmp_path / "out.keras")])
    assert result.exit_code == 1 and result.stdout == ""
    assert result.stderr.count("\n") == 1 and "internal error" not in result.stderr
    assert "Pass --config (the JSON saved beside the weights)" in result.stderr


# --- item 3: success means a usable file; options that cannot apply are refused ---------------------------------


def test_cudnn_weights_without_their_architecture_are_refused_with_the_fix(tmp_path):
    result = runner.invoke(app, ["unwrap", str(FIXTURES / "k224_cudnn_x2_weights.h5"), str(tmp_path / "out.h5")])
    assert result.exit_code == 1 and not (tmp_path / "out.h5").exists()
    assert result.stderr.startswith("Error: Layers ['bilstm', 'gru'] hold CuDNN-layout weights, which no loader of "
                                    "LSTM/GRU accepts")
    assert "Pass --config (the JSON saved beside these weights), or load them with mgpu_io.transfer_weights" in (
        result.stderr)
    kept = mgpu_io.unwrap(FIXTURES / "k224_cudnn_x2_weights.h5", tmp_path / "old-keras.h5", keep_config=True)
    assert kept.written  # for the old Keras, which loads CuDNN layers, the weights are copied as they are


def test_a_folder_without_keras_files_is_an_error(tmp_path):
    (tmp_path / "in").mkdir()
    (tmp_path / "in" / "history.json").write_text('{"loss": [0.9]}')
    (tmp_path / "in" / "notes.txt").write_text("lr 1e-3")
    result = runner.invoke(app, ["unwrap", str(tmp_path / "in"), str(tmp_path / "out")])
    assert result.exit_code == 1
    assert result.stderr.startswith("Error: The folder holds no Keras file. Expected legacy Keras HDF5 files or "
                                    "JSON model configs under it.")
    assert "(2 files, none of them HDF5 or a model config)" in result.stderr
    with pytest.raises(NotAModelFile):
        mgpu_io.unwrap(tmp_path / "in", tmp_path / "out")


def test_files_of_a_folder_are_found_by_content_whatever_their_names(tmp_path, keras3_files):
    (tmp_path / "in").mkdir()
    shutil.copyfile(FIXTURES / "k224_functional_bn_x2_full.h5", tmp_path / "in" / "epoch-01")  # no extension
    shutil.copyfile(keras3_files / "model.weights.h5", tmp_path / "in" / "new.weights.h5")
    report = mgpu_io.unwrap(tmp_path / "in", tmp_path / "out")
    assert {f.path: f.status for f in report.files} == {"epoch-01": "repaired", "new.weights.h5": "skipped"}
    assert report.files[1].reason == "a Keras 3 weights file: nothing to repair"


def test_jobs_on_a_single_file_is_refused_never_ignored(tmp_path):
    result = runner.invoke(app, ["unwrap", str(FIXTURES / "k224_functional_bn_x2_full.h5"), str(tmp_path / "o.h5"),
                                 "--jobs", "4"])
    assert result.exit_code == 1 and not (tmp_path / "o.h5").exists()
    assert "Received: --jobs 4 with filepath=" in result.stderr and "Leave out --jobs." in result.stderr


@pytest.mark.parametrize("flag", ["-q", "--quiet"])
def test_global_options_work_after_the_command_too(tmp_path, flag):
    after = runner.invoke(app, ["unwrap", str(FIXTURES / "k224_functional_bn_x2_full.h5"), str(tmp_path / "o.h5"),
                                flag])
    assert after.exit_code == 0, after.output
    assert after.stdout == "" and (tmp_path / "o.h5").is_file()
    inspected = runner.invoke(app, ["inspect", flag, str(FIXTURES / "k224_functional_bn_x2_full.h5")])
    assert inspected.exit_code == 0 and inspected.stdout == ""


def test_global_options_after_a_double_dash_are_arguments():
    from mgpu_io.cli.app import globals_first

    assert globals_first(["--verbose", "inspect", "a.h5", "--quiet", "--", "-q"]) == [
        "--verbose", "--quiet", "inspect", "a.h5", "--", "-q"]


# --- item 3/5: a .keras file holding a Lambda, loaded without its function --------------------------------------


def test_a_keras_archives_lambda_without_lambdas_is_one_line_naming_the_parameter(keras3_files):
    """The crash of issue 27: verify/load_model ended in Keras' TypeError ("could not be deserialized properly")."""
    with pytest.raises(MissingLambda) as missing:
        mgpu_io.load_model(keras3_files / "lambda.keras")
    assert "Received: no function for double" in str(missing.value) and "Pass them: lambdas={'double': fn}." in str(
        missing.value)
    result = runner.invoke(app, ["verify", str(keras3_files / "lambda.keras"), str(keras3_files / "lambda.keras")])
    assert result.exit_code == 1 and "internal error" not in result.stderr
    assert result.stderr.count("\n") == 1 and "--lambda double=MODULE:FUNCTION" in result.stderr
    model = mgpu_io.load_model(keras3_files / "lambda.keras", lambdas={"double": lambda t: t * 2})
    assert [layer.name for layer in model.layers if type(layer).__name__ == "Lambda"] == ["double"]


# --- the walk: every fixture kind through every entry point -----------------------------------------------------


WALKED = sorted(p for p in FIXTURES.iterdir()) + [
    TF2 / "tf22_functional_bn_x2_savedmodel", TF2 / "tf22_functional_bn_x2_ckpt.index",
    TF2 / "k224_functional_bn_x2_config.yaml", FIXTURES,
]


def _one_line_or_success(call):
    """Run ``call``; an error must be one of ours, one line, and no internal error."""
    try:
        call()
    except MgpuIOError as error:
        message = str(error)
        assert "\n" not in message and message.endswith((".", ")")), message
        return type(error).__name__
    return "ok"


NAMES_A_WAY = ("mgpu_io.", "mgpu-io ", "load_model(", "keras.", "model.load_weights", "config=", "weights=",
               "allow_plain=True", "lambdas=", "Check the path", "restore it from its source", "Restore it",
               "Copy the file again", "save_weights", "Pass the architecture")


@pytest.mark.parametrize("path", WALKED, ids=lambda p: p.name)
def test_every_fixture_goes_through_inspect_and_unwrap_to_success_or_one_line(path, tmp_path):
    outcomes = {}
    outcomes["inspect"] = _one_line_or_success(lambda: mgpu_io.inspect(path))
    kind = describe(path).kind
    output = tmp_path / ("out" if kind == "folder" else "out.json" if kind.endswith("config") else "out.h5")
    outcomes["unwrap"] = _one_line_or_success(lambda: mgpu_io.unwrap(path, output, allow_plain=True))
    if kind in ("legacy-model", "savedmodel", "json-config", "yaml-config", "legacy-weights"):
        assert outcomes["inspect"] == "ok", path
    for cli in (["inspect", str(path)], ["unwrap", str(path), str(tmp_path / ("cli-" + output.name))]):
        result = runner.invoke(app, cli)
        assert "internal error" not in result.output and "Traceback" not in result.output, result.output
        if result.exit_code and kind == "folder" and cli[0] == "unwrap":  # a table of files, failures with reasons
            assert "failed" in result.stdout and "internal error" not in result.stdout
        elif result.exit_code:
            error_lines = [line for line in result.stderr.splitlines() if line.startswith("Error:")]
            assert error_lines and any(way in result.stderr for way in NAMES_A_WAY), result.stderr


@pytest.mark.parametrize("path", WALKED, ids=lambda p: p.name)
def test_every_fixture_goes_through_load_model_to_success_or_one_line(path):
    pytest.importorskip("keras")
    outcome = _one_line_or_success(lambda: mgpu_io.load_model(path, compile=False))
    assert outcome in ("ok", "InvalidArgument", "MissingLambda", "NotAModelFile", "FailedSaveStub"), outcome


def test_every_kind_goes_through_verify_to_success_or_one_line(keras3_files):
    pytest.importorskip("keras")
    one_per_kind = {}
    for path in [*WALKED, keras3_files / "siamese.keras", keras3_files / "model.weights.h5"]:
        one_per_kind.setdefault(describe(path).kind, path)
    assert set(one_per_kind) == set(door.KIND_NAMES) - {"missing"}
    for kind, path in one_per_kind.items():
        outcome = _one_line_or_success(lambda path=path: mgpu_io.verify(path, path))
        if kind in ("legacy-model", "keras-archive", "savedmodel"):
            assert outcome == "ok", (kind, path, outcome)


@pytest.mark.parametrize("source, options, flag, message", [
    ("k224_functional_bn_x2_weights.h5", dict(include_optimizer=False), "--no-optimizer",
     "include_optimizer=False leaves out a full model's optimizer state. Expected a full-model source"),
    ("k224_siamese_x2_config.json", dict(include_optimizer=False), "--no-optimizer",
     "include_optimizer=False leaves out a full model's optimizer state."),
    ("k224_functional_bn_x2_full.h5", dict(cpu=True), "--cpu",
     "cpu=True converts CuDNN layers in a file kept for the old Keras. Expected keep_config=True with cpu=True."),
])
def test_an_option_that_cannot_apply_to_the_input_is_refused_never_ignored(tmp_path, source, options, flag, message):
    output = tmp_path / ("o.json" if source.endswith(".json") else "o.h5")
    with pytest.raises(InvalidArgument) as refused:
        mgpu_io.unwrap(FIXTURES / source, output, **options)
    assert str(refused.value).startswith(message)
    result = runner.invoke(app, ["unwrap", str(FIXTURES / source), str(output), flag])
    assert result.exit_code == 1 and flag in result.stderr and not output.exists()


def test_keras3_files_of_the_projects_own_writers_go_through_every_entry_point(keras3_files, tmp_path):
    """The .keras of `unwrap` and Keras 3's save_weights file: described, refused with the way, or loaded."""
    for path in (keras3_files / "siamese.keras", keras3_files / "lambda.keras", keras3_files / "model.weights.h5"):
        assert _one_line_or_success(lambda path=path: mgpu_io.inspect(path)) == "ok", path
        assert _one_line_or_success(lambda path=path: mgpu_io.unwrap(path, tmp_path / "o.h5")) == "InvalidArgument"
        loaded = _one_line_or_success(lambda path=path: mgpu_io.load_model(path, compile=False))
        assert loaded == {"siamese.keras": "ok", "lambda.keras": "MissingLambda",
                          "model.weights.h5": "InvalidArgument"}[path.name]
        for cli in (["inspect", str(path)], ["unwrap", str(path), str(tmp_path / "o.h5")], ["verify", str(path),
                                                                                           str(path)]):
            result = runner.invoke(app, cli)
            assert "internal error" not in result.output and "Traceback" not in result.output, result.output


def test_an_architecture_file_without_extension_is_read_as_the_json_it_is(tmp_path):
    shutil.copyfile(FIXTURES / "k224_siamese_x2_config.json", tmp_path / "architecture")
    assert mgpu_io.inspect(tmp_path / "architecture").template == mgpu_io.inspect(
        FIXTURES / "k224_siamese_x2_config.json").template
    assert mgpu_io.unwrap(tmp_path / "architecture", tmp_path / "clean.json").written


def test_the_version_flag_works_after_the_command_too():
    assert runner.invoke(app, ["inspect", "--version"]).stdout == f"mgpu-io {mgpu_io.__version__}\n"
