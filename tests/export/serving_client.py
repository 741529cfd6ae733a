"""Calls exported SavedModels the way TensorFlow Serving does: no Keras.

Usage: python serving_client.py REQUESTS.json RESULTS.json

REQUESTS is a list of `{"path", "signature", "inputs": {name: [base64
strings]}}`; int32 inputs go in `"ints": {name: nested lists or a
number}`. A request with `"expect_error": true` records `{"error":
message}` for an `InvalidArgumentError` instead of failing. RESULTS gets,
for each request, the outputs as lists (strings base64-encoded), each
model's signatures as loaded
(`{path: {signature: {"inputs"|"outputs": {name: [dtype, shape]}}}}`),
and the top-level packages loaded once
tensorflow and tensorflow_text were imported (`modules_at_start`; importing
tensorflow itself loads `keras`) and after serving (`modules_at_end`).
"""

import base64
import json
import sys

import tensorflow as tf
import tensorflow_text  # noqa: F401  (registers the TF Text ops)


def top_level_modules():
    return sorted({name.split(".")[0] for name in sys.modules})


MODULES_AT_START = top_level_modules()


def to_json(value):
    value = value.numpy()
    if value.dtype == object:
        return [base64.b64encode(v).decode("ascii") for v in value.tolist()]
    return value.tolist()


def describe(function):
    """`{"inputs"|"outputs": {name: [dtype, shape]}}` of a signature."""
    _, inputs = function.structured_input_signature
    return {
        "inputs": {
            name: [spec.dtype.name, spec.shape.as_list()]
            for name, spec in inputs.items()
        },
        "outputs": {
            name: [spec.dtype.name, spec.shape.as_list()]
            for name, spec in function.structured_outputs.items()
        },
    }


def main(requests_path, results_path):
    with open(requests_path) as f:
        requests = json.load(f)
    loaded = {}
    signatures = {}
    results = []
    for request in requests:
        path = request["path"]
        if path not in loaded:
            loaded[path] = tf.saved_model.load(path)
            signatures[path] = {
                name: describe(function)
                for name, function in loaded[path].signatures.items()
            }
        function = loaded[path].signatures[request["signature"]]
        inputs = {
            name: tf.constant([base64.b64decode(v) for v in values])
            for name, values in request.get("inputs", {}).items()
        }
        for name, values in request.get("ints", {}).items():
            inputs[name] = tf.constant(values, tf.int32)
        try:
            outputs = function(**inputs)
        except tf.errors.InvalidArgumentError as error:
            if not request.get("expect_error"):
                raise
            results.append({"error": str(error)})
            continue
        results.append({key: to_json(v) for key, v in outputs.items()})
    with open(results_path, "w") as f:
        json.dump(
            {
                "results": results,
                "signatures": signatures,
                "modules_at_start": MODULES_AT_START,
                "modules_at_end": top_level_modules(),
            },
            f,
        )


if __name__ == "__main__":
    main(sys.argv[1], sys.argv[2])
