"""Read an untrusted file's structure in a child process first, so that a libhdf5 hang or crash is a clear error.

libhdf5 can loop forever or crash on some corrupt metadata (a zeroed region inside an attribute's heap, for
example); no Python code can interrupt it while it runs. So before the format core reads a file for real, a forked
child reads its structure (everything a plan reads, no weight data) under a time limit and a memory limit. A hang
becomes "did not finish", a crash "crashed the HDF5 library", a typed error in the child the same error here. The
child costs a fork and a second read of the metadata (milliseconds); where ``os.fork`` does not exist, or with
``MGPU_IO_PROBE=0``, the file is read directly.
"""

import os
import pickle
import select
import signal
import time
import warnings

from mgpu_io.errors import MgpuIOError, NotAModelFile

#: Seconds the child may take to read a file's structure (``MGPU_IO_PROBE_TIMEOUT`` changes it).
TIMEOUT = float(os.environ.get("MGPU_IO_PROBE_TIMEOUT", "20"))
#: Memory the child may add to what the process already maps.
EXTRA_MEMORY = 2 << 30


def probed(path, work):
    """Run ``work()`` (which reads ``path``) in a child; return what it returned (it must pickle), raise what it
    raised, or raise a clear error if it hangs, crashes or runs out of memory.

    Where no child can be forked (or with ``MGPU_IO_PROBE=0``), ``work()`` runs here.
    """
    if not hasattr(os, "fork") or os.environ.get("MGPU_IO_PROBE", "1") == "0":
        return work()
    read_end, write_end = os.pipe()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", DeprecationWarning)  # "multi-threaded fork": the child only reads and exits
        pid = os.fork()
    if pid == 0:  # pragma: no cover - the child; its outcome is what the tests check
        os.close(read_end)
        _child(path, work, write_end)
    os.close(write_end)
    payload, finished = b"", False
    try:
        deadline = time.monotonic() + TIMEOUT
        while True:
            left = deadline - time.monotonic()
            if left <= 0:
                break
            ready, _, _ = select.select([read_end], [], [], left)
            if not ready:
                continue
            chunk = os.read(read_end, 1 << 16)
            if not chunk:
                finished = True
                break
            payload += chunk
    finally:
        os.close(read_end)
        if not finished:
            _kill(pid)
    if not finished:
        raise NotAModelFile(
            f"Reading the file's structure did not finish within {TIMEOUT:g} s. Expected a file that libhdf5 reads "
            f"in well under a second. Received: filepath={path}. Its metadata is damaged (libhdf5 loops on some "
            f"corrupt files); restore it from its source."
        )
    _, status = os.waitpid(pid, 0)
    if payload and not (os.WIFSIGNALED(status) or os.WEXITSTATUS(status) not in (0, 3)):
        kind, value = pickle.loads(payload)  # our own child's answer, over our own pipe
        if kind == "error":
            raise value
        return value
    if os.WIFSIGNALED(status) or os.WEXITSTATUS(status) != 0:
        what = f"signal {os.WTERMSIG(status)}" if os.WIFSIGNALED(status) else f"exit code {os.WEXITSTATUS(status)}"
        raise NotAModelFile(
            f"Reading the file's structure crashed the HDF5 library ({what}). Expected a file as Keras writes it. "
            f"Received: filepath={path}. The file is damaged; restore it from its source."
        )


def _child(path, work, write_end):  # pragma: no cover - runs in the forked child
    code = 0
    try:
        import faulthandler

        faulthandler.disable()  # a crash here is reported by the parent, in one line, not as a stack dump
        signal.signal(signal.SIGINT, signal.SIG_DFL)
        signal.signal(signal.SIGTERM, signal.SIG_DFL)
        _limit_memory()
        try:
            _send(write_end, ("value", work()))
        except MgpuIOError as error:
            _send(write_end, ("error", error))
            code = 3
        except MemoryError:
            _send(write_end, ("error", NotAModelFile(
                f"The file declares more data than fits in memory. Expected weights of the sizes the file holds. "
                f"Received: filepath={path}. The file is damaged or hostile.")))
            code = 3
    except BaseException:  # noqa: BLE001 - whatever happens, the child must end here
        code = 1
    finally:
        os._exit(code)


def _send(fd, answer):
    try:
        data = pickle.dumps(answer)
    except Exception:  # noqa: BLE001 - an error that does not pickle: its message is enough
        data = pickle.dumps(("error", NotAModelFile(str(answer[1]))))
    view = memoryview(data)
    while view:
        view = view[os.write(fd, view):]


def _limit_memory():  # pragma: no cover - runs in the forked child
    try:
        import resource

        with open("/proc/self/status") as status:
            mapped = next(int(line.split()[1]) << 10 for line in status if line.startswith("VmSize:"))
        resource.setrlimit(resource.RLIMIT_AS, (mapped + EXTRA_MEMORY, resource.RLIM_INFINITY))
    except (ImportError, OSError, ValueError, StopIteration):
        pass


def _kill(pid):
    try:
        os.kill(pid, signal.SIGKILL)
        os.waitpid(pid, 0)
    except (ProcessLookupError, ChildProcessError):
        pass
