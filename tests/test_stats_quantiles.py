"""cov, corrcoef, dist, cross, logaddexp2, the inf/real tests, quantile, mode, unique_consecutive, histc and the
random samplers, against numpy's independent computations (np.cov, np.quantile with the matching method, ...),
brute force, finite differences and PyTorch 2.13's errors."""

import math
import warnings

import numpy as np
import pytest

import actorgrad as ag
from actorgrad import user_warnings
from actorgrad.autograd import gradcheck

NAN = math.nan
X = [[1.0, 2, 4], [3, 1, 0]]


def close(t, expected, rtol=1e-6):
    """Against an independent numpy computation; float32 outputs need the looser default tolerance."""
    np.testing.assert_allclose(t.numpy(), np.asarray(expected, dtype=float), rtol=rtol, atol=1e-6)


def leaf(shape, seed=0):
    return ag.tensor(np.random.default_rng(seed).standard_normal(shape), requires_grad=True)


def test_cov_and_corrcoef_match_torch():
    x = ag.tensor(X)
    close(x.cov(correction=0), np.cov(X, ddof=0))
    close(ag.cov(x, correction=2, fweights=ag.tensor([1, 2, 3]), aweights=ag.tensor([0.5, 1, 2])),
          np.cov(X, ddof=2, fweights=[1, 2, 3], aweights=[0.5, 1, 2]))
    close(ag.cov(ag.tensor([1, 2, 4])), np.cov([1.0, 2, 4]))
    close(ag.corrcoef(x), np.corrcoef(X))
    constant_row = [[1.0, 1, 1], [1, 2, 3]]
    with np.errstate(invalid="ignore"):  # 0 / 0 for the constant row: NaN, as in torch
        close(ag.corrcoef(ag.tensor(constant_row)), np.corrcoef(constant_row))
    assert ag.cov(x).grad_fn is None and ag.cov(x.double(), aweights=ag.tensor([1.0, 2, 3])).dtype == ag.float64
    with pytest.warns(UserWarning, match="degrees of freedom is <= 0"):
        centred = np.asarray(X) - np.mean(X, axis=1, keepdims=True)
        with np.errstate(divide="ignore"):  # zero degrees of freedom: the products' sums over 0
            close(ag.cov(x, correction=3), centred @ centred.T / np.float64(0))


def test_complex_cov_is_hermitian_and_corrcoef_clips_each_part():
    z = [[1 + 2j, -1j, 3 + 0.5j, 2.0], [0.5 - 1j, 2 + 2j, -1 + 0j, 1j]]
    means = [sum(row) / 4 for row in z]
    want = [[sum((a - means[i]) * (b - means[j]).conjugate() for a, b in zip(z[i], z[j])) / 3 for j in range(2)]
            for i in range(2)]
    got = ag.cov(ag.tensor(z, dtype=ag.complex128))
    np.testing.assert_allclose(got.numpy(), want, rtol=1e-14)
    r = ag.corrcoef(ag.tensor(z, dtype=ag.complex128)).numpy()
    scale = [[math.sqrt(want[i][i].real * want[j][j].real) for j in range(2)] for i in range(2)]
    np.testing.assert_allclose(r, np.clip(np.real(want) / scale, -1, 1) + 1j * np.clip(np.imag(want) / scale, -1, 1),
                               rtol=1e-14, atol=1e-15)
    x = ag.tensor(np.random.default_rng(3).standard_normal((3, 5, 2)) @ [1, 1j], requires_grad=True)
    assert gradcheck(ag.cov, (x,)) and gradcheck(ag.corrcoef, (x,))


def test_cov_and_corrcoef_gradients():
    x = leaf((3, 5))
    weights = dict(fweights=ag.tensor([1, 2, 0, 3, 1]), aweights=ag.tensor([0.2, 0.5, 1.0, 0.3, 0.9]))
    assert gradcheck(lambda t: ag.cov(t, **weights), (x,))
    assert gradcheck(ag.corrcoef, (x,))
    assert ag.cov(x).grad_fn.name() == "SqueezeBackward0" and ag.corrcoef(x).grad_fn.name() == "ClampBackward1"


@pytest.mark.parametrize("call, message", [
    (lambda: ag.cov(ag.zeros(2, 2, 2)), "expected input to have two or fewer dimensions but got an input with 3"),
    (lambda: ag.cov(ag.zeros(2, 2, dtype=ag.bool)), "bool dtype is not supported for input"),
    (lambda: ag.cov(ag.tensor(X), fweights=ag.tensor([1.0, 2, 3])), "fweights to have integral dtype but got "
                                                                     "fweights with Float dtype"),
    (lambda: ag.cov(ag.tensor(X), fweights=ag.tensor([1, 2])), "same numel as there are observations in the input "
                                                               "but got 2 != 3"),
    (lambda: ag.cov(ag.tensor(X), fweights=ag.tensor([1, -2, 3])), "fweights cannot be negative"),
    (lambda: ag.cov(ag.tensor(X), aweights=ag.tensor([1, 2, 3])), "aweights to have floating point dtype but got "
                                                                  "aweights with Long dtype"),
    (lambda: ag.cov(ag.tensor(X), aweights=ag.tensor([0.0, 0, 0])), "weights sum to zero, can't be normalized"),
    (lambda: ag.corrcoef(ag.zeros(2, 2, 2)), "corrcoef\\(\\): expected input to have two or fewer dimensions"),
])
def test_cov_errors(call, message):
    with pytest.raises(RuntimeError, match=message):
        call()


A = [[1.0, 2, 3], [4, 5, 6], [0, 1, -1]]
B = [[0.0, 1, 2], [1, 0, 0], [2, 2, 1]]


def test_dist_values_gradients_and_errors():
    a, b = ag.tensor(A), ag.tensor(B)
    diff = np.abs(np.subtract(A, B))
    for p, expected in ((1.5, np.sum(diff ** 1.5) ** (1 / 1.5)), (0, np.count_nonzero(diff)), (math.inf, diff.max()),
                        (2, math.sqrt(np.sum(diff ** 2)))):
        close(ag.dist(a, b, p), expected)
    x, y = ag.tensor(A, requires_grad=True), ag.tensor(B, requires_grad=True)
    ag.dist(x, y).backward()
    close(x.grad, np.subtract(A, B) / math.sqrt(np.sum(diff ** 2)))  # d||a - b|| / da = (a - b) / ||a - b||
    close(y.grad, -x.grad.numpy())
    u, v = leaf((3, 4)), leaf((1, 4), 1)  # broadcast: v's gradient sums over the rows
    for p in (2, 1.5, 3, math.inf, -math.inf):
        assert gradcheck(lambda s, t, p=p: ag.dist(s, t, p), (u, v))
    assert ag.dist(u, v, 3).grad_fn.name() == "DistBackward0"
    with pytest.raises(RuntimeError, match="Got Long instead"):
        ag.dist(a.long(), b.long())
    with pytest.raises(RuntimeError, match="size of tensor a \\(3\\) must match the size of tensor b \\(2\\)"):
        ag.dist(a, ag.zeros(2))


def test_cross_default_dim_values_gradients_and_errors(monkeypatch):
    a, b = ag.tensor(A), ag.tensor(B)
    monkeypatch.setattr(user_warnings, "_warned_once", set())
    with pytest.warns(UserWarning, match="Using torch.cross without specifying the dim arg is deprecated"):
        close(ag.cross(a, b), np.cross(A, B, axis=0))  # dim 0: the first of size 3
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # warned once only, as PyTorch's TORCH_WARN_ONCE
        assert ag.cross(ag.ones(3, 4), ag.ones(3, 4)).shape == (3, 4)
    close(a.cross(b, dim=1), np.cross(A, B, axis=1))
    u, v = leaf((4, 3)), leaf((1, 3), 1)
    assert gradcheck(lambda s, t: ag.cross(s, t, -1), (u, v))
    assert ag.cross(u, v, 1).grad_fn.name() == "LinalgCrossBackward0"
    for call, message in (
        (lambda: ag.cross(ag.zeros(2, 4), ag.zeros(2, 4)), "no dimension of size 3 in input"),
        (lambda: ag.cross(ag.zeros(2, 3), ag.zeros(2, 3), dim=0), "dimension 0 must have length 3. Got 2 and 2"),
        (lambda: ag.cross(ag.zeros(2, 3), ag.zeros(3), dim=1), "inputs must have the same number of dimensions"),
        (lambda: ag.cross(ag.zeros(4, 3), ag.zeros(4, 3).double(), dim=1), "expected scalar type Float but found "
                                                                           "Double"),
    ):
        with pytest.raises(RuntimeError, match=message):
            call()


def test_logaddexp2_and_value_tests():
    close(ag.logaddexp2(ag.tensor([1.0, -2, 100]), ag.tensor([0.0, 3, 100])),
          np.log2(np.exp2([1.0, -2, 100]) + np.exp2([0.0, 3, 100])))
    u, v = leaf((2, 3)), leaf((3,), 1)
    assert gradcheck(ag.logaddexp2, (u, v)) and ag.logaddexp2(u, v).grad_fn.name() == "Logaddexp2Backward0"
    with pytest.raises(NotImplementedError, match="\"logaddexp2_cpu\" not implemented for 'Long'"):
        ag.logaddexp2(ag.tensor([1, 2]), ag.tensor([1, 2]))
    t = ag.tensor([1.0, math.inf, -math.inf, NAN])
    assert t.isposinf().tolist() == [False, True, False, False]
    assert ag.isneginf(t).tolist() == [False, False, True, False]
    assert ag.isreal(t).tolist() == [True] * 4 and ag.isposinf(ag.tensor([1, 2])).tolist() == [False, False]


QX = [[1.0, 7, 3, 2], [4, NAN, 0, 5]]


INTERPOLATIONS = ("linear", "lower", "higher", "midpoint", "nearest")  # numpy's `method=` of the same names


@pytest.mark.parametrize("interpolation", INTERPOLATIONS)
def test_quantile_values(interpolation):
    x, q = ag.tensor(QX, dtype=ag.float64), ag.tensor([0.0, 0.3, 1.0], dtype=ag.float64)
    quantiles = np.quantile(QX, [0.0, 0.3, 1.0], axis=1, method=interpolation)  # a NaN row gives NaN
    assert np.isnan(quantiles[:, 1]).all()
    close(ag.quantile(x, q, dim=1, interpolation=interpolation), quantiles)
    out = x.nanquantile(q, dim=1, keepdim=True, interpolation=interpolation)
    assert out.shape == (3, 2, 1)
    close(out, np.nanquantile(QX, [0.0, 0.3, 1.0], axis=1, keepdims=True, method=interpolation))
    close(ag.nanquantile(x, 0.4, interpolation=interpolation), np.nanquantile(QX, 0.4, method=interpolation))
    rows = np.random.default_rng(5).standard_normal((4, 7))
    qs = np.array([0.05, 0.25, 0.5, 0.6, 0.99])
    close(ag.quantile(ag.tensor(rows), ag.tensor(qs), dim=-1, interpolation=interpolation),
          np.quantile(rows, qs, axis=-1, method=interpolation), rtol=1e-12)


def test_quantile_shapes_and_rounding():
    x = ag.tensor(QX, dtype=ag.float64)
    assert ag.quantile(x, ag.tensor([0.2, 0.5], dtype=ag.float64), keepdim=True).shape == (2, 1, 1)
    close(x.quantile(0.5, 0), np.quantile(QX, 0.5, axis=0))
    close(ag.quantile(ag.tensor(3.0), 0.5, dim=0, keepdim=True), 3.0)
    six = ag.tensor([1.0, 2, 3, 4, 5, 6])
    q = ag.tensor([0.1, 0.3, 0.5, 0.7, 0.9])
    # ranks 0.5, 1.5, 2.5, 3.5, 4.5 (exact in float32) round half to even: 0, 2, 2, 4, 4
    close(ag.quantile(six, q, interpolation="nearest"), [1.0, 3, 3, 5, 5])


def sorted_rank_weights(n: int, q: float, interpolation: str) -> dict[int, float]:
    """The weight each sorted position gets in the q-quantile of n values, from the rank h = q (n - 1)."""
    h = q * (n - 1)
    low, high = math.floor(h), math.ceil(h)
    if interpolation == "linear":
        return {low: 1 - (h - low), high: h - low} if low != high else {low: 1.0}
    if interpolation == "midpoint":
        return {low: 0.5, high: 0.5} if low != high else {low: 1.0}
    return {{"lower": low, "higher": high, "nearest": round(h)}[interpolation]: 1.0}  # round: half to even


def test_quantile_gradients():
    values = [3.0, 1, 2, 2, 5]
    w = ag.tensor(values, dtype=ag.float64, requires_grad=True)
    qs = [0.3, 0.5, 0.875]
    q = ag.tensor(qs, dtype=ag.float64)
    order = np.argsort(values, kind="stable")  # of tied values the earlier one takes the lower rank, as torch's sort
    y = leaf((3, 5))
    for interpolation in INTERPOLATIONS:
        grad = np.zeros(len(values))
        for level in qs:
            weights = sorted_rank_weights(len(values), level, interpolation)
            assert math.isclose(sum(weight * sorted(values)[rank] for rank, weight in weights.items()),
                                np.quantile(values, level, method=interpolation))  # the weights are numpy's quantile
            for rank, weight in weights.items():
                grad[order[rank]] += weight
        (g,) = ag.autograd.grad(ag.quantile(w, q, interpolation=interpolation).sum(), w)
        close(g, grad)
        assert gradcheck(lambda t, i=interpolation: ag.quantile(t, q, dim=1, interpolation=i), (y,))
        assert gradcheck(lambda t, i=interpolation: ag.nanquantile(t, 0.35, interpolation=i), (y,))
    assert ag.quantile(y, 0.3).grad_fn.name() == "SqueezeBackward4"


@pytest.mark.parametrize("call, message", [
    (lambda x: ag.quantile(x, 1.5), "quantile\\(\\) q must be in the range \\[0, 1\\] but got 1.5"),
    (lambda x: ag.quantile(x, ag.tensor([0.5, 1.5], dtype=ag.float64)), "q values must be in the range \\[0, 1\\]"),
    (lambda x: ag.quantile(x, ag.tensor([[0.5]], dtype=ag.float64)), "q must be a scalar or 1D tensor"),
    (lambda x: ag.quantile(x, ag.tensor([0.5])), "q tensor must be same dtype as the input tensor"),
    (lambda x: ag.quantile(ag.tensor([1, 2]), 0.5), "input tensor must be either float or double dtype"),
    (lambda x: ag.quantile(x, 0.5, interpolation="foo"), "interpolation must be one of linear, lower, higher, "
                                                         "midpoint or nearest, but got foo"),
    (lambda x: ag.nanquantile(ag.zeros(2, 0), 0.5, dim=1), "^quantile\\(\\) input tensor must be non-empty"),
])
def test_quantile_errors(call, message):
    with pytest.raises(RuntimeError, match=message):
        call(ag.tensor(QX, dtype=ag.float64))


def test_mode_tie_rule_gradient_and_errors():
    rows = ag.tensor([[3.0, 1, 3, 1, 2], [5, 5, 4, 4, 0]])
    values, indices = ag.mode(rows, 1, True)  # of equally frequent values the smallest, at its last position
    assert values.tolist() == [[1.0], [4.0]] and indices.tolist() == [[3], [3]]
    values, indices = rows.mode(0)
    assert values.tolist() == [3.0, 1, 3, 1, 0] and indices.tolist() == [0, 0, 0, 0, 1]
    assert ag.mode(ag.tensor([True, False, True])).indices.item() == 2
    assert tuple(x.item() for x in ag.mode(ag.tensor(4.0))) == (4.0, 0)
    assert ag.mode(ag.zeros(2, 0), 0).values.shape == (0,)
    z = leaf((3, 4))
    assert gradcheck(lambda t: ag.mode(t, 1, True).values, (z,)) and ag.mode(z).values.grad_fn.name() == "ModeBackward0"
    with pytest.raises(IndexError, match="mode\\(\\): Expected reduction dim 1 to have non-zero size."):
        ag.mode(ag.zeros(2, 0), 1)


def test_unique_consecutive():
    values, inverse, counts = ag.unique_consecutive(ag.tensor([1, 1, 2, 2, 3, 1, 1, 2]), return_inverse=True,
                                                    return_counts=True)
    assert values.tolist() == [1, 2, 3, 1, 2] and inverse.tolist() == [0, 0, 1, 1, 2, 3, 3, 4]
    assert counts.tolist() == [2, 2, 1, 2, 1]
    m = ag.tensor([[1, 1, 2], [1, 1, 2], [0, 3, 3]])
    values, inverse, counts = m.unique_consecutive(return_inverse=True, return_counts=True, dim=0)
    assert values.tolist() == [[1, 1, 2], [0, 3, 3]] and inverse.tolist() == [0, 0, 1] and counts.tolist() == [2, 1]
    assert ag.unique_consecutive(m, return_inverse=True)[1].shape == (3, 3)
    assert np.isnan(ag.unique_consecutive(ag.tensor([NAN, NAN, 1.0])).numpy()[:2]).all()  # NaNs stay distinct
    assert ag.unique_consecutive(ag.zeros(2, 0), dim=1).shape == (2, 0)
    out = ag.unique_consecutive(ag.tensor([1.0, 1, 2], requires_grad=True))
    assert out.grad_fn.name() == "UniqueConsecutiveBackward0"
    with pytest.raises(RuntimeError, match="the derivative for 'unique_consecutive' is not implemented."):
        out.sum().backward()
    with pytest.raises(IndexError, match="Dimension specified as 0 but tensor has no dimensions"):
        ag.unique_consecutive(ag.tensor(5), dim=0)


def test_histc():
    x = ag.tensor([1.0, 2, 1, 4, 2.5], requires_grad=True)
    counts = ag.histc(x, bins=4, min=0, max=3)
    assert counts.tolist() == [0.0, 2, 1, 1] and not counts.requires_grad
    assert x.histc(4).tolist() == [2.0, 1, 1, 1] and ag.histc(ag.tensor([2.0, 2]), 4).tolist() == [0.0, 0, 2, 0]
    tenths = ag.tensor([0.1, 0.2, 0.3, 0.4, 0.5, 0.6, 0.7, 0.8, 0.9, 1.0])
    assert ag.histc(tenths, 10, 0, 1).tolist() == [0.0, 1, 1, 1, 1, 1, 1, 1, 1, 2]  # float32 edges, as torch
    with pytest.raises(RuntimeError, match="torch.histc: range of \\[1, inf\\] is not finite"):
        ag.histc(ag.tensor([1.0, 2, math.inf]), 3)
    with pytest.raises(RuntimeError, match="max must be larger than min"):
        ag.histc(ag.tensor([1.0]), 3, min=3, max=1)
    with pytest.raises(NotImplementedError, match="\"histogram_cpu\" not implemented for 'Long'"):
        ag.histc(ag.tensor([1, 2]), 3)
    with pytest.raises(TypeError, match="argument 'bins' \\(position 1\\) must be int, not float"):
        ag.histc(ag.tensor([1.0]), 2.5)


# -- random samplers: fixed seeds; each statistical check states its chance of failing for a correct sampler ------
def test_randperm_is_a_seeded_permutation():
    g = ag.Generator().manual_seed(3)
    first = ag.randperm(50, generator=g)
    assert first.dtype == ag.int64 and sorted(first.tolist()) == list(range(50))
    assert ag.randperm(50, generator=g.manual_seed(3)).tolist() == first.tolist()
    assert ag.randperm(5, dtype=ag.float32).dtype == ag.float32 and ag.randperm(0).shape == (0,)
    for call, error, message in (
        (lambda: ag.randperm(-1), RuntimeError, "negative dimension -1: \\[-1\\]"),
        (lambda: ag.randperm(300, dtype=ag.int8), RuntimeError, "cannot be converted to type int8_t without overflow"),
        (lambda: ag.randperm(3000, dtype=ag.float16), RuntimeError, "n cannot be greater than 2049 for Half type."),
        (lambda: ag.randperm(3, dtype=ag.bool), NotImplementedError, "\"randperm\" not implemented for 'Bool'"),
        (lambda: ag.randperm(2.5), TypeError, "argument 'n' \\(position 1\\) must be int, not float"),
    ):
        with pytest.raises(error, match=message):
            call()


def test_normal_overloads_moments_nodes_and_errors():
    g = ag.Generator().manual_seed(0)
    mean, std = ag.tensor([[-3.0], [5.0]]), ag.tensor([0.5, 2.0, 4.0])
    draws = ag.stack([ag.normal(mean, std, generator=g) for _ in range(4000)]).numpy()
    # sample means within 5 standard errors (std / sqrt(4000)): false-failure chance below 6e-6
    assert np.all(np.abs(draws.mean(0) - mean.numpy()) < 5 * std.numpy() / math.sqrt(4000))
    assert np.allclose(draws.std(0), np.broadcast_to(std.numpy(), (2, 3)), rtol=0.1)  # 0.1: > 6 standard errors
    sized = ag.normal(2.0, 3.0, size=(20000,), generator=g, dtype=ag.float64)
    assert sized.dtype == ag.float64 and abs(sized.mean().item() - 2.0) < 5 * 3 / math.sqrt(20000)
    assert ag.normal(ag.zeros(2), ag.ones(2, dtype=ag.float64)).dtype == ag.float32  # mean's dtype, as torch
    m, s = ag.zeros(2, requires_grad=True), ag.ones(2, requires_grad=True)
    both = ag.normal(m, s)
    assert [both.grad_fn.name(), ag.normal(m, 1.0).grad_fn.name(), ag.normal(0.0, s).grad_fn.name()] == [
        "NormalBackward3", "NormalBackward1", "NormalBackward2"]
    assert all(grad.tolist() == [0.0, 0.0] for grad in ag.autograd.grad(both.sum(), (m, s)))
    with pytest.raises(TypeError, match="normal\\(\\) received an invalid combination of arguments - got "
                                        "\\(float, float\\)"):
        ag.normal(0.0, 1.0)
    with pytest.raises(RuntimeError, match="normal expects all elements of std >= 0.0"):
        ag.normal(ag.zeros(2), ag.tensor([1.0, -1]))
    with pytest.raises(RuntimeError, match="normal expects std >= 0.0, but found std -1"):
        ag.normal(ag.zeros(2), -1.0)
    with pytest.raises(NotImplementedError, match="\"normal_kernel_cpu\" not implemented for 'Long'"):
        ag.normal(ag.zeros(2, dtype=ag.int64), 1.0)


def test_bernoulli_and_poisson():
    g = ag.Generator().manual_seed(1)
    p = ag.full((20000,), 0.3)
    # frequency within 5 standard errors (sqrt(0.21 / 20000)): false-failure chance below 6e-7
    assert abs(ag.bernoulli(p, generator=g).mean().item() - 0.3) < 5 * math.sqrt(0.21 / 20000)
    assert ag.bernoulli(ag.tensor([0.0, 1.0]), generator=g).tolist() == [0.0, 1.0]
    ints = ag.bernoulli(ag.zeros(20000, dtype=ag.int64), 0.8, generator=g)
    assert ints.dtype == ag.int64 and abs(ints.double().mean().item() - 0.8) < 5 * math.sqrt(0.16 / 20000)
    probabilities = ag.tensor([0.2, 0.7], requires_grad=True)
    drawn = ag.bernoulli(probabilities)
    assert drawn.grad_fn.name() == "BernoulliBackward0"
    assert ag.autograd.grad(drawn.sum(), probabilities)[0].tolist() == [0.0, 0.0]
    with pytest.raises(RuntimeError, match="derivative for aten::bernoulli is not implemented"):
        ag.bernoulli(probabilities, 0.3).sum().backward()
    with pytest.raises(RuntimeError, match="Expected p_in >= 0 && p_in <= 1 to be true"):
        ag.bernoulli(ag.tensor([0.0, 1.5]))
    with pytest.raises(RuntimeError, match="bernoulli_ expects p to be in \\[0, 1\\], but got p=1.5"):
        ag.bernoulli(ag.zeros(2), 1.5)
    counts = ag.poisson(ag.full((20000,), 4.0), generator=g)
    # mean within 5 standard errors (sqrt(4 / 20000)): false-failure chance below 6e-7
    assert counts.dtype == ag.float32 and abs(counts.mean().item() - 4.0) < 5 * math.sqrt(4 / 20000)
    rate = ag.tensor([1.0, 2.0], requires_grad=True)
    assert ag.poisson(rate).grad_fn.name() == "PoissonBackward0"
    with pytest.raises(RuntimeError, match="invalid Poisson rate, expected rate to be non-negative"):
        ag.poisson(ag.tensor([0.0, NAN]))
    with pytest.raises(NotImplementedError, match="\"poisson_cpu\" not implemented for 'Long'"):
        ag.poisson(ag.tensor([0, 1]))


def test_multinomial():
    g = ag.Generator().manual_seed(2)
    weights = ag.tensor([[0.0, 1, 3], [1, 1, 2]])
    drawn = ag.multinomial(weights, 20000, True, generator=g).numpy()
    assert drawn.shape == (2, 20000) and not (drawn[0] == 0).any()
    # frequencies within 5 standard errors (at most sqrt(0.25 / 20000)): false-failure chance below 4e-6
    for row, expected in zip(drawn, ([0.0, 0.25, 0.75], [0.25, 0.25, 0.5])):
        assert np.all(np.abs(np.bincount(row, minlength=3) / 20000 - expected) < 5 * math.sqrt(0.25 / 20000))
    without = ag.multinomial(ag.tensor([0.0, 1, 3]), 3, generator=g).tolist()
    assert sorted(without) == [0, 1, 2] and without[2] == 0  # a zero weight comes last
    # without replacement the heavier of two is first with probability 3/4: 2000 draws within 5 standard errors
    firsts = [ag.multinomial(ag.tensor([1.0, 3.0]), 1, generator=g).item() for _ in range(2000)]
    assert abs(np.mean(firsts) - 0.75) < 5 * math.sqrt(0.1875 / 2000)
    assert ag.multinomial(ag.zeros(0, 3), 1).shape == (0, 1)
    for bad, samples, message in (
        ([0.0, -1, 3], 1, "probability tensor contains either `inf`, `nan` or element < 0"),
        ([0.0, 0, 0], 1, "invalid multinomial distribution \\(sum of probabilities <= 0\\)"),
        ([1, 2], 1, "multinomial only supports floating-point dtypes for input, got: Long"),
        (np.zeros((2, 2, 2)), 1, "prob_dist must be 1 or 2 dim"),
        ([1.0, 2], 0, "cannot sample n_sample <= 0 samples"),
        ([1.0, 2], 3, "cannot sample n_sample > prob_dist.size\\(-1\\) samples without replacement"),
    ):
        with pytest.raises(RuntimeError, match=message):
            ag.multinomial(ag.tensor(bad), samples)
