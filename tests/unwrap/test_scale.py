"""A user with a bucket of legacy files maps mgpu_io.unwrap over its listing with Dask (docs/scale.md), and a second
run resumes: the page's recipe runs as written, with Dask's local process scheduler."""

import json
import re
import subprocess
import sys

import pytest
from helpers import ROOT

pytest.importorskip("dask.bag")

RECIPE = re.search(r"```python\n(.*?)```", (ROOT / "docs" / "scale.md").read_text(), re.S).group(1)


def _run(cwd):
    for name in ("fixtures",):
        if not (cwd / name).exists():
            (cwd / name).symlink_to(ROOT / name)
    (cwd / "recipe.py").write_text(RECIPE)
    result = subprocess.run([sys.executable, "recipe.py"], cwd=cwd, capture_output=True, text=True, timeout=900)
    assert result.returncode == 0, result.stderr[-3000:]
    first = result.stdout.splitlines()[0]
    return json.loads(first.replace("'", '"')), result.stdout


def test_the_scale_recipe_repairs_a_listing_with_dask_and_a_rerun_resumes(tmp_path):
    import mgpu_io

    counts, output = _run(tmp_path)
    listed = sorted(p.name for p in (ROOT / "fixtures" / "files").glob("*.h5"))
    assert sum(counts.values()) == len(listed)
    folder = mgpu_io.unwrap(ROOT / "fixtures" / "files", tmp_path / "mirror", dry_run=True)  # the folder repair's
    statuses = [f.status for f in folder.files if f.path.endswith(".h5")]  # the recipe lists .h5 files
    expected = {"repaired": statuses.count("repaired"), "failed": statuses.count("failed")}
    assert {k: counts.get(k, 0) for k in expected} == expected
    assert "k216_failed_save_stub.h5 failed: The file is the stub" in output
    written = sorted(p.name for p in (tmp_path / "repaired").iterdir())
    assert len(written) == counts["repaired"]
    assert mgpu_io.inspect(tmp_path / "repaired" / "k224_nested_depth3_full.h5").depth == 0

    (tmp_path / "repaired" / "k224_siamese_x2_full.h5").unlink()  # as if the first run had stopped before it
    again, _ = _run(tmp_path)
    assert again["done before"] == counts["repaired"] - 1 and again["repaired"] == 1
    assert again["failed"] == counts["failed"]


BUCKET_RECIPE = re.findall(r"```python\n(.*?)```", (ROOT / "docs" / "scale.md").read_text(), re.S)[1]


def test_the_bucket_recipe_runs_on_a_local_dask_cluster_against_an_s3_server_and_resumes(tmp_path):
    """The second recipe, as written, over a prefix of a real S3-compatible server on 127.0.0.1."""
    pytest.importorskip("dask.distributed")
    pytest.importorskip("s3fs")
    pytest.importorskip("moto.server")
    import boto3
    import s3server
    from helpers import FIXTURES

    names = ["k224_siamese_x2_full.h5", "k224_functional_bn_x2_full.h5", "k224_nested_depth3_full.h5",
             "k216_failed_save_stub.h5"]
    server = s3server.start()
    try:
        client = boto3.client("s3", endpoint_url=server.url, region_name="us-east-1", aws_access_key_id=server.key,
                              aws_secret_access_key=server.secret)
        client.create_bucket(Bucket="team")
        for name in names:
            client.upload_file(str(FIXTURES / name), "team", f"checkpoints/{name}")
        (tmp_path / "recipe.py").write_text(BUCKET_RECIPE)
        env = server.env(SOURCE="s3://team/checkpoints/", OUTPUT="s3://team/repaired/", WORKERS="2",
                         PYTHONPATH=str(ROOT))

        def run():
            result = subprocess.run([sys.executable, "recipe.py"], cwd=tmp_path, capture_output=True, text=True,
                                    timeout=900, env=env)
            assert result.returncode == 0, result.stderr[-3000:]
            return json.loads(result.stdout.splitlines()[0].replace("'", '"')), result.stdout

        counts, output = run()
        assert counts == {"failed": 1, "repaired": 3}, output
        assert "k216_failed_save_stub.h5 failed: The file is the stub" in output
        listed = client.list_objects_v2(Bucket="team", Prefix="repaired/")["Contents"]
        assert sorted(o["Key"] for o in listed) == sorted(f"repaired/{n}" for n in names[:3])
        again, _ = run()
        assert again == {"done before": 3, "failed": 1}
    finally:
        server.stop()
