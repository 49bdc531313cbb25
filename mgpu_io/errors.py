"""The named errors of mgpu-io.

Every error the library raises to a caller is an :class:`MgpuIOError`. Its message follows the Keras idiom: what is
wrong, what was expected, what was received, and how to fix it, in the caller's terms (parameter names such as
``overwrite=True``; the command line renders them in its flags). This module imports the standard library only, so
any floor can use it, the standard-library-only callback included.

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

#: The fields an error may carry besides its message.
FIELDS = ("problem", "parameter", "expected", "received", "fix", "kind")

_UNSET = object()


class Param:
    """A parameter named inside an error's field, so that each reader names it in its own terms: the library as
    ``overwrite=True`` (or ``config=``, ``value`` left out), the command line by its flag (``--force``).

    Example:
        >>> str(Param("overwrite", True)), str(Param("config")), str(Param("target", "tf_keras"))
        ('overwrite=True', 'config=', "target='tf_keras'")
    """

    def __init__(self, name, value=_UNSET, text=None):
        self.name, self.value, self.text = name, value, text

    @property
    def has_value(self):
        return self.value is not _UNSET

    def __str__(self):
        if self.text is not None:
            return self.text
        return f"{self.name}={self.value!r}" if self.has_value else f"{self.name}="

    def __repr__(self):
        return f"Param({str(self)!r})"

    def __eq__(self, other):
        return isinstance(other, Param) and (self.name, self.value, self.text) == (other.name, other.value, other.text)

    def __hash__(self):
        return hash((self.name, str(self)))

    def __reduce__(self):  # _UNSET is no module-level name a pickle can find: send it as a flag
        return _param, (self.name, self.value if self.has_value else None, self.has_value, self.text)


def _param(name, value, has_value, text):
    return Param(name, value if has_value else _UNSET, text)


class Text(str):
    """Words that may name parameters: a string (the library's rendering, so it prints, compares and serialises as
    text) that keeps its parts, the :class:`Param`\\ s among them, so that the command line renders the same words
    in its flags (:meth:`render`). A report's finding, a folder's reason, a whole report's text: joined or added
    to, it stays a ``Text``; an f-string or ``str.split`` makes plain text of it.

    Example:
        >>> line = Text("a plain model: pass ", Param("allow_plain", True), " to write it")
        >>> str(line), line.render(lambda param: "--allow-plain")
        ('a plain model: pass allow_plain=True to write it', 'a plain model: pass --allow-plain to write it')
        >>> ("  ! " + line).render(lambda param: "--allow-plain")
        '  ! a plain model: pass --allow-plain to write it'
    """

    parts: tuple

    def __new__(cls, *parts):
        flat = []
        for part in parts:
            if isinstance(part, Text):
                flat.extend(part.parts)
            elif isinstance(part, Param):
                flat.append(part)
            else:
                flat.append(str(part))
        self = super().__new__(cls, "".join(str(part) for part in flat))
        self.parts = tuple(flat)
        return self

    def render(self, terms=str):
        """The words, each :class:`Param` named by ``terms(param)`` (the library's spelling by default)."""
        return "".join(terms(part) if isinstance(part, Param) else part for part in self.parts)

    def __add__(self, other):
        return Text(self, other) if isinstance(other, str) else NotImplemented

    def __radd__(self, other):
        return Text(other, self) if isinstance(other, str) else NotImplemented

    def join(self, items):
        """``str.join`` that keeps the parameters of the items (a report's lines)."""
        items = list(items)
        return Text(*[part for i, item in enumerate(items) for part in ((self, item) if i else (item,))])

    def __repr__(self):
        return f"Text({str(self)!r})"

    def __reduce__(self):  # the parts cross a pipe and deepcopy (dataclasses.asdict) with the words
        return Text, self.parts


def render(text, terms=str):
    """``text`` in ``terms``: a :class:`Text`'s parameters named by them; any other string as it is.

    Example:
        >>> render(Text("pass ", Param("overwrite", True)), lambda param: "--force"), render("plain words")
        ('pass --force', 'plain words')
    """
    return text.render(terms) if isinstance(text, Text) else str(text)


class MgpuIOError(Exception):
    r"""Base class of every error that mgpu-io raises.

    An error raised from fields carries them: ``problem`` (what is wrong), ``parameter`` (the argument at fault,
    as the library names it: ``"overwrite"``), ``expected``, ``received`` and ``fix``; ``kind`` is the input's
    kind (:mod:`mgpu_io.format.kinds`) where the error is about what an input is. Its message is :meth:`render`'s,
    in the library's terms. A field is a string, or a tuple of strings and :class:`Param`\ s (the parameters it
    names), which :meth:`render` names by its ``terms``: the command line gives its flags. An error raised with a
    message only has ``None`` fields (its message is the text given).

    Example:
        >>> error = OutputError(problem="The output exists", parameter="output", expected="a path that is free",
        ...                     received="output=m.h5", fix=("Pass ", Param("overwrite", True), " to replace it"))
        >>> str(error)
        'The output exists. Expected a path that is free. Received: output=m.h5. Pass overwrite=True to replace it.'
        >>> error.render(lambda param: "--force")
        'The output exists. Expected a path that is free. Received: output=m.h5. Pass --force to replace it.'
    """

    def __init__(
        self, message=None, *, problem=None, parameter=None, expected=None, received=None, fix=None, kind=None
    ):
        self.problem, self.parameter, self.expected, self.received, self.fix, self.kind = (
            problem,
            parameter,
            expected,
            received,
            fix,
            kind,
        )
        super().__init__(self.render() if message is None else message)

    @property
    def has_fields(self):
        """Whether the message is rendered from fields (then :meth:`render` can say it in other terms)."""
        return self.problem is not None

    def render(self, terms=str):
        """The message from the fields, each :class:`Param` named by ``terms(param)`` (the library's spelling by
        default). An error without fields gives its message."""
        return self.text().render(terms)

    def text(self):
        """The message as a :class:`Text`: what a report quotes of the error (a folder's reason for a file) keeps
        the parameters it names. An error without fields gives its message (a ``Text`` if it was raised with one)."""
        if not self.has_fields:
            message = self.args[0] if self.args and isinstance(self.args[0], Text) else str(self)
            return Text(message)
        parts = [_text(self.problem), "."]
        if self.expected is not None:
            parts += [" Expected ", _text(self.expected), "."]
        if self.received is not None:
            parts += [" Received: ", _text(self.received), "."]
        if self.fix is not None:
            parts += [" ", _text(self.fix), "."]
        return Text(*parts)

    def __reduce__(self):  # the fields cross the probe's pipe with the error
        return _rebuilt, (type(self), self.args, self.__dict__)


def _rebuilt(cls, args, state):
    error = cls.__new__(cls)
    Exception.__init__(error, *args)
    error.__dict__.update(state)
    return error


def _named(field, terms):
    """A field as text: a string as it is (a :class:`Text`'s parameters named by ``terms``); a tuple's strings as
    they are and its parameters named by ``terms``."""
    return _text(field).render(terms)


def _text(field):
    if isinstance(field, (str, Param)):
        return Text(field)
    return Text(*field)


def first_line(error, limit=None, default=None):
    """The first line of an error's message (``default``, else its class name, when it has none), at most ``limit``
    characters: what a one-line report quotes of an exception.

    Example:
        >>> first_line(ValueError("bad shape\\nTraceback ...")), first_line(KeyError())
        ('bad shape', 'KeyError')
    """
    text = str(error).strip()
    line = text.splitlines()[0] if text else (type(error).__name__ if default is None else default)
    return line if limit is None else line[:limit]


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


def does_not_apply(param, does, applies_to, received, kind=None, also=""):
    """The error for an option given where it does not apply (refused, never ignored): "``param`` ``does``.
    Expected ``applies_to`` with ``param``. Received: ``received``. Leave out ``param`` ``also``."

    Example:
        >>> str(does_not_apply(Param("jobs"), "sets the worker processes of a folder's repair", "a folder source",
        ...                    "filepath=m.h5"))
        "jobs= sets the worker processes of a folder's repair. Expected a folder source with jobs=. Received: filepath=m.h5. Leave out jobs=."
    """
    return InvalidArgument(
        problem=(param, f" {does}"),
        parameter=param.name,
        expected=(f"{applies_to} with ", param),
        received=received,
        fix=("Leave out ", param, also),
        kind=kind,
    )


class AmbiguousTemplate(InvalidArgument):
    """An in-memory model holds several nested models with weights: which one is the template is not clear."""


class MissingLambda(InvalidArgument):
    """The template's Lambda layers hold the user's own code, and their functions were not supplied (``lambdas=``).

    ``layers`` lists each missing layer with what the file says about it, read as data."""

    def __init__(self, message=None, layers=(), **fields):
        super().__init__(message, **fields)
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
