"""Distribution strategies, batch sizes that divide, and the chief's files.

Strategies by backend (`name`):

- tensorflow: `"none"`, `"mirrored"` (`tf.distribute.MirroredStrategy`
  over the local GPUs) and `"multi_worker"`
  (`tf.distribute.MultiWorkerMirroredStrategy`; the cluster comes from the
  `TF_CONFIG` environment variable). `"auto"` is `"mirrored"` when more than
  one GPU is visible, else `"none"`.
- jax: `"none"` and `"data_parallel"` (`keras.distribution.DataParallel`
  over every visible device, set as the global distribution, so that
  `fit`, `evaluate` and `predict` shard each batch across the devices).
  `"auto"` is `"data_parallel"` when more than one device is visible. On
  several hosts, set `KERAS_DISTRIBUTION_JOB_ADDRESSES`,
  `KERAS_DISTRIBUTION_NUM_PROCESSES` and `KERAS_DISTRIBUTION_PROCESS_ID`:
  `keras.distribution.initialize()` then runs before the devices are
  listed, and the mesh spans every host.
- torch: `"none"` only (`"auto"` resolves to it).

Under jax `DataParallel` every batch must divide among the devices
(`batch_multiple`, `trim_to_batch_multiple`, `check_batch_size`,
`divisible_batches`); with a multi-worker strategy only the chief writes
the run's files (`is_chief`, `worker_path`). The sums over replicas that
hand-written loss terms need are in `keras_attention.ops.replicas`.
"""

import atexit
import contextlib
import json
import os
import shutil
import tempfile

import keras

from keras_attention.utils.optional import import_optional

STRATEGIES = ("auto", "none", "mirrored", "multi_worker", "data_parallel")
BACKEND_STRATEGIES = {
    "tensorflow": ("none", "mirrored", "multi_worker"),
    "jax": ("none", "data_parallel"),
    "torch": ("none",),
}

# One strategy object per process: MultiWorkerMirroredStrategy may be
# created only once, and every scope must use the same MirroredStrategy.
_STRATEGIES = {}


def resolve_strategy(name="auto"):
    """The strategy `name` stands for on this backend and these devices.

    Args:
        name: str. One of `STRATEGIES`.

    Returns:
        A name from `BACKEND_STRATEGIES[keras.backend.backend()]`.

    Raises:
        ValueError: If `name` is unknown or not available on the backend.

    Example:

    >>> resolve_strategy("none")
    'none'
    """
    if name not in STRATEGIES:
        raise ValueError(
            f"Argument `strategy` must be one of {STRATEGIES}. "
            f"Received: strategy={name!r}"
        )
    backend = keras.backend.backend()
    if backend == "jax" and name in ("auto", "data_parallel"):
        _initialize_jax_processes()
    if name == "auto":
        if backend == "tensorflow":
            tf = import_optional("tensorflow", "tensorflow", "Strategies")
            gpus = tf.config.list_logical_devices("GPU")
            return "mirrored" if len(gpus) > 1 else "none"
        if backend == "jax":
            jax = import_optional("jax", "jax", "Strategies")
            return "data_parallel" if len(jax.devices()) > 1 else "none"
        return "none"
    if name not in BACKEND_STRATEGIES.get(backend, ("none",)):
        raise ValueError(
            f"Strategy {name!r} is not available on the {backend} backend "
            f"(choose from {BACKEND_STRATEGIES.get(backend, ('none',))}). "
            f"Received: strategy={name!r}"
        )
    return name


def _initialize_jax_processes():
    """`keras.distribution.initialize()` once, on several JAX hosts.

    Runs when `KERAS_DISTRIBUTION_NUM_PROCESSES` is above 1 (with
    `KERAS_DISTRIBUTION_JOB_ADDRESSES` and `KERAS_DISTRIBUTION_PROCESS_ID`
    set as well), before JAX lists its devices, so that the `DataParallel`
    mesh spans the devices of every host.
    """
    processes = int(os.environ.get("KERAS_DISTRIBUTION_NUM_PROCESSES", "1"))
    if processes > 1 and "jax_processes" not in _STRATEGIES:
        keras.distribution.initialize()
        _STRATEGIES["jax_processes"] = processes


def get_strategy(name="auto"):
    """The distribution object for `name`, created once per process.

    Returns:
        A `tf.distribute.Strategy` (tensorflow), a
        `keras.distribution.DataParallel` (jax), or `None` for `"none"`.
    """
    name = resolve_strategy(name)
    if name == "none":
        return None
    if name not in _STRATEGIES:
        if name == "data_parallel":
            strategy = keras.distribution.DataParallel(
                devices=keras.distribution.list_devices()
            )
        else:
            tf = import_optional("tensorflow", "tensorflow", "Strategies")
            if name == "mirrored":
                strategy = tf.distribute.MirroredStrategy()
            else:
                strategy = tf.distribute.MultiWorkerMirroredStrategy()
                _patch_multi_worker_reduce(strategy)
        _STRATEGIES[name] = strategy
    return _STRATEGIES[name]


def _patch_multi_worker_reduce(strategy):
    """Lets Keras's `fit` run under `MultiWorkerMirroredStrategy`.

    Keras 3 (3.15) calls `strategy.reduce` twice in ways this strategy
    cannot serve:

    - Before the first step it reduces the whole first input batch (a dict
      of per-replica tensors) with `reduce("MEAN", batch)`, only to read
      its shapes and dtypes for building the model's state. The strategy
      cannot reduce a dict, and batches of different shapes on different
      workers (length buckets) cannot be averaged at all
      (keras-team/keras#20329). For a nested structure, this reduce returns
      the first local replica's values, which carry the shapes and dtypes
      the build needs.
    - After each step it averages the logged metrics with
      `reduce("MEAN", value, axis=0)`, which fails for scalars. For a
      scalar, this reduce averages over the replicas (`axis=None`), the
      mean that was meant.

    Every other call is passed on unchanged.
    """
    tf = import_optional("tensorflow", "tensorflow", "Strategies")
    reduce = strategy.reduce

    def local(value):
        return strategy.experimental_local_results(value)[0]

    def patched_reduce(reduce_op, value, axis=None):
        if isinstance(value, (dict, list, tuple)):
            return tf.nest.map_structure(local, value)
        if axis is not None and local(value).shape.rank == 0:
            axis = None
        return reduce(reduce_op, value, axis=axis)

    strategy.reduce = patched_reduce


def strategy_scope(name="auto"):
    """A context manager under which to build and compile the model.

    On tensorflow this is `strategy.scope()`: variables created inside are
    mirrored, and `fit` (called inside or outside the scope) splits each
    global batch across the replicas. On jax, `"data_parallel"` is set as
    the global distribution (`keras.distribution.set_distribution`), which
    lasts for the whole process, and the returned context is its scope.
    Call it before loading data: a multi-worker strategy must be created
    before TensorFlow runs any operation.

    Args:
        name: str. One of `STRATEGIES`. Defaults to `"auto"`.

    Returns:
        A context manager.

    Example:

    >>> with strategy_scope("none"):
    ...     layer = keras.layers.Dense(2)
    """
    strategy = get_strategy(name)
    if strategy is None:
        return contextlib.nullcontext()
    if isinstance(strategy, keras.distribution.DataParallel):
        keras.distribution.set_distribution(strategy)
    description = describe(strategy)
    print(f"Distribution: {description}")
    return strategy.scope()


def describe(strategy):
    """One line naming the strategy and its devices (for logs)."""
    if strategy is None:
        return "one device"
    if isinstance(strategy, keras.distribution.DataParallel):
        devices = strategy.device_mesh.devices.reshape(-1)
        return f"DataParallel over {len(devices)} devices"
    kind = type(strategy).__name__
    return f"{kind} with {strategy.num_replicas_in_sync} replicas in sync"


def num_replicas():
    """Replicas that compute one step together (1 without a strategy).

    On tensorflow, those of the strategy in scope, else of the strategy
    made by `strategy_scope`; on jax with a `DataParallel` distribution,
    the number of devices.
    """
    backend = keras.backend.backend()
    if backend == "tensorflow":
        tf = import_optional("tensorflow", "tensorflow", "Strategies")
        if tf.distribute.has_strategy():
            return tf.distribute.get_strategy().num_replicas_in_sync
        for name in ("multi_worker", "mirrored"):
            if name in _STRATEGIES:
                return _STRATEGIES[name].num_replicas_in_sync
        return 1
    if backend == "jax":
        distribution = keras.distribution.distribution()
        if distribution is not None:
            return int(distribution.device_mesh.devices.size)
    return 1


def batch_multiple():
    """What every batch size must be a multiple of (1 if anything goes).

    Under jax `DataParallel`, Keras 3.15 shards each batch evenly across
    the devices and refuses a batch that does not divide, the last partial
    batch of an epoch included. `tf.distribute` splits uneven batches
    itself.
    """
    if keras.backend.backend() == "jax":
        if keras.distribution.distribution() is not None:
            return num_replicas()
    return 1


def trim_to_batch_multiple(data):
    """Drops the last rows of `data` (arrays, or a dict or tuple of them)
    so that their number is a multiple of `batch_multiple()`.

    At most `batch_multiple() - 1` rows go; with one device, none.
    """
    multiple = batch_multiple()
    if multiple == 1:
        return data

    def trim(array):
        return array[: len(array) - len(array) % multiple]

    if isinstance(data, dict):
        return {key: trim(value) for key, value in data.items()}
    if isinstance(data, (list, tuple)):
        return type(data)(trim_to_batch_multiple(item) for item in data)
    return trim(data)


def check_batch_size(batch_size):
    """Raises a `ValueError` if `batch_size` is not a `batch_multiple()`."""
    multiple = batch_multiple()
    if batch_size % multiple:
        raise ValueError(
            f"With DataParallel over {multiple} devices the batch size must "
            f"be a multiple of {multiple}. Received: batch_size={batch_size}"
        )


def divisible_batches(dataset):
    """A `tf.data` dataset of `(x, y)` batches cut to `batch_multiple()`.

    Each batch loses its last rows beyond a multiple of the device count
    (batches smaller than that are dropped); with one device the dataset
    is returned as it is.
    """
    multiple = batch_multiple()
    if multiple == 1:
        return dataset
    tf = import_optional(
        "tensorflow", "tensorflow", "trim_to_batch_multiple (tf.data)"
    )

    def size(x, y):
        return tf.shape(y)[0]

    def cut(x, y):
        keep = size(x, y) - size(x, y) % multiple
        return tf.nest.map_structure(lambda t: t[:keep], (x, y))

    dataset = dataset.filter(lambda x, y: size(x, y) >= multiple)
    return dataset.map(cut)


def end_data_parallel():
    """Ends a jax `DataParallel` distribution after training.

    Evaluation and prediction then run on batches of any size; the trained
    weights are kept. Does nothing on other backends.
    """
    if keras.backend.backend() == "jax":
        keras.distribution.set_distribution(None)


def is_chief():
    """Whether this process writes checkpoints and exports.

    Without a multi-worker strategy: `True`. With one, the task of type
    `"chief"`, or worker 0 when the cluster has no chief (as in
    `TF_CONFIG`). On several JAX hosts, process 0.
    """
    if "jax_processes" in _STRATEGIES:
        jax = import_optional("jax", "jax", "Several JAX hosts")
        return jax.process_index() == 0
    strategy = _STRATEGIES.get("multi_worker")
    if strategy is None:
        return True
    resolver = strategy.cluster_resolver
    cluster = json.loads(os.environ.get("TF_CONFIG", "{}")).get("cluster", {})
    return is_chief_task(resolver.task_type, resolver.task_id, cluster)


def is_chief_task(task_type, task_id, cluster):
    """The chief of a `TF_CONFIG` cluster: its `"chief"` task, or worker 0
    when the cluster has none.

    Example:

    >>> cluster = {"worker": ["host1:2222", "host2:2222"]}
    >>> is_chief_task("worker", 0, cluster), is_chief_task("worker", 1, cluster)
    (True, False)
    """
    if task_type is None or task_type == "chief":
        return True
    return task_type == "worker" and task_id == 0 and "chief" not in cluster


def worker_path(path):
    """`path` on the chief; a temporary copy's path on the other workers.

    With `MultiWorkerMirroredStrategy` every worker runs the same program,
    saves included; TensorFlow recommends that the workers other than the
    chief write to temporary locations, so that they never overwrite the
    chief's files. Those locations are removed when the process exits.
    """
    if is_chief():
        return path
    folder = tempfile.mkdtemp(prefix="keras_attention_worker_")
    atexit.register(shutil.rmtree, folder, ignore_errors=True)
    return os.path.join(folder, os.path.basename(os.path.normpath(path)))
