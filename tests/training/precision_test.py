import keras
import pytest

from keras_attention.training import precision

X86_BF16 = "processor\t: 0\nflags\t\t: fpu sse2 avx512f avx512_bf16 amx_tile\n"
X86_PLAIN = "processor\t: 0\nflags\t\t: fpu sse2 avx2 avx512f\n"
ARM_BF16 = "processor\t: 0\nFeatures\t: fp asimd sve bf16 i8mm\n"


@pytest.mark.parametrize(
    "text, expected",
    [(X86_BF16, True), (X86_PLAIN, False), (ARM_BF16, True), ("", False)],
)
def test_cpu_bfloat16_is_read_from_the_cpu_flags(tmp_path, text, expected):
    path = tmp_path / "cpuinfo"
    path.write_text(text)
    assert precision.cpu_has_bfloat16(str(path)) is expected


def test_unreadable_cpuinfo_means_no_bfloat16(tmp_path):
    assert precision.cpu_has_bfloat16(str(tmp_path / "missing")) is False


@pytest.mark.parametrize(
    "backend, accelerator, cpu, expected",
    [
        ("tensorflow", False, True, "bfloat16"),
        ("tensorflow", False, False, "none"),
        ("tensorflow", True, True, "none"),
        ("jax", False, True, "jax" in precision.CPU_BFLOAT16_BACKENDS),
        ("torch", False, True, "torch" in precision.CPU_BFLOAT16_BACKENDS),
    ],
)
def test_auto_picks_bfloat16_only_where_measured(
    backend, accelerator, cpu, expected
):
    if isinstance(expected, bool):
        expected = "bfloat16" if expected else "none"
    got = precision.resolve_mixed_precision("auto", backend, accelerator, cpu)
    assert got == expected


def test_explicit_precisions_pass_and_unknown_ones_are_named():
    for name in ("none", "float16", "bfloat16"):
        assert precision.resolve_mixed_precision(name) == name
    with pytest.raises(ValueError, match="Received: mixed_precision='fp8'"):
        precision.resolve_mixed_precision("fp8")


def test_auto_sets_the_policy_this_machine_resolves_to():
    expected = precision.MIXED_PRECISION[
        precision.resolve_mixed_precision("auto")
    ]
    try:
        assert precision.set_mixed_precision("auto") == expected
        assert keras.config.dtype_policy().name == expected
    finally:
        precision.set_mixed_precision("none")
