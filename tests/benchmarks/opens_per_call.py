"""How many times one call opens its input file, and which mgpu_io modules its code passes through (issue 34).

Each call runs in a fresh process. ``h5py.File.__init__`` is wrapped before the call, in the parent, so that forked
children (the sandbox's, a folder's workers) inherit the wrapper (the process forks its children itself here, not
from its fork server, whose children run the same work but not the wrapper); every open of the input file appends a line to a
log that parent and children share. A profile function (``sys.setprofile``, inherited by forked children the same
way) notes each distinct ``mgpu_io`` module whose code runs during the call. What runs before the call (importing
mgpu_io and Keras, building the target model of ``transfer_weights``) is not counted.

A folder call (``folder -> ...``) repairs a folder that holds a copy of FILE, whose opens are counted: the
opens of each file of a folder.

Usage: python tests/benchmarks/opens_per_call.py [FILE] [--json] [--root CHECKOUT] [--call NAME ...]
"""

import argparse
import json
import os
import subprocess
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
DEFAULT = ROOT / "fixtures" / "files" / "k224_functional_bn_x2_full.h5"

CALLS = {
    "unwrap -> .h5": "mgpu_io.unwrap(SOURCE, str(OUT / 'out.h5'))",
    "unwrap -> .keras": "mgpu_io.unwrap(SOURCE, str(OUT / 'out.keras'))",
    "load_model": "mgpu_io.load_model(SOURCE)",
    "transfer_weights": "mgpu_io.transfer_weights(SOURCE, TARGET)",
    "inspect": "mgpu_io.inspect(SOURCE)",
    # the deployable outputs (docs/deploy.md): each needs its extra installed ([onnx], [litert]; TensorFlow)
    "unwrap -> .onnx": "mgpu_io.unwrap(SOURCE, str(OUT / 'out.onnx'))",
    "unwrap -> .tflite": "mgpu_io.unwrap(SOURCE, str(OUT / 'out.tflite'))",
    "unwrap -> saved_model": "mgpu_io.unwrap(SOURCE, str(OUT / 'served'), format='saved_model')",
    # a folder that holds a copy of FILE: its opens are counted (per file, as the folder has one)
    "folder -> .h5": "mgpu_io.unwrap(FOLDER, str(OUT / 'tree'))",
    "folder -> .onnx": "mgpu_io.unwrap(FOLDER, str(OUT / 'tree'), format='onnx')",
}

_PROGRAM = r"""
import os, sys
from pathlib import Path
SOURCE, OUT, LOG, CALL = sys.argv[1], Path(sys.argv[2]), sys.argv[3], sys.argv[4]
import h5py, mgpu_io
FOLDER = OUT / "folder"
if "FOLDER" in CALL:  # the folder's one file is a copy of SOURCE, whose opens are counted
    import shutil
    FOLDER.mkdir()
    SOURCE = shutil.copy(SOURCE, FOLDER / Path(SOURCE).name)
TARGET = None
if "TARGET" in CALL:
    TARGET = mgpu_io.load_model(SOURCE, compile=False)
    import keras
    TARGET = keras.models.clone_model(TARGET)
import keras  # imported before the call in every case: the call's own work is what is counted

assert mgpu_io.__file__.startswith(os.getcwd()), mgpu_io.__file__  # the checkout measured
real = h5py.File.__init__
source = os.path.realpath(SOURCE)

def note(line):
    fd = os.open(LOG, os.O_WRONLY | os.O_APPEND | os.O_CREAT)
    os.write(fd, (line + "\n").encode())
    os.close(fd)

def counting(self, name, *args, **kwargs):
    if isinstance(name, (str, os.PathLike)) and os.path.realpath(name) == source:
        note(f"open {os.getpid()}")
    return real(self, name, *args, **kwargs)

seen = set()
package = os.path.dirname(mgpu_io.__file__) + os.sep

def profile(frame, event, arg):
    filename = frame.f_code.co_filename
    if filename.startswith(package) and (os.getpid(), filename) not in seen:
        seen.add((os.getpid(), filename))
        note(f"module {os.getpid()} {filename[len(package):]}")

h5py.File.__init__ = counting
from mgpu_io.format.sandbox import fork_server
fork_server.SERVER_FROM = 1 << 62  # children forked here, which inherit the counting: the fork server's do the same
parent = os.getpid()
sys.setprofile(profile)
exec(CALL)
sys.setprofile(None)
note(f"parent {parent}")
"""


def count(source, call, root=ROOT):
    """``{"opens": N, "in_children": N, "modules": N, "module_names": [...]}`` for one call of :data:`CALLS`, with
    the mgpu_io of the checkout ``root``."""
    with tempfile.TemporaryDirectory() as folder:
        log = Path(folder, "log")
        env = dict(os.environ, PYTHONPATH=str(root), TF_CPP_MIN_LOG_LEVEL="3")
        subprocess.run(
            [sys.executable, "-c", _PROGRAM, str(source), folder, str(log), CALLS[call]],
            check=True,
            env=env,
            cwd=root,  # `python -c` puts the current folder first on sys.path
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
        )
        lines = [line.split(maxsplit=2) for line in log.read_text().splitlines()]
    parent = next(words[1] for words in lines if words[0] == "parent")
    opens = [words[1] for words in lines if words[0] == "open"]
    modules = sorted({words[2] for words in lines if words[0] == "module"})
    return {
        "opens": len(opens),
        "in_children": sum(pid != parent for pid in opens),
        "modules": len(modules),
        "module_names": modules,
    }


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("file", nargs="?", default=str(DEFAULT))
    parser.add_argument("--json", action="store_true")
    parser.add_argument("--root", default=str(ROOT), help="the checkout whose mgpu_io is measured (another commit's)")
    parser.add_argument("--call", action="append", choices=sorted(CALLS), help="only this call (repeatable)")
    arguments = parser.parse_args()
    calls = arguments.call or list(CALLS)
    results = {call: count(arguments.file, call, Path(arguments.root)) for call in calls}
    if arguments.json:
        print(json.dumps(results, indent=1))
        return
    print(f"{'call':<22} opens  (in children)  modules")
    for call, result in results.items():
        print(f"{call:<22} {result['opens']:>5}  {result['in_children']:>13}  {result['modules']:>7}")


if __name__ == "__main__":
    main()
