"""Functional-API model builders: `from keras_attention import models`."""

from keras_attention.models.bag_of_words import bag_of_words_model
from keras_attention.models.decomposable_attention import (
    decomposable_attention_model,
)
from keras_attention.models.resan import ReSANClassifier
from keras_attention.models.resan import ReSANRelatedness
from keras_attention.models.resan import relatedness_target
from keras_attention.models.resan import resan_encoder
from keras_attention.models.transformer import Transformer
from keras_attention.models.transformer_language_model import (
    TransformerLanguageModel,
)

__all__ = [
    "ReSANClassifier",
    "ReSANRelatedness",
    "relatedness_target",
    "resan_encoder",
    "Transformer",
    "TransformerLanguageModel",
    "bag_of_words_model",
    "decomposable_attention_model",
]
