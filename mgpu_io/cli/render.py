"""Human-readable output of the command line (rich), kept apart from the reports it prints.

Every string that comes from a file (names, paths) is escaped: rich would read ``[...]`` as markup. The library
speaks in parameter names (``overwrite=True``); :func:`to_flags` says the same in the command line's flags.
"""

import contextlib
import re

from rich.console import Console
from rich.markup import escape as _markup_escape
from rich.progress import BarColumn, DownloadColumn, MofNCompleteColumn, Progress, TextColumn, TimeRemainingColumn
from rich.table import Table
from rich.tree import Tree

_console = Console(highlight=False, soft_wrap=True)
_errors = Console(stderr=True, highlight=False)

#: Library parameters as the command line spells them (longest first, so that one never eats another).
FLAGS = {
    "overwrite=True": "--force",
    "allow_plain=True": "--allow-plain",
    "keep_config=True": "--keep-config",
    "include_optimizer=False": "--no-optimizer",
    "scan_weights=True": "--scan-weights",
    "strict=False": "--no-strict",
    "target='tf_keras'": "--target tf_keras",
    "target='keras3'": "--target keras3",
    "cpu=True": "--cpu",
    "builder=": "--builder ",
    "lambdas=": "--lambda ",
    "config=": "--config ",
    "diagram=": "--diagram ",
    "target=": "--target ",
}
_FLAG_PATTERN = re.compile("|".join(r"(?<![\w-])" + re.escape(k) + (r"(?![\w=])" if k[-1].isalnum() else "")
                                    for k in sorted(FLAGS, key=len, reverse=True)))


_LAMBDAS_PATTERN = re.compile(r"lambdas=\{((?:'[^']*': fn(?:, )?)+(?:\.\.\.)?)\}")


def to_flags(message):
    """A library message in the command line's terms.

    Example:
        >>> to_flags("Received: output=m.h5. Pass overwrite=True to replace it. Leave out config=.")
        'Received: output=m.h5. Pass --force to replace it. Leave out --config.'
        >>> to_flags("Pass them: lambdas={'pre': fn, 'gate': fn}.")
        'Pass them: --lambda pre=MODULE:FUNCTION --lambda gate=MODULE:FUNCTION.'
    """
    message = _LAMBDAS_PATTERN.sub(lambda m: " ".join([f"--lambda {name}=MODULE:FUNCTION" for name in
                                                      re.findall(r"'([^']*)': fn", m.group(1))]
                                                     + (["..."] if m.group(1).endswith("...") else [])), message)
    message = re.sub(r"lambdas\[(['\"])(.*?)\1\]=(['\"])(.*?)\3", r"--lambda \2=\4", message)
    translated = _FLAG_PATTERN.sub(lambda m: FLAGS[m.group(0)], message)
    return re.sub(r"(--[\w-]+) (?=[\s.,;:)]|$)", r"\1", translated)


_UNPRINTABLE = re.compile(r"[\x00-\x1f\x7f-\x9f\ud800-\udfff]")


def escape(text):
    r"""A string from a file, safe to print: control characters (terminal escape sequences) and undecodable bytes
    are shown as escapes, and rich markup is escaped.

    Example:
        >>> escape("dense_1\x1b[2J[red]")
        'dense_1\\x1b[2J\\[red]'
    """
    return _markup_escape(printable(text))


def printable(text):
    """``text`` with control characters and undecodable bytes shown as escapes (for plain output, errors)."""
    return _UNPRINTABLE.sub(lambda m: m.group(0).encode("unicode_escape", "backslashreplace").decode("ascii")
                            if not "\ud800" <= m.group(0) <= "\udfff" else f"\\u{ord(m.group(0)):04x}", str(text))


def _writer(variant):
    from mgpu_io.format.writers import BY_NAME

    return BY_NAME[variant].display if variant in BY_NAME else "writer not recorded"
FILE_TYPES = {
    "stub": "failed-save stub (no model inside)",
    "config": "model config (to_json/to_yaml)",
    "weights": "weights-only file",
    "model": "full model file",
}


def _names(names):
    return escape(", ".join(str(name) for name in names))


def _level_runs(levels):
    """Consecutive wrapper levels of the same writer and replica count, grouped."""
    runs = []
    for level in levels:
        if runs and (runs[-1][0]["variant"], runs[-1][0]["replicas"]) == (level["variant"], level["replicas"]):
            runs[-1].append(level)
        else:
            runs.append([level])
    return runs


def render_inspect(report):
    _console.print(f"[bold]{escape(report.file)}[/bold]: {FILE_TYPES[report.file_type]}")
    if report.file_type != "stub":
        levels = f"{report.depth} level{'s' if report.depth != 1 else ''}"
        kind = f"multi-GPU wrapper, {levels}" if report.is_wrapper else "plain model (not a wrapper)"
        version = escape(report.keras_version or "?")
        _console.print(f"  {kind}; written by Keras {version} ({escape(report.backend or 'no backend recorded')})")
        tree = node = Tree(escape(report.file))
        for run in _level_runs(report.levels):
            level = run[0]
            if len(run) > 2:  # repeated nesting collapses to one line, so the template's line is never cut off
                node = node.add(f"{len(run)} levels of {_writer(level['variant'])}, {level['replicas'] or '?'} "
                                f"replicas each")
                continue
            for level in run:
                node = node.add(
                    f"{escape(level['name'] or '(wrapper)')}: {_writer(level['variant'])}, "
                    f"{level['replicas'] or '?'} replicas, merges: {_names(level['merge_layers'])}"
                )
        outputs = _names(report.outputs) if report.outputs is not None else "not recorded"
        node.add(f"[bold]{escape(report.template or '?')}[/bold] (template): inputs: {_names(report.inputs)}; "
                 f"outputs: {outputs}")
        _console.print(tree)
        optimizer = "yes" if report.has_optimizer_weights else "no"
        _console.print(f"  weights: {report.weights}; optimizer state: {optimizer}")
        _render_lambdas(report.lambdas)
    for finding in report.findings:
        shown = finding.layers[:6] + (["..."] if len(finding.layers) > 6 else [])
        layers = f" ({_names(shown)})" if finding.layers else ""
        _console.print(f"  [yellow]! {finding.kind}[/yellow]: {escape(to_flags(finding.message))}{layers}")


_LAMBDA_KINDS = {"user": "(your code)", "keras": "(Keras' own)", "reference": "(by name)"}


def _render_lambdas(lambdas):
    """The template's Lambda layers, one line each, as read from the file (never run)."""
    if not lambdas:
        return
    _console.print(f"  Lambda layers ({len(lambdas)}, read as data, never run):")
    for lam in lambdas:
        code = lam.get("code") or {}
        what = [f"{code['function_name']}" if code.get("function_name") else None,
                f"from {code['source_file']}" if code.get("source_file") else None,
                f"names: {', '.join(code['names'][:8])}" if code.get("names") else None,
                f"function {lam['known'] or lam['reference']!r}" if lam["kind"] != "user" else None,
                f"arguments: {lam['arguments']}" if lam.get("arguments") else None,
                f"inputs: {', '.join(lam['inbound'])}" if lam.get("inbound") else None]
        _console.print(f"    {escape(lam['layer'])} {_LAMBDA_KINDS[lam['kind']]}: "
                       f"{escape('; '.join(part for part in what if part))}")


def render_unwrap(report):
    verb = "Wrote" if report.written else "Would write"
    what = f"template {escape(repr(report.template))}" if report.was_wrapper else "plain model (copied through)"
    held = "config only (its weights are in their own file)" if report.file_type == "config" else \
        f"{report.weights} weights in {len(report.layers)} layers"
    _console.print(f"{verb} {escape(report.output)}: {what}, {held}")
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
        _console.print(f"  [yellow]! {escape(to_flags(warning))}[/yellow]")


def render_transfer(result):
    report, output = result.report, result.output
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


#: A folder report lists every file up to this many; above it, only the failures (all with --verbose or --json).
ALL_ROWS_UP_TO = 30


def render_batch(report, verbose=False):
    counts = report.counts()
    every = verbose or len(report.files) <= ALL_ROWS_UP_TO
    shown = report.files if every else [r for r in report.files if r.status == "failed"]
    title = f"{escape(report.source)} -> {escape(report.output)}"
    if not every:
        title += f": the {len(shown)} failure{'s' if len(shown) != 1 else ''} of {len(report.files)} files " \
                 f"(--verbose lists every file)"
    table = Table(title=title)
    for column in ("file", "status", "detail"):
        table.add_column(column)
    for result in shown:
        if result.status == "failed":  # the first sentence: what is wrong (the whole message is in --json)
            detail, style = escape(to_flags((result.reason or "").split(". ")[0].rstrip(".") + ".")), "red"
        elif result.status == "skipped":
            detail, style = escape(to_flags(result.reason or "")), "yellow"
        else:
            detail = f"{result.depth} wrapper level{'s' if result.depth != 1 else ''} removed" if result.depth else ""
            style = None
        table.add_row(escape(result.path), result.status, detail, style=style)
    if shown:
        _console.print(table)
    prefix = "Would write: " if report.dry_run else ""
    _console.print(prefix + ", ".join(f"{count} {status}" for status, count in counts.items()))
