"""`generate`: token ids or strings in, the same kind out.

What `Transformer.generate` and `TransformerLanguageModel.generate` run.
The search is a spec (`decoding.specs`) or one of keras-hub's sampler
names with keras-hub's defaults (`SEARCHES`). Strings need a tokenizer on
the model (`model.tokenizer`, keras-hub's `tokenize` / `detokenize`): one
tokenizer serves sources and targets, as the translation recipe's shared
SentencePiece vocabulary does.

The inputs are padded to the next multiple of 8 tokens (`bucket_width`)
before the search, so a compiled search (kept per model and spec,
`decoding.loop`) is traced once per width bucket, not once per width;
padding does not change a row's tokens, and the outputs are cut back to
the width the unpadded inputs give.
"""

import dataclasses

import numpy as np
from keras import ops

from keras_attention.decoding.sampling import sampling_uniforms
from keras_attention.decoding.searches import compiled_search
from keras_attention.decoding.searches import search as run_search
from keras_attention.decoding.settings import decoder_only
from keras_attention.decoding.settings import strip_special
from keras_attention.decoding.specs import Beam
from keras_attention.decoding.specs import Greedy
from keras_attention.decoding.specs import Sampling
from keras_attention.decoding.specs import Search

# keras-hub's sampler names and defaults (`keras_hub.samplers`):
# `TopKSampler(k=5)`, `TopPSampler(p=0.1)`, `BeamSampler(num_beams=5)`,
# temperature 1; keras-hub's beam search ranks by log-probability alone.
SEARCHES = {
    "greedy": Greedy(),
    "beam": Beam(beam_size=5, alpha=0.0),
    "top_k": Sampling(top_k=5),
    "top_p": Sampling(top_p=0.1),
}
# Inputs are padded to a multiple of this many tokens.
BUCKET = 8


def generate(
    model,
    inputs,
    search="greedy",
    start_id=None,
    end_id=None,
    max_length=None,
    jit_compile=False,
):
    """Decodes `inputs` (sources, or a decoder-only model's prompts) with
    `search`; the arguments and results of the models' `generate`."""
    spec = search_spec(search)
    if max_length is not None:
        spec = dataclasses.replace(spec, max_length=max_length)
    tokenizer = getattr(model, "tokenizer", None)
    strings, single = string_inputs(inputs)
    if strings and tokenizer is None:
        raise ValueError(
            "Strings need a tokenizer: set `model.tokenizer` (a keras-hub "
            "tokenizer), or pass token ids. Received: inputs="
            f"{_short(inputs)}"
        )
    start, end = (
        special_ids(tokenizer) if tokenizer is not None else (None,) * 2
    )
    spec = dataclasses.replace(
        spec,
        start_id=_first(start_id, spec.start_id, start),
        end_id=_first(end_id, spec.end_id, end),
    )
    spec.check_ids()
    if strings:
        rows = [inputs] if single else list(inputs)
        ids = encode(model, tokenizer, rows, spec.rules.end_ids[0])
    else:
        ids = np.asarray(ops.convert_to_numpy(inputs))
        if ids.ndim != 2 or ids.dtype.kind not in "iu":
            raise ValueError(
                "Argument `inputs` must be strings or int token ids of shape "
                "(batch, length), 0 = padding. Received: inputs with shape "
                f"{ids.shape} and dtype {ids.dtype}"
            )
        ids = ids.astype("int32")
    tokens = padded_search(model, ids, spec, jit_compile)
    if not strings:
        return tokens
    end_ids = spec.rules.end_ids
    if tokens.ndim == 3:  # Beam(n_best=True): (B, K, L)
        texts = [decode(tokenizer, row, end_ids) for row in tokens]
    else:
        texts = decode(tokenizer, tokens, end_ids)
    return texts[0] if single else texts


def search_spec(search):
    """The spec `search` names: a spec, or one of `SEARCHES`' names."""
    if isinstance(search, Search):
        return search
    if isinstance(search, str) and search in SEARCHES:
        return SEARCHES[search]
    raise ValueError(
        "Argument `search` must be a keras_attention.decoding.Greedy, "
        f"Sampling or Beam, or one of {sorted(SEARCHES)}. Received: "
        f"search={search!r}"
    )


def padded_search(model, ids, spec, jit_compile):
    """The search's tokens for `ids` `(B, S)` as NumPy int32, run on ids
    padded to `bucket_width`: `(B, W)`, or `(B, K, W)` for the n-best.

    Sampling draws the uniform numbers of the unpadded ids (those of
    `decoding.sample` for them, the same seed giving the same tokens);
    the steps past them, which no row reaches, read `0.5`.
    """
    ids = spec.check_inputs(model, ids)
    batch, width = ops.shape(ids)
    padding = bucket_width(model, spec, width) - width
    padded = ops.pad(ids, [[0, 0], [0, padding]])
    if isinstance(spec, Beam):
        tokens = run_search(model, padded, spec, jit_compile=jit_compile)
        tokens = tokens[0] if spec.n_best else tokens
    elif isinstance(spec, Sampling):
        uniforms = sampling_uniforms(model, spec, ids)
        extra = spec.output_length(model, width + padding)
        extra -= spec.output_length(model, width)
        uniforms = ops.pad(uniforms, [[0, extra], [0, 0]], constant_values=0.5)
        run = compiled_search(model, spec, jit_compile)
        tokens = run(padded, uniforms)[0]
    else:
        tokens = compiled_search(model, spec, jit_compile)(padded)[0]
    tokens = np.asarray(ops.convert_to_numpy(tokens)).astype("int32")
    return tokens[..., : output_width(model, spec, width)]


def bucket_width(model, spec, width):
    """`width` rounded up to a multiple of `BUCKET`, within what the
    model takes (a decoder-only model's prompts leave room for one
    token)."""
    cap = model.max_sequence_length
    if decoder_only(model):
        if spec.max_length is not None:
            cap = min(cap, spec.max_length)
        cap -= 1
    return max(width, min(-(-width // BUCKET) * BUCKET, cap))


def output_width(model, spec, width):
    """Width of the search's output for inputs of `width` tokens."""
    length = spec.output_length(model, width)
    if decoder_only(model):
        return min(max(spec.max_extra_length, 1), length)
    return length


def string_inputs(inputs):
    """`(strings, single)`: whether `inputs` is text, and one string."""
    if isinstance(inputs, (str, bytes)):
        return True, True
    if isinstance(inputs, (list, tuple)) and inputs:
        if all(isinstance(x, (str, bytes)) for x in inputs):
            return True, False
    if isinstance(inputs, np.ndarray) and inputs.dtype.kind in "USO":
        return True, inputs.ndim == 0
    return False, False


def special_ids(tokenizer):
    """`(start id, end id)` of a keras-hub tokenizer: its
    `start_token_id` / `end_token_id`, else the ids of SentencePiece's
    `<s>` / `</s>` (the translation recipe's start and end ids); `None`
    where it has none."""
    found = []
    for attribute, piece in (
        ("start_token_id", "<s>"),
        ("end_token_id", "</s>"),
    ):
        value = getattr(tokenizer, attribute, None)
        if value is None:
            try:
                value = int(tokenizer.token_to_id(piece))
            except Exception:  # no such piece in this tokenizer
                value = None
        found.append(value)
    return tuple(found)


def encode(model, tokenizer, strings, end_id):
    """Strings -> int32 ids `(B, S)`, right-padded with 0. Sources end
    with `end_id` and are cut to `max_sequence_length` keeping it;
    prompts are the tokens alone."""
    rows = [_ints(row) for row in _rows(tokenizer.tokenize(list(strings)))]
    if not decoder_only(model):
        limit = model.max_sequence_length
        rows = [row[: limit - 1] + [end_id] for row in rows]
    width = max([len(row) for row in rows] + [1])
    ids = np.zeros((len(rows), width), "int32")
    for i, row in enumerate(rows):
        ids[i, : len(row)] = row
    return ids


def decode(tokenizer, tokens, end_ids):
    """Token ids `(B, L)` -> `B` strings, each cut at its end id."""
    rows = strip_special(tokens, list(end_ids))
    texts = [""] * len(rows)
    filled = [i for i, row in enumerate(rows) if row]
    if filled:
        decoded = tokenizer.detokenize([rows[i] for i in filled])
        for i, text in zip(filled, _rows(decoded)):
            texts[i] = _as_str(text)
    return texts


def _rows(values):
    if hasattr(values, "to_list"):  # tf.RaggedTensor
        return values.to_list()
    if hasattr(values, "numpy"):
        return values.numpy().tolist()
    if isinstance(values, np.ndarray):
        return values.tolist()
    return list(values)


def _ints(row):
    return [int(i) for i in _rows(row)]


def _as_str(text):
    if isinstance(text, bytes):
        return text.decode("utf-8")
    return str(text)


def _first(*values):
    for value in values:
        if value is not None:
            return value
    return None


def _short(inputs):
    text = repr(inputs)
    return text if len(text) <= 80 else text[:77] + "..."
