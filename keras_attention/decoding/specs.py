"""Each search as a named value: `Greedy`, `Sampling` and `Beam`.

A spec holds everything that decides a search's tokens: the start and end
ids, the length limits, the rules (`decoding.rules`) and the search's own
parameters. Specs are frozen dataclasses, checked when they are made
(a bad value raises a `ValueError` naming it), hashable (a compiled search
is kept per model and spec, `decoding.loop`) and comparable:

>>> from keras_attention.decoding import Beam, Greedy, Sampling
>>> Greedy(end_id=[2, 3]) == Greedy(end_id=(2, 3))  # a list is kept as a tuple
True
>>> spec = Sampling(top_k=5, seed=3)
>>> spec.temperature, spec.top_p
(1.0, None)
>>> Beam(beam_size=5).as_greedy()
Greedy(start_id=None, end_id=None, max_extra_length=50, max_length=None, \
min_length=0, no_repeat_ngram_size=0, use_cache=True, prefill=True)

`start_id` and `end_id` may be left `None` in a spec that a model's
`generate` completes (from its tokenizer or its own arguments, see
`with_ids`); a search refuses a spec without them.
"""

import dataclasses
import inspect
import numbers

from keras_attention.decoding.rules import Rules
from keras_attention.decoding.rules import make_rules
from keras_attention.decoding.settings import check_sources
from keras_attention.utils.validation import check_non_negative_int
from keras_attention.utils.validation import check_positive_int


@dataclasses.dataclass(frozen=True, kw_only=True)
class Search:
    """What every search shares.

    Args:
        start_id: int or `None`. First decoder input token.
        end_id: int, a list of ints, or `None`: the tokens that end a
            sentence (the length limit forces the first). A list is kept as
            a tuple.
        max_extra_length: int. A sentence is forced to end after
            `source_length + max_extra_length` tokens (for a decoder-only
            model, a continuation after `max_extra_length`). Defaults to
            `50`.
        max_length: int or `None`. Cap on output tokens. Defaults to the
            model's `max_sequence_length`.
        min_length: int. Tokens a sentence has at least before its end
            (the prompt not counted). Defaults to `0`.
        no_repeat_ngram_size: int. If `n > 0`, no n-gram of `n` tokens
            occurs twice in a row's tokens (prompt included). Defaults to
            `0`.
        use_cache: bool. Decode one token per step with the decoder caches
            (`True`), or rerun the whole decoder at every step (`False`;
            the same tokens, much slower). Defaults to `True`.
        prefill: bool. Feed a decoder-only model's prompts in one call
            that fills the cache (`True`), or one token per step (`False`;
            the same tokens). Defaults to `True`.
    """

    start_id: int | None = None
    end_id: int | tuple[int, ...] | None = None
    max_extra_length: int = 50
    max_length: int | None = None
    min_length: int = 0
    no_repeat_ngram_size: int = 0
    use_cache: bool = True
    prefill: bool = True

    def __post_init__(self):
        if self.start_id is not None:
            check_non_negative_int("start_id", self.start_id)
        if self.end_id is not None:
            end_ids = make_rules(self.end_id).end_ids
            if not isinstance(self.end_id, int):
                # A list is not hashable; a tuple is.
                object.__setattr__(self, "end_id", end_ids)
        check_non_negative_int("max_extra_length", self.max_extra_length)
        check_positive_int("max_length", self.max_length, allow_none=True)
        check_non_negative_int("min_length", self.min_length)
        check_non_negative_int(
            "no_repeat_ngram_size", self.no_repeat_ngram_size
        )
        for name in ("use_cache", "prefill"):
            check_bool(name, getattr(self, name))

    @property
    def rules(self):
        """The `decoding.rules.Rules` of this search."""
        self.check_ids()
        return Rules(
            make_rules(self.end_id).end_ids,
            self.min_length,
            self.no_repeat_ngram_size,
        )

    def with_ids(self, start_id, end_id):
        """This spec with `start_id` and `end_id` filled in where it left
        them `None`."""
        return dataclasses.replace(
            self,
            start_id=self.start_id if self.start_id is not None else start_id,
            end_id=self.end_id if self.end_id is not None else end_id,
        )

    def check_ids(self):
        """Raises a `ValueError` unless the start and end ids are set."""
        for name in ("start_id", "end_id"):
            if getattr(self, name) is None:
                raise ValueError(
                    f"A search needs `{name}`: give it to the spec or to the "
                    f"search. Received: {name}=None in {self!r}"
                )

    def check_inputs(self, model, encoder_token_ids):
        """The sources (or prompts) as an int32 tensor `(B, S)`, after
        checks of their shape against the model and `max_length`, and of
        the spec's start and end ids (set)."""
        self.check_ids()
        return check_sources(model, encoder_token_ids, self.max_length)

    def output_length(self, model, source_length):
        """Length `L` of the token buffer of a search over sources (or
        prompts) of padded width `source_length`."""
        cap = model.max_sequence_length
        if self.max_length is not None:
            cap = self.max_length
        extra = source_length + self.max_extra_length
        return int(min(extra, cap, model.max_sequence_length))

    def traced(self):
        """The part of the spec a compiled search depends on: the key it
        is kept under (a seed is an input, not part of the trace)."""
        return self


@dataclasses.dataclass(frozen=True, kw_only=True)
class Greedy(Search):
    """Greedy search: the most probable token at every step.

    It takes the arguments of every search (`decoding.specs.Search`) and
    no others.
    """


@dataclasses.dataclass(frozen=True, kw_only=True)
class Sampling(Search):
    """Sampling with a temperature, top-k and top-p, seeded.

    It takes the arguments of every search (`decoding.specs.Search`) and
    these.

    Args:
        temperature: float `>= 0`. Divides the log-probabilities; `0` is
            greedy search. Defaults to `1.0`.
        top_k: int or `None`. Draw among the `top_k` most probable tokens
            only. Defaults to `None` (all).
        top_p: float in `(0, 1]` or `None`. Draw among the most probable
            tokens whose probability mass reaches `top_p`. Defaults to
            `None` (all).
        seed: int or `None`. The same seed gives the same tokens on a
            backend. Defaults to `None` (Keras's global seed).
    """

    temperature: float = 1.0
    top_k: int | None = None
    top_p: float | None = None
    seed: int | None = None

    def __post_init__(self):
        super().__post_init__()
        check_sampling(self.temperature, self.top_k, self.top_p)
        if self.seed is not None and (
            isinstance(self.seed, bool)
            or not isinstance(self.seed, numbers.Integral)
        ):
            raise ValueError(
                f"Argument `seed` must be an int or None. Received: "
                f"seed={self.seed!r}"
            )
        object.__setattr__(self, "temperature", float(self.temperature))

    def traced(self):
        return dataclasses.replace(self, seed=None)


@dataclasses.dataclass(frozen=True, kw_only=True)
class Beam(Search):
    """Beam search with the GNMT length penalty (`decoding.beam`).

    It takes the arguments of every search (`decoding.specs.Search`) and
    these.

    Args:
        beam_size: int. Live (and finished) hypotheses kept per sentence.
            Defaults to `4`.
        alpha: float `>= 0`. Length penalty exponent; `0` ranks by plain
            log-probability. Defaults to `0.6`.
        n_best: bool. Return all `beam_size` finished hypotheses, best
            first, with their scores. Defaults to `False`.
    """

    beam_size: int = 4
    alpha: float = 0.6
    n_best: bool = False

    def __post_init__(self):
        super().__post_init__()
        check_positive_int("beam_size", self.beam_size)
        if (
            not isinstance(self.alpha, (int, float))
            or isinstance(self.alpha, bool)
            or self.alpha < 0
        ):
            raise ValueError(
                "Argument `alpha` must be a number >= 0. Received: "
                f"alpha={self.alpha!r}"
            )
        check_bool("n_best", self.n_best)
        object.__setattr__(self, "alpha", float(self.alpha))

    def as_greedy(self):
        """The `Greedy` spec with this one's shared fields: a beam of one
        is greedy search."""
        shared = {f.name: getattr(self, f.name) for f in fields(Search)}
        return Greedy(**shared)


def fields(spec_class):
    return dataclasses.fields(spec_class)


def check_bool(name, value):
    if not isinstance(value, bool):
        raise ValueError(
            f"Argument `{name}` must be True or False. Received: "
            f"{name}={value!r}"
        )


def check_sampling(temperature, top_k, top_p):
    """Checks the sampling arguments, naming a bad one."""
    if (
        not isinstance(temperature, (int, float))
        or isinstance(temperature, bool)
        or temperature < 0
    ):
        raise ValueError(
            "Argument `temperature` must be a number >= 0. Received: "
            f"temperature={temperature!r}"
        )
    check_positive_int("top_k", top_k, allow_none=True)
    if top_p is not None and (
        not isinstance(top_p, (int, float))
        or isinstance(top_p, bool)
        or not 0 < top_p <= 1
    ):
        raise ValueError(
            "Argument `top_p` must be a number in (0, 1]. Received: "
            f"top_p={top_p!r}"
        )


def from_arguments(spec_class, spec, search, start_id, end_id, **options):
    """The spec of a call of the search function `search`: `spec` (of
    `spec_class`) with the ids filled in, or one made of the keyword
    `options`.

    Options other than `search`'s defaults beside a spec are refused: the
    spec holds them.
    """
    if spec is None:
        return spec_class(start_id=start_id, end_id=end_id, **options)
    if not isinstance(spec, spec_class):
        raise ValueError(
            f"Argument `spec` must be a `{spec_class.__name__}` here. "
            f"Received: spec={spec!r}"
        )
    defaults = inspect.signature(search).parameters
    given = sorted(
        name
        for name, value in options.items()
        if value != defaults[name].default
    )
    if given:
        raise ValueError(
            "Give the search's options in `spec` or as arguments, not both. "
            f"Received: spec={spec!r} and {', '.join(given)}"
        )
    return spec.with_ids(start_id, end_id)
