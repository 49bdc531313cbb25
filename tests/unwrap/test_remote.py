"""Checkpoints kept where they were kept then, in a bucket: a user inspects and repairs them in place, against a
real S3-compatible server started here on 127.0.0.1 (moto in server mode, credentials checked: tests/support/s3server.py),
never a mock of the client's calls. Credentials come from the usual AWS variables, as a user's shell has them."""

import json
import subprocess
import sys
import tempfile
from pathlib import Path

import numpy as np
import pytest
from helpers import FIXTURES, ROOT, assert_predictions_match, fixture_batch

import mgpu_io
from mgpu_io.errors import RemoteAccessError

pytest.importorskip("s3fs")
pytest.importorskip("moto.server")
import s3server  # noqa: E402

BUCKET = "legacy"
RUN = ["k224_siamese_x2_full.h5", "k224_functional_bn_x2_full.h5", "k224_multi_io_x4_full.h5",
       "k224_sequential_x3_weights.h5", "k224_nested_depth3_full.h5"]
BIG = FIXTURES.parent / "applications" / "tfk115_densenet_x2_full.h5"  # 900 KB, most of it weights


@pytest.fixture(scope="module")
def s3():
    import boto3

    server = s3server.start()
    try:
        client = boto3.client("s3", endpoint_url=server.url, region_name="us-east-1", aws_access_key_id=server.key,
                              aws_secret_access_key=server.secret)
        client.create_bucket(Bucket=BUCKET)
        for name in RUN:
            client.upload_file(str(FIXTURES / name), BUCKET, f"run1/{name}")
        client.upload_file(str(BIG), BUCKET, f"big/{BIG.name}")
        yield server
    finally:
        server.stop()


@pytest.fixture()
def user_env(s3, monkeypatch):
    """This process, configured as the user's shell is (fsspec's cached clients dropped between tests)."""
    import s3fs

    for key, value in s3.env().items():
        monkeypatch.setenv(key, value)
    s3fs.S3FileSystem.clear_instance_cache()
    yield s3
    s3fs.S3FileSystem.clear_instance_cache()


def cli(env, *args):
    return subprocess.run([sys.executable, "-m", "mgpu_io", *args], capture_output=True, text=True, cwd=ROOT, env=env)


def test_inspect_of_a_remote_file_reads_its_structure_and_not_its_weights(s3):
    result = cli(s3.env(), "inspect", f"s3://{BUCKET}/big/{BIG.name}", "--json")
    assert result.returncode == 0, result.stderr
    remote = json.loads(result.stdout)
    local = mgpu_io.inspect(BIG, scan_weights=False).to_dict()
    for key in ("is_wrapper", "depth", "replicas", "template", "inputs", "outputs", "weights", "keras_version"):
        assert remote[key] == local[key], key
    note = next(f for f in remote["findings"] if f["kind"] == "remote")["message"]
    fetched, size = (int(x) for x in note.split(": ")[1].split(" bytes")[0].split(" of "))
    assert size == BIG.stat().st_size and fetched < size / 2, note  # the weights stayed in the bucket


def test_unwrap_of_a_remote_file_to_a_local_file_predicts_like_the_old_keras(user_env, tmp_path):
    keras = pytest.importorskip("keras")
    out = tmp_path / "clean.h5"
    report = mgpu_io.unwrap(f"s3://{BUCKET}/run1/k224_functional_bn_x2_full.h5", out)
    assert report.written and report.source == f"s3://{BUCKET}/run1/k224_functional_bn_x2_full.h5"
    xs, ys = fixture_batch({"file": "k224_functional_bn_x2_full.h5", "data": "k224_functional_bn_x2.npz"})
    assert_predictions_match(keras.models.load_model(out).predict(xs[0], verbose=0), ys)


def test_unwrap_from_the_bucket_to_the_bucket_uploads_the_whole_file(user_env, tmp_path):
    import fsspec

    target = f"s3://{BUCKET}/clean/siamese.h5"
    mgpu_io.unwrap(f"s3://{BUCKET}/run1/k224_siamese_x2_full.h5", target)
    with pytest.raises(mgpu_io.OutputError, match="The output exists"):
        mgpu_io.unwrap(f"s3://{BUCKET}/run1/k224_siamese_x2_full.h5", target)
    fsspec.filesystem("s3").get(target.removeprefix("s3://"), str(tmp_path / "siamese.h5"))
    report = mgpu_io.inspect(tmp_path / "siamese.h5")
    assert not report.is_wrapper and report.template is None or report.depth == 0


def test_a_prefix_stopped_midway_resumes_where_it_left_off(user_env):
    import fsspec

    seen = []

    def stop_after_two(done, total, result):
        seen.append(result.status)
        if done == 2:
            raise KeyboardInterrupt

    source, output = f"s3://{BUCKET}/run1/", f"s3://{BUCKET}/run1-clean/"
    with pytest.raises(KeyboardInterrupt) as stopped:
        mgpu_io.unwrap(source, output, progress=stop_after_two)
    first = stopped.value.report.counts()
    assert first["repaired"] == 2 and first["failed"] == len(RUN) - 2  # the rest: "stopped before this file"
    written = fsspec.filesystem("s3").find(f"{BUCKET}/run1-clean")
    assert len(written) == 2
    report = mgpu_io.unwrap(source, output)
    counts = report.counts()
    assert counts["done before"] == 2 and counts["repaired"] == len(RUN) - 2 and report.ok, counts
    assert len(fsspec.filesystem("s3").find(f"{BUCKET}/run1-clean")) == len(RUN)


def test_a_prefix_with_jobs_is_repaired_whole_and_predicts_like_the_old_keras(user_env, tmp_path):
    keras = pytest.importorskip("keras")
    import fsspec

    report = mgpu_io.unwrap(f"s3://{BUCKET}/run1/", f"s3://{BUCKET}/run1-jobs/", jobs=3)
    assert report.counts()["repaired"] == len(RUN) and report.ok, report.counts()
    assert [f.path for f in report.files] == sorted(RUN)  # the listing's order, whatever order the uploads ended in
    s3 = fsspec.filesystem("s3")
    assert sorted(p.rsplit("/", 1)[1] for p in s3.find(f"{BUCKET}/run1-jobs")) == sorted(RUN)
    s3.get(f"{BUCKET}/run1-jobs/k224_functional_bn_x2_full.h5", str(tmp_path / "clean.h5"))
    xs, ys = fixture_batch({"file": "k224_functional_bn_x2_full.h5", "data": "k224_functional_bn_x2.npz"})
    assert_predictions_match(keras.models.load_model(tmp_path / "clean.h5").predict(xs[0], verbose=0), ys)
    again = mgpu_io.unwrap(f"s3://{BUCKET}/run1/", f"s3://{BUCKET}/run1-jobs/", jobs=3)
    assert again.counts()["done before"] == len(RUN), again.counts()


def test_a_prefix_with_jobs_stopped_midway_counts_what_it_uploaded_and_resumes(user_env, tmp_path, monkeypatch):
    import fsspec

    monkeypatch.setattr(tempfile, "tempdir", str(tmp_path))  # where the local copies go, to see them gone

    def stop_after_two(done, total, result):
        if done == 2:
            raise KeyboardInterrupt

    source, output = f"s3://{BUCKET}/run1/", f"s3://{BUCKET}/run1-jobs-stopped/"
    with pytest.raises(KeyboardInterrupt) as stopped:
        mgpu_io.unwrap(source, output, progress=stop_after_two, jobs=2)
    first = stopped.value.report.counts()
    written = fsspec.filesystem("s3").find(f"{BUCKET}/run1-jobs-stopped")
    # an upload under way when the run stopped is let finish: whole, and counted as repaired; nothing else is sent
    assert 2 <= first["repaired"] == len(written) < len(RUN), (first, written)
    assert first["failed"] == len(RUN) - first["repaired"]
    assert not list(tmp_path.glob("mgpu-io-remote-*")), "a temporary copy was left behind"
    report = mgpu_io.unwrap(source, output, jobs=2)
    counts = report.counts()
    assert counts["done before"] == len(written) and counts["repaired"] == len(RUN) - len(written), counts
    assert len(fsspec.filesystem("s3").find(f"{BUCKET}/run1-jobs-stopped")) == len(RUN)


def test_jobs_overlap_the_downloads_of_a_prefix(user_env, monkeypatch):
    import threading
    import time

    import mgpu_io.remote as remote

    lock, running, most = threading.Lock(), [0], [0]
    fetch = remote._fetch

    def slow_fetch(src, folder):  # a store 0.3 s away: what overlapping saves
        with lock:
            running[0] += 1
            most[0] = max(most[0], running[0])
        try:
            time.sleep(0.3)
            return fetch(src, folder)
        finally:
            with lock:
                running[0] -= 1

    monkeypatch.setattr(remote, "_fetch", slow_fetch)
    report = mgpu_io.unwrap(f"s3://{BUCKET}/run1/", f"s3://{BUCKET}/run1-overlap/", jobs=4)
    assert report.ok and most[0] >= 2, most  # one after another, at most one download would be running
    most[0] = 0
    mgpu_io.unwrap(f"s3://{BUCKET}/run1/", f"s3://{BUCKET}/run1-sequential/")
    assert most[0] == 1  # without jobs: one file after another, as before


def test_jobs_for_one_remote_file_or_a_bad_count_is_one_line(user_env, tmp_path):
    with pytest.raises(mgpu_io.InvalidArgument, match=r"^jobs= sets the files a prefix transfers at once\. .*one file"):
        mgpu_io.unwrap(f"s3://{BUCKET}/run1/k224_siamese_x2_full.h5", tmp_path / "clean.h5", jobs=2)
    with pytest.raises(mgpu_io.InvalidArgument, match=r"Expected a whole number of 1 or more\. Received: jobs=0"):
        mgpu_io.unwrap(f"s3://{BUCKET}/run1/", tmp_path / "out", jobs=0)
    assert not (tmp_path / "clean.h5").exists() and not (tmp_path / "out").exists()


def test_the_cli_takes_jobs_for_a_bucket_prefix(s3, tmp_path):
    result = cli(s3.env(), "unwrap", f"s3://{BUCKET}/run1/", str(tmp_path / "out"), "--jobs", "2", "--json")
    assert result.returncode == 0, result.stderr
    report = json.loads(result.stdout)
    assert sorted(f["path"] for f in report["files"] if f["status"] == "repaired") == sorted(RUN)
    assert sorted(p.name for p in (tmp_path / "out").iterdir()) == sorted(RUN)


def test_wrong_credentials_are_one_clear_line_that_prints_no_secret(s3):
    secret = "wJalrXUtnFEMI-not-the-right-one"
    result = cli(s3.env(AWS_ACCESS_KEY_ID="AKIAWRONGWRONGWRONG", AWS_SECRET_ACCESS_KEY=secret), "inspect",
                 f"s3://{BUCKET}/run1/k224_siamese_x2_full.h5")
    assert result.returncode == 1
    lines = result.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("Error: The store refused the credentials"), result.stderr
    assert "(InvalidAccessKeyId)" in lines[0] or "(HTTP 403 Forbidden)" in lines[0]  # a HEAD request has no body
    assert secret not in result.stderr + result.stdout and "AKIAWRONG" not in result.stderr


def test_a_missing_bucket_is_one_line(s3, tmp_path):
    result = cli(s3.env(), "unwrap", "s3://no-such-bucket/run1/", str(tmp_path / "out"))
    assert result.returncode == 1
    assert result.stderr.strip().splitlines() == [
        "Error: The bucket does not exist while listing the input. Expected an existing bucket. Received: "
        "s3://no-such-bucket/run1/ (NoSuchBucket). Check the bucket's name and the endpoint (AWS_ENDPOINT_URL)."]
    assert not (tmp_path / "out").exists()


def test_a_remote_checkpoint_goes_straight_to_onnx_in_the_bucket(user_env, tmp_path):
    pytest.importorskip("onnxruntime")
    import fsspec

    from mgpu_io.keras.exports import run_artifact

    target = f"s3://{BUCKET}/deploy/multi_io.onnx"
    report = mgpu_io.unwrap(f"s3://{BUCKET}/run1/k224_multi_io_x4_full.h5", target)
    assert report.export["difference"] <= report.export["bound"]
    fsspec.filesystem("s3").get(target.removeprefix("s3://"), str(tmp_path / "m.onnx"))
    xs, ys = fixture_batch({"file": "k224_multi_io_x4_full.h5", "data": "k224_multi_io_x4.npz"})
    assert_predictions_match(run_artifact(tmp_path / "m.onnx", xs, ["in_a", "in_b"]), ys)


def test_errors_from_the_store_are_typed(user_env):
    with pytest.raises(RemoteAccessError, match="The bucket does not exist"):
        mgpu_io.inspect("s3://no-such-bucket/model.h5")
    with pytest.raises(mgpu_io.NotAModelFile, match="nothing is there"):
        mgpu_io.inspect(f"s3://{BUCKET}/run1/no-such-file.h5")
    assert np.isfinite(1.0)


# --- a hostile remote file costs what a local one costs: the same typed error, within the same limit ------------

HOSTILE = 40  # fuzz inputs (tests/fuzz/mutate.py, seeded), one per HDF5 and byte-level damage in turn


def _outcome(call, *names):
    """``("ok", the report's fields)`` or ``(the error's type, its message)``, with the input's names as ``<input>``."""
    try:
        found = ("ok", json.dumps({k: v for k, v in call().to_dict().items() if k != "file"}, sort_keys=True))
    except mgpu_io.MgpuIOError as error:
        found = (type(error).__name__, str(error))
    text = found[1]
    for name in names:
        text = text.replace(name, "<input>")
    text = json.dumps([f for f in json.loads(text)["findings"] if f["kind"] != "remote"]) + text.split(
        '"findings"')[0] if found[0] == "ok" else text
    return found[0], text


@pytest.fixture(scope="module")
def hostile(s3, tmp_path_factory):
    import boto3

    sys.path.insert(0, str(ROOT / "tests" / "fuzz"))
    import mutate

    damages = [m for m in mutate.MUTATORS if set(m.kinds) <= set(mutate.H5_KINDS) or isinstance(
        m, (mutate.Truncate, mutate.BitFlip, mutate.ZeroRegion, mutate.AppendRandom, mutate.PrependBytes))]
    client = boto3.client("s3", endpoint_url=s3.url, region_name="us-east-1", aws_access_key_id=s3.key,
                          aws_secret_access_key=s3.secret)
    cases = []
    for index in range(HOSTILE):
        try:
            case = mutate.make_case(33, index, tmp_path_factory.mktemp("hostile"), mutators=damages)
        except mutate.NotApplicable:
            continue
        key = f"hostile/{index}/{Path(case.path).name}"
        client.upload_file(case.path, BUCKET, key)
        cases.append((case, f"s3://{BUCKET}/{key}"))
    return cases


def test_a_hostile_remote_file_gives_the_error_a_local_copy_gives(hostile, user_env):
    """Each damaged input, inspected from the bucket, ends as the same file on a local disk does (without a scan of
    its weights, which a remote inspect leaves in the bucket): the same report, or the same typed error (its path
    aside). The structure is read in the door's child, under its limits."""
    assert len(hostile) >= HOSTILE * 3 // 4
    errors, differ = 0, []
    for case, url in hostile:
        local = _outcome(lambda: mgpu_io.inspect(case.path, scan_weights=False), case.path)
        remote = _outcome(lambda: mgpu_io.inspect(url), url)
        errors += local[0] != "ok"
        if local != remote:
            differ.append((case.mutator, case.description, local, remote))
    assert not differ, differ
    assert errors >= len(hostile) // 3  # the damage is real: many are refused, each the same way


class _StallingStore:
    """A plain HTTP server on 127.0.0.1 that serves a file's size and its first ``answered`` bytes, and then stops
    answering (a store that hangs), until the test ends."""

    def __init__(self, data, answered):
        import http.server
        import threading

        self.release = threading.Event()
        store = self

        class Handler(http.server.BaseHTTPRequestHandler):
            def log_message(self, *args):
                pass

            def do_HEAD(self):
                self.send_response(200)
                self.send_header("Content-Length", str(len(data)))
                self.send_header("Accept-Ranges", "bytes")
                self.end_headers()

            def do_GET(self):
                start, end = 0, len(data) - 1
                if self.headers.get("Range"):
                    first, last = self.headers["Range"].split("=")[1].split("-")
                    start, end = int(first), min(int(last or end), end)
                if end >= answered:
                    store.release.wait(120)  # the store hangs
                    return
                self.send_response(206)
                self.send_header("Content-Range", f"bytes {start}-{end}/{len(data)}")
                self.send_header("Content-Length", str(end - start + 1))
                self.end_headers()
                self.wfile.write(data[start:end + 1])

        self.server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.server.daemon_threads = True
        self.url = f"http://127.0.0.1:{self.server.server_address[1]}/model.h5"
        threading.Thread(target=self.server.serve_forever, daemon=True).start()

    def stop(self):
        self.release.set()
        self.server.shutdown()
        self.server.server_close()


def test_a_store_that_stops_answering_is_an_error_within_the_time_limit(monkeypatch):
    """The file's head comes, then nothing: the child that reads the structure is ended at the local limit."""
    import time

    pytest.importorskip("aiohttp")
    from mgpu_io.format.sandbox import probe

    monkeypatch.setattr(probe, "TIMEOUT", 3.0)
    store = _StallingStore(BIG.read_bytes(), answered=4096)
    try:
        started = time.monotonic()
        with pytest.raises(mgpu_io.NotAModelFile, match=r"^Reading the remote file's structure did not finish "
                                                         r"within 3 s\..*Received: http://127\.0\.0\.1"):
            mgpu_io.inspect(store.url)
        assert time.monotonic() - started < 60
    finally:
        store.stop()


def test_a_request_that_gets_no_answer_ends_at_the_network_timeout(monkeypatch):
    """Before any HDF5 is read (the file's size and head), a request the store never answers ends at the timeout."""
    pytest.importorskip("aiohttp")
    import mgpu_io.remote as remote

    monkeypatch.setattr(remote, "NETWORK_TIMEOUT", 2)
    store = _StallingStore(BIG.read_bytes(), answered=0)
    try:
        with pytest.raises(RemoteAccessError, match=r"^The store failed while reading the file's head\. .*Timeout"):
            mgpu_io.inspect(store.url)
    finally:
        store.stop()


def test_a_structure_larger_than_the_byte_budget_is_refused(user_env, monkeypatch):
    import mgpu_io.remote as remote

    monkeypatch.setattr(remote, "MAX_STRUCTURE_BYTES", 64 << 10)  # the DenseNet wrapper's structure: 180 KB
    with pytest.raises(mgpu_io.NotAModelFile, match=r"asks for more than 65536 bytes"):
        mgpu_io.inspect(f"s3://{BUCKET}/big/{BIG.name}")
    monkeypatch.setattr(remote, "MAX_STRUCTURE_BYTES", 1 << 20)
    assert mgpu_io.inspect(f"s3://{BUCKET}/big/{BIG.name}").template is not None
