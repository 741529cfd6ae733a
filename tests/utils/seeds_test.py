import pytest

from keras_attention.utils.seeds import sub_seed


def test_sub_seed_is_deterministic_and_distinct_per_name():
    names = [("dropout",), ("sampler",), ("block", 0), ("block", 1)]
    seeds = [sub_seed(7, *n) for n in names]
    assert seeds == [sub_seed(7, *n) for n in names]
    assert len(set(seeds)) == len(seeds)
    assert sub_seed(7, "dropout") != sub_seed(8, "dropout")
    assert all(0 <= s < 2**31 - 1 for s in seeds)


def test_sub_seed_keeps_none_and_names_bad_seeds():
    assert sub_seed(None, "dropout") is None
    with pytest.raises(ValueError, match="seed=1.5"):
        sub_seed(1.5, "dropout")
    with pytest.raises(ValueError, match="names"):
        sub_seed(3)
