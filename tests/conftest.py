import keras
import pytest


@pytest.fixture(autouse=True)
def fixed_seed():
    keras.utils.set_random_seed(1337)
    yield
