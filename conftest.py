"""pytest set-up for the whole repository (tests/, the docstring examples in mgpu_io/, docs/api.md).

Every test runs on the CPU, as the users' laptops do, and TensorFlow keeps quiet. Docstring examples create their
temporary folders with ``tempfile``, as a reader would; here those land in pytest's own temporary folder, so a run
leaves nothing behind. The helpers the tests share live in tests/support/ (on the path: ``from helpers import ...``).

The suite has tiers, marked here by file so that a new test file joins its tier in one line:

- ``core``: the format core, the CLI, the errors and the architecture (no Keras imported): ``make check``;
- the long families, each a marker that selects it or leaves it out (``pytest -m "not layer_sweep"``):
  ``resume_rules`` (every optimizer fixture resumed), ``layer_sweep``, ``backends`` (Keras 3 on JAX, its own environment), ``legacy_stack`` (Keras 2.2.4 on Python 3.7,
  and the tf.distribute strategies), ``packaging`` (wheel and core-only installs) and ``fuzz`` (the harness's slice).

Everything else (Keras 3 and tf_keras loading the fixtures) is unmarked: ``make test`` runs it all.
"""

import os
import shutil
import sys
import tempfile
import time
from pathlib import Path

import pytest

ROOT = Path(__file__).parent
os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "3")
os.environ.setdefault("CUDA_VISIBLE_DEVICES", "")

sys.path.insert(0, str(ROOT / "tests" / "support"))
import times  # noqa: E402  (tests/support/times.py: the dated table of tests/README.md, where MGPU_IO_TIMES is set)
from tiers import LONG, MARKER_HELP, tiers_of  # noqa: E402  (tests/support/tiers.py: the one list of tiers)

_STARTED = time.monotonic()
times.claim()

#: The run's JAX processes (tests/load/test_backends.py, the JAX resume and export, the layer sweep's JAX server) share
#: one compilation cache, made empty for the run and removed after it: a model's function that another process (or
#: an earlier model of the same shape) compiled is reused, not compiled again. What runs is what JAX compiled for the
#: same program with the same flags; only the compiling is saved (a third of test_backends' CPU time). A cache the
#: caller's environment names is used as it is.
_JAX_CACHE = {"JAX_PERSISTENT_CACHE_MIN_COMPILE_TIME_SECS": "0", "JAX_PERSISTENT_CACHE_MIN_ENTRY_SIZE_BYTES": "-1"}


def pytest_configure(config):
    for name, text in MARKER_HELP.items():
        config.addinivalue_line("markers", f"{name}: {text}")
    if "JAX_COMPILATION_CACHE_DIR" not in os.environ:  # the first process of the run (xdist's workers inherit it)
        config._jax_cache = tempfile.mkdtemp(prefix="mgpu-io-tests-jax-cache-")
        os.environ.update(_JAX_CACHE, JAX_COMPILATION_CACHE_DIR=config._jax_cache)


def pytest_sessionfinish(session, exitstatus):
    times.record(session, _STARTED)


def pytest_unconfigure(config):
    if getattr(config, "_jax_cache", None):
        shutil.rmtree(config._jax_cache, ignore_errors=True)


def pytest_collection_modifyitems(config, items):
    long_first = []
    for item in items:
        try:
            relative = Path(str(item.path)).resolve().relative_to(ROOT.resolve()).as_posix()
        except ValueError:
            relative = ""
        tiers = tiers_of(relative)
        for tier in tiers:
            item.add_marker(getattr(pytest.mark, tier))
        long_first.append(min([LONG.index(tier) for tier in tiers if tier in LONG], default=len(LONG)))
    # The long families start first, so that on two workers (`make test`: a file, or a test class, per unit; the
    # layer sweep is a class per writer) the rest of the suite runs beside them instead of after them; within each
    # group the order is pytest's.
    order = sorted(range(len(items)), key=long_first.__getitem__)
    items[:] = [items[i] for i in order]


@pytest.fixture(autouse=True)
def _doctest_temporary_folders(request):
    if isinstance(request.node, pytest.DoctestItem):  # only they: a folder made for every test costs time for nothing
        request.getfixturevalue("monkeypatch").setattr(tempfile, "tempdir", str(request.getfixturevalue("tmp_path")))
