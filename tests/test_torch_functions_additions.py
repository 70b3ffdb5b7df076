"""Top-level functions added for PyTorch parity: the autocast state functions (agreeing with `autocast` regions
both ways), warn-always, flush-denormal, is_storage, set_anomaly_enabled, empty_permuted, the native_*
normalisations and dropout, norm_except_dim and segment_reduce (values against closed forms, gradients against
finite differences, PyTorch's errors)."""

import contextvars
import warnings

import numpy as np
import pytest

import actorgrad as ag
from actorgrad.autograd import gradcheck

F16, F32, F64 = ag.float16, ag.float32, ag.float64
RNG = np.random.default_rng(11)


def in_own_context(fn):
    """Run `fn` in a copy of the current context, so the autocast and anomaly state it sets stays there."""
    return contextvars.copy_context().run(fn)


def leaf(*shape, requires_grad=True):
    return ag.tensor(RNG.standard_normal(shape), requires_grad=requires_grad)


# Autocast state


def test_set_autocast_enabled_takes_the_device_type_form_and_the_older_cuda_form():
    def run():
        ag.set_autocast_enabled(True)
        cuda_on = ag.is_autocast_enabled(), ag.is_autocast_enabled("cuda")
        ag.set_autocast_enabled(False)
        ag.set_autocast_dtype("cpu", F16)
        ag.set_autocast_enabled("cpu", True)
        out = ag.matmul(ag.ones(2, 2), ag.ones(2, 2))
        return cuda_on, ag.is_autocast_enabled("cpu"), ag.is_autocast_enabled(device_type="cuda"), out.dtype

    assert in_own_context(run) == ((True, True), True, False, F16)
    assert not ag.is_autocast_enabled("cpu") and not ag.is_autocast_enabled()


def test_an_autocast_region_and_the_state_functions_agree_both_ways():
    def run():
        seen = []
        with ag.autocast("cpu", dtype=F16):
            seen.append((ag.is_autocast_enabled("cpu"), ag.get_autocast_dtype("cpu")))
            seen.append((ag.autocast_increment_nesting(), ag.autocast_decrement_nesting()))
        seen.append(ag.is_autocast_enabled("cpu"))
        ag.set_autocast_dtype("cpu", F16)
        ag.set_autocast_enabled("cpu", True)
        seen.append(ag.matmul(ag.ones(2, 2), ag.ones(2, 2)).dtype)
        with ag.autocast("cpu", enabled=False):
            seen.append((ag.is_autocast_enabled("cpu"), ag.matmul(ag.ones(2, 2), ag.ones(2, 2)).dtype))
        seen.append(ag.is_autocast_enabled("cpu"))
        return seen

    assert in_own_context(run) == [(True, F16), (2, 1), False, F16, (False, F32), True]


def test_autocast_nesting_counts_up_and_down_past_zero():
    def run():
        return [ag.autocast_increment_nesting(), ag.autocast_increment_nesting(), ag.autocast_decrement_nesting(),
                ag.autocast_decrement_nesting(), ag.autocast_decrement_nesting()]

    assert in_own_context(run) == [1, 2, 1, 0, -1]


def test_autocast_cache_flag_is_set_and_read_back():
    def run():
        ag.set_autocast_cache_enabled(False)
        off = ag.is_autocast_cache_enabled()
        ag.clear_autocast_cache()
        return off

    assert in_own_context(run) is False
    assert ag.is_autocast_cache_enabled() is True


def test_the_deprecated_per_device_forms_warn_and_act_on_their_device():
    def run():
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            ag.set_autocast_cpu_dtype(F16)
            ag.set_autocast_cpu_enabled(True)
            seen = [ag.is_autocast_cpu_enabled(), ag.get_autocast_cpu_dtype(), ag.is_autocast_enabled("cpu")]
            ag.set_autocast_gpu_dtype(F32)
            seen.append((ag.get_autocast_gpu_dtype(), ag.get_autocast_dtype("cuda")))
        return seen, caught

    seen, caught = in_own_context(run)
    assert seen == [True, F16, True, (F32, F32)]
    assert all(w.category is DeprecationWarning for w in caught) and len(caught) == 6
    assert str(caught[0].message) == ("torch.set_autocast_cpu_dtype(dtype) is deprecated. Please use "
                                      "torch.set_autocast_dtype('cpu', dtype) instead.")
    assert caught[0].filename == __file__
    assert ag.get_autocast_dtype("cpu") is None  # PyTorch's bfloat16 default has no counterpart


@pytest.mark.parametrize("call, error, text", [
    (lambda: ag.is_autocast_enabled(1), TypeError,
     "is_autocast_enabled(): argument 'device_type' (position 1) must be str, not int"),
    (lambda: ag.set_autocast_enabled(1), TypeError,
     "set_autocast_enabled(): argument 'enabled' (position 1) must be bool, not int"),
    (lambda: ag.set_autocast_enabled("cpu", 1), TypeError,
     "set_autocast_enabled(): argument 'enabled' (position 2) must be bool, not int"),
    (lambda: ag.set_autocast_enabled("cpu"), TypeError,
     "set_autocast_enabled(): argument 'enabled' (position 1) must be bool, not str"),
    (lambda: ag.set_autocast_enabled(), TypeError,
     "set_autocast_enabled() received an invalid combination of arguments - got (), but expected one of:\n"
     " * (str device_type, bool enabled)\n * (bool enabled)\n"),
    (lambda: ag.set_autocast_cache_enabled(1), TypeError, "enabled must be a bool (got int)"),
    (lambda: ag.set_autocast_dtype("cpu", 3), TypeError,
     "set_autocast_dtype(): argument 'dtype' (position 2) must be torch.dtype, not int"),
    (lambda: ag.set_autocast_cpu_enabled(1), TypeError, "enabled must be a bool (got int)"),
    (lambda: ag.set_autocast_cpu_dtype("a"), TypeError, "dtype must be a torch.dtype (got str)"),
    (lambda: ag.set_autocast_gpu_dtype(3), TypeError, "dtype must be a torch.dtype (got int)"),
])
def test_autocast_state_functions_refuse_arguments_as_pytorch(call, error, text):
    with pytest.raises(error) as caught:
        in_own_context(call)
    assert str(caught.value) == text


# Process flags


def test_warn_always_makes_warn_once_warnings_warn_every_time():
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        ag.zeros(2).storage()  # TypedStorage's deprecation: once per process
        ag.set_warn_always(True)
        try:
            assert ag.is_warn_always_enabled()
            ag.zeros(2).storage()
            ag.zeros(2).storage()
        finally:
            ag.set_warn_always(False)
        count = len(caught)
        ag.zeros(2).storage()
    assert count >= 2 and len(caught) == count and not ag.is_warn_always_enabled()
    assert all("TypedStorage is deprecated" in str(w.message) for w in caught)
    with pytest.raises(RuntimeError, match="^setWarnOnlyOnce expects a bool, but got int$"):
        ag.set_warn_always(1)


def test_set_flush_denormal_says_it_cannot_and_changes_nothing():
    tiny = ag.tensor([1e-310], dtype=F64)
    assert ag.set_flush_denormal(True) is False
    assert (tiny * 1.0).item() == 1e-310
    assert ag.set_flush_denormal(False) is False
    with pytest.raises(RuntimeError, match="^flush_denormal expects a bool, but got int$"):
        ag.set_flush_denormal(1)


def test_is_storage_is_true_for_untyped_and_typed_storages_only():
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        typed = ag.zeros(2).storage()
    assert ag.is_storage(ag.zeros(2).untyped_storage()) and ag.is_storage(typed)
    assert not ag.is_storage(ag.zeros(2)) and not ag.is_storage(3)


def test_set_anomaly_enabled_sets_the_mode_detect_anomaly_reads():
    def run():
        ag.set_anomaly_enabled(True, False)
        on = ag.is_anomaly_enabled(), ag.is_anomaly_check_nan_enabled()
        ag.set_anomaly_enabled(True)
        nan_check = ag.is_anomaly_check_nan_enabled()
        ag.set_anomaly_enabled(False)
        return on, nan_check, ag.is_anomaly_enabled()

    assert in_own_context(run) == ((True, False), True, False)
    with pytest.raises(TypeError, match=r"^set_anomaly_enabled\(\): argument 'check_nan' \(position 2\) must be "
                                        r"bool, not int$"):
        ag.set_anomaly_enabled(True, 1)
    with pytest.raises(TypeError, match=r"^set_anomaly_enabled\(\): argument 'enabled' \(position 1\) must be bool"):
        ag.autograd.set_detect_anomaly(1)


# empty_permuted


def test_empty_permuted_lays_dims_out_in_the_physical_order():
    t = ag.empty_permuted((2, 3, 5, 7), (0, 2, 3, 1))
    assert t.shape == (2, 3, 5, 7) and t.stride() == (105, 1, 21, 3) and t.dtype == F32
    assert not t.is_contiguous() and t.permute(0, 2, 3, 1).is_contiguous()
    s = ag.empty_permuted([2, 3], [1, 0], dtype=F64, requires_grad=True)
    assert s.stride() == (1, 2) and s.dtype == F64 and s.requires_grad and s.is_leaf
    assert ag.empty_permuted((), ()).shape == ()


@pytest.mark.parametrize("size, layout, error, text", [
    ((2, 3), (0, 0), RuntimeError, "Duplicate dim not allowed"),
    ((2, 3), (0,), RuntimeError, "Number of dimensions in size does not match the length of the physical_layout; "
     "i.e. len(size) = 2 is not equal to len(physical_layout) = 1"),
    ((2, 3), (-1, 0), RuntimeError, "Dimension out of range (expected to be between 0 and 1, but got -1 at index 0)."
     "  NB: negative dims not currently supported; file an issue if you want it."),
    ((2, -3), (1, 0), RuntimeError, "Trying to create tensor with negative dimension -3: [-3, 2]"),
    (2, (0,), TypeError, "empty_permuted(): argument 'size' (position 1) must be tuple of ints, not int"),
    ((2, 3), [1.0, 0], TypeError,
     "empty_permuted(): argument 'physical_layout' (position 2) must be tuple of ints, but found element of type "
     "float at pos 0"),
])
def test_empty_permuted_refuses_as_pytorch(size, layout, error, text):
    with pytest.raises(error) as caught:
        ag.empty_permuted(size, layout)
    assert str(caught.value) == text


# native normalisations


def numpy_stats(x, axes, eps):
    mean = x.mean(axis=axes, keepdims=True)
    return mean, 1 / np.sqrt(((x - mean) ** 2).mean(axis=axes, keepdims=True) + eps)


def test_native_layer_norm_returns_the_output_and_its_statistics():
    x, w, b = leaf(2, 3, 4), leaf(3, 4), leaf(3, 4)
    out, mean, rstd = ag.native_layer_norm(x, [3, 4], w, b, 1e-5)
    m, r = numpy_stats(x.detach().numpy(), (1, 2), 1e-5)
    np.testing.assert_allclose(mean.numpy(), m, rtol=1e-12)
    np.testing.assert_allclose(rstd.numpy(), r, rtol=1e-12)
    np.testing.assert_allclose(out.detach().numpy(), (x.detach().numpy() - m) * r * w.detach().numpy()
                               + b.detach().numpy(), rtol=1e-12)
    assert mean.shape == (2, 1, 1) and not mean.requires_grad and out.grad_fn.name() == "NativeLayerNormBackward0"
    assert gradcheck(lambda *a: ag.native_layer_norm(a[0], [3, 4], a[1], a[2], 1e-5)[0], (x, w, b))


def test_native_norm_statistics_of_float16_follow_the_parameters_dtype():
    h = ag.tensor(RNG.standard_normal((2, 3, 4)).astype(np.float16))
    assert [t.dtype for t in ag.native_layer_norm(h, [4], None, None, 1e-5)] == [F16, F16, F16]
    assert [t.dtype for t in ag.native_layer_norm(h, [4], ag.ones(4), None, 1e-5)] == [F16, F32, F32]
    assert [t.dtype for t in ag.native_batch_norm(h, ag.ones(3), None, None, None, True, 0.1, 1e-5)] == [F16, F32, F32]
    assert [t.dtype for t in ag.native_group_norm(h, None, None, 2, 3, 4, 1, 1e-5)] == [F16, F16, F16]


def test_native_batch_norm_returns_the_batch_statistics_in_training_and_none_in_evaluation():
    x, w = leaf(4, 3, 2), leaf(3)
    running_mean, running_var = ag.zeros(3, dtype=F64), ag.ones(3, dtype=F64)
    out, mean, invstd = ag.native_batch_norm(x, w, None, running_mean, running_var, True, 0.1, 1e-5)
    data = x.detach().numpy()
    m, r = numpy_stats(data, (0, 2), 1e-5)
    np.testing.assert_allclose(mean.numpy(), m.ravel(), rtol=1e-12)
    np.testing.assert_allclose(invstd.numpy(), r.ravel(), rtol=1e-12)
    np.testing.assert_allclose(running_mean.numpy(), 0.1 * m.ravel(), rtol=1e-12)
    np.testing.assert_allclose(running_var.numpy(), 0.9 + 0.1 * data.var(axis=(0, 2), ddof=1), rtol=1e-12)
    np.testing.assert_allclose(out.detach().numpy(), (data - m) * r * w.detach().numpy()[:, None], rtol=1e-12)
    assert gradcheck(lambda a, b: ag.native_batch_norm(a, b, None, None, None, True, 0.1, 1e-5)[0], (x, w))
    out, mean, invstd = ag.native_batch_norm(x, w, None, running_mean, running_var, False, 0.1, 1e-5)
    assert mean.shape == (0,) and invstd.shape == (0,) and mean.dtype == F64
    with pytest.raises(TypeError, match=r"^native_batch_norm\(\): argument 'training' \(position 6\) must be bool"):
        ag.native_batch_norm(x, w, None, None, None, 1, 0.1, 1e-5)


def test_native_group_norm_statistics_are_differentiable():
    x, w, b = leaf(2, 4, 3), leaf(4), leaf(4)
    out, mean, rstd = ag.native_group_norm(x, w, b, 2, 4, 3, 2, 1e-5)
    grouped = x.detach().numpy().reshape(2, 2, 6)
    m, r = numpy_stats(grouped, (2,), 1e-5)
    np.testing.assert_allclose(mean.detach().numpy(), m[..., 0], rtol=1e-12)
    np.testing.assert_allclose(rstd.detach().numpy(), r[..., 0], rtol=1e-12)
    expected = ((grouped - m) * r).reshape(2, 4, 3) * w.detach().numpy()[:, None] + b.detach().numpy()[:, None]
    np.testing.assert_allclose(out.detach().numpy(), expected, rtol=1e-12)
    weights = [ag.tensor(RNG.standard_normal(t.shape)) for t in (out, mean, rstd)]

    def weighted(*a):
        return sum((t * v).sum() for t, v in zip(ag.native_group_norm(*a, 2, 4, 3, 2, 1e-5), weights, strict=True))

    assert gradcheck(weighted, (x, w, b))
    with pytest.raises(RuntimeError, match=r"^Expected X.numel\(\) == N \* C \* HxW to be true, but got false."):
        ag.native_group_norm(x, None, None, 2, 4, 4, 2, 1e-5)


# native_dropout


def test_native_dropout_returns_the_kept_mask_and_scales_by_it():
    ag.manual_seed(3)
    x = leaf(50)
    out, mask = ag.native_dropout(x, 0.25, True)
    keep = mask.numpy()
    assert mask.dtype == ag.bool_ and 0 < keep.sum() < 50 and out.grad_fn.name() == "NativeDropoutBackward0"
    np.testing.assert_allclose(out.detach().numpy(), x.detach().numpy() * keep / 0.75, rtol=1e-15)
    out.sum().backward()
    np.testing.assert_allclose(x.grad.numpy(), keep / 0.75, rtol=1e-15)
    assert ag.native_dropout(x, 0.25, None)[1].numpy().sum() < 50  # None trains, as in PyTorch's kernel


def test_native_dropout_in_evaluation_copies_and_keeps_everything():
    x = leaf(2, 3)
    out, mask = ag.native_dropout(x, 0.5, False)
    assert mask.numpy().all() and out.data_ptr() != x.data_ptr()
    np.testing.assert_array_equal(out.detach().numpy(), x.detach().numpy())
    out.sum().backward()
    np.testing.assert_array_equal(x.grad.numpy(), np.ones((2, 3)))
    zeros, none_kept = ag.native_dropout(x, 1.0, True)
    assert not none_kept.numpy().any() and not zeros.detach().numpy().any()
    assert ag.native_dropout(ag.arange(3), 0.5, False)[0].tolist() == [0, 1, 2]


@pytest.mark.parametrize("call, error, text", [
    (lambda: ag.native_dropout(ag.ones(3), 0.5, 1), TypeError,
     "native_dropout(): argument 'train' (position 3) must be bool, not int"),
    (lambda: ag.native_dropout(ag.ones(3), 1.5, True), RuntimeError, "bernoulli_ expects p to be in [0, 1], but got "
     "p=-0.5"),
    (lambda: ag.native_dropout(ag.arange(3), 0.5, True), RuntimeError,
     "result type Float can't be cast to the desired output type Long"),
])
def test_native_dropout_refuses_as_pytorch(call, error, text):
    with pytest.raises(error) as caught:
        call()
    assert str(caught.value) == text


# norm_except_dim


@pytest.mark.parametrize("dim", [0, 1, 2, -2])
def test_norm_except_dim_keeps_only_that_dim(dim):
    v = leaf(2, 3, 4)
    out = ag.norm_except_dim(v, 3, dim)
    kept = dim % 3
    others = tuple(d for d in range(3) if d != kept)
    expected = (np.abs(v.detach().numpy()) ** 3).sum(axis=others, keepdims=True) ** (1 / 3)
    np.testing.assert_allclose(out.detach().numpy(), expected, rtol=1e-12)
    assert gradcheck(lambda a: ag.norm_except_dim(a, 3, dim), (v,))


def test_norm_except_dim_minus_one_is_the_whole_norm_and_bad_arguments_are_refused():
    v = leaf(2, 3)
    whole = ag.norm_except_dim(v, 2, -1)
    assert whole.shape == () and np.isclose(whole.item(), np.linalg.norm(v.detach().numpy()))
    with pytest.raises(TypeError, match=r"^norm_except_dim\(\): argument 'pow' \(position 2\) must be int, not float"):
        ag.norm_except_dim(v, 2.0, 0)
    with pytest.raises(IndexError, match=r"^Dimension out of range \(expected to be in range of \[-2, 1\], but got 5"):
        ag.norm_except_dim(v, 2, 5)
    with pytest.raises(RuntimeError, match="^norm\\(\\): input dtype should be either floating point or complex. "
                                           "Got Long instead.$"):
        ag.norm_except_dim(ag.arange(3), 2, 0)


# segment_reduce

DATA = np.array([1.0, 2, 3, 4, 5, 6])
LENGTHS = [2, 0, 3, 1]
RUNS = [[1.0, 2], [], [3.0, 4, 5], [6.0]]
NUMPY_REDUCTIONS = {"sum": (np.sum, 0.0), "mean": (np.mean, np.nan), "max": (np.max, -np.inf),
                    "min": (np.min, np.inf), "prod": (np.prod, 1.0)}


@pytest.mark.parametrize("reduce", list(NUMPY_REDUCTIONS))
def test_segment_reduce_reduces_each_run_and_gives_empty_runs_the_identity(reduce):
    fn, identity = NUMPY_REDUCTIONS[reduce]
    expected = [fn(run) if run else identity for run in RUNS]
    by_lengths = ag.segment_reduce(ag.tensor(DATA), reduce, lengths=ag.tensor(LENGTHS))
    by_offsets = ag.segment_reduce(ag.tensor(DATA), reduce, offsets=ag.tensor([0, 2, 2, 5, 6]))
    np.testing.assert_allclose(by_lengths.numpy(), expected)
    np.testing.assert_allclose(by_offsets.numpy(), expected)


def test_segment_reduce_takes_initial_into_every_run():
    data, lengths = ag.tensor(DATA), ag.tensor(LENGTHS)
    assert ag.segment_reduce(data, "sum", lengths=lengths, initial=10).tolist() == [13.0, 10.0, 22.0, 16.0]
    assert ag.segment_reduce(data, "max", lengths=lengths, initial=4.5).tolist() == [4.5, 4.5, 5.0, 6.0]
    mean = ag.segment_reduce(data, "mean", lengths=lengths, initial=10).numpy()
    np.testing.assert_allclose(mean, [13 / 2, 10, 22 / 3, 16])


def test_segment_reduce_along_a_later_axis_takes_one_row_of_lengths_per_slice():
    data = ag.tensor(np.arange(12.0).reshape(2, 6))
    lengths = ag.tensor([[1, 5], [3, 3]])
    out = ag.segment_reduce(data, "sum", lengths=lengths, axis=1)
    assert out.tolist() == [[0.0, 15.0], [6 + 7 + 8.0, 9 + 10 + 11.0]]
    cube = ag.tensor(np.arange(24.0).reshape(6, 2, 2))
    np.testing.assert_allclose(ag.segment_reduce(cube, "max", lengths=ag.tensor([4, 2])).numpy(),
                               np.stack([cube.numpy()[:4].max(0), cube.numpy()[4:].max(0)]))


@pytest.mark.parametrize("reduce", list(NUMPY_REDUCTIONS))
def test_segment_reduce_gradients_match_finite_differences(reduce):
    data = ag.tensor(RNG.permutation(12).reshape(6, 2) / 4 + 0.5, requires_grad=True)  # no ties
    assert gradcheck(lambda d: ag.segment_reduce(d, reduce, lengths=ag.tensor([2, 3, 1])), (data,))
    assert gradcheck(lambda d: ag.segment_reduce(d, reduce, offsets=ag.tensor([1, 3, 5]), initial=0.5), (data,))


def test_segment_reduce_shares_a_max_among_ties_and_is_exact_at_zeros_of_prod():
    data = ag.tensor([1.0, 3, 3, 0, 2, 5], requires_grad=True)
    ag.segment_reduce(data, "max", lengths=ag.tensor([3, 3])).backward(ag.tensor([-2.0, 1.0]))
    assert data.grad.tolist() == [0.0, -1.0, -1.0, 0.0, 0.0, 1.0]
    data.grad = None
    ag.segment_reduce(data, "prod", lengths=ag.tensor([3, 3])).backward(ag.tensor([1.0, 1.0]))
    assert data.grad.tolist() == [9.0, 3.0, 3.0, 10.0, 0.0, 0.0]


@pytest.mark.parametrize("kwargs, error, text", [
    (dict(lengths=ag.tensor([2, 3])), RuntimeError,
     "segment_reduce(): Expected all rows of lengths along axis to sum to data.size(lengths.dim()-1) when !unsafe."),
    (dict(lengths=ag.tensor([2, -1, 5])), RuntimeError, "lengths contains negative value!"),
    (dict(), RuntimeError, "segment_reduce(): Either lengths or offsets must be defined."),
    (dict(indices=ag.tensor([0, 1])), RuntimeError, "segment_reduce(): indices based reduction is not supported yet."),
    (dict(lengths=ag.tensor([2, 4]), reduce="foo"), RuntimeError,
     "reduce argument must be either sum, prod, mean, amax or amin, got foo"),
    (dict(lengths=ag.tensor([2.0, 4.0])), NotImplementedError,
     "\"_segment_reduce_lengths_cpu_kernel1\" not implemented for 'Float'"),
    (dict(lengths=ag.tensor([2, 4]), axis=1), IndexError,
     "Dimension out of range (expected to be in range of [-1, 0], but got 1)"),
    (dict(offsets=ag.tensor([0, 4, 2, 6])), RuntimeError,
     "Expected segment_length >= 0 to be true, but got false.  (Could this error message be improved?  If so, "
     "please report an enhancement request to PyTorch.)"),
])
def test_segment_reduce_refuses_as_pytorch(kwargs, error, text):
    reduce = kwargs.pop("reduce", "sum")
    with pytest.raises(error) as caught:
        ag.segment_reduce(ag.tensor(DATA), reduce, **kwargs)
    assert str(caught.value) == text
    with pytest.raises(NotImplementedError, match="^\"_segment_reduce_cpu\" not implemented for 'Long'$"):
        ag.segment_reduce(ag.arange(6), "sum", lengths=ag.tensor([2, 4]))


# rnn_tanh, rnn_relu, lstm, gru


@pytest.mark.parametrize("mode, module", [("rnn_tanh", ag.nn.RNN), ("rnn_relu", ag.nn.RNN), ("lstm", ag.nn.LSTM),
                                          ("gru", ag.nn.GRU)])
def test_the_recurrent_functions_compute_what_the_modules_do(mode, module):
    ag.manual_seed(4)
    extra = {"nonlinearity": mode[4:]} if mode.startswith("rnn") else {}
    net = module(3, 4, num_layers=2, bidirectional=True, batch_first=True, dtype=F64, **extra)
    x = leaf(2, 5, 3)
    states = (leaf(4, 2, 4), leaf(4, 2, 4)) if mode == "lstm" else (leaf(4, 2, 4),)
    expected, final = net(x, states if mode == "lstm" else states[0])
    expected_states = final if mode == "lstm" else (final,)
    hx = states if mode == "lstm" else states[0]
    got = getattr(ag, mode)(x, hx, net._flat_weights, True, 2, 0.0, False, True, True)
    assert len(got) == 1 + len(states)
    for g, e in zip(got, (expected, *expected_states), strict=True):
        np.testing.assert_allclose(g.detach().numpy(), e.detach().numpy(), rtol=1e-12)
    weights = [p.detach().requires_grad_() for p in net._flat_weights[:4]]
    one_layer = getattr(ag, mode)

    def outputs(inp, *w):
        first = states[0][:1] if mode != "lstm" else (states[0][:1], states[1][:1])
        return one_layer(inp, first, list(w), True, 1, 0.0, False, False, True)[0]

    assert gradcheck(outputs, (x, *weights))


def test_lstm_with_a_narrower_hidden_state_takes_the_projection_weight():
    net = ag.nn.LSTM(3, 4, proj_size=2, dtype=F64)
    x, h, c = leaf(5, 2, 3), leaf(1, 2, 2), leaf(1, 2, 4)
    out, (h_n, c_n) = net(x, (h, c))
    got = ag.lstm(x, (h, c), net._flat_weights, True, 1, 0.0, False, False, False)
    for g, e in zip(got, (out, h_n, c_n), strict=True):
        np.testing.assert_allclose(g.detach().numpy(), e.detach().numpy(), rtol=1e-12)


@pytest.mark.parametrize("call, text", [
    (lambda x, w: ag.gru(x, ag.zeros(1, 2, 4, dtype=F64), w[:3], True, 1, 0.0, False, False, False),
     "got an incorrect number of RNN parameters"),
    (lambda x, w: ag.gru(x, ag.zeros(1, 2, 4, dtype=F64), w, False, 1, 0.0, False, False, False),
     "Expected more weights in stacked_rnn"),
    (lambda x, w: ag.gru(x, ag.zeros(1, 2, 4, dtype=F64), w, True, 2, 0.0, False, False, False),
     "Expected more hidden states in stacked_rnn"),
    (lambda x, w: ag.lstm(x, [ag.zeros(1, 2, 4, dtype=F64)], w, True, 1, 0.0, False, False, False),
     "lstm expects two hidden states"),
])
def test_the_recurrent_functions_refuse_as_pytorch(call, text):
    weights = ag.nn.GRU(3, 4, dtype=F64)._flat_weights
    with pytest.raises(RuntimeError) as caught:
        call(leaf(5, 2, 3), weights)
    assert str(caught.value) == text
