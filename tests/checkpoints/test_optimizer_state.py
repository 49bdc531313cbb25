"""The optimizer state, end to end and truthfully: what a repair promises is what the loaders do.

Keras 3's own ``load_model`` of a ``.h5`` holding ``optimizer_weights`` builds its optimizer on none of the model's
variables; the first ``fit`` then fails. A ``.h5`` repaired for Keras 3 therefore keeps the state beside that group:
plain Keras 3 trains with a fresh optimizer, and ``mgpu_io.load_model`` restores the state. Checkpoints that our
own ``BaseModelCheckpoint`` writes (Keras 3 and tf_keras layouts) resume in ``mgpu_io.load_model``.
"""

import gc
import sys
import warnings
from pathlib import Path

import numpy as np
import pytest
from helpers import fixture_batch, fixture_path, fixtures, has_user_lambda

import mgpu_io

keras = pytest.importorskip("keras")
sys.path.insert(0, str(Path(__file__).parents[1] / "support"))
import parallel  # noqa: E402

WITH_STATE = fixtures("model", where=lambda e: e.get("has_optimizer_weights") and not has_user_lambda(e))


def _state(model):
    return [np.asarray(variable) for variable in model.optimizer.variables]


@pytest.mark.parametrize("entry", WITH_STATE)
def test_a_repaired_h5_trains_in_plain_keras3_and_resumes_with_its_state_in_ours(entry, tmp_path):
    out = tmp_path / "model.h5"
    report = mgpu_io.unwrap(fixture_path(entry), out)
    assert report.optimizer == "copied aside"

    plain = keras.models.load_model(out)  # Keras' own loader: a fresh optimizer, and fit works
    xs, ys = fixture_batch(entry)
    plain.fit(xs if len(xs) > 1 else xs[0], ys if len(ys) > 1 else ys[0], epochs=1, verbose=0)
    assert int(plain.optimizer.iterations) == 1

    resumed, original = mgpu_io.load_model(out), mgpu_io.load_model(fixture_path(entry))  # the same state
    assert int(resumed.optimizer.iterations) == int(original.optimizer.iterations)
    for ours, theirs in zip(_state(resumed), _state(original), strict=True):
        np.testing.assert_array_equal(ours, theirs)


def test_a_keras_output_and_a_tf_keras_target_keep_the_state_where_their_loaders_read_it(tmp_path):
    source = fixture_path({"file": "k224_resume_adam_x2_full.h5"})
    original = _state(mgpu_io.load_model(source))
    assert int(original[0]) > 0

    assert mgpu_io.unwrap(source, tmp_path / "model.keras").optimizer == "copied"
    for ours, theirs in zip(_state(keras.models.load_model(tmp_path / "model.keras")), original, strict=True):
        np.testing.assert_array_equal(ours, theirs)

    assert mgpu_io.unwrap(source, tmp_path / "tf_keras.h5", target="tf_keras").optimizer == "copied"
    for ours, theirs in zip(_state(mgpu_io.load_model(tmp_path / "tf_keras.h5")), original, strict=True):
        np.testing.assert_array_equal(ours, theirs)


def test_why_the_state_is_kept_aside_keras3_cannot_fit_after_loading_optimizer_weights(tmp_path):
    """Keras' own behaviour, measured: if this starts to pass, Keras fixed its loader and the state can go back."""
    model = parallel.template(keras)
    x, y = parallel.data()
    model.compile(optimizer="adam", loss="categorical_crossentropy")
    model.fit(x, y, verbose=0)
    model.save(tmp_path / "plain.h5")
    reloaded = keras.models.load_model(tmp_path / "plain.h5")
    with pytest.raises(ValueError):
        reloaded.fit(x, y, verbose=0)


def test_a_keras3_checkpoint_of_ours_resumes_in_our_loader(tmp_path):
    template = parallel.template(keras)
    wrapper = parallel.make_parallel(keras, template, 2)
    wrapper.compile(optimizer="adam", loss="categorical_crossentropy")
    x, y = parallel.data()
    wrapper.fit(x, y, batch_size=8, epochs=2, verbose=0,
                callbacks=[mgpu_io.BaseModelCheckpoint(str(tmp_path / "checkpoint.h5"))])
    resumed = mgpu_io.load_model(tmp_path / "checkpoint.h5")
    assert int(resumed.optimizer.iterations) == int(wrapper.optimizer.iterations) == 12
    trained = {variable.path.split("/", 1)[1]: np.asarray(variable) for variable in wrapper.optimizer.variables}
    for variable in resumed.optimizer.variables:
        np.testing.assert_array_equal(np.asarray(variable), trained[variable.path.split("/", 1)[1]])


def test_a_tf_keras_checkpoint_with_a_plain_adam_resumes_in_our_loader(tmp_path):
    tf_keras = pytest.importorskip("tf_keras")
    template = parallel.template(tf_keras)
    wrapper = parallel.make_parallel(tf_keras, template, 2)
    wrapper.compile(optimizer=tf_keras.optimizers.Adam(1e-3), loss="categorical_crossentropy")
    x, y = parallel.data()
    wrapper.fit(x, y, batch_size=8, epochs=2, verbose=0,
                callbacks=[mgpu_io.BaseModelCheckpoint(str(tmp_path / "checkpoint.h5"))])
    resumed = mgpu_io.load_model(tmp_path / "checkpoint.h5")  # was "does not translate the state of Custom>Adam"
    assert resumed.optimizer.__class__.__name__ == "Adam"
    assert int(resumed.optimizer.iterations) == 12
    slots = [np.asarray(v) for v in wrapper.optimizer.variables if "/m/" in v.name or "/v/" in v.name]
    ours = [np.asarray(v) for v in resumed.optimizer.variables if v.path.endswith(("_momentum", "_velocity"))]
    assert len(ours) == len(slots) == 8
    for mine, theirs in zip(ours, slots):
        np.testing.assert_array_equal(mine, theirs)


def test_two_models_loaded_from_one_file_share_no_memory():
    # load_model hands the arrays it reads to TensorFlow without a copy: each must belong to one variable only.
    entry = WITH_STATE[0].values[0]
    first, second = mgpu_io.load_model(fixture_path(entry)), mgpu_io.load_model(fixture_path(entry))
    weights, state = [w.copy() for w in second.get_weights()], [s.copy() for s in _state(second)]
    xs, ys = fixture_batch(entry)
    first.fit(xs if len(xs) > 1 else xs[0], ys if len(ys) > 1 else ys[0], epochs=1, verbose=0)
    gc.collect()
    assert any(not np.array_equal(a, b) for a, b in zip(first.get_weights(), weights))  # training moved it
    for before, after in zip(weights + state, second.get_weights() + _state(second), strict=True):
        np.testing.assert_array_equal(before, after)  # and left the other alone


def test_weights_of_a_mebibyte_and_more_and_their_state_load_exactly_and_train(tmp_path):
    # load_model reads large weights into memory mapped for them and hands it to the backend (keras/load.py).
    tf_keras = pytest.importorskip("tf_keras")
    inputs = tf_keras.Input((512,), name="inp")
    wide = tf_keras.layers.Dense(1024, name="wide")(inputs)  # a 2 MiB kernel, and 2 MiB Adam slots
    template = tf_keras.Model(inputs, tf_keras.layers.Dense(10, activation="softmax", name="out")(wide),
                              name="template")
    wrapper = parallel.make_parallel(tf_keras, template, 2)
    wrapper.compile(optimizer=tf_keras.optimizers.Adam(1e-3), loss="categorical_crossentropy")
    x = np.random.RandomState(0).standard_normal((8, 512)).astype("float32")
    y = np.eye(10, dtype="float32")[np.arange(8)]
    wrapper.fit(x, y, batch_size=8, epochs=2, verbose=0)
    wrapper.save(tmp_path / "wide.h5")

    model = mgpu_io.load_model(tmp_path / "wide.h5")
    for ours, theirs in zip(model.get_weights(), template.get_weights(), strict=True):
        np.testing.assert_array_equal(ours, theirs)
    slots = sorted((v.name, np.asarray(v)) for v in wrapper.optimizer.variables if "/m/" in v.name or "/v/" in v.name)
    ours = [np.asarray(v) for v in model.optimizer.variables if v.path.endswith(("_momentum", "_velocity"))]
    assert sorted(a.nbytes for a in ours) == sorted(a.nbytes for _, a in slots)
    assert max(a.nbytes for a in ours) >= 1 << 20
    for mine in ours:
        assert any(mine.shape == theirs.shape and np.array_equal(mine, theirs) for _, theirs in slots)
    np.testing.assert_allclose(model.predict(x, verbose=0), template.predict(x, verbose=0), atol=1e-5)
    before = model.get_weights()[0].copy()
    model.fit(x, y, verbose=0)
    assert int(model.optimizer.iterations) == 3 and not np.array_equal(model.get_weights()[0], before)


# --- each slot goes to the weight it belongs to, by the writer's names --------------------------------------------

OPTIMIZERS = Path(__file__).resolve().parents[2] / "fixtures" / "optimizers"


def _momentums(model):
    return {v.path: np.asarray(model.optimizer._momentums[i]) for i, v in enumerate(model.trainable_variables)}


def test_a_slot_goes_to_the_weight_its_name_says_whatever_the_configs_order(tmp_path):
    """tf.keras named each slot after its weight (`training/Adam/bn_1/gamma/m:0`): a config whose layers are listed
    in another order (bn_2 before bn_1, same shapes) still gives each weight its own slots. By position alone, bn_1
    and bn_2 swapped their Adam state without a word."""
    import json
    import shutil

    import h5py

    source = OPTIMIZERS / "tfk115_conv_bn_adam.h5"
    swapped = tmp_path / "swapped.h5"
    shutil.copy(source, swapped)
    with h5py.File(swapped, "r+") as h5:
        config = json.loads(h5.attrs["model_config"])
        layers = config["config"]["layers"]
        names = [layer["config"]["name"] for layer in layers]
        i, j = names.index("bn_1"), names.index("bn_2")
        layers[i], layers[j] = layers[j], layers[i]
        h5.attrs["model_config"] = json.dumps(config).encode()
    original, reordered = _momentums(mgpu_io.load_model(source)), _momentums(mgpu_io.load_model(swapped))
    assert sorted(original) == sorted(reordered)
    assert [path for path in original if not np.array_equal(original[path], reordered[path])] == []


def test_a_slot_that_does_not_fit_its_weight_is_refused_by_the_weights_name(tmp_path):
    import shutil

    import h5py

    source = tmp_path / "bad.h5"
    shutil.copy(OPTIMIZERS / "tfk115_conv_bn_adam.h5", source)
    with h5py.File(source, "r+") as h5:
        group = h5["optimizer_weights"]
        name = next(n for n in group.attrs["weight_names"] if b"bn_2/gamma/m" in n).decode()
        path = name
        data = group[path][()]
        del group[path]
        group[path] = np.concatenate([data, data])  # twice as long as bn_2's gamma
    with pytest.warns(mgpu_io.MgpuIOWarning, match=r"The saved optimizer state is not restored: the stored Adam "
                      r"momentum slot of weight 'bn_2/gamma' has shape \(\d+,\), but the weight has \(\d+,\)"):
        model = mgpu_io.load_model(source)
    assert int(model.optimizer.iterations) == 0  # a fresh state, said so


KERAS3 = Path(__file__).resolve().parents[2] / "fixtures" / "keras3_optimizer"


def _reordered(source, target, first, second):
    """A copy of ``source`` whose config lists layer ``first`` where ``second`` was and the other way round."""
    import json
    import shutil

    import h5py

    shutil.copy(source, target)
    with h5py.File(target, "r+") as h5:
        config = json.loads(h5.attrs["model_config"])
        layers = config["config"]["layers"]
        names = [layer["config"]["name"] for layer in layers]
        i, j = names.index(first), names.index(second)
        layers[i], layers[j] = layers[j], layers[i]
        h5.attrs["model_config"] = json.dumps(config).encode()
    return target


def _stored_slots(path):
    import h5py

    with h5py.File(path, "r") as h5:
        group = h5["optimizer_weights"]
        return {str(name.decode() if isinstance(name, bytes) else name): group[name][()]
                for name in group.attrs["weight_names"]}


@pytest.mark.parametrize("reorder", [False, True], ids=["as-written", "bn-2-listed-first"])
def test_a_keras3_slot_goes_to_the_weight_its_flattened_path_names(reorder, tmp_path):
    """Keras 3.15 saves each slot in a .h5 named after its weight's path with '/' made '_'
    (`adam/bn_1_gamma_momentum`; fixtures/keras3_optimizer, written by the real Keras 3.15). Each weight gets the
    slot its name says, whatever order the config lists the layers in: by the config's order, bn_1 and bn_2 (same
    shapes) silently took each other's Adam state."""
    source = KERAS3 / "k315_conv_bn_adam.h5"
    path = _reordered(source, tmp_path / "reordered.h5", "bn_1", "bn_2") if reorder else source
    stored = _stored_slots(source)
    with warnings.catch_warnings():
        warnings.simplefilter("error", mgpu_io.MgpuIOWarning)
        model = mgpu_io.load_model(path)
    assert int(model.optimizer.iterations) == int(stored["adam/iteration"])
    for i, variable in enumerate(model.trainable_variables):
        flat = variable.path.replace("/", "_")
        np.testing.assert_array_equal(np.asarray(model.optimizer._momentums[i]), stored[f"adam/{flat}_momentum"])
        np.testing.assert_array_equal(np.asarray(model.optimizer._velocities[i]), stored[f"adam/{flat}_velocity"])


def test_a_tf_keras_2_11_slot_goes_to_the_weight_its_name_says_whatever_the_configs_order(tmp_path):
    """TF 2.11+'s optimizers (and tf_keras') name a slot role first, `Adam/m/tiny/kernel:0`. The config lists `out`
    before `tiny` here: by its order the state fitted no weight and was dropped with a warning."""
    source = OPTIMIZERS / "tfk215_adam.h5"
    path = _reordered(source, tmp_path / "reordered.h5", "tiny", "out")
    stored = {name.split(":")[0]: value for name, value in _stored_slots(source).items()}
    with warnings.catch_warnings():
        warnings.simplefilter("error", mgpu_io.MgpuIOWarning)
        model = mgpu_io.load_model(path)
    for i, variable in enumerate(model.trainable_variables):
        np.testing.assert_array_equal(np.asarray(model.optimizer._momentums[i]), stored[f"Adam/m/{variable.path}"])


def test_a_keras3_slot_that_does_not_fit_its_weight_is_refused_by_the_weights_name(tmp_path):
    import shutil

    import h5py

    source = tmp_path / "bad.h5"
    shutil.copy(KERAS3 / "k315_conv_bn_adam.h5", source)
    with h5py.File(source, "r+") as h5:
        group = h5["optimizer_weights"]
        data = group["adam/bn_2_gamma_momentum"][()]
        del group["adam/bn_2_gamma_momentum"]
        group["adam/bn_2_gamma_momentum"] = np.concatenate([data, data])
    with pytest.warns(mgpu_io.MgpuIOWarning, match=r"The saved optimizer state is not restored: the stored Adam "
                      r"momentum slot of weight 'bn_2/gamma' has shape \(16,\), but the weight has \(8,\)"):
        model = mgpu_io.load_model(source)
    assert int(model.optimizer.iterations) == 0
