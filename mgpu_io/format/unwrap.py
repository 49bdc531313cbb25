"""Repair one file into a legacy file of the same kind: open once, plan, write (h5py and the standard library).

The public :func:`mgpu_io.unwrap` adds what needs more than the format core: folders (:mod:`.batch`) and ``.keras``
outputs (:mod:`mgpu_io.keras.save`).
"""

import functools
from pathlib import Path

from mgpu_io.errors import InvalidArgument
from mgpu_io.format.options import UnwrapOptions
from mgpu_io.format.plan import check_output, make_plan
from mgpu_io.format.read import CONFIG, open_stored, reading
from mgpu_io.format.sandbox import probed, relayed, structure_read
from mgpu_io.format.write import write_plan


def unwrap_file(source, output, options: UnwrapOptions, *, progress=None, folder_made_later=False):
    """Write the innermost template of ``source`` to ``output`` as a file of ``source``'s kind.

    ``options`` is the :class:`~mgpu_io.format.options.UnwrapOptions` that :func:`mgpu_io.unwrap` built and
    checked, passed down unchanged (never rebuilt here); ``folder_made_later`` (a folder's dry run) accepts an output
    folder that does not exist yet. Returns the :class:`~mgpu_io.format.plan.UnwrapReport`.
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
    # One child reads the file once, plans and writes (see sandbox.py): libhdf5 hangs and crashes become errors.
    return probed(source, functools.partial(_unwrap_relayed, source, output, options, progress), progress=progress)


def _unwrap_relayed(source, output, options, progress):
    """In the probe's child: :func:`_unwrap`, its progress sent to the parent's ``progress``."""
    return _unwrap(source, output, options, relayed(progress))


def _unwrap(source, output, options, progress):
    with open_stored(source) as stored:
        with reading(stored.path, "planning the repair"):
            plan = make_plan(stored, output=output, **options.plan_options())
        structure_read()
        if plan.file_type == CONFIG and output.suffix.lower() in (".yaml", ".yml"):
            raise InvalidArgument(
                f"A repaired config is written as JSON: Keras 3 and TF >= 2.6 read no YAML. Expected an output "
                f"ending in .json. Received: output={output}. Name the output .json and load it with "
                f"keras.models.model_from_json."
            )
        if not options.dry_run:
            write_plan(plan, output, progress)
            plan.report.written = True
        return plan.report
