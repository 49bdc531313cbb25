"""Prove a recovered Lambda source by compiling it again on the writer's own Python (``mgpu-io lambdas --check``).

The writer's Python (the version :mod:`mgpu_io.format.recover` proved from the bytes, e.g. ``"3.10"``) is looked
for among pyenv's (``$PYENV_ROOT/versions/3.10.*``) and on ``PATH`` (``python3.10``). It runs the separate program
``format/_recompile.py`` under lowered limits, which compiles the recovered source, unmarshals the stored bytes (on the
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
import subprocess
from pathlib import Path

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


def check(items, python, *, timeout=None):
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
    try:
        done = subprocess.run(
            [python, "-I", str(_PROGRAM)], input=json.dumps(request).encode(), capture_output=True, timeout=limit,
            check=False,
        )  # fmt: skip
    except subprocess.TimeoutExpired:
        return [{"error": f"the check did not finish within {limit:g} s"}] * len(items)
    except OSError as error:
        return [{"error": f"Python {python} could not start ({error})"}] * len(items)
    try:
        answers = json.loads(done.stdout.decode("utf-8"))
    except (UnicodeDecodeError, ValueError):
        answers = None
    if done.returncode != 0 or not isinstance(answers, list) or len(answers) != len(items):
        tail = done.stderr.decode("utf-8", "replace").strip().splitlines()[-1:] or [f"exit code {done.returncode}"]
        return [{"error": f"the check stopped: {tail[0][:200]}"}] * len(items)
    return [a if isinstance(a, dict) else {"error": "no answer"} for a in answers]
