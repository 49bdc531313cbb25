"""The named errors of mgpu-io.

Every error the library raises to a caller is an :class:`MgpuIOError`. Its message follows the Keras idiom: what is
wrong, what was expected, what was received, and how to fix it, in the caller's terms (parameter names such as
``overwrite=True``; the command line translates them to its flags). This module imports nothing, so any floor can
use it, the standard-library-only callback included.

The errors that reject an input or an argument are ``ValueError``s too, as Keras' own loader raises for a file it
cannot read, so that ``except ValueError`` around ``load_model`` keeps working when mgpu-io replaces Keras' loader.
:class:`MissingDependency` is an ``ImportError`` too (a package is missing, not a value wrong).

Example:
    >>> import mgpu_io
    >>> try:
    ...     mgpu_io.inspect("README.md")
    ... except ValueError as error:
    ...     print(type(error).__name__, isinstance(error, mgpu_io.MgpuIOError))
    NotAModelFile True
"""


class MgpuIOError(Exception):
    """Base class of every error that mgpu-io raises."""


class NotAModelFile(MgpuIOError, ValueError):
    """The input is not a Keras HDF5 file or JSON config (not HDF5, truncated, invalid JSON, no model in it)."""


class FailedSaveStub(MgpuIOError, ValueError):
    """The input is the stub that a failed Keras <= 2.1.6 ``save()`` of a multi-GPU model leaves behind."""


class NotAWrapper(MgpuIOError, ValueError):
    """The input is a plain model, not a multi-GPU wrapper."""


class WeightsMismatch(MgpuIOError, ValueError):
    """The stored weights do not fit the template: a group or dataset is missing or has the wrong shape."""


class UnsupportedModel(MgpuIOError, ValueError):
    """The model uses a layer or config that mgpu-io cannot convert for Keras 3 (yet)."""


class KerasRefused(UnsupportedModel):
    """Keras 3 refused to build the repaired template (its message is kept; a ``ValueError`` too, as Keras raised)."""


class InvalidArgument(MgpuIOError, ValueError):
    """An option does not apply to this input (for example ``config=`` with a full-model file)."""


class AmbiguousTemplate(InvalidArgument):
    """An in-memory model holds several nested models with weights: which one is the template is not clear."""


class MissingLambda(InvalidArgument):
    """The template's Lambda layers hold the user's own code, and their functions were not supplied (``lambdas=``).

    ``layers`` lists each missing layer with what the file says about it, read as data."""

    def __init__(self, message, layers=()):
        super().__init__(message)
        self.layers = list(layers)


class OutputError(MgpuIOError, ValueError):
    """The output path is unusable: it is the input, it exists, or its folder is missing."""


class MissingDependency(MgpuIOError, ImportError):
    """A feature needs a package that is not installed (Keras for ``.keras`` output, ``load_model``, ``verify``)."""


class BaseModelCheckpointError(MgpuIOError, ValueError):
    """``BaseModelCheckpoint`` cannot tell which model to save (ambiguous, or it shares no trained weights)."""


class LimitReached(MgpuIOError):
    """A resource limit of the user's environment (``ulimit -v``, ``-f``, ``-n``, ``-t``) is below what the work
    needs; the message names the limit and its value. mgpu-io never raises a limit it was given."""


class RemoteAccessError(MgpuIOError, OSError):
    """Object storage (``s3://``, ``gs://``, ``hf://``, ...) refused a request: wrong or missing credentials, a
    missing bucket. The message names the URL and what the store said; it never holds a credential."""


class MgpuIOWarning(UserWarning):
    """Something the user should know about a loaded model (NaN statistics, an optimizer state left behind)."""
