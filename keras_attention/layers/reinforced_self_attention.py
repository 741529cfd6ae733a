import math

import keras
from keras import ops

from keras_attention.layers.directional_self_attention import (
    attention_sublayers,
)
from keras_attention.layers.reinforced_sequence_sampler import (
    ReinforcedSequenceSampler,
)
from keras_attention.ops.masking import masked_mean
from keras_attention.ops.multi_dimensional import DIRECTIONS
from keras_attention.ops.multi_dimensional import directional_mask
from keras_attention.ops.multi_dimensional import multi_dimensional_attention
from keras_attention.utils.dtypes import floating_inputs
from keras_attention.utils.initializers import clone_initializer
from keras_attention.utils.masks import drop_keras_masks
from keras_attention.utils.seeds import sub_seed
from keras_attention.utils.validation import check_choice
from keras_attention.utils.validation import check_mask
from keras_attention.utils.validation import check_positive_int
from keras_attention.utils.validation import check_rank
from keras_attention.utils.validation import static_shape


@keras.saving.register_keras_serializable(package="keras_attention")
class ReinforcedSelfAttention(keras.layers.Layer):
    """Reinforced self-attention (ReSA): soft attention among hard-selected
    tokens.

    Two untied `ReinforcedSequenceSampler`s choose the heads (tokens whose
    context is computed) and the dependents (tokens that may be attended
    to). Multi-dimensional attention then runs only among the selected
    tokens:

    ```
    heads, head_log_prob = head_sampler(x)              # (B, T) bool
    dependents, dep_log_prob = dependent_sampler(x)     # (B, T) bool
    allowed[t, s] = heads[t] and dependents[s] and t != s and direction
    logits[t, s, f] = c * tanh((W1 x_t + W2 x_s + b)[f] / c)
    context[t] = sum_s masked_softmax(logits, allowed)[t, s] * x[s]
    context[t] = mean of the other real tokens, where t is not a head
    context[t] = 0, where t is a head with no allowed dependent, or padding
    output = fusion_gate(x, context)
    log_prob = head_log_prob + dep_log_prob             # (B,)
    ```

    Sparsity: the selected heads and dependents are gathered (selected
    tokens first, in sequence order) into `K` slots and the pairwise
    attention runs on `(B, K, K, F)`, so time and memory fall with the
    selection. Without `capacity`, `K = T` (exact, but no saving); with
    `capacity`, `K = ceil(capacity * T)`, and if more than `K` tokens are
    selected the last ones are dropped (they then count as unselected in
    the returned selections).

    Masking: the mask comes from the `mask` argument or the Keras mask of
    `inputs`. Padded tokens are never selected, so they get zero weight and
    do not change the outputs at real tokens (with `capacity`, as long as
    no selection is dropped). With `empty_context="authors"` (the authors'
    released code), an unselected token takes the mean of the other real
    tokens, a selected head with no allowed dependent (the first head
    under a forward mask) and a padded token a zero context; with `"mean"`
    (release 0.1, and files saved by it) all three take the mean of all
    real tokens. No row is undefined. The output carries the input's Keras mask.

    Training: the selections are discrete, so the samplers get no gradient
    from the output, and they read `stop_gradient(inputs)`, so `log_prob`
    sends no gradient upstream; call with `return_selections=True` and
    train them on `log_prob` by policy gradient (the ReSAN models in
    `keras_attention.models` do this inside `compute_loss`).

    Args:
        direction: `"forward"`, `"backward"` or `None`. Defaults to `None`.
        tanh_scale: float. `c`. Defaults to `5.0`.
        capacity: float in (0, 1]. Fraction of the sequence length gathered
            as heads and as dependents. Defaults to `None` (all).
        sampler_hidden_dim: int. Width of the samplers' fusion layer.
            Defaults to the input width.
        threshold: float. The samplers' inference threshold. Defaults to
            `0.5`.
        use_fusion_gate: bool. Defaults to `True`.
        block_size: int. Heads per block of the blocked computation.
            Defaults to `None`.
        seed: int. Seed of the samplers; each gets its own stream
            (`keras_attention.utils.seeds.sub_seed`). Defaults to `None`.
        kernel_initializer: initializer for the kernels. Defaults to
            `"glorot_uniform"`.
        bias_initializer: initializer for the biases. Defaults to `"zeros"`.
        empty_context: `"authors"` or `"mean"`, the context of unselected
            tokens and of heads with nothing to attend to (see Masking).
            Defaults to `"authors"`.
        use_samplers: bool. Own a head and a dependent sampler; `False`
            when the selections come from outside (the ReSAN encoder shares
            one pair of samplers between its two directions). Defaults to
            `True`.
        sampler_activation: activation of the samplers' hidden layer.
            Defaults to `"elu"` (the authors'; release 0.1: `"relu"`).
        **kwargs: base layer arguments (`name`, `dtype`, ...).

    Call arguments:
        inputs: tensor `(B, T, F)`.
        mask: optional boolean tensor `(B, T)`.
        training: bool. Sample the selections (`True`) or use the
            samplers' deterministic rule.
        heads, dependents: optional boolean tensors `(B, T)`: selections
            made outside the layer, used instead of its samplers (`log_prob`
            is then zero).
        return_selections: bool. Also return the head and dependent
            selections and the log-probability.
        return_attention_scores: bool. Also return the soft attention
            matrix `(B, T, T)` averaged over features (zero outside the
            selection; not with `block_size`).

    Returns:
        `output` `(B, T, F)`; then, when `return_selections=True`,
        `heads` `(B, T)` bool, `dependents` `(B, T)` bool and `log_prob`
        `(B,)` float32; then the attention matrix when asked for.

    Example:

    >>> layer = ReinforcedSelfAttention(direction="forward", seed=1)
    >>> x = keras.random.normal((2, 6, 8))
    >>> out, heads, deps, log_prob = layer(
    ...     x, training=True, return_selections=True)
    >>> keras.ops.shape(out), keras.ops.shape(heads), keras.ops.shape(log_prob)
    ((2, 6, 8), (2, 6), (2,))

    References:
        - [Shen et al., 2018, ReSAN](https://arxiv.org/abs/1801.10296),
          sections 3.2 and 3.3.
        - [Shen et al., 2017, DiSAN](https://arxiv.org/abs/1709.04696).
    """

    def __init__(
        self,
        direction=None,
        tanh_scale=5.0,
        capacity=None,
        sampler_hidden_dim=None,
        threshold=0.5,
        use_fusion_gate=True,
        block_size=None,
        seed=None,
        kernel_initializer="glorot_uniform",
        bias_initializer="zeros",
        empty_context="authors",
        use_samplers=True,
        sampler_activation="elu",
        **kwargs,
    ):
        check_choice("direction", direction, DIRECTIONS)
        check_choice("empty_context", empty_context, EMPTY_CONTEXTS)
        check_positive_int("block_size", block_size, allow_none=True)
        check_positive_int(
            "sampler_hidden_dim", sampler_hidden_dim, allow_none=True
        )
        if capacity is not None and (
            isinstance(capacity, bool)
            or not isinstance(capacity, (int, float))
            or not 0.0 < capacity <= 1.0
        ):
            raise ValueError(
                "Argument `capacity` must be a float in (0, 1] or None. "
                f"Received: capacity={capacity!r}"
            )
        if (
            isinstance(tanh_scale, bool)
            or not isinstance(tanh_scale, (int, float))
            or tanh_scale <= 0
        ):
            raise ValueError(
                "Argument `tanh_scale` must be a positive number. "
                f"Received: tanh_scale={tanh_scale!r}"
            )
        super().__init__(**kwargs)
        self.direction = direction
        self.tanh_scale = float(tanh_scale)
        self.capacity = None if capacity is None else float(capacity)
        self.sampler_hidden_dim = sampler_hidden_dim
        self.threshold = threshold
        self.use_fusion_gate = use_fusion_gate
        self.block_size = block_size
        self.seed = seed
        self.empty_context = empty_context
        self.use_samplers = bool(use_samplers)
        self.sampler_activation = sampler_activation
        self.kernel_initializer = keras.initializers.get(kernel_initializer)
        self.bias_initializer = keras.initializers.get(bias_initializer)
        self.supports_masking = True
        # Samplers are made here so that their seed generators exist before
        # the first call; their weights are built in `build`.
        self.head_sampler = self.dependent_sampler = None
        if not self.use_samplers:
            return
        self.head_sampler = ReinforcedSequenceSampler(
            hidden_dim=sampler_hidden_dim,
            threshold=threshold,
            activation=sampler_activation,
            seed=sub_seed(seed, "head_sampler"),
            kernel_initializer=clone_initializer(self.kernel_initializer),
            bias_initializer=clone_initializer(self.bias_initializer),
            dtype=self.dtype_policy,
            name="head_sampler",
        )
        self.dependent_sampler = ReinforcedSequenceSampler(
            hidden_dim=sampler_hidden_dim,
            threshold=threshold,
            activation=sampler_activation,
            seed=sub_seed(seed, "dependent_sampler"),
            kernel_initializer=clone_initializer(self.kernel_initializer),
            bias_initializer=clone_initializer(self.bias_initializer),
            dtype=self.dtype_policy,
            name="dependent_sampler",
        )

    def build(self, inputs_shape):
        check_rank("inputs", inputs_shape, 3)
        features = inputs_shape[-1]
        if self.use_samplers:
            self.head_sampler.build(inputs_shape)
            self.dependent_sampler.build(inputs_shape)
        self.query_dense, self.key_dense, self.fusion_gate = (
            attention_sublayers(self, inputs_shape)
        )
        self._features = features
        self.built = True

    def call(
        self,
        inputs,
        mask=None,
        training=None,
        heads=None,
        dependents=None,
        return_selections=False,
        return_attention_scores=False,
    ):
        shape = static_shape(inputs)
        check_rank("inputs", shape, 3)
        if shape[-1] not in (None, self._features):
            raise ValueError(
                f"The last dimension of `inputs` must be {self._features}, "
                "the size the layer was built with. Received: inputs with "
                f"shape {shape}"
            )
        if return_attention_scores and self.block_size is not None:
            raise ValueError(
                "The attention matrix is not materialized in blocked mode. "
                f"Received: block_size={self.block_size}, "
                "return_attention_scores=True"
            )
        check_mask("mask", mask, shape[0], shape[1])
        drop_keras_masks(inputs)
        inputs = floating_inputs(self.compute_dtype, inputs)
        length = ops.shape(inputs)[1]
        if mask is None:
            real = ops.ones(ops.shape(inputs)[:2], "bool")
        else:
            real = ops.cast(mask, "bool")
        # The samplers read the inputs without gradient: the policy
        # gradient of `log_prob` reaches the samplers' variables only, never
        # the layers upstream (the paper's theta_r / theta_s split).
        if (heads is None) != (dependents is None) or (
            heads is None and not self.use_samplers
        ):
            raise ValueError(
                "Pass both `heads` and `dependents`, or neither (then the "
                "layer's own samplers select, which needs "
                "`use_samplers=True`). Received: heads="
                f"{'None' if heads is None else 'a tensor'}, dependents="
                f"{'None' if dependents is None else 'a tensor'}, "
                f"use_samplers={self.use_samplers}"
            )
        if heads is None:
            sampler_inputs = ops.stop_gradient(inputs)
            heads, head_log_prob = self.head_sampler(
                sampler_inputs, mask=real, training=training
            )
            dependents, dep_log_prob = self.dependent_sampler(
                sampler_inputs, mask=real, training=training
            )
        else:
            heads = ops.logical_and(ops.cast(heads, "bool"), real)
            dependents = ops.logical_and(ops.cast(dependents, "bool"), real)
            head_log_prob = dep_log_prob = ops.zeros(
                ops.shape(inputs)[:1], "float32"
            )
        slots = self._slots(length)
        # Selected tokens first, in order: (B, K) positions and (B, T) slot
        # of each token (K = not gathered).
        head_index, head_slot, heads = _gather_order(heads, slots)
        dep_index, _, dependents = _gather_order(dependents, slots)

        head_x = _take(inputs, head_index)  # (B, K, F)
        dep_x = _take(inputs, dep_index)  # (B, K, F)
        head_ok = _take(heads, head_index)  # (B, K)
        dep_ok = _take(dependents, dep_index)  # (B, K)
        # (B, K, K): both selected, t != s and the direction.
        allowed = ops.logical_and(
            ops.logical_and(
                ops.expand_dims(head_ok, -1), ops.expand_dims(dep_ok, -2)
            ),
            directional_mask(head_index, dep_index, self.direction),
        )
        result = multi_dimensional_attention(
            self.query_dense(head_x),
            self.key_dense(dep_x),
            dep_x,
            mask=allowed,
            tanh_scale=self.tanh_scale,
            block_size=self.block_size,
            return_attention_scores=return_attention_scores,
        )
        context, weights = result if return_attention_scores else (result, None)
        if self.empty_context == "mean":
            mean = masked_mean(inputs, real, keepdims=True)  # (B, 1, F)
            # A head with nothing allowed takes the mean of the real tokens.
            attended = ops.any(allowed, axis=-1, keepdims=True)  # (B, K, 1)
            context = ops.where(attended, context, mean)
            unselected = mean  # (B, 1, F)
        else:
            # The authors': a head with nothing allowed keeps the zero
            # context of its all-masked softmax; an unselected token takes
            # the mean of the other real tokens.
            unselected = _mean_of_others(inputs, real)  # (B, T, F)
        # Back to (B, T, F): heads from their slot, the others (slot K)
        # from the unselected rule.
        context = ops.concatenate(
            [context, ops.zeros_like(context[:, :1])], axis=1
        )
        context = _take(context, head_slot)  # (B, T, F)
        is_head = ops.expand_dims(ops.less(head_slot, slots), -1)  # (B, T, 1)
        context = ops.where(
            is_head, context, ops.broadcast_to(unselected, ops.shape(context))
        )

        output = context
        if self.fusion_gate is not None:
            output = self.fusion_gate(inputs, context)
        outputs = (output,)
        if return_selections:
            outputs += (heads, dependents, head_log_prob + dep_log_prob)
        if return_attention_scores:
            outputs += (
                _scatter_scores(weights, head_index, dep_index, length),
            )
        return outputs[0] if len(outputs) == 1 else outputs

    def _slots(self, length):
        if self.capacity is None:
            return length
        if isinstance(length, int):
            return max(1, math.ceil(self.capacity * length))
        slots = ops.ceil(self.capacity * ops.cast(length, "float32"))
        return ops.maximum(ops.cast(slots, "int32"), 1)

    def compute_mask(self, inputs, mask=None):
        return mask

    @classmethod
    def from_config(cls, config):
        # Layers saved before these arguments existed (release 0.1) used
        # the "mean" rule and ReLU samplers.
        return super().from_config(
            {"empty_context": "mean", "sampler_activation": "relu", **config}
        )

    def get_config(self):
        config = super().get_config()
        config.update(
            {
                "direction": self.direction,
                "tanh_scale": self.tanh_scale,
                "capacity": self.capacity,
                "sampler_hidden_dim": self.sampler_hidden_dim,
                "threshold": self.threshold,
                "use_fusion_gate": self.use_fusion_gate,
                "block_size": self.block_size,
                "seed": self.seed,
                "empty_context": self.empty_context,
                "use_samplers": self.use_samplers,
                "sampler_activation": self.sampler_activation,
                "kernel_initializer": keras.initializers.serialize(
                    self.kernel_initializer
                ),
                "bias_initializer": keras.initializers.serialize(
                    self.bias_initializer
                ),
            }
        )
        return config


EMPTY_CONTEXTS = ("authors", "mean")


def _mean_of_others(inputs, mask):
    """Mean of the other real tokens at every real position `(B, T, F)`.

    Zeros where a token has no other real token, and at padding (as the
    authors' code gives padded rows a zero context). Summed in float32 for
    half-precision inputs.
    """
    dtype = keras.backend.standardize_dtype(inputs.dtype)
    compute = "float32" if dtype in ("float16", "bfloat16") else dtype
    inputs = ops.cast(inputs, compute)
    weights = ops.cast(ops.expand_dims(mask, -1), compute)  # (B, T, 1)
    total = ops.sum(inputs * weights, axis=1, keepdims=True)  # (B, 1, F)
    count = ops.sum(weights, axis=1, keepdims=True)  # (B, 1, 1)
    others = total - inputs * weights  # (B, T, F)
    others = weights * others / ops.maximum(count - weights, 1.0)
    return ops.cast(others, dtype)


def _gather_order(selection, slots):
    """Orders tokens selected-first and gives each its slot.

    Returns `index` `(B, K)` (positions of the first `K` tokens in that
    order), `slot` `(B, T)` (a token's slot if it is selected and gathered,
    else `K`) and the selection restricted to gathered tokens.
    """
    length = ops.shape(selection)[1]
    positions = ops.expand_dims(ops.arange(length, dtype="int32"), 0)
    # Selected tokens sort by position, unselected ones after them.
    keys = ops.where(selection, positions, positions + length)  # (B, T)
    order = ops.argsort(keys, axis=-1)  # (B, T)
    rank = ops.argsort(order, axis=-1)  # (B, T) rank of each token
    order = ops.cast(order, "int32")
    rank = ops.cast(rank, "int32")
    kept = ops.logical_and(selection, ops.less(rank, slots))
    slot = ops.where(kept, rank, slots)
    return order[:, :slots], slot, kept


def _take(values, index):
    """Gathers along axis 1: `values` `(B, T, ...)`, `index` `(B, K)`."""
    index = ops.cast(index, "int32")
    for _ in range(len(values.shape) - 2):
        index = ops.expand_dims(index, -1)
    return ops.take_along_axis(values, index, axis=1)


def _scatter_scores(weights, head_index, dep_index, length):
    # (B, K, K, F) -> (B, K, K) -> (B, T, T) through one-hot placements.
    weights = ops.mean(weights, axis=-1)
    head_place = ops.one_hot(head_index, length, dtype=weights.dtype)
    dep_place = ops.one_hot(dep_index, length, dtype=weights.dtype)
    return ops.einsum("bkt,bkl,bls->bts", head_place, weights, dep_place)
