"""Fused attention on a GPU: whether the Transformer takes it, and its speed.

The Transformer's attention goes through
`keras_attention.ops.scaled_dot_product_attention`, which hands the work to
`keras.ops.dot_product_attention` (the backend's fused kernel) when no
attention weights are returned, no attention dropout is in effect (as in
the presets) and, for float16, the fused kernel on this backend and
device accumulates in float32 (`ops.attention.fused_float16_is_safe`: jax
on GPU and torch on CUDA; elsewhere float16 takes the explicit path with
float32 logits; bfloat16 stays fused everywhere). This
script trains the Transformer `--preset` (default `base`) under
`--mixed-precision` (default `bfloat16`) in two variants:

- `fused`: jax: every `MultiHeadAttention` with `flash_attention=True`
  (cuDNN flash attention through `jax.nn.dot_product_attention`). torch:
  `flash_attention=None`, so that torch's `scaled_dot_product_attention`
  picks a fused kernel itself (flash, memory-efficient or cuDNN attention;
  Keras's `flash_attention=True` on torch demands the flash kernel, which
  refuses the padding masks every Transformer call has);
- `unfused`: `flash_attention=False`; jax: XLA's own attention; torch:
  `scaled_dot_product_attention` limited to its math kernel
  (`torch.nn.attention.sdpa_kernel([SDPBackend.MATH])`).

Evidence that the fused kernel runs:

- jax: the compiled forward+backward of the model (`stateless_call` and
  the label-smoothed loss under `jax.jit(jax.value_and_grad(...))`); the
  script counts the HLO custom calls whose target names cuDNN's fused
  attention (`__cudnn$fmha...`).
- torch: `torch.profiler` around one training step; the script counts the
  kernel launches whose name contains `flash`, `efficient` or `fmha`, and
  lists their names.

float16 accuracy: before training, the script runs
`scaled_dot_product_attention` and the raw `keras.ops.dot_product_attention`
on float16 inputs of magnitude 1, 1e2 and 1e4 and reports each one's largest
error relative to a float64 NumPy reference, with the path the layer took
(`float16_accuracy` in the JSON): the evidence for the decision table.

Throughput: `model.train_on_batch` on fixed-shape batches (random ids,
random lengths, padded), after a warm-up that compiles; groups of
`--steps` steps alternate fused, unfused, fused, ... for `--repeats`
rounds. Tokens per second = real (non-padding) target tokens / time per
step; medians are reported with the ratio fused / unfused.

TensorFlow has no fused attention kernel in Keras (`flash_attention=True`
is refused there), so the script runs on jax or torch.

Usage (on a machine with an Ampere or newer NVIDIA GPU):

    KERAS_BACKEND=jax python benchmarks/fused_attention_gpu.py
    KERAS_BACKEND=torch python benchmarks/fused_attention_gpu.py \\
        --batch-size 32 --length 256
    python benchmarks/fused_attention_gpu.py --smoke   # CPU, seconds

`--smoke` uses the tiny preset, short sequences and few steps so that the
script can be checked on a CPU; the fused variant is then reported as
unavailable, with the reason, and nothing is written unless `--json-out`
is given. Results go to
`benchmarks/results/fused_attention_gpu_<backend>.json` (or `--json-out`).
"""

import argparse
import os
import statistics
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import common  # noqa: E402

# flash_attention per variant and backend.
VARIANTS = {
    "jax": {"fused": True, "unfused": False},
    "torch": {"fused": None, "unfused": False},
}
FUSED_KERNEL_MARKERS = ("flash", "efficient", "fmha")


def parse_args(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--preset", default="base")
    parser.add_argument(
        "--mixed-precision",
        default="bfloat16",
        choices=("none", "float16", "bfloat16"),
    )
    parser.add_argument("--batch-size", type=int, default=64)
    parser.add_argument("--length", type=int, default=128)
    parser.add_argument("--vocabulary-size", type=int, default=32000)
    parser.add_argument("--steps", type=int, default=10)
    parser.add_argument("--repeats", type=int, default=5)
    parser.add_argument("--smoke", action="store_true")
    parser.add_argument("--json-out", default=None)
    args = parser.parse_args(argv)
    if args.smoke:
        args.preset = "tiny"
        args.batch_size, args.length = 4, 16
        args.vocabulary_size = 100
        args.steps, args.repeats = 2, 2
    return args


def attention_layers(root):
    """Every `keras_attention` `MultiHeadAttention` inside `root`."""
    from keras_attention.layers import MultiHeadAttention

    found, seen, stack = [], set(), [root]
    while stack:
        item = stack.pop()
        if id(item) in seen:
            continue
        seen.add(id(item))
        if isinstance(item, MultiHeadAttention):
            found.append(item)
        if isinstance(item, (list, tuple)):
            stack.extend(item)
        elif hasattr(item, "__dict__") and hasattr(item, "weights"):
            stack.extend(vars(item).values())
    return found


def make_batch(args, seed=0):
    import numpy as np

    rng = np.random.default_rng(seed)
    size, length = args.batch_size, args.length
    shape = (size, length)
    sources = rng.integers(4, args.vocabulary_size, shape).astype("int32")
    targets = rng.integers(4, args.vocabulary_size, shape).astype("int32")
    for rows in (sources, targets):
        lengths = rng.integers(length // 2, length + 1, size)
        rows[np.arange(length)[None, :] >= lengths[:, None]] = 0
    decoder = np.concatenate(
        [np.full((size, 1), 2, "int32"), targets[:, :-1]], axis=1
    )
    x = {"encoder_token_ids": sources, "decoder_token_ids": decoder}
    return x, targets, int((targets != 0).sum())


def build(args, flash):
    import keras

    from keras_attention import losses
    from keras_attention.models import Transformer
    from keras_attention.training import precision

    keras.utils.set_random_seed(0)
    model = Transformer.from_preset(
        args.preset,
        args.vocabulary_size,
        max_sequence_length=max(256, args.length),
        seed=0,
    )
    layers = attention_layers(model)
    for layer in layers:
        layer.flash_attention = flash
    model.compile(
        optimizer=precision.loss_scaled(keras.optimizers.Adam(1e-4)),
        loss=losses.LabelSmoothedSparseCategoricalCrossentropy(0.1),
    )
    return model, len(layers)


def jax_fused_calls(model, x, y):
    """cuDNN fused-attention custom calls in the compiled fwd+bwd HLO."""
    import jax

    from keras_attention import losses

    loss_object = losses.LabelSmoothedSparseCategoricalCrossentropy(0.1)

    def loss_fn(trainable, non_trainable, x, y):
        logits, _ = model.stateless_call(
            trainable, non_trainable, x, training=True
        )
        return loss_object(y, logits)

    trainable = [v.value for v in model.trainable_variables]
    non_trainable = [v.value for v in model.non_trainable_variables]
    step = jax.jit(jax.value_and_grad(loss_fn))
    text = step.lower(trainable, non_trainable, x, y).compile().as_text()
    return text.count('custom_call_target="__cudnn$fmha')


def torch_fused_kernels(model, x, y):
    """`(launches, names)` of fused attention kernels in one step."""
    import torch

    activities = [torch.profiler.ProfilerActivity.CPU]
    if torch.cuda.is_available():
        activities.append(torch.profiler.ProfilerActivity.CUDA)
    with torch.profiler.profile(activities=activities) as profile:
        model.train_on_batch(x, y)
        if torch.cuda.is_available():
            torch.cuda.synchronize()
    events = [
        event
        for event in profile.key_averages()
        if any(m in event.key.lower() for m in FUSED_KERNEL_MARKERS)
    ]
    return sum(e.count for e in events), sorted({e.key for e in events})


def kernel_scope(backend, name):
    """torch's math kernel for the unfused variant; else nothing."""
    import contextlib

    if backend == "torch" and name == "unfused":
        import torch

        return torch.nn.attention.sdpa_kernel(
            [torch.nn.attention.SDPBackend.MATH]
        )
    return contextlib.nullcontext()


def run(args):
    import keras

    from keras_attention.training import precision

    backend = keras.backend.backend()
    if backend == "tensorflow":
        raise SystemExit(
            "Keras's tensorflow backend has no fused attention kernel "
            "(flash_attention=True is refused); run with KERAS_BACKEND=jax "
            "or torch."
        )
    float16 = float16_accuracy()
    for row in float16:
        print("float16 accuracy", row)
    precision.set_mixed_precision(args.mixed_precision)
    x, y, tokens = make_batch(args)
    variants, steps = {}, {}
    for name, flash in VARIANTS[backend].items():
        entry = {"flash_attention": flash}
        try:
            model, count = build(args, flash)
            entry["attention_layers"] = count
            if backend == "jax":
                entry["cudnn_fused_attention_calls"] = jax_fused_calls(
                    model, x, y
                )
            with kernel_scope(backend, name):
                model.train_on_batch(x, y)  # warm-up: compiles
                if backend == "torch":
                    launches, kernels = torch_fused_kernels(model, x, y)
                    entry["fused_kernel_launches"] = launches
                    entry["fused_kernels"] = kernels
        except Exception as error:  # the kernel is not available here
            entry["unavailable"] = f"{type(error).__name__}: {error}"[:500]
            variants[name] = entry
            print(f"{name}: unavailable ({entry['unavailable'][:200]})")
            continue
        variants[name] = entry

        def step(model=model, name=name):
            with kernel_scope(backend, name):
                for _ in range(args.steps):
                    loss = model.train_on_batch(x, y)
            float(loss)  # waits for the device

        steps[name] = step
    names = list(steps)
    times = common.time_interleaved([steps[n] for n in names], args.repeats)
    for name, seconds in zip(names, times):
        per_step = [s / args.steps for s in seconds]
        variants[name]["step_ms_median"] = round(
            1000 * statistics.median(per_step), 3
        )
        variants[name]["tokens_per_second_median"] = round(
            tokens / statistics.median(per_step), 1
        )
        variants[name]["step_ms_all"] = [round(1000 * s, 3) for s in per_step]
    result = {
        "benchmark": "fused_attention_gpu",
        "backend": backend,
        "preset": args.preset,
        "mixed_precision": args.mixed_precision,
        "batch_size": args.batch_size,
        "length": args.length,
        "target_tokens_per_step": tokens,
        "steps_per_group": args.steps,
        "repeats": args.repeats,
        "smoke": args.smoke,
        "variants": variants,
        "float16_accuracy": float16,
        "environment": common.environment(backend),
        "devices": device_names(backend),
        "time": time.strftime("%Y-%m-%d %H:%M:%S"),
    }
    fused = variants.get("fused", {}).get("tokens_per_second_median")
    unfused = variants.get("unfused", {}).get("tokens_per_second_median")
    if fused and unfused:
        result["fused_over_unfused"] = round(fused / unfused, 3)
    return result


def float16_accuracy(seed=0):
    """Largest relative error of float16 attention against float64 NumPy."""
    import keras
    import numpy as np

    from keras_attention.ops import scaled_dot_product_attention
    from keras_attention.ops.attention import device_platform
    from keras_attention.ops.attention import fused_float16_is_safe

    rng = np.random.default_rng(seed)
    rows = []
    for scale in (1.0, 1e2, 1e4):
        q, k, v = (
            (rng.normal(size=(2, 64, 4, 64)) * scale).astype("float16")
            for _ in range(3)
        )
        logits = np.einsum(
            "btnh,bsnh->bnts", np.float64(q), np.float64(k)
        ) / np.sqrt(64)
        weights = np.exp(logits - logits.max(-1, keepdims=True))
        weights /= weights.sum(-1, keepdims=True)
        reference = np.einsum("bnts,bsnh->btnh", weights, np.float64(v))
        size = np.abs(reference).max()
        tensors = [keras.ops.convert_to_tensor(a) for a in (q, k, v)]
        row = {
            "input_scale": scale,
            "fused_path_taken": fused_float16_is_safe(
                keras.backend.backend(), device_platform(tensors[0])
            ),
        }
        for name, attend in (
            ("layer_op", scaled_dot_product_attention),
            ("raw_fused_kernel", keras.ops.dot_product_attention),
        ):
            try:
                out = np.float64(keras.ops.convert_to_numpy(attend(*tensors)))
                row[f"{name}_relative_error"] = float(
                    np.nanmax(np.abs(out - reference)) / size
                )
                row[f"{name}_finite"] = bool(np.all(np.isfinite(out)))
            except Exception as error:
                row[f"{name}_error"] = f"{type(error).__name__}: {error}"[:200]
        rows.append(row)
    return rows


def device_names(backend):
    if backend == "jax":
        import jax

        return [str(d) for d in jax.devices()]
    import torch

    if torch.cuda.is_available():
        return [torch.cuda.get_device_name(0)]
    return ["cpu"]


def main(argv=None):
    args = parse_args(argv)
    result = run(args)
    path = args.json_out
    if path is None and not args.smoke:
        path = os.path.join(
            common.RESULTS_DIR, f"fused_attention_gpu_{result['backend']}.json"
        )
    rows = [
        [
            name,
            entry.get(
                "cudnn_fused_attention_calls",
                entry.get("fused_kernel_launches", "-"),
            ),
            entry.get("step_ms_median", "-"),
            entry.get("tokens_per_second_median", "-"),
            entry.get("unavailable", "")[:60],
        ]
        for name, entry in result["variants"].items()
    ]
    print(
        common.markdown_table(
            ["variant", "fused kernels", "ms/step", "tokens/s", "note"], rows
        )
    )
    if path:
        common.write_json(path, result)
        print("wrote", path)
    return result


if __name__ == "__main__":
    main()
