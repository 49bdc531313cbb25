"""The one place that imports Keras, and the only one that touches Keras' private ``keras.src`` modules.

mgpu-io builds legacy configs the way Keras 3's own legacy ``.h5`` loader does, which means calling that loader's
private helpers. Should a future Keras move them, this module is the one to change (and the tests show it).
"""

import contextlib

from mgpu_io.errors import MissingDependency


def import_keras():
    """Import and return Keras 3, or raise :class:`MissingDependency` with the install command."""
    try:
        import keras
    except ImportError as error:
        raise MissingDependency(
            f"This needs Keras 3, which is not installed. Expected an importable `keras` (3.x) with a backend. "
            f"Received: {error}. Install Keras with one backend: pip install 'mgpu-io[jax]' (the light one), "
            f"'mgpu-io[tensorflow]' or 'mgpu-io[torch]'."
        ) from None
    if not str(getattr(keras, "__version__", "3")).startswith("3"):
        raise MissingDependency(
            f"This needs Keras 3. Expected keras 3.x. Received: keras {keras.__version__}. Upgrade it: "
            f"pip install -U 'keras>=3.12'."
        )
    return keras


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
    """
    from keras.src.legacy.saving import saving_utils

    with legacy_scope(safe_mode), _one_build_per_sequential() as sequentials:
        model = saving_utils.model_from_config(config, custom_objects=custom_objects)
    for sequential in sequentials:  # inner ones first: they were filled first
        if not sequential.built or getattr(sequential, "_functional", None) is None:
            sequential._maybe_rebuild()
    return model


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


def compile_args_from_training_config(training_config, custom_objects):
    """Keras 3's own reader of legacy training configs: the arguments of ``model.compile``."""
    from keras.src.legacy.saving import saving_utils

    return saving_utils.compile_args_from_training_config(training_config, custom_objects)
