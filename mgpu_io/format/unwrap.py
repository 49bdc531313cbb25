"""Repair one file into a legacy file of the same kind: open once, plan, write (h5py and the standard library).

The public :func:`mgpu_io.unwrap` adds what needs more than the format core: folders (:mod:`.batch`) and ``.keras``
outputs (:mod:`mgpu_io.keras.save`).
"""

from pathlib import Path

from mgpu_io.errors import InvalidArgument
from mgpu_io.format.plan import check_options, check_output, make_plan
from mgpu_io.format.probe import probed, relayed, structure_read
from mgpu_io.format.read import CONFIG, open_stored, reading
from mgpu_io.format.write import write_plan


def unwrap_file(
    source,
    output,
    *,
    config=None,
    target="keras3",
    keep_config=False,
    cpu=False,
    include_optimizer=True,
    allow_plain=False,
    overwrite=False,
    dry_run=False,
    progress=None,
    folder_made_later=False,
):
    """Write the innermost template of ``source`` to ``output`` as a file of ``source``'s kind.

    The options are :func:`mgpu_io.unwrap`'s; ``folder_made_later`` (a folder's dry run) accepts an output folder
    that does not exist yet. Returns the :class:`~mgpu_io.format.plan.UnwrapReport`.
    """
    source, output = Path(source), Path(output)
    check_options(target=target, keep_config=keep_config, cpu=cpu)
    check_output(
        source, output, overwrite, inputs=(config,) if config is not None else (), folder_made_later=folder_made_later
    )
    options = dict(
        config=config,
        target=target,
        keep_config=keep_config,
        cpu=cpu,
        include_optimizer=include_optimizer,
        allow_plain=allow_plain,
    )
    # One child reads the file once, plans and writes (see probe.py): libhdf5 hangs and crashes become errors.
    return probed(source, lambda: _unwrap(source, output, options, dry_run, relayed(progress)), progress=progress)


def _unwrap(source, output, options, dry_run, progress):
    with open_stored(source) as stored:
        with reading(stored.path, "planning the repair"):
            plan = make_plan(stored, output=output, **options)
        structure_read()
        if plan.file_type == CONFIG and output.suffix.lower() in (".yaml", ".yml"):
            raise InvalidArgument(
                f"A repaired config is written as JSON: Keras 3 and TF >= 2.6 read no YAML. Expected an output "
                f"ending in .json. Received: output={output}. Name the output .json and load it with "
                f"keras.models.model_from_json."
            )
        if not dry_run:
            write_plan(plan, output, progress)
            plan.report.written = True
        return plan.report
