"""Files as real repositories hold them (fixtures/habits, written by the real Keras 1.2.2, 2.0.5 (on Python 3.7 and
3.6), 2.0.8, 2.1.2, 2.2.4 and TF 1.13's tf.keras): each loads in Keras 3 with the writer's own predictions, and says what was changed.

- `json.dump(model.to_json(), f)`: a JSON string holding the model's JSON, in a file with or without extension;
- Keras 1's `Merge`, kept by Keras 2.0-2.1 as a legacy layer: named modes, a Sequential of merged branches, and a
  Python function as the mode (a Siamese distance: user code, run only with the caller's function);
- Keras 2.0.5's numpy payloads in a layer config (`{"type": "ndarray", "value": 0.2}`);
- `Bidirectional(LSTM(..., input_shape=...))` and `TimeDistributed(Dense(..., input_shape=...))`;
- `UnifiedLSTM`, TF 2.0's preview LSTM as TF 1.13's tf.keras saved it;
- the wrapper era's files that still failed (issue 32): `merge([...], mode=...)` of Keras 2.0-2.1, whose nodes store
  the inputs' masks; a `Merge` given a bound method (stored by name); a Sequential encoder called on a tensor whose
  wrapped LSTM stores a shape Keras 2 never read; `Bidirectional` around a layer built with `go_backwards=True`;
  a Sequential added to a Sequential by Keras 1.2.2-2.1.2, named only by the outer one's `layer_names`; a crop
  that leaves a size of 0 (TF 1.15's tf.keras); keras_contrib's and tensorflow-addons' InstanceNormalization; the
  user's own classes (SelfAttention, Sampling), named with the way to pass them.
"""

import json
import shutil

import numpy as np
import pytest
from helpers import HABITS_MANIFEST, TOLERANCE, fixture_batch, fixture_path, fixtures, runner

import mgpu_io
from mgpu_io.errors import UnsupportedModel
from plans import planned

keras = pytest.importorskip("keras")


def distance(vectors):
    """The Siamese distance of the `merge_function` cases, in Keras 3's ops (the writer's used K.sqrt, ...)."""
    x, y = vectors
    return keras.ops.sqrt(keras.ops.maximum(keras.ops.sum(keras.ops.square(x - y), axis=1, keepdims=True), 1e-7))


EXPECTED = {  # the rules each habit needs, as the report lists them
    "double-encoded-json": set(),
    "keras2-merge": {"keras2-merge"},
    "merge-function": {"merge-function-as-lambda", "lambda-by-reference"},
    "ndarray-config-values": set(),  # only Keras 2.0.5 stored a payload; 2.0.8 and 2.1.2 a float
    "wrapped-input-shape": {"wrapped-input-shape"},
    "unified-rnn": {"unified-rnn-names"},
    "custom-class": set(),
    "keras2-merge-masks": {"keras2-merge", "keras2-merge-masks"},
    "merge-function-by-name": {"merge-function-as-lambda", "lambda-output-shape-traced"},
    "nested-sequential-wrapped-shape": {"wrapped-input-shape", "hard-sigmoid-gates-rescaled"},
    "bidirectional-go-backwards": {"bidirectional-go-backwards", "hard-sigmoid-gates-rescaled"},
    "nested-sequential-unnamed": {"sequential-list-config"},
    "contrib-instance-normalization": {"contrib-instance-normalization"},
    "addons-normalization": {"addons-group-normalization"},
    "user-classes": set(),
    "empty-crop": set(),  # rebuilt at the build, where Keras 3 refuses it (the plan knows no shapes)
}


@keras.saving.register_keras_serializable(package="test_habits")
class ClusteringLayer(keras.layers.Layer):
    """DEC's ClusteringLayer (the k224_custom_layer case), ported to Keras 3 as its owner would."""

    def __init__(self, n_clusters, alpha=1.0, **kwargs):
        super().__init__(**kwargs)
        self.n_clusters, self.alpha = n_clusters, alpha

    def build(self, input_shape):
        self.clusters = self.add_weight(name="clusters", shape=(self.n_clusters, input_shape[1]))

    def call(self, inputs):
        ops = keras.ops
        q = 1.0 / (1.0 + ops.sum(ops.square(ops.expand_dims(inputs, axis=1) - self.clusters), axis=2) / self.alpha)
        q = q ** ((self.alpha + 1.0) / 2.0)
        return q / ops.sum(q, axis=1, keepdims=True)

    def get_config(self):
        return dict(super().get_config(), n_clusters=self.n_clusters, alpha=self.alpha)


class SelfAttention(keras.layers.Layer):
    """The tf28tfa_user_classes case's attention, ported to Keras 3 as its owner would."""

    def __init__(self, units, **kwargs):
        super().__init__(**kwargs)
        self.units = units

    def build(self, input_shape):
        self.kernel = self.add_weight(name="kernel", shape=(input_shape[-1], self.units))

    def call(self, inputs):
        keys = keras.ops.matmul(inputs, self.kernel)
        scores = keras.ops.softmax(keras.ops.matmul(keys, keras.ops.transpose(keys, (0, 2, 1))), axis=-1)
        return keras.ops.matmul(scores, inputs)

    def get_config(self):
        return dict(super().get_config(), units=self.units)


class Sampling(keras.layers.Layer):
    """The VAE's reparametrisation, ported to Keras 3 (its output is random: the test compares z_mean only)."""

    def call(self, inputs):
        z_mean, z_log_var = inputs
        return z_mean + keras.ops.exp(0.5 * z_log_var) * keras.random.normal(keras.ops.shape(z_mean))


USER_CLASSES = {"SelfAttention": SelfAttention, "Sampling": Sampling}


def load(entry):
    options = {"lambdas": dict.fromkeys(entry["user_functions"], distance)} if entry.get("user_functions") else {}
    if entry["habit"] == "custom-class":
        options["custom_objects"] = {"ClusteringLayer": ClusteringLayer}
    if entry["habit"] == "user-classes":
        options["custom_objects"] = USER_CLASSES
    if entry["file_type"] == "config":
        options["weights"] = fixture_path(entry).with_name(entry["weights"])
    return mgpu_io.load_model(fixture_path(entry), **options)


@pytest.mark.parametrize("entry", fixtures("model", "config", manifest=HABITS_MANIFEST))
def test_each_habit_loads_with_the_writers_predictions(entry):
    xs, ys = fixture_batch(entry)
    predicted = load(entry).predict(xs if len(xs) > 1 else xs[0], verbose=0)
    predicted = predicted if isinstance(predicted, list) else [predicted]
    assert len(predicted) == len(ys)
    for index in entry.get("deterministic_outputs", range(len(ys))):  # a sampled output is not compared
        assert np.max(np.abs(np.asarray(predicted[index]) - ys[index])) <= TOLERANCE, entry["file"]


@pytest.mark.parametrize("entry", fixtures("model", "config", manifest=HABITS_MANIFEST))
def test_the_report_names_the_rule_each_habit_needed(entry):
    path, config = fixture_path(entry), None
    if entry["file_type"] == "config":
        path, config = path.with_name(entry["weights"]), path
    with planned(path, allow_plain=True, config=config) as plan:
        changes = set(plan.report.config_changes)
    assert EXPECTED[entry["habit"]] <= changes, entry["file"]
    if entry["writer"].startswith("k205") and entry["habit"] == "ndarray-config-values":
        assert "ndarray-config-values" in changes
    if entry["case"].endswith("merge_sequential"):
        assert "keras2-sequential-merge" in changes


@pytest.mark.parametrize("writer", ["k122", "k205", "k208", "k212"])
def test_a_sequential_nested_in_a_sequential_takes_the_name_its_weights_were_saved_under(writer):
    """Keras 1.2-2.1 stored a Sequential's config as a list of unnamed entries: the nested model's name is in the
    file's `layer_names` alone, and the model built from the file keeps it (the deeper one gets a fresh name)."""
    import h5py

    entry = next(e for e in HABITS_MANIFEST if e["case"] == f"{writer}_nested_sequential_in_sequential")
    with h5py.File(fixture_path(entry), "r") as h5:
        stored = json.loads(h5.attrs["model_config"])
        saved_under = [name.decode() for name in h5["model_weights"].attrs["layer_names"]]
    assert isinstance(stored["config"][0]["config"], list) and "name" not in stored["config"][0]
    model = load(entry)
    assert [layer.name for layer in model.layers] == saved_under
    assert [type(layer).__name__ for layer in model.layers[0].layers] == ["Dense", "Sequential"]


def habit_case(case):
    return next(e for e in HABITS_MANIFEST if e["case"] == case)


def test_keras_contrib_instance_normalization_computes_as_it_did_where_group_normalization_would_not():
    """keras_contrib divides by `std + epsilon`: mgpu-io's copy gives its writer's predictions on every axis
    (channels, axis=None, rows), where Keras 3's GroupNormalization(groups=-1) is off by more than 1e-4."""
    entry = habit_case("k224_contrib_instance_normalization")
    model, (xs, _) = load(entry), fixture_batch(entry)
    layer = model.get_layer("instance_channels")
    assert type(layer).__name__ == "InstanceNormalization" and layer.epsilon == pytest.approx(1e-3)
    assert [model.get_layer(n).axis for n in ("instance_all", "instance_rows")] == [None, 1]
    seen = keras.Model(model.inputs, [layer.input, layer.output]).predict(xs[0], verbose=0)
    group = keras.layers.GroupNormalization(groups=-1, epsilon=layer.epsilon)
    group.build(seen[0].shape)
    group.set_weights(layer.get_weights())
    assert np.max(np.abs(np.asarray(group(seen[0])) - seen[1])) > 1e-4


def test_tensorflow_addons_normalization_is_keras_3s_group_normalization():
    entry = habit_case("tf28tfa_addons_normalization")
    model = load(entry)
    groups = {n: model.get_layer(n) for n in ("instance", "group", "instance_rows")}
    assert {type(layer).__name__ for layer in groups.values()} == {"GroupNormalization"}
    assert [(layer.groups, layer.axis, layer.center) for layer in groups.values()] == [
        (4, -1, True), (2, -1, True), (6, 1, False)]


def test_a_users_own_instance_normalization_is_left_to_the_caller(tmp_path):
    """A class named InstanceNormalization with arguments keras_contrib's has not (here `momentum`) is the user's:
    not converted, the load names it and how to pass it."""
    import h5py

    path = tmp_path / "own.h5"
    shutil.copy(fixture_path(habit_case("k224_contrib_instance_normalization")), path)
    with h5py.File(path, "r+") as h5:
        config = json.loads(h5.attrs["model_config"])
        next(lyr for lyr in config["config"]["layers"] if lyr["name"] == "instance_rows")["config"]["momentum"] = 0.9
        h5.attrs["model_config"] = json.dumps(config)
    with pytest.raises(mgpu_io.MgpuIOError) as error:
        mgpu_io.load_model(path)
    assert str(error.value).endswith("Pass the class: custom_objects={'InstanceNormalization': InstanceNormalization}.")


def test_the_users_own_classes_are_named_with_the_way_to_pass_them():
    entry = habit_case("tf28tfa_user_classes")
    path = fixture_path(entry)
    with pytest.raises(mgpu_io.MgpuIOError) as error:
        mgpu_io.load_model(path)
    assert str(error.value) == (
        "Keras 3 cannot build the repaired template: it has no class 'SelfAttention', a custom layer or object of the "
        "code that wrote the file. Expected every class of the template to be Keras' own or given. Received: "
        f"filepath={path} (class_name='SelfAttention'). Pass the class: custom_objects={{'SelfAttention': "
        "SelfAttention}."
    )
    with pytest.raises(mgpu_io.MgpuIOError) as error:
        mgpu_io.load_model(path, custom_objects={"SelfAttention": SelfAttention})
    assert str(error.value).endswith("Pass the class: custom_objects={'Sampling': Sampling}.")


def test_a_crop_that_leaves_nothing_builds_as_tf_keras_sliced_it():
    """tf.keras sliced a crop as large as its input to an empty tensor; Keras 3's Cropping3D refuses it ("Exception
    encountered when calling Cropping3D.call()"), so the model is built with mgpu-io's, which slices as tf.keras did."""
    with pytest.raises(ValueError, match="should be smaller than the corresponding spatial dimension"):
        keras.layers.Cropping3D(((2, 2), (0, 0), (0, 0)))(keras.Input((4, 4, 4, 1)))
    model = load(habit_case("tf115_empty_crop"))
    assert tuple(model.get_layer("crop_all").output.shape) == (None, 0, 4, 4, 1)
    assert tuple(model.get_layer("crop_beyond").output.shape) == (None, 0, 3, 3, 1)


def test_keras_2_0_5_stored_leaky_relu_alpha_as_a_numpy_payload_and_it_becomes_the_float():
    import h5py

    entry = next(e for e in HABITS_MANIFEST if e["case"] == "k205_ndarray_alpha")
    with h5py.File(fixture_path(entry), "r") as h5:
        stored = json.loads(h5.attrs["model_config"])
    assert stored["config"][1]["config"]["alpha"] == {"type": "ndarray", "value": pytest.approx(0.2)}
    leaky = next(layer for layer in load(entry).layers if type(layer).__name__ == "LeakyReLU")
    assert leaky.negative_slope == pytest.approx(0.2)


@pytest.mark.parametrize("entry", fixtures("model", "weights", manifest=HABITS_MANIFEST))
def test_inspect_lays_out_the_weights_of_every_habit_file(entry):
    report = mgpu_io.inspect(fixture_path(entry))
    assert report.weights > 0 and not report.is_wrapper


@pytest.mark.parametrize("entry", fixtures("config", manifest=HABITS_MANIFEST))
def test_inspect_says_the_json_was_encoded_twice_whatever_the_files_name(entry):
    report = mgpu_io.inspect(fixture_path(entry))
    assert "double-encoded-json" in [finding.kind for finding in report.findings]
    assert report.file_type == "config"


def test_a_folder_repair_finds_a_double_encoded_architecture_without_extension(tmp_path):
    from mgpu_io.format.batch import model_files

    entry = next(e for e in HABITS_MANIFEST if e["writer"] == "k122" and e["file_type"] == "config")
    shutil.copy(fixture_path(entry), tmp_path / "config_model_weights")
    (tmp_path / "README").write_text("Behavioral cloning, project 3.\n")
    assert [p.name for p in model_files(tmp_path)] == ["config_model_weights"]


def test_the_merge_function_is_reported_as_user_code_with_its_name():
    entry = next(e for e in HABITS_MANIFEST if e["case"] == "k208_merge_function")
    report = mgpu_io.inspect(fixture_path(entry))
    (lam,) = report.lambdas
    assert (lam["layer"], lam["kind"]) == ("distance", "user")
    assert lam["code"]["function_name"] == "euclidean_distance"


def test_the_merge_function_runs_only_with_the_callers_function():
    entry = next(e for e in HABITS_MANIFEST if e["case"] == "k212_merge_function")
    with pytest.raises(mgpu_io.MgpuIOError, match="lambdas="):
        mgpu_io.load_model(fixture_path(entry))


def test_keras1_batchnormalization_mode_2_stays_refused():
    """Keras 1's BatchNormalization(mode=2) normalises with each batch's statistics at prediction too: no Keras 3
    layer computes that, so it is refused by name rather than converted."""
    from mgpu_io.format.conversions.keras1 import convert_keras1_config

    config = {"class_name": "Sequential", "config": [{"class_name": "BatchNormalization", "config": {
        "name": "bn", "mode": 2, "axis": -1, "epsilon": 1e-3, "momentum": 0.99, "batch_input_shape": [None, 3]}}]}
    with pytest.raises(UnsupportedModel, match=r"uses mode=2, which normalises with the statistics of each batch"):
        convert_keras1_config(config)


CUSTOM = next(e for e in HABITS_MANIFEST if e["habit"] == "custom-class")


def unregistered(monkeypatch):
    """This module's ClusteringLayer is registered with Keras, which load_model honours (issue 28): unknown here."""
    monkeypatch.delitem(keras.saving.get_custom_objects(), "test_habits>ClusteringLayer")


def test_an_unknown_custom_class_is_refused_with_the_way_to_give_it(monkeypatch):
    unregistered(monkeypatch)
    with pytest.raises(mgpu_io.MgpuIOError) as error:
        mgpu_io.load_model(fixture_path(CUSTOM))
    assert "it has no class 'ClusteringLayer'" in str(error.value)
    assert str(error.value).endswith("Pass the class: custom_objects={'ClusteringLayer': ClusteringLayer}.")


def test_custom_objects_reach_the_keras_output_of_unwrap_and_verify(tmp_path):
    out = tmp_path / "model.keras"
    mgpu_io.unwrap(fixture_path(CUSTOM), out, allow_plain=True, custom_objects={"ClusteringLayer": ClusteringLayer})
    xs, ys = fixture_batch(CUSTOM)
    assert np.max(np.abs(keras.models.load_model(out).predict(xs[0], verbose=0) - ys[0])) <= TOLERANCE
    report = mgpu_io.verify(fixture_path(CUSTOM), out, custom_objects={"ClusteringLayer": ClusteringLayer})
    assert report.agree


def test_transfer_weights_builds_nothing_from_the_file_so_needs_no_custom_class():
    inp = keras.Input((3,))
    model = keras.Model(inp, ClusteringLayer(4)(keras.layers.Dense(5)(inp)))
    assert mgpu_io.transfer_weights(fixture_path(CUSTOM), model).ok
    xs, ys = fixture_batch(CUSTOM)
    assert np.max(np.abs(model.predict(xs[0], verbose=0) - ys[0])) <= TOLERANCE


def test_an_unknown_custom_class_is_found_in_the_config_whatever_keras_words_are(monkeypatch):
    """The class Keras 3 has not is found in the config, asked as Keras' legacy loader asks, not read out of Keras'
    message: a Keras that words its refusal otherwise still gets the class named, with the way to give it."""
    from mgpu_io.keras import load

    unregistered(monkeypatch)

    def refuse(*args, **kwargs):
        raise ValueError("Layer class not found in the registry.")

    monkeypatch.setattr(load, "model_from_legacy_config", refuse)
    with pytest.raises(mgpu_io.MgpuIOError) as error:
        mgpu_io.load_model(fixture_path(CUSTOM))
    assert "it has no class 'ClusteringLayer'" in str(error.value)
    assert str(error.value).endswith("Pass the class: custom_objects={'ClusteringLayer': ClusteringLayer}.")


def test_an_unknown_class_inside_a_wrapper_layer_is_named_with_the_way_to_give_it(tmp_path):
    """Bidirectional(MyLSTM): Keras 3 refuses the wrapped class in words that name no missing class ("not a
    KerasSaveable subclass"); the class is found in the config and named, with the way to give it."""
    import h5py

    from mgpu_io.format.config import walk_layers

    path = tmp_path / "wrapped.h5"
    path.write_bytes(fixture_path({"file": "k224_conv1d_bilstm_x2_full.h5"}).read_bytes())
    with h5py.File(path, "r+") as h5:
        config = json.loads(h5.attrs["model_config"])
        next(lyr for lyr in walk_layers(config) if lyr["class_name"] == "Bidirectional")["config"]["layer"][
            "class_name"] = "MyLSTM"
        h5.attrs["model_config"] = json.dumps(config)
    with pytest.raises(mgpu_io.MgpuIOError) as error:
        mgpu_io.load_model(path)
    assert "it has no class 'MyLSTM'" in str(error.value)
    assert str(error.value).endswith("Pass the class: custom_objects={'MyLSTM': MyLSTM}.")


def test_the_cli_takes_custom_classes_and_says_its_flag_when_one_is_missing(tmp_path, monkeypatch):
    
    from mgpu_io.cli.app import app

    (tmp_path / "dec.py").write_text(
        "import keras\nfrom keras import ops\n\n"
        "class ClusteringLayer(keras.layers.Layer):\n"
        "    def __init__(self, n_clusters, alpha=1.0, **kwargs):\n"
        "        super().__init__(**kwargs)\n        self.n_clusters, self.alpha = n_clusters, alpha\n"
        "    def build(self, input_shape):\n"
        "        self.clusters = self.add_weight(name='clusters', shape=(self.n_clusters, input_shape[1]))\n"
        "    def call(self, x):\n"
        "        q = 1.0 / (1.0 + ops.sum(ops.square(ops.expand_dims(x, 1) - self.clusters), axis=2) / self.alpha)\n"
        "        q = q ** ((self.alpha + 1.0) / 2.0)\n        return q / ops.sum(q, axis=1, keepdims=True)\n")
    monkeypatch.chdir(tmp_path)
    with monkeypatch.context() as scoped:
        unregistered(scoped)
        failed = runner.invoke(app, ["unwrap", str(fixture_path(CUSTOM)), "a.keras", "--allow-plain"])
    assert failed.exit_code == 1
    assert "Pass the class: --custom-objects MODULE:ClusteringLayer." in failed.output
    for index, spec in enumerate(("dec:ClusteringLayer", "dec.py")):
        done = runner.invoke(app, ["unwrap", str(fixture_path(CUSTOM)), f"out{index}.keras", "--allow-plain",
                                   "--custom-objects", spec])
        assert done.exit_code == 0, done.output
    wrong = runner.invoke(app, ["unwrap", str(fixture_path(CUSTOM)), "c.keras", "--allow-plain",
                                "--custom-objects", "dec:Clustering"])
    assert wrong.exit_code == 1
    assert "Error: The class cannot be found. Expected a class Clustering in dec. Received: --custom-objects " \
           "dec:Clustering." in wrong.output


def test_a_merge_function_stored_by_name_is_the_users_code_to_pass_by_the_layers_name():
    """Keras 2 stored a bound method given as a Merge mode by its name, which no Keras can look up: mgpu-io says
    which layer needs which function, and runs the caller's."""
    entry = next(e for e in HABITS_MANIFEST if e["case"] == "k212_merge_method")
    with pytest.raises(mgpu_io.MissingLambda) as error:
        mgpu_io.load_model(fixture_path(entry))
    message = str(error.value)
    assert "merge_1 (function 'euclidean_distance'" in message and message.endswith("lambdas={'merge_1': fn}.")
    xs, ys = fixture_batch(entry)
    model = mgpu_io.load_model(fixture_path(entry), lambdas={"merge_1": distance})
    assert np.max(np.abs(model.predict(xs, verbose=0) - ys[0])) <= TOLERANCE


def test_a_nested_encoders_recurrent_weights_are_converted_like_a_top_level_layers():
    """The encoder's output is the model's: the nested model stays, and its LSTM's hard_sigmoid gates are rescaled
    inside the nested model's weights (found by name) instead of being warned about."""
    for writer in ("k205", "k212", "k224"):
        entry = next(e for e in HABITS_MANIFEST if e["case"] == f"{writer}_nested_sequential_rnn_output")
        with planned(fixture_path(entry), allow_plain=True) as plan:
            assert "hard-sigmoid-gates-rescaled" in plan.report.config_changes, writer
            assert not [w for w in plan.report.warnings if "inside nested model" in w], writer
