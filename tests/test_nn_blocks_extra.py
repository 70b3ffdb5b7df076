"""More nn building blocks, as functions and modules: the shrink activations and rrelu, channel and alpha dropout,
instance, RMS and local response normalisation, cosine similarity and pairwise distance, the padding layers.

Expected numbers come from numpy written out of each block's documented formula (`_instance_norm_ref`,
`_rms_norm_ref`, `_local_response_norm_ref`, `_cosine_similarity_ref`, np.pad for the padding layers) or are exact
closed forms; gradients are checked against finite differences in float64 (away from kinks); reprs and error texts
are PyTorch's.
"""

import math
import warnings

import numpy as np
import pytest

import actorgrad as ag
from actorgrad.autograd import gradcheck, gradgradcheck
from actorgrad.nn import activation as A
from actorgrad.nn import distance as D
from actorgrad.nn import dropout as Do
from actorgrad.nn import normalization as N
from actorgrad.nn import padding_layers as P
from actorgrad.ops.distances import cosine_similarity, pairwise_distance
from actorgrad.ops.normalization import instance_norm, local_response_norm, rms_norm
from actorgrad.ops.piecewise_linear_activations import hardshrink, rrelu, softshrink
from actorgrad.ops.regularization import alpha_dropout, dropout, dropout1d, dropout2d, dropout3d

X = [[[0.3, -1.2, 2.0, 0.5], [1.5, -0.4, 0.1, -2.2], [0.7, 0.9, -1.1, 0.2]],
     [[-0.6, 1.3, 0.8, -0.1], [2.1, 0.4, -0.9, 1.0], [-1.4, 0.6, 0.3, -0.7]]]


def x64(values=X, requires_grad=True):
    return ag.tensor(values, dtype=ag.float64, requires_grad=requires_grad)


def close(t, expected, rtol=1e-9):
    np.testing.assert_allclose(t.detach().numpy(), expected, rtol=rtol, atol=1e-10)


# -- hardshrink, softshrink, rrelu ------------------------------------------------------------------------------------
SHRINK_IN = [-1.0, -0.5, 0.2, 0.5, 2.0, math.nan]


def test_hardshrink_keeps_values_outside_lambd_and_nan():
    y = hardshrink(x64(SHRINK_IN))
    close(y, [-1.0, 0.0, 0.0, 0.0, 2.0, math.nan])  # x where |x| > 0.5, else 0 (|0.5| is not > 0.5)
    assert y.grad_fn.name() == "HardshrinkBackward0"
    assert ag.hardshrink(x64([0.7]), 0.75).item() == 0.0 and x64([0.7]).hardshrink(0.25).item() == 0.7


def test_shrink_gradients_pass_outside_lambd_only_and_at_nan():
    for f in (hardshrink, softshrink):
        x = x64(SHRINK_IN)
        f(x).sum().backward()
        assert x.grad.tolist() == [1.0, 0.0, 0.0, 0.0, 1.0, 1.0]


def test_softshrink_moves_values_towards_zero_by_lambd():
    y = softshrink(x64(SHRINK_IN))
    close(y, [-0.5, 0.0, 0.0, 0.0, 1.5, math.nan])  # x - sign(x) * 0.5 where |x| > 0.5, else 0
    assert y.grad_fn.name() == "SoftshrinkBackward0"


@pytest.mark.parametrize("f", [hardshrink, softshrink, lambda x: rrelu(x, 0.1, 0.3)])
def test_shrinks_and_eval_rrelu_differentiate_twice(f):
    x = x64([-1.3, -0.2, 0.35, 0.9, 2.4])
    assert gradcheck(f, (x,)) and gradgradcheck(f, (x,))


def test_shrinks_refuse_what_pytorch_refuses():
    with pytest.raises(RuntimeError, match=r"^lambda must be in range \[0, 1.79769e\+308\] for input dtype Double, "
                                           r"but found -0.25$"):
        softshrink(x64([1.0]), -0.25)
    with pytest.raises(RuntimeError, match=r"^lambda must be in range \[0, 65504\] for input dtype Half, "
                                           r"but found -1$"):
        softshrink(ag.ones(2, dtype=ag.float16), -1.0)
    with pytest.raises(NotImplementedError, match="^\"hardshrink_cpu\" not implemented for 'Long'$"):
        hardshrink(ag.tensor([1, 2]))
    with pytest.raises(NotImplementedError, match="^\"softshrink_check\" not implemented for 'Long'$"):
        softshrink(ag.tensor([1, 2]))
    close(hardshrink(x64([-1.0, 0.2]), -1.0), [-1.0, 0.2])  # a negative lambd is fine for hardshrink


def test_rrelu_in_eval_uses_the_mean_slope():
    x = np.array([-1.0, -0.5, 0.2, 0.5, 2.0])
    y = rrelu(x64(x))
    close(y, np.where(x < 0, x * (1 / 8 + 1 / 3) / 2, x), rtol=1e-15)  # the defaults lower=1/8, upper=1/3
    assert y.grad_fn.name() == "RreluWithNoiseBackward0"


def test_rrelu_in_training_draws_a_slope_per_element_from_the_generator():
    x = x64(-np.linspace(1.0, 2.0, 50))
    ag.manual_seed(3)
    y = rrelu(x, 0.1, 0.3, training=True)
    slopes = (y / x).detach().numpy()
    assert ((slopes >= 0.1) & (slopes <= 0.3)).all() and len(set(slopes.round(12))) == 50
    ag.manual_seed(3)
    np.testing.assert_array_equal(rrelu(x, 0.1, 0.3, training=True).detach().numpy(), y.detach().numpy())
    y.sum().backward()
    np.testing.assert_allclose(x.grad.numpy(), slopes, rtol=1e-12)
    positive = x64([0.5, 3.0])
    close(rrelu(positive, training=True), [0.5, 3.0], rtol=0)


def test_rrelu_inplace_and_its_errors():
    x = x64([-2.0, 1.0], requires_grad=False)
    assert rrelu(x, 0.5, 0.5, True, inplace=True) is x and x.tolist() == [-1.0, 1.0]
    with pytest.raises(RuntimeError, match="^Lower bound should be less than or equal to the upper bound$"):
        rrelu(x, 0.5, 0.1)
    with pytest.raises(NotImplementedError, match="^\"rrelu_with_noise_out_cpu\" not implemented for 'Long'$"):
        rrelu(ag.tensor([1, 2]), training=True)


def test_shrink_and_rrelu_modules():
    assert repr(A.Hardshrink()) == "Hardshrink(0.5)" and repr(A.Softshrink(0.25)) == "Softshrink(0.25)"
    assert repr(A.RReLU()) == "RReLU(lower=0.125, upper=0.3333333333333333)"
    assert repr(A.RReLU(0.1, 0.2, True)) == "RReLU(lower=0.1, upper=0.2, inplace=True)"
    close(A.Softshrink(1.0)(x64([3.0, -0.5])), [2.0, 0.0])
    m = A.RReLU(0.2, 0.4)
    x = x64(-np.ones(20))
    assert len(set(m(x).tolist())) > 1  # training: drawn slopes
    m.eval()
    assert m(x).tolist() == [-(0.2 + 0.4) / 2] * 20


def test_softmax2d_normalises_over_the_channels():
    x = x64(X).reshape(2, 3, 2, 2)
    y = A.Softmax2d()(x)
    close(y.sum(-3), np.ones((2, 2, 2)))
    close(y, ag.softmax(x, -3).detach().numpy())
    assert A.Softmax2d()(x[0]).shape == (3, 2, 2) and repr(A.Softmax2d()) == "Softmax2d()"
    with pytest.raises(ValueError, match="^Softmax2d: expected input to be 3D or 4D, got 2D instead$"):
        A.Softmax2d()(ag.ones(2, 3))


# -- channel dropout, alpha dropout ---------------------------------------------------------------------------------
@pytest.mark.parametrize(("f", "shape", "channels"), [
    (dropout1d, (4, 6, 5), (4, 6)),
    (dropout1d, (6, 5), (6,)),  # unbatched
    (dropout2d, (4, 6, 3, 2), (4, 6)),
    (dropout3d, (4, 6, 2, 2, 2), (4, 6)),
    (dropout3d, (6, 2, 2, 2), (6,)),  # unbatched
])
def test_channel_dropout_zeroes_whole_channels_and_scales_the_rest(f, shape, channels):
    ag.manual_seed(0)
    x = ag.ones(*shape, dtype=ag.float64, requires_grad=True)
    y = f(x, 0.25)
    per_channel = y.detach().numpy().reshape(*channels, -1)
    assert set(np.unique(per_channel)) == {0.0, 4 / 3}
    assert (per_channel.min(-1) == per_channel.max(-1)).all()  # one value per channel
    y.sum().backward()
    np.testing.assert_array_equal(x.grad.numpy(), y.detach().numpy())
    assert y.grad_fn.name() == "MulBackward0"


def test_channel_dropout_is_the_identity_in_eval_or_at_p_0_and_repeats_under_a_seed():
    x = ag.ones(2, 3, 4)
    assert dropout1d(x, 0.5, training=False) is x and dropout1d(x, 0.0) is x
    ag.manual_seed(7)
    first = dropout1d(x, 0.5)
    ag.manual_seed(7)
    np.testing.assert_array_equal(dropout1d(x, 0.5).numpy(), first.numpy())
    assert not dropout1d(x, 1.0).numpy().any()
    y = ag.ones(2, 3, 4)
    assert dropout1d(y, 0.5, inplace=True) is y


def test_channel_dropout_errors_and_warnings():
    with pytest.raises(ValueError, match="^dropout probability has to be between 0 and 1, but got 1.5$"):
        dropout1d(ag.ones(2, 3), 1.5)
    with pytest.raises(RuntimeError, match=r"^dropout1d: Expected 2D or 3D input, but received a 4D input\. Note "):
        dropout1d(ag.ones(1, 2, 3, 4))
    with pytest.warns(UserWarning, match=r"^dropout2d: Received a 3D input to dropout2d and assuming that "
                                         r"channel-wise 1D dropout behavior is desired") as record:
        dropout2d(ag.ones(2, 3, 4))
    assert record[0].filename == __file__
    with pytest.warns(UserWarning, match=r"^dropout3d: Received a 2-D input to dropout3d, which is deprecated"):
        dropout3d(ag.ones(2, 3))
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        with pytest.raises(RuntimeError, match="^Feature dropout requires at least 2 dimensions in the input$"):
            dropout2d(ag.ones(3))


def test_dropout_of_an_empty_tensor_returns_it():
    x = ag.ones(0, 3)
    assert dropout(x) is x and dropout2d(ag.ones(2, 0, 3, 3)).shape == (2, 0, 3, 3)


def test_alpha_dropout_sets_dropped_values_to_selus_limit_then_scales_and_shifts():
    p, alpha = 0.2, 1.0507009873554805 * 1.6732632423543772  # -SELU(-inf): scale * alpha, as documented
    a = 1 / math.sqrt((alpha * alpha * p + 1) * (1 - p))
    ag.manual_seed(1)
    x = x64(np.linspace(-1.0, 1.0, 200))
    y = alpha_dropout(x, p, training=True)
    kept = np.isclose(y.detach().numpy(), x.detach().numpy() * a + alpha * a * p, rtol=1e-13)
    dropped = np.isclose(y.detach().numpy(), alpha * a * (p - 1), rtol=1e-13)
    assert (kept ^ dropped).all() and 0.1 < dropped.mean() < 0.3
    y.sum().backward()
    np.testing.assert_allclose(x.grad.numpy(), np.where(kept, a, 0.0), rtol=1e-14)
    assert y.grad_fn.name() == "AddBackward0"


def test_alpha_dropout_keeps_a_standard_normal_input_standard():
    ag.manual_seed(2)
    y = alpha_dropout(ag.randn(200000, dtype=ag.float64), 0.3, training=True)
    assert abs(y.mean().item()) < 0.01 and abs(y.std().item() - 1) < 0.01


def test_alpha_dropout_is_the_identity_in_eval_and_by_default():
    x = ag.ones(3)
    assert alpha_dropout(x) is x and alpha_dropout(x, 0.5, False) is x
    assert alpha_dropout(x, 1.0, True).tolist() == [0.0, 0.0, 0.0]
    with pytest.raises(ValueError, match="^dropout probability has to be between 0 and 1, but got -0.1$"):
        alpha_dropout(x, -0.1)


def test_dropout_modules_train_and_eval():
    for cls, shape in ((Do.Dropout1d, (2, 3, 4)), (Do.Dropout2d, (2, 3, 2, 2)), (Do.Dropout3d, (2, 3, 1, 2, 2)),
                       (Do.AlphaDropout, (2, 3))):
        m = cls(0.5)
        assert repr(m) == f"{cls.__name__}(p=0.5, inplace=False)"
        x = ag.ones(*shape)
        ag.manual_seed(0)
        assert not np.array_equal(m(x).numpy(), x.numpy())
        m.eval()
        assert m(x) is x
    with pytest.raises(ValueError, match="^dropout probability has to be between 0 and 1, but got 2$"):
        Do.Dropout2d(2)


# -- instance_norm and InstanceNorm1d/2d ----------------------------------------------------------------------------
W = [0.5, -1.0, 2.0]
B = [0.1, 0.2, -0.3]
EPS = 1e-5


def _instance_norm_ref(x, w=W, b=B, momentum=0.2):
    """Each sample's channel normalised by its own mean and biased variance, then scaled and shifted per channel;
    the running stats move by `momentum` towards the samples' mean statistics (the variance unbiased)."""
    x = np.asarray(x)
    mean, var = x.mean(-1, keepdims=True), x.var(-1, keepdims=True)
    y = (x - mean) / np.sqrt(var + EPS) * np.reshape(w, (-1, 1)) + np.reshape(b, (-1, 1))
    running_mean = momentum * mean[..., 0].mean(0)
    running_var = (1 - momentum) + momentum * x.var(-1, ddof=1).mean(0)
    return y, running_mean, running_var


def _central_grad(f, x, h=1e-6):
    """d f(x).sum() / dx by central differences, for a numpy f."""
    grad = np.zeros(x.shape)
    for j in range(x.size):
        step = np.zeros(x.shape)
        step.flat[j] = h
        grad.flat[j] = (f(x + step).sum() - f(x - step).sum()) / (2 * h)
    return grad


def test_instance_norm_normalises_each_sample_and_channel_and_updates_running_stats():
    x, w, b = x64(), x64(W), x64(B)
    rm, rv = ag.zeros(3, dtype=ag.float64), ag.ones(3, dtype=ag.float64)
    y = instance_norm(x, rm, rv, w, b, momentum=0.2)
    expected, running_mean, running_var = _instance_norm_ref(X)
    close(y, expected, rtol=1e-12)
    close(rm, running_mean, rtol=1e-12)
    close(rv, running_var, rtol=1e-12)
    (y ** 3).sum().backward()
    normalised = (expected - np.reshape(B, (-1, 1))) / np.reshape(W, (-1, 1))
    close(w.grad, (3 * expected ** 2 * normalised).sum((0, 2)))  # d (y ** 3) / dw = 3 y ** 2 * the normalised x
    close(b.grad, (3 * expected ** 2).sum((0, 2)))
    close(x.grad, _central_grad(lambda t: _instance_norm_ref(t)[0] ** 3, np.array(X)), rtol=1e-6)


def test_instance_norm_in_eval_uses_the_running_stats():
    running_mean, running_var = _instance_norm_ref(X)[1:]
    rm, rv = x64(running_mean, False), x64(running_var, False)
    y = instance_norm(x64(), rm, rv, x64(W), x64(B), use_input_stats=False)
    spread = np.sqrt(running_var + EPS).reshape(-1, 1)
    close(y, (np.array(X) - running_mean.reshape(-1, 1)) / spread * np.reshape(W, (-1, 1)) + np.reshape(B, (-1, 1)),
          rtol=1e-12)
    close(rm, running_mean, rtol=0)  # not updated


def test_instance_norm_gradients():
    assert gradcheck(lambda x, w, b: instance_norm(x, weight=w, bias=b), (x64(), x64(W), x64(B)))
    assert gradgradcheck(lambda x: instance_norm(x), (x64(),))


def test_instance_norm_errors():
    with pytest.raises(ValueError, match=r"^Expected more than 1 spatial element when training, got input size "
                                         r"\[2, 3, 1\]$"):
        instance_norm(ag.ones(2, 3, 1))
    with pytest.raises(RuntimeError, match="^Expected running_mean and running_var to be defined when "
                                           "use_input_stats is false$"):
        instance_norm(ag.ones(2, 3, 4), running_mean=ag.zeros(3), use_input_stats=False)
    with pytest.raises(RuntimeError, match="^weight should contain 6 elements not 8$"):
        instance_norm(ag.ones(2, 3, 4), weight=ag.ones(4))


def test_instance_norm_modules_parameters_buffers_and_reprs():
    m = N.InstanceNorm1d(3)
    assert repr(m) == ("InstanceNorm1d(3, eps=1e-05, momentum=0.1, affine=False, bias=False, "
                       "track_running_stats=False)")
    assert list(m.state_dict()) == [] and m.weight is None and m.running_mean is None
    m = N.InstanceNorm2d(3, affine=True, track_running_stats=True)
    assert repr(m) == "InstanceNorm2d(3, eps=1e-05, momentum=0.1, affine=True, bias=True, track_running_stats=True)"
    assert list(m.state_dict()) == ["weight", "bias", "running_mean", "running_var", "num_batches_tracked"]
    assert [name for name, _ in m.named_parameters()] == ["weight", "bias"]
    assert m.weight.tolist() == [1.0, 1.0, 1.0] and m.bias.tolist() == [0.0, 0.0, 0.0]
    assert list(N.InstanceNorm1d(3, track_running_stats=True).state_dict()) == [
        "running_mean", "running_var", "num_batches_tracked"]


def test_instance_norm_module_train_eval_and_unbatched_inputs():
    m = N.InstanceNorm1d(3, affine=True, track_running_stats=True, momentum=0.2).double()
    m.weight.data = x64(W, False)
    m.bias.data = x64(B, False)
    y = m(x64())
    expected, running_mean, running_var = _instance_norm_ref(X)
    close(y, expected, rtol=1e-12)
    close(m.running_mean, running_mean, rtol=1e-12)
    assert m.num_batches_tracked.item() == 0  # InstanceNorm never counts, as PyTorch's
    m.eval()
    expected = instance_norm(x64(), x64(running_mean, False), x64(running_var, False), x64(W), x64(B),
                             use_input_stats=False)  # running statistics that require grad are refused
    close(m(x64()), expected.detach().numpy(), rtol=1e-12)
    close(m(x64()[1]), m(x64())[1].detach().numpy())
    untracked = N.InstanceNorm1d(3).eval()  # no running stats: batch statistics in eval too
    close(untracked(x64()), instance_norm(x64()).detach().numpy())


def test_instance_norm_module_errors_and_warning():
    with pytest.raises(ValueError, match=r"^expected 2D or 3D input \(got 4D input\)$"):
        N.InstanceNorm1d(3)(ag.ones(1, 3, 2, 2))
    with pytest.raises(ValueError, match=r"^expected 3D or 4D input \(got 2D input\)$"):
        N.InstanceNorm2d(3)(ag.ones(3, 2))
    with pytest.raises(ValueError, match=r"^expected input's size at dim=0 to match num_features \(3\), but got: 4\.$"):
        N.InstanceNorm1d(3, affine=True)(ag.randn(4, 2))
    with pytest.warns(UserWarning, match="^input's size at dim=0 does not match num_features. You can silence"):
        N.InstanceNorm1d(3)(ag.randn(4, 2))


# -- rms_norm and RMSNorm -------------------------------------------------------------------------------------------
def _rms_norm_ref(x, dims, weight=1.0, eps=None):
    """x / sqrt(mean(x ** 2 over the last `dims` dims) + eps) * weight; eps defaults to the dtype's machine epsilon."""
    x = np.asarray(x)
    eps = np.finfo(x.dtype).eps if eps is None else eps
    return x / np.sqrt((x * x).mean(tuple(range(-dims, 0)), keepdims=True) + eps) * weight


def test_rms_norm_values():
    y = rms_norm(x64(), [4], x64([1.5, -0.5, 2.0, 1.0]))
    close(y, _rms_norm_ref(X, 1, np.array([1.5, -0.5, 2.0, 1.0])), rtol=1e-12)
    close(rms_norm(x64(), (3, 4), eps=0.5), _rms_norm_ref(X, 2, eps=0.5), rtol=1e-12)


def test_rms_norm_default_eps_is_the_dtypes_machine_epsilon():
    small = np.array([[1e-4, -1e-4]])  # mean square 1e-8: float32's eps (1.2e-7) dominates it, float64's does not
    single = rms_norm(ag.tensor(small, dtype=ag.float32), [2]).numpy()
    np.testing.assert_allclose(single, _rms_norm_ref(small.astype(np.float32), 1), rtol=1e-6)
    assert abs(single[0, 0] - 0.278) < 1e-3
    close(rms_norm(x64(small), [2]), _rms_norm_ref(small, 1), rtol=1e-14)
    half = rms_norm(ag.tensor(small, dtype=ag.float16), [2])  # computed in float32, with float32's eps
    assert half.dtype == ag.float16
    np.testing.assert_allclose(half.numpy().astype(np.float64), _rms_norm_ref(small.astype(np.float32), 1),
                               rtol=1e-3)


def test_rms_norm_gradients():
    assert gradcheck(lambda x, w: rms_norm(x, [4], w), (x64(), x64([1.5, -0.5, 2.0, 1.0])))
    assert gradgradcheck(lambda x: rms_norm(x, [3, 4], eps=0.1), (x64(),))


def test_rms_norm_errors():
    x = ag.ones(2, 3)
    with pytest.raises(RuntimeError, match=r"^Given normalized_shape=\[4, 3\], expected input with shape \[\*4, 3\], "
                                           r"but got input of size\[2, 3\]$"):
        rms_norm(x, [4, 3])
    with pytest.raises(RuntimeError, match=r"^Expected weight to be of same shape as normalized_shape, but got weight "
                                           r"of shape \[4\] and normalized_shape = \[3\]$"):
        rms_norm(x, [3], ag.ones(4))
    with pytest.raises(RuntimeError, match=r"^Expected normalized_shape to be at least 1-dimensional"):
        rms_norm(x, [])
    with pytest.raises(ValueError, match="^Input tensor must have at least 3 dimensions, but got 2$"):
        rms_norm(x, [2, 3, 4])
    with pytest.raises(NotImplementedError, match="^\"rms_norm\" not implemented for 'Long'$"):
        rms_norm(ag.tensor([[1, 2]]), [2])


def test_rms_norm_module():
    m = N.RMSNorm(4)
    assert repr(m) == "RMSNorm((4,), eps=None, elementwise_affine=True)"
    assert list(m.state_dict()) == ["weight"] and m.weight.tolist() == [1.0] * 4
    m = N.RMSNorm([3, 4], eps=1e-3, elementwise_affine=False, dtype=ag.float64)
    assert repr(m) == "RMSNorm((3, 4), eps=0.001, elementwise_affine=False)"
    assert m.weight is None and list(m.state_dict()) == []
    close(m(x64()), rms_norm(x64(), (3, 4), eps=1e-3).detach().numpy())


# -- local_response_norm and LocalResponseNorm ----------------------------------------------------------------------
def _local_response_norm_ref(x, size, alpha, beta, k):
    """b_c = a_c / (k + alpha / size * sum of a_c'^2 over the channels c' from c - size // 2 to c + (size - 1) // 2
    that exist) ** beta."""
    x = np.asarray(x)
    out = np.zeros(x.shape)
    for c in range(x.shape[1]):
        near = x[:, max(c - size // 2, 0):c + (size - 1) // 2 + 1]
        out[:, c] = x[:, c] / (k + alpha / size * (near * near).sum(1)) ** beta
    return out


def test_local_response_norm_values():
    close(local_response_norm(x64(), 2, alpha=0.5, beta=0.75, k=1.5), _local_response_norm_ref(X, 2, 0.5, 0.75, 1.5),
          rtol=1e-12)
    x4 = np.reshape(X, (2, 3, 2, 2))
    close(local_response_norm(x64(x4), 3, alpha=0.3, beta=0.5, k=2.0), _local_response_norm_ref(x4, 3, 0.3, 0.5, 2.0),
          rtol=1e-12)


def test_local_response_norm_gradients_errors_and_module():
    assert gradcheck(lambda x: local_response_norm(x, 4, 0.5, 0.75, 1.5), (x64(),))
    with pytest.raises(ValueError, match=r"^Expected 3D or higher dimensionality {26}input \(got 2 dimensions\)$"):
        local_response_norm(ag.ones(2, 3), 2)
    empty = ag.ones(0, 3, 2)
    assert local_response_norm(empty, 2) is empty
    m = N.LocalResponseNorm(2, alpha=0.5, beta=0.75, k=1.5)
    assert repr(N.LocalResponseNorm(2)) == "LocalResponseNorm(2, alpha=0.0001, beta=0.75, k=1.0)"
    close(m(x64()), local_response_norm(x64(), 2, 0.5, 0.75, 1.5).detach().numpy())


# -- cosine_similarity, pairwise_distance ---------------------------------------------------------------------------
A1 = [[1.0, 2.0, -1.0], [0.5, -0.5, 3.0]]
A2 = [[2.0, 0.0, 1.0], [1.0, 1.0, 1.0]]
COSINE_EPS = 1e-8


def _cosine_similarity_ref(a, b, dim=1):
    """sum(a / max(|a|, eps) * b / max(|b|, eps)) along `dim`, and its gradient in a: PyTorch clamps the norm's
    value only, so the gradient differentiates |a| itself (d|a|/da = a / |a|, 0 at a = 0)."""
    a, b = np.asarray(a), np.asarray(b)
    norm_a, norm_b = (np.linalg.norm(v, axis=dim, keepdims=True) for v in (a, b))
    clamped_a, unit_b = np.maximum(norm_a, COSINE_EPS), b / np.maximum(norm_b, COSINE_EPS)
    value = (a / clamped_a * unit_b).sum(dim)
    direction = np.divide(a, norm_a, out=np.zeros(a.shape), where=norm_a > 0)
    grad = unit_b / clamped_a - (a * unit_b).sum(dim, keepdims=True) / clamped_a ** 2 * direction
    return value, grad


def test_cosine_similarity_values_and_gradients():
    close(cosine_similarity(x64(A1), x64(A2)), _cosine_similarity_ref(A1, A2)[0], rtol=1e-14)
    close(cosine_similarity(x64(A1), x64(A2), dim=0), _cosine_similarity_ref(A1, A2, 0)[0], rtol=1e-14)
    assert gradcheck(cosine_similarity, (x64(X), x64([[1.0], [2.0], [-0.5]])))  # broadcast
    assert gradgradcheck(lambda a, b: cosine_similarity(a, b, -1), (x64(A1), x64(A2)))


def test_cosine_similarity_of_a_zero_vector_clamps_the_norm_but_not_its_gradient():
    z = x64(np.zeros((2, 3)))
    y = cosine_similarity(z, x64(np.ones((2, 3)), False))
    assert y.tolist() == [0.0, 0.0]
    y.sum().backward()
    close(z.grad, np.full((2, 3), 1 / (COSINE_EPS * math.sqrt(3))), rtol=1e-10)  # the unit b over eps
    close(z.grad, _cosine_similarity_ref(np.zeros((2, 3)), np.ones((2, 3)))[1], rtol=1e-10)
    tiny = [[3e-9, 4e-9, 0.0]]  # a norm below eps: the value uses eps, the gradient still reaches the norm
    value, grad = _cosine_similarity_ref(tiny, [[1.0, 2.0, 2.0]])
    assert abs(value[0] - 11 / 30) < 1e-15  # (3, 4, 0) / 10 . (1, 2, 2) / 3
    leaf = x64(tiny)
    y = cosine_similarity(leaf, x64([[1.0, 2.0, 2.0]], False))
    close(y, value, rtol=1e-12)
    y.sum().backward()
    close(leaf.grad, grad, rtol=1e-9)
    assert not np.allclose(grad, np.array([[1, 2, 2]]) / 3 / COSINE_EPS)  # what a constant clamped norm would give


def test_cosine_similarity_errors():
    with pytest.raises(RuntimeError, match=r"^The size of tensor a \(3\) must match the size of tensor b \(4\) at "
                                           r"non-singleton dimension 1$"):
        cosine_similarity(ag.ones(2, 3), ag.ones(2, 4))
    with pytest.raises(RuntimeError, match="^expected common dtype to be floating point, yet common dtype is Long$"):
        cosine_similarity(ag.tensor([[1, 2]]), ag.tensor([[1, 3]]))
    with pytest.raises(IndexError, match=r"Dimension out of range \(expected to be in range of \[-3, 2\], but got 3\)"):
        cosine_similarity(ag.ones(2, 3, 4), ag.ones(2, 3, 4), dim=3)


def _pairwise_distance_ref(a, b, p=2.0, keepdim=False):
    """The p-norm of a - b + eps (eps = 1e-6) over the last dim."""
    return (np.abs(np.subtract(a, b) + 1e-6) ** p).sum(-1, keepdims=keepdim) ** (1 / p)


def test_pairwise_distance_values_and_gradients():
    close(pairwise_distance(x64(A1), x64(A2)), _pairwise_distance_ref(A1, A2), rtol=1e-14)
    close(pairwise_distance(x64(A1), x64(A2), p=1.0, keepdim=True), _pairwise_distance_ref(A1, A2, 1.0, True),
          rtol=1e-14)
    assert pairwise_distance(ag.tensor(1.0), ag.tensor(2.0)).shape == ()
    assert gradcheck(lambda a, b: pairwise_distance(a, b, 3.0), (x64(X), x64([0.5, 0.1, -0.3, 0.2])))


def test_distance_modules():
    assert repr(D.CosineSimilarity()) == "CosineSimilarity()" and repr(D.PairwiseDistance()) == "PairwiseDistance()"
    m = D.PairwiseDistance(p=1.0, keepdim=True)
    assert (m.norm, m.eps, m.keepdim) == (1.0, 1e-6, True)
    close(m(x64(A1), x64(A2)), _pairwise_distance_ref(A1, A2, 1.0, True), rtol=1e-14)
    close(D.CosineSimilarity(dim=0)(x64(A1), x64(A2)), cosine_similarity(x64(A1), x64(A2), 0).detach().numpy())


# -- padding layers -------------------------------------------------------------------------------------------------
@pytest.mark.parametrize(("module", "text"), [
    (P.ZeroPad1d(1), "ZeroPad1d((1, 1))"),
    (P.ZeroPad2d((1, 2, 3, 4)), "ZeroPad2d((1, 2, 3, 4))"),
    (P.ZeroPad3d(1), "ZeroPad3d((1, 1, 1, 1, 1, 1))"),
    (P.ConstantPad1d(2, 3.5), "ConstantPad1d(padding=(2, 2), value=3.5)"),
    (P.ConstantPad2d([1, 0, 2, 1], 0), "ConstantPad2d(padding=(1, 0, 2, 1), value=0)"),
    (P.ConstantPad3d(1, 1.0), "ConstantPad3d(padding=(1, 1, 1, 1, 1, 1), value=1.0)"),
    (P.ReflectionPad1d(1), "ReflectionPad1d((1, 1))"),
    (P.ReflectionPad2d(2), "ReflectionPad2d((2, 2, 2, 2))"),
    (P.ReflectionPad3d(1), "ReflectionPad3d((1, 1, 1, 1, 1, 1))"),
    (P.ReplicationPad1d((1, 2)), "ReplicationPad1d((1, 2))"),
    (P.ReplicationPad2d(1), "ReplicationPad2d((1, 1, 1, 1))"),
    (P.ReplicationPad3d(1), "ReplicationPad3d((1, 1, 1, 1, 1, 1))"),
    (P.CircularPad1d(1), "CircularPad1d((1, 1))"),
    (P.CircularPad2d(1), "CircularPad2d((1, 1, 1, 1))"),
    (P.CircularPad3d(1), "CircularPad3d((1, 1, 1, 1, 1, 1))"),
])
def test_padding_layers_pad_the_last_dims_as_functional_pad(module, text):
    assert repr(module) == text and list(module.state_dict()) == []
    dims = len(module.padding) // 2
    x = ag.arange(2.0 * 3 ** (dims + 1)).reshape(2, *(3,) * (dims + 1))
    mode = getattr(module, "mode", "constant")
    expected = ag.nn.functional.pad(x, module.padding, mode, getattr(module, "value", None))
    np.testing.assert_array_equal(module(x).numpy(), expected.numpy())


def test_padding_layer_values_are_numpys_wrap_reflect_and_constant_pads():
    x = np.arange(6.0).reshape(1, 2, 3)
    last = [(0, 0), (0, 0)]
    np.testing.assert_array_equal(P.CircularPad1d((2, 1))(ag.tensor(x)).numpy(), np.pad(x, [*last, (2, 1)], "wrap"))
    np.testing.assert_array_equal(P.ReflectionPad1d((2, 1))(ag.tensor(x)).numpy(),
                                  np.pad(x, [*last, (2, 1)], "reflect"))
    np.testing.assert_array_equal(P.ConstantPad1d((1, 0), -1.0)(ag.tensor(x)).numpy(),
                                  np.pad(x, [*last, (1, 0)], constant_values=-1.0))


def test_padding_layers_differentiate_and_check_ranks():
    assert gradcheck(P.ReplicationPad2d((1, 2, 0, 1)), (x64(),))
    with pytest.raises(ValueError, match=r"^expected 2D or 3D input \(got 4D input\)$"):
        P.CircularPad1d(1)(ag.ones(1, 2, 3, 4))
    with pytest.raises(ValueError, match=r"^expected 3D or 4D input \(got 2D input\)$"):
        P.CircularPad2d(1)(ag.ones(3, 4))


# -- on cuda:0 (CuPy, or the stand-in in CI) --------------------------------------------------------------------------
DEVICE_CASES = {
    "hardshrink": lambda x: hardshrink(x, 0.4),
    "softshrink": lambda x: softshrink(x, 0.4),
    "rrelu": lambda x: rrelu(x, 0.1, 0.3, training=True),
    "dropout2d": lambda x: dropout2d(x.reshape(2, 3, 2, 2), 0.5),
    "alpha_dropout": lambda x: alpha_dropout(x, 0.3, training=True),
    "instance_norm": lambda x: instance_norm(x),
    "rms_norm": lambda x: rms_norm(x, [4]),
    "local_response_norm": lambda x: local_response_norm(x, 2, 0.5, 0.75, 1.5),
    "cosine_similarity": lambda x: cosine_similarity(x, x.flip(0)),
    "pairwise_distance": lambda x: pairwise_distance(x, x.flip(0)),
    "CircularPad1d": P.CircularPad1d((1, 2)),
}


@pytest.mark.gpu
@pytest.mark.parametrize("name", list(DEVICE_CASES))
def test_the_blocks_give_the_cpus_values_and_gradients_on_cuda(name):
    pytest.importorskip("cupy")
    cuda = ag.device("cuda:0")
    f = DEVICE_CASES[name]
    results = []
    for device in (None, cuda):
        x = ag.tensor(X, dtype=ag.float64, device=device, requires_grad=True)
        ag.manual_seed(5)
        y = f(x)
        (y * y).sum().backward()
        assert y.device == x.device and x.grad.device == x.device
        results.append((y.detach().cpu().numpy(), x.grad.cpu().numpy()))
    for got, expected in zip(results[1], results[0], strict=True):
        # A GPU sums in another order: instance_norm's gradients (about 1e-5, from cancelling terms) differ by 1e-15.
        np.testing.assert_allclose(got, expected, rtol=1e-9, atol=1e-14)
