"""pytest set-up for the whole repository (tests/, the docstring examples in mgpu_io/, docs/api.md).

Every test runs on the CPU, as the users' laptops do, and TensorFlow keeps quiet. Docstring examples create their
temporary folders with ``tempfile``, as a reader would; here those land in pytest's own temporary folder, so a run
leaves nothing behind. The helpers the tests share live in tests/helpers.py.
"""

import os
import tempfile

import pytest

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "3")
os.environ.setdefault("CUDA_VISIBLE_DEVICES", "")


@pytest.fixture(autouse=True)
def _doctest_temporary_folders(request, tmp_path, monkeypatch):
    if isinstance(request.node, pytest.DoctestItem):
        monkeypatch.setattr(tempfile, "tempdir", str(tmp_path))
