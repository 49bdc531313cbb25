"""Throughput per worker of the bucket recipe (docs/scale.md): files repaired per second, per Dask worker, from one
prefix of an S3-compatible server to another.

    PYTHONPATH=.:tests/support python tests/benchmarks/bucket_throughput.py [--files N] [--workers 1 2] [--format onnx]
        [--prefix-jobs 0 4]

Starts moto's S3 server on 127.0.0.1 (tests/support/s3server.py), uploads N small wrappers (copies of four fixtures), then
for each worker count runs a LocalCluster of that many single-threaded worker processes over the prefix into a
fresh output prefix, and prints one row per run: files, wall seconds (the map alone, the cluster already started),
files per second and files per second per worker. The server runs on the same machine as the workers, so the
figures are the repair's and the client's cost, not a network's.

``--prefix-jobs J ...`` also times ``mgpu_io.unwrap(prefix, output_prefix, jobs=J)`` in this process (``0``: without
``jobs``, one file after another: download, repair, upload), one row per value, each into a fresh output prefix;
``--workers`` with no value leaves the Dask rows out.
"""

import argparse
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
sys.path[:0] = [str(ROOT), str(ROOT / "tests" / "support")]
SOURCES = ["k224_functional_bn_x2_full.h5", "k216_kuza55_x2_full.h5", "k224_sequential_x3_full.h5",
           "k224_siamese_x2_full.h5"]


def repair(name, source, output, format):
    import mgpu_io
    from mgpu_io.remote import done_before

    target = output + (name.rsplit(".", 1)[0] + {"onnx": ".onnx"}[format] if format else name)
    if done_before(source + name, target):
        return "done before"
    try:
        mgpu_io.unwrap(source + name, target, overwrite=True)
        return "repaired"
    except mgpu_io.MgpuIOError as error:
        return f"failed: {error}"


def prefix_rows(args, names):
    """``mgpu_io.unwrap`` of the whole prefix in this process, without ``jobs`` (0) and with each value given."""
    import mgpu_io

    warm = names[0] if args.format is None else names[0].rsplit(".", 1)[0] + ".onnx"
    mgpu_io.unwrap("s3://bench/in/" + names[0], "s3://bench/warm/" + warm)  # imports done before the clock
    print("| unwrap of the prefix | files | output | seconds | files/s |\n|---|---|---|---|---|")
    for run, jobs in enumerate(args.prefix_jobs):
        output = f"s3://bench/prefix-{run}-{jobs}/"
        start = time.perf_counter()
        report = mgpu_io.unwrap("s3://bench/in/", output, jobs=jobs or None, format=args.format)
        seconds = time.perf_counter() - start
        counts = report.counts()
        if counts.get("repaired", 0) != len(names):
            print(f"  ! not all repaired: {counts}")
        label = f"jobs={jobs}" if jobs else "without jobs"
        print(f"| {label} | {len(names)} | {args.format or '.h5'} | {seconds:.1f} | {len(names) / seconds:.2f} |",
              flush=True)
    print()


def main():
    import boto3
    import s3server
    from dask.distributed import Client, LocalCluster

    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--files", type=int, default=48)
    parser.add_argument("--workers", type=int, nargs="*", default=[1, 2])
    parser.add_argument("--prefix-jobs", type=int, nargs="*", default=[])
    parser.add_argument("--format", choices=["onnx"], default=None)
    args = parser.parse_args()
    server = s3server.start()
    try:
        import os

        os.environ.update(server.env())
        client = boto3.client("s3", endpoint_url=server.url, region_name="us-east-1", aws_access_key_id=server.key,
                              aws_secret_access_key=server.secret)
        client.create_bucket(Bucket="bench")
        names = []
        for index in range(args.files):
            name = f"{index:05d}-{SOURCES[index % len(SOURCES)]}"
            client.upload_file(str(ROOT / "fixtures" / "files" / SOURCES[index % len(SOURCES)]), "bench", f"in/{name}")
            names.append(name)
        if args.prefix_jobs:
            prefix_rows(args, names)
        if not args.workers:
            return
        print(f"| workers | files | output | seconds | files/s | files/s per worker |\n|---|---|---|---|---|---|")
        for workers in args.workers:
            output = f"s3://bench/out-{workers}/"
            with LocalCluster(n_workers=workers, threads_per_worker=1, processes=True) as cluster, \
                    Client(cluster) as dask:
                dask.run(lambda: __import__("mgpu_io.remote"))  # imports done before the clock starts
                start = time.perf_counter()
                results = dask.gather(dask.map(repair, names, source="s3://bench/in/", output=output,
                                               format=args.format))
                seconds = time.perf_counter() - start
            bad = [r for r in results if r != "repaired"]
            if bad:
                print(f"  ! {len(bad)} not repaired: {bad[0]}")
            rate = len(names) / seconds
            print(f"| {workers} | {len(names)} | {args.format or '.h5'} | {seconds:.1f} | {rate:.2f} | "
                  f"{rate / workers:.2f} |", flush=True)
    finally:
        server.stop()


if __name__ == "__main__":
    main()
