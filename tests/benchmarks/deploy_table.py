"""The table of docs/deploy.md: per fixture family and backend, each deployable format's largest difference from
``load_model``'s predictions, measured by the format's own runtime on the fixture's stored inputs.

    PYTHONPATH=. python tests/benchmarks/deploy_table.py [--families files tfops ...] [--out results.jsonl]
    KERAS_BACKEND=jax PYTHONPATH=. .venv-jax/bin/python tests/benchmarks/deploy_table.py ...
    DEPLOY_TABLE_SUMMARY=results.jsonl python tests/benchmarks/deploy_table.py    # the table of rows written before

The families are every folder of ``fixtures/`` with a ``manifest.json`` (a new fixture folder is picked up without
an edit here). For every full-model file of a family (``file_type`` model, or a ``_full.h5`` name) that
``mgpu_io.load_model`` loads, each format is written by :func:`mgpu_io.keras.exports.export` (run by its runtime and
compared before it is kept) on the fixture's inputs. A template whose own Lambda holds the writer's code is loaded
as its owner would load it, trusting the file (``safe_mode=False``: these are the project's own fixtures, written by
the real writers); its rows say ``trusted``. One JSON line per file and format goes to ``--out`` (a later line of the
same file and format replaces an earlier one); the summary table, and what was refused with its first line, are
printed as Markdown.
"""

import argparse
import json
import os
import sys
import tempfile
import time
import warnings
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT))
FORMATS = ("onnx", "litert", "saved_model")


def families():
    """Every fixture folder with a manifest, sorted."""
    return sorted(path.parent.name for path in (ROOT / "fixtures").glob("*/manifest.json"))


def entries(family):
    folder = ROOT / "fixtures" / family
    manifest = json.loads((folder / "manifest.json").read_text())
    for entry in manifest:
        name = entry["file"]
        if entry.get("file_type", "model") != "model" and not name.endswith("_full.h5"):
            continue
        if not name.endswith(".h5") or entry.get("kind") == "config":
            continue
        yield folder, entry, "template-lambda" in (entry.get("findings") or [])


def inputs(folder, entry, model):
    from mgpu_io.keras.exports import sample_inputs

    data = entry.get("data")
    if data and (folder / data).is_file():
        stored = __import__("numpy").load(folder / data)
        xs = [stored[k] for k in sorted((k for k in stored.files if k.startswith("x") and k[1:].isdigit()),
                                        key=lambda k: int(k[1:]))]
        if len(xs) == len(model.inputs):
            return xs, "stored"
    return sample_inputs(model), "generated"


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--families", nargs="+", default=None, help="default: every fixture folder with a manifest")
    parser.add_argument("--formats", nargs="+", default=list(FORMATS))
    parser.add_argument("--files", nargs="+", default=None, help="only these file names")
    parser.add_argument("--out", type=Path, default=None)
    args = parser.parse_args()
    warnings.simplefilter("ignore")
    import keras

    import mgpu_io
    from mgpu_io.keras.exports import check_available, export

    backend = keras.backend.backend()
    rows = []
    sink = open(args.out, "a") if args.out else None
    for family in args.families or families():
        for folder, entry, trusted in entries(family):
            if args.files and entry["file"] not in args.files:
                continue
            base = dict(backend=backend, family=family, file=entry["file"], trusted=trusted)
            try:
                model = mgpu_io.load_model(folder / entry["file"], compile=False, safe_mode=not trusted)
                xs, kind = inputs(folder, entry, model)
            except Exception as error:  # what load_model refuses is not an export's matter
                rows.append(dict(base, format=None, status="no load", detail=str(error).split(". ")[0][:200]))
                if sink:
                    sink.write(json.dumps(rows[-1]) + "\n")
                continue
            for name in args.formats:
                row = dict(base, format=name, inputs=kind)
                start = time.perf_counter()
                with tempfile.TemporaryDirectory() as tmp:
                    try:
                        check_available(name)
                        measured = export(model, Path(tmp) / ("out" + {"onnx": ".onnx", "litert": ".tflite"}
                                                              .get(name, "")), name, inputs=xs)
                        row.update(status="exported", difference=measured["difference"])
                    except mgpu_io.MgpuIOError as error:
                        row.update(status="refused", detail=str(error)[:600])
                row["seconds"] = round(time.perf_counter() - start, 1)
                rows.append(row)
                if sink:
                    sink.write(json.dumps(row) + "\n")
                    sink.flush()
                print(json.dumps(row)[:300], file=sys.stderr, flush=True)
            keras.backend.clear_session()
    summary(rows)


def summary(rows):
    latest = {}
    for row in rows:  # a later measure of the same file and format replaces an earlier one
        latest[(row["backend"], row["family"], row["file"], row["format"])] = row
    measured = {(r["backend"], r["family"], r["file"]) for r in latest.values() if r["format"] is not None}
    rows = [r for r in latest.values() if r["status"] != "left out" or (r["backend"], r["family"], r["file"])
            not in measured]  # "left out" rows of runs before trusted loads, measured since
    print("| backend | family | format | exported (trusted load) | largest difference | refused | not loaded |")
    print("|---|---|---|---|---|---|---|")
    keys = sorted({(r["backend"], r["family"]) for r in rows})
    for backend, family in keys:
        mine = [r for r in rows if r["backend"] == backend and r["family"] == family]
        skipped = len({r["file"] for r in mine if r["format"] is None})
        for name in FORMATS:
            done = [r for r in mine if r["format"] == name and r["status"] == "exported"]
            refused = [r for r in mine if r["format"] == name and r["status"] == "refused"]
            if not done and not refused:
                continue
            worst = max((r["difference"] for r in done), default=None)
            trusted = sum(bool(r.get("trusted")) for r in done)
            print(f"| {backend} | {family} | {name} | {len(done)} ({trusted}) | {'' if worst is None else f'{worst:.1e}'} | "
                  f"{len(refused)} | {skipped} |")
    print()
    print("| backend | family | format | refused file | why (the refusal's first sentence) |")
    print("|---|---|---|---|---|")
    for row in sorted(rows, key=lambda r: (r["backend"], r["family"], str(r["format"]), r["file"])):
        if row["status"] in ("refused", "no load"):
            why = (row.get("detail") or "").split(". ")[0].replace("|", "/")
            print(f"| {row['backend']} | {row['family']} | {row['format'] or 'load_model'} | {row['file']} | {why} |")


if __name__ == "__main__":
    if os.environ.get("DEPLOY_TABLE_SUMMARY"):
        summary([json.loads(line) for line in open(os.environ["DEPLOY_TABLE_SUMMARY"])])
    else:
        main()
