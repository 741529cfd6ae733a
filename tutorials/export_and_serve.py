"""
Title: Export and serve: text in, text out with TensorFlow Serving
Author: keras_attention contributors
Date created: 2026/11/30
Last modified: 2026/11/30
Description: Export the translator, the NLI classifier and the relatedness model as SavedModels with tokenization and beam search inside the graph, inspect them, call them from a process that has only TensorFlow, and time serving against Python decoding.
Accelerator: None
"""

"""
## Introduction

TensorFlow Serving loads a SavedModel in C++: no Python, no Keras, no
`keras_attention`. Whatever the model needs between the raw request and
the answer must therefore be in the graph: the tokenizer, the vocabulary,
the decoding loop, the detokenizer. `keras_attention.export` writes such
SavedModels:

- `export_translator`: raw sentences in (`inputs`), translations and
  length-penalised log-probabilities out (`outputs`, `scores`), with
  SentencePiece (TensorFlow Text ops), beam search with the decoder caches
  (`serving_default`) and greedy search (`greedy`).
- `export_classifier`: `premise`, `hypothesis` in; `probabilities`,
  `label` out.
- `export_regressor`: `sentence_a`, `sentence_b` in; `score` (1 to 5) out.

This walkthrough exports tiny, untrained models so that it runs in
seconds: the outputs are meaningless, the plumbing is the real one. With
trained runs, use the applications' scripts
(`applications/translation/export.py --run-dir runs/translation ...`).
It needs the tensorflow backend only for speed: models trained on jax or
torch are exported through a tensorflow subprocess that reloads their
`.keras` file.

Figures go to `--output-dir` (default `tutorial_outputs/`).
"""

import os

# TensorFlow's C++ start-up log (CUDA probes, CPU features) is noise to a
# user; a TF_CPP_MIN_LOG_LEVEL set by the user wins.
os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "3")

import argparse
import base64
import json
import subprocess
import sys
import tempfile
import textwrap
import time

import keras
import matplotlib
import numpy as np

matplotlib.use("Agg")
import matplotlib.pyplot as plt

from keras_attention import decoding
from keras_attention import export
from keras_attention import models
from keras_attention.data import build_vocabulary
from keras_attention.data import translation

parser = argparse.ArgumentParser()
parser.add_argument("--output-dir", default="tutorial_outputs")
args, _ = parser.parse_known_args()
os.makedirs(args.output_dir, exist_ok=True)
keras.utils.set_random_seed(0)
workdir = tempfile.mkdtemp(prefix="export_and_serve_")

"""
## Three tiny models

A SentencePiece tokenizer trained on a handful of sentences, a one-layer
Transformer, and the two sentence-pair models with a word vocabulary.
"""

corpus = [
    "a man is riding a horse",
    "two dogs are running in the park",
    "a woman is playing the guitar",
    "ein Mann reitet ein Pferd",
    "zwei Hunde rennen im Park",
    "eine Frau spielt Gitarre",
]
tokenizer = translation.train_tokenizer(corpus * 4, vocabulary_size=40)
translator = models.Transformer(
    vocabulary_size=40,
    num_layers=1,
    hidden_dim=16,
    num_heads=2,
    intermediate_dim=32,
    max_sequence_length=16,
)
vocabulary = build_vocabulary(corpus)
classifier = models.decomposable_attention_model(
    len(vocabulary), embedding_dim=8, hidden_dim=8, seed=0
)
regressor = models.ReSANRelatedness(
    len(vocabulary), embedding_dim=8, hidden_dim=4, seed=0
)
print("vocabulary:", vocabulary)

"""
## Export

Each call writes `EXPORT_DIR/1/`, the versioned layout TensorFlow Serving
watches (`--version` picks another number; an existing version is never
overwritten).
"""

start = time.perf_counter()
paths = {
    "translator": export.export_translator(
        translator, os.path.join(workdir, "translator"), tokenizer=tokenizer
    ),
    "classifier": export.export_classifier(
        classifier,
        os.path.join(workdir, "classifier"),
        vocabulary=vocabulary,
        max_length=50,
    ),
    "regressor": export.export_regressor(
        regressor,
        os.path.join(workdir, "regressor"),
        vocabulary=vocabulary,
        max_length=50,
    ),
}
print(f"exported 3 models in {time.perf_counter() - start:.0f} s")

"""
## What is inside

`signature_summary` reads the signatures from `saved_model.pb` (what
`saved_model_cli show --dir PATH --all` prints), and `graph_op_names`
lists every op in the graph and its functions. `nonstandard_op_names` is
empty when every op is core TensorFlow (`tf.raw_ops`) or TensorFlow Text,
which is what a TF Serving build with the TF Text ops can run.
"""

for name, path in paths.items():
    print(name)
    for signature, spec in export.signature_summary(path).items():
        print(f"  {signature}: {spec}")
    ops = export.graph_op_names(path)
    print(f"  {len(ops)} op types; not core TF or TF Text:", end=" ")
    print(export.nonstandard_op_names(path))
assert all(not export.nonstandard_op_names(p) for p in paths.values())

"""
## Calling the models from TensorFlow alone

A separate Python process imports only `tensorflow` and `tensorflow_text`
(which registers the SentencePiece ops), loads the SavedModels and calls
their signatures: what TF Serving does. The batch mixes an empty string,
non-ASCII text and bytes that are not valid UTF-8 (replaced by U+FFFD):
every row gets a defined answer.
"""

client = textwrap.dedent(
    """
    import json, sys
    import tensorflow as tf
    import tensorflow_text  # registers the TF Text ops

    paths = json.loads(sys.argv[1])
    rows = [b"a man is riding", b"", "Grüße, 東京".encode(), b"bad \\xff"]
    translator = tf.saved_model.load(paths["translator"])
    out = translator.signatures["serving_default"](inputs=tf.constant(rows))
    print("translator:", out["outputs"].numpy(), out["scores"].numpy())
    greedy = translator.signatures["greedy"](inputs=tf.constant(rows))
    print("greedy:", greedy["outputs"].numpy())
    classifier = tf.saved_model.load(paths["classifier"])
    out = classifier.signatures["serving_default"](
        premise=tf.constant(rows), hypothesis=tf.constant(rows[::-1])
    )
    print("classifier:", out["label"].numpy(), out["probabilities"].numpy())
    regressor = tf.saved_model.load(paths["regressor"])
    out = regressor.signatures["serving_default"](
        sentence_a=tf.constant(rows), sentence_b=tf.constant(rows[::-1])
    )
    print("regressor:", out["score"].numpy())
    print("keras_attention loaded:", "keras_attention" in sys.modules)
    """
)
client_path = os.path.join(workdir, "client.py")
with open(client_path, "w") as f:
    f.write(client)
result = subprocess.run(
    [sys.executable, client_path, json.dumps(paths)],
    capture_output=True,
    text=True,
)
print(result.stdout)
assert result.returncode == 0, result.stderr[-2000:]
assert "keras_attention loaded: False" in result.stdout

"""
## The TF Serving REST request

With the export folder mounted into the `tensorflow/serving` container
(a build that includes the TF Text ops; see the Serving section of
`applications/translation/README.md`), a request to
`POST http://localhost:8501/v1/models/translator:predict` carries the
signature name and the inputs. Bytes that are not valid UTF-8 travel
base64-encoded as `{"b64": ...}`.
"""

request = {
    "signature_name": "serving_default",
    "inputs": {
        "inputs": [
            "a man is riding",
            {"b64": base64.b64encode(b"bad \xff").decode()},
        ]
    },
}
print(json.dumps(request, indent=2))
pair_request = {
    "signature_name": "serving_default",
    "instances": [
        {"premise": "a man is riding", "hypothesis": "a dog runs"},
    ],
}
print(json.dumps(pair_request, indent=2))

"""
## Serving against Python decoding

The same translator decoded from Python (`decoding.translate`: the
tokenizer in Python, then `keras_attention.decoding.beam_search`, a traced
`tf.function`) and from the SavedModel, beam 4, batch 1 and batch 6,
alternating. On a model this small both take a few milliseconds; the
benchmark `benchmarks/serving_latency.py` times a trained one.
"""

import tensorflow as tf  # noqa: E402

serve = tf.saved_model.load(paths["translator"]).signatures["serving_default"]


def serving(batch):
    return serve(inputs=tf.constant(batch))["outputs"].numpy()


def python(batch):
    return decoding.translate(
        translator, tokenizer, batch, beam_size=4, batch_size=len(batch)
    )


timings = {}
for size, calls in (("batch 1", [[s] for s in corpus]), ("batch 6", [corpus])):
    for side in (serving, python):
        for batch in calls:  # warm-up: traces every shape
            side(batch)
    times = {"serving": [], "python": []}
    for _ in range(5):
        for name, side in (("serving", serving), ("python", python)):
            start = time.perf_counter()
            for batch in calls:
                side(batch)
            times[name].append(1000 * (time.perf_counter() - start) / 6)
    timings[size] = {k: float(np.median(v)) for k, v in times.items()}
    print(size, {k: f"{v:.1f} ms/sentence" for k, v in timings[size].items()})

same = [t.decode() for t in serving(corpus)] == python(corpus)
print("identical translations:", same)
_ = decoding  # the search both sides run

fig, axis = plt.subplots(figsize=(5, 3))
positions = np.arange(len(timings))
for offset, name in ((-0.2, "serving"), (0.2, "python")):
    axis.bar(
        positions + offset,
        [timings[size][name] for size in timings],
        width=0.4,
        label=name,
    )
axis.set_xticks(positions, list(timings))
axis.set_ylabel("ms per sentence (median)")
axis.set_title("Tiny translator, beam 4, tensorflow")
axis.legend()
fig.tight_layout()
path = os.path.join(args.output_dir, "serving_latency.png")
fig.savefig(path, dpi=100)
print("wrote", path)

"""
## Summary

- One call per model writes a versioned SavedModel with tokenization,
  search and detokenization inside; only core TensorFlow and TensorFlow
  Text ops.
- A process with TensorFlow alone serves it; empty, long, non-ASCII and
  invalid UTF-8 rows get defined answers without touching the other rows.
- TF Serving takes the same inputs as JSON over REST.
"""
