"""keras-hub's names for keras_attention's layers.

`keras_hub.layers.TransformerEncoder`, `TransformerDecoder`,
`TokenAndPositionEmbedding`, `PositionEmbedding` and
`SinePositionEncoding` under the same paths, with keras-hub 0.32's
signatures, defaults and return structures: after

```python
from keras_attention.compat import keras_hub
```

`keras_hub.layers.TransformerDecoder(intermediate_dim, num_heads, ...)`
builds a `keras_attention.layers.TransformerDecoderBlock`. The differences
that stay are listed in `docs/usage.md` ("Drop-in for keras-hub").
"""

from keras_attention.compat.keras_hub import layers

__all__ = ["layers"]
