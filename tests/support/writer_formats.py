"""The writer x format table of docs/writers-formats.md, computed from the fixture manifests.

A cell is "proven" when the real writer's files of that format are in fixtures/ (every manifest entry is repaired,
loaded and compared with the old Keras' predictions by the parametrized tests), and otherwise says why that version
never wrote the format. ``python tests/support/writer_formats.py`` prints the table; tests/project/test_docs.py checks the page.
"""

from collections import defaultdict

from helpers import APP_MANIFEST, MANIFEST, TF2_MANIFEST

#: Manifest writer names -> the release a user knows.
WRITERS = {
    "keras122": "Keras 1.2.2", "k122": "Keras 1.2.2",
    "k209py36": "Keras 2.0.9",
    "keras216": "Keras 2.1.6", "k216": "Keras 2.1.6",
    "keras224": "Keras 2.2.4", "k224": "Keras 2.2.4", "keras224py27": "Keras 2.2.4",
    "keras231": "Keras 2.3.1 (TF 1.15)", "k231": "Keras 2.3.1 (TF 1.15)",
    "k231tf2": "Keras 2.3.1 (TF 2.0)",
    "tfkeras115": "tf.keras 1.15", "tfk115": "tf.keras 1.15",
    "tf20": "tf.keras 2.0", "tf21": "tf.keras 2.1", "tf22": "tf.keras 2.2", "tf23": "tf.keras 2.3",
}
ROWS = list(dict.fromkeys(WRITERS.values()))
FORMATS = {"model": "HDF5 full model", "weights": "HDF5 weights", "json": "JSON (`to_json`)",
           "yaml": "YAML (`to_yaml`)", "savedmodel": "SavedModel folder", "tf_checkpoint": "TF checkpoint"}
_STANDALONE = "not written by that version: standalone Keras saves HDF5 only"
#: Why a release never wrote a format (what the generators observed; fixtures/*/manifest.json notes).
NOT_WRITTEN = {
    ("Keras 1.2.2", "savedmodel"): _STANDALONE, ("Keras 1.2.2", "tf_checkpoint"): _STANDALONE,
    ("Keras 2.0.9", "model"): "not written by that version: `save()` of `multi_gpu_model` raises `TypeError: "
                              "can't pickle module objects` and leaves a stub (proven: `failed-save-stub`)",
    ("Keras 2.0.9", "json"): "not written by that version: `to_json()` raises the same `TypeError`",
    ("Keras 2.0.9", "yaml"): "not written by that version: `to_yaml()` raises the same `TypeError` (its "
                             "`get_config()` deep-copies the slice's closure over the `tensorflow` module)",
    ("Keras 2.0.9", "savedmodel"): _STANDALONE, ("Keras 2.0.9", "tf_checkpoint"): _STANDALONE,
    ("Keras 2.1.6", "json"): "not written by that version: `multi_gpu_model`'s `to_json()` raises `TypeError: "
                             "('Not JSON Serializable:', <module 'tensorflow'>)`",
    ("Keras 2.1.6", "savedmodel"): _STANDALONE, ("Keras 2.1.6", "tf_checkpoint"): _STANDALONE,
    ("Keras 2.2.4", "savedmodel"): _STANDALONE, ("Keras 2.2.4", "tf_checkpoint"): _STANDALONE,
    ("Keras 2.3.1 (TF 1.15)", "savedmodel"): _STANDALONE, ("Keras 2.3.1 (TF 1.15)", "tf_checkpoint"): _STANDALONE,
    ("Keras 2.3.1 (TF 2.0)", "savedmodel"): _STANDALONE, ("Keras 2.3.1 (TF 2.0)", "tf_checkpoint"): _STANDALONE,
}


def fixture_cells():
    """(release, format) -> the wrapper fixtures of that kind, from every manifest."""
    cells = defaultdict(list)
    for entry in MANIFEST + APP_MANIFEST + TF2_MANIFEST:
        kind = entry["file_type"]
        if kind == "config":
            kind = "yaml" if entry["file"].endswith((".yaml", ".yml")) else "json"
        if kind not in FORMATS or not entry.get("is_wrapper", True):
            continue  # stubs, and templates saved on their own
        cells[(WRITERS[entry["writer"]], kind)].append(entry["file"])
    return cells


def table():
    cells = fixture_cells()
    rows = ["| writer | " + " | ".join(FORMATS.values()) + " |", "|---" * (len(FORMATS) + 1) + "|"]
    for writer in ROWS:
        row = []
        for kind in FORMATS:
            files = cells.get((writer, kind))
            if files:
                row.append(f"proven: {len(files)} file{'s' if len(files) > 1 else ''}")
            else:
                row.append(NOT_WRITTEN.get((writer, kind), "NOT COVERED"))
        rows.append(f"| {writer} | " + " | ".join(row) + " |")
    return "\n".join(rows)


if __name__ == "__main__":
    print(table())
