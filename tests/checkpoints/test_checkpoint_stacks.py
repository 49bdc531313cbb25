"""BaseModelCheckpoint where wrappers and data parallelism really run: logical CPU devices, MirroredStrategy,
MultiWorkerMirroredStrategy, tf_keras, and Keras 2.2.4's own multi_gpu_model on Python 3.7.

The stacks that configure devices run outside this process (TensorFlow fixes its devices at start-up): those on
four logical CPU devices one after the other in one process, each multi-worker worker and the legacy stack in their
own. The checkpoint each writes is then loaded here, in Keras 3 on Python 3.11, and must predict what the trained
model did.
"""

import json
import os
import socket
import subprocess
import sys
import textwrap

import numpy as np
import pytest
import parallel
from helpers import ROOT

import mgpu_io

keras = pytest.importorskip("keras")
LEGACY_PYTHON = ROOT / ".venv-legacy" / "bin" / "python"
ENV = dict(os.environ, TF_CPP_MIN_LOG_LEVEL="3", PYTHONPATH=os.pathsep.join([str(ROOT / "tests" / "support"), str(ROOT)]))

PRELUDE = """
import json, os, sys, warnings
import numpy as np
import tensorflow as tf
cpus = tf.config.list_physical_devices("CPU")
tf.config.set_logical_device_configuration(cpus[0], [tf.config.LogicalDeviceConfiguration()] * 4)
import keras, mgpu_io
from parallel import data, make_parallel, template
out = sys.argv[1]
"""


def run_script(body, *args, python=sys.executable, timeout=600, env=ENV):
    result = subprocess.run([str(python), "-c", textwrap.dedent(body)] + [str(a) for a in args],
                            capture_output=True, text=True, env=env, timeout=timeout)
    assert result.returncode == 0, result.stderr[-3000:]
    return result


def assert_checkpoint_predicts(path, predictions, x):
    for model in (keras.models.load_model(path), mgpu_io.load_model(path)):
        np.testing.assert_allclose(model.predict(x, verbose=0), predictions, atol=1e-6)


#: The stacks on this process's four logical CPU devices, run one after the other in one process (each pays
#: TensorFlow's and Keras' import once, not four times): each writes into its own folder, and a stack that fails
#: leaves its traceback there instead of stopping the others.
WRAPPER = """
base = template(keras)
wrapper = make_parallel(keras, base, replicas, devices=["/cpu:%d" % i for i in range(replicas)])
wrapper.compile(optimizer="adam", loss="categorical_crossentropy")
x, y = data()
wrapper.fit(x, y, batch_size=12, epochs=2, verbose=0,
            callbacks=[mgpu_io.BaseModelCheckpoint(os.path.join(out, "ckpt.keras"))])
np.save(os.path.join(out, "predictions.npy"), base.predict(x, verbose=0))
"""
STACKS = {
    **{f"wrapper-{replicas}": f"replicas = {replicas}\n" + WRAPPER for replicas in (2, 3, 4)},
    "mirrored": """
strategy = tf.distribute.MirroredStrategy(["/cpu:0", "/cpu:1"])
with strategy.scope():
    model = template(keras)
    model.compile(optimizer="adam", loss="categorical_crossentropy")
x, y = data()
model.fit(x, y, batch_size=12, epochs=2, verbose=0,
          callbacks=[mgpu_io.BaseModelCheckpoint(os.path.join(out, "ckpt-{epoch}.keras"))])
np.save(os.path.join(out, "predictions.npy"), model.predict(x, verbose=0))
""",
}

RUN_STACKS = """
import traceback
stacks, root = json.loads(sys.argv[2]), out
for name, body in stacks.items():
    out = os.path.join(root, name)
    os.makedirs(out)
    try:
        exec(body)
    except BaseException:
        with open(os.path.join(out, "error.txt"), "w") as error:
            error.write(traceback.format_exc())
    keras.backend.clear_session()
"""


@pytest.fixture(scope="module")
def stacks(tmp_path_factory):
    """The folder of each stack's run: ``{name: folder}``."""
    root = tmp_path_factory.mktemp("stacks")
    run_script(PRELUDE + RUN_STACKS, root, json.dumps(STACKS))
    return {name: root / name for name in STACKS}


def _ran(folder):
    error = folder / "error.txt"
    assert not error.exists(), error.read_text()[-3000:]
    return folder


@pytest.mark.parametrize("replicas", [2, 3, 4])
def test_a_wrapper_over_logical_cpu_devices(stacks, replicas):
    folder = _ran(stacks[f"wrapper-{replicas}"])
    x, _ = parallel.data()
    assert_checkpoint_predicts(folder / "ckpt.keras", np.load(folder / "predictions.npy"), x)


def test_a_model_trained_under_mirrored_strategy(stacks):
    folder = _ran(stacks["mirrored"])
    x, _ = parallel.data()
    assert sorted(p.name for p in folder.glob("ckpt-*")) == ["ckpt-1.keras", "ckpt-2.keras"]
    assert_checkpoint_predicts(folder / "ckpt-2.keras", np.load(folder / "predictions.npy"), x)


# Keras 3.15 cannot create a layer's variables under MultiWorkerMirroredStrategy (measured: "Attempt to convert a
# value (PerReplica...) with an unsupported type ... to a Tensor" at the first Dense), so two workers train with
# tf_keras, which supports it; the callback's chief rule is the same code for both.
MULTI_WORKER = """
import json, os, sys
os.environ["TF_CONFIG"] = json.dumps({"cluster": {"worker": sys.argv[3].split(",")},
                                      "task": {"type": "worker", "index": int(sys.argv[2])}})
import numpy as np
import tensorflow as tf
import tf_keras as keras
import mgpu_io
from parallel import data
out = sys.argv[1]
strategy = tf.distribute.MultiWorkerMirroredStrategy()
with strategy.scope():
    inp = keras.Input((6,), name="inp")
    hidden = keras.layers.Dense(8, activation="tanh", name="hidden")(inp)
    model = keras.Model(inp, keras.layers.Dense(3, activation="softmax", name="out")(hidden), name="template")
    model.compile(optimizer="adam", loss="categorical_crossentropy")
x, y = data()
model.fit(x, y, batch_size=12, epochs=2, verbose=0, shuffle=False,
          callbacks=[mgpu_io.BaseModelCheckpoint(os.path.join(out, "ckpt.h5"))])
np.save(os.path.join(out, "predictions-%s.npy" % sys.argv[2]), model.predict(x, verbose=0))
"""


def free_ports(count):
    sockets = [socket.socket() for _ in range(count)]
    for s in sockets:
        s.bind(("127.0.0.1", 0))
    ports = [s.getsockname()[1] for s in sockets]
    for s in sockets:
        s.close()
    return ports


def test_multi_worker_mirrored_strategy_only_the_chief_writes(tmp_path):
    cluster = ",".join("127.0.0.1:%d" % port for port in free_ports(2))
    workers = [subprocess.Popen([sys.executable, "-c", MULTI_WORKER, str(tmp_path), str(i), cluster],
                                stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=ENV)
               for i in range(2)]
    for worker in workers:
        try:
            _, stderr = worker.communicate(timeout=400)
        except subprocess.TimeoutExpired:
            for w in workers:
                w.kill()
            raise
        assert worker.returncode == 0, stderr[-3000:]
    assert sorted(p.name for p in tmp_path.iterdir()) == ["ckpt.h5", "predictions-0.npy", "predictions-1.npy"]
    x, _ = parallel.data()
    assert_checkpoint_predicts(tmp_path / "ckpt.h5", np.load(tmp_path / "predictions-0.npy"), x)


def test_tf_keras_wrapper(tmp_path):
    tf_keras = pytest.importorskip("tf_keras")
    from parallel import data, make_parallel, template

    base = template(tf_keras)
    wrapper = make_parallel(tf_keras, base, 2)
    wrapper.compile(optimizer=tf_keras.optimizers.Adam(0.01), loss="categorical_crossentropy")
    x, y = data()
    wrapper.fit(x, y, batch_size=8, epochs=2, verbose=0,
                callbacks=[mgpu_io.BaseModelCheckpoint(str(tmp_path / "ckpt.h5"))])
    saved = tf_keras.models.load_model(tmp_path / "ckpt.h5")
    assert saved.name == "template" and int(saved.optimizer.iterations) == 12
    np.testing.assert_allclose(saved.predict(x, verbose=0), base.predict(x, verbose=0), atol=1e-6)
    np.testing.assert_allclose(mgpu_io.load_model(tmp_path / "ckpt.h5").predict(x, verbose=0),
                               base.predict(x, verbose=0), atol=1e-6)


LEGACY = """
import json, os, sys, warnings
warnings.simplefilter("always")
import numpy as np
import tensorflow as tf
import keras
from keras import backend as K
from keras.utils import multi_gpu_utils
multi_gpu_utils._get_available_devices = lambda: ["/cpu:0", "/gpu:0", "/gpu:1"]
K.set_session(tf.Session(config=tf.ConfigProto(allow_soft_placement=True)))
from mgpu_io import BaseModelCheckpoint
out = sys.argv[1]
inp = keras.layers.Input((6,), name="inp")
hidden = keras.layers.Dense(8, activation="tanh", name="hidden")(inp)
base = keras.models.Model(inp, keras.layers.Dense(3, activation="softmax", name="out")(hidden), name="template")
parallel = multi_gpu_utils.multi_gpu_model(base, gpus=2)
parallel.compile(optimizer="adam", loss="categorical_crossentropy")
rng = np.random.RandomState(3)
x = rng.standard_normal((50, 6)).astype("float32")   # 50 = 6 batches of 8 + a last batch of 2: 1 per replica
y = np.eye(3, dtype="float32")[rng.randint(0, 3, 50)]
with warnings.catch_warnings(record=True) as caught:
    parallel.fit(x, y, batch_size=8, epochs=2, verbose=0,
                 callbacks=[BaseModelCheckpoint(os.path.join(out, "ckpt-{epoch}.h5"))])
np.save(os.path.join(out, "x.npy"), x)
np.save(os.path.join(out, "predictions.npy"), base.predict(x))
json.dump([str(w.message) for w in caught if "replica" in str(w.message)], open(os.path.join(out, "w.json"), "w"))
"""


@pytest.mark.skipif(not LEGACY_PYTHON.exists(), reason="no Python 3.7 legacy environment (.venv-legacy): `make test` "
                                                        "creates it where pyenv has Python 3.7")
def test_keras_224_multi_gpu_model_on_python_37(tmp_path):
    # TensorFlow 2 sets TF2_BEHAVIOR=1 in this process on import; inherited, it would switch TF 1.15 to eager.
    legacy_env = {k: v for k, v in ENV.items() if k not in ("TF2_BEHAVIOR", "TPU_ML_PLATFORM",
                                                             "TPU_ML_PLATFORM_VERSION", "HDF5_PLUGIN_PATH")}
    run_script(LEGACY, tmp_path, python=LEGACY_PYTHON, env=legacy_env)
    assert sorted(p.name for p in tmp_path.glob("ckpt-*")) == ["ckpt-1.h5", "ckpt-2.h5"]
    assert json.loads((tmp_path / "w.json").read_text()) == [
        "The last batch has 2 samples for 2 replicas, so a replica gets 1 sample(s): its BatchNormalization "
        "statistics become NaN or meaningless. Use a training-set size that is a multiple of batch_size x replicas "
        "(8 x 2)."]
    x, predictions = np.load(tmp_path / "x.npy"), np.load(tmp_path / "predictions.npy")
    # Keras 2.2.4 writes the optimizer's `lr`, which its own reload needs and Keras 3's compile rejects: plain
    # Keras 3 loads the checkpoint uncompiled, mgpu_io.load_model compiled, with the optimizer state restored.
    plain = keras.models.load_model(tmp_path / "ckpt-2.h5", compile=False)
    np.testing.assert_allclose(plain.predict(x, verbose=0), predictions, atol=1e-6)
    resumable = mgpu_io.load_model(tmp_path / "ckpt-2.h5")
    np.testing.assert_allclose(resumable.predict(x, verbose=0), predictions, atol=1e-6)
    assert int(resumable.optimizer.iterations) == 14  # 2 epochs of 7 batches
