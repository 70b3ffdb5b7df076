"""nn.functional's fractional max pooling, pdist, gumbel_softmax, feature_alpha_dropout, the `_with_indices` pooling
forms, the in-place activations and the deprecated upsample names, as PyTorch's: values against plain loops or
closed forms written out here, gradients against finite differences in float64, warnings and error texts.

Messages were read off torch 2.13 (torch is not a test dependency).
"""

import itertools
import re

import numpy as np
import pytest

import actorgrad as ag
import actorgrad.nn as nn
import actorgrad.nn.functional as F
from actorgrad.autograd import gradcheck, gradgradcheck

TOL = {"eps": 1e-6, "atol": 1e-5, "rtol": 1e-4}


def _raises(fn, error, message):
    with pytest.raises(error, match=f"^{re.escape(message)}$"):
        fn()


# -- fractional max pooling ---------------------------------------------------------------------------------------
def _intervals(sample, size, out, kernel):
    """PyTorch's generate_intervals, one window start at a time."""
    if out == 1:
        return [size - kernel]
    alpha = (size - kernel) / (out - 1)
    return [int((i + sample) * alpha) - int(sample * alpha) for i in range(out - 1)] + [size - kernel]


def _fractional_reference(x, kernel, out, samples):
    """Each plane's windows from its samples (the first drives the last dim in 2-d, the first dim in 3-d), and
    each window's first maximum."""
    n, c, *sizes = x.shape
    dims = len(sizes)
    values, indices = np.zeros((n, c, *out)), np.zeros((n, c, *out), np.int64)
    for b, ch in itertools.product(range(n), range(c)):
        drive = samples[b, ch][::-1] if dims == 2 else samples[b, ch]
        starts = [_intervals(u, size, o, k) for u, size, o, k in zip(drive, sizes, out, kernel)]
        for place in np.ndindex(*out):
            best, best_index = -np.inf, None
            for offset in np.ndindex(*kernel):
                at = tuple(s[p] + o for s, p, o in zip(starts, place, offset))
                if x[(b, ch, *at)] > best:
                    best, best_index = x[(b, ch, *at)], np.ravel_multi_index(at, sizes)
            values[(b, ch, *place)], indices[(b, ch, *place)] = best, best_index
    return values, indices


@pytest.mark.parametrize("shape, kernel, out", [
    ((2, 3, 7, 9), (2, 3), (4, 5)),
    ((1, 2, 6, 6), (3, 3), (4, 1)),
    ((2, 2, 5, 6, 7), (2, 2, 3), (3, 4, 4)),
])
def test_fractional_max_pool_takes_the_windows_and_maxima_of_the_reference(shape, kernel, out):
    rng = np.random.default_rng(0)
    x = rng.standard_normal(shape)
    dims = len(kernel)
    samples = rng.random((shape[0], shape[1], dims))
    pool = F.fractional_max_pool2d if dims == 2 else F.fractional_max_pool3d
    values, indices = pool(ag.tensor(x), kernel, out, return_indices=True, _random_samples=ag.tensor(samples))
    expected_values, expected_indices = _fractional_reference(x, kernel, out, samples)
    np.testing.assert_array_equal(values.numpy(), expected_values)
    np.testing.assert_array_equal(indices.numpy(), expected_indices)
    with_indices = F.fractional_max_pool2d_with_indices if dims == 2 else F.fractional_max_pool3d_with_indices
    again = with_indices(ag.tensor(x), kernel, out, _random_samples=ag.tensor(samples))
    np.testing.assert_array_equal(again[1].numpy(), expected_indices)


def test_fractional_max_pool_gradients_pass_gradcheck_and_gradgradcheck():
    rng = np.random.default_rng(1)
    x = ag.tensor(rng.standard_normal((1, 2, 5, 6)), requires_grad=True)
    samples = ag.tensor(rng.random((1, 2, 2)))
    fn = lambda t: F.fractional_max_pool2d(t, 2, (3, 4), _random_samples=samples)  # noqa: E731
    assert fn(x).grad_fn.name() == "FractionalMaxPool2DBackward0"
    assert gradcheck(fn, [x], **TOL)
    assert gradgradcheck(lambda t: fn(t) ** 2, [x], **TOL)
    x3 = ag.tensor(rng.standard_normal((2, 4, 4, 5)), requires_grad=True)  # unbatched 3-d
    assert gradcheck(lambda t: F.fractional_max_pool3d(t, 2, output_ratio=0.5, _random_samples=ag.tensor(
        rng.random((1, 2, 3)))), [x3], **TOL)


def test_fractional_max_pool_picks_the_last_nan_and_draws_from_the_generator():
    x = ag.tensor([[[[1.0, float("nan"), 2.0, float("nan")]]]])
    values, index = F.fractional_max_pool2d(x, (1, 4), 1, return_indices=True)
    assert np.isnan(values.item()) and index.item() == 3
    y = ag.randn(2, 3, 8, 8)
    ag.manual_seed(5)
    first = F.fractional_max_pool2d(y, 2, output_ratio=(0.5, 0.5))
    ag.manual_seed(5)
    np.testing.assert_array_equal(F.fractional_max_pool2d(y, 2, output_ratio=(0.5, 0.5)).numpy(), first.numpy())
    assert first.shape == (2, 3, 4, 4)


def test_fractional_max_pool_layers_hold_their_settings():
    samples = ag.rand(1, 2, 2)
    layer = nn.FractionalMaxPool2d(2, output_size=3, return_indices=True, _random_samples=samples)
    assert repr(layer) == "FractionalMaxPool2d()" and layer.kernel_size == (2, 2) and layer.output_size == (3, 3)
    assert dict(layer.named_buffers())["_random_samples"] is samples
    x = ag.randn(1, 2, 6, 6)
    np.testing.assert_array_equal(layer(x)[1].numpy(), F.fractional_max_pool2d(
        x, 2, 3, return_indices=True, _random_samples=samples)[1].numpy())
    assert nn.FractionalMaxPool3d(2, output_ratio=0.5)(ag.randn(1, 1, 6, 6, 6)).shape == (1, 1, 3, 3, 3)
    _raises(lambda: nn.FractionalMaxPool2d(3), ValueError,
            "FractionalMaxPool2d requires specifying either an output size, or a pooling ratio")
    _raises(lambda: nn.FractionalMaxPool2d(3, 4, 0.5), ValueError,
            "only one of output_size and output_ratio may be specified")
    _raises(lambda: nn.FractionalMaxPool3d(3, output_ratio=(0.5, 1, 0.5)), ValueError,
            "output_ratio must be between 0 and 1 (got (0.5, 1, 0.5))")


X = ag.randn(2, 3, 8, 9)
X3 = ag.randn(2, 3, 6, 7, 8)


@pytest.mark.parametrize("fn, error, message", [
    (lambda: F.fractional_max_pool2d(X, 3), ValueError,
     "fractional_max_pool2d requires specifying either an output_size or an output_ratio"),
    (lambda: F.fractional_max_pool2d(X, 3, output_size=7), RuntimeError,
     "fractional_max_pool2d(): pool height 3 too large relative to input height 8"),
    (lambda: F.fractional_max_pool2d(X, (3, 3, 3), output_size=4), RuntimeError,
     "fractional_max_pool2d: kernel_size must either be a single Int or tuple of Ints"),
    (lambda: F.fractional_max_pool2d(X, 3, output_size=(4, 4, 4)), RuntimeError,
     "fractional_max_pool2d: output_size must either be a single Int or tuple of Ints"),
    (lambda: F.fractional_max_pool2d(X, 3, output_ratio=(0.5, 0.5, 0.5)), ValueError,
     "fractional_max_pool2d requires output_ratio to either be a single Int or tuple of Ints."),
    (lambda: F.fractional_max_pool2d(X, 3, 4, _random_samples=ag.rand(2, 3, 3)), RuntimeError,
     "Expect _random_samples.size(2) equals to 2; got 3."),
    (lambda: F.fractional_max_pool2d(X, 3, 4, _random_samples=ag.rand(1, 3, 2)), RuntimeError,
     "Expect _random_samples.size(0) no less then input batch size."),
    (lambda: F.fractional_max_pool2d(X, 3, 4, _random_samples=ag.rand(2, 4, 2)), RuntimeError,
     "Expect _random_samples.size(1) equals to input channel size."),
    (lambda: F.fractional_max_pool2d(X, 3, 4, _random_samples=ag.rand(2, 3, 2).double()), RuntimeError,
     "Expect _random_samples to have the same dtype as input"),
    (lambda: F.fractional_max_pool2d(ag.zeros(1, 2, 1, 8, 9), 3, 4, _random_samples=ag.rand(1, 2, 2)), RuntimeError,
     "fractional_max_pool2d(): Expected 3D or 4D tensor, but got: [1, 2, 1, 8, 9]"),
    (lambda: F.fractional_max_pool2d(ag.zeros(2, 0, 8, 9), 3, 4), RuntimeError,
     "fractional_max_pool2d(): Expected input to have non-zero size for non-batch dimensions, but got[2, 0, 8, 9] "
     "with dimension 1 being empty."),
    (lambda: F.fractional_max_pool2d(X.int(), 3, 4), NotImplementedError,
     "\"check_uniform_bounds\" not implemented for 'Int'"),
    (lambda: F.fractional_max_pool2d(X.int(), 3, 4, _random_samples=ag.rand(2, 3, 2).int()), NotImplementedError,
     "\"fractional_max_pool2d_out_frame\" not implemented for 'Int'"),
    (lambda: F.fractional_max_pool3d(X3, 3, output_size=4), RuntimeError,
     "fractional_max_pool3d_out(): pool time 3 too large relative to input time 6"),
    (lambda: F.fractional_max_pool3d(X3, 3, output_size=(3, 5, 3)), RuntimeError,
     "fractional_max_pool3d_out(): pool height 3 too large relative to input height 7"),
    (lambda: F.fractional_max_pool3d(X3, (3, 3), output_size=4), RuntimeError,
     "fractional_max_pool3d: kernel_size must either be a single Int or tuple of three Ints"),
    (lambda: F.fractional_max_pool3d(ag.zeros(7, 8, 9), 3, 4, _random_samples=ag.rand(1, 7, 3)), RuntimeError,
     "fractional_max_pool3d_out(): Expected 4D or 5D tensor, but got: [7, 8, 9]"),
    (lambda: F.fractional_max_pool3d(X3, 2, 3, _random_samples=ag.rand(2, 3, 2)), RuntimeError,
     "Expect _random_samples.size(2) equals to 3; got 2."),
])
def test_fractional_max_pool_errors_match_torch(fn, error, message):
    _raises(fn, error, message)


# -- the _with_indices forms --------------------------------------------------------------------------------------
@pytest.mark.parametrize("name, shape, args", [
    ("max_pool1d", (2, 3, 8), (3, 2, 1)),
    ("max_pool2d", (2, 3, 6, 7), (3, 2, 1)),
    ("max_pool3d", (1, 2, 4, 5, 6), (2,)),
    ("adaptive_max_pool1d", (2, 3, 8), (3,)),
    ("adaptive_max_pool2d", (2, 3, 6, 7), ((3, None),)),
    ("adaptive_max_pool3d", (1, 2, 4, 5, 6), (2,)),
])
def test_with_indices_forms_always_return_the_indices(name, shape, args):
    x = ag.randn(*shape)
    out, index = getattr(F, name + "_with_indices")(x, *args)
    expected = getattr(F, name)(x, *args, return_indices=True)
    np.testing.assert_array_equal(out.numpy(), expected[0].numpy())
    np.testing.assert_array_equal(index.numpy(), expected[1].numpy())
    assert isinstance(getattr(F, name + "_with_indices")(x, *args, return_indices=False), tuple)


# -- pdist ----------------------------------------------------------------------------------------------------------
P_VALUES = [0, 0.5, 1, 1.5, 2, 3, float("inf")]


@pytest.mark.parametrize("p", P_VALUES)
def test_pdist_gives_each_pair_of_rows_distance_in_row_major_order(p):
    x = np.random.default_rng(2).standard_normal((5, 3))
    x[3, 1] = x[1, 1]  # a zero difference in one coordinate
    expected = []
    for i, j in itertools.combinations(range(5), 2):
        d = np.abs(x[i] - x[j])
        expected.append(np.count_nonzero(d) if p == 0 else d.max() if p == np.inf else (d ** p).sum() ** (1 / p))
    np.testing.assert_allclose(F.pdist(ag.tensor(x), p).numpy(), expected, rtol=1e-12)


@pytest.mark.parametrize("p", [0.5, 1, 1.5, 2, 3, float("inf")])
def test_pdist_gradients_pass_gradcheck(p):
    x = ag.tensor(np.random.default_rng(3).standard_normal((4, 3)), requires_grad=True)
    assert gradcheck(lambda t: F.pdist(t, p), [x], **TOL)


def test_pdist_second_derivatives_pass_gradgradcheck():
    x = ag.tensor(np.random.default_rng(4).standard_normal((4, 2)), requires_grad=True)
    assert gradgradcheck(lambda t: F.pdist(t, 3), [x], **TOL)


@pytest.mark.parametrize("p", P_VALUES)
def test_pdist_passes_no_gradient_through_a_zero_distance(p):
    # rows 0 and 1 are equal: only the pairs with row 2 (at a distance of 2 along each axis) carry gradients
    x = ag.tensor([[0.0, 1.0], [0.0, 1.0], [2.0, 3.0]], dtype=ag.float64, requires_grad=True)
    F.pdist(x, p).backward(ag.tensor([5.0, 1.0, 2.0], dtype=ag.float64))
    # d dist / d x_i for x_i - x_2 = (-2, -2): sign(-2) |2|^(p-1) / dist^(p-1) per coordinate
    if p == 0:
        each = 0.0
    elif p == float("inf"):
        each = -1.0
    else:
        each = -(2.0 / (2 * 2.0 ** p) ** (1 / p)) ** (p - 1)
    expected = [[each, each], [2 * each, 2 * each], [-3 * each, -3 * each]]
    np.testing.assert_allclose(x.grad.numpy(), expected, rtol=1e-12)
    assert F.pdist(x, p).grad_fn.name() == "PdistBackward0"


def test_pdist_of_fewer_than_two_rows_is_empty_and_errors_match_torch():
    assert F.pdist(ag.randn(1, 3)).shape == (0,)
    np.testing.assert_array_equal(F.pdist(ag.randn(3, 0)).numpy(), [0.0, 0.0, 0.0])
    _raises(lambda: F.pdist(ag.randn(3, 2, 2)), RuntimeError, "pdist only supports 2D tensors, got: 3D")
    _raises(lambda: F.pdist(ag.zeros(3, 2, dtype=ag.int32)), RuntimeError, "pdist only supports floating-point dtypes")
    _raises(lambda: F.pdist(ag.randn(3, 2), -1), RuntimeError, "pdist only supports non-negative p values")


# -- gumbel_softmax ---------------------------------------------------------------------------------------------
def test_gumbel_softmax_is_the_softmax_of_logits_plus_the_generators_gumbel_noise():
    logits = ag.tensor([[0.5, -1.0, 2.0], [0.0, 0.3, -0.2]])
    ag.manual_seed(11)
    y = F.gumbel_softmax(logits, tau=0.7)
    ag.manual_seed(11)
    noise = -np.log(ag.zeros(2, 3).exponential_().numpy())
    z = (logits.numpy() + noise) / 0.7
    np.testing.assert_allclose(y.numpy(), np.exp(z) / np.exp(z).sum(-1, keepdims=True), rtol=1e-6)


def test_gumbel_softmax_samples_follow_the_categorical_distribution():
    ag.manual_seed(12)
    logits = ag.tensor([1.0, 0.0, -1.0], dtype=ag.float64)
    draws = F.gumbel_softmax(logits.expand(20000, 3), hard=True)
    frequencies = draws.numpy().mean(0)
    np.testing.assert_allclose(frequencies, np.exp([1.0, 0, -1]) / np.exp([1.0, 0, -1]).sum(), atol=0.015)


def test_hard_gumbel_softmax_is_one_hot_with_the_soft_samples_gradient():
    logits = ag.tensor(np.random.default_rng(5).standard_normal((3, 4)), requires_grad=True)
    weights = ag.tensor(np.random.default_rng(6).standard_normal((3, 4)))
    grads = []
    for hard in (True, False):
        ag.manual_seed(13)
        y = F.gumbel_softmax(logits, tau=0.5, hard=hard, dim=1)
        if hard:
            assert sorted(np.unique(y.detach().numpy())) == [0.0, 1.0] and (y.detach().numpy().sum(1) == 1).all()
        (grad,) = ag.autograd.grad((y * weights).sum(), [logits])
        grads.append(grad.numpy())
    np.testing.assert_allclose(grads[0], grads[1], rtol=1e-12)
    with pytest.warns(UserWarning, match="^`eps` parameter is deprecated and has no effect.$"):
        F.gumbel_softmax(logits, eps=1e-5)


# -- feature_alpha_dropout ----------------------------------------------------------------------------------------
def test_feature_alpha_dropout_drops_whole_channels_to_selus_limit_rescaled():
    p, limit = 0.4, 1.0507009873554805 * 1.6732632423543772  # -SELU(-inf): scale * alpha, as documented
    a = 1 / np.sqrt((limit ** 2 * p + 1) * (1 - p))
    ag.manual_seed(15)
    x = ag.randn(8, 6, 3, 2, dtype=ag.float64)
    y = F.feature_alpha_dropout(x, p, training=True).numpy()
    kept = np.isclose(y, a * x.numpy() + limit * a * p, rtol=0, atol=1e-12).all(axis=(2, 3))
    dropped = np.isclose(y, -limit * a + limit * a * p, rtol=0, atol=1e-12).all(axis=(2, 3))
    assert (kept ^ dropped).all()  # each channel one or the other, as a whole
    assert 0.1 < dropped.mean() < 0.7
    assert F.feature_alpha_dropout(x, p, training=False) is x
    _raises(lambda: F.feature_alpha_dropout(ag.randn(3), 0.5, True), RuntimeError,
            "Feature dropout requires at least 2 dimensions in the input")
    _raises(lambda: F.feature_alpha_dropout(x, 1.5, True), ValueError,
            "dropout probability has to be between 0 and 1, but got 1.5")
    layer = nn.FeatureAlphaDropout(0.2)
    assert repr(layer) == "FeatureAlphaDropout(p=0.2, inplace=False)"
    assert layer.eval()(x) is x


def test_feature_alpha_dropout_gradient_is_the_kept_channels_scale():
    p, limit = 0.5, 1.0507009873554805 * 1.6732632423543772  # -SELU(-inf): scale * alpha, as documented
    a = 1 / np.sqrt((limit ** 2 * p + 1) * (1 - p))
    ag.manual_seed(16)
    x = ag.randn(4, 5, 3, dtype=ag.float64, requires_grad=True)
    y = F.feature_alpha_dropout(x, p, training=True)
    y.sum().backward()
    dropped = np.isclose(y.detach().numpy(), -limit * a + limit * a * p, rtol=0, atol=1e-12).all(-1)
    expected = np.where(dropped[..., None], 0.0, a) * np.ones((4, 5, 3))
    np.testing.assert_allclose(x.grad.numpy(), expected, rtol=1e-12)


# -- in-place activations ------------------------------------------------------------------------------------------
INPLACE = [
    ("relu_", "relu", ()), ("elu_", "elu", (0.7,)), ("celu_", "celu", (1.3,)), ("selu_", "selu", ()),
    ("leaky_relu_", "leaky_relu", (0.2,)), ("hardtanh_", "hardtanh", (-0.5, 0.8)),
    ("rrelu_", "rrelu", (0.1, 0.3, False)), ("threshold_", "threshold", (0.1, -2.0)),
]


@pytest.mark.parametrize("name, plain, args", INPLACE)
def test_inplace_activations_write_the_activation_into_their_input(name, plain, args):
    x = ag.tensor(np.random.default_rng(7).standard_normal((3, 4)))
    expected = getattr(F, plain)(x, *args).numpy()
    version = x._version
    assert getattr(F, name)(x, *args) is x
    np.testing.assert_array_equal(x.numpy(), expected)
    assert x._version == version + 1
    leaf = ag.randn(2, requires_grad=True)
    with pytest.raises(RuntimeError, match="a leaf Variable that requires grad is being used in an in-place"):
        getattr(F, name)(leaf, *args)


@pytest.mark.parametrize("name, plain, args", INPLACE)
def test_inplace_activations_gradients_pass_gradcheck(name, plain, args):
    values = np.random.default_rng(8).standard_normal((3, 4))
    values[np.abs(values) < 0.2] += 0.5  # away from the kinks at 0
    x = ag.tensor(values, requires_grad=True)
    assert gradcheck(lambda t: getattr(F, name)(t * 1.0, *args), [x], **TOL)


# -- upsample ---------------------------------------------------------------------------------------------------
@pytest.mark.parametrize("name, kwargs, mode_kwargs", [
    ("upsample", {"scale_factor": 2, "mode": "bilinear", "align_corners": False},
     {"mode": "bilinear", "align_corners": False}),
    ("upsample_nearest", {"size": (3, 5)}, {"mode": "nearest"}),
    ("upsample_bilinear", {"scale_factor": 1.5}, {"mode": "bilinear", "align_corners": True}),
])
def test_upsample_names_warn_and_interpolate(name, kwargs, mode_kwargs):
    x = ag.randn(1, 2, 2, 3)
    with pytest.warns(UserWarning, match=f"^`nn.functional.{name}` is deprecated. Use `nn.functional.interpolate` "
                                         "instead.$"):
        y = getattr(F, name)(x, **kwargs)
    sizes = {k: v for k, v in kwargs.items() if k in ("size", "scale_factor")}
    np.testing.assert_array_equal(y.numpy(), F.interpolate(x, **sizes, **mode_kwargs).numpy())


@pytest.mark.gpu
def test_functional_parity_ops_on_cuda_give_the_cpu_numbers_and_gradients(cupy):
    rng = np.random.default_rng(9)
    x = rng.standard_normal((2, 3, 6, 7))
    samples = rng.random((2, 3, 2))
    cases = [
        lambda t: F.fractional_max_pool2d(t, 2, (3, 4), _random_samples=ag.tensor(samples, device=t.device)),
        lambda t: F.pdist(t.reshape(12, 21), 1.5),
        lambda t: F.elu_(t * 1.0),
    ]
    for fn in cases:
        results = []
        for device in ("cpu", "cuda"):
            leaf = ag.tensor(x, device=device, requires_grad=True)
            y = fn(leaf)
            (y * y).sum().backward()
            assert y.device is ag.device(device)
            results.append((y.detach().cpu().numpy(), leaf.grad.cpu().numpy()))
        for got, expected in zip(*results):
            np.testing.assert_allclose(got, expected, rtol=1e-12, atol=1e-12)
