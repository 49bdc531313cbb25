"""A real S3-compatible server on 127.0.0.1 for the object-storage tests: moto in server mode, in its own process,
with credentials checked (``INITIAL_NO_AUTH_ACTION_COUNT``: the first three requests create the user and its key,
every later one must sign with a key the server issued). Stopped when the tests end."""

import json
import os
import subprocess
from dataclasses import dataclass

import local_server


@dataclass
class Server:
    url: str
    key: str
    secret: str
    process: subprocess.Popen

    def env(self, **changes):
        """The environment a user's process has: credentials and endpoint in the usual AWS variables."""
        env = dict(os.environ, AWS_ACCESS_KEY_ID=self.key, AWS_SECRET_ACCESS_KEY=self.secret,
                   AWS_ENDPOINT_URL=self.url, AWS_DEFAULT_REGION="us-east-1", TF_CPP_MIN_LOG_LEVEL="3")
        env.pop("AWS_PROFILE", None)
        env.update(changes)
        return env

    def options(self, **changes):
        """The same, as fsspec's ``storage_options``."""
        return dict(key=self.key, secret=self.secret, client_kwargs=dict(endpoint_url=self.url,
                                                                         region_name="us-east-1"), **changes)

    def stop(self):
        local_server.stop(self.process)


def start():
    import boto3

    url, process = local_server.start(["moto.server", "-H", "127.0.0.1", "-p", "{port}"], "moto's server",
                                      env=dict(INITIAL_NO_AUTH_ACTION_COUNT="3"))
    iam = boto3.client("iam", endpoint_url=url, region_name="us-east-1", aws_access_key_id="boot",
                       aws_secret_access_key="boot")
    iam.create_user(UserName="mgpu-io-tests")
    policy = {"Version": "2012-10-17", "Statement": [{"Effect": "Allow", "Action": "*", "Resource": "*"}]}
    iam.put_user_policy(UserName="mgpu-io-tests", PolicyName="all", PolicyDocument=json.dumps(policy))
    key = iam.create_access_key(UserName="mgpu-io-tests")["AccessKey"]
    return Server(url, key["AccessKeyId"], key["SecretAccessKey"], process)
