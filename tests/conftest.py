import pathlib
import sys

import keras
import pytest

# The shared helpers (`references`, `helpers`) sit beside this file; the
# importlib import mode puts no test folder on `sys.path`.
sys.path.insert(0, str(pathlib.Path(__file__).parent))

# `make test-fast` runs `-m "not slow"`: the tests whose node id starts with
# one of these get the `slow` marker. Application runs, and whole files that
# train, export, spawn processes or run many generated examples; then single
# tests that took over 10 s on tensorflow (CONTRIBUTING.md).
SLOW = (
    # Application runs: the --smoke trainings and the runs they continue.
    "tests/applications/nli_resan_test.py",
    "tests/applications/nli_test.py::test_smoke_run",
    "tests/applications/nli_test.py::test_initial_weights_",
    "tests/applications/nli_test.py::test_average_last",
    "tests/applications/relatedness_test.py::test_smoke_run",
    "tests/applications/translation_test.py::test_smoke_copy_task",
    "tests/tutorials_test.py",  # every tutorial, top to bottom
    "tests/export/",  # SavedModel and ONNX exports, serving processes
    "tests/distribute/mixed_precision_test.py",  # 50-step trainings
    "tests/distribute/multi_worker_test.py",  # two worker processes
    "tests/distribute/replicas_test.py",  # two replicas against one
    "tests/reliability/application_restart_test.py",  # kill and resume
    "tests/reliability/interrupted_training_test.py",  # kill and resume
    "tests/reliability/determinism_test.py",  # every model trained twice
    "tests/reliability/model_loading_test.py",  # models saved by a subprocess
    "tests/reliability/numerics_property_test.py",  # hypothesis examples
    "tests/layers/keras_multi_head_attention_test.py::"
    "KerasMultiHeadAttentionTest::test_quantize_int8",
    "tests/models/resan_test.py::test_fit_trains_samplers",
    "tests/models/resan_test.py::test_without_reward_the_samplers",
)


def pytest_collection_modifyitems(config, items):
    for item in items:
        if item.nodeid.startswith(SLOW):
            item.add_marker(pytest.mark.slow)


@pytest.fixture(autouse=True)
def fixed_seed():
    keras.utils.set_random_seed(1337)
    yield


@pytest.fixture(autouse=True)
def float32_policy_after_each_test():
    # Applications set the global dtype policy (`--mixed-precision`, whose
    # translation default `auto` is bfloat16 on CPUs that have it); the next
    # test in the process must not inherit it.
    yield
    keras.config.set_dtype_policy("float32")
