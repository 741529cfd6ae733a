"""Other libraries' names for keras_attention's layers.

`keras_attention.compat.keras_hub` mirrors `keras_hub`: code written for
keras-hub's layers runs on ours when its import line alone changes,

```python
import keras_hub                                 # before
from keras_attention.compat import keras_hub     # after
```

`keras_attention.layers` keeps one name per concept; the other spellings
live here.
"""
