"""SavedModels for TensorFlow Serving: text in, text or predictions out;
token ids in and out for a language model.

Each exporter writes `export_dir/<version>/` (default version 1, the
layout TensorFlow Serving watches), with tokenization inside the graph
where the model has a tokenizer:

- `export_translator`: SentencePiece, beam search (`serving_default`) and
  greedy search (`greedy`) with the decoder caches, detokenization;
  `inputs` -> `outputs`, `scores`.
- `export_classifier`: NLI; `premise`, `hypothesis` -> `probabilities`,
  `label`.
- `export_regressor`: relatedness; `sentence_a`, `sentence_b` -> `score`.
- `export_language_model`: a decoder-only language model, token ids in
  and out (no tokenizer): greedy search (`serving_default`) and seeded
  sampling (`sample`); `token_ids` -> `token_ids`, `lengths`, `scores`.

They accept a run folder written by the matching application's
`train.py` (the language model: its `.keras` file), or a model object
with its tokenizer or vocabulary. Models trained on jax or torch are
exported through a tensorflow-backend subprocess that reloads their
`.keras` file (see `keras_attention.export.archive`). `graph_op_names`
lists the ops of an exported graph.

This subpackage needs TensorFlow (the `tensorflow` extra:
`pip install 'keras-attention-layers[tensorflow]'`; without it, importing
it raises an `ImportError` that says so), and `import keras_attention`
does not import it. ONNX and LiteRT files of the forward models come from
Keras's own `model.export(path, format="onnx" | "litert")`, on the
backends listed in the documentation's export page.
"""

from keras_attention.export.inspection import graph_op_names
from keras_attention.export.inspection import nonstandard_op_names
from keras_attention.export.inspection import signature_summary
from keras_attention.export.language_model import export_language_model
from keras_attention.export.pair_models import export_classifier
from keras_attention.export.pair_models import export_regressor
from keras_attention.export.translator import export_translator

__all__ = [
    "export_classifier",
    "export_language_model",
    "export_regressor",
    "export_translator",
    "graph_op_names",
    "nonstandard_op_names",
    "signature_summary",
]
