"""Human-readable output of the command line (rich), kept apart from the reports it prints.

Every string that comes from a file (names, paths) is escaped: rich would read ``[...]`` as markup.
"""

import contextlib

from rich.console import Console
from rich.markup import escape
from rich.progress import BarColumn, DownloadColumn, MofNCompleteColumn, Progress, TextColumn, TimeRemainingColumn
from rich.table import Table
from rich.tree import Tree

_console = Console(highlight=False, soft_wrap=True)
_errors = Console(stderr=True, highlight=False)

WRITERS = {
    "keras": "keras.utils.multi_gpu_model",
    "tf.keras": "tf.keras.utils.multi_gpu_model",
    "kuza55": "kuza55 make_parallel",
    "avolkov1": "avolkov1 make_parallel",
    "generic": "data-parallel wrapper of an unknown writer",
    None: "writer not recorded",
}
FILE_TYPES = {
    "stub": "failed-save stub (no model inside)",
    "config": "JSON model config",
    "weights": "weights-only file",
    "model": "full model file",
}


def _names(names):
    return escape(", ".join(names))


def render_inspect(report):
    _console.print(f"[bold]{escape(report.file)}[/bold]: {FILE_TYPES[report.file_type]}")
    if report.file_type != "stub":
        levels = f"{report.depth} level{'s' if report.depth != 1 else ''}"
        kind = f"multi-GPU wrapper, {levels}" if report.is_wrapper else "plain model (not a wrapper)"
        version = escape(report.keras_version or "?")
        _console.print(f"  {kind}; written by Keras {version} ({escape(report.backend or 'no backend recorded')})")
        tree = node = Tree(escape(report.file))
        for level in report.levels:
            node = node.add(
                f"{escape(level['name'] or '(wrapper)')}: {WRITERS[level['variant']]}, "
                f"{level['replicas'] or '?'} replicas, merges: {_names(level['merge_layers'])}"
            )
        outputs = _names(report.outputs) if report.outputs is not None else "not recorded"
        node.add(f"[bold]{escape(report.template or '?')}[/bold] (template): inputs: {_names(report.inputs)}; "
                 f"outputs: {outputs}")
        _console.print(tree)
        optimizer = "yes" if report.has_optimizer_weights else "no"
        _console.print(f"  weights: {report.weights}; optimizer state: {optimizer}")
    for finding in report.findings:
        shown = finding.layers[:6] + (["..."] if len(finding.layers) > 6 else [])
        layers = f" ({_names(shown)})" if finding.layers else ""
        _console.print(f"  [yellow]! {finding.kind}[/yellow]: {escape(finding.message)}{layers}")


def render_unwrap(report):
    verb = "Wrote" if report.written else "Would write"
    what = f"template {escape(repr(report.template))}" if report.was_wrapper else "plain model (copied through)"
    _console.print(f"{verb} {escape(report.output)}: {what}, {report.weights} weights in {len(report.layers)} layers")
    if report.was_wrapper:
        levels = f"{report.depth} wrapper level{'s' if report.depth != 1 else ''}"
        outputs = _names(report.outputs) if report.outputs is not None else "not recorded (weights only)"
        _console.print(f"  removed {levels} ({report.replicas or '?'} replicas innermost); outputs: {outputs}")
    changes = f" ({escape(', '.join(report.config_changes))})" if report.config_changes else ""
    _console.print(f"  config: {report.config}{changes}")
    if report.file_type == "model":
        _console.print(f"  optimizer state: {report.optimizer}")
    if report.renamed_outputs:
        renames = ", ".join(f"{old} -> {new}" for old, new in report.renamed_outputs.items())
        _console.print(f"  training config re-keyed: {escape(renames)}")
    for warning in report.warnings:
        _console.print(f"  [yellow]! {escape(warning)}[/yellow]")


def render_transfer(report, output):
    _console.print(report)
    if report.ok:
        _console.print(f"Saved {escape(str(output))}: all {report.loaded} weighted layers loaded")
    else:
        _console.print(f"[yellow]Saved {escape(str(output))} with {report.loaded} layers loaded; "
                       f"{len(report.mismatched) + len(report.missing)} did not match[/yellow]")


def render_verify(report):
    verdict = "agree" if report.agree else "DIFFER"
    _console.print(f"{escape(report.a)} and {escape(report.b)} {verdict} (tolerance {report.tolerance:g}): "
                   f"{len(report.weights)} weight tensors compared"
                   + (f", predictions differ by {report.prediction_difference:.2g}"
                      if report.prediction_difference is not None else ""))
    for problem in report.problems:
        _console.print(f"  [red]! {escape(problem)}[/red]")


@contextlib.contextmanager
def byte_progress(description, enabled):
    """A progress bar over bytes written, on stderr; yields the ``progress(done, total)`` callback or ``None``."""
    if not enabled:
        yield None
        return
    columns = (TextColumn(description), BarColumn(), DownloadColumn(), TimeRemainingColumn())
    with Progress(*columns, console=_errors, transient=True) as bar:
        task = bar.add_task(description, total=None)
        yield lambda done, total: bar.update(task, completed=done, total=total)


@contextlib.contextmanager
def file_progress(description, enabled):
    """A progress bar over files, on stderr; yields the ``progress(done, total, result)`` callback or ``None``."""
    if not enabled:
        yield None
        return
    columns = (TextColumn(description), BarColumn(), MofNCompleteColumn(), TextColumn("{task.fields[last]}"))
    with Progress(*columns, console=_errors, transient=True) as bar:
        task = bar.add_task(description, total=None, last="")
        yield lambda done, total, result: bar.update(task, completed=done, total=total, last=escape(result.path))


def render_batch(report):
    counts = report.counts()
    table = Table(title=f"{escape(report.source)} -> {escape(report.output)}")
    for column in ("file", "status", "detail"):
        table.add_column(column)
    for result in report.files:
        if result.status == "failed":  # the first sentence: what is wrong (the whole message is in --json)
            detail, style = escape((result.reason or "").split(". ")[0].rstrip(".") + "."), "red"
        else:
            detail = f"{result.depth} wrapper level{'s' if result.depth != 1 else ''} removed" if result.depth else ""
            style = None
        table.add_row(escape(result.path), result.status, detail, style=style)
    _console.print(table)
    _console.print(", ".join(f"{count} {status}" for status, count in counts.items()))
