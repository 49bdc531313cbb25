"""``BaseModelCheckpoint``: checkpoint the base model while a data-parallel wrapper trains.

A ``multi_gpu_model`` wrapper (or any wrapper in its shape: slice layers, one nested template, merges) trains the
template it calls; that template is the model to deploy and resume from. This callback behaves like Keras'
``ModelCheckpoint`` but saves the template found inside the wrapper, with the wrapper's optimizer state, atomically,
and never replaces a checkpoint with weights that hold NaN or Inf.

It works with Keras 3, tf_keras and the old Keras 2.2.4 on TensorFlow 1.15, where ``multi_gpu_model`` itself still
runs: the callback lists of all three call methods and read no base class, so this module imports only the standard
library and keeps to Python 3.7 syntax. Keras and NumPy are used through the model it is given.

Example (docs/checkpoint.md has a complete one for each Keras)::

    parallel = multi_gpu_model(template, gpus=2)
    parallel.compile("adam", "categorical_crossentropy")
    parallel.fit(x, y, callbacks=[BaseModelCheckpoint("ckpt-{epoch:02d}.keras")])
"""

import os
import sys
import tempfile
import warnings

from mgpu_io.anykeras.wrapper import find_template, non_finite_weights, replica_count
from mgpu_io.errors import AmbiguousTemplate, BaseModelCheckpointError
from mgpu_io.format.non_finite import non_finite_message
from mgpu_io.format.output_keys import rekey

__all__ = ["BaseModelCheckpoint", "BaseModelCheckpointError", "find_base_model"]


class BaseModelCheckpoint:
    """Save the base model of a data-parallel wrapper during training, like ``keras.callbacks.ModelCheckpoint``.

    Args:
        filepath: where to save; formatted with ``epoch`` (1-based), ``batch`` (with an integer ``save_freq``)
            and the logs, e.g. ``"ckpt-{epoch:02d}-{val_loss:.2f}.keras"``. The suffix picks the format as Keras
            does (``.keras``, ``.h5``; ``.weights.h5`` with ``save_weights_only`` in Keras 3).
        monitor, verbose, save_best_only, save_weights_only, mode, save_freq, initial_value_threshold: as in
            ``ModelCheckpoint``. ``save_freq`` is ``"epoch"`` or a number of batches.
        base_model: the model to save. By default the template that the wrapper actually calls is found (with
            ``cpu_relocation`` that is Keras' clone, not the original you passed, which never trains). An explicit
            model must share weights with the trained one. On a model that is not a wrapper, the model itself is
            saved, as ``ModelCheckpoint`` would.
        include_optimizer: save the base model compiled with the wrapper's optimizer and loss (keyed by the base
            model's output names), so training resumes from the checkpoint.
    """

    def __init__(
        self,
        filepath,
        monitor="val_loss",
        verbose=0,
        save_best_only=False,
        save_weights_only=False,
        mode="auto",
        save_freq="epoch",
        initial_value_threshold=None,
        base_model=None,
        include_optimizer=True,
    ):
        self.filepath = os.fspath(filepath)
        self.monitor = monitor
        self.verbose = verbose
        self.save_best_only = save_best_only
        self.save_weights_only = save_weights_only
        self.save_freq = save_freq
        self.include_optimizer = include_optimizer
        self.explicit_base_model = base_model
        if save_freq != "epoch" and not (isinstance(save_freq, int) and save_freq > 0):
            raise ValueError(
                f"Unrecognized save_freq: {save_freq!r}. Expected save_freq are 'epoch' or a positive integer number of "
                "batches."
            )
        if mode not in ("auto", "min", "max"):
            warnings.warn(f"BaseModelCheckpoint mode {mode!r} is unknown, fallback to auto mode.", stacklevel=2)
            mode = "auto"
        if mode == "auto":
            mode = "max" if ("acc" in monitor or monitor.startswith("fmeasure") or "auc" in monitor) else "min"
        self.mode = mode
        self.best = initial_value_threshold
        self.model = None
        self.base_model = None
        self.params = {}
        self._batches_seen = 0
        self._epoch = 0
        self._compiled_base = False
        self._warned_uneven = False
        # Read by tf_keras' and Keras 3's callback lists.
        self._supports_tf_logs = False
        self.async_safe = False

    # --- the callback protocol of Keras 2, tf_keras and Keras 3 -----------------------------------------------

    def set_params(self, params):
        self.params = params or {}

    def set_model(self, model):
        self.model = model
        self.base_model = find_base_model(model, self.explicit_base_model)
        self._compiled_base = False

    def on_train_begin(self, logs=None):
        self._warn_uneven_last_batch()

    def on_epoch_begin(self, epoch, logs=None):
        self._epoch = epoch

    def on_epoch_end(self, epoch, logs=None):
        if self.save_freq == "epoch":
            self._save(epoch, None, logs or {})

    def on_train_batch_end(self, batch, logs=None):
        if self.save_freq != "epoch":
            self._batches_seen += 1
            if self._batches_seen % self.save_freq == 0:
                self._save(self._epoch, batch, logs or {})

    on_batch_end = on_train_batch_end  # Keras 2 calls this one

    def _runs_on_keras3(self):
        """Keras 3's ModelCheckpoint saves when ``monitor`` is missing from the logs; Keras 2's and tf_keras' skip."""
        module = type(self.model).__module__ if self.model is not None else ""
        keras = sys.modules.get("keras")
        return module.startswith("keras.") and str(getattr(keras, "__version__", "")).startswith("3")

    def _implements_train_batch_hooks(self):
        return self.save_freq != "epoch"

    def _implements_test_batch_hooks(self):
        return False

    def _implements_predict_batch_hooks(self):
        return False

    def __getattr__(self, name):
        if name.startswith("on_"):  # every other hook of every Keras: nothing to do
            return _no_op
        raise AttributeError(name)

    # --- saving ---------------------------------------------------------------------------------------------

    def _save(self, epoch, batch, logs):
        logs = dict((k, _scalar(v)) for k, v in logs.items())
        path = self._format(epoch, batch, logs)
        if self.save_best_only:
            current = logs.get(self.monitor)
            if current is None or isinstance(current, (list, tuple)):
                if not self._runs_on_keras3():  # Keras 2 and tf_keras skip the save
                    warnings.warn(f"Can save best model only with {self.monitor} available, skipping.", stacklevel=2)
                    return
                warnings.warn(f"Can save best model only with {self.monitor} available.", stacklevel=2)  # Keras 3 saves
                current = None
            if current is not None and not self._is_improvement(current):
                if self.verbose:
                    print(f"\nEpoch {epoch + 1}: {self.monitor} did not improve from {self.best}")
                return
            if self.verbose and current is not None:
                print(
                    f"\nEpoch {epoch + 1}: {self.monitor} improved from {self.best} to {current:.5f}, saving base model to {path}"
                )
            if current is not None:
                self.best = current
        elif self.verbose:
            print(f"\nEpoch {epoch + 1}: saving base model to {path}")
        broken = non_finite_weights(self.base_model)
        if broken:
            warnings.warn(
                "Not saving {}: the previous checkpoint is kept. {} To avoid it, use a training-set size that is a "
                "multiple of batch_size x replicas.".format(path, non_finite_message(broken, "the base model")),
                stacklevel=2,
            )
            return
        self._write(path)

    def _is_improvement(self, current):
        if self.best is None:
            return True
        return current < self.best if self.mode == "min" else current > self.best

    def _format(self, epoch, batch, logs):
        values = dict(logs)
        if batch is not None and "batch" not in values:
            values["batch"] = batch + 1
        try:
            path = self.filepath.format(epoch=epoch + 1, **values)
        except KeyError as error:
            raise KeyError(f'Failed to format this callback filepath: "{self.filepath}". Reason: {error}') from error
        folder = os.path.dirname(path)
        if folder and not os.path.isdir(folder):
            os.makedirs(folder)
        if os.path.isdir(path):
            raise OSError(
                "Please specify a non-directory filepath for BaseModelCheckpoint. Filepath used is an "
                f"existing directory: {path}"
            )
        return path

    def _write(self, path):
        """Write to a temporary file beside ``path`` (same suffix, as Keras requires) and rename it over."""
        if not _is_chief():
            return
        if self.include_optimizer and not self.save_weights_only and self.base_model is not self.model:
            self._compile_base()
        suffix = ".weights.h5" if path.endswith(".weights.h5") else os.path.splitext(path)[1]
        handle, temporary = tempfile.mkstemp(
            prefix="." + os.path.basename(path) + ".", suffix=suffix, dir=os.path.dirname(path) or "."
        )
        os.close(handle)
        os.remove(temporary)  # Keras 2 and tf_keras would otherwise ask before overwriting
        try:
            if self.save_weights_only:
                self.base_model.save_weights(temporary)
            else:
                self.base_model.save(temporary)
            os.replace(temporary, path)
        finally:
            if os.path.exists(temporary):
                os.remove(temporary)

    def _compile_base(self):
        """Compile the base model with the wrapper's optimizer (the same object, so the same state) and loss."""
        if self._compiled_base:
            return
        wrapper, base = self.model, self.base_model
        old, new = _output_names(wrapper), _output_names(base)
        arguments = {"optimizer": wrapper.optimizer, "loss": rekey(getattr(wrapper, "loss", None), old, new)[0]}
        weights = _compile_value(wrapper, "loss_weights")
        if weights is not None:
            arguments["loss_weights"] = rekey(weights, old, new)[0]
        base.compile(**arguments)
        self._compiled_base = True

    def _warn_uneven_last_batch(self):
        """Keras 2 tells callbacks the sample and batch counts: warn when a replica's last slice is 0 or 1 sample."""
        samples, batch_size = self.params.get("samples"), self.params.get("batch_size")
        replicas = replica_count(self.model) if self.model is not None else None
        if not (samples and batch_size and replicas) or self._warned_uneven:
            return
        last = samples % batch_size
        if last and last // replicas <= 1:
            self._warned_uneven = True
            warnings.warn(
                f"The last batch has {last} samples for {replicas} replicas, so a replica gets {last // replicas} sample(s): its "
                "BatchNormalization statistics become NaN or meaningless. Use a training-set size that is a multiple "
                f"of batch_size x replicas ({batch_size} x {replicas}).",
                stacklevel=2,
            )


def _no_op(*args, **kwargs):
    return None


def _scalar(value):
    try:
        return float(value)
    except (TypeError, ValueError):
        return value


def _output_names(model):
    names = getattr(model, "output_names", None)
    return list(names) if names else [t.name.split("/")[0] for t in model.outputs]


def _compile_value(model, key):
    get_config = getattr(model, "get_compile_config", None)
    if get_config is not None:
        try:
            config = get_config() or {}
            if key in config:
                return config[key]
        except Exception:
            pass
    compiled = getattr(model, "compiled_loss", None)
    if compiled is not None and key == "loss_weights":
        return getattr(compiled, "_loss_weights", None)
    return getattr(model, key, None)


def _is_chief():
    """Under MultiWorkerMirroredStrategy only the chief writes (TF_CONFIG names the task)."""
    import json

    config = json.loads(os.environ.get("TF_CONFIG", "{}") or "{}")
    task = config.get("task") or {}
    cluster = config.get("cluster") or {}
    if not task:
        return True
    if "chief" in cluster:
        return task.get("type") == "chief"
    return task.get("type") in ("worker", None) and int(task.get("index", 0)) == 0


# --- finding the base model -----------------------------------------------------------------------------------


def find_base_model(model, base_model=None):
    """The model to checkpoint: ``base_model`` if it shares the trained weights, else the innermost template."""
    if base_model is not None:
        trained = set(id(v) for v in model.weights)
        if not any(id(v) in trained for v in base_model.weights):
            raise BaseModelCheckpointError(
                problem=(
                    "base_model shares no weights with the model being trained, so its checkpoints would hold "
                    "untrained weights"
                ),
                parameter="base_model",
                expected="the template the wrapper calls",
                received=f"base_model={base_model.name}, model={model.name}",
                fix=(
                    "With multi_gpu_model(cpu_relocation=True) the wrapper trains a clone of your template: leave "
                    "base_model=None and the clone is found and saved"
                ),
            )
        return base_model
    try:
        return find_template(model)
    except AmbiguousTemplate as error:
        raise BaseModelCheckpointError(
            problem=error.problem,
            parameter="base_model",
            expected=error.expected,
            received=error.received,
            fix="Pass base_model= explicitly",
        ) from None
