"""What `unwrap` promises around the repair itself: the input is never touched, the output appears whole or not at
all, every level of nesting goes, the weights and optimizer state arrive bit for bit."""

import errno
import json
import os
import signal
import sys

import h5py
import numpy as np
import pytest
from helpers import FIXTURES, digest, fork_here, runner

import mgpu_io
from mgpu_io import OutputError, inspect, unwrap
from mgpu_io.cli import app
from mgpu_io.format.string_attrs import read_str_list

WRAPPER = FIXTURES / "k224_functional_bn_x2_full.h5"
NESTED = FIXTURES / "k224_nested_depth3_full.h5"


def test_the_input_is_opened_read_only_and_left_unchanged(tmp_path):
    source = tmp_path / "wrapper.h5"
    source.write_bytes(WRAPPER.read_bytes())
    source.chmod(0o444)
    before, mtime = digest(source), source.stat().st_mtime_ns
    unwrap(source, tmp_path / "out.h5")
    assert (digest(source), source.stat().st_mtime_ns) == (before, mtime)


def test_every_level_of_a_depth_three_nested_save_is_removed(tmp_path):
    out = tmp_path / "out.h5"
    report = unwrap(NESTED, out)
    assert report.depth == 3
    clean = inspect(out)
    assert (clean.is_wrapper, clean.depth, clean.template) == (False, 0, "template")
    assert clean.weights == inspect(NESTED).weights


def test_weights_and_optimizer_state_are_copied_bit_for_bit(tmp_path):
    out = tmp_path / "out.h5"
    unwrap(WRAPPER, out, keep_config=True)
    with h5py.File(WRAPPER, "r") as src, h5py.File(out, "r") as dst:
        stored = src["model_weights/template"]
        copied = 0
        for layer in read_str_list(dst["model_weights"].attrs, "layer_names"):
            for name in read_str_list(dst["model_weights"][layer].attrs, "weight_names"):
                np.testing.assert_array_equal(dst["model_weights"][layer][name][()], stored[name][()])
                copied += 1
        assert copied == len(read_str_list(stored.attrs, "weight_names"))
        src_opt, dst_opt = src["optimizer_weights"], dst["optimizer_weights"]
        names = read_str_list(src_opt.attrs, "weight_names")
        assert read_str_list(dst_opt.attrs, "weight_names") == names
        for name in names:
            np.testing.assert_array_equal(dst_opt[name][()], src_opt[name][()])


def contents(path):
    """Every group, dataset and attribute of an HDF5 file: names, HDF5 types, shapes and bytes."""
    found = {}
    with h5py.File(path, "r") as f:
        def attributes(obj):
            return {key: (h5py.h5a.open(obj.id, key.encode()).get_type().get_class(), str(obj.attrs[key]))
                    for key in obj.attrs if key != "mgpu_io"}

        found["/"] = attributes(f)
        f.visititems(lambda name, obj: found.__setitem__(name, (
            attributes(obj), (obj.dtype.str, obj.shape, obj[()].tobytes()) if isinstance(obj, h5py.Dataset) else None)))
    return found


@pytest.mark.parametrize("source", [WRAPPER, NESTED], ids=["wrapper", "nested depth 3"])
@pytest.mark.parametrize("in_memory_up_to, hdf5_copy_below", [(0, 1 << 20), (0, 0)],
                         ids=["built on disk, copied by HDF5", "built on disk, copied by the kernel"])
def test_a_file_built_in_memory_is_the_file_built_on_disk(tmp_path, monkeypatch, source, in_memory_up_to,
                                                          hdf5_copy_below):
    unwrap(source, tmp_path / "memory.h5")  # small: built in memory and written in one go
    fork_here(monkeypatch)  # the child that writes sees the sizes set here
    monkeypatch.setattr(mgpu_io.format.write, "_IN_MEMORY_UP_TO", in_memory_up_to)
    monkeypatch.setattr(mgpu_io.format.write, "_COPIED_BY_HDF5_BELOW", hdf5_copy_below)
    unwrap(source, tmp_path / "disk.h5")
    assert contents(tmp_path / "memory.h5") == contents(tmp_path / "disk.h5")
    assert len(contents(tmp_path / "memory.h5")) > 10


def test_no_optimizer_leaves_the_optimizer_state_out(tmp_path):
    out = tmp_path / "out.h5"
    assert unwrap(WRAPPER, out, include_optimizer=False).optimizer == "dropped"
    with h5py.File(out, "r") as f:
        assert "optimizer_weights" not in f and "training_config" in f.attrs


def test_the_output_records_where_it_came_from(tmp_path):
    out = tmp_path / "out.h5"
    unwrap(NESTED, out)
    with h5py.File(out, "r") as f:
        provenance = json.loads(f.attrs["mgpu_io"])
    assert provenance == {"tool": f"mgpu-io {mgpu_io.__version__}", "source_keras_version": "2.2.4",
                          "removed_wrapper_levels": 3, "config": "normalized"}


def test_dry_run_reports_the_plan_and_writes_nothing(tmp_path):
    result = runner.invoke(app, ["unwrap", str(NESTED), str(tmp_path / "out.h5"), "--dry-run", "--json"])
    assert result.exit_code == 0, result.output
    plan = json.loads(result.stdout)
    assert (plan["written"], plan["depth"], plan["template"]) == (False, 3, "template")
    assert list(tmp_path.iterdir()) == []


def test_an_existing_output_is_kept_unless_forced(tmp_path):
    out = tmp_path / "out.h5"
    out.write_text("keep me")
    with pytest.raises(OutputError, match="Pass overwrite=True to replace it"):
        unwrap(WRAPPER, out)
    assert out.read_text() == "keep me"
    unwrap(WRAPPER, out, overwrite=True)
    assert inspect(out).template == "template"


def test_the_input_is_never_the_output_even_through_a_link(tmp_path):
    source = tmp_path / "wrapper.h5"
    source.write_bytes(WRAPPER.read_bytes())
    link = tmp_path / "link.h5"
    link.symlink_to(source)
    for target in (source, link):
        with pytest.raises(OutputError, match="The output is an input file"):
            unwrap(source, target, overwrite=True)
    assert digest(source) == digest(WRAPPER)


def test_a_crash_while_writing_leaves_the_previous_output_and_no_partial_file(tmp_path, monkeypatch):
    import mgpu_io.format.write

    out = tmp_path / "out.h5"
    out.write_text("previous checkpoint")
    original = mgpu_io.format.write._copy_raw
    test_process = os.getpid()

    def crash(blocks, path, progress=None):  # the structure is written; Ctrl-C while the weights are copied
        original(blocks[: len(blocks) // 2], path, progress)
        if os.getpid() != test_process:  # the terminal signals the whole process group: the probe's child too
            os.kill(test_process, signal.SIGINT)
            os.kill(os.getpid(), signal.SIGINT)
        raise KeyboardInterrupt

    fork_here(monkeypatch)  # the child that writes runs the crash set here
    monkeypatch.setattr(mgpu_io.format.write, "_copy_raw", crash)
    # Ctrl-C reaches Python as KeyboardInterrupt, also where the suite was started with SIGINT ignored (a shell's
    # background job, nohup): otherwise the signal would be lost and only the child's death seen.
    previous = signal.signal(signal.SIGINT, signal.default_int_handler)
    try:
        with pytest.raises(KeyboardInterrupt):
            unwrap(WRAPPER, out, overwrite=True)
    finally:
        signal.signal(signal.SIGINT, previous)
    assert out.read_text() == "previous checkpoint"
    assert [p.name for p in tmp_path.iterdir()] == ["out.h5"]


def test_a_missing_output_folder_is_an_error(tmp_path):
    with pytest.raises(OutputError, match="The output folder does not exist"):
        unwrap(WRAPPER, tmp_path / "no" / "such" / "out.h5")


def test_the_human_report_says_what_was_done(tmp_path):
    result = runner.invoke(app, ["unwrap", str(NESTED), str(tmp_path / "out.h5")])
    assert result.exit_code == 0, result.output
    assert f"Wrote {tmp_path / 'out.h5'}: template 'template', 10 weight tensors in 4 layers" in result.stdout
    assert "removed 3 wrapper levels (2 replicas innermost)" in result.stdout
    assert "optimizer state: copied" in result.stdout



def test_progress_is_reported_in_bytes_up_to_the_total(tmp_path):
    calls = []
    report = unwrap(NESTED, tmp_path / "out.h5", progress=lambda done, total: calls.append((done, total)))
    total = calls[-1][1]
    assert calls[-1][0] == total > report.weight_bytes > 0  # the optimizer state is copied too
    assert [done for done, _ in calls] == sorted(done for done, _ in calls)


def test_progress_counts_a_large_weight_as_its_bytes_are_copied_not_before(tmp_path, monkeypatch):
    """A large weight's bytes are copied by the kernel once the file's structure is written: its share of the bar
    grows as they are copied, not when its dataset is made (a 10 GB file's bar stood full for the whole copy)."""
    import mgpu_io.format.write as write

    monkeypatch.setattr(write, "_IN_MEMORY_UP_TO", 0)  # every weight a block of its own, copied by the kernel
    monkeypatch.setattr(write, "_COPIED_BY_HDF5_BELOW", 1)
    copying, original = [], write._copy_raw

    def copy_raw(blocks, path, progress=None):
        copying.append(sum(nbytes for *_, nbytes in blocks))
        return original(blocks, path, progress)

    monkeypatch.setattr(write, "_copy_raw", copy_raw)
    calls = []
    monkeypatch.setenv("MGPU_IO_PROBE", "0")  # here, so that the ticks are seen in the order they are made
    report = unwrap(WRAPPER, tmp_path / "out.h5", progress=lambda done, total: calls.append((done, total, len(copying))))
    total = calls[-1][1]
    during_copy = [done for done, _, started in calls if started]
    assert report.written and calls[-1][0] == total and copying and copying[0] > 0
    assert during_copy and during_copy[-1] - (total - copying[0]) == copying[0]  # the copied bytes, as copied


def test_weights_only_names_with_scopes_need_the_architecture_never_a_guess(tmp_path):
    """keras_applications' DenseNet names weights `conv1/conv/kernel:0`: without the config the owning layer is a
    guess, so the repair is refused with the fix, and inspect says why; with the config it is exact."""
    from helpers import ROOT

    from mgpu_io import InvalidArgument, inspect, unwrap

    weights = ROOT / "fixtures" / "applications" / "k224_densenet_x2_weights.h5"
    with pytest.raises(InvalidArgument, match=r"Which layer owns each weight cannot be told from these names.*"
                                              r"e\.g\. 'conv1/conv/kernel:0'\. Pass config= "):
        unwrap(weights, tmp_path / "w.h5")
    assert not (tmp_path / "w.h5").exists()
    assert "scoped-weight-names" in [f.kind for f in inspect(weights).findings]
    report = unwrap(weights, tmp_path / "w.h5", config=weights.with_name("k224_densenet_x2_config.json"))
    assert report.written and "layer-name-slash" in report.config_changes


@pytest.mark.parametrize("skew", [0, 552], ids=["offsets alike within a page: the kernel copies",
                                                "offsets unlike: through a buffer, in several parts"])
def test_weight_bytes_are_copied_exactly_either_way(tmp_path, skew):
    from mgpu_io.format.write import _copy_range

    data = np.random.RandomState(0).bytes(3 * 4096 + 123)
    source, target = tmp_path / "source", tmp_path / "target"
    source.write_bytes(b"h" * 1000 + data)
    target.write_bytes(b"s" * (1000 + skew))
    buffer = memoryview(bytearray(4096)) if skew else None
    with open(source, "rb") as read, open(target, "r+b") as write:
        _copy_range(read.fileno(), 1000, write.fileno(), 1000 + skew, len(data), buffer)
    assert target.read_bytes() == b"s" * (1000 + skew) + data


def test_a_source_shorter_than_its_dataset_is_an_error_not_an_endless_copy(tmp_path):
    from mgpu_io.format.write import _copy_range

    source, target = tmp_path / "source", tmp_path / "target"
    source.write_bytes(b"x" * 100)
    target.write_bytes(b"")
    with open(source, "rb") as read, open(target, "r+b") as write, pytest.raises(OSError, match="ends before"):
        _copy_range(read.fileno(), 0, write.fileno(), 0, 10_000)



def _resident(path):
    """Bytes of ``path`` in the page cache (``mincore`` over a shared mapping of it, which reads nothing)."""
    import ctypes
    import mmap

    size = path.stat().st_size
    pages = (size + mmap.PAGESIZE - 1) // mmap.PAGESIZE
    libc = ctypes.CDLL(None, use_errno=True)
    libc.mincore.argtypes = [ctypes.c_void_p, ctypes.c_size_t, ctypes.POINTER(ctypes.c_ubyte)]
    vector = (ctypes.c_ubyte * pages)()
    with open(path, "r+b") as file, mmap.mmap(file.fileno(), size) as mapped:
        start = ctypes.c_char.from_buffer(mapped)
        answer = libc.mincore(ctypes.c_void_p(ctypes.addressof(start)), size, vector)
        del start  # the mapping closes only once nothing points into it
    if answer != 0:
        pytest.skip("mincore is refused here")
    return sum(page & 1 for page in vector) * mmap.PAGESIZE


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="sync_file_range and mincore are Linux's")
def test_a_large_copy_keeps_only_its_last_ranges_in_the_page_cache(tmp_path, monkeypatch):
    """Issue 50: the weight bytes of a large output are written to disk as they are copied, and their pages dropped
    once there beyond the last gigabyte (here: beyond the last 2 ranges), so that a 10 GB repair does not fill the
    page cache with its output, which the kernel then had to write back and reclaim."""
    from mgpu_io.format.write import _COPY_CHUNK, _copy_raw, _WriteBehind

    monkeypatch.setattr(_WriteBehind, "WINDOW", 2)
    size = 6 * _COPY_CHUNK + 12345  # more ranges than are ever on their way at once
    data = np.random.RandomState(0).bytes(size)
    source, output, control = tmp_path / "source", tmp_path / "output", tmp_path / "control"
    source.write_bytes(b"h" * 4096 + data)
    output.write_bytes(b"s" * 8192)
    control.write_bytes(data)
    with open(control, "r+b") as file:  # the file system's way with a written file's pages, once it is on disk
        os.fsync(file.fileno())
        os.posix_fadvise(file.fileno(), 0, 0, os.POSIX_FADV_DONTNEED)
    if _resident(control) > size // 2:
        pytest.skip("this file system keeps a file's pages once it is on disk (tmpfs)")
    copied = []
    _copy_raw([(8192, str(source), 4096, size)], output, progress=copied.append)
    assert _resident(output) <= 3 * _COPY_CHUNK + 2 * 4096  # of 96 MiB: the last 2 ranges, the one being copied
    assert output.read_bytes() == b"s" * 8192 + data and sum(copied) == size


def test_a_write_error_met_while_waiting_for_the_disk_is_raised_and_a_file_system_without_the_call_is_left_alone():
    """The kernel reports a write error to the first call that waits for the range, once: an ``fsync`` after it
    would not see it, so the copy raises it. A file system that has no ``sync_file_range`` is written as before."""
    import ctypes

    from mgpu_io.format.write import _WriteBehind

    def failing(code):
        def function(fd, offset, nbytes, flags):
            ctypes.set_errno(code)
            return -1

        return function

    behind = _WriteBehind(-1)
    behind.function = failing(errno.EIO)
    with pytest.raises(OSError, match="Input/output error"):
        behind.written(0, 4096)
    behind = _WriteBehind(-1)
    behind.function = failing(errno.ENOSYS)
    for offset in range(0, (_WriteBehind.WINDOW + 10) * 4096, 4096):
        behind.written(offset, 4096)
    assert behind.function is None and not behind.pending
