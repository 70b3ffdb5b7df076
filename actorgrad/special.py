"""`actorgrad.special`: PyTorch's torch.special names for the functions actorgrad has at top level."""

from __future__ import annotations

from actorgrad.ops.arithmetic import sigmoid as expit
from actorgrad.ops.gamma import special_digamma as digamma
from actorgrad.ops.gamma import special_erfinv as erfinv
from actorgrad.ops.gamma import special_gammaln as gammaln
from actorgrad.ops.gamma import special_multigammaln as multigammaln
from actorgrad.ops.gamma import special_polygamma as polygamma
from actorgrad.ops.gamma import special_psi as psi
from actorgrad.ops.public_names import check_tensor_arguments
from actorgrad.ops.reductions import log_softmax, logsumexp, softmax
from actorgrad.ops.rounding import round
from actorgrad.ops.special import erf, erfc, xlog1py, xlogy
from actorgrad.ops.special_functions import entr, i0, i0e, i1, i1e, log_ndtr, ndtri, zeta
from actorgrad.ops.special_functions import special_gammainc as gammainc
from actorgrad.ops.special_functions import special_gammaincc as gammaincc
from actorgrad.ops.unary import exp2, expm1, log1p, logit

__all__ = ["digamma", "entr", "erf", "erfc", "erfinv", "exp2", "expit", "expm1", "gammainc", "gammaincc", "gammaln",
           "i0", "i0e", "i1", "i1e", "log1p", "log_ndtr", "log_softmax", "logit", "logsumexp", "multigammaln", "ndtri",
           "polygamma", "psi", "round", "softmax", "xlog1py", "xlogy", "zeta"]

check_tensor_arguments(globals(), __all__, "special_")
