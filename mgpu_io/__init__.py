"""mgpu-io: rescue Keras models saved from multi-GPU data-parallel wrappers.

The format core (this package's top level) reads and writes legacy Keras HDF5 files and JSON configs with h5py and
the standard library only; importing it never imports TensorFlow or Keras, and nothing stored in a file is executed.

Example:
    >>> import mgpu_io
    >>> report = mgpu_io.inspect("fixtures/files/k224_functional_bn_x2_full.h5")
    >>> report.is_wrapper, report.replicas
    (True, 2)
"""

__version__ = "0.1.0"

from mgpu_io.errors import (  # noqa: E402
    FailedSaveStub,
    InvalidArgument,
    MgpuIOWarning,
    MgpuIOError,
    NotAModelFile,
    NotAWrapper,
    OutputError,
    UnsupportedModel,
    WeightsMismatch,
)
from mgpu_io.inspection import InspectReport, inspect  # noqa: E402
from mgpu_io.unwrap import UnwrapReport, unwrap  # noqa: E402

# The Keras-facing API imports Keras (and TensorFlow) on first use only: the format core and the command line
# stay free of them.
_KERAS_API = {
    "BaseModelCheckpoint": "mgpu_io.callbacks",
    "load_model": "mgpu_io.loading",
    "transfer_weights": "mgpu_io.transfer",
    "TransferReport": "mgpu_io.transfer",
    "recalibrate_batchnorm": "mgpu_io.batchnorm",
    "RecalibrationReport": "mgpu_io.batchnorm",
}


def __getattr__(name):
    if name in _KERAS_API:
        import importlib

        return getattr(importlib.import_module(_KERAS_API[name]), name)
    raise AttributeError(f"module 'mgpu_io' has no attribute {name!r}")


__all__ = [
    "BaseModelCheckpoint",
    "FailedSaveStub",
    "InspectReport",
    "InvalidArgument",
    "MgpuIOError",
    "MgpuIOWarning",
    "NotAModelFile",
    "NotAWrapper",
    "OutputError",
    "UnsupportedModel",
    "UnwrapReport",
    "WeightsMismatch",
    "inspect",
    "load_model",
    "RecalibrationReport",
    "recalibrate_batchnorm",
    "TransferReport",
    "transfer_weights",
    "unwrap",
]
