"""The README's keras-hub snippet runs with either import line."""

import pathlib
import re

import numpy as np
import pytest

README = pathlib.Path(__file__).parents[1] / "README.md"
OURS = "from keras_attention.compat import keras_hub  # was: import keras_hub"
THEIRS = "import keras_hub"


def keras_hub_snippet():
    text = README.read_text()
    blocks = re.findall(r"```python\n(.*?)```", text, flags=re.DOTALL)
    found = [block for block in blocks if OURS in block]
    assert len(found) == 1, "README.md must hold one keras-hub snippet"
    return found[0]


@pytest.mark.parametrize("import_line", [OURS, THEIRS], ids=["ours", "theirs"])
def test_keras_hub_snippet_trains_and_generates(import_line, tmp_path):
    # The same code on our layers and on keras-hub's: only the import line
    # differs.
    code = keras_hub_snippet().replace(OURS, import_line)
    assert code.count(import_line) == 1
    namespace = {"__name__": "readme_snippet"}
    exec(compile(code, str(README), "exec"), namespace)
    origin = namespace["keras_hub"].layers.TransformerDecoder.__module__
    expected = "keras_attention" if import_line == OURS else "keras_hub"
    assert origin.startswith(expected), origin
    generated = namespace["generated"][:, :11]
    assert generated.shape == (2, 11)
    np.testing.assert_array_equal(generated[:, :3], [[5, 6, 7], [30, 31, 32]])
    # Training ran and moved the loss down from its first epoch.
    losses = namespace["lm"].history.history["loss"]
    assert np.isfinite(losses).all() and losses[-1] < losses[0]
