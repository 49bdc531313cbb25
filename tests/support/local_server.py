"""Start a real server program on a free port of 127.0.0.1 for the object-storage tests (moto's S3, the GCS
emulator), wait until it listens, and stop it: what tests/support/s3server.py and gcsserver.py share."""

import os
import socket
import subprocess
import sys
import time


def start(module_and_args, name, env=None):
    """``python -m MODULE ARGS`` with ``{port}`` in the arguments replaced by a free port; ``(url, process)`` once it
    accepts connections (within 60 s, else ``RuntimeError`` naming ``name``)."""
    probe = socket.socket()
    probe.bind(("127.0.0.1", 0))
    port = probe.getsockname()[1]
    probe.close()
    process = subprocess.Popen(
        [sys.executable, "-m", *(part.format(port=port) for part in module_and_args)],
        env=dict(os.environ, **(env or {})), stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
    )
    deadline = time.monotonic() + 60
    while True:
        try:
            socket.create_connection(("127.0.0.1", port), 0.5).close()
            return f"http://127.0.0.1:{port}", process
        except OSError:
            if time.monotonic() > deadline or process.poll() is not None:
                process.kill()
                raise RuntimeError(f"{name} did not start") from None
            time.sleep(0.1)


def stop(process):
    """Terminate the server, killing it after 10 s."""
    process.terminate()
    try:
        process.wait(timeout=10)
    except subprocess.TimeoutExpired:
        process.kill()
        process.wait()
