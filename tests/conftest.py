import ast
import importlib.util
import pathlib
import sys

import keras
import pytest

from keras_attention.utils.optional import install_hint

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
    # Ctrl-C during a --smoke training, then the same command resumes it.
    "tests/reliability/interrupt_test.py",
    "tests/tutorials_test.py",  # every tutorial, top to bottom
    # The README's examples as written: fit 5 epochs, SavedModel export.
    "tests/readme_test.py::test_readme_examples_run_without_warnings",
    "tests/export/",  # SavedModel and ONNX exports, serving processes
    "tests/distribute/mixed_precision_test.py",  # 50-step trainings
    "tests/distribute/multi_worker_test.py",  # two worker processes
    "tests/distribute/replicas_test.py",  # two replicas against one
    "tests/reliability/application_restart_test.py",  # kill and resume
    "tests/reliability/interrupted_training_test.py",  # kill and resume
    "tests/reliability/determinism_test.py",  # every model trained twice
    "tests/reliability/model_loading_test.py",  # models saved by a subprocess
    "tests/reliability/numerics_property_test.py",  # hypothesis examples
    "tests/benchmarks/gpu_check_test.py::test_cpu_check",  # 4 processes
    "tests/layers/keras_multi_head_attention_test.py::"
    "KerasMultiHeadAttentionTest::test_quantize_int8",
    "tests/models/resan_test.py::test_fit_trains_samplers",
    "tests/models/resan_test.py::test_without_reward_the_samplers",
)


# Tests that need TensorFlow on every backend get the `tensorflow` marker by
# node id, and the extra that installs it; without TensorFlow they are
# skipped with that extra in the reason. Files that import an optional
# module at module level are skipped whole (`pytest_pycollect_makemodule`).
TENSORFLOW = {
    # tf.data pipelines, keras-hub tokenizers (the applications extra
    # installs TensorFlow: keras-hub requires tensorflow-text).
    "tests/applications/": "applications",
    # Every tutorial plots with matplotlib; some export or use tf.data.
    "tests/tutorials_test.py::test_tutorial_runs": "applications",
    # SavedModels.
    "tests/reliability/bad_inputs_test.py::test_serving_signature": (
        "tensorflow"
    ),
    "tests/reliability/bad_inputs_test.py::test_bad_input_gets_a_clear_error"
    "[export_": "tensorflow",
    "tests/reliability/checkpoint_writes_test.py::test_interrupted_export": (
        "tensorflow"
    ),
    # `BucketedBatches.as_dataset` and `epoch_stream`: tf.data.
    "tests/data/batching_test.py::test_stream_starts_at_the_given_epoch": (
        "tensorflow"
    ),
    "tests/data/batching_test.py::test_fit_on_the_stream_takes_one": (
        "tensorflow"
    ),
    "tests/data/batching_test.py::test_sequence_targets_are_cut": (
        "tensorflow"
    ),
    "tests/data/batching_test.py::test_new_order_per_pass": "tensorflow",
    "tests/reliability/checkpoint_writes_test.py::test_resumed_stream": (
        "tensorflow"
    ),
}
# Optional modules a test file may import at module level: what must be
# installed for the import to work, and the extra that installs it.
MODULE_LEVEL = {
    "tensorflow": ("tensorflow", "tensorflow"),
    "tensorflow_text": ("tensorflow_text", "tensorflow"),
    "keras_attention.export": ("tensorflow", "tensorflow"),
    "keras_hub": ("keras_hub", "applications"),
    "scipy": ("scipy", "applications"),
    "matplotlib": ("matplotlib", "applications"),
}


def is_installed(module):
    try:
        return importlib.util.find_spec(module) is not None
    except ValueError:  # `sys.modules[module]` is None: blocked
        return False


def missing_module_level_import(path):
    """`(module, extra)` of an optional module `path` imports and lacks."""
    for node in ast.parse(path.read_text()).body:
        if isinstance(node, ast.Import):
            names = [alias.name for alias in node.names]
        elif isinstance(node, ast.ImportFrom) and node.module:
            names = [node.module]
            names += [f"{node.module}.{alias.name}" for alias in node.names]
        else:
            continue
        for name in names:
            for optional, (needed, extra) in MODULE_LEVEL.items():
                if name == optional or name.startswith(optional + "."):
                    if not is_installed(needed):
                        return needed, extra
    return None


class SkippedModule(pytest.Module):
    """A test file whose module-level imports are not installed."""

    def collect(self):
        pytest.skip(self.skip_reason, allow_module_level=True)


def pytest_pycollect_makemodule(module_path, parent):
    missing = missing_module_level_import(module_path)
    if missing is None:
        return None
    module, extra = missing
    skipped = SkippedModule.from_parent(parent, path=module_path)
    skipped.skip_reason = (
        f"{module_path.name} imports `{module}`, which is not installed: "
        + install_hint(extra)
    )
    return skipped


def pytest_collection_modifyitems(config, items):
    has_tensorflow = is_installed("tensorflow")
    for item in items:
        if item.nodeid.startswith(SLOW):
            item.add_marker(pytest.mark.slow)
        for prefix, extra in TENSORFLOW.items():
            if item.nodeid.startswith(prefix):
                item.add_marker(pytest.mark.tensorflow(extra=extra))
        marker = item.get_closest_marker("tensorflow")
        if marker is not None and not has_tensorflow:
            extra = marker.kwargs.get("extra", "tensorflow")
            item.add_marker(
                pytest.mark.skip(
                    reason="needs TensorFlow, which is not installed: "
                    + install_hint(extra)
                )
            )


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
