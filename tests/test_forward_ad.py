"""Forward-mode AD: tangents from `unpack_dual` equal the Jacobian's columns (from reverse mode) for ops of every
family, exactly; tensors without a tangent give None; levels, errors and the primal's own state."""

from __future__ import annotations

import numpy as np
import pytest
import trio

import actorgrad as ag
import actorgrad.autograd.forward_ad as fwAD
import actorgrad.nn.functional as F
from actorgrad.autograd.functional import jacobian

RNG = np.random.default_rng(0)


def _random(*shape: int) -> np.ndarray:
    return RNG.standard_normal(shape)


def _away_from_kinks(*shape: int) -> np.ndarray:
    """Values at least 0.1 from zero and from each other, for relu, abs and max-like ops."""
    values = RNG.permutation(np.arange(1, int(np.prod(shape)) + 1) * 0.1)
    return (values * RNG.choice([-1, 1], values.size)).reshape(shape)


TARGET = ag.tensor([2, 0, 1])
INDEX = ag.tensor([[0, 2], [1, 1], [3, 0]])
MASK = ag.tensor(np.array([[True, False, True, False]] * 3))

# name -> (function of float64 tensors, input arrays); one or more ops from each family.
OPS = {
    "mul_broadcast": (lambda a, b: a * b, [_random(3, 4), _random(4)]),
    "div_pow": (lambda a, b: a / (b ** 2 + 1), [_random(3, 4), _random(3, 4)]),
    "sin_exp_log": (lambda a: a.sin() * a.exp() + (a ** 2 + 1).log(), [_random(5)]),
    "tanh_sigmoid_erf": (lambda a: ag.tanh(a) + ag.sigmoid(a) * ag.erf(a), [_random(2, 3)]),
    "relu_abs_clamp": (lambda a: F.relu(a) + a.abs() + ag.clamp(a, -0.5, 0.5), [_away_from_kinks(2, 4)]),
    "gelu_silu_softplus": (lambda a: F.gelu(a) + F.silu(a) + F.softplus(a), [_random(6)]),
    "where": (lambda a, b: ag.where(a > b, a * b, a - b), [_away_from_kinks(3, 3), _away_from_kinks(3, 3) * 0.45]),
    "unary_family": (lambda a: ag.expm1(a) + ag.log1p(a.abs()) + ag.rsqrt(a * a + 1) + ag.reciprocal(a + 3),
                     [_away_from_kinks(2, 3)]),
    "maximum_minimum": (lambda a, b: ag.maximum(a, b) * ag.minimum(a, b),
                        [_away_from_kinks(4), _away_from_kinks(4) / 3.5]),
    "sum_mean_dim": (lambda a: a.sum(dim=1) * a.mean(dim=1), [_random(3, 4)]),
    "amax": (lambda a: ag.amax(a, dim=0), [_away_from_kinks(3, 4)]),
    "prod_cumsum": (lambda a: ag.prod(a, 1) + ag.cumsum(a, 1)[:, -1], [_random(2, 3)]),
    "logsumexp_softmax": (lambda a: ag.logsumexp(a, 1) + F.softmax(a, 1)[:, 0], [_random(3, 4)]),
    "var_std_norm": (lambda a: ag.var(a, 1) + ag.std(a, 1) + ag.norm(a), [_random(3, 4)]),
    "transpose_reshape": (lambda a: a.transpose(0, 1).reshape(2, 6), [_random(3, 4)]),
    "cat_stack": (lambda a, b: ag.stack([ag.cat([a, b]), ag.cat([b, a])]), [_random(2, 3), _random(2, 3)]),
    "getitem": (lambda a: a[1:, ::2], [_random(3, 4)]),
    "gather_index_select": (lambda a: ag.gather(a, 1, INDEX) + ag.index_select(a, 1, ag.tensor([3, 0])),
                            [_random(3, 4)]),
    "masked_fill_flip_repeat": (lambda a: ag.masked_fill(a, MASK, 0.0).flip(0).repeat(2, 1), [_random(3, 4)]),
    "split_unbind_roll": (lambda a: ag.unbind(a, 0)[1] * ag.split(a, 2, 1)[1].sum() + ag.roll(a, 1, 1)[0],
                          [_random(3, 4)]),
    "squeeze_tril_pad": (lambda a: F.pad(ag.tril(a.unsqueeze(0).squeeze(0)), (1, 1)), [_random(3, 3)]),
    "scatter_add": (lambda a, b: ag.scatter_add(a, 1, INDEX, b), [_random(3, 4), _random(3, 2)]),
    "matmul": (lambda a, b: a @ b, [_random(3, 4), _random(4, 2)]),
    "bmm_einsum": (lambda a, b: ag.bmm(a, b) + ag.einsum("bij,bjk->bik", a, b), [_random(2, 2, 3), _random(2, 3, 2)]),
    "linear": (lambda x, w, b: F.linear(x, w, b), [_random(2, 3), _random(4, 3), _random(4)]),
    "outer_mm": (lambda a, b: ag.mm(ag.outer(a, b), ag.outer(b, a)), [_random(3), _random(2)]),
    "conv1d": (lambda x, w, b: F.conv1d(x, w, b, stride=2), [_random(2, 2, 7), _random(3, 2, 3), _random(3)]),
    "embedding": (lambda w: F.embedding(INDEX, w), [_random(4, 3)]),
    "conv2d": (lambda x, w: F.conv2d(x, w, padding=1), [_random(1, 2, 4, 4), _random(3, 2, 3, 3)]),
    "pools": (lambda x: F.max_pool2d(x, 2) + F.avg_pool2d(x, 2), [_away_from_kinks(1, 2, 4, 4)]),
    "layer_norm": (lambda x, w: F.layer_norm(x, (4,), w), [_random(3, 4), _random(4)]),
    "batch_norm": (lambda x: F.batch_norm(x, None, None, training=True), [_random(4, 3)]),
    "mse_l1": (lambda a, b: F.mse_loss(a, b) + F.l1_loss(a, b),
               [_away_from_kinks(3, 2), _away_from_kinks(3, 2) * 0.45]),
    "cross_entropy_nll": (lambda a: F.cross_entropy(a, TARGET) + F.nll_loss(F.log_softmax(a, 1), TARGET),
                          [_random(3, 4)]),
    "bce_with_logits": (lambda a, b: F.binary_cross_entropy_with_logits(a, ag.sigmoid(b)), [_random(4), _random(4)]),
}


def test_a_module_gets_tangents_for_its_input():
    ag.manual_seed(0)
    model = ag.nn.Sequential(ag.nn.Linear(3, 4), ag.nn.Tanh(), ag.nn.Linear(4, 2))
    for p in model.parameters():
        p.data._data[...] = RNG.standard_normal(p.shape)  # float32 weights, drawn here
    x, t = _random(2, 3).astype(np.float32), _random(2, 3).astype(np.float32)
    columns = jacobian(model, ag.tensor(x)).numpy().reshape(-1, x.size)
    tangent = _tangent_of(model, [x], [t], dtype=ag.float32)
    np.testing.assert_allclose(tangent.ravel(), columns @ t.ravel(), rtol=1e-5, atol=1e-6)
    assert all(p.grad is None for p in model.parameters())


def _tangent_of(fn, arrays, tangents, dtype=ag.float64) -> np.ndarray:
    primals = [ag.tensor(a, dtype=dtype) for a in arrays]
    with fwAD.dual_level():
        duals = [fwAD.make_dual(p, ag.tensor(t, dtype=dtype)) for p, t in zip(primals, tangents)]
        tangent = fwAD.unpack_dual(fn(*duals)).tangent
        assert tangent is not None
        return tangent.detach().numpy()  # a model's parameters make it require grad, as in PyTorch


@pytest.mark.parametrize("name", sorted(OPS))
def test_tangent_equals_jacobian_times_tangents(name):
    fn, arrays = OPS[name]
    tangents = [_random(*a.shape) for a in arrays]
    columns = jacobian(fn, tuple(ag.tensor(a, dtype=ag.float64) for a in arrays))
    expected = sum(
        j.numpy().reshape(-1, t.size) @ t.ravel() for j, t in zip(columns, tangents)
    )
    tangent = _tangent_of(fn, arrays, tangents)
    np.testing.assert_allclose(tangent.ravel(), expected, rtol=1e-10, atol=1e-12)


def test_one_hot_tangents_give_the_jacobian_columns():
    fn, (a,) = lambda x: F.softmax(x @ x.T, 1), [_random(2, 3)]
    columns = jacobian(fn, ag.tensor(a)).numpy().reshape(-1, a.size)
    for k in range(a.size):
        onehot = np.zeros(a.size)
        onehot[k] = 1
        np.testing.assert_allclose(_tangent_of(fn, [a], [onehot.reshape(a.shape)]).ravel(), columns[:, k],
                                   rtol=1e-12, atol=1e-14)


def test_tangent_is_exact():
    x = np.array([0.3, -1.2, 2.5])
    t = np.array([1.0, -2.0, 0.5])
    tangent = _tangent_of(lambda a: (a ** 2).sin(), [x], [t])
    np.testing.assert_allclose(tangent, np.cos(x ** 2) * 2 * x * t, rtol=1e-15, atol=0)


def test_multi_output_ops_give_a_tangent_per_output():
    x, t = _random(4, 3), _random(4, 3)
    with fwAD.dual_level():
        parts = ag.split(fwAD.make_dual(ag.tensor(x), ag.tensor(t)) * 2, 2)
        for k, part in enumerate(parts):
            np.testing.assert_array_equal(fwAD.unpack_dual(part).tangent.numpy(), 2 * t[2 * k:2 * k + 2])


def test_unpack_dual_of_a_dual_gives_its_primal_and_tangent():
    x, t = ag.tensor([1.0, 2.0]), ag.tensor([3.0, 4.0])
    with fwAD.dual_level() as level:
        assert level == 0
        unpacked = fwAD.unpack_dual(fwAD.make_dual(x, t))
        assert isinstance(unpacked, fwAD.UnpackedDualTensor) and unpacked._fields == ("primal", "tangent")
        assert unpacked.primal is x and unpacked.tangent is t


def test_tensors_without_a_tangent_give_none():
    x = ag.tensor([1.0, -2.0, 3.0])
    w = ag.tensor([1.0, 1.0, 1.0], requires_grad=True)
    assert fwAD.unpack_dual(x).tangent is None  # no level
    with fwAD.dual_level():
        assert fwAD.unpack_dual(x * 2).tangent is None  # no dual at all
        dual = fwAD.make_dual(x, ag.tensor([1.0, 1.0, 1.0]))
        assert fwAD.unpack_dual(x).tangent is None
        assert fwAD.unpack_dual(w * 3).tangent is None  # requires grad, but not through a dual
        assert fwAD.unpack_dual(dual > 0).tangent is None  # no derivative: comparisons, argmax
        assert fwAD.unpack_dual(ag.argmax(dual)).tangent is None
        assert fwAD.unpack_dual(dual.detach()).tangent is None
        np.testing.assert_array_equal(fwAD.unpack_dual(dual * 0).tangent.numpy(), np.zeros(3))


def test_exiting_the_level_drops_the_tangents():
    with fwAD.dual_level():
        dual = fwAD.make_dual(ag.tensor([1.0, 2.0]), ag.tensor([1.0, 1.0]))
        y = dual * 3
        assert fwAD.unpack_dual(y).tangent is not None
    assert fwAD.unpack_dual(dual).tangent is None
    assert fwAD.unpack_dual(y).tangent is None
    with fwAD.dual_level():  # a fresh level knows nothing of the old duals
        assert fwAD.unpack_dual(y).tangent is None


def test_primal_requires_grad_and_grad_are_left_alone():
    x = ag.tensor([1.0, 2.0])
    with fwAD.dual_level():
        fwAD.unpack_dual(fwAD.make_dual(x, ag.tensor([1.0, 1.0])) ** 2)
    assert not x.requires_grad and x.grad is None and x.is_leaf

    w = ag.tensor([1.0, 2.0], dtype=ag.float64, requires_grad=True)
    with fwAD.dual_level():
        y = (fwAD.make_dual(w, ag.tensor([1.0, -1.0], dtype=ag.float64)) ** 3).sum()
        assert fwAD.unpack_dual(y).tangent.item() == pytest.approx(3 * 1 - 3 * 4)
        y.backward()  # reverse mode still reaches the primal through the dual
    np.testing.assert_array_equal(w.grad.numpy(), [3.0, 12.0])
    assert w.is_leaf and w.requires_grad


def test_tangent_is_differentiable_when_the_primal_requires_grad():
    """Forward-over-reverse: d/dw of (J·t) for f(w) = sum(w³) is 6·w·t."""
    w = ag.tensor([1.0, 2.0, -1.0], dtype=ag.float64, requires_grad=True)
    t = np.array([0.5, 1.0, 2.0])
    with fwAD.dual_level():
        tangent = fwAD.unpack_dual((fwAD.make_dual(w, ag.tensor(t)) ** 3).sum()).tangent
    (second,) = ag.autograd.grad(tangent, w)
    np.testing.assert_allclose(second.numpy(), 6 * w.detach().numpy() * t)


def test_hessian_vector_product_by_forward_over_reverse():
    x, t = _random(3), _random(3)
    f = lambda a: (a.sin() * a.sum()).sum()  # noqa: E731
    hessian = ag.autograd.functional.hessian(f, ag.tensor(x)).numpy()
    with fwAD.dual_level():
        dual = fwAD.make_dual(ag.tensor(x), ag.tensor(t))
        (g,) = ag.autograd.grad(f(dual), dual, create_graph=True)
        np.testing.assert_allclose(fwAD.unpack_dual(g).tangent.numpy(), hessian @ t, rtol=1e-12)


def test_tangent_is_not_differentiable_under_no_grad():
    w = ag.tensor([1.0, 2.0], dtype=ag.float64, requires_grad=True)
    with fwAD.dual_level():
        y = (fwAD.make_dual(w, ag.tensor([1.0, 1.0], dtype=ag.float64)) ** 3).sum()
        with ag.no_grad():
            tangent = fwAD.unpack_dual(y).tangent
        assert tangent.item() == pytest.approx(15.0) and not tangent.requires_grad


def test_a_graph_freed_by_backward_has_no_tangent_to_give():
    with fwAD.dual_level():
        y = (fwAD.make_dual(ag.tensor([1.0, 2.0]), ag.tensor([1.0, 1.0])) ** 2).sum()
        y.backward()
        with pytest.raises(RuntimeError, match="unpack tangents before calling backward, or pass retain_graph"):
            fwAD.unpack_dual(y)


def test_make_dual_outside_a_level_is_refused():
    with pytest.raises(RuntimeError, match="no level exists, make sure to enter_dual_level"):
        fwAD.make_dual(ag.tensor([1.0]), ag.tensor([1.0]))


def test_nested_levels_are_refused():
    with fwAD.dual_level():
        with pytest.raises(RuntimeError, match="Nested forward mode AD is not supported"):
            with fwAD.dual_level():
                pass
        dual = fwAD.make_dual(ag.tensor([1.0]), ag.tensor([2.0]))
        assert fwAD.unpack_dual(dual * 1).tangent.item() == 2.0  # the outer level survives the refusal


def test_make_dual_rejects_bad_tangents_and_levels():
    x = ag.tensor([1.0, 2.0, 3.0])
    with fwAD.dual_level():
        with pytest.raises(RuntimeError, match=r"Tensor is of size \[3\] while the given forward gradient is of size"):
            fwAD.make_dual(x, ag.tensor([1.0, 2.0]))
        with pytest.raises(ValueError, match="Expected primal to be floating point or complex, but got: int64"):
            fwAD.make_dual(ag.tensor([1, 2, 3]), ag.tensor([1.0, 2.0, 3.0]))
        with pytest.raises(ValueError, match="Expected tangent to be floating point or complex, but got: int64"):
            fwAD.make_dual(x, ag.tensor([1, 2, 3]))
        with pytest.raises(RuntimeError, match="Invalid level given to _make_dual"):
            fwAD.make_dual(x, x, level=3)
        dual = fwAD.make_dual(x, ag.tensor([1.0, 1.0, 1.0]))
        for already in (dual, dual * 2):
            with pytest.raises(RuntimeError, match="already has a forward gradient at the same level 0"):
                fwAD.make_dual(already, x)
        with pytest.raises(TypeError, match="must be Tensor, not int"):
            fwAD.unpack_dual(3)
    primal, tangent = fwAD.unpack_dual(x, level=0)  # a level that no longer exists holds no tangent
    assert primal is x and tangent is None


def test_unpack_dual_inside_trio_points_to_the_async_jvp():
    async def main():
        with fwAD.dual_level():
            dual = fwAD.make_dual(ag.tensor([1.0]), ag.tensor([1.0]))
            with pytest.raises(RuntimeError, match="actorgrad.functional.jvp"):
                fwAD.unpack_dual(dual * 2)

    trio.run(main)
