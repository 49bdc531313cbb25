"""Every plan ``mgpu_io.tf.savedmodel`` works out for the repository's SavedModel fixtures, recorded (or its refusal).

Run it before and after a change to the SavedModel reader that must change nothing; the two records must be
identical::

    PYTHONPATH=$PWD .venv/bin/python tests/benchmarks/savedmodel_plans.py before.txt
    (change mgpu_io/tf/savedmodel.py)
    PYTHONPATH=$PWD .venv/bin/python tests/benchmarks/savedmodel_plans.py after.txt
    cmp before.txt after.txt

The plan is worked out in this process (no probe child), from each ``fixtures/**/saved_model.pb`` folder, the real
writers' (fixtures/tf2), reading no weight value.
"""

import argparse
import hashlib
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("out", help="the record to write")
    args = parser.parse_args()
    from mgpu_io.tf import savedmodel
    from mgpu_io.tf.bundle import import_tensorflow

    tf = import_tensorflow("Reading a SavedModel")
    lines = []
    folders = sorted(p.parent for p in (ROOT / "fixtures").rglob("saved_model.pb"))
    for folder in folders:
        try:
            outcome = repr(savedmodel._plan(tf, folder))
        except Exception as error:  # the refusals are typed errors: record which, and what they say
            outcome = f"{type(error).__name__}: {error}"
        lines.append(f"{folder.relative_to(ROOT)}\n{outcome.replace(str(ROOT), '<ROOT>')}\n")
    text = "\n".join(lines)
    Path(args.out).write_text(text)
    print(
        f"{len(folders)} SavedModel folders planned; sha256 {hashlib.sha256(text.encode()).hexdigest()[:16]}",
        file=sys.stdout,
    )


if __name__ == "__main__":
    main()
