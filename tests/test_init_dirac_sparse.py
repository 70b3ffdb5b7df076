"""`nn.init.dirac_` and `sparse_`, and the deprecated names without the underscore that PyTorch still has."""

import math
import re
import warnings

import numpy as np
import pytest

import actorgrad as ag
from actorgrad import nn
from actorgrad.nn import functional as F


@pytest.mark.parametrize(("conv", "shape"), [
    (F.conv1d, (4, 4, 3)), (F.conv2d, (4, 4, 3, 5)), (F.conv3d, (4, 4, 3, 3, 1)),
])
def test_a_dirac_weight_makes_a_convolution_the_identity(conv, shape):
    weight = nn.init.dirac_(ag.empty(*shape, dtype=ag.float64))
    x = ag.tensor(np.random.default_rng(0).normal(size=(2, 4, *(6,) * (len(shape) - 2))))
    padding = tuple(k // 2 for k in shape[2:])
    np.testing.assert_array_equal(conv(x, weight, padding=padding).numpy(), x.numpy())


def test_dirac_with_groups_passes_each_groups_channels_through():
    weight = nn.init.dirac_(ag.empty(6, 2, 3), groups=3)
    x = ag.tensor(np.arange(2 * 6 * 5, dtype=np.float32).reshape(2, 6, 5))
    np.testing.assert_array_equal(F.conv1d(x, weight, padding=1, groups=3).numpy(), x.numpy())
    # More output than input channels: the extra ones of each group are zero.
    wide = nn.init.dirac_(ag.empty(3, 1, 1)).numpy()
    assert wide.ravel().tolist() == [1.0, 0.0, 0.0]


@pytest.mark.parametrize(("call", "text"), [
    (lambda: nn.init.dirac_(ag.empty(2, 2)), "Only tensors with 3, 4, or 5 dimensions are supported"),
    (lambda: nn.init.dirac_(ag.empty(5, 2, 3), groups=2), "dim 0 must be divisible by groups"),
    (lambda: nn.init.sparse_(ag.empty(2, 2, 2), 0.5), "Only tensors with 2 dimensions are supported"),
])
def test_bad_shapes_get_pytorchs_errors(call, text):
    with pytest.raises(ValueError, match=re.escape(text)):
        call()


@pytest.mark.parametrize("sparsity", [0.1, 0.5, 0.75, 1.0])
def test_sparse_zeroes_the_same_number_of_elements_in_every_column(sparsity):
    rows, cols = 40, 50
    generator = ag.Generator().manual_seed(1)
    values = nn.init.sparse_(ag.empty(rows, cols, dtype=ag.float64), sparsity, std=2.0, generator=generator).numpy()
    zeros = math.ceil(sparsity * rows)
    assert ((values == 0).sum(axis=0) == zeros).all()
    if zeros < rows:  # the rest are N(0, 4): at least 500 of them, so mean and std are within 4 standard errors
        kept = values[values != 0]
        assert abs(kept.std() - 2.0) < 0.3 and abs(kept.mean()) < 0.4


def test_sparse_repeats_with_a_seeded_generator():
    first, second = (nn.init.sparse_(ag.empty(8, 5), 0.5, generator=ag.Generator().manual_seed(4)) for _ in range(2))
    np.testing.assert_array_equal(first.numpy(), second.numpy())
    assert first.dtype == ag.float32


def test_init_writes_in_place_without_recording():
    weight = nn.Parameter(ag.ones(4, 4, 3))
    assert nn.init.dirac_(weight) is weight and weight.requires_grad and weight.grad_fn is None
    assert nn.init.sparse_(nn.Parameter(ag.ones(3, 3)), 0.3).grad_fn is None


OLD_NAMES = [
    ("uniform", (), {}), ("normal", (), {}), ("constant", (0.5,), {}), ("eye", (), {}), ("xavier_uniform", (), {}),
    ("xavier_normal", (), {}), ("kaiming_uniform", (), {}), ("kaiming_normal", (), {}), ("orthogonal", (), {}),
    ("sparse", (0.5,), {}),
]


@pytest.mark.parametrize(("old", "args", "kwargs"), OLD_NAMES)
def test_the_old_names_warn_and_do_what_the_new_ones_do(old, args, kwargs):
    new = getattr(nn.init, old + "_")
    ag.manual_seed(5)
    expected = new(ag.empty(4, 6), *args, **kwargs)
    ag.manual_seed(5)
    with pytest.warns(FutureWarning, match=re.escape(f"`nn.init.{old}` is now deprecated in favor of "
                                                     f"`nn.init.{old}_`.")):
        got = getattr(nn.init, old)(ag.empty(4, 6), *args, **kwargs)
    np.testing.assert_array_equal(got.numpy(), expected.numpy())
    assert getattr(nn.init, old).__name__ == old


def test_the_old_dirac_warns_pointing_at_the_caller():
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        nn.init.dirac(ag.empty(2, 2, 3))
    assert caught[0].category is FutureWarning and caught[0].filename == __file__


@pytest.mark.gpu
def test_dirac_and_sparse_fill_cuda_tensors():
    pytest.importorskip("cupy")
    cuda = ag.device("cuda:0")
    weight = nn.init.dirac_(ag.empty(2, 2, 3, device=cuda))
    assert weight.device == cuda and weight.cpu().numpy()[:, :, 1].tolist() == [[1.0, 0.0], [0.0, 1.0]]
    sparse = nn.init.sparse_(ag.empty(4, 3, device=cuda), 0.5)
    assert sparse.device == cuda and ((sparse.cpu().numpy() == 0).sum(axis=0) == 2).all()
