"""Training goes on as the original would: each optimizer of the era resumes with its state and its writer's rule.

The real writers (Keras 1.2.2, Keras 2.2.4, tf.keras 1.15, 2.3, 2.10 and 2.15, tf_keras; fixtures/optimizers, made by
fixtures/generate/optimizers) trained a small model 1000 steps with each optimizer at non-default arguments (one layer
with tiny gradients, where epsilon matters; `decay`; amsgrad, nesterov, centered, momentum), saved it with its state,
loaded their own file and took K more steps. ``mgpu_io.load_model(...)`` and the same K steps must land where the
writer landed: each weight tensor's change within 1e-3 of the writer's change (plus 4 float32 spacings of the
tensor's weights; 2e-3 for the one fixture ``resume_rules.WIDER`` names, with its measured reason: see
tests/support/resume_rules.py), on TensorFlow here; on JAX in ``.venv-jax``, one fixture of
each case and class rebuilt and every ``conv_bn`` RMSprop one (``resume_rules.on_another_backend``).
"""

import json
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

sys.path.insert(0, str(Path(__file__).parents[1] / "support"))
import resume_rules
from jax_env import JAX_PYTHON, jax_environment
from resume_rules import KNOWN_GAPS, entries, faithful_class, loaded, on_another_backend, resume
from tiers import FULL_MATRIX, resume_sample

import mgpu_io

keras = pytest.importorskip("keras")
SAMPLE = resume_sample(entries())  # make test's fixtures; make test-all resumes every one (tests/support/tiers.py)
ENTRIES = [pytest.param(entry, id=entry["file"], marks=[] if entry["file"] in SAMPLE else [getattr(pytest.mark,
                                                                                                  FULL_MATRIX)])
           for entry in entries()]
#: The dense model's fixtures: the .keras output's tests (its Keras 2 hard_sigmoid gates are rescaled weights, made
#: exact for predictions only, so a recurrent model's .keras output does not resume where the writer did).
DENSE = [e for e in ENTRIES if e.values[0].get("model", "dense") == "dense"]


def _gap(entry):
    """``entry`` expected to fail where resume_rules.KNOWN_GAPS says why (strictly)."""
    reason = KNOWN_GAPS.get(entry.values[0]["file"])
    if reason is None:
        return entry
    return pytest.param(*entry.values, id=entry.id, marks=[*entry.marks, pytest.mark.xfail(reason=reason, strict=True)])
#: What each fixture's ``load_model`` gave before any training (its optimizer's class, configuration, step, learning
#: rate and variables, and the model's weights), kept by the test that loads it so that the decay test and the
#: ``.keras`` output's test compare against the same load instead of loading the file again.
AT_LOAD = {}


def _at_load(model):
    config = {key: value for key, value in model.optimizer.get_config().items() if key != "name"}
    return {"iterations": int(model.optimizer.iterations), "learning_rate": float(model.optimizer.learning_rate),
            "class": type(model.optimizer).__name__, "config": config,
            "variables": [np.array(variable) for variable in model.optimizer.variables],
            "weights": [np.array(weight) for weight in model.get_weights()]}


def _loaded_at_load(entry):
    if entry["file"] not in AT_LOAD:  # run on its own (-k): load it here
        AT_LOAD[entry["file"]] = _at_load(loaded(entry)[0])
    return AT_LOAD[entry["file"]]


@pytest.mark.parametrize("entry", [_gap(entry) for entry in ENTRIES])
def test_training_resumes_where_the_writer_itself_resumed(entry):
    model, said = loaded(entry)
    AT_LOAD[entry["file"]] = _at_load(model)
    assert said == []  # the whole state is restored: no warning
    assert type(model.optimizer).__name__ == faithful_class(entry)
    assert int(model.optimizer.iterations) == (entry["iterations_reloaded"] or 0)
    worst, within = resume(model, entry)
    assert within, worst


@pytest.mark.parametrize("entry", [e for e in ENTRIES if "decay" in e.values[0]["case"]])
def test_keras2s_decay_continues_from_the_stored_step(entry):
    at_load = _loaded_at_load(entry)
    config = entry["optimizer_config"]["config"]
    initial = config.get("lr", config.get("learning_rate"))
    expected = initial / (1 + config["decay"] * at_load["iterations"])
    assert abs(at_load["learning_rate"] - expected) <= 1e-6 * expected


def test_keras_2_nadam_keeps_its_schedule_decay_and_rmsprop_its_epsilon_outside_the_root():
    nadam, _ = loaded(next(e for e in entries() if e["file"] == "k224_nadam.h5"))
    assert nadam.optimizer.schedule_decay == 0.004
    rmsprop, _ = loaded(next(e for e in entries() if e["file"] == "k224_rmsprop.h5"))
    assert rmsprop.optimizer.get_config()["epsilon"] == pytest.approx(1e-7)


# Adagrad's accumulator only grows (from 0, or tf.keras' 0.1): after 1000 steps, epsilon inside or outside the root
# changes its step by 6.3e-3 of the change at most (Keras 1.2.2's epsilon 1e-8), 1e-5 for the others: its rule is
# kept, but these fixtures cannot show it.
@pytest.mark.parametrize(
    "entry",
    [e for e in DENSE if faithful_class(e.values[0]) not in (e.values[0]["optimizer"], "LegacyAdagrad")],
)
def test_keras3s_own_class_would_resume_elsewhere(entry, tmp_path):
    """The check can fail: the same state under Keras 3's own class (what a .keras output holds) lands off."""
    out = tmp_path / "model.keras"
    mgpu_io.unwrap(resume_rules.OPTIMIZERS / entry["file"], out, allow_plain=True)
    model = keras.models.load_model(out)
    assert type(model.optimizer).__name__ == entry["optimizer"]
    worst, within = resume(model, entry)
    assert not within, worst


KERAS_CLASS = [e for e in DENSE if faithful_class(e.values[0]) == e.values[0]["optimizer"]]
#: One fixture per writer whose ``.keras`` output also takes the writer's K steps in plain Keras 3, end to end.
TRAINED = {e.values[0]["writer"]: e.values[0]["file"] for e in reversed(KERAS_CLASS)}


@pytest.mark.parametrize("entry", KERAS_CLASS)
def test_a_keras_output_keeps_the_guarantee_where_keras3s_class_computes_the_writers_rule(entry, tmp_path):
    """Plain Keras 3 loads the ``.keras`` output with the optimizer ``load_model`` rebuilt: the same class and
    configuration, the same state and weights, bit for bit. ``load_model``'s resume is proven above, so the output
    resumes where the writer did; one fixture per writer also takes the K steps to show it."""
    out = tmp_path / "model.keras"
    mgpu_io.unwrap(resume_rules.OPTIMIZERS / entry["file"], out, allow_plain=True)
    model = keras.models.load_model(out)  # plain Keras 3
    plain, ours = _at_load(model), _loaded_at_load(entry)
    assert (plain["class"], plain["config"], plain["iterations"]) == (ours["class"], ours["config"], ours["iterations"])
    for theirs, mine in zip(plain["variables"] + plain["weights"], ours["variables"] + ours["weights"], strict=True):
        np.testing.assert_array_equal(theirs, mine)
    if TRAINED[entry["writer"]] == entry["file"]:
        worst, within = resume(model, entry)
        assert within, worst


@pytest.mark.parametrize("name", ["k224_rmsprop_decay.h5", "tfk115_nadam.h5", "k224_adagrad.h5"])
def test_a_checkpoint_of_a_resumed_model_resumes_with_the_same_rule_and_state(name, tmp_path):
    entry = next(e for e in entries() if e["file"] == name)
    model, _ = loaded(entry)
    checkpoint = tmp_path / "checkpoint.h5"
    model.save(checkpoint)  # what BaseModelCheckpoint writes for a template compiled with this optimizer
    again = mgpu_io.load_model(checkpoint)
    assert type(again.optimizer).__name__ == type(model.optimizer).__name__
    assert int(again.optimizer.iterations) == int(model.optimizer.iterations)
    for ours, theirs in zip(model.optimizer.variables, again.optimizer.variables, strict=True):
        np.testing.assert_array_equal(np.asarray(ours), np.asarray(theirs))
    assert resume(again, entry)[1]


@pytest.mark.skipif(not JAX_PYTHON.exists(), reason="no .venv-jax: `make jax-env` (or `make test`) builds it")
def test_training_resumes_where_the_writer_resumed_it_on_jax():
    done = subprocess.run([str(JAX_PYTHON), str(Path(resume_rules.__file__))], cwd=resume_rules.ROOT,
                          env=jax_environment(), capture_output=True, text=True, timeout=1200)
    assert done.returncode == 0, done.stderr[-3000:]
    measured = json.loads(done.stdout.strip().splitlines()[-1])
    assert measured["backend"] == "jax" and not measured["tensorflow_imported"]
    assert set(measured["fixtures"]) == {entry["file"] for entry in on_another_backend(entries())}
    off = {name: m for name, m in measured["fixtures"].items() if not m["within"] or m["warnings"]}
    assert off == {}

