"""Every text mgpu-io matches in another library's messages (mgpu_io/upstream.py) is pinned here against that
library's own message: raised by the real library where that is cheap, else found in the library's own files (its
source or the strings of its shared objects). A library that rewords its message fails this file, not a user."""

import ast
import errno
import os
import subprocess
import sys
from pathlib import Path

import pytest
from helpers import ROOT

from mgpu_io import upstream

PACKAGE = ROOT / "mgpu_io"


def _strings_of(path):
    """The text in a file, as bytes decoded leniently (a shared object's strings included)."""
    return Path(path).read_bytes().decode("latin-1")


def _library_file(module, *globs):
    """The first file under an installed module's folder matching one of ``globs`` (a shared object, a source)."""
    import importlib.util

    spec = importlib.util.find_spec(module)
    if spec is None or not spec.submodule_search_locations:
        pytest.skip(f"{module} is not installed")
    folder = Path(list(spec.submodule_search_locations)[0])
    for where in (folder, folder.parent / f"{module}.libs"):  # a wheel's bundled libraries lie beside the package
        for pattern in globs:
            yield from sorted(where.rglob(pattern)) if where.is_dir() else ()


def test_every_saying_is_pinned_here():
    tested = {name.removeprefix("test_").split("__")[0] for name in globals() if name.startswith("test_")}
    pinned = {name.replace("-", "_") for name in upstream.SAYINGS}
    assert pinned <= tested, f"not pinned: {sorted(pinned - tested)}"


def test_no_module_matches_another_librarys_message_outside_upstream():
    """No `"text" in str(error)` and no regular expression over an error's text outside mgpu_io/upstream.py."""
    found = []
    for path in sorted(PACKAGE.rglob("*.py")):
        if path.name == "upstream.py" or path.name.startswith("_decompile") or path.name == "_recompile.py":
            continue
        for node in ast.walk(ast.parse(path.read_text())):
            if isinstance(node, ast.Compare) and any(isinstance(op, (ast.In, ast.NotIn)) for op in node.ops):
                right = node.comparators[0]
                calls = [n for n in ast.walk(right) if isinstance(n, ast.Call) and getattr(n.func, "id", "") == "str"]
                if any(isinstance(arg, ast.Name) and arg.id in ("error", "exc", "e") for c in calls for arg in c.args):
                    found.append(f"{path.relative_to(ROOT)}:{node.lineno}")
    assert found == []


def test_h5_no_memory__libhdf5_says_it():
    texts = [_strings_of(path) for path in _library_file("h5py", "*.so*", "libhdf5*")]
    assert any(upstream.H5_NO_MEMORY.pattern.search(text) for text in texts)


def test_file_too_large__the_c_library_and_libhdf5_say_it():
    assert upstream.said(upstream.FILE_TOO_LARGE, OSError(errno.EFBIG, os.strerror(errno.EFBIG)))
    texts = [_strings_of(path) for path in _library_file("h5py", "*.so*", "libhdf5*")]
    assert any("errno = %d" in text for text in texts)  # how libhdf5 names a system call's errno


def test_h5_errno__libhdf5_names_the_errno_of_a_failed_system_call(tmp_path):
    import h5py

    folder = tmp_path / "gone"
    with pytest.raises(OSError) as raised:
        h5py.File(folder / "x.h5", "w")  # no such folder: the open(2) fails with ENOENT
    assert upstream.h5_errno(raised.value) == errno.ENOENT


def test_cannot_map__the_dynamic_loader_and_the_c_library_say_it():
    assert upstream.said(upstream.CANNOT_MAP, OSError(errno.ENOMEM, os.strerror(errno.ENOMEM)))
    loaders = [Path(p) for p in ("/lib64/ld-linux-x86-64.so.2", "/lib/ld-linux-aarch64.so.1") if Path(p).exists()]
    if not loaders:
        pytest.skip("no glibc dynamic loader here")
    assert upstream.CANNOT_MAP.pattern.search(_strings_of(loaders[0]))


def test_no_module__python_says_it():
    with pytest.raises(ImportError) as raised:
        __import__("mgpu_io_no_such_module")
    assert upstream.said(upstream.NO_MODULE, raised.value)


def test_keras_unknown_backend__keras_says_it():
    done = subprocess.run([sys.executable, "-c", "import keras"], capture_output=True, text=True, cwd=ROOT,
                          env=dict(os.environ, KERAS_BACKEND="no_such_backend"))
    assert done.returncode != 0 and "ValueError" in done.stderr
    assert upstream.KERAS_UNKNOWN_BACKEND.pattern.search(done.stderr.strip().splitlines()[-1])


def test_keras_empty_crop__keras_says_it():
    keras = pytest.importorskip("keras")
    with pytest.raises(ValueError) as raised:
        keras.layers.Cropping2D(((3, 3), (0, 0)))(keras.Input((4, 4, 1)))
    assert upstream.said(upstream.KERAS_EMPTY_CROP, raised.value)


@pytest.mark.parametrize("op", [
    "tf.nn.conv2d(x, k, 1, 'SAME', data_format='NCHW')",
    "tf.nn.conv2d_transpose(x, tf.ones((3, 3, 4, 2)), (1, 4, 7, 7), 1, data_format='NCHW')",
])
def test_tf_channels_last_only__tensorflows_cpu_kernels_say_it(op):
    """Raised where this CPU refuses it (TensorFlow without oneDNN, as here); elsewhere, this CPU runs the op."""
    done = subprocess.run(
        [sys.executable, "-c", "import numpy as np, tensorflow as tf\n"
         "x = tf.constant(np.ones((1, 2, 5, 5), 'float32')); k = tf.constant(np.ones((3, 3, 2, 4), 'float32'))\n"
         f"{op}"],
        capture_output=True, text=True, cwd=ROOT, env=dict(os.environ, TF_ENABLE_ONEDNN_OPTS="0", TF_CPP_MIN_LOG_LEVEL="3"))
    if done.returncode == 0:
        pytest.skip("this CPU's TensorFlow runs channels_first convolutions")
    last = done.stderr.strip().splitlines()[-1]
    assert upstream.said(upstream.TF_CHANNELS_LAST_ONLY, last), done.stderr[-500:]


def test_litert_flex__the_litert_runtime_says_it():
    texts = [_strings_of(path) for module in ("ai_edge_litert", "tensorflow")
             for path in _library_file(module, "*interpreter_wrapper*.so", "_pywrap_tensorflow_lite*.so")]
    if not texts:
        pytest.skip("no LiteRT interpreter installed")
    assert any(upstream.LITERT_FLEX.pattern.search(text) for text in texts)


def test_missing_bucket__the_stores_say_it():
    """S3's error code and message name the bucket; tests/unwrap/test_remote.py meets it from a real S3 server."""
    import gzip

    botocore = pytest.importorskip("botocore")
    models = sorted((Path(botocore.__file__).parent / "data" / "s3").rglob("service-2.json*"))
    assert models, "botocore's S3 model is not where it was"
    text = (gzip.decompress(models[-1].read_bytes()) if models[-1].suffix == ".gz" else models[-1].read_bytes()).decode()
    import json

    documented = json.loads(text)["shapes"]["NoSuchBucket"]["documentation"]  # "The specified bucket does not exist."
    assert upstream.said(upstream.MISSING_BUCKET, documented)
