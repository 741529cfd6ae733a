"""Mixed precision, loss scaling and compiled train steps.

`--mixed-precision` sets the global Keras dtype policy before the model is
built (`set_mixed_precision`); under `mixed_float16` the optimizer gets
dynamic loss scaling (`loss_scaled`); `--jit-compile` becomes the
`compile(jit_compile=...)` argument (`jit_compile`).
"""

import keras

MIXED_PRECISION = {
    "none": "float32",
    "float16": "mixed_float16",
    "bfloat16": "mixed_bfloat16",
}
JIT_COMPILE = {"auto": "auto", "true": True, "false": False}


def set_mixed_precision(name="none"):
    """Sets the global Keras dtype policy for `--mixed-precision name`.

    `"float16"` -> `"mixed_float16"` (compute in float16, variables in
    float32; compile with `loss_scaled(optimizer)`), `"bfloat16"` ->
    `"mixed_bfloat16"` (no loss scaling needed), `"none"` -> `"float32"`.
    Models built afterwards use the policy; the models' output layers
    compute in float32.

    Args:
        name: str. `"none"`, `"float16"` or `"bfloat16"`. Defaults to
            `"none"`.

    Returns:
        The policy name that was set.

    Example:

    >>> set_mixed_precision("bfloat16")
    'mixed_bfloat16'
    >>> set_mixed_precision("none")
    'float32'
    """
    if name not in MIXED_PRECISION:
        raise ValueError(
            f"Argument `mixed_precision` must be one of "
            f"{tuple(MIXED_PRECISION)}. Received: mixed_precision={name!r}"
        )
    policy = MIXED_PRECISION[name]
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
