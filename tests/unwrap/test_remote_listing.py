"""One folder, two storages: a local folder and a bucket holding the same tree yield the same files (chosen by
content, whatever their names) and the same `done before` rule. The bucket is fsspec's `memory://`, in this process."""

import json
import os
import shutil
import time
import uuid

import h5py
import numpy as np
import pytest
from helpers import FIXTURES

import mgpu_io
from mgpu_io import remote
from mgpu_io.format.batch import DONE, REPAIRED, completed, model_files

fsspec = pytest.importorskip("fsspec")


def _tree(folder):
    """A run folder as users keep them: models with and without a suffix, and files that only look like models."""
    (folder / "epochs").mkdir(parents=True)
    shutil.copy(FIXTURES / "k224_siamese_x2_full.h5", folder / "epochs" / "siamese.h5")
    shutil.copy(FIXTURES / "k224_functional_bn_x2_full.h5", folder / "config_model_weights")  # HDF5, no suffix
    with h5py.File(folder / "with_user_block.hdf5", "w", userblock_size=512) as handle:  # signature at 512
        handle.create_dataset("x", data=np.zeros(3))
    (folder / "notes.h5").write_text("not HDF5: the suffix lies\n")
    (folder / "history.json").write_text(json.dumps({"loss": [1.0, 0.5]}))  # JSON, no model config
    (folder / "model.txt").write_text(json.dumps({"class_name": "Sequential", "config": {"layers": []}}))
    (folder / "double.json").write_text(json.dumps(json.dumps({"class_name": "Model", "config": {}})))
    (folder / "README").write_text("epoch checkpoints\n")
    return folder


def _upload(folder):
    prefix = f"memory://listing-{uuid.uuid4().hex}/run/"
    fs = fsspec.filesystem("memory")
    for path in folder.rglob("*"):
        if path.is_file():
            fs.pipe(prefix[len("memory:/") :] + path.relative_to(folder).as_posix(), path.read_bytes())
    return prefix


def test_a_local_folder_and_the_same_tree_in_a_bucket_list_the_same_files(tmp_path):
    folder = _tree(tmp_path / "run")
    local = [path.relative_to(folder).as_posix() for path in model_files(folder)]
    assert local == [
        "config_model_weights", "double.json", "epochs/siamese.h5", "model.txt", "with_user_block.hdf5",
    ]
    assert remote.listing(folder) == local
    assert remote.listing(_upload(folder)) == local  # by content there too: not notes.h5, but config_model_weights


def test_done_before_is_the_folders_rule_for_every_pair_of_storages(tmp_path):
    source, output = tmp_path / "a.h5", tmp_path / "b.h5"
    source.write_bytes(b"x")
    assert remote.done_before(source, output) is completed(source, output) is False
    output.write_bytes(b"y")
    os.utime(source, ns=(10**18, 10**18 + 1))  # one nanosecond newer than the output: not done
    os.utime(output, ns=(10**18, 10**18))
    assert remote.done_before(source, output) is completed(source, output) is False
    os.utime(output, ns=(10**18, 10**18 + 1))
    assert remote.done_before(source, output) is completed(source, output) is True

    bucket = f"memory://done-{uuid.uuid4().hex}/"
    assert not remote.done_before(source, bucket + "b.h5")
    time.sleep(0.01)
    fsspec.filesystem("memory").pipe(bucket[len("memory:/") :] + "b.h5", b"y")  # written after the source
    assert remote.done_before(source, bucket + "b.h5")
    assert not remote.done_before(bucket + "b.h5", source)  # the local file is older than the object
    assert not remote.done_before(bucket + "missing.h5", source)  # no source: nothing was completed from it


def test_a_bucket_prefix_repairs_what_the_same_local_folder_repairs_and_resumes(tmp_path):
    folder = tmp_path / "run"
    folder.mkdir()
    shutil.copy(FIXTURES / "k224_siamese_x2_full.h5", folder / "config_model_weights")  # HDF5, no suffix
    shutil.copy(FIXTURES / "k224_siamese_x2_config.json", folder / "model.txt")  # a JSON config, another suffix
    (folder / "notes.h5").write_text("not HDF5\n")
    here = mgpu_io.unwrap(folder, tmp_path / "local")
    prefix = _upload(folder)
    there = mgpu_io.unwrap(prefix, tmp_path / "out")
    assert [(f.path, f.status) for f in there.files] == [(f.path, f.status) for f in here.files] == [
        ("config_model_weights", REPAIRED), ("model.txt", REPAIRED)]
    assert sorted(p.name for p in (tmp_path / "out").iterdir()) == ["config_model_weights", "model.txt"]
    assert mgpu_io.inspect(tmp_path / "out" / "config_model_weights").depth == 0
    assert json.loads((tmp_path / "out" / "model.txt").read_text()) == json.loads(
        (tmp_path / "local" / "model.txt").read_text())
    again = mgpu_io.unwrap(prefix, tmp_path / "out")
    assert [(f.path, f.status) for f in again.files] == [("config_model_weights", DONE), ("model.txt", DONE)]


@pytest.mark.parametrize("allow_plain", [False, True])
@pytest.mark.parametrize("jobs", [None, 2])
def test_a_bucket_prefix_opens_each_file_once(tmp_path, monkeypatch, allow_plain, jobs):
    """As a folder's repair (`test_a_folder_repair_opens_each_file_once`): a wrapper and a plain model in a bucket,
    each local copy opened once (in this process, MGPU_IO_PROBE=0, where each open can be counted). The bucket's
    repair once refused a plain model as no wrapper, then opened it again with allow_plain."""
    folder = tmp_path / "run"
    folder.mkdir()
    shutil.copy(FIXTURES / "k224_functional_bn_x2_full.h5", folder / "wrapper.h5")
    shutil.copy(FIXTURES.parent / "layers" / "k224" / "Dense.h5", folder / "plain.h5")
    prefix = _upload(folder)
    real, opens = h5py.File.__init__, []

    def counting(self, path, *args, **kwargs):
        if isinstance(path, (str, os.PathLike)) and os.path.basename(os.path.dirname(path)) == "in":
            opens.append(os.path.basename(path))  # a local copy of the bucket's file (remote._fetch's folder)
        real(self, path, *args, **kwargs)

    monkeypatch.setenv("MGPU_IO_PROBE", "0")
    monkeypatch.setattr(h5py.File, "__init__", counting)
    report = mgpu_io.unwrap(prefix, tmp_path / "out", allow_plain=allow_plain, jobs=jobs)
    assert [(f.path, f.status) for f in report.files] == [
        ("plain.h5", "already clean" if allow_plain else "skipped"), ("wrapper.h5", REPAIRED)], str(report)
    assert sorted(opens) == ["plain.h5", "wrapper.h5"]
    assert (tmp_path / "out" / "plain.h5").exists() == allow_plain


def test_a_bucket_prefix_runs_on_the_folder_engine_and_lists_its_outputs_once(tmp_path, monkeypatch):
    """The bucket's run is `batch.run_tree` with the bucket's storage: stopped, it raises with the folder's report;
    resumed, each `done before` comes from one listing of the output prefix, not one request per file."""
    from mgpu_io.format import batch

    folder = tmp_path / "run"
    folder.mkdir()
    for name in ("a.h5", "b.h5", "c.h5"):
        shutil.copy(FIXTURES / "k224_siamese_x2_full.h5", folder / name)
    prefix, output = _upload(folder), f"memory://out-{uuid.uuid4().hex}/run/"
    runs, real_run = [], batch.run_tree
    monkeypatch.setattr(batch, "run_tree", lambda *a, **k: runs.append(k["storage"]) or real_run(*a, **k))

    def stop_after_one(done, total, result):
        if done == 1:
            raise KeyboardInterrupt

    with pytest.raises(KeyboardInterrupt) as stopped:
        mgpu_io.unwrap(prefix, output, progress=stop_after_one)
    assert [(f.path, f.status) for f in stopped.value.report.files] == [
        ("a.h5", REPAIRED), ("b.h5", "failed"), ("c.h5", "failed")]
    fs, infos = fsspec.filesystem("memory"), []
    real_info = type(fs).info
    monkeypatch.setattr(type(fs), "info", lambda self, path, **kw: infos.append(path) or real_info(self, path, **kw))
    again = mgpu_io.unwrap(prefix, output)
    assert [(f.path, f.status) for f in again.files] == [("a.h5", DONE), ("b.h5", REPAIRED), ("c.h5", REPAIRED)]
    assert again.files[0].output == output + "a.h5"
    assert not [path for path in infos if "/out-" in path], infos  # the outputs: one listing, no request each
    assert len(runs) == 2 and all(storage.output == output for storage in runs)


def test_a_bucket_prefixs_config_applies_to_its_weights_only_files_as_a_folders_does(tmp_path):
    """``config=`` is the architecture of a folder's weights-only files: a full model beside them keeps its own. A
    bucket prefix once handed it to every file, and each full model failed ("config= applies to weights-only
    files")."""
    folder = tmp_path / "run"
    folder.mkdir()
    shutil.copy(FIXTURES / "k224_siamese_x2_weights.h5", folder / "weights.h5")
    shutil.copy(FIXTURES / "k224_functional_bn_x2_full.h5", folder / "full.h5")
    config = FIXTURES / "k224_siamese_x2_config.json"
    here = mgpu_io.unwrap(folder, tmp_path / "local", config=config)
    there = mgpu_io.unwrap(_upload(folder), tmp_path / "out", config=config)
    assert [(f.path, f.status) for f in there.files] == [(f.path, f.status) for f in here.files] == [
        ("full.h5", REPAIRED), ("weights.h5", REPAIRED)], str(there)
    for name in ("full.h5", "weights.h5"):
        with h5py.File(tmp_path / "out" / name, "r") as out, h5py.File(tmp_path / "local" / name, "r") as local:
            assert out.attrs.get("model_config") == local.attrs.get("model_config")
