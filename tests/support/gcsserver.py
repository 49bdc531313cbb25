"""A real Google Cloud Storage emulator on 127.0.0.1 for the gs:// tests: gcp-storage-emulator's JSON API server, in
its own process, in memory, stopped when the tests end. gcsfs finds it as a user's shell would point it at one:
``STORAGE_EMULATOR_HOST``. The emulator checks no credentials (``token="anon"``): refused credentials are tested on
S3 (tests/unwrap/test_remote.py)."""

import os
import subprocess
from dataclasses import dataclass

import local_server


@dataclass
class Server:
    url: str
    process: subprocess.Popen

    def env(self, **changes):
        """The environment a user's process has: the emulator's address, no Google credentials (and no look for a
        cloud machine's: ``NO_GCE_CHECK``), and gcsfs's plain filesystem (its default first asks a gRPC control API,
        which the emulator does not serve, for the bucket's kind)."""
        env = dict(os.environ, STORAGE_EMULATOR_HOST=self.url, GCSFS_EXPERIMENTAL_ZB_HNS_SUPPORT="false",
                   NO_GCE_CHECK="true", TF_CPP_MIN_LOG_LEVEL="3")
        env.update(changes)
        return env

    def stop(self):
        local_server.stop(self.process)


def start():
    url, process = local_server.start(
        ["gcp_storage_emulator", "start", "--host", "127.0.0.1", "--port", "{port}", "--in-memory"],
        "gcp-storage-emulator",
    )
    return Server(url, process)
