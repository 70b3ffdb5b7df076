"""`actorgrad.special`: PyTorch's torch.special names for the functions actorgrad has at top level, and the ones
only torch.special has (ndtr, erfcx, the Bessel and Airy functions, the orthogonal polynomials)."""

from __future__ import annotations

from actorgrad.ops.arithmetic_unary import sigmoid as expit
from actorgrad.ops.gamma import special_digamma as digamma
from actorgrad.ops.gamma import special_erfinv as erfinv
from actorgrad.ops.gamma import special_gammaln as gammaln
from actorgrad.ops.gamma import special_multigammaln as multigammaln
from actorgrad.ops.gamma import special_polygamma as polygamma
from actorgrad.ops.gamma import special_psi as psi
from actorgrad.ops.orthogonal_polynomials import (
    chebyshev_polynomial_t,
    chebyshev_polynomial_u,
    chebyshev_polynomial_v,
    chebyshev_polynomial_w,
    hermite_polynomial_h,
    hermite_polynomial_he,
    laguerre_polynomial_l,
    legendre_polynomial_p,
    shifted_chebyshev_polynomial_t,
    shifted_chebyshev_polynomial_u,
    shifted_chebyshev_polynomial_v,
    shifted_chebyshev_polynomial_w,
)
from actorgrad.ops.out_arguments import CASTABLE, EXACT, give_out_by_rules
from actorgrad.ops.public_names import check_tensor_arguments
from actorgrad.ops.reduction_out import logsumexp_out_dtype
from actorgrad.ops.reductions import log_softmax, logsumexp, softmax
from actorgrad.ops.rounding import special_round as round
from actorgrad.ops.special import erf, erfc, xlog1py, xlogy
from actorgrad.ops.special_functions import entr, i0, i0e, i1, i1e, log_ndtr, ndtri, zeta
from actorgrad.ops.special_functions import special_gammainc as gammainc
from actorgrad.ops.special_functions import special_gammaincc as gammaincc
from actorgrad.ops.special_unary import (
    airy_ai,
    bessel_j0,
    bessel_j1,
    bessel_y0,
    bessel_y1,
    erfcx,
    modified_bessel_i0,
    modified_bessel_i1,
    modified_bessel_k0,
    modified_bessel_k1,
    ndtr,
    scaled_modified_bessel_k0,
    scaled_modified_bessel_k1,
    spherical_bessel_j0,
)
from actorgrad.ops.unary import exp2, expm1, log1p, logit, sinc

__all__ = [
    "airy_ai", "bessel_j0", "bessel_j1", "bessel_y0", "bessel_y1", "chebyshev_polynomial_t", "chebyshev_polynomial_u",
    "chebyshev_polynomial_v", "chebyshev_polynomial_w", "digamma", "entr", "erf", "erfc", "erfcx", "erfinv", "exp2",
    "expit", "expm1", "gammainc", "gammaincc", "gammaln", "hermite_polynomial_h", "hermite_polynomial_he", "i0",
    "i0e", "i1", "i1e", "laguerre_polynomial_l", "legendre_polynomial_p", "log1p", "log_ndtr", "log_softmax", "logit",
    "logsumexp", "modified_bessel_i0", "modified_bessel_i1", "modified_bessel_k0", "modified_bessel_k1",
    "multigammaln", "ndtr", "ndtri", "polygamma", "psi", "round", "scaled_modified_bessel_k0",
    "scaled_modified_bessel_k1", "shifted_chebyshev_polynomial_t", "shifted_chebyshev_polynomial_u",
    "shifted_chebyshev_polynomial_v", "shifted_chebyshev_polynomial_w", "sinc", "softmax", "spherical_bessel_j0",
    "xlog1py", "xlogy", "zeta",
]


# The functions without a derivative (PyTorch writes them into `out` beside arguments that require grad) and the
# aliases, whose refusal of autograd through `out=` names the kernel they run as; the rest are special_* kernels.
NO_DERIVATIVE = (
    "airy_ai", "bessel_j0", "bessel_j1", "bessel_y0", "bessel_y1", "chebyshev_polynomial_t", "chebyshev_polynomial_u",
    "chebyshev_polynomial_v", "chebyshev_polynomial_w", "hermite_polynomial_h", "hermite_polynomial_he",
    "laguerre_polynomial_l", "legendre_polynomial_p", "modified_bessel_i0", "modified_bessel_i1",
    "modified_bessel_k0", "modified_bessel_k1", "ndtr", "scaled_modified_bessel_k0", "scaled_modified_bessel_k1",
    "shifted_chebyshev_polynomial_t", "shifted_chebyshev_polynomial_u", "shifted_chebyshev_polynomial_v",
    "shifted_chebyshev_polynomial_w", "spherical_bessel_j0",
)
KERNEL_NAMES: dict[str, str | None] = {
    "digamma": "digamma", "erf": "erf", "erfc": "erfc", "erfinv": "erfinv", "exp2": "exp2", "expit": "sigmoid",
    "expm1": "expm1", "gammainc": "igamma", "gammaincc": "igammac", "gammaln": "lgamma", "i0": "i0",
    "log1p": "log1p", "logit": "logit", "logsumexp": "logsumexp", "multigammaln": "mvlgamma",
    "polygamma": "polygamma", "psi": "digamma", "round": "round", "sinc": "sinc", "xlogy": "xlogy",
    **dict.fromkeys(NO_DERIVATIVE, None),
}
OUT_RULES = {
    **{name: CASTABLE for name in __all__ if name not in ("log_softmax", "softmax")},  # PyTorch's take no `out`
    "round": EXACT, "logsumexp": logsumexp_out_dtype,
}

check_tensor_arguments(globals(), __all__, "special_")
give_out_by_rules(globals(), OUT_RULES, "special_", KERNEL_NAMES)  # after the check: `out=` wraps the checked names
