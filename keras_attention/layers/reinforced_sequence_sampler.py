import math

import keras
from keras import ops

from keras_attention.ops.masking import masked_mean
from keras_attention.utils.dtypes import floating_inputs
from keras_attention.utils.initializers import clone_initializer
from keras_attention.utils.masks import drop_keras_masks
from keras_attention.utils.validation import check_choice
from keras_attention.utils.validation import check_mask
from keras_attention.utils.validation import check_positive_int
from keras_attention.utils.validation import check_rank
from keras_attention.utils.validation import static_shape

INFERENCE_RULES = ("threshold", "sample", "all")


@keras.saving.register_keras_serializable(package="keras_attention")
class ReinforcedSequenceSampler(keras.layers.Layer):
    """Hard token selection (RSS): a keep/drop decision for every token.

    Each token's keep probability comes from a parallel context fusion of
    the token with the mean of its sequence:

    ```
    pooled = masked_mean(x)                            # (B, 1, F)
    features = [x; pooled; x * pooled]                 # (B, T, 3F)
    logits = keep_dense(activation(context_dense(features)))   # (B, T)
    probabilities = sigmoid(logits)
    training:  selection = uniform() < probabilities   # Bernoulli sample
    inference: selection = probabilities > threshold   # by default
    log_prob = sum_t log P(selection_t)                # (B,)
    ```

    The selection is discrete, so no gradient reaches this layer through it:
    its weights learn from `log_prob` by policy gradient (REINFORCE), which
    the ReSAN models do in `compute_loss`. Sampling uses the layer's own
    `keras.random.SeedGenerator(seed)`. At inference the default rule is
    deterministic, so exported models and evaluations are reproducible;
    `inference="sample"` draws there too, as the authors' code does, and
    `inference="all"` keeps every real token (what the soft network does
    without the selection). The rule is an attribute: a model traced
    before it changes keeps the old rule until it traces again
    (`keras_attention.models.resan.sampler_inference` does both).

    Masking: the mask comes from the `mask` argument or the Keras mask of
    `inputs`. Padded tokens are never selected and add nothing to
    `log_prob`; the pooled context averages real tokens only (a row with no
    real token pools to zeros and selects nothing). Outputs carry no mask.

    Precision: under a float16 policy the token scores (the two dense
    layers over `[x; mean; x * mean]`) are computed, and their weights
    kept, in float32: the product passes float16's 65504 once inputs reach
    a few hundred, and the probabilities would be NaN.

    Relation to the paper: the paper's RSS fuses the token, the sequence's
    mean and their product with one dense layer; `hidden_dim` sets its width.

    Args:
        hidden_dim: int. Width of the context fusion layer. Defaults to the
            input width.
        threshold: float in (0, 1). Inference keeps tokens whose probability
            exceeds it. Defaults to `0.5`.
        seed: int. Seed of the sampling. Defaults to `None`.
        kernel_initializer: initializer for the kernels. Defaults to
            `"glorot_uniform"`.
        bias_initializer: initializer for the biases. Defaults to `"zeros"`.
        activation: activation of the context fusion layer. Defaults to
            `"elu"` (the authors' code; release 0.1 used `"relu"`, which
            files saved by it keep).
        inference: the selection when `training` is false: `"threshold"`
            (keep probabilities above `threshold`), `"sample"` (a Bernoulli
            draw, as in training) or `"all"` (every real token). Defaults
            to `"threshold"`.
        **kwargs: base layer arguments (`name`, `dtype`, ...).

    Call arguments:
        inputs: tensor `(B, T, F)`.
        mask: optional boolean tensor `(B, T)`, `True` = real token.
        training: bool. Sample (`True`) or apply the `inference` rule.
        return_probabilities: bool. Also return the keep probabilities.

    Returns:
        A tuple `(selection, log_prob)`: a boolean tensor `(B, T)` and the
        float32 log-probability `(B,)` of that selection under the layer's
        distribution; followed by the float32 probabilities `(B, T)` when
        `return_probabilities=True`.

    Example:

    >>> sampler = ReinforcedSequenceSampler(seed=1)
    >>> x = keras.random.normal((2, 5, 8))
    >>> selection, log_prob = sampler(x, training=True)
    >>> keras.ops.shape(selection), keras.ops.shape(log_prob)
    ((2, 5), (2,))

    References:
        - [Shen et al., 2018, ReSAN](https://arxiv.org/abs/1801.10296),
          section 3.1 (reinforced sequence sampling) and 3.3 (training).
    """

    def __init__(
        self,
        hidden_dim=None,
        threshold=0.5,
        seed=None,
        kernel_initializer="glorot_uniform",
        bias_initializer="zeros",
        activation="elu",
        inference="threshold",
        **kwargs,
    ):
        check_positive_int("hidden_dim", hidden_dim, allow_none=True)
        if (
            isinstance(threshold, bool)
            or not isinstance(threshold, (int, float))
            or not 0.0 < threshold < 1.0
        ):
            raise ValueError(
                "Argument `threshold` must be a float in (0, 1). "
                f"Received: threshold={threshold!r}"
            )
        check_choice("inference", inference, INFERENCE_RULES)
        super().__init__(**kwargs)
        self.hidden_dim = hidden_dim
        self.inference = inference
        self.threshold = float(threshold)
        self.seed = seed
        keras.activations.get(activation)  # Fails on an unknown name.
        self.activation = activation
        self.seed_generator = keras.random.SeedGenerator(seed)
        self.kernel_initializer = keras.initializers.get(kernel_initializer)
        self.bias_initializer = keras.initializers.get(bias_initializer)
        self.supports_masking = True

    def build(self, inputs_shape):
        check_rank("inputs", inputs_shape, 3)
        features = inputs_shape[-1]
        hidden = self.hidden_dim or features
        # The features hold products of inputs (`inputs * pooled`), which
        # pass float16's 65504 once inputs reach a few hundred: a float16
        # sampler scores tokens in float32.
        scoring = "float32" if self._scores_in_float32() else self.dtype_policy
        self.context_dense = keras.layers.Dense(
            hidden,
            activation=self.activation,
            kernel_initializer=clone_initializer(self.kernel_initializer),
            bias_initializer=clone_initializer(self.bias_initializer),
            dtype=scoring,
            name="context_dense",
        )
        self.context_dense.build(tuple(inputs_shape[:-1]) + (3 * features,))
        self.keep_dense = keras.layers.Dense(
            1,
            kernel_initializer=clone_initializer(self.kernel_initializer),
            bias_initializer=clone_initializer(self.bias_initializer),
            dtype=scoring,
            name="keep_dense",
        )
        self.keep_dense.build(tuple(inputs_shape[:-1]) + (hidden,))
        self.built = True

    def call(
        self, inputs, mask=None, training=None, return_probabilities=False
    ):
        shape = static_shape(inputs)
        check_rank("inputs", shape, 3)
        check_mask("mask", mask, shape[0], shape[1])
        drop_keras_masks(inputs)
        inputs = floating_inputs(self.compute_dtype, inputs)
        if mask is None:
            real = ops.ones(ops.shape(inputs)[:2], "bool")
        else:
            real = ops.cast(mask, "bool")
        if self._scores_in_float32():
            inputs = ops.cast(inputs, "float32")
        pooled = masked_mean(inputs, real, keepdims=True)  # (B, 1, F)
        pooled_t = ops.broadcast_to(pooled, ops.shape(inputs))
        features = ops.concatenate(
            [inputs, pooled_t, inputs * pooled_t], axis=-1
        )  # (B, T, 3F)
        logits = self.keep_dense(self.context_dense(features))[..., 0]
        logits = ops.cast(logits, "float32")  # (B, T)
        probabilities = ops.sigmoid(logits)
        if training or self.inference == "sample":
            noise = keras.random.uniform(
                ops.shape(logits), seed=self.seed_generator
            )
            selection = ops.less(noise, probabilities)
        elif self.inference == "all":
            selection = real
        else:
            # p > threshold  <=>  logit > log(threshold / (1 - threshold))
            cut = math.log(self.threshold / (1.0 - self.threshold))
            selection = ops.greater(logits, cut)
        selection = ops.logical_and(selection, real)
        token_log_prob = ops.where(
            selection, ops.log_sigmoid(logits), ops.log_sigmoid(-logits)
        )
        log_prob = ops.sum(ops.where(real, token_log_prob, 0.0), axis=-1)
        if return_probabilities:
            return selection, log_prob, probabilities
        return selection, log_prob

    def _scores_in_float32(self):
        return self.compute_dtype == "float16"

    def compute_mask(self, inputs, mask=None):
        return None

    @classmethod
    def from_config(cls, config):
        # Layers saved before `activation` existed used ReLU.
        return super().from_config({"activation": "relu", **config})

    def get_config(self):
        config = super().get_config()
        config.update(
            {
                "hidden_dim": self.hidden_dim,
                "threshold": self.threshold,
                "seed": self.seed,
                "activation": self.activation,
                "inference": self.inference,
                "kernel_initializer": keras.initializers.serialize(
                    self.kernel_initializer
                ),
                "bias_initializer": keras.initializers.serialize(
                    self.bias_initializer
                ),
            }
        )
        return config
