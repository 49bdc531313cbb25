"""``mgpu-io lambdas FILE -o my_lambdas.py``: the template's own Lambda functions as a reviewable module.

Each function's source is recovered from the stored bytecode as data (:mod:`mgpu_io.lambdas.recovery`); the module
holds one ``def`` per Lambda layer, named after the layer, and a header listing the names the functions use that
the file does not hold. The user reviews it, fills those in, and passes it back: ``load_model(path,
lambdas="my_lambdas.py")``, ``mgpu-io unwrap IN OUT.keras --lambda-module my_lambdas.py``. Nothing here runs.
"""

from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Optional

from mgpu_io.errors import InvalidArgument, Param, Text
from mgpu_io.lambdas.recovery import INSTALL_HINT, available, check_text, module_source


@dataclass
class LambdaSources:
    """What :func:`lambda_sources` recovered: each user Lambda (``inspect``'s dicts, ``recovered`` included),
    the module's text, and where it was written (``None``: not written)."""

    file: str
    lambdas: list[dict] = field(default_factory=list)
    module: str = ""
    output: Optional[str] = None
    decompilers: bool = True

    @property
    def recovered(self):
        return [lam["layer"] for lam in self.lambdas if "source" in (lam.get("recovered") or {})]

    def to_dict(self):
        return dict(asdict(self), recovered=self.recovered)

    def __str__(self):
        if self.output is None:
            return self.module.rstrip("\n")
        lines = [
            f"{self.output}: {len(self.recovered)} of {len(self.lambdas)} Lambda functions recovered from {self.file}"
        ]
        for lam in self.lambdas:
            recovered = lam.get("recovered") or {}
            what = (
                f"Python {recovered['python']}"
                if "source" in recovered
                else f"not recovered ({recovered.get('error')})"
            )
            lines.append(f"  {lam['layer']}: {what}{check_text(recovered.get('check'))}")
        if not self.decompilers:
            lines.append(f"  The decompilers are not installed: {INSTALL_HINT} recovers the sources.")
        lines.append(
            Text("  Review it, define the names its header lists, then pass it: ", Param("lambdas", str(self.output)))
        )
        return Text("\n").join(lines)


def lambda_sources(path, output=None, *, overwrite=False, check=False) -> LambdaSources:
    """Recover the source of the template's own Lambda functions in ``path`` and write them as a module.

    Args:
        path: a legacy model file or config (anything ``inspect`` reads).
        output: the ``.py`` file to write (complete or not at all); ``None``: only return the text.
        overwrite: replace an existing ``output``.
        check: also prove each source: compile it again on the writer's Python, where installed (pyenv or
            ``pythonX.Y`` on PATH), and compare its code with the stored one (``recovered["check"]``).

    Raises:
        InvalidArgument: the template holds no Lambda of the user's own.
        OutputError: ``output`` exists without ``overwrite``, or cannot be written.
    """
    from mgpu_io.format.inspect import inspect
    from mgpu_io.format.plan import check_output
    from mgpu_io.format.write import atomic_path

    if output is not None:
        check_output(path, output, overwrite)
    report = _inspected(path, inspect)
    user = [lam for lam in report.lambdas if lam.get("kind") == "user"]
    if not user:
        raise InvalidArgument(
            problem="The template holds no Lambda layer of your own code",
            parameter="filepath",
            expected="a file whose Lambda layers store their functions as bytecode",
            received=f"filepath={path} ({len(report.lambdas)} Lambda layers, none of them yours)",
            fix="Nothing to recover: load it as it is",
        )
    if check:
        from mgpu_io.lambdas.proof import check_recovered

        check_recovered(path, user)
    text = module_source(path, user, Path(output).name if output is not None else "my_lambdas.py")
    if output is not None:
        with atomic_path(Path(output)) as temporary:
            Path(temporary).write_text(text)
    return LambdaSources(
        file=str(path),
        lambdas=user,
        module=text,
        output=str(output) if output is not None else None,
        decompilers=available(),
    )


def _inspected(path, inspect):
    """``inspect``'s report of ``path``: a legacy file, or a Keras 3 ``.keras`` archive (its Lambdas recovered)."""
    from mgpu_io.format import door

    if door.sniff(Path(path)) == door.ZIP and door.describe(path).kind == door.KERAS_ARCHIVE:
        from mgpu_io.format.keras3 import inspect_keras3

        return inspect_keras3(path, door.describe(path))
    return inspect(path, scan_weights=False)
