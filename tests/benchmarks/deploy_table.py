"""The table of docs/deploy.md: per fixture family and backend, each deployable format's largest difference from
``load_model``'s predictions, measured by the format's own runtime on the fixture's stored inputs.

    PYTHONPATH=. python tests/benchmarks/deploy_table.py [--families files tfops ...] [--out results.jsonl]
    KERAS_BACKEND=jax PYTHONPATH=. .venv-jax/bin/python tests/benchmarks/deploy_table.py ...

For every full-model file of a family (``file_type`` model, or a ``_full.h5`` name) that ``mgpu_io.load_model``
loads (a template's own Lambda needs the user's function: those are left out and counted), each format is written
by :func:`mgpu_io.keras.exports.export` (run by its runtime and compared before it is kept) on the fixture's
inputs. One JSON line per file and format goes to ``--out``; the summary table is printed as Markdown.
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


def entries(family):
    folder = ROOT / "fixtures" / family
    manifest = json.loads((folder / "manifest.json").read_text())
    for entry in manifest:
        name = entry["file"]
        if entry.get("file_type", "model") != "model" and not name.endswith("_full.h5"):
            continue
        if not name.endswith(".h5") or entry.get("kind") == "config":
            continue
        if "template-lambda" in (entry.get("findings") or []):
            yield folder, entry, "left out: the template's own Lambda needs the user's function"
            continue
        yield folder, entry, None


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
    parser.add_argument("--families", nargs="+", default=["files", "tfops", "applications", "rnn_dropout"])
    parser.add_argument("--formats", nargs="+", default=list(FORMATS))
    parser.add_argument("--out", type=Path, default=None)
    args = parser.parse_args()
    warnings.simplefilter("ignore")
    import keras

    import mgpu_io
    from mgpu_io.keras.exports import check_available, export

    backend = keras.backend.backend()
    rows = []
    sink = open(args.out, "a") if args.out else None
    for family in args.families:
        for folder, entry, left_out in entries(family):
            base = dict(backend=backend, family=family, file=entry["file"])
            if left_out:
                rows.append(dict(base, format=None, status="left out", detail=left_out))
                if sink:
                    sink.write(json.dumps(rows[-1]) + "\n")
                continue
            try:
                model = mgpu_io.load_model(folder / entry["file"], compile=False)
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
    print("| backend | family | format | exported | largest difference | refused | left out / not loaded |")
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
            print(f"| {backend} | {family} | {name} | {len(done)} | {'' if worst is None else f'{worst:.1e}'} | "
                  f"{len(refused)} | {skipped} |")


if __name__ == "__main__":
    if os.environ.get("DEPLOY_TABLE_SUMMARY"):
        summary([json.loads(line) for line in open(os.environ["DEPLOY_TABLE_SUMMARY"])])
    else:
        main()
