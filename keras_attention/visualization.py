"""Plots of attention weights (matplotlib, imported when first needed).

- `alignment_weights`: the soft alignment of a decomposable attention
  model for a batch of sentence pairs.
- `plot_alignment`: a premise x hypothesis heatmap of such weights.
- `plot_reinforced_attention`: the heads and dependents a
  `ReinforcedSelfAttention` layer selected in a sentence, and its soft
  attention matrix among them.
"""

import numpy as np
from keras import ops

from keras_attention.models.decomposable_attention import ALIGNMENT_LAYER
from keras_attention.utils.optional import import_optional


def alignment_weights(model, premise, hypothesis, layer_name=ALIGNMENT_LAYER):
    """Reads the premise-to-hypothesis alignment weights out of a model.

    Args:
        model: a functional model with a `SoftAlignment` layer called with
            `return_attention_scores=True`, such as
            `keras_attention.models.decomposable_attention_model`.
        premise: int array `(B, T)` of token ids (0 = padding).
        hypothesis: int array `(B, S)` of token ids.
        layer_name: name of the `SoftAlignment` layer. Defaults to
            `"soft_alignment"`.

    Returns:
        A float NumPy array `(B, T, S)`: row `i` holds the weights of
        premise token `i` over the hypothesis tokens (zero at padding).

    Raises:
        ValueError: if the model has no such layer, or the layer does not
            output its weights.
    """
    import keras

    try:
        layer = model.get_layer(layer_name)
    except ValueError:
        raise ValueError(
            f"The model has no layer named {layer_name!r}. Received: "
            f"layer_name={layer_name!r}"
        ) from None
    outputs = layer.output
    if not isinstance(outputs, (list, tuple)) or len(outputs) < 3:
        raise ValueError(
            f"Layer {layer_name!r} does not output its attention weights; "
            "call it with return_attention_scores=True when building the "
            "model."
        )
    probe = keras.Model(model.inputs, outputs[2])
    weights = probe.predict_on_batch(
        {"premise": np.asarray(premise), "hypothesis": np.asarray(hypothesis)}
    )
    return np.asarray(ops.convert_to_numpy(weights))


def plot_alignment(
    weights,
    premise_tokens,
    hypothesis_tokens,
    ax=None,
    title=None,
    cmap="Blues",
    annotate=True,
):
    """Draws an alignment matrix as a heatmap.

    Rows are premise tokens, columns hypothesis tokens; the matrix is cut
    to the token lists' lengths, so padded positions are not drawn.

    Args:
        weights: array `(T, S)` (or `(1, T, S)`), for example one row of
            `alignment_weights`.
        premise_tokens: list of the premise's tokens (the row labels).
        hypothesis_tokens: list of the hypothesis's tokens (the column
            labels).
        ax: optional matplotlib `Axes` to draw into. Defaults to a new
            figure.
        title: optional title.
        cmap: matplotlib colormap name. Defaults to `"Blues"`.
        annotate: bool. Write each weight into its cell. Defaults to
            `True`.

    Returns:
        The matplotlib `Axes`.

    Raises:
        ValueError: if `weights` is not 2-D (after dropping a batch of one)
            or is smaller than the token lists.
    """
    matplotlib = import_optional("matplotlib", "applications", "Plots")
    if ax is None:
        matplotlib.use("Agg", force=False)
    plt = import_optional("matplotlib.pyplot", "applications", "Plots")

    weights = np.asarray(ops.convert_to_numpy(weights), dtype="float32")
    if weights.ndim == 3 and weights.shape[0] == 1:
        weights = weights[0]
    rows, cols = len(premise_tokens), len(hypothesis_tokens)
    if weights.ndim != 2 or weights.shape[0] < rows or weights.shape[1] < cols:
        raise ValueError(
            "Argument `weights` must be a (T, S) matrix with at least "
            f"{rows} rows and {cols} columns (the token counts). Received: "
            f"weights with shape {weights.shape}"
        )
    weights = weights[:rows, :cols]
    if ax is None:
        _, ax = plt.subplots(figsize=(1.0 + 0.55 * cols, 1.0 + 0.45 * rows))
    image = ax.imshow(weights, cmap=cmap, vmin=0.0, vmax=1.0, aspect="auto")
    ax.set_xticks(range(cols), labels=list(hypothesis_tokens), rotation=60)
    ax.set_yticks(range(rows), labels=list(premise_tokens))
    ax.set_xlabel("hypothesis")
    ax.set_ylabel("premise")
    if annotate:
        for i in range(rows):
            for j in range(cols):
                value = weights[i, j]
                ax.text(
                    j,
                    i,
                    f"{value:.2f}",
                    ha="center",
                    va="center",
                    fontsize=7,
                    color="white" if value > 0.5 else "black",
                )
    if title:
        ax.set_title(title)
    ax.figure.colorbar(image, ax=ax, fraction=0.046, pad=0.04)
    ax.figure.tight_layout()
    return ax


def plot_reinforced_attention(
    layer,
    inputs,
    tokens,
    mask=None,
    title=None,
    heads=None,
    dependents=None,
):
    """Draws what a `ReinforcedSelfAttention` layer does on one sentence.

    The top panel marks the tokens selected as heads and as dependents (by
    the layer's own samplers under their inference rule, so the figure is
    reproducible, or given as `heads` and `dependents`); the bottom panel
    is the soft attention matrix among them, averaged over features (row =
    head, column = dependent), as in Figure 2 of the ReSAN paper.

    Args:
        layer: a built `keras_attention.layers.ReinforcedSelfAttention`
            without `block_size`.
        inputs: array `(1, T, F)` or `(T, F)`: the sentence's token
            representations as the layer sees them.
        tokens: list of the sentence's tokens (at most `T`).
        mask: optional boolean array `(1, T)` or `(T,)`.
        title: optional figure title.
        heads, dependents: optional boolean arrays `(1, T)` or `(T,)`:
            selections made outside the layer (the ReSAN encoder's shared
            samplers, for a layer built with `use_samplers=False`). Pass
            both or neither.

    Returns:
        The matplotlib `Figure`.

    Raises:
        ValueError: if `tokens` is longer than the sentence.
    """
    matplotlib = import_optional("matplotlib", "applications", "Plots")
    matplotlib.use("Agg", force=False)
    plt = import_optional("matplotlib.pyplot", "applications", "Plots")

    inputs = np.asarray(ops.convert_to_numpy(inputs))
    if inputs.ndim == 2:
        inputs = inputs[None]
    if mask is not None:
        mask = np.asarray(mask, bool).reshape(1, -1)
    if len(tokens) > inputs.shape[1]:
        raise ValueError(
            f"Argument `tokens` has {len(tokens)} tokens but the sentence "
            f"has {inputs.shape[1]} positions. Received: tokens={tokens!r}"
        )
    if heads is not None:
        heads = np.asarray(ops.convert_to_numpy(heads), bool).reshape(1, -1)
    if dependents is not None:
        dependents = np.asarray(ops.convert_to_numpy(dependents), bool).reshape(
            1, -1
        )
    _, heads, dependents, _, scores = layer(
        inputs,
        mask=mask,
        heads=heads,
        dependents=dependents,
        return_selections=True,
        return_attention_scores=True,
    )
    n = len(tokens)
    chosen = np.stack(
        [
            np.asarray(ops.convert_to_numpy(heads))[0, :n],
            np.asarray(ops.convert_to_numpy(dependents))[0, :n],
        ]
    ).astype("float32")
    scores = np.asarray(ops.convert_to_numpy(scores), "float32")[0, :n, :n]
    figure, (top, bottom) = plt.subplots(
        2,
        1,
        figsize=(1.5 + 0.5 * n, 2.5 + 0.45 * n),
        gridspec_kw={"height_ratios": [2, n]},
    )
    top.imshow(chosen, cmap="Greens", vmin=0.0, vmax=1.0, aspect="auto")
    top.set_yticks([0, 1], labels=["head", "dependent"])
    top.set_xticks(range(n), labels=list(tokens), rotation=60)
    top.set_title("selected by the samplers")
    image = bottom.imshow(scores, cmap="Blues", vmin=0.0, aspect="auto")
    bottom.set_xticks(range(n), labels=list(tokens), rotation=60)
    bottom.set_yticks(range(n), labels=list(tokens))
    bottom.set_xlabel("dependent")
    bottom.set_ylabel("head")
    bottom.set_title("soft attention (mean over features)")
    figure.colorbar(image, ax=bottom, fraction=0.046, pad=0.04)
    if title:
        figure.suptitle(title)
    figure.tight_layout()
    return figure
