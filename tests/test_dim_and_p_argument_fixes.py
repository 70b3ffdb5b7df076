"""Arguments a fuzz review found read wrongly: a tuple where an op takes one dim, a numpy integer as a norm's p."""

import numpy as np
import pytest

import actorgrad as ag
import actorgrad.nn.functional as F


@pytest.mark.parametrize(
    "op",
    [
        lambda t, d: t.sort(dim=d),
        lambda t, d: t.topk(2, dim=d),
        lambda t, d: t.cumsum(dim=d),
        lambda t, d: t.cumprod(dim=d),
        lambda t, d: t.flatten(d),
    ],
)
@pytest.mark.parametrize("dim", [(), (0, 1)])
def test_a_tuple_of_dims_where_the_op_takes_one_is_refused(op, dim):
    """PyTorch's parser refuses it; the empty tuple used to crash with an IndexError, two dims used the first."""
    with pytest.raises(TypeError, match="dim"):
        op(ag.ones(3, 4), dim)


@pytest.mark.parametrize("p", [np.int64(2), np.int32(1), np.float64(3.0)])
def test_a_numpy_number_is_a_norms_p(p):
    x = np.random.default_rng(0).uniform(0.5, 2.0, size=(3, 4))
    t = ag.tensor(x, requires_grad=True)
    expected = (np.abs(x) ** float(p)).sum() ** (1 / float(p))
    norm = ag.norm(t, p=p)
    np.testing.assert_allclose(norm.item(), expected)
    norm.backward()
    np.testing.assert_allclose(t.grad.numpy(), x ** (float(p) - 1) * expected ** (1 - float(p)))
    rows = (np.abs(x) ** float(p)).sum(1, keepdims=True) ** (1 / float(p))
    np.testing.assert_allclose(F.normalize(ag.tensor(x), p=p).numpy(), x / rows)
