"""The one place that imports Keras, and the only one that touches Keras' private ``keras.src`` modules.

mgpu-io builds legacy configs the way Keras 3's own legacy ``.h5`` loader does, which means calling that loader's
private helpers. Should a future Keras move them, this module is the one to change (and the tests show it).
"""

import contextlib
import os

from mgpu_io import upstream
from mgpu_io.errors import MgpuIOError, MissingDependency


def import_keras():
    """Import and return Keras 3, or raise :class:`MissingDependency` with the install command."""
    try:
        import keras
    except ImportError as error:
        _check_memory_limit(error)
        missing_backend = _missing_backend(error)
        if missing_backend is not None:
            raise missing_backend from None
        raise MissingDependency(
            problem="This needs Keras 3, which is not installed",
            expected="an importable `keras` (3.x) with a backend",
            received=str(error),
            fix=(
                "Install Keras with one backend: pip install 'mgpu-io[jax]' (the light one), 'mgpu-io[tensorflow]' "
                "or 'mgpu-io[torch]'"
            ),
        ) from None
    except ValueError as error:  # Keras 3's answer to a KERAS_BACKEND it does not know
        if not upstream.said(upstream.KERAS_UNKNOWN_BACKEND, error):
            raise
        raise MissingDependency(
            problem=f"Keras does not know the backend KERAS_BACKEND={os.environ.get('KERAS_BACKEND')}",
            expected=f"one of {', '.join(sorted(_BACKENDS))}",
            received=str(error),
            fix="Pick one of them (KERAS_BACKEND=jax, for example) or unset KERAS_BACKEND",
        ) from None
    if not str(getattr(keras, "__version__", "3")).startswith("3"):
        raise MissingDependency(
            problem="This needs Keras 3",
            expected="keras 3.x",
            received=f"keras {keras.__version__}",
            fix="Upgrade it: pip install -U 'keras>=3.12'",
        )
    return keras


def _check_memory_limit(error):
    """A library that could not be mapped under the user's ``ulimit -v`` (TensorFlow maps gigabytes): say so,
    naming the limit, not that Keras is missing."""
    from mgpu_io.errors import LimitReached
    from mgpu_io.format.limits import memory_problem

    problem = memory_problem()
    if problem is not None and upstream.said(upstream.CANNOT_MAP, error):
        raise LimitReached(
            problem=f"Keras and its backend cannot be loaded: {problem}",
            expected="room to map the backend's libraries (TensorFlow maps several GiB of address space)",
            received=str(error),
            fix=(
                "Raise the limit (ulimit -v unlimited, or a larger value), or use a lighter backend (KERAS_BACKEND=jax)"
            ),
        ) from None


#: Keras 3's backends and the package each one imports.
_BACKENDS = {"tensorflow": "tensorflow", "jax": "jax", "torch": "torch", "numpy": "numpy", "openvino": "openvino"}


def _missing_backend(error):
    """When Keras itself is installed but the backend it was told to use is not (``KERAS_BACKEND``, or
    ``~/.keras/keras.json``), the error that says so and how to pick another; else ``None``."""
    import importlib.util

    if importlib.util.find_spec("keras") is None or not isinstance(error, ModuleNotFoundError):
        return None
    chosen = os.environ.get("KERAS_BACKEND")
    where = f"KERAS_BACKEND={chosen}" if chosen else "the backend in ~/.keras/keras.json (or Keras' default)"
    module = (getattr(error, "name", None) or "").split(".")[0]
    backend = next((name for name, package in _BACKENDS.items() if package == module), None)
    if backend is None or (chosen and chosen != backend) or importlib.util.find_spec(_BACKENDS[backend]) is not None:
        return None  # not a backend's package, or one that is installed (a part of it failed: Keras' own error)
    installed = [name for name, package in _BACKENDS.items() if importlib.util.find_spec(package) is not None]
    installed = [name for name in installed if name != backend and name != "numpy"] + ["numpy"] * ("numpy" in installed)
    pick = " or ".join(f"KERAS_BACKEND={name}" for name in installed[:3]) or "pip install 'mgpu-io[jax]'"
    return MissingDependency(
        problem=f"Keras is installed, but its backend {backend!r} is not ({where})",
        expected="an importable backend package",
        received=str(error),
        fix=f"Pick an installed backend ({pick}) or install this one (pip install {_BACKENDS.get(backend, backend)})",
    )


@contextlib.contextmanager
def legacy_scope(safe_mode):
    """Read configs as Keras 3's legacy ``.h5`` loader does, under the caller's safe mode."""
    import_keras()
    from keras.src.legacy.saving import saving_options
    from keras.src.saving.serialization_lib import SafeModeScope

    with saving_options.keras_option_scope(use_legacy_config=True), SafeModeScope(safe_mode):
        yield


def model_from_legacy_config(config, custom_objects, safe_mode):
    """Build a legacy (Keras 1/2-era) model config as Keras 3's own legacy loader does.

    Keras 3's ``Sequential.from_config`` rebuilds the whole model after every layer it adds, which takes time
    quadratic in the number of layers (46 s for a 304-layer Sequential, measured); here each Sequential is built
    once, after its last layer, which gives the same model.

    One object stays one: tf_keras 2.x writes each object that two layers share (a custom object that a layer's
    ``get_config`` returns as it is) in both configs, marked with one ``shared_object_id`` (TF 2.3's tf.keras has
    no such mark; the releases between were not checked); its own loader builds it once, under the shared-object
    scope that Keras 3's legacy deserializer honours but that its legacy ``.h5`` loader never enters.
    """
    from keras.src.legacy.saving import saving_utils
    from keras.src.legacy.saving.serialization import SharedObjectLoadingScope as shared_objects

    keras = import_keras()
    with (
        legacy_scope(safe_mode),
        shared_objects(),
        _one_build_per_sequential() as sequentials,
        keras.saving.custom_object_scope(custom_objects or {}),  # found first: before the caller's own scope
    ):
        model = saving_utils.model_from_config(config, custom_objects=custom_objects)
    for sequential in sequentials:  # inner ones first: they were filled first
        if not sequential.built or getattr(sequential, "_functional", None) is None:
            sequential._maybe_rebuild()
    return model


def unknown_layer_class(config, custom_objects):
    """The first class of the model ``config`` and of its layers (nested models' and wrapped layers' too, in config
    order) that Keras 3 cannot look up, or ``None``: asked as :func:`model_from_legacy_config`'s loader asks for each
    (``keras.saving.get_registered_object`` with the table of Keras' layers and models that
    ``saving_utils.model_from_config`` passes, under the same ``custom_objects``). An object inside a layer's
    arguments (an initializer, a regularizer) is not asked: Keras looks it up in the layer's own ``from_config``, by
    the table of that argument's module, which the config does not name.

    Example:
        >>> config = {"class_name": "Sequential", "config": {"layers": [
        ...     {"class_name": "Dense", "config": {"name": "d", "units": 1}},
        ...     {"class_name": "ClusteringLayer", "config": {"name": "c"}}]}}
        >>> unknown_layer_class(config, {}), unknown_layer_class(config, {"ClusteringLayer": object})
        ('ClusteringLayer', None)
    """
    from keras.src import layers, models

    from mgpu_io.format.config import walk_layers

    keras = import_keras()
    table = {
        **vars(layers),
        "InputLayer": layers.InputLayer,
        "Functional": models.Functional,
        "Model": models.Model,
        "Sequential": models.Sequential,
    }
    with keras.saving.custom_object_scope(custom_objects or {}):
        for entry in (config, *walk_layers(config, wrapped=True)):
            name = entry.get("class_name") if isinstance(entry, dict) else None
            if isinstance(name, str) and keras.saving.get_registered_object(name, custom_objects, table) is None:
                return name
    return None


@contextlib.contextmanager
def _one_build_per_sequential():
    from keras.src.models.sequential import Sequential

    original = Sequential.add
    filled = []

    def add(self, layer, rebuild=True):
        original(self, layer, rebuild=False)
        if not any(model is self for model in filled):
            filled.append(self)

    Sequential.add = add
    try:
        yield filled
    finally:
        Sequential.add = original


#: What building a Keras model or optimizer raises for a config or a layer it cannot build.
BUILD_ERRORS = (
    ValueError,
    TypeError,
    KeyError,
    AttributeError,
    IndexError,
    NotImplementedError,
    RuntimeError,
    RecursionError,
)


class Deferred:
    """Variables created without values, given the file's arrays instead of their initializers' random numbers.

    Keras fills every new weight from its initializer, only for a load to overwrite it: for a 1 GB file's 335 MB of
    Dense kernels the random numbers took 0.56 s of a 0.72 s build (measured on the benchmark machine). In
    :meth:`create`, variables are created as Keras creates them under a ``keras.StatelessScope``: shaped and typed,
    with no value. :meth:`give` names a variable's value; :meth:`finish` gives every variable its value, the ones
    given none their own initializer's. Where this Keras cannot defer variables so (``active`` is false), they are
    created as usual and :meth:`give` reports that it did nothing, for the caller to assign.
    """

    def __init__(self):
        keras = import_keras()
        try:
            from keras.src.backend.common.variables import initialize_all_variables

            self._scope = keras.StatelessScope(initialize_variables=False)
        except (ImportError, AttributeError, TypeError):
            self._scope, initialize_all_variables = None, None
        self._initialize_all = initialize_all_variables
        self.active = self._scope is not None

    def create(self, build):
        """``build()``, its variables created without values.

        A layer that makes variables as it runs (a stateful RNN's states) is refused there; then the variables made
        so far get their initializers' values, this stops deferring, and ``build()`` runs again as Keras would run
        it. ``build`` must not depend on what its first run changed.
        """
        if self.active:
            try:
                with self._scope:
                    return build()
            except MgpuIOError:  # our own refusal (a ValueError too): not Keras' deferral failing
                raise
            except BUILD_ERRORS:
                self.finish()
                self.active = False
        return build()

    def give(self, variable, value):
        """Make ``value`` the initial value of ``variable``, if it was created here without one; ``False`` if not."""
        if not self.active or getattr(variable, "_value", True) is not None or not hasattr(variable, "_initializer"):
            return False
        variable._initializer = _Value(value)
        return True

    def finish(self):
        """Give every variable created without a value its value: the one given, or its initializer's.

        Keras' list of such variables is emptied first: where Keras refuses a value (a stored weight of a dtype it
        has no type for), its own ``initialize_all_variables`` would leave the list as it was, and every later
        load in the process would fail on those variables ("already initialized"; found by the fuzzer).
        """
        if not self.active:
            return
        try:
            from keras.src.backend.common import global_state
        except ImportError:  # pragma: no cover - a Keras that moved it: its own function, as before
            self._initialize_all()
            return
        pending = global_state.get_global_attribute("uninitialized_variables") or []
        global_state.set_global_attribute("uninitialized_variables", [])
        for variable in pending:
            if getattr(variable, "_value", None) is None:
                variable._deferred_initialize()


class _Value:
    """An initializer that returns a given array (or tensor), in the variable's dtype."""

    def __init__(self, value):
        self.value = value

    def __call__(self, shape, dtype=None):
        keras, value = import_keras(), self.value
        if dtype is not None and keras.backend.standardize_dtype(value.dtype) != keras.backend.standardize_dtype(dtype):
            value = keras.ops.cast(value, dtype)
        return value


def compile_args_from_training_config(training_config, custom_objects):
    """Keras 3's own reader of legacy training configs: the arguments of ``model.compile``."""
    from keras.src.legacy.saving import saving_utils

    return saving_utils.compile_args_from_training_config(training_config, custom_objects)


def with_registered_names(custom_objects, config):
    """``custom_objects`` plus each class registered with Keras (``@keras.saving.register_keras_serializable()``,
    which registers ``"package>Name"``) under the plain name that a Keras 1/2 or tf.keras file gives it
    (``"Name"``), where ``config`` names it and one registered class has that name: Keras 3 looks the plain name up
    only among ``custom_objects`` and its ``custom_object_scope``. mgpu-io's own (``mgpu_io>InstanceNormalization``)
    are not among them: a repair writes their registered names where it converts, and a class of the same plain name
    left unconverted is the user's own."""
    keras = import_keras()
    objects = dict(custom_objects or {})
    registered = {}
    for key, value in keras.saving.get_custom_objects().items():
        if ">" in key and not key.startswith("mgpu_io>"):
            registered.setdefault(key.split(">", 1)[1], []).append(value)
    stack, names = [config], set()
    while stack:
        item = stack.pop()
        if isinstance(item, dict):
            if isinstance(item.get("class_name"), str):
                names.add(item["class_name"])
            stack.extend(item.values())
        elif isinstance(item, list):
            stack.extend(item)
    for name in sorted(names):
        found = registered.get(name, [])
        if name not in objects and len(found) == 1:
            objects[name] = found[0]
    return objects


def _takes_name(cls):
    """Whether ``cls(...)`` takes a ``name`` (by name, or through ``**kwargs``)."""
    import inspect

    try:
        parameters = inspect.signature(cls.__init__).parameters.values()
    except (TypeError, ValueError):
        return True
    return any(p.name == "name" or p.kind is inspect.Parameter.VAR_KEYWORD for p in parameters)


class _NamedAfter:
    """A user's layer class, built from its config and then given the name of its config where it came out with
    another: its ``__init__`` may take no ``name`` (its ``get_config`` leaves it out, as in tf_keras' own test of a
    subclassed model nested in a functional one), or its ``from_config`` may drop it (``cls(config["inner"])``).
    tf_keras then names the layer as its functional node does; mgpu-io gives it that name (the rule
    ``layer-name-from-node`` puts it in the config), by which its stored weights are found."""

    def __init__(self, cls):
        self.cls = cls
        self.__name__ = getattr(cls, "__name__", "class")

    def from_config(self, config, custom_objects=None):
        name = config.get("name") if isinstance(config, dict) else None
        if name is not None and not _takes_name(self.cls):
            config = {key: value for key, value in config.items() if key != "name"}
        built = self.cls.from_config(config)
        if isinstance(name, str) and getattr(built, "name", name) != name:
            built.name = name
        return built

    def __call__(self, *args, **kwargs):
        return self.cls(*args, **kwargs)


def with_names_given_after(custom_objects):
    """``custom_objects`` where each layer class gets, once built, the name its config gives it (see
    :class:`_NamedAfter`); other objects as they are.

    Example:
        >>> import keras
        >>> class Plain(keras.layers.Layer):
        ...     def __init__(self, units):
        ...         super().__init__()
        ...         self.units = units
        ...     def get_config(self):
        ...         return {"units": self.units}
        >>> built = with_names_given_after({"Plain": Plain})["Plain"].from_config({"units": 2, "name": "dense_7"})
        >>> type(built).__name__, built.units, built.name
        ('Plain', 2, 'dense_7')
    """
    keras = import_keras()
    return {
        key: _NamedAfter(value)
        if isinstance(value, type) and issubclass(value, keras.layers.Layer) and hasattr(value, "from_config")
        else value
        for key, value in (custom_objects or {}).items()
    }


def with_scoped_objects(custom_objects):
    """``custom_objects`` plus the classes of the caller's ``keras.utils.custom_object_scope`` (``custom_objects``
    win): Keras 3's legacy deserializer enters a ``CustomObjectScope`` of the ``custom_objects`` it was given around
    each ``from_config``, and Keras 3's scope replaces the one around it (tf_keras' adds to it), so a user's
    ``from_config`` that deserializes a nested object (``deserialize_keras_object(config["inner_layer"])``) would
    no longer find the classes of the caller's scope."""
    import_keras()
    try:
        from keras.src.backend.common import global_state

        scoped = dict(global_state.get_global_attribute("custom_objects_scope_dict", {}) or {})
    except ImportError:  # pragma: no cover - a Keras that moved it
        scoped = {}
    return {**scoped, **(custom_objects or {})}


def tensorflow_nn():
    """Keras 3's TensorFlow backend's ``nn`` module (``keras.src.backend.tensorflow.nn``), whose ops every layer's
    ``keras.ops`` call reaches: :mod:`mgpu_io.keras.runtime` lets its convolutions run on a CPU-only runtime."""
    import importlib

    return importlib.import_module("keras.src.backend.tensorflow.nn")
