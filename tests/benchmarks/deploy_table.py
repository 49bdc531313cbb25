"""The table of docs/deploy.md: per fixture family and backend, each deployable format's largest difference from
``load_model``'s predictions, measured by the format's own runtime on the fixture's stored inputs.

    PYTHONPATH=. python tests/benchmarks/deploy_table.py [--families files tfops ...] [--every N] [--out results.jsonl]
    KERAS_BACKEND=jax PYTHONPATH=. .venv-jax/bin/python tests/benchmarks/deploy_table.py ...
    DEPLOY_TABLE_SUMMARY=results.jsonl python tests/benchmarks/deploy_table.py    # the table of rows written before

The families are every folder of ``fixtures/`` with a ``manifest.json`` (a new fixture folder is picked up without
an edit here), and ``layers``: the layer sweep (``fixtures/layers/<writer>/``, one plain model per case, with the
writer's inputs in the writer's ``data.npz``), whose files are named ``<writer>/<case file>``. ``--every N`` measures
every Nth full-model file of each family (the 1st, the N+1st, ... of its sorted list; the same files on every run):
its rows say ``of`` (the family's file count) and the table says "N of M files". For every full-model file of a family (``file_type`` model, or a ``_full.h5`` name) that
``mgpu_io.load_model`` loads, each format is written by :func:`mgpu_io.keras.exports.export` (run by its runtime and
compared before it is kept) on the fixture's inputs. A template whose own Lambda holds the writer's code is loaded
as its owner would load it, trusting the file (``safe_mode=False``: these are the project's own fixtures, written by
the real writers); its rows say ``trusted``. One JSON line per file and format goes to ``--out`` (a later line of the
same file and format replaces an earlier one); the summary table, and what was refused with its first line, are
printed as Markdown.
"""

import argparse
import collections
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
#: Refusals with one reason for more files than this (of a backend and format) are one counted line of the summary.
MANY = 20


def families():
    """Every fixture folder with a manifest, sorted, and ``layers`` when the layer sweep has a writer."""
    found = {path.parent.name for path in (ROOT / "fixtures").glob("*/manifest.json")}
    if any((ROOT / "fixtures" / "layers").glob("*/manifest.json")):
        found.add("layers")
    return sorted(found)


def entries(family):
    """``(folder, entry, trusted)`` of each full-model file of ``family``, sorted by file name."""
    return sorted(_entries(family), key=lambda found: found[1]["file"])


def _entries(family):
    folder = ROOT / "fixtures" / family
    if family == "layers":  # one plain model per case; the inputs in its writer's data.npz, under "<case>/x<i>"
        for manifest_path in sorted(folder.glob("*/manifest.json")):
            writer = manifest_path.parent.name
            for case, entry in sorted(json.loads(manifest_path.read_text())["cases"].items()):
                if entry.get("status", "saved") == "saved" and entry.get("file", "").endswith(".h5"):
                    yield folder, dict(file=f"{writer}/{entry['file']}", data=f"{writer}/data.npz", case=case), False
        return
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
        prefix = f"{entry['case']}/" if entry.get("case") else ""  # the layer sweep's one file for all cases
        names = [k[len(prefix):] for k in stored.files if k.startswith(prefix)]
        xs = [stored[prefix + k] for k in sorted((k for k in names if k.startswith("x") and k[1:].isdigit()),
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
    parser.add_argument("--every", type=int, default=1, metavar="N",
                        help="measure every Nth file of each family's sorted list (the 1st, the N+1st, ...)")
    args = parser.parse_args()
    warnings.simplefilter("ignore")
    import keras

    import mgpu_io
    from mgpu_io.keras.exports import check_available, export

    backend = keras.backend.backend()
    rows = []
    sink = open(args.out, "a") if args.out else None
    for family in args.families or families():
        found = list(entries(family))
        for position, (folder, entry, trusted) in enumerate(found):
            if (args.files and entry["file"] not in args.files) or position % args.every:
                continue
            base = dict(backend=backend, family=family, file=entry["file"], trusted=trusted)
            if args.every > 1:
                base.update(every=args.every, of=len(found))
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
                        row.update(status="exported", difference=measured["difference"], bound=measured["bound"])
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
    rows = [r for r in latest.values() if r["format"] is not None or (r["backend"], r["family"], r["file"])
            not in measured]  # "left out"/"no load" rows of runs before trusted loads, measured since
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
                if name == FORMATS[0] and not any(r["format"] for r in mine):  # a family that load_model refuses
                    print(f"| {backend} | {family} | every format | 0 |  | 0 | {skipped} |")
                continue
            worst = max((r["difference"] for r in done), default=None)
            trusted = sum(bool(r.get("trusted")) for r in done)
            of = max((r.get("of", 0) for r in mine), default=0)
            label = f"{family} ({len({r['file'] for r in mine})} of {of} files)" if of else family
            print(f"| {backend} | {label} | {name} | {len(done)}{f' ({trusted})' if trusted else ''} | {'' if worst is None else f'{worst:.1e}'} | "
                  f"{len(refused)} | {skipped} |")
    print()
    print("| backend | family | format | refused file | why (the refusal's first sentence) |")
    print("|---|---|---|---|---|")
    refusals = [r for r in rows if r["status"] in ("refused", "no load")]
    for row in refusals:
        row["why"] = (row.get("detail") or "").split(". ")[0].replace("|", "/")
    shared = collections.Counter((r["backend"], r["format"], r["why"]) for r in refusals)
    for (backend, name, why), count in sorted(shared.items(), key=lambda item: (item[0][0], str(item[0][1]))):
        if count > MANY:  # one reason for a whole backend and format (LiteRT on JAX): one line, counted
            families_ = sorted({r["family"] for r in refusals if (r["backend"], r["format"], r["why"]) ==
                                (backend, name, why)})
            print(f"| {backend} | {', '.join(families_)} | {name or 'load_model'} | {count} files | {why} |")
    for row in sorted(refusals, key=lambda r: (r["backend"], r["family"], str(r["format"]), r["file"])):
        if shared[(row["backend"], row["format"], row["why"])] <= MANY:
            print(f"| {row['backend']} | {row['family']} | {row['format'] or 'load_model'} | {row['file']} | "
                  f"{row['why']} |")


if __name__ == "__main__":
    if os.environ.get("DEPLOY_TABLE_SUMMARY"):
        summary([json.loads(line) for line in open(os.environ["DEPLOY_TABLE_SUMMARY"])])
    else:
        main()
