"""ReSAN: the reinforced self-attention network and its sentence-pair heads.

The encoder (`resan_encoder`, module `encoder`) maps token ids to a
sentence vector with forward and backward `ReinforcedSelfAttention` and
`Source2TokenAttention` pooling. The two heads (module `heads`:
`ReSANClassifier` for NLI, `ReSANRelatedness` for SICK relatedness) are
`keras.Model` subclasses whose `compute_loss` (module `pair_model`) adds
the policy-gradient (REINFORCE) loss of the token samplers (module
`policy`) to the supervised loss, so plain `model.fit` trains everything
on tensorflow, jax and torch, through the phases of `TrainingSchedule`
(module `schedule`).
"""

from keras_attention.models.resan.encoder import VARIANTS
from keras_attention.models.resan.encoder import EncoderConfig
from keras_attention.models.resan.encoder import build_encoder
from keras_attention.models.resan.encoder import resan_encoder
from keras_attention.models.resan.encoder import selection_percentage
from keras_attention.models.resan.heads import OBJECTIVES
from keras_attention.models.resan.heads import ReSANClassifier
from keras_attention.models.resan.heads import ReSANRelatedness
from keras_attention.models.resan.heads import relatedness_distribution
from keras_attention.models.resan.heads import relatedness_target
from keras_attention.models.resan.pair_model import ReinforcedPairModel
from keras_attention.models.resan.policy import BASELINES
from keras_attention.models.resan.policy import SAMPLER_VARIABLES
from keras_attention.models.resan.policy import authors_sampler_optimizer
from keras_attention.models.resan.policy import policy_gradient_loss
from keras_attention.models.resan.policy import policy_reward
from keras_attention.models.resan.policy import sampler_inference
from keras_attention.models.resan.policy import with_sampler_optimizer
from keras_attention.models.resan.schedule import TrainingSchedule

__all__ = [
    "BASELINES",
    "EncoderConfig",
    "OBJECTIVES",
    "ReSANClassifier",
    "ReSANRelatedness",
    "ReinforcedPairModel",
    "SAMPLER_VARIABLES",
    "TrainingSchedule",
    "VARIANTS",
    "authors_sampler_optimizer",
    "build_encoder",
    "policy_gradient_loss",
    "policy_reward",
    "relatedness_distribution",
    "relatedness_target",
    "resan_encoder",
    "sampler_inference",
    "selection_percentage",
    "with_sampler_optimizer",
]
