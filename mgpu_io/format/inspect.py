"""Describe a legacy Keras file: is it a wrapper, how deep, around which template, and what is wrong with it.

This module is the report and its entry; the reading is :mod:`.inspect_reader`'s, in the probe's child. Neither
h5py nor NumPy is imported here: the command line's ``inspect`` hands the file to a child forked as it starts
(:func:`mgpu_io.format.sandbox.start_early`), which imports them while this process imports the command line.
"""

from pathlib import Path

from mgpu_io.errors import FailedSaveStub
from mgpu_io.format.inspect_report import FILE_TYPES, WEIGHTS_ONLY, Finding, InspectReport, lambda_lines
from mgpu_io.format.sandbox import by_name, probed

__all__ = ["FILE_TYPES", "SCAN_BUDGET", "WEIGHTS_ONLY", "Finding", "InspectReport", "inspect", "lambda_lines"]

#: Above this many bytes of weights, the automatic NaN scan reads only BatchNormalization layers' weights.
SCAN_BUDGET = 256 << 20


def inspect(path, scan_weights=None, *, diagram=None, overwrite=False) -> InspectReport:
    """Inspect the file at ``path`` (full model, weights only, or JSON config) without loading Keras.

    Args:
        path: the file.
        scan_weights: which weights are read to look for NaN/Inf: ``True`` all of them, ``False`` none, ``None``
            (default) all when they total at most :data:`SCAN_BUDGET`, else BatchNormalization layers' only
            (where multi-GPU training leaves NaN), so that inspecting a large file stays fast.
        diagram: also draw the wrapper next to its template, as SVG, to this path (full models and configs).
        overwrite: replace an existing ``diagram`` file.

    Raises:
        NotAModelFile, WeightsMismatch: the file cannot be read as a Keras model.
        InvalidArgument, OutputError: ``diagram`` was asked of a file without a graph, or cannot be written.

    Example:
        >>> report = inspect("fixtures/files/k224_nested_depth3_full.h5")
        >>> report.is_wrapper, report.depth, report.template, report.outputs
        (True, 3, 'template', ['out_a', 'out_b'])
    """
    if diagram is not None:
        from mgpu_io.format.plan import check_output

        check_output(path, diagram, overwrite)
    try:
        # libhdf5 hangs become errors; the diagram is drawn by the child that read the file, and written here. The
        # reader is named, not imported: the child imports it (h5py, NumPy), this process need not.
        work = by_name(
            "mgpu_io.format.inspect_reader", "inspect_file", path, scan_weights, SCAN_BUDGET, diagram is not None
        )
        report, svg = probed(path, work)
        if diagram is not None:
            from mgpu_io.format.write import atomic_path

            with atomic_path(Path(diagram)) as temporary:
                temporary.write_text(svg)
        return report
    except FailedSaveStub as stub:
        if diagram is not None:
            raise
        from mgpu_io.format.inspect_reader import stub_report

        return stub_report(path, stub)
