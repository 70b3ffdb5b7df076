"""The in-place forms of out-of-place ops (`x.sin_()`, `x.pow_(y)`, `x.eq_(y)` ...): each writes the out-of-place
op's result into the tensor, records PyTorch's node, and refuses what PyTorch refuses.

Expected texts and grad_fn names were read off torch 2.13 and are written out here (torch is not a test dependency).
"""

from __future__ import annotations

import numpy as np
import pytest

import actorgrad as ag
from actorgrad.autograd import gradcheck, gradgradcheck

TOLERANCES = dict(eps=1e-6, atol=1e-7, rtol=1e-5)
LEAF = "a leaf Variable that requires grad is being used in an in-place operation."


def T(shape, lo, hi):
    """A float64 operand with values in [lo, hi)."""
    return (shape, lo, hi)


INDEX = np.array([[0, 2, 1, 0], [1, 0, 2, 2], [2, 1, 0, 1]])
# (method, self's shape, self's range or "int" (an int64 tensor) or "logical" (floats -1, 0, 1), positional
# arguments, keyword arguments, torch's grad_fn name for a non-leaf; None: nothing records (an int tensor, or a
# logical op, which leaves the history as it was))
CASES = [
    ("acos_", (3, 4), (-0.9, 0.9), (), {}, "AcosBackward0"),
    ("arccos_", (3, 4), (-0.9, 0.9), (), {}, "AcosBackward0"),
    ("asin_", (3, 4), (-0.9, 0.9), (), {}, "AsinBackward0"),
    ("arcsin_", (3, 4), (-0.9, 0.9), (), {}, "AsinBackward0"),
    ("atan_", (3, 4), (-2, 2), (), {}, "AtanBackward0"),
    ("arctan_", (3, 4), (-2, 2), (), {}, "AtanBackward0"),
    ("atan2_", (3, 4), (-1, 1), (T((3, 4), 0.2, 1),), {}, "Atan2Backward0"),
    ("arctan2_", (3, 4), (-1, 1), (), {"other": T((4,), 0.2, 1)}, "Atan2Backward0"),
    ("ceil_", (3, 4), (-1.9, -1.1), (), {}, "CeilBackward0"),
    ("cos_", (3, 4), (-2, 2), (), {}, "CosBackward0"),
    ("cosh_", (3, 4), (-2, 2), (), {}, "CoshBackward0"),
    ("erf_", (3, 4), (-2, 2), (), {}, "ErfBackward0"),
    ("erfc_", (3, 4), (-2, 2), (), {}, "ErfcBackward0"),
    ("exp2_", (3, 4), (-2, 2), (), {}, "Exp2Backward0"),
    ("expm1_", (3, 4), (-2, 2), (), {}, "Expm1Backward0"),
    ("fix_", (3, 4), (-2.9, -2.1), (), {}, "TruncBackward0"),
    ("floor_", (3, 4), (1.1, 1.9), (), {}, "FloorBackward0"),
    ("frac_", (3, 4), (-1.9, -1.1), (), {}, "FracBackward0"),
    ("log_", (3, 4), (0.5, 2), (), {}, "LogBackward0"),
    ("log10_", (3, 4), (0.5, 2), (), {}, "Log10Backward0"),
    ("log1p_", (3, 4), (-0.5, 2), (), {}, "Log1PBackward0"),
    ("log2_", (3, 4), (0.5, 2), (), {}, "Log2Backward0"),
    ("logit_", (3, 4), (0.2, 0.8), (), {"eps": 0.1}, "LogitBackward0"),
    ("nan_to_num_", (3, 4), (-1, 1), (), {"nan": 0.5, "posinf": 1.0, "neginf": -1.0}, "NanToNumBackward0"),
    ("reciprocal_", (3, 4), (0.5, 2), (), {}, "ReciprocalBackward0"),
    ("round_", (3, 4), (0.6, 1.4), (), {}, "RoundBackward0"),
    ("round_", (3, 4), (0.11, 0.14), (), {"decimals": 1}, "RoundBackward1"),
    ("rsqrt_", (3, 4), (0.5, 2), (), {}, "RsqrtBackward0"),
    ("sin_", (3, 4), (-2, 2), (), {}, "SinBackward0"),
    ("sinh_", (3, 4), (-2, 2), (), {}, "SinhBackward0"),
    ("sqrt_", (3, 4), (0.5, 2), (), {}, "SqrtBackward0"),
    ("square_", (3, 4), (-2, 2), (), {}, "PowBackward0"),
    ("tan_", (3, 4), (-1, 1), (), {}, "TanBackward0"),
    ("trunc_", (3, 4), (2.1, 2.9), (), {}, "TruncBackward0"),
    ("pow_", (3, 4), (0.5, 2), (T((3, 4), -1, 2),), {}, "PowBackward1"),
    ("pow_", (3, 4), (0.5, 2), (), {"exponent": 2.5}, "PowBackward0"),
    ("fmod_", (3, 4), (1.1, 1.4), (T((3, 4), 0.5, 0.54),), {}, "FmodBackward1"),
    ("fmod_", (3, 4), (-1.4, -1.1), (0.5,), {}, "FmodBackward0"),
    ("remainder_", (3, 4), (-1.4, -1.1), (T((3, 4), 0.5, 0.54),), {}, "RemainderBackward1"),
    ("remainder_", (3, 4), (-1.4, -1.1), (), {"other": 0.5}, "RemainderBackward0"),
    ("xlogy_", (3, 4), (-1, 1), (T((3, 4), 0.5, 2),), {}, "XlogyBackward0"),
    ("xlogy_", (3, 4), (-1, 1), (2.0,), {}, "XlogyBackward2"),
    ("lerp_", (3, 4), (-1, 1), (T((3, 4), -1, 1), T((3, 4), 0, 1)), {}, "LerpBackward1"),
    ("lerp_", (3, 4), (-1, 1), (), {"end": T((3, 4), -1, 1), "weight": 0.3}, "LerpBackward0"),
    ("addcmul_", (3, 4), (-1, 1), (T((3, 4), -1, 1), T((4,), -1, 1)), {"value": 0.5}, "AddcmulBackward0"),
    ("addcdiv_", (3, 4), (-1, 1), (), {"tensor1": T((3, 4), -1, 1), "tensor2": T((3, 4), 0.5, 2), "value": 2},
     "AddcdivBackward0"),
    ("clamp_min_", (3, 4), (0, 1), (0.5,), {}, "ClampMinBackward0"),
    ("clamp_min_", (3, 4), (0, 1), (T((3, 4), 0, 1),), {}, "ClampMinBackward1"),
    ("clamp_max_", (3, 4), (0, 1), (), {"max": 0.5}, "ClampMaxBackward0"),
    ("addmm_", (3, 3), (-1, 1), (T((3, 4), -1, 1), T((4, 3), -1, 1)), {"beta": 0.5, "alpha": 2}, "AddmmBackward0"),
    ("addmv_", (3,), (-1, 1), (), {"mat": T((3, 4), -1, 1), "vec": T((4,), -1, 1)}, "AddmvBackward0"),
    ("baddbmm_", (2, 3, 3), (-1, 1), (T((2, 3, 4), -1, 1), T((2, 4, 3), -1, 1)), {"alpha": -1}, "BaddbmmBackward0"),
    ("cumsum_", (3, 4), (-1, 1), (1,), {}, "CumsumBackward0"),
    ("cumprod_", (3, 4), (0.5, 2), (), {"dim": 1}, "CumprodBackward0"),
    ("tril_", (3, 4), (-1, 1), (), {}, "TrilBackward0"),
    ("triu_", (3, 4), (-1, 1), (), {"diagonal": 1}, "TriuBackward0"),
    ("scatter_add_", (3, 4), (-1, 1), (0, INDEX, T((3, 4), -1, 1)), {}, "ScatterAddBackward0"),
    ("eq_", (3, 4), (-1, 1), (T((3, 4), -1, 1),), {}, "EqBackward1"),
    ("eq_", (3, 4), (-1, 1), (0.5,), {}, "EqBackward0"),
    ("ne_", (3, 4), (-1, 1), (T((4,), -1, 1),), {}, "NeBackward1"),
    ("lt_", (3, 4), (-1, 1), (), {"other": T((3, 4), -1, 1)}, "LtBackward1"),
    ("le_", (3, 4), (-1, 1), (0.0,), {}, "LeBackward0"),
    ("gt_", (3, 4), (-1, 1), (T((3, 4), -1, 1),), {}, "GtBackward1"),
    ("ge_", (3, 4), (-1, 1), (T((3, 4), -1, 1),), {}, "GeBackward1"),
    # torch names the in-place forms of asinh, acosh and atanh's nodes *Backward1 (its formulas read the result
    # there); actorgrad's node is the out-of-place op's, on a copy of the old values
    ("asinh_", (3, 4), (-2, 2), (), {}, "AsinhBackward0"),
    ("arcsinh_", (3, 4), (-2, 2), (), {}, "AsinhBackward0"),
    ("acosh_", (3, 4), (1.2, 3), (), {}, "AcoshBackward0"),
    ("arccosh_", (3, 4), (1.2, 3), (), {}, "AcoshBackward0"),
    ("atanh_", (3, 4), (-0.9, 0.9), (), {}, "AtanhBackward0"),
    ("arctanh_", (3, 4), (-0.9, 0.9), (), {}, "AtanhBackward0"),
    ("deg2rad_", (3, 4), (-2, 2), (), {}, "Deg2RadBackward0"),
    ("rad2deg_", (3, 4), (-2, 2), (), {}, "Rad2DegBackward0"),
    ("sinc_", (3, 4), (0.2, 2), (), {}, "SincBackward0"),
    ("hypot_", (3, 4), (0.5, 2), (T((3, 4), 0.5, 2),), {}, "HypotBackward0"),
    ("copysign_", (3, 4), (0.5, 2), (-1.0,), {}, "CopysignBackward1"),
    ("ldexp_", (3, 4), (-1, 1), (T((3, 4), -1, 1),), {}, "LdexpBackward0"),
    ("float_power_", (3, 4), (0.5, 2), (2.5,), {}, "PowBackward0"),
    ("divide_", (3, 4), (-1, 1), (T((3, 4), 0.5, 2),), {}, "DivBackward0"),
    ("divide_", (3, 4), (-1, 1), (T((3, 4), 0.5, 2),), {"rounding_mode": None}, "DivBackward2"),
    ("true_divide_", (3, 4), (-1, 1), (2.0,), {}, "DivBackward0"),
    ("multiply_", (3, 4), (-1, 1), (T((4,), -1, 1),), {}, "MulBackward0"),
    ("subtract_", (3, 4), (-1, 1), (T((3, 4), -1, 1),), {"alpha": 2}, "SubBackward0"),
    ("greater_", (3, 4), (-1, 1), (0.5,), {}, "GtBackward0"),
    ("greater_equal_", (3, 4), (-1, 1), (T((3, 4), -1, 1),), {}, "GeBackward1"),
    ("less_", (3, 4), (-1, 1), (0.5,), {}, "LtBackward0"),
    ("less_equal_", (3, 4), (-1, 1), (0.5,), {}, "LeBackward0"),
    ("not_equal_", (3, 4), (-1, 1), (T((3, 4), -1, 1),), {}, "NeBackward1"),
    ("floor_divide_", (3, 4), "int", (2,), {}, None),
    ("bitwise_not_", (3, 4), "int", (), {}, None),
    ("bitwise_and_", (3, 4), "int", (np.arange(12).reshape(3, 4),), {}, None),
    ("bitwise_or_", (3, 4), "int", (5,), {}, None),
    ("bitwise_xor_", (3, 4), "int", (np.arange(4),), {}, None),
    ("logical_not_", (3, 4), "logical", (), {}, None),
    ("logical_and_", (3, 4), "logical", (T((3, 4), -1, 1),), {}, None),
    ("logical_or_", (3, 4), "logical", (np.array([0, 1, 0, 2]),), {}, None),
    ("logical_xor_", (3, 4), "logical", (), {"other": T((3, 4), -1, 1)}, None),
]
IDS = [f"{case[0]}{i}" for i, case in enumerate(CASES)]
RECORDED = [case for case in CASES if case[5] is not None]
RECORDED_IDS = [id_ for id_, case in zip(IDS, CASES) if case[5] is not None]
# the recorded cases with a float tensor operand, which can require grad
OPERAND_IDS = [
    id_ for id_, case in zip(RECORDED_IDS, RECORDED) if any(isinstance(a, tuple) for a in (*case[3], *case[4].values()))
]
WITH_OPERANDS = [case for id_, case in zip(RECORDED_IDS, RECORDED) if id_ in OPERAND_IDS]


def _values(rng, shape, kind):
    if kind == "int":
        return rng.integers(-8, 9, shape)
    if kind == "logical":
        return rng.integers(-1, 2, shape).astype(np.float64)
    return rng.uniform(*kind, shape)


def _operand(rng, spec, requires_grad):
    if isinstance(spec, tuple):
        shape, lo, hi = spec
        return ag.tensor(rng.uniform(lo, hi, shape), requires_grad=requires_grad)
    return ag.tensor(spec) if isinstance(spec, np.ndarray) else spec


def _arguments(seed, case, requires_grad=False):
    """self's values and the op's arguments for `case`, the same for one seed."""
    _, shape, kind, args, kwargs, _ = case
    rng = np.random.default_rng(seed)
    values = _values(rng, shape, kind)
    args = tuple(_operand(rng, a, requires_grad) for a in args)
    kwargs = {k: _operand(rng, v, requires_grad) for k, v in kwargs.items()}
    return values, args, kwargs


def _grad_inputs(args, kwargs):
    return [a for a in (*args, *kwargs.values()) if isinstance(a, ag.Tensor) and a.requires_grad]


def _calling(name, args, kwargs, inputs):
    """The op with its differentiable tensor arguments taken from `inputs` (gradcheck passes its own)."""
    it = iter(inputs)
    args = tuple(next(it) if isinstance(a, ag.Tensor) and a.requires_grad else a for a in args)
    kwargs = {k: next(it) if isinstance(v, ag.Tensor) and v.requires_grad else v for k, v in kwargs.items()}
    return lambda t: getattr(t, name)(*args, **kwargs)


# -- values, versions, views ---------------------------------------------------------------------------------------
@pytest.mark.parametrize("case", CASES, ids=IDS)
def test_the_form_writes_the_out_of_place_result_into_the_tensor_and_its_views(case):
    name = case[0]
    values, args, kwargs = _arguments(0, case)
    t = ag.tensor(values)
    view = t.view(-1)
    expected = getattr(ag.tensor(values), name[:-1])(*args, **kwargs).numpy().astype(t.dtype)
    assert getattr(t, name)(*args, **kwargs) is t
    assert t._version == 1 and t.dtype == ag.tensor(values).dtype
    np.testing.assert_array_equal(t.numpy(), expected)
    np.testing.assert_array_equal(view.numpy(), expected.ravel())


# -- autograd ------------------------------------------------------------------------------------------------------
@pytest.mark.parametrize("case", RECORDED, ids=RECORDED_IDS)
def test_a_non_leaf_gets_torchs_node_with_its_old_history_as_first_edge(case):
    name, *_, node = case
    values, args, kwargs = _arguments(1, case, requires_grad=True)
    x = ag.tensor(values, requires_grad=True) * 1
    getattr(x, name)(*args, **kwargs)
    assert x.grad_fn.name() == node
    assert x.grad_fn.next_functions[0][0].name() == "MulBackward0"


@pytest.mark.parametrize("case", RECORDED, ids=RECORDED_IDS)
def test_gradients_through_the_form_and_through_a_view_of_a_non_leaf(case):
    name = case[0]
    values, args, kwargs = _arguments(2, case, requires_grad=True)
    others = _grad_inputs(args, kwargs)
    base = ag.tensor(values, requires_grad=True)
    padded = ag.tensor(np.concatenate([values[:1], values]), requires_grad=True)  # its last rows are `values`

    def direct(x, *inputs):
        return _calling(name, args, kwargs, inputs)(x * 1)

    def through_view(x, *inputs):
        y = x * 1
        _calling(name, args, kwargs, inputs)(y[1:])  # writes the last rows of y: its history becomes CopySlices
        return y

    assert gradcheck(direct, [base, *others], **TOLERANCES)
    assert gradgradcheck(direct, [base, *others], **TOLERANCES)
    assert gradcheck(through_view, [padded, *others], **TOLERANCES)
    y = padded * 1
    getattr(y[1:], name)(*args, **kwargs)
    assert y.grad_fn.name() == "torch::autograd::CopySlices"


@pytest.mark.parametrize("case", WITH_OPERANDS, ids=OPERAND_IDS)
def test_a_tensor_without_history_gets_one_from_an_operand_that_requires_grad(case):
    name, *_, node = case
    values, args, kwargs = _arguments(4, case, requires_grad=True)
    others = _grad_inputs(args, kwargs)
    x = ag.tensor(values)
    getattr(x, name)(*args, **kwargs)
    assert x.requires_grad and x.grad_fn.name() == node and x.grad_fn.next_functions[0][0] is None
    (x * 1).sum().backward()
    got = [o.grad.numpy() for o in others]
    for o in others:
        o.grad = None
    out_of_place = getattr(ag.tensor(values), name[:-1])(*args, **kwargs)
    if out_of_place.requires_grad:  # comparisons record nothing out of place: their gradient is zero
        out_of_place.to(ag.float64).sum().backward()
    for o, g in zip(others, got):
        np.testing.assert_allclose(g, o.grad.numpy() if o.grad is not None else np.zeros(o.shape), rtol=1e-12)


def test_floor_divide_in_place_records_a_node_whose_backward_raises():
    x = ag.tensor([1.5, 2.5], requires_grad=True) * 1
    x.floor_divide_(ag.tensor([0.5, 2.0], requires_grad=True))
    assert x.tolist() == [3.0, 1.0] and x.grad_fn.name() == "NotImplemented"
    with pytest.raises(RuntimeError, match="derivative for aten::floor_divide is not implemented"):
        x.sum().backward()


@pytest.mark.parametrize("case", RECORDED, ids=RECORDED_IDS)
def test_a_leaf_that_requires_grad_is_refused_and_written_under_no_grad(case):
    name = case[0]
    values, args, kwargs = _arguments(3, case)
    leaf = ag.tensor(values, requires_grad=True)
    with pytest.raises(RuntimeError, match=f"^{LEAF}$"):
        getattr(leaf, name)(*args, **kwargs)
    assert leaf._version == 0
    expected = getattr(ag.tensor(values), name[:-1])(*args, **kwargs).numpy().astype(values.dtype)
    with ag.no_grad():
        getattr(leaf, name)(*args, **kwargs)
    assert leaf.grad_fn is None and leaf.requires_grad and leaf._version == 1
    np.testing.assert_array_equal(leaf.detach().numpy(), expected)


def test_comparisons_record_a_zero_gradient_into_both_operands():
    a = ag.tensor([0.5, 1.0, 2.0], requires_grad=True)
    b = ag.tensor([0.5, 3.0, 2.0], requires_grad=True)
    x = a * 1
    x.eq_(b)
    assert x.tolist() == [1.0, 0.0, 1.0] and x.dtype == ag.float32
    (x * ag.tensor([1.0, 2.0, 3.0])).sum().backward()
    assert a.grad.tolist() == [0.0, 0.0, 0.0] and b.grad.tolist() == [0.0, 0.0, 0.0]


def test_a_comparison_against_an_operand_that_requires_grad_gives_a_plain_tensor_a_history():
    other = ag.tensor([0.5, 1.5], requires_grad=True)
    x = ag.tensor([0.5, 0.7])
    x.lt_(other)
    assert x.tolist() == [0.0, 1.0] and x.requires_grad
    assert x.grad_fn.name() == "LtBackward1"
    assert [edge[0] is None for edge in x.grad_fn.next_functions] == [True, False]


def test_logical_forms_leave_the_history_as_torch_does_even_on_a_leaf_that_requires_grad():
    a = ag.tensor([0.0, 2.0, -1.0], requires_grad=True)
    x = a * 1
    node = x.grad_fn
    x.logical_not_()
    assert x.tolist() == [1.0, 0.0, 0.0] and x.grad_fn is node and x._version == 1
    x.sum().backward()
    assert a.grad.tolist() == [1.0, 1.0, 1.0]
    leaf = ag.tensor([0.0, 2.0], requires_grad=True)
    leaf.logical_xor_(ag.tensor([1, 0]))
    assert leaf.tolist() == [1.0, 1.0] and leaf.grad_fn is None and leaf.requires_grad


# -- dtypes, as torch 2.13 writes and refuses them -----------------------------------------------------------------
def test_results_are_written_in_the_tensors_own_dtype():
    assert ag.tensor([1.0, 2.0, 3.0]).eq_(ag.tensor([1.0, 0.0, 3.0])).tolist() == [1.0, 0.0, 1.0]
    assert ag.tensor([1, 2, 3]).eq_(2.0).tolist() == [0, 1, 0]
    assert ag.tensor([0.0, 2.0, -1.0]).logical_not_().tolist() == [1.0, 0.0, 0.0]
    assert ag.tensor([0.0, 2.0, -1.0]).logical_xor_(ag.tensor([1, 0, 0])).tolist() == [1.0, 1.0, 1.0]
    i32 = ag.tensor([1, 2, 3], dtype=ag.int32)
    assert i32.cumsum_(0).dtype == ag.int32 and i32.tolist() == [1, 3, 6]
    assert i32.bitwise_or_(ag.tensor([4, 4, 4])).dtype == ag.int32 and i32.tolist() == [5, 7, 6]
    assert ag.tensor([1, 2, 3]).pow_(2).tolist() == [1, 4, 9]
    assert ag.tensor([0.5, 1.0], dtype=ag.float32).atan2_(ag.tensor([1.0, 1.0], dtype=ag.float64)).dtype == ag.float32


@pytest.mark.parametrize(
    "make, apply, message",
    [
        (lambda: ag.tensor([1, 2, 3]), lambda t: t.sqrt_(), "result type Float can't be cast to the desired output "
                                                            "type Long"),
        (lambda: ag.tensor([1, 2, 3]), lambda t: t.pow_(2.5), "result type Float can't be cast to the desired output "
                                                              "type Long"),
        (lambda: ag.tensor([True]), lambda t: t.square_(), "result type Long can't be cast to the desired output type "
                                                           "Bool"),
        (lambda: ag.tensor([True, False, True]), lambda t: t.bitwise_xor_(ag.tensor([1, 2, 3])),
         "result type Long can't be cast to the desired output type Bool"),
        (lambda: ag.tensor([1, 2]), lambda t: t.clamp_min_(0.5), "result type Float can't be cast to the desired "
                                                                 "output type long int"),
        (lambda: ag.tensor([1, 2], dtype=ag.int8), lambda t: t.clamp_max_(0.5),
         "result type Float can't be cast to the desired output type signed char"),
        (lambda: ag.tensor([True, False]), lambda t: t.clamp_min_(1), "result type Long can't be cast to the desired "
                                                                      "output type bool"),
        (lambda: ag.tensor([1, 2]), lambda t: t.clamp_min_(ag.tensor([0.5, 1.0])),
         "result type Float can't be cast to the desired output type Long"),
        (lambda: ag.ones(3), lambda t: t.cumsum_(0, dtype=ag.float16),
         "Bad in-place call: input tensor dtype float and output tensor dtype c10::Half should match"),
        (lambda: ag.tensor([1, 2]), lambda t: t.cumprod_(0, dtype=ag.float64),
         "Bad in-place call: input tensor dtype long int and output tensor dtype double should match"),
        (lambda: ag.ones(3), lambda t: t.addmm_(ag.ones(2, 2), ag.ones(2, 3)),
         r"Bad in-place call: input tensor size \[3\] and output tensor size \[2, 3\] should match"),
        (lambda: ag.ones(1), lambda t: t.addmv_(ag.ones(2, 2), ag.ones(2)),
         r"Bad in-place call: input tensor size \[1\] and output tensor size \[2\] should match"),
        (lambda: ag.ones(1, 2, 2), lambda t: t.baddbmm_(ag.ones(3, 2, 2), ag.ones(3, 2, 2)),
         r"Bad in-place call: input tensor size \[1, 2, 2\] and output tensor size \[3, 2, 2\] should match"),
        (lambda: ag.ones(3), lambda t: t.lerp_(ag.ones(2, 3), 0.5),
         r"output with shape \[3\] doesn't match the broadcast shape \[2, 3\]"),
        (lambda: ag.ones(3), lambda t: t.eq_(ag.ones(2, 3)),
         r"output with shape \[3\] doesn't match the broadcast shape \[2, 3\]"),
    ],
)
def test_refusals_match_torch(make, apply, message):
    t = make()
    before = t.numpy().copy()
    with pytest.raises(RuntimeError, match=f"^{message}$"):
        apply(t)
    np.testing.assert_array_equal(t.numpy(), before)
    assert t._version == 0


@pytest.mark.parametrize("name", ["cumsum_", "cumprod_"])
def test_scans_in_place_refuse_a_bool_tensor(name):
    with pytest.raises(NotImplementedError, match=f"^\"{name}out_cpu\" not implemented for 'Bool'$"):
        getattr(ag.tensor([True, False]), name)(0)


def test_an_argument_error_names_the_in_place_form():
    with pytest.raises(TypeError, match=r"^atan2_\(\): argument 'other' \(position 1\) must be Tensor, not float$"):
        ag.ones(2).atan2_(0.5)
