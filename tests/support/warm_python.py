"""Pasted commands without paying Keras' import each time: ``python -c CODE`` and ``mgpu-io ARGS`` run in processes
forked from one that has imported Keras (with TensorFlow) and mgpu-io already.

The docs' pasted blocks (tests/project/test_docs.py) start about 20 Python processes that each import Keras: about
3.7 CPU-seconds apiece before their first line runs, most of those tests' time. Here a server process (``python
warm_python.py --serve SOCKET``, started once by that file's fixture) imports them once; each command is a child forked
from it, given the caller's standard streams, folder, environment and arguments, and run as the console script or
``python -c`` runs it: a fresh ``__main__``, ``SystemExit`` as the exit code, an uncaught exception printed as Python
prints it (exit code 1), ``atexit`` handlers run at the end. The server has run no TensorFlow operation and holds
no thread of TensorFlow's (only OpenBLAS's, which forks safely), so each child starts TensorFlow's runtime anew, as a
fresh process does.

What a child does not show is what its interpreter's start would: the console script's own file and TensorFlow's
import-time logging. The tests that need those start real processes (the quickstart, ``make demo``, the CLI's
logging and packaging tests). A command the server cannot serve (another interpreter option, an environment whose
``PYTHONPATH`` differs from the server's, no server) runs as a real process: slower, the same answer.

Use it through the stand-ins it writes (:meth:`WarmPython.bin`): ``python`` and ``mgpu-io`` scripts of a few lines
that hand their arguments, streams, folder and environment to the server over its socket and exit with the child's
code; put that folder first on ``PATH`` for shell blocks, or call its ``python`` for Python blocks.
"""

import json
import os
import select
import signal
import socket
import struct
import subprocess
import sys
import time
from pathlib import Path

_LENGTH = struct.Struct("<I")
_STATUS = struct.Struct("<q")
#: The stand-in: stdlib only, started with ``-I -S`` (no site-packages): about 20 ms, against Keras' 3.7 s.
_STAND_IN = '''#!{python} -IS
import json, os, socket, struct, sys
real = {real!r}
argv = [os.path.basename(sys.argv[0])] + sys.argv[1:]
served = argv[0] == "mgpu-io" or (argv[0] == "python" and len(argv) > 2 and argv[1] == "-c")
path = os.environ.get("MGPU_IO_TESTS_WARM")
if served and path and os.environ.get("PYTHONPATH") == {pythonpath!r}:
    sock = socket.socket(socket.AF_UNIX)
    try:
        sock.connect(path)
    except OSError:
        served = False
else:
    served = False
if not served:
    program = real["python"] if argv[0] == "python" else real["mgpu-io"]
    os.execv(program, [program] + sys.argv[1:])
request = json.dumps({{"argv": argv, "cwd": os.getcwd(), "env": dict(os.environ)}}).encode()
socket.send_fds(sock, [struct.pack("<I", len(request)) + request], [0, 1, 2])
data = b""
while len(data) < 16:
    chunk = sock.recv(16 - len(data))
    if not chunk:
        sys.exit("warm_python: the server ended before the command did")
    data += chunk
pid, status = struct.unpack("<qq", data)
if os.WIFSIGNALED(status):
    sys.exit(128 + os.WTERMSIG(status))
sys.exit(os.WEXITSTATUS(status))
'''


class WarmPython:
    """The server and its stand-ins, for one pytest worker: ``WarmPython(folder, env)``; :meth:`bin` is the folder
    of the stand-ins, :meth:`environment` the environment a command needs to reach the server; :meth:`close` ends
    it. ``env`` is the environment the commands will have (its ``PYTHONPATH`` is the server's ``sys.path``)."""

    def __init__(self, folder, env):
        folder = Path(folder)
        self.socket = str(folder / "warm.sock")
        self.pythonpath = env.get("PYTHONPATH")
        self.process = subprocess.Popen([sys.executable, __file__, "--serve", self.socket], env=env,
                                        stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL,
                                        stderr=subprocess.DEVNULL)
        self._bin = folder / "bin"
        self._bin.mkdir()
        real = {"python": sys.executable, "mgpu-io": str(Path(sys.executable).parent / "mgpu-io")}
        for name in ("python", "mgpu-io"):
            stand_in = self._bin / name
            stand_in.write_text(_STAND_IN.format(python=sys.executable, real=real, pythonpath=self.pythonpath))
            stand_in.chmod(0o755)

    def bin(self):
        """The folder of the stand-ins (``python``, ``mgpu-io``), for the front of ``PATH``; the server is waited
        for (its imports) on the first call."""
        deadline = time.monotonic() + 120
        while not os.path.exists(self.socket) and self.process.poll() is None and time.monotonic() < deadline:
            time.sleep(0.05)
        return self._bin

    def environment(self, env):
        """``env`` with the stand-ins first on ``PATH`` and the server's socket named."""
        return dict(env, PATH=f"{self.bin()}{os.pathsep}{env.get('PATH', '')}", MGPU_IO_TESTS_WARM=self.socket)

    def close(self):
        self.process.terminate()
        self.process.wait(timeout=30)


# --- the server ---------------------------------------------------------------------------------------------------


def _serve(path):  # pragma: no cover - runs in the server process
    import keras  # noqa: F401  - what every Keras command imports, once
    import mgpu_io  # noqa: F401
    import mgpu_io.cli  # noqa: F401

    parent = os.getppid()
    listener = socket.socket(socket.AF_UNIX)
    listener.bind(path + ".new")
    os.rename(path + ".new", path)  # the socket appears ready, not half-made
    listener.listen(16)
    running = {}  # child pid -> the connection of the stand-in waiting for it
    while os.getppid() == parent:
        ready, _, _ = select.select([listener, *running.values()], [], [], 0.2)
        for sock in ready:
            if sock is listener:
                connection, _ = listener.accept()
                pid = _start(connection, listener, running)
                if pid:
                    running[pid] = connection
            else:  # a stand-in gone (killed at its timeout): its command goes too
                pid = next(p for p, c in running.items() if c is sock)
                _kill(pid)
        while running:
            try:
                pid, status = os.waitpid(-1, os.WNOHANG)
            except ChildProcessError:
                break
            if pid == 0:
                break
            connection = running.pop(pid, None)
            if connection is not None:
                try:
                    connection.sendall(_STATUS.pack(pid) + _STATUS.pack(status))
                except OSError:
                    pass
                connection.close()
    for pid in running:
        _kill(pid)


def _start(connection, listener, running):  # pragma: no cover - runs in the server process
    message, fds, _, _ = socket.recv_fds(connection, 1 << 20, 3)
    (size,) = _LENGTH.unpack_from(message)
    message = message[_LENGTH.size:]
    while len(message) < size:
        message += connection.recv(size - len(message))
    request = json.loads(message)
    sys.stdout.flush()
    sys.stderr.flush()
    pid = os.fork()
    if pid:
        for fd in fds:
            os.close(fd)
        return pid
    listener.close()
    connection.close()
    for other in running.values():
        other.close()
    for target, fd in enumerate(fds):
        os.dup2(fd, target)
        os.close(fd)
    os._exit(_run(request))


def _run(request):  # pragma: no cover - runs in a child of the server
    import atexit
    import builtins
    import threading
    import types

    signal.signal(signal.SIGINT, signal.default_int_handler)
    signal.signal(signal.SIGTERM, signal.SIG_DFL)
    os.chdir(request["cwd"])
    os.environ.clear()
    os.environ.update(request["env"])
    argv = request["argv"]
    main = types.ModuleType("__main__")
    main.__builtins__ = builtins
    sys.modules["__main__"] = main
    code = 0
    try:
        if argv[0] == "mgpu-io":
            sys.argv = argv
            sys.path[0] = str(Path(sys.executable).parent)
            from mgpu_io.cli import run

            run()
        else:  # python -c CODE ARGS
            sys.argv = ["-c", *argv[3:]]
            sys.path[0] = ""
            exec(compile(argv[2], "<string>", "exec"), main.__dict__)  # noqa: S102 - the docs' own block
    except SystemExit as exit_:
        code = _exit_code(exit_.code)
    except BaseException as error:  # printed as Python prints it: from the block's frame, not this one's
        error = error.with_traceback(error.__traceback__.tb_next)
        sys.excepthook(type(error), error, error.__traceback__)
        code = 1
    threading._shutdown()
    atexit._run_exitfuncs()
    for stream in (sys.stdout, sys.stderr):
        try:
            stream.flush()
        except Exception:
            pass
    return code


def _exit_code(value):
    if value is None:
        return 0
    if isinstance(value, int):
        return value & 0xFF
    print(value, file=sys.stderr)
    return 1


def _kill(pid):
    try:
        os.kill(pid, signal.SIGKILL)
    except ProcessLookupError:
        pass


if __name__ == "__main__" and sys.argv[1:2] == ["--serve"]:
    _serve(sys.argv[2])
