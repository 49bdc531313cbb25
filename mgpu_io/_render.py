"""Human-readable output of the command line (rich), kept apart from the reports it prints."""

from rich.console import Console
from rich.tree import Tree

_console = Console(highlight=False)


def render_inspect(report):
    title = {
        "stub": "failed-save stub (no model inside)",
        "config": "JSON model config",
        "weights": "weights-only file",
        "model": "full model file",
    }[report.file_type]
    _console.print(f"[bold]{report.file}[/bold]: {title}")
    if report.file_type != "stub":
        kind = (f"multi-GPU wrapper, {report.depth} level{'s' if report.depth != 1 else ''}"
                if report.is_wrapper else "plain model (not a wrapper)")
        _console.print(f"  {kind}; written by Keras {report.keras_version or '?'} ({report.backend or 'no backend recorded'})")
        tree = Tree("file")
        node = tree
        for level in report.levels:
            node = node.add(
                f"{level['name'] or '(wrapper)'}: {level['variant'] or 'unknown writer'}, "
                f"{level['replicas'] or '?'} replicas, merges {level['merge_layers']}"
            )
        node.add(f"[bold]{report.template}[/bold] (template): inputs {report.inputs}, outputs {report.outputs}")
        _console.print(tree)
        _console.print(f"  weights: {report.weights}; optimizer state: {'yes' if report.has_optimizer_weights else 'no'}")
    for finding in report.findings:
        layers = f" [{', '.join(finding.layers[:6])}{', ...' if len(finding.layers) > 6 else ''}]" if finding.layers else ""
        _console.print(f"  [yellow]! {finding.kind}[/yellow]: {finding.message}{layers}")


def render_unwrap(report):
    verb = "Would write" if not report.written else "Wrote"
    what = f"template {report.template!r}" if report.was_wrapper else "plain model (copied through)"
    _console.print(f"{verb} {report.output}: {what}, {report.weights} weights in {len(report.layers)} layers")
    if report.was_wrapper:
        _console.print(f"  removed {report.depth} wrapper level{'s' if report.depth != 1 else ''}"
                       f" ({report.replicas or '?'} replicas innermost); outputs {report.outputs}")
    _console.print(f"  config: {report.config}" + (f" ({', '.join(report.config_changes)})" if report.config_changes else ""))
    if report.file_type == "model":
        _console.print(f"  optimizer state: {report.optimizer}")
    if report.renamed_outputs:
        _console.print(f"  training config re-keyed: {report.renamed_outputs}")
    for warning in report.warnings:
        _console.print(f"  [yellow]! {warning}[/yellow]")
