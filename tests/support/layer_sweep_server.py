"""One process that answers the layer sweep's questions writer by writer, so that a pytest worker starts tf_keras
(or Keras 3 on JAX) once, not once per writer (tests/load/test_layer_sweep.py starts it).

It reads one JSON request a line on stdin and writes one JSON answer a line:
``{"tf_keras": "k224"}`` -> ``{"k224/Dense": "loads", ...}`` (:func:`layer_sweep.tf_keras_outcomes`);
``{"tf_keras_cases": ["k224/Dense", ...]}`` -> the same for these cases only;
``{"evaluate": ["k224/Conv3D-channels_first", ...]}`` -> ``[Outcome fields, ...]`` in this process's backend, each
case trained a step (:func:`layer_sweep.evaluate_keys`).
"""

import json
import os
import sys
from dataclasses import asdict
from pathlib import Path

sys.path.insert(0, str(Path(__file__).parent))
os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "3")


def main():
    answers = os.fdopen(os.dup(1), "w")
    os.dup2(2, 1)  # whatever a library prints goes to stderr: stdout carries the answers only
    import layer_sweep

    for line in sys.stdin:
        request = json.loads(line)
        if "tf_keras" in request:
            answer = layer_sweep.tf_keras_outcomes([request["tf_keras"]])
        elif "tf_keras_cases" in request:
            keys = request["tf_keras_cases"]
            answer = layer_sweep.tf_keras_outcomes(sorted({key.split("/")[0] for key in keys}), keys=set(keys))
        else:
            answer = [asdict(outcome) for outcome in layer_sweep.evaluate_keys(request["evaluate"])]
        answers.write(json.dumps(answer) + "\n")
        answers.flush()


if __name__ == "__main__":
    main()
