"""A user trains a data-parallel wrapper and checkpoints the model they will deploy: `BaseModelCheckpoint`
(Keras 3, in-process; the other stacks are in test_checkpoint_stacks.py)."""

import contextlib
import functools
import os
import signal
import subprocess
import sys
import textwrap

import numpy as np
import pytest
from helpers import ROOT

import mgpu_io
from mgpu_io.anykeras.callbacks import BaseModelCheckpointError, find_base_model

keras = pytest.importorskip("keras")
from parallel import data, make_parallel, template  # noqa: E402


def trained(callbacks, epochs=2, replicas=2, base=None, **fit):
    base = base or template(keras)
    wrapper = make_parallel(keras, base, replicas)
    wrapper.compile(optimizer=keras.optimizers.Adam(0.01), loss="categorical_crossentropy")
    x, y = data()
    wrapper.fit(x, y, batch_size=8, epochs=epochs, verbose=0, shuffle=False, callbacks=callbacks, **fit)
    return base, wrapper


def test_each_epoch_saves_the_template_and_it_loads_anywhere(tmp_path):
    base, wrapper = trained([mgpu_io.BaseModelCheckpoint(str(tmp_path / "ckpt-{epoch:02d}.keras"))])
    assert sorted(os.listdir(tmp_path)) == ["ckpt-01.keras", "ckpt-02.keras"]
    saved = keras.models.load_model(tmp_path / "ckpt-02.keras")  # plain Keras, safe mode on
    assert saved.name == "template" and [l.name for l in saved.layers] == ["inp", "hidden", "out"]
    x, _ = data()
    np.testing.assert_allclose(saved.predict(x, verbose=0), base.predict(x, verbose=0), atol=1e-6)


def test_h5_checkpoints_load_with_mgpu_io_too(tmp_path):
    base, _ = trained([mgpu_io.BaseModelCheckpoint(str(tmp_path / "ckpt.h5"))])
    x, _ = data()
    np.testing.assert_allclose(mgpu_io.load_model(tmp_path / "ckpt.h5").predict(x, verbose=0),
                               base.predict(x, verbose=0), atol=1e-6)


def test_the_checkpoint_carries_the_wrappers_optimizer_state(tmp_path):
    _, wrapper = trained([mgpu_io.BaseModelCheckpoint(str(tmp_path / "ckpt.keras"))])
    saved = keras.models.load_model(tmp_path / "ckpt.keras")
    assert int(saved.optimizer.iterations) == int(wrapper.optimizer.iterations) == 12
    for mine, theirs in zip(saved.optimizer.variables[2:], wrapper.optimizer.variables[2:]):
        np.testing.assert_allclose(np.asarray(mine), np.asarray(theirs))


def test_resuming_from_epoch_k_matches_an_uninterrupted_run(tmp_path):
    x, y = data()
    uninterrupted, _ = trained([], epochs=3)
    trained([mgpu_io.BaseModelCheckpoint(str(tmp_path / "ckpt-{epoch}.keras"))], epochs=2)
    resumed = keras.models.load_model(tmp_path / "ckpt-2.keras")
    resumed.fit(x, y, batch_size=8, epochs=1, verbose=0, shuffle=False)
    for a, b in zip(resumed.weights, uninterrupted.weights):
        np.testing.assert_allclose(np.asarray(a), np.asarray(b), atol=1e-5)


def test_without_the_optimizer_state_resuming_drifts(tmp_path):
    """The resume check can fail: a fresh optimizer after epoch 2 ends elsewhere."""
    x, y = data()
    uninterrupted, _ = trained([], epochs=3)
    trained([mgpu_io.BaseModelCheckpoint(str(tmp_path / "ckpt-{epoch}.keras"))], epochs=2)
    resumed = keras.models.load_model(tmp_path / "ckpt-2.keras")
    resumed.compile(optimizer=keras.optimizers.Adam(0.01), loss="categorical_crossentropy")
    resumed.fit(x, y, batch_size=8, epochs=1, verbose=0, shuffle=False)
    assert max(np.abs(np.asarray(a) - np.asarray(b)).max()
               for a, b in zip(resumed.weights, uninterrupted.weights)) > 1e-3


def test_an_integer_save_freq_saves_the_template_too(tmp_path):
    trained([mgpu_io.BaseModelCheckpoint(str(tmp_path / "e{epoch}-b{batch}.keras"), save_freq=4)])
    files = sorted(os.listdir(tmp_path))
    assert files == ["e1-b4.keras", "e2-b2.keras", "e2-b6.keras"]  # 6 batches an epoch, every 4th
    assert all(keras.models.load_model(tmp_path / f).name == "template" for f in files)


def test_the_cpu_relocation_clone_is_saved_not_the_untrained_original(tmp_path):
    original = template(keras)
    clone = keras.models.clone_model(original)  # what multi_gpu_model(cpu_relocation=True) trains
    clone.set_weights(original.get_weights())
    _, wrapper = trained([mgpu_io.BaseModelCheckpoint(str(tmp_path / "ckpt.keras"))], base=clone)
    saved = keras.models.load_model(tmp_path / "ckpt.keras")
    for a, b in zip(saved.weights, clone.weights):
        np.testing.assert_array_equal(np.asarray(a), np.asarray(b))
    assert any(np.abs(np.asarray(a) - np.asarray(b)).max() > 1e-3 for a, b in zip(saved.weights, original.weights))


def test_a_base_model_that_shares_no_weights_is_refused():
    original = template(keras)
    wrapper = make_parallel(keras, keras.models.clone_model(original), 2)
    with pytest.raises(BaseModelCheckpointError, match="base_model shares no weights with the model being trained"):
        mgpu_io.BaseModelCheckpoint("x.keras", base_model=original).set_model(wrapper)


def test_an_ambiguous_model_is_an_error_not_a_guess():
    a, b = template(keras, "a"), template(keras, "b")
    inp = keras.Input((6,))
    halves = [keras.layers.Lambda(lambda t, i=i: t[i::2])(inp) for i in range(2)]
    merged = keras.layers.Concatenate(axis=0)([a(halves[0]), b(halves[1])])
    with pytest.raises(BaseModelCheckpointError, match="2 nested models with weights"):
        find_base_model(keras.Model(inp, merged))


def _saved_by_both(tmp_path, epochs, during_fit=contextlib.nullcontext, **options):
    """The folders where BaseModelCheckpoint and Keras' ModelCheckpoint saved the same plain model, trained on the same
    data, with ``options`` (``save_best_only=True``); ``during_fit`` wraps each fit (e.g. an expected warning)."""
    x, y = data()
    ours, theirs = tmp_path / "ours", tmp_path / "theirs"
    for folder, make in ((ours, mgpu_io.BaseModelCheckpoint), (theirs, keras.callbacks.ModelCheckpoint)):
        model = template(keras)
        model.compile(optimizer=keras.optimizers.SGD(0.5), loss="categorical_crossentropy")
        callback = make(str(folder / "m-{epoch}.keras"), save_best_only=True, **options)
        with during_fit():
            model.fit(x, y, batch_size=48, epochs=epochs, verbose=0, shuffle=False, callbacks=[callback])
    return ours, theirs


def test_on_a_plain_model_it_behaves_like_model_checkpoint(tmp_path):
    ours, theirs = _saved_by_both(tmp_path, 4, monitor="loss")
    assert sorted(os.listdir(ours)) == sorted(os.listdir(theirs))
    for name in os.listdir(ours):
        a, b = keras.models.load_model(ours / name), keras.models.load_model(theirs / name)
        for va, vb in zip(a.weights, b.weights):
            np.testing.assert_array_equal(np.asarray(va), np.asarray(vb))


def test_weights_with_nan_never_replace_a_good_checkpoint(tmp_path):
    path = tmp_path / "ckpt.keras"

    class Poison(keras.callbacks.Callback):
        def on_epoch_end(self, epoch, logs=None):
            if epoch == 1:  # before the checkpoint of epoch 2 is taken
                kernel = self.model.layers[-2].get_layer("hidden").kernel
                kernel.assign(np.full(kernel.shape, np.nan, "float32"))

    with pytest.warns(UserWarning, match=r"Not saving .*ckpt.keras: the previous checkpoint is kept. Weights of the "
                                         r"base model hold NaN or Inf.* Lost .*: hidden/kernel\."):
        base, _ = trained([Poison(), mgpu_io.BaseModelCheckpoint(str(path))])
    saved = keras.models.load_model(path)  # still the epoch-1 checkpoint
    assert np.isfinite(np.asarray(saved.get_layer("hidden").kernel)).all()


KILL_MID_SAVE = textwrap.dedent("""
    import os, signal, sys
    sys.path[:0] = [{tests!r}, {root!r}]
    import keras, mgpu_io
    from parallel import data, make_parallel, template

    base = template(keras)
    wrapper = make_parallel(keras, base, 2)
    wrapper.compile(optimizer="adam", loss="categorical_crossentropy")
    real_save = keras.Model.save
    calls = []

    def save(self, filepath, *args, **kwargs):
        calls.append(filepath)
        if len(calls) == 2:  # the second checkpoint: write half of it, then the process dies
            real_save(self, filepath, *args, **kwargs)
            with open(filepath, "r+b") as handle:
                handle.truncate(os.path.getsize(filepath) // 2)
            os.kill(os.getpid(), signal.SIGKILL)
        return real_save(self, filepath, *args, **kwargs)

    keras.Model.save = save
    x, y = data()
    wrapper.fit(x, y, batch_size=8, epochs=3, verbose=0, callbacks=[mgpu_io.BaseModelCheckpoint({path!r})])
""")


def test_a_process_killed_in_the_middle_of_a_save_leaves_the_previous_checkpoint(tmp_path):
    path = tmp_path / "ckpt.keras"
    script = KILL_MID_SAVE.format(tests=str(ROOT / "tests" / "support"), root=str(ROOT), path=str(path))
    result = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, timeout=300,
                            env=dict(os.environ, TF_CPP_MIN_LOG_LEVEL="3"))
    assert result.returncode == -signal.SIGKILL, result.stderr[-2000:]
    saved = keras.models.load_model(path)  # the epoch-1 checkpoint, whole
    assert saved.name == "template"
    leftovers = [p.name for p in tmp_path.iterdir() if p.name != "ckpt.keras"]
    assert len(leftovers) == 1 and leftovers[0].startswith(".ckpt.keras.")  # the half-written temporary file


def test_a_monitor_missing_from_the_logs_is_handled_as_keras3s_model_checkpoint_does(tmp_path):
    """Keras 3.x warns and saves every time (tf_keras and Keras 2 skip): the callback follows the Keras it runs in."""
    expect_warning = functools.partial(pytest.warns, UserWarning,
                                       match="Can save best model only with val_not_logged available")
    ours, theirs = _saved_by_both(tmp_path, 2, during_fit=expect_warning, monitor="val_not_logged", mode="min")
    assert sorted(os.listdir(ours)) == sorted(os.listdir(theirs)) == ["m-1.keras", "m-2.keras"]
