"""`torch.backends.cpu`: the vector instruction set the CPU kernels (numpy's) dispatch to."""


def get_cpu_capability() -> str:
    """"AVX512", "AVX2" or "DEFAULT", as PyTorch names them, from the CPU features numpy detected."""
    from numpy._core._multiarray_umath import __cpu_features__ as features

    if features.get("AVX512F") and features.get("AVX512BW") and features.get("AVX512VL"):
        return "AVX512"
    return "AVX2" if features.get("AVX2") else "DEFAULT"
