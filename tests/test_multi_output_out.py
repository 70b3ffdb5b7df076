"""`out=` for the functions that return several tensors (`max(x, 1, out=(values, indices))`), as PyTorch's."""

import warnings

import numpy as np
import pytest

import actorgrad as ag

pytestmark = pytest.mark.filterwarnings("ignore:torch.(qr|triangular_solve) is deprecated:UserWarning")
RNG = np.random.default_rng(7)
DATA = RNG.permutation(24).reshape(4, 6).astype(np.float32) - 11.5  # distinct values: no ties among indices
X = ag.tensor(DATA)
WITH_NAN = DATA.copy()
WITH_NAN[1, 2] = WITH_NAN[3, 0] = np.nan
REPEATS = np.array([[2, 1, 2, 3, 2], [5, 4, 4, 1, 0]], dtype=np.float32)
SPD = RNG.normal(size=(3, 3))
SPD = SPD @ SPD.T + 3 * np.eye(3)
TALL = RNG.normal(size=(5, 3))
RESIZED = r"An output with one or more elements was resized since it had shape \[7\], which does not match the required"


def empties(*dtypes):
    return tuple(ag.empty(0, dtype=dtype) for dtype in dtypes)


def numpy_of(tensors):
    return [t.numpy() for t in tensors]


def order(data, descending=False):
    """The stable sorting permutation of each row."""
    return np.argsort(-data if descending else data, axis=1, kind="stable")


# name -> (the call given `out`, the outs' dtypes, the values numpy computes for them)
REDUCTIONS = {
    "max": (lambda out: ag.max(X, 1, out=out), (ag.float32, ag.int64), (DATA.max(1), DATA.argmax(1))),
    "min": (lambda out: ag.min(X, 1, keepdim=True, out=out), (ag.float32, ag.int64),
            (DATA.min(1, keepdims=True), DATA.argmin(1)[:, None])),
    "sort": (lambda out: ag.sort(X, descending=True, out=out), (ag.float32, ag.int64),
             (np.take_along_axis(DATA, order(DATA, True), 1), order(DATA, True))),
    "topk": (lambda out: ag.topk(X, 2, out=out), (ag.float32, ag.int64),
             (np.take_along_axis(DATA, order(DATA, True)[:, :2], 1), order(DATA, True)[:, :2])),
    "kthvalue": (lambda out: ag.kthvalue(X, 3, 1, out=out), (ag.float32, ag.int64),
                 (np.sort(DATA, 1)[:, 2], order(DATA)[:, 2])),
    "median": (lambda out: ag.median(X, 1, out=out), (ag.float32, ag.int64),
               (np.sort(DATA, 1)[:, 2], order(DATA)[:, 2])),  # the lower of the two middle values
    "nanmedian": (lambda out: ag.nanmedian(ag.tensor(WITH_NAN), 1, out=out), (ag.float32, ag.int64),
                  (np.nanpercentile(WITH_NAN, 50, axis=1, method="lower"),
                   [np.flatnonzero(row == np.nanpercentile(row, 50, method="lower"))[0] for row in WITH_NAN])),
    "mode": (lambda out: ag.mode(ag.tensor(REPEATS), 1, out=out), (ag.float32, ag.int64),
             (np.array([2.0, 4.0]), None)),
    "cummax": (lambda out: ag.cummax(X, 1, out=out), (ag.float32, ag.int64),
               (np.maximum.accumulate(DATA, 1), None)),
    "cummin": (lambda out: ag.cummin(X, 0, out=out), (ag.float32, ag.int64),
               (np.minimum.accumulate(DATA, 0), None)),
    "aminmax": (lambda out: ag.aminmax(X, dim=0, out=out), (ag.float32, ag.float32), (DATA.min(0), DATA.max(0))),
    "frexp": (lambda out: ag.frexp(X, out=out), (ag.float32, ag.int32), np.frexp(DATA)),
    "histogram": (lambda out: ag.histogram(X, 5, out=out), (ag.float32, ag.float32),
                  np.histogram(DATA, 5, (DATA.min(), DATA.max()))),
}


@pytest.mark.parametrize("name", REDUCTIONS)
def test_reductions_write_their_values_and_indices_into_the_outs_and_return_them(name):
    call, dtypes, expected = REDUCTIONS[name]
    outs = empties(*dtypes)
    result = call(outs)
    assert type(result).__name__ == f"{name}_out" and all(r is o for r, o in zip(result, outs))
    assert type(result)._fields == type(call(None))._fields  # the same names as the call without out=
    for got, want, own in zip(numpy_of(result), expected, numpy_of(call(None))):
        np.testing.assert_array_equal(got, own)
        if want is not None:
            np.testing.assert_allclose(got, np.asarray(want), rtol=1e-6)
    assert [t.dtype for t in result] == list(dtypes)


def test_mode_and_running_extremes_indices_point_at_their_values():
    values, indices = ag.mode(ag.tensor(REPEATS), 1, out=empties(ag.float32, ag.int64))
    assert (REPEATS[np.arange(2), indices.numpy()] == values.numpy()).all()
    values, indices = ag.cummax(X, 1, out=empties(ag.float32, ag.int64))
    np.testing.assert_array_equal(np.take_along_axis(DATA, indices.numpy(), 1), values.numpy())


# name -> (the call given `out`, the outs' dtypes); the values are checked against the call without out=
DECOMPOSITIONS = {
    "linalg_eigh": (lambda out: ag.linalg.eigh(ag.tensor(SPD), out=out), (ag.float64,) * 2),
    "linalg_eig": (lambda out: ag.linalg.eig(ag.tensor(SPD), out=out), (ag.complex128,) * 2),
    "linalg_svd": (lambda out: ag.linalg.svd(ag.tensor(TALL), full_matrices=False, out=out), (ag.float64,) * 3),
    "linalg_qr": (lambda out: ag.linalg.qr(ag.tensor(TALL), out=out), (ag.float64,) * 2),
    "linalg_slogdet": (lambda out: ag.linalg.slogdet(ag.tensor(SPD), out=out), (ag.float64,) * 2),
    "linalg_lu_factor": (lambda out: ag.linalg.lu_factor(ag.tensor(SPD), out=out), (ag.float64, ag.int32)),
    "linalg_lu_factor_ex": (lambda out: ag.linalg.lu_factor_ex(ag.tensor(SPD), out=out),
                            (ag.float64, ag.int32, ag.int32)),
    "linalg_lu": (lambda out: ag.linalg.lu(ag.tensor(SPD), out=out), (ag.float64,) * 3),
    "linalg_lstsq": (lambda out: ag.linalg.lstsq(ag.tensor(TALL), ag.tensor(TALL[:, :2]), driver="gelsd", out=out),
                     (ag.float64, ag.float64, ag.int64, ag.float64)),
    "linalg_inv_ex": (lambda out: ag.linalg.inv_ex(ag.tensor(SPD), out=out), (ag.float64, ag.int32)),
    "linalg_cholesky_ex": (lambda out: ag.linalg.cholesky_ex(ag.tensor(SPD), out=out), (ag.float64, ag.int32)),
    "linalg_solve_ex": (lambda out: ag.linalg.solve_ex(ag.tensor(SPD), ag.tensor(TALL[:3]), out=out),
                        (ag.float64, ag.int32)),
    "slogdet": (lambda out: ag.slogdet(ag.tensor(SPD), out=out), (ag.float64,) * 2),
    "qr": (lambda out: ag.qr(ag.tensor(TALL), out=out), (ag.float64,) * 2),
    "svd": (lambda out: ag.svd(ag.tensor(TALL), out=out), (ag.float64,) * 3),
    "geqrf": (lambda out: ag.geqrf(ag.tensor(TALL), out=out), (ag.float64,) * 2),
    "triangular_solve": (lambda out: ag.triangular_solve(ag.tensor(TALL[:3]), ag.tensor(np.triu(SPD)), out=out),
                         (ag.float64,) * 2),
    "lu_unpack": (lambda out: ag.lu_unpack(*ag.linalg.lu_factor(ag.tensor(SPD)), out=out), (ag.float64,) * 3),
}


@pytest.mark.parametrize("name", DECOMPOSITIONS)
def test_decompositions_write_their_factors_into_the_outs_and_return_them(name):
    call, dtypes = DECOMPOSITIONS[name]
    outs = empties(*dtypes)
    result = call(outs)
    assert type(result).__name__ == f"{name}_out" and all(r is o for r, o in zip(result, outs))
    own = call(None)
    assert type(result)._fields == type(own)._fields
    for got, want in zip(numpy_of(result), numpy_of(own)):
        np.testing.assert_array_equal(got, want)


def test_factors_written_into_outs_rebuild_their_matrix():
    q, r = ag.linalg.qr(ag.tensor(TALL), out=empties(ag.float64, ag.float64))
    np.testing.assert_allclose(q.numpy() @ r.numpy(), TALL, atol=1e-12)
    values, vectors = ag.linalg.eigh(ag.tensor(SPD), out=empties(ag.float64, ag.float64))
    np.testing.assert_allclose(vectors.numpy() @ np.diag(values.numpy()) @ vectors.numpy().T, SPD, atol=1e-12)
    np.testing.assert_allclose(values.numpy(), np.linalg.eigvalsh(SPD), atol=1e-12)


def test_outs_take_the_dtypes_a_castable_rule_allows():
    values, vectors = ag.linalg.eig(ag.tensor(SPD, dtype=ag.float32), out=empties(ag.complex128, ag.complex128))
    assert values.dtype == ag.complex128
    np.testing.assert_allclose(np.sort(values.numpy().real), np.linalg.eigvalsh(SPD), rtol=1e-5)
    a, tau = ag.geqrf(ag.tensor(TALL, dtype=ag.float32), out=empties(ag.float64, ag.float64))
    np.testing.assert_allclose(a.numpy(), ag.geqrf(ag.tensor(TALL, dtype=ag.float32)).a.numpy(), rtol=1e-6)


@pytest.mark.parametrize("call, outs, message", [
    (lambda o: ag.max(X, 1, out=o), (ag.float32, ag.float32),
     "^Expected out tensor to have dtype long int, but got float instead$"),
    (lambda o: ag.sort(X, out=o), (ag.float64, ag.int64), "Expected out tensor to have dtype float, but got double"),
    (lambda o: ag.topk(X, 2, out=o), (ag.float32, ag.int32), "Expected out tensor to have dtype long int, but got int"),
    (lambda o: ag.aminmax(X, out=o), (ag.float32, ag.float64), "to have dtype float, but got double instead$"),
    (lambda o: ag.kthvalue(X, 1, out=o), (ag.float64, ag.int64), "^output values must be of same type as input$"),
    (lambda o: ag.kthvalue(X, 1, out=o), (ag.float32, ag.float32), "^output indices must be of scalar type Long$"),
    (lambda o: ag.mode(X, 1, out=o), (ag.float64, ag.int64),
     "^expected scalar type 'Float' but got 'Double' for values output$"),
    (lambda o: ag.mode(X, 1, out=o), (ag.float32, ag.float32),
     "^expected scalar type 'Long' but got 'Float' for indices output$"),
    (lambda o: ag.median(X, 1, out=o), (ag.float64, ag.int64),
     r"Expected tensor for 'values' to have the same type as tensor for argument #2 'self'; but type "
     r"torch.DoubleTensor does not equal torch.FloatTensor \(while checking arguments for median\)"),
    (lambda o: ag.nanmedian(X, 1, out=o), (ag.float32, ag.int8),
     r"Expected tensor for argument #1 'indices' to have scalar type Long; but got torch.CharTensor instead"),
    (lambda o: ag.cummin(X, 1, out=o), (ag.float32, ag.float32), "^expected scalar_type Long but found Float$"),
    (lambda o: ag.frexp(X, out=o), (ag.float64, ag.int32),
     r"^torch.frexp\(\) expects mantissa to have dtype float but got double$"),
    (lambda o: ag.frexp(X, out=o), (ag.float32, ag.int64), "expects exponent to have int dtype but got long int"),
    (lambda o: ag.histogram(X, out=o), (ag.float32, ag.float64),
     "^torch.histogram: input tensor and bin_edges tensor should have the same dtype, but got input float and "
     "bin_edges double for dimension 0$"),
    (lambda o: ag.linalg.lu_factor(ag.tensor(SPD), out=o), (ag.float64, ag.int64),
     "Expected out tensor to have dtype int, but got long int instead"),
    (lambda o: ag.linalg.eig(ag.tensor(SPD), out=o), (ag.complex128, ag.float64),
     "torch.linalg.eig: Expected eigenvectors to be safely castable from ComplexDouble dtype, but got eigenvectors "
     "with dtype Double"),
    (lambda o: ag.linalg.lstsq(ag.tensor(SPD), ag.tensor(SPD), out=o), (ag.int64, ag.float64, ag.int64, ag.float64),
     "torch.linalg.lstsq: Expected solution to be safely castable from Double dtype, but got solution with dtype Long"),
    (lambda o: ag.linalg.svd(ag.tensor(TALL), out=o), (ag.float64, ag.float32, ag.float64),
     "Expected out tensor to have dtype double, but got float instead"),
])
def test_each_out_is_checked_by_its_own_rule_before_any_is_written(call, outs, message):
    outs = tuple(ag.full((2,), 9, dtype=dtype) for dtype in outs)
    with pytest.raises(RuntimeError, match=message):
        call(outs)
    assert all(o.shape == (2,) and (o.numpy() == 9).all() for o in outs)


def test_outs_of_another_shape_are_resized_each_with_its_warning():
    values, indices = ag.zeros(7), ag.zeros(0, dtype=ag.int64)
    with pytest.warns(UserWarning, match=RESIZED) as caught:
        ag.sort(X, out=(values, indices))
    assert len(caught) == 1 and values.shape == indices.shape == (4, 6)
    with pytest.warns(UserWarning, match=RESIZED) as caught:
        ag.linalg.qr(ag.tensor(TALL), out=(ag.zeros(7, dtype=ag.float64), ag.zeros(7, dtype=ag.float64)))
    assert len(caught) == 2
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # empty outs and outs of the right shape are written quietly
        ag.max(X, 1, out=(ag.zeros(4), ag.zeros(0, dtype=ag.int64)))


def test_outs_that_are_views_are_written_through_with_their_version_bumped():
    base = ag.zeros(6, 4)
    values = base.T  # not contiguous
    indices = ag.zeros(4, 12, dtype=ag.int64)[:, ::2]
    versions = base._version, indices._version
    result = ag.sort(X, 1, out=(values, indices))
    assert result.values is values and result.indices is indices
    np.testing.assert_array_equal(base.numpy().T, np.sort(DATA, 1))
    np.testing.assert_array_equal(indices.numpy(), order(DATA))
    assert base._version > versions[0] and indices._version > versions[1]


@pytest.mark.parametrize("call, outs, op", [
    (lambda x, o: ag.max(x, 0, out=o), (ag.float32, ag.int64), "max"),
    (lambda x, o: ag.cummax(x, 0, out=o), (ag.float32, ag.int64), "cummax"),
    (lambda x, o: ag.frexp(x, out=o), (ag.float32, ag.int32), "frexp"),
    (lambda x, o: ag.linalg.svd(x, out=o), (ag.float32,) * 3, "_linalg_svd"),
    (lambda x, o: ag.linalg.eigh(x, out=o), (ag.float32,) * 2, "_linalg_eigh"),
    (lambda x, o: ag.linalg.lu_factor(x, out=o), (ag.float32, ag.int32), "linalg_lu_factor_ex"),
    (lambda x, o: ag.qr(x, out=o), (ag.float32,) * 2, "linalg_qr"),
    (lambda x, o: ag.slogdet(x, out=o), (ag.float32,) * 2, "_linalg_slogdet"),
])
def test_outs_refuse_autograd_in_the_name_pytorch_gives_the_kernel(call, outs, op):
    x = ag.tensor(SPD, dtype=ag.float32)
    message = rf"^{op}\(\): functions with out=\.\.\. arguments don't support automatic differentiation, but one of"
    with pytest.raises(RuntimeError, match=message):
        call(x.detach().requires_grad_(), empties(*outs))
    needing_grad = (ag.empty(0, dtype=outs[0], requires_grad=True), *empties(*outs[1:]))
    with pytest.raises(RuntimeError, match=message):
        call(x, needing_grad)
    with ag.no_grad():
        call(x.detach().requires_grad_(), empties(*outs))


def test_histogram_has_no_derivative_so_its_input_may_require_grad():
    hist, edges = ag.histogram(X.detach().requires_grad_(), 4, out=empties(ag.float32, ag.float32))
    np.testing.assert_array_equal(hist.numpy(), np.histogram(DATA, 4, (DATA.min(), DATA.max()))[0])


@pytest.mark.parametrize("call, message", [
    (lambda: ag.sort(X, out=ag.empty(0)), r"^sort\(\): argument 'out' must be tuple of Tensors, not Tensor$"),
    (lambda: ag.linalg.qr(X, out=3), r"^linalg_qr\(\): argument 'out' must be tuple of Tensors, not int$"),
    (lambda: ag.topk(X, 2, out=empties(ag.float32, ag.int64, ag.int64)), "^expected tuple of 2 elements but got 3$"),
    (lambda: ag.topk(X, 2, out=(ag.empty(0), None)), "^expected Tensor as element 1 in argument 5, but got NoneType$"),
    (lambda: ag.max(X, 1, out=[ag.empty(0), 3]), "^expected Tensor as element 1 in argument 3, but got int$"),
    (lambda: ag.linalg.lu(X, out=(ag.empty(0), ag.empty(0), 2.0)),
     "^expected Tensor as element 2 in argument 2, but got float$"),
    (lambda: ag.median(X, out=empties(ag.float32, ag.int64)),
     r'^median\(\) missing 1 required positional arguments: "dim"$'),
])
def test_out_must_be_a_tuple_of_as_many_tensors_as_the_function_returns(call, message):
    with pytest.raises(TypeError, match=message):
        call()


def test_max_and_min_of_all_elements_or_of_two_tensors_take_one_out():
    total = ag.empty(0, dtype=ag.float64)
    assert ag.max(X, out=total) is total and total.dtype == ag.float64 and total.item() == DATA.max()
    other = ag.tensor(RNG.normal(size=DATA.shape).astype(np.float32))
    smaller = ag.min(X, other, out=ag.empty(0))
    np.testing.assert_array_equal(smaller.numpy(), np.minimum(DATA, other.numpy()))
    with pytest.raises(RuntimeError, match=r"^Expected canCast\( typeMetaToScalarType\(self.dtype\(\)\), "):
        ag.min(X, out=ag.empty(0, dtype=ag.int64))
    with pytest.raises(RuntimeError, match="^result type Float can't be cast to the desired output type Long$"):
        ag.max(X, other, out=ag.empty(0, dtype=ag.int64))
    with pytest.raises(TypeError, match=r"^max\(\): argument 'out' must be tuple of Tensors, not Tensor$"):
        ag.max(X, 1, out=ag.empty(0))


def test_a_list_of_outs_is_taken_as_a_tuple():
    outs = [ag.empty(0), ag.empty(0, dtype=ag.int64)]
    values, indices = ag.max(X, 1, out=outs)
    assert values is outs[0] and indices is outs[1]


@pytest.mark.gpu
def test_outs_on_the_device_match_the_cpu_and_outs_elsewhere_are_refused(cupy):
    cuda = ag.device("cuda:0")
    x = X.to(cuda)
    outs = tuple(t.to(cuda) for t in empties(ag.float32, ag.int64))
    values, indices = ag.sort(x, 1, descending=True, out=outs)
    assert values is outs[0] and values.device == cuda
    np.testing.assert_array_equal(values.cpu().numpy(), np.take_along_axis(DATA, order(DATA, True), 1))
    np.testing.assert_array_equal(indices.cpu().numpy(), order(DATA, True))
    q, r = ag.linalg.qr(ag.tensor(TALL).to(cuda), out=tuple(t.to(cuda) for t in empties(ag.float64, ag.float64)))
    np.testing.assert_allclose((q @ r).cpu().numpy(), TALL, atol=1e-12)
    with pytest.raises(RuntimeError, match="^Expected out tensor to have device cuda:0, but got cpu instead$"):
        ag.max(x, 1, out=(outs[0], ag.empty(0, dtype=ag.int64)))
