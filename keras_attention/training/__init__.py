"""What only training programs need: strategies, precision, flags, runs.

The applications' `train.py` scripts share these few functions:

```python
from keras_attention import training

config = training.parse_config(Config, sys.argv[1:])  # flags from a dataclass
scope = training.strategy_scope(config.strategy)  # first, before any data
training.set_mixed_precision(config.mixed_precision)
with scope:
    model = build_model()
    model.compile(
        optimizer=training.loss_scaled(optimizer),
        loss=loss,
        jit_compile=training.jit_compile(config.jit_compile),
    )
model.fit(dataset)
run_dir = training.worker_path(config.output_dir)  # the chief's folder
training.write_config(run_dir, config)
model.save(os.path.join(run_dir, training.MODEL_FILE))
```

- `strategies`: distribution strategies per backend, the multi-worker
  patch, batch sizes that divide among the devices, the chief's files.
- `precision`: mixed precision, loss scaling, `jit_compile`.
- `cli`: command-line flags generated from a dataclass config.
- `runs`: the run folder's files, written atomically, and reading them.
- `averaging`: a moving average of the weights, swapped in to evaluate.

Nothing in `keras_attention.ops`, `layers`, `models` or `losses` imports
this package; the sums over replicas that losses need are in
`keras_attention.ops.replicas`.
"""

from keras_attention.training import averaging
from keras_attention.training import cli
from keras_attention.training import precision
from keras_attention.training import runs
from keras_attention.training import strategies
from keras_attention.training.averaging import moving_average_weights
from keras_attention.training.averaging import uses_moving_average
from keras_attention.training.averaging import with_moving_average
from keras_attention.training.cli import flag
from keras_attention.training.cli import parse_config
from keras_attention.training.precision import jit_compile
from keras_attention.training.precision import loss_scaled
from keras_attention.training.precision import resolve_mixed_precision
from keras_attention.training.precision import set_mixed_precision
from keras_attention.training.runs import load_model
from keras_attention.training.runs import read_config
from keras_attention.training.runs import read_vocabulary
from keras_attention.training.runs import write_config
from keras_attention.training.runs import write_metrics
from keras_attention.training.runs import write_vocabulary
from keras_attention.training.strategies import batch_multiple
from keras_attention.training.strategies import check_batch_size
from keras_attention.training.strategies import divisible_batches
from keras_attention.training.strategies import end_data_parallel
from keras_attention.training.strategies import is_chief
from keras_attention.training.strategies import num_replicas
from keras_attention.training.strategies import strategy_scope
from keras_attention.training.strategies import trim_to_batch_multiple
from keras_attention.training.strategies import worker_path

MODEL_FILE = runs.MODEL_FILE

__all__ = [
    "averaging",
    "batch_multiple",
    "check_batch_size",
    "cli",
    "divisible_batches",
    "end_data_parallel",
    "flag",
    "is_chief",
    "jit_compile",
    "load_model",
    "loss_scaled",
    "moving_average_weights",
    "num_replicas",
    "parse_config",
    "precision",
    "read_config",
    "read_vocabulary",
    "resolve_mixed_precision",
    "runs",
    "set_mixed_precision",
    "strategies",
    "strategy_scope",
    "trim_to_batch_multiple",
    "uses_moving_average",
    "with_moving_average",
    "worker_path",
    "write_config",
    "write_metrics",
    "write_vocabulary",
]
