"""Human-readable output of the command line (rich), kept apart from the reports it prints.

Every string that comes from a file (names, paths) is escaped: rich would read ``[...]`` as markup. The library
speaks in parameter names (``overwrite=True``); :func:`message` (an error) and :func:`in_flags` (a report) say the
same words in the command line's flags: each :class:`~mgpu_io.errors.Param` of an error's fields or of a report's
:class:`~mgpu_io.errors.Text`, named by :func:`flag`. No message is ever parsed.

rich is imported only where it shows something (a terminal, a progress bar): a script that pipes a report gets the
same plain text without paying for it (about 45 ms of the command's start).
"""

import contextlib
import functools
import json
import os
import sys

import typer

from mgpu_io.cli.process import limit_error
from mgpu_io.errors import MgpuIOError, first_line, render
from mgpu_io.format.text import printable

#: Each library parameter as the command line names it: a switch by ``(parameter, value)``, an option that takes a
#: value by its parameter (the value follows the flag).
FLAG_OF = {
    ("overwrite", True): "--force",
    ("allow_plain", True): "--allow-plain",
    ("keep_config", True): "--keep-config",
    ("include_optimizer", False): "--no-optimizer",
    ("scan_weights", True): "--scan-weights",
    ("strict", False): "--no-strict",
    ("cpu", True): "--cpu",
    ("verbose", True): "--verbose",
    ("safe_mode", False): "--unsafe-trust-file",
    ("dry_run", True): "--dry-run",
    ("target", "tf_keras"): "--target tf_keras",
    ("target", "keras3"): "--target keras3",
    "target": "--target",
    "jobs": "--jobs",
    "config": "--config",
    "diagram": "--diagram",
    "builder": "--builder",
    "lambdas": "--lambda",
    "custom_objects": "--custom-objects",
    ("format", "saved_model"): "--format saved_model",
    ("format", "onnx"): "--format onnx",
    ("format", "litert"): "--format litert",
    "format": "--format",
}


def flag(param):
    """A :class:`~mgpu_io.errors.Param` as the command line names it (a parameter it has no flag for: as the
    library does).

    Example:
        >>> from mgpu_io.errors import Param
        >>> flag(Param("overwrite", True)), flag(Param("config")), flag(Param("jobs", 4)), flag(Param("output", "m.h5"))
        ('--force', '--config', '--jobs 4', "output='m.h5'")
    """
    if param.name == "custom_objects" and param.has_value:  # a spec given, or the classes to give, by name
        if isinstance(param.value, str):
            return f"{FLAG_OF['custom_objects']} {param.value}"
        return " ".join(f"{FLAG_OF['custom_objects']} MODULE:{name}" for name in param.value)
    if param.name == "lambdas" and param.has_value:
        return _lambda_flags(param.value, param)
    if param.has_value:
        try:
            switch = FLAG_OF.get((param.name, param.value))
        except TypeError:  # a value that is no key (a list)
            switch = None
        if switch is not None:
            return switch
    option = FLAG_OF.get(param.name)
    if option is None:
        return str(param)
    return (
        f"{option} {str(param).partition('=')[2]}" if param.has_value else option
    )  # the value as the library wrote it


def _lambda_flags(value, param):
    """``lambdas=`` as the command line gives it: the layers whose functions to pass (a tuple of their names), one
    function given (``{layer: "module:function"}``), or a Lambda module's path.

    Example:
        >>> from mgpu_io.errors import Param
        >>> flag(Param("lambdas", ("pre", "gate"))), flag(Param("lambdas", {"pre": "m:f"}))
        ('--lambda pre=MODULE:FUNCTION --lambda gate=MODULE:FUNCTION', '--lambda pre=m:f')
        >>> flag(Param("lambdas", "my_lambdas.py"))
        '--lambda-module my_lambdas.py'
    """
    if isinstance(value, tuple):
        return " ".join(f"--lambda {layer}=MODULE:FUNCTION" for layer in value)
    if isinstance(value, dict):
        return " ".join(f"--lambda {layer}={spec}" for layer, spec in value.items())
    if isinstance(value, str):
        return f"--lambda-module {value}"
    return str(param)  # a value the command line cannot give (the library's own call)


def message(error):
    """An error's message in the command line's terms: its parameters (:class:`~mgpu_io.errors.Param`, in its
    fields or its :class:`~mgpu_io.errors.Text`) named by :func:`flag`; an error that is not ours as it is.

    Example:
        >>> from mgpu_io.errors import OutputError, Param
        >>> message(OutputError(problem="It exists", fix=("Pass ", Param("overwrite", True), " to replace it")))
        'It exists. Pass --force to replace it.'
    """
    return error.text().render(flag) if isinstance(error, MgpuIOError) else str(error)


def in_flags(text):
    """A report's text in the command line's terms: the parameters its :class:`~mgpu_io.errors.Text` names, by
    :func:`flag`; plain text as it is.

    Example:
        >>> from mgpu_io.errors import Param, Text
        >>> in_flags(Text("a plain model: pass ", Param("allow_plain", True), " to write it"))
        'a plain model: pass --allow-plain to write it'
    """
    return render(text, lambda param: printable(flag(param)))  # a flag may quote a name from the file


@functools.cache
def _console(stderr=False):
    from rich.console import Console

    return Console(stderr=stderr, highlight=False, soft_wrap=not stderr)  # soft wrap: lines are never cropped


def _styled():
    """Whether stdout shows styles (rich's own rule: a terminal, unless NO_COLOR; or FORCE_COLOR)."""
    if os.environ.get("FORCE_COLOR"):
        return True
    if sys.stdout is None:  # closed (the console script makes it /dev/null; a host program may not)
        return False
    return sys.stdout.isatty() and not os.environ.get("NO_COLOR") and os.environ.get("TERM") != "dumb"


def _bar_shown():
    """Whether a progress bar can be seen: on a terminal's stderr (elsewhere rich would leave a blank line)."""
    return sys.stderr is not None and (sys.stderr.isatty() or bool(os.environ.get("FORCE_COLOR")))


def _markup_escape(text):
    from rich.markup import escape

    return escape(text)


def escape(text):
    r"""A string from a file, safe to print: control characters (terminal escape sequences) and undecodable bytes
    are shown as escapes, and rich markup is escaped.

    Example:
        >>> escape("dense_1\x1b[2J[red]")
        'dense_1\\x1b[2J\\[red]'
    """
    return _markup_escape(printable(text))


def show(report, **options):
    """Print a report's text (``str(report)``, or ``report.describe(**options)``) in the command line's flags; the
    lines that start with ``!`` are warnings, in yellow. Long lines are never cut: a terminal wraps them,
    and a pipe gets them whole."""
    text = report.describe(**options) if options else str(report)
    if sys.stdout is None:
        return
    lines = in_flags(text).splitlines()
    if not _styled():
        sys.stdout.write("".join(line + "\n" for line in lines))
        sys.stdout.flush()
        return
    for line in lines:
        line = _markup_escape(line)
        _console().print(f"[yellow]{line}[/yellow]" if line.lstrip().startswith("!") else line)


@contextlib.contextmanager
def byte_progress(description, enabled):
    """A progress bar over bytes written, on stderr; yields the ``progress(done, total)`` callback or ``None``."""
    if not (enabled and _bar_shown()):
        yield None
        return
    from rich.progress import BarColumn, DownloadColumn, Progress, TextColumn, TimeRemainingColumn

    columns = (TextColumn(description), BarColumn(), DownloadColumn(), TimeRemainingColumn())
    with Progress(*columns, console=_console(stderr=True), transient=True) as bar:
        task = bar.add_task(description, total=None)
        yield lambda done, total: bar.update(task, completed=done, total=total)


@contextlib.contextmanager
def file_progress(description, enabled):
    """A progress bar over files, on stderr; yields the ``progress(done, total, result)`` callback or ``None``."""
    if not (enabled and _bar_shown()):
        yield None
        return
    from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn

    columns = (TextColumn(description), BarColumn(), MofNCompleteColumn(), TextColumn("{task.fields[last]}"))
    with Progress(*columns, console=_console(stderr=True), transient=True) as bar:
        task = bar.add_task(description, total=None, last="")
        yield lambda done, total, result: bar.update(task, completed=done, total=total, last=escape(result.path))


# --- errors: one line (or one JSON object) and exit code 1 ------------------------------------------------------


#: Set by the global options: ``--quiet`` prints errors only; ``--verbose`` shows a bug's traceback.
SETTINGS = {"quiet": False, "verbose": False}


def error_object(error):
    """An error as ``--json`` prints it; its message as printable as the ``Error:`` line's (a script that prints it
    must not pass a file's escape sequences to a terminal)."""
    from mgpu_io.format.text import printable

    return {"error": {"type": type(error).__name__, "message": printable(message(error))}}


def fail(error, as_json=False):
    """One line on stderr naming the fix in flags, or with ``--json`` one JSON object on stdout; exit code 1."""
    if as_json:
        typer.echo(json.dumps(error_object(error), indent=2))
    else:
        typer.echo(f"Error: {error_object(error)['error']['message']}", err=True)
    raise typer.Exit(code=1)


def reported(error):
    """The error to report: a library error as it is; a bug of ours as one line, unless ``--verbose`` or
    MGPU_IO_TRACEBACK=1 asks for its traceback (then it is raised)."""
    if isinstance(error, MgpuIOError):
        return error
    limited = limit_error(error)
    if limited is not None:
        return limited
    if SETTINGS["verbose"] or os.environ.get("MGPU_IO_TRACEBACK"):
        raise error
    first = first_line(error, default="")
    return RuntimeError(
        f"internal error ({type(error).__name__}: {first}). This is a bug in mgpu-io; nothing "
        f"partial was written. Rerun with --verbose to see where, and report it."
    )


@contextlib.contextmanager
def one_line_errors(as_json=False):
    """A library error becomes one ``Error:`` line (a JSON object with ``--json``) and exit code 1; so does a bug
    (see :func:`reported`)."""
    try:
        yield
    except typer.Exit:
        raise
    except Exception as error:
        fail(reported(error), as_json)


def show_unless_quiet(report, **options):
    """Print a report readably, unless ``--quiet``."""
    if not SETTINGS["quiet"]:
        show(report, **options)
