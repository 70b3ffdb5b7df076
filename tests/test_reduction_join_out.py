"""`out=` for the reductions, scans and joins (`sum(x, 0, out=y)`, `cat(ts, out=y)`), as PyTorch's."""

import warnings

import numpy as np
import pytest

import actorgrad as ag

RNG = np.random.default_rng(11)
DATA = (RNG.permutation(12).reshape(3, 4) - 5.5).astype(np.float32) / 4  # distinct values, no zeros
X = ag.tensor(DATA)
TRUNCATED = np.array([[0.6, 0.6, -0.6], [0.6, 0.7, 1.9]], np.float32)


def empty(dtype):
    return ag.empty(0, dtype=dtype)


def logsumexp(a, axis):
    m = a.max(axis, keepdims=True)
    return (m + np.log(np.exp(a - m).sum(axis, keepdims=True))).squeeze(axis)


# name -> (the call given `out`, out's dtype, the values numpy computes)
CALLS = {
    "sum": (lambda out: ag.sum(X, 0, out=out), ag.float32, DATA.sum(0)),
    "sum keepdim": (lambda out: ag.sum(X, 1, keepdim=True, out=out), ag.float32, DATA.sum(1, keepdims=True)),
    "nansum": (lambda out: ag.nansum(X, 1, out=out), ag.float32, DATA.sum(1)),
    "prod": (lambda out: ag.prod(X, 1, out=out), ag.float32, DATA.prod(1)),
    "cumsum": (lambda out: ag.cumsum(X, 1, out=out), ag.float32, DATA.cumsum(1)),
    "cumprod": (lambda out: ag.cumprod(X, 0, out=out), ag.float32, DATA.cumprod(0)),
    "mean": (lambda out: ag.mean(X, (0, 1), out=out), ag.float32, DATA.mean()),
    "nanmean": (lambda out: ag.nanmean(X, 0, out=out), ag.float32, DATA.mean(0)),
    "var": (lambda out: ag.var(X, 1, out=out), ag.float32, DATA.var(1, ddof=1)),
    "std": (lambda out: ag.std(X, 0, correction=0, out=out), ag.float32, DATA.std(0)),
    "logcumsumexp": (lambda out: ag.logcumsumexp(X, 1, out=out), ag.float32,
                     np.log(np.cumsum(np.exp(DATA.astype(np.float64)), 1))),
    "amax": (lambda out: ag.amax(X, 1, out=out), ag.float32, DATA.max(1)),
    "amin": (lambda out: ag.amin(X, (0, 1), out=out), ag.float32, DATA.min()),
    "logsumexp": (lambda out: ag.logsumexp(X, 1, out=out), ag.float32, logsumexp(DATA, 1)),
    "norm": (lambda out: ag.norm(X, 2, 1, out=out), ag.float32, np.sqrt((DATA * DATA).sum(1))),
    "all": (lambda out: ag.all(X > 0, 1, out=out), ag.bool, (DATA > 0).all(1)),
    "any": (lambda out: ag.any(X > 0, 0, out=out), ag.bool, (DATA > 0).any(0)),
    "argmax": (lambda out: ag.argmax(X, 1, out=out), ag.int64, DATA.argmax(1)),
    "argmin": (lambda out: ag.argmin(X, out=out), ag.int64, DATA.argmin()),
    "diff": (lambda out: ag.diff(X, out=out), ag.float32, np.diff(DATA)),
    "cat": (lambda out: ag.cat([X, X[:1]], out=out), ag.float32, np.concatenate([DATA, DATA[:1]])),
    "concat": (lambda out: ag.concat([X, X], 1, out=out), ag.float32, np.concatenate([DATA, DATA], 1)),
    "concatenate": (lambda out: ag.concatenate([X, X], out=out), ag.float32, np.concatenate([DATA, DATA])),
    "stack": (lambda out: ag.stack([X, X], 2, out=out), ag.float32, np.stack([DATA, DATA], 2)),
    "hstack": (lambda out: ag.hstack([X, X], out=out), ag.float32, np.hstack([DATA, DATA])),
    "vstack": (lambda out: ag.vstack([X, X], out=out), ag.float32, np.vstack([DATA, DATA])),
    "dstack": (lambda out: ag.dstack([X, X], out=out), ag.float32, np.dstack([DATA, DATA])),
    "column_stack": (lambda out: ag.column_stack([X[0], X[1]], out=out), ag.float32,
                     np.column_stack([DATA[0], DATA[1]])),
    "row_stack": (lambda out: ag.row_stack([X, X], out=out), ag.float32, np.vstack([DATA, DATA])),
}


@pytest.mark.parametrize("name", CALLS)
def test_out_gets_the_result_and_is_returned(name):
    call, dtype, expected = CALLS[name]
    out = empty(dtype)
    assert call(out) is out
    assert out.dtype == dtype and out.shape == np.shape(expected)
    np.testing.assert_allclose(out.numpy(), expected, rtol=1e-5, atol=1e-6)


def test_an_out_with_elements_is_resized_with_pytorchs_warning():
    out = ag.zeros(7)
    with pytest.warns(UserWarning, match=r"resized since it had shape \[7\]"):
        ag.sum(X, 0, out=out)
    np.testing.assert_allclose(out.numpy(), DATA.sum(0), rtol=1e-6)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        ag.sum(X, 0, out=out)  # the right shape now: no warning


@pytest.mark.parametrize("name", ["sum", "prod", "cumsum", "cumprod", "nansum"])
def test_sums_and_products_compute_in_outs_dtype(name):
    """As given `dtype=out.dtype`: a float sum into an int64 `out` sums the truncated values; into float64 it sums
    in float64."""
    fn = getattr(ag, name)
    x = ag.tensor(TRUNCATED)
    wide = empty(ag.float64)
    fn(x, 0, out=wide)
    reference = {"sum": np.sum, "nansum": np.sum, "prod": np.prod, "cumsum": np.cumsum, "cumprod": np.cumprod}[name]
    np.testing.assert_array_equal(wide.numpy(), reference(TRUNCATED.astype(np.float64), 0))
    if name == "nansum":
        with pytest.raises(NotImplementedError, match="\"nansum_cpu\" not implemented for 'Long'"):
            fn(x, 0, out=empty(ag.int64))
        return
    whole = empty(ag.int64)
    fn(x, 0, out=whole)
    np.testing.assert_array_equal(whole.numpy(), reference(TRUNCATED.astype(np.int64), 0))


def test_a_bool_out_of_sum_is_any_and_the_scans_refuse_it():
    out = empty(ag.bool)
    ag.sum(ag.tensor([[0.0, 0.5], [0.0, 0.0]]), 0, out=out)
    assert out.tolist() == [False, True]
    with pytest.raises(NotImplementedError, match="\"cumsum_out_cpu\" not implemented for 'Bool'"):
        ag.cumsum(X, 0, out=empty(ag.bool))
    with pytest.raises(NotImplementedError, match="\"cumprod_out_cpu\" not implemented for 'Bool'"):
        ag.cumprod(X, 0, out=empty(ag.bool))


def test_a_dtype_given_with_out_must_be_outs():
    with pytest.raises(RuntimeError, match="Expected out tensor to have dtype double, but got float instead"):
        ag.cumsum(X, 0, dtype=ag.float64, out=empty(ag.float32))
    out = empty(ag.float64)
    ag.sum(X, 0, dtype=ag.float64, out=out)
    np.testing.assert_allclose(out.numpy(), DATA.astype(np.float64).sum(0))


def test_mean_computes_in_a_floating_outs_dtype_and_refuses_an_integer_one():
    x = ag.tensor(np.full(4097, 0.1, np.float32))
    out = empty(ag.float64)
    ag.mean(x, 0, out=out)
    assert out.item() == np.float32(0.1).astype(np.float64)  # float64's mean of 4097 equal float32 values: exact
    with pytest.raises(RuntimeError, match="result type Float can't be cast to the desired output type Long"):
        ag.mean(X, 0, out=empty(ag.int64))
    with pytest.raises(RuntimeError, match="mean\\(\\): could not infer output dtype"):
        ag.mean(ag.tensor([1, 2]), 0, out=empty(ag.float64))  # an integer input: its own error, out or not


@pytest.mark.parametrize(("call", "dtype", "error", "message"), [
    (lambda out: ag.var(X, 0, out=out), ag.int64, RuntimeError, "result type Float can't be cast to the desired "
                                                                "output type Long"),
    (lambda out: ag.std(X, 0, out=out), ag.complex64, NotImplementedError, "\"std_cpu\" not implemented for "
                                                                           "'ComplexFloat'"),
    (lambda out: ag.logcumsumexp(X, 0, out=out), ag.float64, RuntimeError, "expected scalar_type Float but found "
                                                                           "Double"),
    (lambda out: ag.amax(X, 0, out=out), ag.float64, RuntimeError, "Expected the dtype for input and out to match, "
                                                                   "but got Float for input's dtype and Double"),
    (lambda out: ag.logsumexp(X, 0, out=out), ag.int64, RuntimeError, "logsumexp\\(\\): Expected floating point "
                                                                      "type for result tensor, but got: Long"),
    (lambda out: ag.norm(X, 2, 0, out=out), ag.float64, RuntimeError, "Expected out tensor to have dtype float, "
                                                                      "but got double instead"),
    (lambda out: ag.all(X, 0, out=out), ag.float32, RuntimeError, "all only supports bool tensor for result, got: "
                                                                  "Float"),
    (lambda out: ag.argmax(X, 0, out=out), ag.int32, RuntimeError, "Expected out tensor to have dtype long int, but "
                                                                   "got int instead"),
    (lambda out: ag.stack([X, X], out=out), ag.bool, TypeError, "torch.cat\\(\\): input types can't be cast to the "
                                                                "desired output type Bool"),
])
def test_a_wrong_out_dtype_is_refused_in_the_kernels_words(call, dtype, error, message):
    out = empty(dtype)
    with pytest.raises(error, match=message):
        call(out)
    assert out.shape == (0,)  # nothing written


def test_outs_the_kernels_take_beside_the_results_dtype():
    out = empty(ag.float16)
    ag.logsumexp(X, 1, out=out)  # any floating out, the result cast into it
    np.testing.assert_allclose(out.numpy(), logsumexp(DATA, 1), rtol=1e-3)
    flags = empty(ag.uint8)
    ag.any(X > 0, 1, out=flags)
    assert flags.dtype == np.uint8 and flags.tolist() == (DATA > 0).any(1).astype(np.uint8).tolist()
    narrow = empty(ag.int8)
    ag.cat([ag.tensor([1, 2]), ag.tensor([300])], out=narrow)  # within its category: cast as PyTorch's copy casts
    assert narrow.tolist() == [1, 2, np.int64(300).astype(np.int8)]


def test_a_join_refuses_an_out_sharing_memory_with_a_tensor_it_joins():
    x = ag.tensor(DATA.copy())
    for join in (lambda: ag.cat([x, x], out=x), lambda: ag.stack([X, x[1:]], out=x)):
        with pytest.raises(RuntimeError, match="some elements of the input tensor and the written-to tensor refer to "
                                               "a single memory location"):
            join()
    np.testing.assert_array_equal(x.numpy(), DATA)


def test_no_autograd_through_out():
    leaf = ag.tensor(DATA, requires_grad=True)
    for call, name in ((lambda: ag.sum(leaf, 0, out=empty(ag.float32)), "sum"),
                       (lambda: ag.cat([leaf, X], out=empty(ag.float32)), "cat"),
                       (lambda: ag.amax(leaf, 0, out=empty(ag.float32)), "amax")):
        with pytest.raises(RuntimeError, match=f"{name}\\(\\): functions with out=... arguments don't support "
                                               "automatic differentiation"):
            call()
    with ag.no_grad():
        out = empty(ag.float32)
        ag.sum(leaf, 0, out=out)
    np.testing.assert_allclose(out.numpy(), DATA.sum(0), rtol=1e-6)


@pytest.mark.gpu
def test_on_cuda(cupy):
    x = X.to("cuda")
    out = ag.empty(0, dtype=ag.float64, device="cuda")
    ag.sum(x, 1, out=out)
    np.testing.assert_allclose(out.cpu().numpy(), DATA.astype(np.float64).sum(1), rtol=1e-12)
    joined = ag.empty(0, device="cuda")
    ag.cat([x, x], out=joined)
    np.testing.assert_array_equal(joined.cpu().numpy(), np.concatenate([DATA, DATA]))
