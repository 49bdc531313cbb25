"""Prove a recovered Lambda source by compiling it again on the writer's own Python (``mgpu-io lambdas --check``).

The writer's Python (the version :mod:`mgpu_io.lambdas.recovery` proved from the bytes, e.g. ``"3.10"``) is looked
for among pyenv's (``$PYENV_ROOT/versions/3.10.*``) and on ``PATH`` (``python3.10``). It runs the separate program
``lambdas/_recompile.py`` under lowered limits (started by :func:`~mgpu_io.format.sandbox.programs.run_program`,
as the decompiler is), which compiles the recovered source, unmarshals the stored bytes (on the
Python that wrote them, as data: never run) and compares the two code objects: instructions, constants, names,
argument counts and flags (not line numbers). Nothing is compiled or unmarshalled in this process.

Example:
    >>> candidates("3.6 or 3.7")
    ['3.6', '3.7']
"""

import base64
import json
import os
import shutil
import tempfile
from pathlib import Path

from mgpu_io.format.sandbox.programs import run_program

_PROGRAM = Path(__file__).with_name("_recompile.py")
#: Seconds (wall clock) the check may take for one file's functions.
TIMEOUT = 60.0


def candidates(label):
    """The versions of a label (``"3.9 or 3.10"`` -> ``["3.9", "3.10"]``)."""
    return [part.strip() for part in str(label or "").split(" or ") if part.strip()]


def find_python(version):
    """The path of an installed Python ``version`` (``"3.10"``), or ``None``."""
    root = Path(os.environ.get("PYENV_ROOT", Path.home() / ".pyenv")) / "versions"
    if root.is_dir():
        for folder in sorted(root.glob(f"{version}.*"), reverse=True):
            python = folder / "bin" / "python"
            if python.exists() and folder.name.count(".") == 2 and folder.name.rsplit(".", 1)[0] == version:
                return str(python)
    found = shutil.which(f"python{version}")
    return found


def compare_recompiled(items, python, *, timeout=None):
    """Compare each of ``items`` (``{"code": bytes, "source": str, "freevars": [...]}``) recompiled on ``python``.

    Returns one dict per item: ``{"same": True}``, ``{"same": False, "difference": "..."}`` or ``{"error": "..."}``.
    """
    if not items:
        return []
    request = {
        "seconds": 20,
        "memory": 1 << 30,
        "functions": [
            {"code": base64.b64encode(i["code"]).decode("ascii"), "source": i["source"], "freevars": i.get("freevars")}
            for i in items
        ],
    }
    limit = TIMEOUT if timeout is None else timeout
    # the program's text as -c, in an empty folder: no module beside it or in the folder can shadow one it imports
    # (Python 2.7 has no -I; -E -s there)
    program = _PROGRAM.read_text()
    try:
        with tempfile.TemporaryDirectory(prefix="mgpu-io-check-") as empty:
            status, output = run_program(
                [python, "-E", "-s", "-c", program], json.dumps(request).encode(),
                seconds=request["seconds"], memory=request["memory"], timeout=limit, cwd=empty,
            )  # fmt: skip
    except TimeoutError:
        return [{"error": f"the check did not finish within {limit:g} s"}] * len(items)
    except OSError as error:
        return [{"error": f"Python {python} could not start ({error})"}] * len(items)
    try:
        answers = json.loads(output.decode("utf-8"))
    except (UnicodeDecodeError, ValueError):
        answers = None
    if status != 0 or not isinstance(answers, list) or len(answers) != len(items):
        ended = f"exit code {status}" if status >= 0 else f"ended by signal {-status}"
        return [{"error": f"the check stopped: {ended}"}] * len(items)
    return [a if isinstance(a, dict) else {"error": "no answer"} for a in answers]


def stored_functions(path):
    """``{layer: (bytes, output-shape bytes)}``: each user Lambda's stored function in ``path``, decoded, as data."""
    from mgpu_io.format import door
    from mgpu_io.format.extract import extract
    from mgpu_io.format.read import open_stored, reading
    from mgpu_io.lambdas.by_reference import template_lambdas
    from mgpu_io.lambdas.stored import SCAN_LIMIT, decode_payload

    if door.sniff(Path(path)) == door.ZIP and door.describe(path).kind == door.KERAS_ARCHIVE:
        from mgpu_io.format.keras3 import archive_config

        lambdas = template_lambdas(archive_config(path))
    else:
        with open_stored(path) as stored, reading(stored.path, "reading its Lambda functions"):
            template = extract(stored).template_config
            lambdas = template_lambdas(template) if template is not None else []
    found = {}
    for lam in lambdas:
        data = decode_payload(lam.payload) if lam.kind == "user" and lam.payload else None
        if data is not None and len(data) <= SCAN_LIMIT:
            found[lam.layer] = data
    return found


def check_recovered(path, lambdas):
    """Prove each of ``lambdas`` (``inspect``'s dicts of ``path``, ``recovered`` set) on its writer's Python: sets
    ``recovered["check"]``: ``{"python": "3.10", "same": True, "others": [...]}`` (proven on each Python named;
    ``others``: the label's other Pythons, which compile it differently), ``{"python": ..., "same": False,
    "difference": ...}``, or ``{"needs": "Python 3.10"}`` where no such Python is installed. Every Python the label
    names that is installed is tried."""
    from mgpu_io.lambdas.recovery import function_source

    stored = stored_functions(path)
    by_python, todo = {}, []
    for lam in lambdas:
        recovered = lam.get("recovered") or {}
        if "source" not in recovered or lam["layer"] not in stored:
            continue
        versions = candidates(recovered.get("python"))
        installed = [(v, p) for v in versions for p in [find_python(v)] if p]
        if not installed:
            recovered["check"] = {"needs": f"Python {' or '.join(versions)}"}
            continue
        answer = {"name": recovered.get("name"), "body": recovered.get("body"), "args": recovered.get("args"),
                  "varargs": recovered.get("varargs"), "varkw": recovered.get("varkw"),
                  "kwonly": recovered.get("kwonly")}  # fmt: skip
        source = function_source(answer, recovered.get("defaults"))
        item = {"code": stored[lam["layer"]], "source": source, "freevars": recovered.get("closure") or []}
        todo.append((recovered, installed))
        for found in installed:  # every Python the label names: the source is proven on the one that wrote it
            by_python.setdefault(found, []).append((id(recovered), item))
    results = {}
    for (version, python), items in by_python.items():
        for (key, _), answer in zip(items, compare_recompiled([item for _, item in items], python)):
            results.setdefault(key, []).append(dict(answer, python=version))
    for recovered, _ in todo:
        answers = results.get(id(recovered), [])
        proven = [a["python"] for a in answers if a.get("same")]
        if proven:
            others = [f"{a['python']}: {a.get('difference') or a.get('error')}" for a in answers if not a.get("same")]
            recovered["check"] = {"same": True, "python": " and ".join(proven), "others": others}
        else:
            recovered["check"] = dict(answers[0]) if answers else {"error": "not checked"}
    return lambdas
