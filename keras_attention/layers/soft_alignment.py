import keras
from keras import ops

from keras_attention.layers._feed_forward import apply_feed_forward
from keras_attention.layers._feed_forward import build_feed_forward
from keras_attention.ops import masked_softmax
from keras_attention.ops import pairwise_mask
from keras_attention.ops.attention import attention_logits
from keras_attention.utils.dtypes import floating_inputs
from keras_attention.utils.masks import drop_keras_masks
from keras_attention.utils.validation import check_mask
from keras_attention.utils.validation import check_positive_int
from keras_attention.utils.validation import check_rank
from keras_attention.utils.validation import check_rate
from keras_attention.utils.validation import static_shape


@keras.saving.register_keras_serializable(package="keras_attention")
class SoftAlignment(keras.layers.Layer):
    """Soft alignment of two sentences, the Attend step of Parikh et al.

    A feed-forward network `F` is applied to every premise token and every
    hypothesis token separately (`T + S` applications, never `T * S`); the
    alignment scores are dot products of the results, normalised once over
    the hypothesis and once over the premise:

    ```
    fa = F(premise)                                  # (B, T, H)
    fb = F(hypothesis)                               # (B, S, H)
    scores = einsum("bth,bsh->bts", fa, fb)          # (B, T, S), e_ij
    premise_weights = masked_softmax(scores, axis=2)      # over j
    hypothesis_weights = masked_softmax(scores, axis=1)   # over i
    beta = einsum("bts,bsf->btf", premise_weights, hypothesis)
    alpha = einsum("bts,btf->bsf", hypothesis_weights, premise)
    ```

    `beta[:, i]` is the part of the hypothesis softly aligned to premise
    token `i`, and `alpha[:, j]` the part of the premise aligned to
    hypothesis token `j`. `F` is `num_layers` `Dense` layers of
    `hidden_dim` units with `activation`, each followed by dropout.

    Masking: `premise_mask` `(B, T)` and `hypothesis_mask` `(B, S)` are
    filled in from the inputs' Keras masks when not given. A pair `(i, j)`
    takes part only when both tokens are real; padded tokens get exactly
    zero weight in both directions, so padding never changes `beta` or
    `alpha` at real positions. A padded premise position (or an empty
    hypothesis) gives `beta = 0` there, and likewise for `alpha`; an empty
    sentence is allowed and yields zeros, never NaN. The outputs carry no
    Keras mask: pass the two masks on to the next step.

    Args:
        hidden_dim: int. Width of the layers of `F`. Defaults to `200`.
        num_layers: int. Number of layers of `F`. Defaults to `2`.
        activation: activation of `F`. Defaults to `"relu"`.
        dropout: float. Dropout rate after each layer of `F`. Defaults to
            `0.2`.
        kernel_initializer: initializer for the kernels of `F`. Defaults to
            `"glorot_uniform"`.
        bias_initializer: initializer for the biases of `F`. Defaults to
            `"zeros"`.
        seed: int. Seed for the dropout. Defaults to `None`.
        **kwargs: base layer arguments (`name`, `dtype`, ...).

    Call arguments:
        premise: tensor of shape `(B, T, F)`, the sentence `a`.
        hypothesis: tensor of shape `(B, S, F)`, the sentence `b` (same
            feature width, since `F` is shared).
        premise_mask: optional boolean tensor `(B, T)`, `True` = real token.
        hypothesis_mask: optional boolean tensor `(B, S)`.
        return_attention_scores: bool. Also return the two weight matrices.
        training: bool. Whether dropout is in effect.

    Returns:
        `(beta, alpha)` of shapes `(B, T, F)` and `(B, S, F)`. With
        `return_attention_scores=True`, also `premise_weights` `(B, T, S)`
        (rows sum to 1 over the hypothesis) and `hypothesis_weights`
        `(B, S, T)` (rows sum to 1 over the premise); the first is the
        alignment matrix usually plotted.

    Raises:
        ValueError: if the inputs are not rank 3, have different feature
            widths, or have different batch sizes (checked where the sizes
            are known when the layer is called).

    Example:

    >>> layer = SoftAlignment(hidden_dim=8)
    >>> premise = keras.random.normal((2, 5, 4))
    >>> hypothesis = keras.random.normal((2, 3, 4))
    >>> beta, alpha = layer(premise, hypothesis)
    >>> keras.ops.shape(beta), keras.ops.shape(alpha)
    ((2, 5, 4), (2, 3, 4))

    In a model, with explicit padding masks:

    ```python
    premise = keras.Input((None,), dtype="int32")
    hypothesis = keras.Input((None,), dtype="int32")
    embed = keras.layers.Embedding(1000, 64)
    beta, alpha = SoftAlignment()(
        embed(premise),
        embed(hypothesis),
        premise_mask=keras.ops.not_equal(premise, 0),
        hypothesis_mask=keras.ops.not_equal(hypothesis, 0),
    )
    ```

    Relation to the paper: `premise`, `hypothesis`, `beta`, `alpha` are
    the paper's `ā`, `b̄`, `β`, `α` (equations 1 and 2).

    References:
        - [Parikh et al., 2016](https://arxiv.org/abs/1606.01933),
          section 3.1 (Attend).
    """

    def __init__(
        self,
        hidden_dim=200,
        num_layers=2,
        activation="relu",
        dropout=0.2,
        kernel_initializer="glorot_uniform",
        bias_initializer="zeros",
        seed=None,
        **kwargs,
    ):
        check_positive_int("hidden_dim", hidden_dim)
        check_positive_int("num_layers", num_layers)
        check_rate("dropout", dropout)
        super().__init__(**kwargs)
        self.hidden_dim = hidden_dim
        self.num_layers = num_layers
        self.activation = keras.activations.get(activation)
        self.dropout = dropout
        self.kernel_initializer = keras.initializers.get(kernel_initializer)
        self.bias_initializer = keras.initializers.get(bias_initializer)
        self.seed = seed
        self.seed_generator = keras.random.SeedGenerator(seed)
        self.supports_masking = True

    def build(self, premise_shape, hypothesis_shape):
        check_rank("premise", premise_shape, 3)
        check_rank("hypothesis", hypothesis_shape, 3)
        if premise_shape[-1] != hypothesis_shape[-1]:
            raise ValueError(
                "`premise` and `hypothesis` must have the same last "
                "dimension (one network F scores both). Received: premise "
                f"with shape {tuple(premise_shape)}, hypothesis with shape "
                f"{tuple(hypothesis_shape)}"
            )
        self.attend_layers = build_feed_forward(
            self,
            "attend",
            premise_shape[-1],
            self.hidden_dim,
            self.num_layers,
            self.activation,
            self.kernel_initializer,
            self.bias_initializer,
        )
        self.built = True

    def call(
        self,
        premise,
        hypothesis,
        premise_mask=None,
        hypothesis_mask=None,
        return_attention_scores=False,
        training=None,
    ):
        _check_pair(premise, hypothesis)
        p, h = static_shape(premise), static_shape(hypothesis)
        check_mask("premise_mask", premise_mask, p[0], p[1], "premise")
        check_mask("hypothesis_mask", hypothesis_mask, h[0], h[1], "hypothesis")
        drop_keras_masks(premise, hypothesis)
        premise, hypothesis = floating_inputs(
            self.compute_dtype, premise, hypothesis
        )
        # F runs once per token: (B, T, F) -> (B, T, H), (B, S, F) -> (B, S, H)
        fa = self._attend(premise, training)
        fb = self._attend(hypothesis, training)
        scores = attention_logits("bth,bsh->bts", fa, fb)  # (B, T, S)
        mask = pairwise_mask(premise_mask, hypothesis_mask)  # (B, T, S)
        dtype = self.compute_dtype
        premise_weights = ops.cast(masked_softmax(scores, mask, 2), dtype)
        hypothesis_weights = ops.cast(masked_softmax(scores, mask, 1), dtype)
        premise = ops.cast(premise, self.compute_dtype)
        hypothesis = ops.cast(hypothesis, self.compute_dtype)
        # (B, T, S) x (B, S, F) -> (B, T, F)
        beta = ops.einsum("bts,bsf->btf", premise_weights, hypothesis)
        # (B, T, S) x (B, T, F) -> (B, S, F)
        alpha = ops.einsum("bts,btf->bsf", hypothesis_weights, premise)
        if not return_attention_scores:
            return beta, alpha
        # (B, T, S) -> (B, S, T): rows indexed by hypothesis tokens.
        hypothesis_weights = ops.transpose(hypothesis_weights, (0, 2, 1))
        return beta, alpha, premise_weights, hypothesis_weights

    def _attend(self, x, training):
        return apply_feed_forward(
            self.attend_layers, x, self.dropout, self.seed_generator, training
        )

    def compute_mask(self, *args, **kwargs):
        return None

    def compute_output_spec(
        self,
        premise,
        hypothesis,
        premise_mask=None,
        hypothesis_mask=None,
        return_attention_scores=False,
        training=None,
    ):
        batch, t, width = premise.shape
        s = hypothesis.shape[1]
        dtype = self.compute_dtype
        outputs = (
            keras.KerasTensor((batch, t, width), dtype=dtype),
            keras.KerasTensor((batch, s, width), dtype=dtype),
        )
        if return_attention_scores:
            outputs += (
                keras.KerasTensor((batch, t, s), dtype=dtype),
                keras.KerasTensor((batch, s, t), dtype=dtype),
            )
        return outputs

    def get_config(self):
        config = super().get_config()
        config.update(
            {
                "hidden_dim": self.hidden_dim,
                "num_layers": self.num_layers,
                "activation": keras.activations.serialize(self.activation),
                "dropout": self.dropout,
                "kernel_initializer": keras.initializers.serialize(
                    self.kernel_initializer
                ),
                "bias_initializer": keras.initializers.serialize(
                    self.bias_initializer
                ),
                "seed": self.seed,
            }
        )
        return config


def _check_pair(premise, hypothesis):
    premise_shape = static_shape(premise)
    hypothesis_shape = static_shape(hypothesis)
    check_rank("premise", premise_shape, 3)
    check_rank("hypothesis", hypothesis_shape, 3)
    p, h = premise_shape[0], hypothesis_shape[0]
    if p is not None and h is not None and p != h:
        raise ValueError(
            "`premise` and `hypothesis` must have the same batch size. "
            f"Received: premise with shape {premise_shape}, hypothesis "
            f"with shape {hypothesis_shape}"
        )
