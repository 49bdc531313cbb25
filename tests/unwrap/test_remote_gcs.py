"""Checkpoints in Google Cloud Storage: inspected and repaired in place through gcsfs, against a real GCS emulator
started here on 127.0.0.1 (gcp-storage-emulator: tests/support/gcsserver.py), as tests/unwrap/test_remote.py does for S3. And the
generic fsspec interface that every other scheme (``hf://`` among them) is read through: a filesystem that implements
only fsspec's required methods."""

import json
import subprocess
import sys

import pytest
from helpers import FIXTURES, ROOT, assert_predictions_match, fixture_batch

import mgpu_io
from mgpu_io.errors import RemoteAccessError

BUCKET = "legacy"
BIG = FIXTURES.parent / "applications" / "tfk115_densenet_x2_full.h5"


@pytest.fixture(scope="module")
def gcs():
    """The emulator, and this process configured as the user's shell is, before gcsfs is imported (it reads
    ``GCSFS_EXPERIMENTAL_ZB_HNS_SUPPORT`` when imported)."""
    pytest.importorskip("gcp_storage_emulator")
    import gcsserver

    server = gcsserver.start()
    try:
        with pytest.MonkeyPatch.context() as patch:
            for key, value in server.env().items():
                patch.setenv(key, value)
            gcsfs = pytest.importorskip("gcsfs")
            fs = gcsfs.GCSFileSystem(token="anon")
            fs.mkdir(BUCKET)
            fs.put_file(str(BIG), f"{BUCKET}/big/{BIG.name}")
            fs.put_file(str(FIXTURES / "k224_functional_bn_x2_full.h5"),
                        f"{BUCKET}/run1/k224_functional_bn_x2_full.h5")
            yield server, fs
    finally:
        server.stop()


@pytest.fixture()
def user_env(gcs):
    """fsspec's cached clients dropped between tests."""
    import gcsfs

    gcsfs.GCSFileSystem.clear_instance_cache()
    yield gcs[1]
    gcsfs.GCSFileSystem.clear_instance_cache()


def cli(env, *args):
    return subprocess.run([sys.executable, "-m", "mgpu_io", *args], capture_output=True, text=True, cwd=ROOT, env=env)


def test_inspect_of_a_gcs_file_reads_its_structure_and_not_its_weights(user_env, gcs):
    result = cli(gcs[0].env(), "inspect", f"gs://{BUCKET}/big/{BIG.name}", "--json")
    assert result.returncode == 0, result.stderr[-2000:]
    remote = json.loads(result.stdout)
    local = mgpu_io.inspect(BIG, scan_weights=False).to_dict()
    for key in ("is_wrapper", "depth", "replicas", "template", "inputs", "outputs", "weights", "keras_version"):
        assert remote[key] == local[key], key
    note = next(f for f in remote["findings"] if f["kind"] == "remote")["message"]
    fetched, size = (int(x) for x in note.split(": ")[1].split(" bytes")[0].split(" of "))
    assert size == BIG.stat().st_size and fetched < size / 2, note


def test_unwrap_of_a_gcs_file_to_a_local_file_predicts_like_the_old_keras(user_env, tmp_path):
    keras = pytest.importorskip("keras")
    out = tmp_path / "clean.h5"
    report = mgpu_io.unwrap(f"gs://{BUCKET}/run1/k224_functional_bn_x2_full.h5", out)
    assert report.written and report.source == f"gs://{BUCKET}/run1/k224_functional_bn_x2_full.h5"
    xs, ys = fixture_batch({"file": "k224_functional_bn_x2_full.h5", "data": "k224_functional_bn_x2.npz"})
    assert_predictions_match(keras.models.load_model(out).predict(xs[0], verbose=0), ys)


def test_a_missing_gcs_bucket_is_one_line(gcs, tmp_path):
    result = cli(gcs[0].env(), "unwrap", "gs://no-such-bucket/run1/", str(tmp_path / "out"))
    assert result.returncode == 1
    assert result.stderr.strip().splitlines() == [
        "Error: The bucket does not exist while listing the input. Expected an existing bucket. Received: "
        "gs://no-such-bucket/run1/ (NoSuchBucket). Check the bucket's name and the endpoint (STORAGE_EMULATOR_HOST "
        "for an emulator)."]
    assert not (tmp_path / "out").exists()


def test_a_gcs_prefix_is_repaired_into_the_bucket(user_env):
    report = mgpu_io.unwrap(f"gs://{BUCKET}/run1/", f"gs://{BUCKET}/run1-clean/")
    assert report.counts()["repaired"] == 1 and report.ok
    assert user_env.exists(f"{BUCKET}/run1-clean/k224_functional_bn_x2_full.h5")
    assert mgpu_io.unwrap(f"gs://{BUCKET}/run1/", f"gs://{BUCKET}/run1-clean/").counts()["done before"] == 1


# --- any other fsspec filesystem (hf:// and the rest): only the generic interface is used -----------------------


@pytest.fixture()
def minimal():
    """A filesystem with only what fsspec requires of one (``ls`` and ``_open``, read-only), registered as
    ``minimal://``: what mgpu-io reads of a scheme it has no test server for (``hf://``'s HfFileSystem, ...)."""
    import io

    import fsspec
    from fsspec.spec import AbstractFileSystem

    files = {"shelf/run1/k224_siamese_x2_full.h5": (FIXTURES / "k224_siamese_x2_full.h5").read_bytes(),
             "shelf/big/densenet.h5": BIG.read_bytes()}

    class Minimal(AbstractFileSystem):
        protocol = "minimal"

        def ls(self, path, detail=True, **kwargs):
            path = self._strip_protocol(path).rstrip("/")
            if path in files:
                found = [{"name": path, "size": len(files[path]), "type": "file"}]
            else:
                names = {name[len(path) + 1:].split("/")[0] for name in files if name.startswith(path + "/")}
                if not names:
                    raise FileNotFoundError(path)
                found = [{"name": f"{path}/{n}", "size": len(files[f"{path}/{n}"]) if f"{path}/{n}" in files else 0,
                          "type": "file" if f"{path}/{n}" in files else "directory"} for n in sorted(names)]
            return found if detail else [f["name"] for f in found]

        def _open(self, path, mode="rb", **kwargs):
            return io.BytesIO(files[self._strip_protocol(path)])

    fsspec.register_implementation("minimal", Minimal, clobber=True)
    yield
    Minimal.clear_instance_cache()


def test_a_filesystem_with_only_the_generic_interface_is_inspected_and_unwrapped(minimal, tmp_path):
    report = mgpu_io.inspect("minimal://shelf/big/densenet.h5")
    assert report.template == mgpu_io.inspect(BIG, scan_weights=False).template
    assert report.findings[-1].message.startswith("read from object storage: ")
    out = mgpu_io.unwrap("minimal://shelf/run1/", tmp_path / "out")
    assert out.counts()["repaired"] == 1 and (tmp_path / "out" / "k224_siamese_x2_full.h5").is_file()
    with pytest.raises(mgpu_io.NotAModelFile, match="nothing is there|no file is there"):
        mgpu_io.inspect("minimal://shelf/run1/missing.h5")


def test_an_hf_url_goes_to_huggingface_hubs_filesystem_or_names_the_extra():
    """No network here: the hf:// scheme resolves to huggingface_hub's HfFileSystem (or, without it, one line
    naming the extra); reading the Hub itself is not tested."""
    from mgpu_io.remote import filesystem

    try:
        fs, path = filesystem("hf://datasets/someone/checkpoints/model.h5")
    except mgpu_io.MissingDependency as error:
        assert "pip install 'mgpu-io[remote]'" in str(error)
        return
    assert type(fs).__name__ == "HfFileSystem" and path == "datasets/someone/checkpoints/model.h5"
    assert RemoteAccessError.__name__ in dir(mgpu_io.errors)
