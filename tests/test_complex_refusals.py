"""The special functions without complex kernels refuse complex input with PyTorch's error before computing anything,
so no numpy ComplexWarning (a cast dropping the imaginary parts) comes first."""

import warnings

import pytest

import actorgrad as ag

REFUSALS = [
    (ag.special.erf, "erf_vml_cpu"),
    (ag.special.erfc, "erfc_vml_cpu"),
    (ag.special.erfinv, "erfinv_vml_cpu"),
    (ag.special.ndtr, "erf_vml_cpu"),
    (ag.lgamma, "lgamma_vml_cpu"),
    (ag.special.gammaln, "lgamma_vml_cpu"),
    (ag.digamma, "digamma"),
    (ag.special.psi, "digamma"),
    (lambda z: ag.polygamma(0, z), "digamma"),
    (lambda z: ag.polygamma(1, z), "trigamma"),
    (lambda z: ag.polygamma(3, z), "polygamma"),
    (lambda z: ag.mvlgamma(z, 2), "arange_cpu"),
    (lambda z: ag.special.multigammaln(z, 2), "arange_cpu"),
    (ag.special.i0, "i0_vml_cpu"),
    (ag.special.i0e, "i0e_cpu"),
    (ag.special.i1, "i1_cpu"),
    (ag.special.i1e, "i1e_cpu"),
    (ag.special.ndtri, "ndtri_cpu"),
    (ag.special.log_ndtr, "log_ndtr_cpu"),
    (ag.special.entr, "entr_cpu"),
]


@pytest.mark.parametrize("fn, kernel", REFUSALS)
def test_complex_input_is_refused_before_computing(fn, kernel):
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # a ComplexWarning would fail here first
        with pytest.raises(NotImplementedError, match=f"^\"{kernel}\" not implemented for 'ComplexFloat'$"):
            fn(ag.tensor([1 + 2j, -0.5j]))


def test_real_input_still_computes():
    x = ag.tensor([0.5, 1.5])
    assert ag.special.erf(x).dtype == ag.float32 and ag.lgamma(x).dtype == ag.float32


@pytest.mark.gpu
def test_on_cuda_the_refusal_comes_first_too(cupy):
    z = ag.tensor([1 + 2j], device="cuda")
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        for fn, kernel in REFUSALS:
            with pytest.raises(NotImplementedError, match=f"^\"{kernel}\""):
                fn(z)
