"""A user takes a rescued legacy model to where it runs next: an ONNX file for ONNX Runtime, a .tflite for a phone
(LiteRT), a SavedModel folder for TF Serving. Each artifact is written by Keras 3's own exporter, run by its own
runtime on the rescued model's inputs and compared before it is moved into place; here every one is also run on the
fixture's stored inputs and compared with what the OLD writer predicted (fixtures written by the real writers).
"""

import json
import os
import subprocess
import sys

import numpy as np
import pytest
from helpers import FIXTURES, ROOT, assert_predictions_match, fixture_batch, runner
from tiers import FULL_MATRIX, diagonal_sample

import mgpu_io
from mgpu_io.errors import InvalidArgument, MissingDependency, UnsupportedModel

keras = pytest.importorskip("keras")
pytest.importorskip("onnxruntime")
pytest.importorskip("tf2onnx")
if keras.backend.backend() != "tensorflow":
    pytest.skip("the deployable formats are measured here on the TensorFlow backend", allow_module_level=True)

from mgpu_io.keras.exports import model_input_names, run_artifact  # noqa: E402

TFOPS = FIXTURES.parent / "tfops"
OUTPUTS = {"onnx": "model.onnx", "litert": "model.tflite", "saved_model": "serving"}


def entry(name, folder=FIXTURES):
    manifest = json.loads((folder / "manifest.json").read_text())
    return next(e for e in manifest if e["file"] == name)


def write(source, tmp_path, name, **options):
    out = tmp_path / OUTPUTS[name]
    report = mgpu_io.unwrap(source, out, format=name if name == "saved_model" else None, **options)
    return out, report


def batch(fixture, folder=FIXTURES):
    if folder == FIXTURES:
        return fixture_batch(fixture)
    data = np.load(folder / fixture["data"])
    numbered = lambda prefix: [data[k] for k in sorted((k for k in data.files if k.startswith(prefix)),  # noqa: E731
                                                       key=lambda k: int(k[1:]))]
    return numbered("x"), numbered("y")


def run_on_fixture(out, fixture, names, folder=FIXTURES):
    xs, ys = batch(fixture, folder)
    return run_artifact(out, xs, names), ys


CASES = [
    ("k224_functional_bn_x2_full.h5", FIXTURES),  # BatchNormalization, two outputs
    ("k224_multi_io_x4_full.h5", FIXTURES),  # two inputs, two outputs, four replicas
    ("k224_nested_depth3_full.h5", FIXTURES),  # three wrapper levels
    ("tfk115_functional_bn_x2_full.h5", FIXTURES),  # tf.keras 1.15
    ("tf23_arithmetic_x2_full.h5", TFOPS),  # mgpu-io's TFOp layer: TensorFlow ops of tf.keras 2.3, in a wrapper
    ("tf23_images_full.h5", TFOPS),  # image ops (a plain model, written converted)
    ("tfkeras_op_lambdas_full.h5", TFOPS),  # TFOpLambda of tf_keras
]


FORMATS = ["onnx", "litert", "saved_model"]
#: make test exports each case in one format, the formats in turn; make test-all every pair (tests/support/tiers.py)
SAMPLE = diagonal_sample([c[0] for c in CASES], FORMATS)


@pytest.mark.parametrize("case, name", [
    pytest.param(case, name, id=f"{case[0]}-{name}",
                 marks=[] if (case[0], name) in SAMPLE else [getattr(pytest.mark, FULL_MATRIX)])
    for name in FORMATS for case in CASES])
def test_the_artifact_run_by_its_own_runtime_predicts_what_the_old_writer_predicted(tmp_path, case, name):
    file, folder = case
    fixture = entry(file, folder)
    xs, _ = batch(fixture, folder)
    out, report = write(folder / file, tmp_path, name, inputs=xs, allow_plain=True)
    assert report.written and report.export["format"] == name and report.export["inputs"] == "given"
    assert report.export["difference"] <= report.export["bound"]
    model = mgpu_io.load_model(folder / file, compile=False)
    got, ys = run_on_fixture(out, fixture, model_input_names(model), folder)
    assert_predictions_match(got, ys)
    assert sorted(p.name for p in tmp_path.iterdir()) == [out.name]  # nothing left beside it


@pytest.mark.parametrize("name", ["onnx", "saved_model"])
def test_converted_cudnn_layers_and_keras2s_exact_hard_sigmoid_export(tmp_path, name):
    """CuDNNLSTM/CuDNNGRU become LSTM/GRU with Keras 2's gates made exact (rescaled weights)."""
    fixture = entry("k224_cudnn_x2_full.h5")
    out, report = write(FIXTURES / fixture["file"], tmp_path, name)
    model = mgpu_io.load_model(FIXTURES / fixture["file"], compile=False)
    got, ys = run_on_fixture(out, fixture, model_input_names(model))
    assert_predictions_match(got, ys)


@pytest.mark.parametrize("name", ["onnx", "litert", "saved_model"])
def test_keras2s_hard_sigmoid_function_layer_exports(tmp_path, name):
    """A Keras 1.2.2 Activation('hard_sigmoid'): written for Keras 3 as mgpu-io's exact Keras 2 function."""
    source = FIXTURES.parent / "layers" / "k122" / "Activation.h5"
    assert "hard-sigmoid-keras2-function" in mgpu_io.unwrap(source, tmp_path / "x.h5", dry_run=True,
                                                            allow_plain=True).config_changes
    data = np.load(source.with_name("data.npz"))
    xs = [data["Activation/x0"]]
    ys = [data[f"Activation/y{i}"] for i in range(sum(k.startswith("Activation/y") for k in data.files))]
    out, _ = write(source, tmp_path, name, allow_plain=True, inputs=xs)
    model = mgpu_io.load_model(source, compile=False)
    assert_predictions_match(run_artifact(out, xs, model_input_names(model)), ys)


@pytest.mark.parametrize("name", ["onnx", "litert", "saved_model"])
def test_a_lambda_written_by_reference_exports_with_the_users_function(tmp_path, name):
    fixture = entry("k224_template_lambda_x2_full.h5")
    double = lambda t: t * 2.0  # noqa: E731 - the user's own function, as the old code defined it
    out, _ = write(FIXTURES / fixture["file"], tmp_path, name, lambdas={"double": double})
    model = mgpu_io.load_model(FIXTURES / fixture["file"], compile=False, lambdas={"double": double})
    got, ys = run_on_fixture(out, fixture, model_input_names(model))
    assert_predictions_match(got, ys)


def test_recurrent_layers_that_litert_runs_only_with_flex_are_refused_by_name_and_nothing_is_left(tmp_path):
    with pytest.raises(UnsupportedModel) as refused:
        write(FIXTURES / "k224_cudnn_x2_full.h5", tmp_path, "litert")
    message = str(refused.value)
    assert message.startswith("The model cannot be written as litert: LiteRT interpreter cannot run it.")
    assert "LSTM 'forward_cu_dnnlstm_1'" in message and "GRU 'gru'" in message
    assert message.endswith("Write .onnx or a SavedModel folder for this model, or link the Flex delegate in your app.")
    assert list(tmp_path.iterdir()) == []


def test_the_savedmodel_folder_serves_its_default_signature(tmp_path):
    import tensorflow as tf

    out, _ = write(FIXTURES / "k224_multi_io_x4_full.h5", tmp_path, "saved_model")
    loaded = tf.saved_model.load(str(out))
    assert "serving_default" in loaded.signatures
    assert sorted(loaded.signatures["serving_default"].structured_input_signature[1]) == ["in_a", "in_b"]


def test_an_output_exists_without_overwrite_and_is_kept(tmp_path):
    out = tmp_path / "model.onnx"
    out.write_bytes(b"mine")
    with pytest.raises(mgpu_io.OutputError, match="exists"):
        mgpu_io.unwrap(FIXTURES / "k224_siamese_x2_full.h5", out)
    assert out.read_bytes() == b"mine"
    mgpu_io.unwrap(FIXTURES / "k224_siamese_x2_full.h5", out, overwrite=True)
    assert out.stat().st_size > 100


@pytest.mark.parametrize("name", ["onnx", "saved_model"])
def test_the_input_is_opened_once_for_an_artifact(tmp_path, monkeypatch, name):
    """Read in the door's child, planned there and handed back as data: the parent builds it without opening it
    again (in this process here, MGPU_IO_PROBE=0, where each open can be counted; a forked child opens as often)."""
    import h5py

    source, real, opens = FIXTURES / "k224_functional_bn_x2_full.h5", h5py.File.__init__, []

    def counting(self, path, *args, **kwargs):
        if isinstance(path, (str, os.PathLike)) and os.path.realpath(path) == os.path.realpath(source):
            opens.append(path)
        real(self, path, *args, **kwargs)

    monkeypatch.setenv("MGPU_IO_PROBE", "0")
    monkeypatch.setattr(h5py.File, "__init__", counting)
    _, report = write(source, tmp_path, name)
    assert report.written and report.export["difference"] <= report.export["bound"]
    assert len(opens) == 1


@pytest.mark.parametrize("output, format, expected", [
    ("model.onnx", "saved_model", "The output's name and format= disagree"),
    ("model.pb", "tensorrt", "Unknown output format. Expected one of ['litert', 'onnx', 'saved_model']"),
])
def test_a_format_that_disagrees_with_the_name_or_is_unknown_is_refused(tmp_path, output, format, expected):
    with pytest.raises(InvalidArgument, match=expected.replace("[", r"\[").replace("]", r"\]")):
        mgpu_io.unwrap(FIXTURES / "k224_siamese_x2_full.h5", tmp_path / output, format=format)


def test_weights_alone_are_refused_for_an_artifact_until_the_architecture_is_given(tmp_path):
    weights = FIXTURES / "k224_siamese_x2_weights.h5"
    with pytest.raises(InvalidArgument, match="A onnx output holds a whole model, and a weights-only file holds no"):
        mgpu_io.unwrap(weights, tmp_path / "model.onnx")
    report = mgpu_io.unwrap(weights, tmp_path / "model.onnx", config=FIXTURES / "k224_siamese_x2_config.json")
    assert report.export["difference"] <= report.export["bound"]


def test_verify_runs_an_artifact_against_its_model_and_tells_a_wrong_one(tmp_path):
    out, _ = write(FIXTURES / "k224_functional_bn_x2_full.h5", tmp_path, "onnx")
    report = mgpu_io.verify(FIXTURES / "k224_functional_bn_x2_full.h5", out)
    assert report.agree and report.prediction_difference <= 1e-6
    other = mgpu_io.verify(FIXTURES / "k224_functional_bn_x3_full.h5", out)  # same shapes, other weights
    assert not other.agree and other.prediction_difference > 1e-3


def test_the_extra_a_missing_package_names_is_the_one_for_the_backend():
    """ONNX on JAX is written by jax2onnx, which brings JAX and Flax: its own extra, named to JAX users."""
    from mgpu_io.keras.exports import _extra, exporter

    assert _extra(exporter("onnx"), "tensorflow") == "onnx" and _extra(exporter("onnx"), "jax") == "onnx-jax"
    assert _extra(exporter("litert"), "jax") == "litert" and _extra(exporter("saved_model"), "jax") == "tensorflow"
    extras = __import__("tomllib").loads((ROOT / "pyproject.toml").read_text())["project"]["optional-dependencies"]
    assert {"onnx", "onnx-jax", "litert"} <= set(extras) and any(p.startswith("jax2onnx") for p in extras["onnx-jax"])


def test_a_missing_extra_is_one_line_naming_it(tmp_path):
    code = (
        "import sys; sys.modules['onnxruntime'] = None\n"
        "import mgpu_io\n"
        "try:\n"
        f"    mgpu_io.unwrap({str(FIXTURES / 'k224_siamese_x2_full.h5')!r}, {str(tmp_path / 'm.onnx')!r})\n"
        "except mgpu_io.MissingDependency as e: print(e)\n"
    )
    result = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, cwd=ROOT,
                            env=dict(os.environ, TF_CPP_MIN_LOG_LEVEL="3"))
    assert result.stdout.strip().endswith("pip install 'mgpu-io[onnx]'.")
    assert result.stdout.count("\n") == 1 and not (tmp_path / "m.onnx").exists()
    assert MissingDependency.__name__ in dir(mgpu_io)


def test_the_command_line_exports_a_folder_with_progress_and_resumes(tmp_path):
    
    from mgpu_io.cli.app import app

    source = tmp_path / "in"
    source.mkdir()
    for name in ("k224_siamese_x2_full.h5", "k224_multi_io_x4_full.h5", "k224_siamese_x2_weights.h5"):
        (source / name).write_bytes((FIXTURES / name).read_bytes())
    result = runner.invoke(app, ["unwrap", str(source), str(tmp_path / "out"), "--format", "onnx", "--json"])
    assert result.exit_code == 0, result.output
    counts = json.loads(result.stdout)["counts"]
    assert counts["repaired"] == 2 and counts["skipped"] == 1
    assert sorted(p.name for p in (tmp_path / "out").iterdir()) == ["k224_multi_io_x4_full.onnx",
                                                                     "k224_siamese_x2_full.onnx"]
    again = runner.invoke(app, ["unwrap", str(source), str(tmp_path / "out"), "--format", "onnx", "--json"])
    assert json.loads(again.stdout)["counts"]["done before"] == 2


def test_the_command_line_prints_the_measured_difference_and_verify_takes_the_artifact(tmp_path):
    
    from mgpu_io.cli.app import app
    out = tmp_path / "model.tflite"
    result = runner.invoke(app, ["unwrap", str(FIXTURES / "k224_siamese_x2_full.h5"), str(out)])
    assert result.exit_code == 0, result.output
    assert "litert: run by LiteRT interpreter on 8 rows of generated inputs" in result.stdout
    checked = runner.invoke(app, ["verify", str(FIXTURES / "k224_siamese_x2_full.h5"), str(out), "--json"])
    assert checked.exit_code == 0 and json.loads(checked.stdout)["agree"] is True


def _folder(tmp_path, names=("k224_siamese_x2_full.h5", "k224_multi_io_x4_full.h5", "k224_siamese_x2_weights.h5",
                             "k224_functional_bn_x2_full.h5")):
    source = tmp_path / "in"
    source.mkdir()
    for name in names:
        (source / name).write_bytes((FIXTURES / name).read_bytes())
    return source


def test_a_folder_exports_with_workers_and_each_artifact_predicts_like_the_old_keras(tmp_path):
    """`--jobs 2`: two forked workers (this command's process has started no TensorFlow runtime), each exporting
    files and running them in ONNX Runtime; the artifacts predict what the old Keras predicted."""
    source = _folder(tmp_path)
    result = subprocess.run([sys.executable, "-m", "mgpu_io", "unwrap", str(source), str(tmp_path / "out"), "--format",
                             "onnx", "--jobs", "2", "--json"], capture_output=True, text=True, cwd=ROOT,
                            env=dict(os.environ, TF_CPP_MIN_LOG_LEVEL="3"))
    assert result.returncode == 0, result.stderr[-2000:]
    report = json.loads(result.stdout)
    assert report["counts"]["repaired"] == 3 and report["counts"]["skipped"] == 1, report["counts"]
    for name in ("k224_multi_io_x4", "k224_functional_bn_x2"):
        fixture = entry(f"{name}_full.h5")
        got, ys = run_on_fixture(tmp_path / "out" / f"{name}_full.onnx", fixture,
                                 model_input_names(mgpu_io.load_model(FIXTURES / fixture["file"], compile=False)))
        assert_predictions_match(got, ys)


def test_a_folder_export_takes_the_repairs_options_and_resumes_after_a_stop(tmp_path):
    from mgpu_io.format.options import UnwrapOptions
    from mgpu_io.keras.exports.tree import export_tree

    source = _folder(tmp_path)
    options = UnwrapOptions(output_format="onnx", config=str(FIXTURES / "k224_siamese_x2_config.json"))
    seen = []

    def stop_after_one(done, total, result):
        seen.append((done, total, result.status))
        if result.status == "repaired":
            raise KeyboardInterrupt

    with pytest.raises(KeyboardInterrupt) as stopped:
        export_tree(source, tmp_path / "out", options, progress=stop_after_one)
    first = stopped.value.report.counts()
    assert first["repaired"] == 1 and first["failed"] == 3  # the rest: "stopped before this file"
    report = export_tree(source, tmp_path / "out", options, jobs=2, progress=lambda *a: seen.append(a))
    counts = report.counts()
    assert counts["done before"] == 1 and counts["repaired"] == 3 and report.ok, counts  # the weights: with config=
    assert (tmp_path / "out" / "k224_siamese_x2_weights.onnx").is_file()
    assert seen[-1][:2] == (4, 4)


def test_a_folder_export_opens_each_file_once(tmp_path, monkeypatch):
    """Each file of a folder is looked at and planned in one child (the door's), as one file's export is: a wrapper,
    a weights-only file given the folder's config= and a plain model given allow_plain=True, each opened once (in
    this process, MGPU_IO_PROBE=0, where each open can be counted; it once opened each twice: the folder's look,
    then the plan's)."""
    import h5py

    from mgpu_io.format.options import UnwrapOptions
    from mgpu_io.keras.exports.tree import export_tree

    source = _folder(tmp_path, ("k224_functional_bn_x2_full.h5", "k224_siamese_x2_weights.h5"))
    (source / "plain.h5").write_bytes((ROOT / "fixtures" / "layers" / "k224" / "Dense.h5").read_bytes())
    real, opens = h5py.File.__init__, []

    def counting(self, path, *args, **kwargs):
        if isinstance(path, (str, os.PathLike)) and os.path.realpath(path).startswith(str(source.resolve())):
            opens.append(os.path.basename(path))
        real(self, path, *args, **kwargs)

    monkeypatch.setenv("MGPU_IO_PROBE", "0")
    monkeypatch.setattr(h5py.File, "__init__", counting)
    options = UnwrapOptions(output_format="onnx", allow_plain=True,
                            config=str(FIXTURES / "k224_siamese_x2_config.json"))
    report = export_tree(source, tmp_path / "out", options)
    assert report.ok and report.counts()["repaired"] == 2 and report.counts()["already clean"] == 1, str(report)
    assert sorted(opens) == ["k224_functional_bn_x2_full.h5", "k224_siamese_x2_weights.h5", "plain.h5"]


def test_tensorflow_functions_called_by_name_export_to_litert_and_an_op_tf2onnx_lacks_is_refused_in_one_line(tmp_path):
    """tf.math.argmax in a tf.keras 2.5 model, computed with keras.ops, converted to a Bitcast that LiteRT runs only
    with Flex, and the LiteRT export was refused. Called by name, as tf_keras does, it is TensorFlow's own ArgMax:
    the LiteRT artifact runs, within the bound of the model. Its ONNX export now meets TensorFlow's own Log1p, which
    tf2onnx does not convert: refused in one line that names it, nothing left behind."""
    (tmp_path / "litert").mkdir()
    (tmp_path / "onnx").mkdir()
    _, report = write(TFOPS / "tf25_functions_full.h5", tmp_path / "litert", "litert", allow_plain=True)
    assert report.written and report.export["difference"] <= report.export["bound"]
    with pytest.raises(UnsupportedModel) as refused:
        write(TFOPS / "tf25_functions_full.h5", tmp_path / "onnx", "onnx", allow_plain=True)
    message = str(refused.value)
    assert message.startswith("The model cannot be written as onnx: ONNX Runtime cannot run it.") and "Log1p" in message
    assert "\n" not in message and list((tmp_path / "onnx").iterdir()) == []


def test_an_empty_crop_that_onnx_runtime_cannot_run_is_refused_naming_mgpu_ios_cropping_layer(tmp_path):
    """tf.keras 1.15 sliced a crop as large as its input to an empty tensor; mgpu-io's own Cropping3D builds it so.
    tf2onnx's graph of it fails in ONNX Runtime (a Concat of the empty branch): the refusal names that layer; the
    LiteRT file and the SavedModel predict what tf.keras 1.15 predicted."""
    habits = FIXTURES.parent / "habits"
    with pytest.raises(UnsupportedModel) as refused:
        write(habits / "tf115_empty_crop.h5", tmp_path, "onnx", allow_plain=True)
    message = str(refused.value)
    assert message.startswith("The model cannot be written as onnx: ONNX Runtime cannot run it."), message
    assert "(the model holds Cropping3D '" in message, message
    assert list(tmp_path.iterdir()) == []
    fixture = entry("tf115_empty_crop.h5", habits)
    for name in ("litert", "saved_model"):
        out, report = write(habits / "tf115_empty_crop.h5", tmp_path, name, allow_plain=True)
        assert report.export["difference"] <= report.export["bound"]
        got, ys = run_on_fixture(out, fixture, model_input_names(mgpu_io.load_model(habits / "tf115_empty_crop.h5")), habits)
        assert_predictions_match(got, ys)


@pytest.mark.parametrize("name", ["onnx", "saved_model"])
def test_a_stateful_lstm_exports_from_the_states_keras_starts_from(tmp_path, name):
    """Keras 1.2.2's LSTM sweep holds a stateful branch (its own fixed-batch Input): Keras' call before the export
    advanced its states, which the exporters captured (ONNX was 0.013 away, the SavedModel 6e-4, both refused over
    the bound); the artifact now starts from zero states and predicts what Keras 1.2.2 predicted, every branch."""
    sweep = FIXTURES.parent / "layers" / "k122"
    data = np.load(sweep / "data.npz")
    xs = [data[f"LSTM/x{i}"] for i in range(2)]
    ys = [data[f"LSTM/y{i}"] for i in range(9)]
    out, report = write(sweep / "LSTM.h5", tmp_path, name, inputs=xs, allow_plain=True)
    assert report.export["difference"] <= report.export["bound"]
    model = mgpu_io.load_model(sweep / "LSTM.h5", compile=False)
    assert_predictions_match(run_artifact(out, xs, model_input_names(model)), ys)


def _sweep_case_exports_like_its_writer(tmp_path, writer, case, name):
    """The layer sweep's ``writer/case`` exported as ``name``: within the export's bound of the model, and run by its
    runtime, the writer's own predictions."""
    sweep = FIXTURES.parent / "layers" / writer
    data = np.load(sweep / "data.npz")
    xs = [data[k] for k in sorted(k for k in data.files if k.startswith(f"{case}/x"))]
    ys = [data[k] for k in sorted(k for k in data.files if k.startswith(f"{case}/y"))]
    out, report = write(sweep / f"{case}.h5", tmp_path, name, inputs=xs, allow_plain=True)
    assert report.export["difference"] <= report.export["bound"]
    model = mgpu_io.load_model(sweep / f"{case}.h5", compile=False)
    assert_predictions_match(run_artifact(out, xs, model_input_names(model)), ys)


@pytest.mark.parametrize("name", ["onnx", "saved_model"])
def test_a_channels_first_model_exports_on_a_cpu_and_its_artifact_predicts_like_the_writer(tmp_path, name):
    """Keras 2.3.1's ConvLSTM2D sweep holds a channels_first branch, which TensorFlow's CPU kernels run channels_last
    only: the export was refused on a CPU ("Export on a machine with a GPU"). The model now runs its convolutions
    transposed there (mgpu_io/keras/runtime.py), and the artifact predicts what Keras 2.3.1 predicted."""
    _sweep_case_exports_like_its_writer(tmp_path, "k231", "ConvLSTM2D", name)


@pytest.mark.parametrize("name", ["onnx", "saved_model"])
def test_a_random_augmentation_is_the_identity_in_the_artifact_as_at_inference(tmp_path, name):
    """tf.keras 2.8's RandomRotation sweep: Keras' TensorFlow exporters traced the model without training=False,
    which left the rotation in the artifact (SavedModel 3.6 away; ONNX Runtime had no kernel for the random op).
    Now the artifact predicts what tf.keras 2.8 predicted at inference."""
    _sweep_case_exports_like_its_writer(tmp_path, "tf28", "RandomRotation", name)


def test_a_normalization_given_its_mean_and_variance_exports_to_onnx(tmp_path):
    """tf.keras 2.4's Normalization sweep (mean and variance given, and adapted): tf2onnx made the given mean and
    variance inputs of the ONNX graph, which ONNX Runtime then asked for ("Required inputs ... are missing"). Now
    the ONNX file predicts what tf.keras 2.4 predicted."""
    sweep = FIXTURES.parent / "layers" / "tf24"
    case = "experimental.preprocessing.Normalization"
    data = np.load(sweep / "data.npz")
    xs = [data[f"{case}/x{i}"] for i in range(sum(k.startswith(f"{case}/x") for k in data.files))]
    ys = [data[f"{case}/y{i}"] for i in range(sum(k.startswith(f"{case}/y") for k in data.files))]
    out, report = write(sweep / f"{case}.h5", tmp_path, "onnx", inputs=xs, allow_plain=True)
    assert report.export["difference"] <= report.export["bound"]
    model = mgpu_io.load_model(sweep / f"{case}.h5", compile=False)
    assert_predictions_match(run_artifact(out, xs, model_input_names(model)), ys)
