"""A decomposition (svd, eigh, qr, slogdet) records one node with an output per factor, as PyTorch's
LinalgSvdBackward0, LinalgEighBackward0, LinalgQrBackward0 and LinalgSlogdetBackward0 do; and
pinv(hermitian=True). The numbers are PyTorch 2.13's."""

from __future__ import annotations

from collections.abc import Callable

import numpy as np
import pytest

import actorgrad as ag
from actorgrad.autograd import gradcheck, gradgradcheck

L = ag.linalg
TALL = np.array([[1.0, 2, 0.5], [-1, 0.5, 2], [0.3, -2, 1], [1, 1, -1]])
WIDE = TALL.T.copy()
W = np.array([[1.0, -2, 0.5], [0.3, 1, -1], [2, 0.1, -0.7]])
SYM = np.array([[2.0, 1, 0], [1, 3, 1], [0, 1, 4.5]])


def t(x: np.ndarray, **kw) -> ag.Tensor:
    return ag.tensor(x, dtype=ag.float64, **kw)


DECOMPOSITIONS = [
    ("svd", lambda a: L.svd(a), TALL, "LinalgSvdBackward0"),
    ("svd reduced", lambda a: L.svd(a, full_matrices=False), WIDE, "LinalgSvdBackward0"),
    ("eigh", lambda a: L.eigh(a, UPLO="U"), SYM, "LinalgEighBackward0"),
    ("qr", lambda a: L.qr(a), TALL, "LinalgQrBackward0"),
    ("qr complete", lambda a: L.qr(a, mode="complete"), WIDE, "LinalgQrBackward0"),
    ("slogdet", lambda a: L.slogdet(a), W, "LinalgSlogdetBackward0"),
]


@pytest.mark.parametrize(("op", "f", "x", "name"), DECOMPOSITIONS, ids=[c[0] for c in DECOMPOSITIONS])
def test_factors_are_the_outputs_of_one_node(op: str, f: Callable, x: np.ndarray, name: str) -> None:
    a = t(x, requires_grad=True)
    outputs = f(a)
    node = outputs[0].grad_fn
    assert node.name() == name
    assert all(o.grad_fn is node for o in outputs)
    assert [o.output_nr for o in outputs] == list(range(len(outputs)))
    assert [meta.shape for meta in node.input_metadata] == [o.shape for o in outputs]
    ((accumulator, slot),) = node.next_functions
    assert accumulator.variable is a and slot == 0


def test_svdvals_and_eigvalsh_are_outputs_of_their_decompositions_node() -> None:
    def where(values: ag.Tensor) -> tuple:
        return values.grad_fn.name(), values.output_nr, len(values.grad_fn.input_metadata)

    assert where(L.svdvals(t(TALL, requires_grad=True))) == ("LinalgSvdBackward0", 1, 3)
    assert where(L.eigvalsh(t(SYM, requires_grad=True))) == ("LinalgEighBackward0", 0, 2)
    ((node, slot),) = L.matrix_norm(t(TALL, requires_grad=True), 2).grad_fn.next_functions
    assert (node.name(), slot) == ("LinalgSvdBackward0", 1)


def test_outputs_without_grad_mode_have_no_node() -> None:
    a = t(TALL, requires_grad=True)
    with ag.no_grad():
        assert [o.grad_fn for o in L.svd(a)] == [None, None, None]
    with ag.inference_mode():
        assert [o.is_inference() for o in L.qr(a)] == [True, True]


@pytest.mark.parametrize(("op", "f", "x", "name"), DECOMPOSITIONS[:4], ids=[c[0] for c in DECOMPOSITIONS[:4]])
def test_the_node_runs_once_for_all_its_outputs(op: str, f: Callable, x: np.ndarray, name: str) -> None:
    a = t(x, requires_grad=True)
    outputs = f(a)
    runs = []
    outputs[0].grad_fn.register_prehook(lambda grads: runs.append([g is not None for g in grads]))
    sum((o * o).sum() for o in outputs).backward()
    assert runs == [[True] * len(outputs)]


def _weights(x: ag.Tensor, wave: Callable) -> ag.Tensor:
    return t(wave(np.arange(x.numel())).reshape(x.shape))


# Losses that do not change when a factor's column (U, V, Q) or row (Vh, R) changes sign: LAPACKs choose signs
# differently, and the numbers are torch's.
def _u(o: tuple) -> ag.Tensor:
    return (o[0] ** 2 * _weights(o[0], np.cos)).sum()


def _s(o: tuple) -> ag.Tensor:
    return (o[1] * t(np.array([1.0, -0.5, 2.0]))).sum()


def _vh(o: tuple) -> ag.Tensor:
    return (o[2] ** 2 * _weights(o[2], np.sin)).sum()


def _svd_loss(full_matrices: bool, *parts: Callable) -> Callable:
    return lambda a: sum(part(L.svd(a, full_matrices=full_matrices)) for part in parts)


def _q(o: tuple) -> ag.Tensor:
    return (o[0] ** 2 * _weights(o[0], np.cos)).sum()


def _r(o: tuple) -> ag.Tensor:
    return (o[1] ** 2 * _weights(o[1], np.sin)).sum()


SUBSETS = [
    ("svd tall U", _svd_loss(False, _u), TALL, [
        [-0.0436846339, 0.3518889429, 0.2750653822], [0.2937525409, 0.0004277901, -0.1015622668],
        [-0.0651013197, -0.1092274263, 0.1855337039], [-0.1627213187, -0.2917046016, 0.2309950037]]),
    ("svd tall S", _svd_loss(True, _s), TALL, [
        [1.2785624544, 0.1949490062, 0.0544344395], [-0.2037162002, -0.3361675933, -0.3923353711],
        [1.1685789717, -0.7825812214, 0.8893772689], [0.5728485412, 0.3946151735, 0.113996266]]),
    ("svd tall Vh", _svd_loss(False, _vh), TALL, [
        [-0.1870990985, 0.0291998212, -0.2398437302], [-0.5253916834, 0.1868442047, -0.2525703548],
        [0.1237363822, -0.1669730734, -0.2883266753], [0.1792195768, -0.0643123931, 0.0626993248]]),
    ("svd tall full U Vh", _svd_loss(True, _u, _vh), TALL, [
        [-0.1314352407, 0.4533683295, 0.0847547395], [-0.2088846154, 0.496804434, -0.5445556193],
        [0.1148551283, -0.1203128101, -0.3669971938], [0.0971187861, 0.0127242152, 0.203782348]]),
    ("svd tall all", _svd_loss(False, _u, _s, _vh), TALL, [
        [1.047778722, 0.5760377703, 0.0896560915], [-0.4353553427, -0.1488955985, -0.7464679927],
        [1.2272140341, -1.058781721, 0.7865842975], [0.5893467993, 0.0385981787, 0.4076905945]]),
    ("svd wide full U", _svd_loss(True, _u), WIDE, [
        [0.2650881065, -0.06219152, -0.2389182067, 0.1994993543],
        [-0.1821702574, -0.2234888338, 0.2980995606, -0.0098870822],
        [-0.0281362351, 0.1934469641, 0.1168995943, -0.1373422112]]),
    ("svd wide Vh", _svd_loss(False, _vh), WIDE, [
        [-0.0404584049, -0.3772691769, 0.0118476361, -0.5768803876],
        [-0.374823435, 0.0953657774, -0.6160780315, -0.2151144363],
        [0.0456995238, -0.2589982336, -0.0570406962, -0.4736250811]]),
    ("svd wide full all", _svd_loss(True, _u, _s, _vh), WIDE, [
        [1.503192156, -0.6431768972, 0.9415084012, 0.1954675079],
        [-0.3620446863, -0.4642906497, -1.1005596923, 0.1696136549],
        [0.0719977281, -0.4578866406, 0.949236167, -0.4969710263]]),
    ("eigh values", lambda a: (L.eigh(a)[0] * t(np.array([1.0, -0.5, 2.0]))).sum(), SYM, [
        [0.5264730987, -0.4909952448, 0.5555924338], [-0.4909952448, 0.5910702877, 0.8979858398],
        [0.5555924338, 0.8979858398, 1.3824566136]]),
    ("eigh vectors", lambda a: (L.eigh(a)[1] ** 2 * t(W)).sum(), SYM, [
        [-0.7561011453, -0.1839391202, 0.1896690253], [-0.1839391202, 0.5912192118, -0.3177729027],
        [0.1896690253, -0.3177729027, 0.1648819336]]),
    ("eigh all", lambda a: (lambda o: (o[0] * t(np.array([1.0, -0.5, 2.0]))).sum() + (o[1] ** 2 * t(W)).sum())(
        L.eigh(a)), SYM, [
        [-0.2296280466, -0.674934365, 0.7452614592], [-0.674934365, 1.1822894995, 0.5802129371],
        [0.7452614592, 0.5802129371, 1.5473385471]]),
    ("qr tall Q", lambda a: _q(L.qr(a)), TALL, [
        [0.8672172859, -0.0308786072, -0.0539911641], [0.7703914837, -0.2657875286, 0.0603430657],
        [0.6406177353, -0.186765174, 0.0158797541], [-0.2890111228, -0.1788793692, 0.1095703035]]),
    ("qr tall all", lambda a: (lambda o: _q(o) + _r(o))(L.qr(a)), TALL, [
        [3.6805446483, -1.2884211463, 0.8137931905], [3.103163567, -3.1988919257, 3.714156642],
        [-3.1132238927, 3.2074781207, 2.4003251141], [0.3565860865, 0.3248755266, -1.8206427609]]),
    ("qr wide R", lambda a: _r(L.qr(a)), WIDE, [
        [-3.1603929854, 3.1145063745, -2.261139452, 1.4074870256],
        [1.7022981779, 0.0722768039, -1.3509383344, -0.0585067277],
        [-0.4884067405, -3.1522360253, -1.7129748216, -1.1697470595]]),
    ("qr wide all", lambda a: (lambda o: _q(o) + _r(o))(L.qr(a)), WIDE, [
        [-2.4224371371, 3.1307998878, -2.261139452, 1.4074870256],
        [1.2322144176, 0.0614144617, -1.3509383344, -0.0585067277],
        [-0.0839833963, -3.1413736831, -1.7129748216, -1.1697470595]]),
    ("slogdet sign times logabsdet", lambda a: (lambda o: o[0] * o[1])(L.slogdet(a)), W, [
        [-0.3007518797, -0.8972431078, -0.9874686717], [-0.6766917293, -0.8521303258, -2.0551378446],
        [0.7518796992, 0.5764411028, 0.8020050125]]),
]


@pytest.mark.parametrize(("case", "f", "x", "expected"), SUBSETS, ids=[c[0] for c in SUBSETS])
def test_gradients_through_any_outputs_match_torch(case: str, f: Callable, x: np.ndarray, expected: list) -> None:
    a = t(x, requires_grad=True)
    (grad,) = ag.autograd.grad(f(a), a)
    np.testing.assert_allclose(grad.numpy(), expected, atol=1e-9)


def test_a_determinants_sign_alone_gives_no_gradient_as_torchs() -> None:
    a = t(W, requires_grad=True)
    L.slogdet(a).sign.sum().backward()
    assert a.grad is None


SECOND = [
    ("svd U", lambda x: L.svd(x, full_matrices=False).U, (4, 3)),
    ("svd S Vh", lambda x: L.svd(x, full_matrices=False)[1:], (3, 5)),
    ("svd all", lambda x: tuple(L.svd(x, full_matrices=False)), (2, 4, 3)),
    ("eigh vectors", lambda x: L.eigh(x + x.mT).eigenvectors, (2, 3, 3)),
    ("eigh all", lambda x: tuple(L.eigh(x + x.mT)), (3, 3)),
    ("qr R", lambda x: L.qr(x).R, (4, 3)),
    ("qr all", lambda x: tuple(L.qr(x)), (3, 5)),
    ("slogdet", lambda x: tuple(L.slogdet(x)), (2, 3, 3)),
]


@pytest.mark.parametrize(("case", "f", "shape"), SECOND, ids=[c[0] for c in SECOND])
def test_second_gradients_match_finite_differences(case: str, f: Callable, shape: tuple) -> None:
    # distinct singular values (eigenvalues) well apart: the factors are smooth there
    spread = np.eye(*shape[-2:]) * np.array([6.0, 3.0, -5.0, 0.0, 0.0])[: shape[-1]]
    x = np.random.default_rng(5).standard_normal(shape) + spread
    leaf = t(x, requires_grad=True)
    assert gradcheck(f, [leaf])
    assert gradgradcheck(f, [leaf])


def test_pinv_of_a_hermitian_matrix_matches_torch() -> None:
    a = t(SYM - 2.5 * np.eye(3), requires_grad=True)  # indefinite: eigenvalues of both signs
    out = L.pinv(a, hermitian=True)
    np.testing.assert_allclose(out.detach().numpy(), [[0.0, 1, -0.5], [1, 0.5, -0.25], [-0.5, -0.25, 0.625]],
                               atol=1e-12)
    assert out.grad_fn.name() == "LinalgPinvBackward0"
    (out * t(W)).sum().backward()
    np.testing.assert_allclose(a.grad.numpy(), [[-1.275, 0.0625, 0.29375], [1.6125, 0.15625, -0.165625],
                                                [-1.03125, -1.190625, 0.8140625]], atol=1e-12)


def test_pinv_hermitian_reads_the_lower_triangle_and_differentiates_as_torch() -> None:
    a = t(W, requires_grad=True)
    out = L.pinv(a, hermitian=True)
    np.testing.assert_allclose(out.detach().numpy(), [
        [0.1568367572, -0.0905677049, 0.4351667771], [-0.0905677049, 1.0382151535, -0.1104484206],
        [0.4351667771, -0.1104484206, -0.2010161255]], atol=1e-9)
    (out * t(W)).sum().backward()  # torch's general pinv gradient, taken at the whole (not symmetric) input
    np.testing.assert_allclose(a.grad.numpy(), [
        [-1.5497106456, 4.7616733509, -0.2616021767], [0.6349020986, -2.5686161111, 0.9635158028],
        [-0.2946291522, 1.1036242784, -0.4511316201]], atol=1e-9)


def test_pinv_hermitian_gradients_match_finite_differences_on_symmetric_inputs() -> None:
    x = np.random.default_rng(4).standard_normal((2, 3, 3))
    leaf = t(x, requires_grad=True)
    assert gradcheck(lambda x: L.pinv(x + x.mT, hermitian=True), [leaf])
    assert gradgradcheck(lambda x: L.pinv(x + x.mT, hermitian=True), [leaf])


def test_pinv_hermitian_drops_eigenvalues_below_the_tolerance_by_magnitude() -> None:
    a = t(np.diag([3.0, -0.4, 0.05]))
    np.testing.assert_allclose(L.pinv(a, hermitian=True).numpy().diagonal(), [1 / 3, -2.5, 20])
    np.testing.assert_allclose(L.pinv(a, hermitian=True, atol=0.1).numpy().diagonal(), [1 / 3, -2.5, 0])
    np.testing.assert_allclose(L.pinv(a, hermitian=True, rtol=0.2).numpy().diagonal(), [1 / 3, 0, 0])
    assert L.pinv(ag.zeros(2, 0, 0), hermitian=True).shape == (2, 0, 0)


HALF = ("linalg.pinv(Half{[3, 3]}): expected a tensor with 2 or more dimensions of float, double, cfloat or cdouble "
        "types")


@pytest.mark.parametrize(("f", "message"), [
    (lambda: L.pinv(ag.ones(2, 3), hermitian=True),
     "linalg.eigh: A must be batches of square matrices, but they are 2 by 3 matrices"),
    (lambda: L.pinv(ag.ones(3, 3, dtype=ag.float16), hermitian=True), HALF),
    (lambda: L.pinv(ag.ones(3, 3, dtype=ag.float16)), HALF),
])
def test_pinv_errors_match_torch(f: Callable, message: str) -> None:
    with pytest.raises(RuntimeError) as info:
        f()
    assert str(info.value) == message
