"""Repair one file into a legacy file of the same kind: open once, plan, write (h5py and the standard library).

The public :func:`mgpu_io.unwrap` adds what needs more than the format core: folders (:mod:`.batch`) and ``.keras``
outputs (:mod:`mgpu_io.keras.save`).
"""

import functools
from pathlib import Path

from mgpu_io.errors import InvalidArgument
from mgpu_io.format.options import UnwrapOptions
from mgpu_io.format.plan import check_output, make_plan
from mgpu_io.format.read import CONFIG, WEIGHTS, open_stored, reading
from mgpu_io.format.sandbox import probed, relayed, structure_read
from mgpu_io.format.write import write_plan


def unwrap_file(source, output, options: UnwrapOptions, *, progress=None, folder_made_later=False, in_folder=False):
    """Write the innermost template of ``source`` to ``output`` as a file of ``source``'s kind.

    ``options`` is the :class:`~mgpu_io.format.options.UnwrapOptions` that :func:`mgpu_io.unwrap` built and
    checked, passed down unchanged (never rebuilt here); ``folder_made_later`` (a folder's dry run) accepts an output
    folder that does not exist yet. ``in_folder``: one file of a folder run (:mod:`.batch`), opened once: ``config``
    applies to its weights-only files only, and a plain model is planned as one and written only with
    ``allow_plain`` (else its report says ``was_wrapper`` false, ``written`` false). Returns the
    :class:`~mgpu_io.format.unwrap_report.UnwrapReport`.
    """
    source, output = Path(source), Path(output)
    config = options.config
    check_output(
        source,
        output,
        options.overwrite,
        inputs=(config,) if config is not None else (),
        folder_made_later=folder_made_later,
    )
    # One child reads the file once, plans and writes (see format/sandbox/): libhdf5 hangs and crashes become errors.
    work = functools.partial(_unwrap_relayed, source, output, options, progress, in_folder)
    return probed(source, work, progress=progress)


def _unwrap_relayed(source, output, options, progress, in_folder=False):
    """In the probe's child: :func:`_unwrap`, its progress sent to the parent's ``progress``."""
    return _unwrap(source, output, options, relayed(progress), in_folder)


def _unwrap(source, output, options, progress, in_folder=False):
    with open_stored(source) as stored:
        plan_options = options.plan_options()
        if in_folder:  # what the folder's file is decides, from this one opening
            plan_options.update(allow_plain=True, config=options.config if stored.file_type == WEIGHTS else None)
        with reading(stored.path, "planning the repair"):
            plan = make_plan(stored, output=output, reuse=in_folder, **plan_options)
        structure_read()
        if in_folder and not plan.report.was_wrapper and not options.allow_plain:
            return plan.report  # a plain model of the folder, skipped: planned, not written
        if plan.file_type == CONFIG and output.suffix.lower() in (".yaml", ".yml"):
            raise InvalidArgument(
                problem="A repaired config is written as JSON: Keras 3 and TF >= 2.6 read no YAML",
                parameter="output",
                expected="an output ending in .json",
                received=f"output={output}",
                fix="Name the output .json and load it with keras.models.model_from_json",
            )
        if not options.dry_run:
            write_plan(plan, output, progress)
            plan.report.written = True
        return plan.report
