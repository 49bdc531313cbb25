"""The ``mgpu-io`` command line: a thin face over the library.

Each command parses its arguments, makes one library call, and renders the report; a library error becomes one
line on stderr, in the command line's flags, and exit code 1. Commands that do not build a model never import
Keras or TensorFlow. The commands are here; what they print is :mod:`.render`'s, and the process around them
(signals, streams, limits, TensorFlow's quiet start) :mod:`.process`'s.
"""

import contextlib
import json
import os
import signal
import sys
from pathlib import Path
from typing import Annotated, Optional

import typer
import typer.core

import mgpu_io
from mgpu_io._version import __version__
from mgpu_io.cli.process import (
    SIGPIPE,
    Interrupted,
    guard_cpu_limit,
    guard_streams,
    interrupt,
    limit_error,
    quiet_environment,
    signal_text,
    start_quietly,
)
from mgpu_io.cli.render import SETTINGS, error_object, fail, one_line_errors, reported, show_unless_quiet

#: The global options, accepted after the command too (`mgpu-io unwrap -q in.h5 out.h5`).
GLOBAL_FLAGS = ("-q", "--quiet", "--verbose", "--version")


def globals_first(args):
    """``args`` with the global flags given after the command moved before it (nothing after ``--`` is moved).

    Example:
        >>> globals_first(["unwrap", "-q", "in.h5", "out.h5"])
        ['-q', 'unwrap', 'in.h5', 'out.h5']
    """
    args = list(args)
    command = next((i for i, arg in enumerate(args) if not arg.startswith("-")), None)
    if command is None:
        return args
    tail = args[command + 1 :]
    rest = tail[tail.index("--") :] if "--" in tail else []
    tail = tail[: len(tail) - len(rest)]
    moved = [arg for arg in tail if arg in GLOBAL_FLAGS]
    return args[:command] + moved + [args[command]] + [arg for arg in tail if arg not in GLOBAL_FLAGS] + rest


class _Group(typer.core.TyperGroup):
    """typer's group, taking the global options after the command as well as before it."""

    def parse_args(self, ctx, args):
        return super().parse_args(ctx, globals_first(args))


app = typer.Typer(
    cls=_Group,
    name="mgpu-io",
    help="Rescue Keras models saved from multi-GPU data-parallel wrappers (multi_gpu_model, make_parallel).\n\n"
    "Examples:\n\n"
    "  mgpu-io inspect parallel_model.h5\n\n"
    "  mgpu-io unwrap parallel_model.h5 model.h5",
    no_args_is_help=True,
    context_settings={"help_option_names": ["-h", "--help"]},
    pretty_exceptions_enable=False,
    rich_markup_mode=None,
)


def _version(value: bool):
    if value:
        typer.echo(f"mgpu-io {__version__}")
        raise typer.Exit()


@app.callback()
def main(
    version: Annotated[
        bool, typer.Option("--version", callback=_version, is_eager=True, help="Print the version and exit.")
    ] = False,
    quiet: Annotated[
        bool,
        typer.Option(
            "--quiet", "-q", help="Print errors only (the exit code tells the rest); --json output is still printed."
        ),
    ] = False,
    verbose: Annotated[
        bool,
        typer.Option("--verbose", help="Show the traceback of an internal error (a bug), and every file of a folder."),
    ] = False,
):
    """Rescue Keras models saved from multi-GPU data-parallel wrappers."""
    SETTINGS.update(quiet=quiet, verbose=verbose)


#: The options that `unwrap` and `verify` share for the template's own Lambda layers.
LambdaModuleOption = Annotated[
    Optional[Path],
    typer.Option(
        "--lambda-module",
        metavar="PY",
        help="A module with one function per Lambda layer, named after it (what `mgpu-io lambdas` writes).",
    ),
]
TrustOption = Annotated[
    bool,
    typer.Option(
        "--unsafe-trust-file",
        help="Only for files you trust (Keras' safe_mode=False): rebuild each Lambda from its source recovered "
        "from the file, and run it.",
    ),
]


@app.command()
def inspect(
    files: Annotated[
        list[str],
        typer.Argument(
            metavar="FILE...",
            help="One or more .h5 model or weights files, "
            "JSON/YAML configs, Keras 3 .keras or .weights.h5 files, TF 2.x SavedModel folders or TF checkpoints "
            "(each told by its content); or URLs (s3://, gs://, hf://: the structure is read, not the weights).",
        ),
    ],
    as_json: Annotated[bool, typer.Option("--json", help="Print one JSON object (keys in docs/cli.md).")] = False,
    scan_weights: Annotated[
        Optional[bool],
        typer.Option(
            "--scan-weights/--no-scan-weights",
            help="Read every weight (or none) to look for "
            "NaN/Inf. Default: all up to 256 MiB, else BatchNormalization layers only.",
        ),
    ] = None,
    diagram: Annotated[
        Optional[Path],
        typer.Option("--diagram", metavar="SVG", help="Also draw the wrapper next to its template as SVG."),
    ] = None,
    force: Annotated[bool, typer.Option("--force", help="Replace the --diagram file if it exists.")] = False,
    config: Annotated[
        Optional[Path],
        typer.Option(
            "--config",
            metavar="ARCH",
            help="For a TF checkpoint: the architecture JSON saved beside it (a checkpoint records no layer names).",
        ),
    ] = None,
):
    """Say what a Keras file holds: wrapper or not, nesting, replicas, template, inputs, outputs, findings.

    Examples:

      mgpu-io inspect parallel_model.h5

      mgpu-io inspect checkpoint-weights.h5 --json | jq .replicas

      mgpu-io inspect parallel_model.h5 --diagram wrapper.svg

      mgpu-io inspect s3://bucket/checkpoints/epoch_10.h5
    """
    from mgpu_io.api import inspect_route
    from mgpu_io.errors import InvalidArgument
    from mgpu_io.format.text import printable

    if diagram is not None and len(files) > 1:
        fail(
            InvalidArgument(
                problem="--diagram draws one file",
                parameter="diagram",
                expected="one FILE with --diagram",
                received=f"{len(files)} files",
                fix="Inspect them one at a time to draw each",
            ),
            as_json,
        )
    if any(inspect_route(file).tensorflow for file in files):  # the library says what each FILE is
        start_quietly("tensorflow")
    entries, failed = [], False
    for file in files:
        try:
            report = mgpu_io.inspect(file, scan_weights=scan_weights, diagram=diagram, overwrite=force, config=config)
        except Exception as error:
            if len(files) == 1:
                fail(reported(error), as_json)
            error = reported(error)
            entries.append(dict(file=str(file), **error_object(error)))
            failed = True
            if not as_json:
                typer.echo(
                    f"Error: {printable(str(file))}: {printable(error_object(error)['error']['message'])}", err=True
                )
            continue
        entries.append(report.to_dict())
        if not as_json:
            show_unless_quiet(report)
    if as_json:
        typer.echo(json.dumps(entries[0] if len(files) == 1 else entries, indent=2))
    if failed:
        raise typer.Exit(code=1)


@app.command()
def unwrap(
    source: Annotated[
        str,
        typer.Argument(
            metavar="IN",
            help="The wrapper file (.h5 model, .h5 weights, JSON, YAML, "
            "SavedModel folder, TF checkpoint), or a folder of legacy files; or a URL (s3://bucket/model.h5, or a "
            "prefix s3://bucket/run1/).",
        ),
    ],
    output: Annotated[
        str,
        typer.Argument(
            metavar="OUT",
            help="Where to write the clean template file (or the output folder, for a folder IN); a local path or "
            "a URL.",
        ),
    ],
    config: Annotated[
        Optional[Path],
        typer.Option(
            "--config",
            metavar="ARCH",
            help="For a weights-only IN: the architecture JSON (or full .h5) "
            "saved beside it; lays out and converts the weights by its graph. For a folder IN: used for "
            "its weights-only files.",
        ),
    ] = None,
    target: Annotated[
        str,
        typer.Option(
            "--target",
            help="The Keras that will load OUT: keras3 or tf_keras (they differ in "
            "Keras 2's hard_sigmoid, which is made exact for the target).",
        ),
    ] = "keras3",
    keep_config: Annotated[
        bool,
        typer.Option(
            "--keep-config",
            help="Write the writer's config and weights verbatim, unconverted (for the old Keras stack).",
        ),
    ] = False,
    cpu: Annotated[
        bool,
        typer.Option(
            "--cpu",
            help="With --keep-config, still convert CuDNNLSTM/CuDNNGRU to "
            "LSTM/GRU so the old Keras runs the model on a CPU (always done otherwise).",
        ),
    ] = False,
    no_optimizer: Annotated[bool, typer.Option("--no-optimizer", help="Leave the optimizer state out.")] = False,
    allow_plain: Annotated[
        bool,
        typer.Option(
            "--allow-plain",
            help="Copy a plain (non-wrapper) model through, normalised, instead "
            "of refusing it (in a folder: instead of skipping it).",
        ),
    ] = False,
    force: Annotated[bool, typer.Option("--force", help="Replace OUT if it exists.")] = False,
    dry_run: Annotated[bool, typer.Option("--dry-run", help="Print the plan; write nothing.")] = False,
    as_json: Annotated[bool, typer.Option("--json", help="Print the report as one JSON object.")] = False,
    jobs: Annotated[
        Optional[int],
        typer.Option(
            "--jobs",
            "-j",
            help="Worker processes for a folder IN (default: the machine's cores); for a bucket prefix IN, the "
            "files transferred at once while they are repaired one by one (default: one file after another).",
        ),
    ] = None,
    verbose: Annotated[
        bool,
        typer.Option(
            "--verbose",
            "-v",
            help="For a folder IN: list every file, not only the failures (always every file with --json).",
        ),
    ] = False,
    lambda_: Annotated[
        Optional[list[str]],
        typer.Option(
            "--lambda",
            metavar="LAYER=MODULE:FUNCTION",
            help="For a .keras OUT: the function "
            "of the template's own Lambda layer LAYER (your code: MODULE imported from the "
            "current folder, or a .py file). Repeat it for each Lambda; `inspect` lists them.",
        ),
    ] = None,
    lambda_module: LambdaModuleOption = None,
    unsafe_trust_file: TrustOption = False,
    custom_objects: Annotated[
        Optional[list[str]],
        typer.Option(
            "--custom-objects",
            metavar="MODULE:CLASS",
            help="For a .keras OUT: a custom class of the template (your code: MODULE imported from the current folder, or a "
            ".py file); MODULE alone gives every class it defines. Repeat it for each.",
        ),
    ] = None,
    format_: Annotated[
        Optional[str],
        typer.Option(
            "--format",
            metavar="FORMAT",
            help="A deployable OUT: saved_model (a SavedModel folder for TF Serving), onnx or litert (also named by "
            "an OUT ending in .onnx or .tflite). With a folder IN, every file is exported so. Each artifact is run "
            "by its own runtime and compared with the model before it is moved into place.",
        ),
    ] = None,
):
    """Write the innermost template of a multi-GPU wrapper file as a clean file of the same kind.

    Full model in, full model out; weights only in, weights only out; JSON config in, JSON config out; an OUT
    ending in .keras gets Keras 3's native format (this loads Keras). Every level of nesting is removed, the
    config is normalised so that Keras 3 and tf_keras load it, and the training config and optimizer state are
    carried over. IN is never modified.

    Examples:

      mgpu-io unwrap parallel_model.h5 model.h5

      mgpu-io unwrap weights-epoch10.h5 template-weights.h5

      mgpu-io unwrap weights.h5 clean-weights.h5 --config model.json

      mgpu-io unwrap saved_model_dir/ model.h5

      mgpu-io unwrap ckpt-10.index clean-weights.h5 --config model.json

      mgpu-io unwrap parallel_model.h5 model.keras

      mgpu-io unwrap parallel_model.h5 model.keras --lambda preprocess=my_lambdas.py:preprocess

      mgpu-io unwrap parallel_model.h5 model.h5 --dry-run --json

      mgpu-io unwrap checkpoints/ repaired/ --jobs 4

      mgpu-io unwrap parallel_model.h5 model.onnx

      mgpu-io unwrap parallel_model.h5 model.tflite

      mgpu-io unwrap parallel_model.h5 serving/1 --format saved_model

      mgpu-io unwrap s3://bucket/run1/ s3://bucket/run1-keras3/ --format onnx

      mgpu-io unwrap s3://bucket/run1/ s3://bucket/run1-clean/ --jobs 4

    A folder IN is repaired file by file into the same places under OUT (wrappers unwrapped, plain models skipped
    or, with --allow-plain, normalised, failures listed with their reason); the exit code is 1 when any file
    failed. Options that do not apply (--target tf_keras, --keep-config or --cpu with a .keras OUT) are refused.

    Lambda layers of the template are never run from the file: a .h5/JSON OUT refers to each by its layer name
    (load it with custom_objects={LAYER: function}); a .keras OUT needs each function, given with --lambda.
    """
    from mgpu_io.api import unwrap_route

    with one_line_errors(as_json):
        route = unwrap_route(source, output, format=format_, dry_run=dry_run)  # the library says what IN is
        _start_runtimes(route)
        with _unwrap_progress(
            route, Path(source).name, quiet=as_json or SETTINGS["quiet"], dry_run=dry_run
        ) as progress:
            report = mgpu_io.unwrap(
                source if route.remote else Path(source),
                output if route.remote else Path(output),
                config=config,
                target=target,
                keep_config=keep_config,
                cpu=cpu,
                include_optimizer=not no_optimizer,
                allow_plain=allow_plain,
                overwrite=force,
                dry_run=dry_run,
                jobs=jobs,
                progress=progress,
                safe_mode=not unsafe_trust_file,
                lambdas=_lambdas_argument(lambda_, lambda_module),
                custom_objects=list(custom_objects or []) or None,  # specs, imported by the library
                format=format_ or None,
            )
    _show_unwrap(report, route, as_json=as_json, verbose=verbose)


def _start_runtimes(route):
    """Start, quietly, the runtimes an unwrap call will start: TensorFlow to read its input, Keras to build its
    output."""
    if route.tensorflow:
        start_quietly("tensorflow")
    if route.keras:
        start_quietly("keras")


def _unwrap_progress(route, name, *, quiet, dry_run):
    """The progress bar of an unwrap call: by file for a folder, by byte for a large local file."""
    from mgpu_io.cli.render import byte_progress, file_progress

    if route.folder:
        return file_progress("repairing", enabled=not quiet)
    big = route.size is not None and route.size > PROGRESS_ABOVE and not (quiet or dry_run)
    return byte_progress(f"unwrapping {name}", enabled=big)


def _show_unwrap(report, route, *, as_json, verbose):
    """Print an unwrap call's report (a folder's: with every file under ``--verbose``); exit 1 where a folder's file
    failed."""
    if as_json:
        typer.echo(json.dumps(report.to_dict(), indent=2))
    elif route.folder:
        show_unless_quiet(report, verbose=verbose or SETTINGS["verbose"])
    else:
        show_unless_quiet(report)
    if route.folder and not report.ok:
        raise typer.Exit(code=1)


def _lambda_options(values):
    """``--lambda LAYER=MODULE:FUNCTION`` options as the library's ``lambdas=`` mapping (functions still named)."""
    from mgpu_io.errors import InvalidArgument

    mapping = {}
    for value in values or []:
        layer, sep, spec = value.partition("=")
        if not sep or not layer or not spec:
            raise InvalidArgument(
                problem="--lambda takes LAYER=MODULE:FUNCTION",
                parameter="lambdas",
                expected="e.g. --lambda preprocess=my_lambdas:preprocess",
                received=f"--lambda {value}",
                fix="Name the Lambda layer, then the function",
            )
        mapping[layer] = spec
    return mapping or None


def _lambdas_argument(values, module):
    """``--lambda`` options or a ``--lambda-module`` file (not both) as the library's ``lambdas=``."""
    from mgpu_io.errors import InvalidArgument

    if module is not None and values:
        raise InvalidArgument(
            problem="--lambda and --lambda-module both give Lambda functions",
            parameter="lambdas",
            expected="one of them",
            received=f"--lambda-module {module} and {len(values)} --lambda",
            fix="Put every function in the module (one per layer, named after it)",
        )
    return str(module) if module is not None else _lambda_options(values)


@app.command()
def lambdas(
    file: Annotated[Path, typer.Argument(metavar="FILE", help="A legacy model file or config with Lambda layers.")],
    output: Annotated[
        Optional[Path], typer.Option("--output", "-o", metavar="PY", help="Write the module here (else print it).")
    ] = None,
    force: Annotated[bool, typer.Option("--force", help="Replace PY if it exists.")] = False,
    as_json: Annotated[bool, typer.Option("--json", help="Print the report as one JSON object.")] = False,
    check: Annotated[
        bool,
        typer.Option(
            "--check",
            help="Prove each source: compile it again on the writer's Python (pyenv or pythonX.Y on PATH) and "
            "compare its code with the stored one.",
        ),
    ] = False,
):
    """Recover the source of the template's own Lambda functions from their stored bytecode (read as data, never
    run) and write them as a module to review: one function per Lambda layer, named after it.

    Needs the decompilers: pip install "mgpu-io[lambdas]" (GPL-3.0). Then pass the module back with
    --lambda-module PY (unwrap, verify) or lambdas="PY" (mgpu_io.load_model).

    Examples:

      mgpu-io lambdas parallel_model.h5 -o my_lambdas.py

      mgpu-io lambdas parallel_model.h5 -o my_lambdas.py --check

      mgpu-io unwrap parallel_model.h5 model.keras --lambda-module my_lambdas.py
    """
    with one_line_errors(as_json):
        report = mgpu_io.lambda_sources(file, output, overwrite=force, check=check)
    if as_json:
        typer.echo(json.dumps(report.to_dict(), indent=2))
    else:
        typer.echo(str(report))


#: Single files above this size get a progress bar.
PROGRESS_ABOVE = 256 << 20


@app.command()
def transfer(
    source: Annotated[Path, typer.Argument(metavar="SRC", help="A wrapper file: full model or weights only.")],
    output: Annotated[Path, typer.Argument(metavar="OUT", help="Where to save the base model (.keras or .h5).")],
    builder: Annotated[
        str,
        typer.Option(
            "--builder",
            metavar="MODULE:FUNCTION",
            help="Your function that builds the base "
            "model, e.g. train:build_model (MODULE is imported from the current folder).",
        ),
    ],
    strict: Annotated[
        bool, typer.Option("--strict/--no-strict", help="Refuse any mismatch (default), or load the layers that match.")
    ] = True,
    force: Annotated[bool, typer.Option("--force", help="Replace OUT if it exists.")] = False,
    as_json: Annotated[bool, typer.Option("--json", help="Print the report as one JSON object.")] = False,
    config: Annotated[
        Optional[Path],
        typer.Option(
            "--config", metavar="ARCH", help="For a TF checkpoint SRC: the architecture JSON saved beside it."
        ),
    ] = None,
):
    """Build the base model with your code, load the wrapper's weights into it, print the report, save it.

    Layers are matched by structure (weighted layers in order) and every shape is checked. This imports Keras
    and runs your builder function.

    Examples:

      mgpu-io transfer weights-epoch10.h5 model.keras --builder train:build_model

      mgpu-io transfer parallel_model.h5 model.h5 --builder mypkg.models:resnet --no-strict --json
    """
    start_quietly("keras")
    with one_line_errors(as_json):
        result = mgpu_io.transfer(source, output, builder, strict=strict, overwrite=force, config=config)
    if as_json:
        typer.echo(json.dumps(result.to_dict(), indent=2))
    else:
        show_unless_quiet(result)
    if not result.ok:
        raise typer.Exit(code=1)


@app.command()
def verify(
    a: Annotated[Path, typer.Argument(metavar="A", help="A model file (.h5 wrapper or plain, or .keras).")],
    b: Annotated[
        Path,
        typer.Argument(
            metavar="B",
            help="Another model file, or an artifact written from A (.onnx, .tflite, an exported SavedModel "
            "folder), run by its own runtime.",
        ),
    ],
    tolerance: Annotated[float, typer.Option("--tolerance", help="Largest allowed absolute difference.")] = 1e-6,
    as_json: Annotated[bool, typer.Option("--json", help="Print the report as one JSON object.")] = False,
    lambda_: Annotated[
        Optional[list[str]],
        typer.Option(
            "--lambda",
            metavar="LAYER=MODULE:FUNCTION",
            help="The function of the template's own Lambda layer LAYER (your code), for both models; as for `unwrap`.",
        ),
    ] = None,
    lambda_module: LambdaModuleOption = None,
    unsafe_trust_file: TrustOption = False,
    custom_objects: Annotated[
        Optional[list[str]],
        typer.Option(
            "--custom-objects",
            metavar="MODULE:CLASS",
            help="For both models: a custom class of the template (your code: MODULE imported from the current folder, or a "
            ".py file); MODULE alone gives every class it defines. Repeat it for each.",
        ),
    ] = None,
):
    """Load two models and compare them weight by weight and on a random batch; exit 0 only if they agree.

    Wrapper files are unwrapped first, so a repaired file can be checked against its original. This imports Keras.

    Examples:

      mgpu-io verify parallel_model.h5 model.keras

      mgpu-io verify old.h5 new.h5 --tolerance 1e-5 --json

      mgpu-io verify parallel_model.h5 model.onnx
    """
    start_quietly("keras")
    with one_line_errors(as_json):
        report = mgpu_io.verify(
            a,
            b,
            tolerance=tolerance,
            lambdas=_lambdas_argument(lambda_, lambda_module),
            safe_mode=not unsafe_trust_file,
            custom_objects=list(custom_objects or []) or None,  # specs, imported by the library
        )
    if as_json:
        typer.echo(json.dumps(report.to_dict(), indent=2))
    else:
        show_unless_quiet(report)
    if not report.agree:
        raise typer.Exit(code=1)


def run():
    """The console script: the app, with Ctrl-C and SIGTERM turned into one line and exit code 130 or 143.

    TensorFlow's and CUDA's start-up logging (``cuInit``, oneDNN, absl lines) is silenced unless the user set
    ``TF_CPP_MIN_LOG_LEVEL`` themselves: commands print their answer only.

    Hostile surroundings end cleanly (:func:`guard_streams`): a closed stdout or stderr is /dev/null (the work is
    done, the exit code says how it went); a reader that goes away (``| head``) ends the command with exit code
    141, as it ends ``cat`` or ``grep``; the CPU-time limit (``ulimit -t``) ends it with one line and exit code 152.
    """
    quiet_environment()
    guard_streams()
    signal.signal(signal.SIGINT, interrupt)
    signal.signal(signal.SIGTERM, interrupt)
    guard_cpu_limit()
    try:
        _command()
    except SystemExit as done:
        _leave(done.code)
    _leave(0)


def _leave(code):
    """End the process with ``code`` once its work is done: threads joined, ``atexit`` handlers run and the streams
    flushed, as at any exit, but without tearing the interpreter down (freeing every module and object NumPy, h5py
    and the rest made: a seventh of a short command's CPU time, for nothing the process needs)."""
    import atexit
    import threading

    if isinstance(code, str):  # sys.exit("message"), as Python itself prints it
        sys.stderr.write(code + "\n")
        code = 1
    threading._shutdown()  # non-daemon threads end first, as at any exit
    atexit._run_exitfuncs()
    for stream in (sys.stdout, sys.stderr):
        with contextlib.suppress(Exception):
            stream.flush()
    os._exit(code if isinstance(code, int) else 0 if code is None else 1)


def _command():
    """The app, with its stops and failures turned into exit codes (see :func:`run`)."""
    stdout = sys.stdout
    try:
        app()
    except Interrupted as interrupted:
        if getattr(interrupted, "report", None) is not None:  # a folder's: what each file came to before the stop
            with contextlib.suppress(Exception):
                show_unless_quiet(interrupted.report, verbose=SETTINGS["verbose"])
        typer.echo(
            f"Error: stopped by {signal_text(interrupted.signum)}. Outputs appear whole or not at all: "
            f"nothing partial was left.",
            err=True,
        )
        sys.exit(128 + interrupted.signum)
    except SystemExit as done:
        if sys.stdout is not stdout and done.code == 1:  # click's answer to EPIPE: the reader is gone
            sys.exit(128 + SIGPIPE)
        raise
    except (MemoryError, ImportError) as error:  # outside a command's own handling (start-up, under ulimit -v)
        limited = limit_error(error)
        if limited is None:
            raise
        sys.stderr.write(f"Error: {limited}\n")
        sys.exit(1)
