"""Dataset location and loaders for the reference applications.

Data files are found through, in this order, an explicit `data_dir`
argument (applications: `--data-dir`), the environment variable
`KERAS_ATTENTION_DATA`, or a download into the Keras cache from the
canonical URL (see `get_file`). Local files are checked against the sha256
values in `KNOWN_FILES`.

The loaders return plain Python lists and NumPy arrays:

- `load_sick`: SICK relatedness scores and entailment judgments.
- `load_snli`: SNLI 1.0 premise / hypothesis / label triples.
- `load_glove`: GloVe 6B 50d vectors (staged subset); `load_vectors`: a
  staged vectors file by name (`VECTORS`) or any GloVe-format file, and
  `embedding_matrix`, which aligns vectors to a vocabulary.
- `load_snli_training`: SNLI training pairs by name (the 9,987-pair
  subset, the first 100,000 lines) or from any official-format file.
- `load_nli_splits`, `load_relatedness_splits` and `prepare_pairs`
  (`keras_attention.data.pairs`): the sentence-pair tasks' splits, and
  their vocabulary, embeddings and padded ids.
- `load_multi30k`: Multi30k English-German sentence pairs.

`tokenize`, `build_vocabulary` and `word_ids` (`keras_attention.data.words`)
take text to the padded ids of the word-level models; `LABELS` and
`encode_labels` map the NLI classes to ids; `BucketedBatches` feeds
padded id arrays to `model.fit` in length-bucketed batches
(`predict_in_buckets` predicts on them, in the examples' order), and
`make_batches` (`make_dataset`, `epoch_stream`) builds them for translation
pairs, with the translation buckets and a token budget per batch;
`SampledBatches` draws a new subword segmentation of every pair each
epoch (`sample_sentences`: subword regularization).

Data a user can fix (a missing, empty or malformed file, a split with no
usable pair) raises `DataError`, a `ValueError` (`DataFileNotFoundError`
for a missing file or folder, also a `FileNotFoundError`), with one line
naming the file and what was expected.
"""

from keras_attention.data.batching import BucketedBatches
from keras_attention.data.batching import padded_lengths
from keras_attention.data.batching import predict_in_buckets
from keras_attention.data.checksums import KNOWN_FILES
from keras_attention.data.checksums import KnownFile
from keras_attention.data.errors import DataError
from keras_attention.data.errors import DataFileNotFoundError
from keras_attention.data.glove import VECTORS
from keras_attention.data.glove import distinct_vectors
from keras_attention.data.glove import embedding_matrix
from keras_attention.data.glove import load_glove
from keras_attention.data.glove import load_vectors
from keras_attention.data.glove import read_glove_file
from keras_attention.data.multi30k import load_multi30k
from keras_attention.data.multi30k import read_parallel
from keras_attention.data.pairs import NLI_INPUTS
from keras_attention.data.pairs import RELATEDNESS_INPUTS
from keras_attention.data.pairs import PairData
from keras_attention.data.pairs import first_rows
from keras_attention.data.pairs import load_nli_splits
from keras_attention.data.pairs import load_relatedness_splits
from keras_attention.data.pairs import pair_vocabulary
from keras_attention.data.pairs import prepare_pairs
from keras_attention.data.resolver import ENV_VAR
from keras_attention.data.resolver import get_data_dir
from keras_attention.data.resolver import get_file
from keras_attention.data.resolver import read_lines
from keras_attention.data.sick import load_sick
from keras_attention.data.sick import read_sick_file
from keras_attention.data.snli import LABELS
from keras_attention.data.snli import encode_labels
from keras_attention.data.snli import load_snli
from keras_attention.data.snli import load_snli_training
from keras_attention.data.snli import read_snli_jsonl
from keras_attention.data.snli import read_snli_tokenized
from keras_attention.data.snli import snli_evaluation_source
from keras_attention.data.translation import SampledBatches
from keras_attention.data.translation import check_tokenizer_matches
from keras_attention.data.translation import decode_ids
from keras_attention.data.translation import encode_sentences
from keras_attention.data.translation import epoch_stream
from keras_attention.data.translation import load_tokenizer
from keras_attention.data.translation import make_batches
from keras_attention.data.translation import make_dataset
from keras_attention.data.translation import sample_sentences
from keras_attention.data.translation import tokenizer_fingerprint
from keras_attention.data.translation import train_tokenizer
from keras_attention.data.words import PAD_ID
from keras_attention.data.words import UNK_ID
from keras_attention.data.words import WordTokenizer
from keras_attention.data.words import add_pretrained_words
from keras_attention.data.words import build_vocabulary
from keras_attention.data.words import tokenize
from keras_attention.data.words import vocabulary_index
from keras_attention.data.words import word_ids

__all__ = [
    "BucketedBatches",
    "DataError",
    "DataFileNotFoundError",
    "NLI_INPUTS",
    "PairData",
    "RELATEDNESS_INPUTS",
    "VECTORS",
    "ENV_VAR",
    "KNOWN_FILES",
    "KnownFile",
    "LABELS",
    "PAD_ID",
    "UNK_ID",
    "WordTokenizer",
    "add_pretrained_words",
    "build_vocabulary",
    "distinct_vectors",
    "embedding_matrix",
    "encode_labels",
    "first_rows",
    "get_data_dir",
    "get_file",
    "load_glove",
    "load_nli_splits",
    "load_relatedness_splits",
    "load_multi30k",
    "load_sick",
    "load_snli",
    "load_snli_training",
    "load_vectors",
    "pair_vocabulary",
    "prepare_pairs",
    "padded_lengths",
    "predict_in_buckets",
    "read_glove_file",
    "read_lines",
    "read_parallel",
    "read_sick_file",
    "read_snli_jsonl",
    "read_snli_tokenized",
    "snli_evaluation_source",
    "tokenize",
    "check_tokenizer_matches",
    "decode_ids",
    "encode_sentences",
    "epoch_stream",
    "load_tokenizer",
    "make_batches",
    "make_dataset",
    "sample_sentences",
    "SampledBatches",
    "tokenizer_fingerprint",
    "train_tokenizer",
    "vocabulary_index",
    "word_ids",
]


def __getattr__(name):
    # `translate` moved to `keras_attention.decoding` in 0.2.0; the data
    # package imports neither models nor decoding.
    if name == "translate":
        raise AttributeError(
            f"`{__name__}.translate` moved to "
            "`keras_attention.decoding.translate` in 0.2.0 (same "
            "arguments)."
        )
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
