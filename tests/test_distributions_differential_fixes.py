"""Distribution behaviours found to differ from PyTorch's by a systematic differential review (every class, its
moments, densities, supports, transforms, KL pairs and argument checks), each checked here against an independent
expectation."""

import numpy as np
import pytest

import actorgrad as ag
from actorgrad.distributions import Categorical, Geometric, OneHotCategorical


# -- Geometric: probs of zero refused with PyTorch's ValueError, whatever the parameter's rank --------------------
@pytest.mark.parametrize("device", [None, "async_cpu:0"])
def test_geometric_refuses_zero_probs_given_as_a_zero_dim_tensor(device):
    probs = ag.tensor(0.0, dtype=ag.float64, device=device, requires_grad=True)
    message = (r"^Expected parameter probs \(Tensor of shape \(\)\) of distribution Geometric\(probs: 0\.0\) to be "
               r"positive but found invalid values:\ntensor\(\[0\.\]")
    with pytest.raises(ValueError, match=message):
        Geometric(probs=probs, validate_args=True)


def test_geometric_lists_each_zero_prob_once_in_a_flat_tensor():
    probs = ag.tensor([[0.5, 0.0], [0.0, 1.0]], dtype=ag.float64)
    with pytest.raises(ValueError, match=r"of shape \(2, 2\)\) .* to be positive but found invalid values:\n"
                                         r"tensor\(\[0\., 0\.\]"):
        Geometric(probs=probs, validate_args=True)


def test_geometric_with_positive_probs_still_builds_and_scores():
    p = 0.3
    dist = Geometric(probs=ag.tensor(p, dtype=ag.float64), validate_args=True)
    k = np.array([0.0, 1.0, 4.0])
    expected = k * np.log1p(-p) + np.log(p)  # P(K = k) = (1 - p)^k p
    np.testing.assert_allclose(dist.log_prob(ag.tensor(k)).numpy(), expected, rtol=1e-12)


# -- Categorical: sample shapes holding integer tensors (a count from `mask.sum()`), as torch.Size takes them -----
@pytest.mark.parametrize("sample_shape", [(ag.tensor(3),), ag.tensor([3, 2]), (np.int64(3), ag.tensor(2))])
def test_categorical_sample_shape_may_hold_integer_tensors(sample_shape):
    probs = ag.tensor([[0.0, 1.0, 0.0], [0.0, 0.0, 1.0]], dtype=ag.float64)  # every draw known: 1, then 2
    expected_shape = tuple(int(n) for n in sample_shape) + (2,)
    draws = Categorical(probs).sample(sample_shape)
    assert tuple(draws.shape) == expected_shape
    np.testing.assert_array_equal(draws.numpy(), np.broadcast_to([1, 2], expected_shape))
    one_hot = OneHotCategorical(probs).sample(sample_shape)
    np.testing.assert_array_equal(one_hot.numpy(), np.broadcast_to(probs.numpy(), expected_shape + (3,)))


def test_categorical_sample_shape_still_refuses_floats():
    with pytest.raises(TypeError, match="'float' object cannot be interpreted as an integer"):
        Categorical(ag.tensor([0.5, 0.5])).sample((2.5,))


@pytest.mark.gpu
def test_geometric_refuses_zero_probs_on_cuda():
    pytest.importorskip("cupy")
    probs = ag.tensor(0.0, dtype=ag.float64, device=ag.device("cuda:0"))
    with pytest.raises(ValueError, match=r"to be positive but found invalid values:\ntensor\(\[0\.\]") as caught:
        Geometric(probs=probs, validate_args=True)
    assert "device='cuda:0'" in str(caught.value)
