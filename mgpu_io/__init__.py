"""mgpu-io: rescue Keras models saved from multi-GPU data-parallel wrappers.

The package is built in four floors (docs/architecture.md): :mod:`mgpu_io.format` reads and writes legacy Keras
files with h5py and the standard library only, :mod:`mgpu_io.keras` holds everything that imports Keras,
:mod:`mgpu_io.tf` reads TensorFlow's formats as data, and :mod:`mgpu_io.cli` is the command line over them. Every name below is imported on first use, so ``import mgpu_io``
costs nothing, and ``from mgpu_io import BaseModelCheckpoint`` loads neither h5py nor the format core.

Example:
    >>> import mgpu_io
    >>> report = mgpu_io.inspect("fixtures/files/k224_functional_bn_x2_full.h5")
    >>> report.is_wrapper, report.replicas
    (True, 2)
"""

import importlib

from mgpu_io._version import __version__
from mgpu_io.errors import (
    AmbiguousTemplate,
    BaseModelCheckpointError,
    FailedSaveStub,
    InvalidArgument,
    KerasRefused,
    LimitReached,
    MgpuIOError,
    MgpuIOWarning,
    MissingDependency,
    MissingLambda,
    NotAModelFile,
    NotAWrapper,
    OutputError,
    RemoteAccessError,
    UnsupportedModel,
    WeightsMismatch,
)

# name -> module that defines it; imported when the name is first used.
_LAZY = {
    "inspect": "mgpu_io.api",
    "unwrap": "mgpu_io.api",
    "InspectReport": "mgpu_io.format.inspect",
    "UnwrapReport": "mgpu_io.format.unwrap_report",
    "BatchReport": "mgpu_io.format.batch",
    "BaseModelCheckpoint": "mgpu_io.anykeras.callbacks",
    "load_model": "mgpu_io.keras.load",
    "transfer_weights": "mgpu_io.keras.transfer",
    "transfer": "mgpu_io.keras.transfer",
    "TransferReport": "mgpu_io.keras.transfer",
    "TransferResult": "mgpu_io.keras.transfer",
    "verify": "mgpu_io.keras.verify",
    "VerifyReport": "mgpu_io.keras.verify",
    "lambda_sources": "mgpu_io.lambdas.source_module",
    "LambdaSources": "mgpu_io.lambdas.source_module",
    "recalibrate_batchnorm": "mgpu_io.keras.batchnorm",
    "RecalibrationReport": "mgpu_io.keras.batchnorm",
}


def __getattr__(name):
    if name in _LAZY:
        value = getattr(importlib.import_module(_LAZY[name]), name)
        globals()[name] = value
        return value
    raise AttributeError(f"module 'mgpu_io' has no attribute {name!r}")


def __dir__():
    return sorted(set(globals()) | set(_LAZY))


__all__ = sorted(
    [
        "__version__",
        "AmbiguousTemplate",
        "BaseModelCheckpointError",
        "FailedSaveStub",
        "InvalidArgument",
        "KerasRefused",
        "LimitReached",
        "MgpuIOError",
        "MgpuIOWarning",
        "MissingDependency",
        "MissingLambda",
        "NotAModelFile",
        "NotAWrapper",
        "OutputError",
        "RemoteAccessError",
        "UnsupportedModel",
        "WeightsMismatch",
        *_LAZY,
    ]
)
