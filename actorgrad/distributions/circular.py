"""VonMises, the distribution of an angle (PyTorch's torch.distributions.VonMises): normalized by the modified
Bessel function I0, its circular variance a ratio of I1 to I0 (both from actorgrad.special's scaled forms), its
draws by Best & Fisher's rejection method."""

from __future__ import annotations

import math
from collections.abc import Sequence

from actorgrad.creation import zeros
from actorgrad.distributions import constraints
from actorgrad.distributions.distribution import Distribution
from actorgrad.distributions.utils import batch_shape_of, broadcast_all
from actorgrad.grad_mode import no_grad
from actorgrad.ops.selection import where
from actorgrad.ops.special_functions import i0e, i1e
from actorgrad.random_tensors import rand
from actorgrad.tensor import Tensor, float64

__all__ = ["VonMises", "log_bessel_i"]


def log_bessel_i(order: int, x: Tensor) -> Tensor:
    """log I_order(x) for x > 0 and order 0 or 1: the log of the exponentially scaled function plus x, finite
    where I_order itself overflows (x above about 714)."""
    if order not in (0, 1):
        raise ValueError(f"order must be 0 or 1, got {order}")
    return (i0e(x) if order == 0 else i1e(x)).log() + x


def _rejection_sample(loc: Tensor, concentration: Tensor, proposal_r: Tensor, shape: tuple[int, ...]) -> Tensor:
    """Best & Fisher's (1979) wrapped-Cauchy envelope, all entries at once: each round draws three uniforms per
    entry and keeps the angle where it is accepted and the entry still waits, until every entry has one (any
    envelope parameter r > 1 gives exact draws; `proposal_r`, theirs, makes acceptance likeliest). The angle is
    then turned by loc and wrapped into [-pi, pi)."""
    x = zeros(shape, dtype=loc.dtype, device=loc.device)
    done = zeros(shape, dtype=bool, device=loc.device)
    while not bool(done.all()):
        u1, u2, u3 = rand((3,) + shape, dtype=loc.dtype, device=loc.device).unbind()
        z = (math.pi * u1).cos()
        f = (1 + proposal_r * z) / (proposal_r + z)
        c = concentration * (proposal_r - f)
        accept = ((c * (2 - c) - u2) > 0) | ((c / u2).log() + 1 - c >= 0)
        accept = accept & ~done
        x = where(accept, (u3 - 0.5).sign() * f.acos(), x)
        done = done | accept
    return (x + math.pi + loc) % (2 * math.pi) - math.pi


class VonMises(Distribution):
    """The von Mises distribution of an angle about `loc` with `concentration` kappa (the circular analogue of the
    normal): density exp(kappa cos(x - loc)) / (2 pi I0(kappa)). Values and loc may be any real numbers, read
    modulo 2 pi; samples lie in [-pi, pi). The mean and variance are the circular ones."""

    arg_constraints = {"loc": constraints.real, "concentration": constraints.positive}
    support = constraints.real
    has_rsample = False

    def __init__(self, loc: Tensor | float, concentration: Tensor | float, validate_args: bool | None = None) -> None:
        self.loc, self.concentration = broadcast_all(loc, concentration)
        super().__init__(batch_shape_of(self.loc, loc, concentration), validate_args=validate_args)

    def expand(self, batch_shape: Sequence[int], _instance: Distribution | None = None) -> VonMises:
        shape = tuple(batch_shape)
        return self._expanded(
            VonMises, shape, _instance, loc=self.loc.expand(shape), concentration=self.concentration.expand(shape)
        )

    @property
    def mean(self) -> Tensor:
        return self.loc

    @property
    def mode(self) -> Tensor:
        return self.loc

    @property
    def variance(self) -> Tensor:
        """The circular variance 1 - I1(kappa) / I0(kappa)."""
        k = self.concentration
        return 1 - (log_bessel_i(1, k) - log_bessel_i(0, k)).exp()

    def log_prob(self, value: Tensor) -> Tensor:
        if self._validate_args:
            self._validate_sample(value)
        k = self.concentration
        return k * (value - self.loc).cos() - math.log(2 * math.pi) - log_bessel_i(0, k)

    def _proposal_r(self, kappa: Tensor) -> Tensor:
        """The wrapped Cauchy envelope's parameter r = (1 + rho^2) / (2 rho); 1 / kappa + kappa below 1e-5, where
        rho's formula loses every digit (it is fed 1 there instead, so that it divides by no zero)."""
        small = kappa < 1e-5
        exact_kappa = where(small, 1.0, kappa)
        tau = 1 + (1 + 4 * exact_kappa.pow(2)).sqrt()
        rho = (tau - (2 * tau).sqrt()) / (2 * exact_kappa)
        return where(small, kappa.reciprocal() + kappa, (1 + rho.pow(2)) / (2 * rho))

    def sample(self, sample_shape: Sequence[int] = ()) -> Tensor:
        """Drawn in float64 whatever the dtype (in float32 the rejection step stalls for kappa around 1e-4)."""
        with no_grad():
            loc, kappa = self.loc.to(float64), self.concentration.to(float64)
            angles = _rejection_sample(loc, kappa, self._proposal_r(kappa), self._extended_shape(sample_shape))
            return angles.to(self.loc.dtype)
