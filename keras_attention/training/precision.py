"""Mixed precision, loss scaling and compiled train steps.

`--mixed-precision` sets the global Keras dtype policy before the model is
built (`set_mixed_precision`); under `mixed_float16` the optimizer gets
dynamic loss scaling (`loss_scaled`); `--jit-compile` becomes the
`compile(jit_compile=...)` argument (`jit_compile`). `--mixed-precision
auto` (the translation application's default) picks bfloat16 where it was
measured to pay and float32 elsewhere (`resolve_mixed_precision`).
"""

import keras

from keras_attention.utils.optional import import_optional

MIXED_PRECISION = {
    "none": "float32",
    "float16": "mixed_float16",
    "bfloat16": "mixed_bfloat16",
}
MIXED_PRECISION_CHOICES = ("auto",) + tuple(MIXED_PRECISION)
JIT_COMPILE = {"auto": "auto", "true": True, "false": False}

# CPU flags of native bfloat16 matrix products: AVX512-BF16 and AMX on
# x86-64, the BF16 extension on Arm (Linux's /proc/cpuinfo names).
BFLOAT16_CPU_FLAGS = ("avx512_bf16", "amx_bf16", "bf16")

# Backends for which bfloat16 on a CPU with native bfloat16 was measured
# both faster and as good: tensorflow (the `small` Transformer's step
# 1.27-1.9x faster in `benchmarks/transformer_training.py`; 60 minutes on
# Multi30k reached test2016 SacreBLEU 38.49; after the same 2,104 steps
# its last checkpoint scored 0.25 BLEU below float32's and its average of
# 5 checkpoints 0.55 above: applications/translation/README.md). `auto`
# picks bfloat16 for these only. On jax and torch the same 2,104 steps were
# measured too (applications/translation/README.md, one seed each): jax kept
# BLEU but was not faster end to end (0.92x tokens/s); torch was 1.21x
# faster, its averaged model 0.09 BLEU below float32 but its last
# checkpoint 0.74 below, so both stay float32 until more seeds say
# otherwise. (On torch the copy task of
# `tests/applications/translation_test.py` does not tell the precisions
# apart: 80% +- 17% exact match in bfloat16, 83% +- 10% in float32 over
# seeds 0-6 after 240 steps; applications/translation/README.md.)
CPU_BFLOAT16_BACKENDS = ("tensorflow",)


def cpu_has_bfloat16(cpuinfo="/proc/cpuinfo"):
    """Whether this CPU has native bfloat16 matrix products.

    Reads the CPU flags from `cpuinfo` (Linux); elsewhere, or when the file
    cannot be read, the answer is `False` (detected, never assumed).

    Args:
        cpuinfo: path of the kernel's CPU description.

    Returns:
        `True` if a flag of `BFLOAT16_CPU_FLAGS` is listed.
    """
    try:
        with open(cpuinfo) as f:
            text = f.read()
    except OSError:
        return False
    flags = set()
    for line in text.splitlines():
        key, _, value = line.partition(":")
        if key.strip() in ("flags", "Features"):
            flags.update(value.split())
    return any(flag in flags for flag in BFLOAT16_CPU_FLAGS)


def _has_accelerator(backend):
    if backend == "tensorflow":
        tf = import_optional(
            "tensorflow", "tensorflow", "The tensorflow backend"
        )
        return bool(tf.config.list_physical_devices("GPU"))
    if backend == "jax":
        jax = import_optional("jax", "jax", "The jax backend")
        return jax.default_backend() != "cpu"
    if backend == "torch":
        torch = import_optional("torch", "torch", "The torch backend")
        return torch.cuda.is_available()
    return False


def resolve_mixed_precision(name, backend=None, accelerator=None, cpu=None):
    """The precision `--mixed-precision name` means on this machine.

    `"auto"` becomes `"bfloat16"` when training runs on the CPU, the CPU
    has native bfloat16 (`cpu_has_bfloat16`) and the backend is one whose
    training was measured faster and as good that way
    (`CPU_BFLOAT16_BACKENDS`: tensorflow);
    otherwise `"none"` (float32). On GPUs `auto` stays float32: no GPU
    measurement backs another choice yet. Other names are returned as they
    are.

    Args:
        name: str. `"auto"`, `"none"`, `"float16"` or `"bfloat16"`.
        backend: the Keras backend; defaults to the running one.
        accelerator: whether a GPU is in use; detected when `None`.
        cpu: whether the CPU has native bfloat16; detected when `None`.

    Returns:
        `"none"`, `"float16"` or `"bfloat16"`.

    Example:

    >>> resolve_mixed_precision("auto", "tensorflow", False, True)
    'bfloat16'
    >>> resolve_mixed_precision("auto", "tensorflow", False, False)
    'none'
    >>> resolve_mixed_precision("float16")
    'float16'
    """
    if name not in MIXED_PRECISION_CHOICES:
        raise ValueError(
            f"Argument `mixed_precision` must be one of "
            f"{MIXED_PRECISION_CHOICES}. Received: mixed_precision={name!r}"
        )
    if name != "auto":
        return name
    backend = backend or keras.backend.backend()
    if accelerator is None:
        accelerator = _has_accelerator(backend)
    if cpu is None:
        cpu = cpu_has_bfloat16()
    if not accelerator and cpu and backend in CPU_BFLOAT16_BACKENDS:
        return "bfloat16"
    return "none"


def set_mixed_precision(name="none"):
    """Sets the global Keras dtype policy for `--mixed-precision name`.

    `"float16"` -> `"mixed_float16"` (compute in float16, variables in
    float32; compile with `loss_scaled(optimizer)`), `"bfloat16"` ->
    `"mixed_bfloat16"` (no loss scaling needed), `"none"` -> `"float32"`,
    `"auto"` -> what `resolve_mixed_precision` picks. Models built
    afterwards use the policy; the models' output layers, the losses and
    the attention softmax compute in float32.

    Args:
        name: str. `"auto"`, `"none"`, `"float16"` or `"bfloat16"`.
            Defaults to `"none"`.

    Returns:
        The policy name that was set.

    Example:

    >>> set_mixed_precision("bfloat16")
    'mixed_bfloat16'
    >>> set_mixed_precision("none")
    'float32'
    """
    policy = MIXED_PRECISION[resolve_mixed_precision(name)]
    keras.mixed_precision.set_dtype_policy(policy)
    return policy


def loss_scaled(optimizer):
    """`optimizer`, in a `LossScaleOptimizer` under `mixed_float16`.

    Float16 gradients of small losses underflow to zero; dynamic loss
    scaling multiplies the loss before differentiation and divides the
    gradients after, skipping steps whose gradients overflow. Keras's
    `compile` also wraps the optimizer when the model's policy is
    `mixed_float16`; doing it here makes the choice visible and holds for
    models built with an explicit dtype.
    """
    policy = keras.config.dtype_policy().name
    if policy == "mixed_float16" and not isinstance(
        optimizer, keras.optimizers.LossScaleOptimizer
    ):
        return keras.optimizers.LossScaleOptimizer(optimizer)
    return optimizer


def jit_compile(value="auto"):
    """`compile(jit_compile=...)` for `--jit-compile auto|true|false`.

    `"auto"` lets Keras decide: XLA on tensorflow with an accelerator,
    `jax.jit` on jax (always), eager on torch. `"true"` asks for XLA on
    tensorflow and `torch.compile` on torch; `"false"` runs tensorflow
    graphs without XLA and jax uncompiled (slow).

    Example:

    >>> jit_compile("false")
    False
    """
    key = str(value).lower()
    if key not in JIT_COMPILE:
        raise ValueError(
            "Argument `jit_compile` must be one of ('auto', 'true', "
            f"'false'). Received: jit_compile={value!r}"
        )
    return JIT_COMPILE[key]
