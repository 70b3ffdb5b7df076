"""The autograd surface as PyTorch 2.13 has it: grad and inference modes (as decorators of generators too), node
reprs, numbers and saved values, `.grad` of a non-leaf, views made in no_grad mode, gradcheck's options,
autograd.functional's refusals and anomaly mode's warning. Expected texts and values were read off torch 2.13."""

import re
import warnings

import numpy as np
import pytest

import actorgrad as ag
from actorgrad.autograd import GradcheckError, GraphRoot, gradcheck, gradgradcheck
from actorgrad.autograd.functional import hessian, jacobian
from actorgrad.devices import cpu


def leaf(values=(1.0, 2.0, 3.0)):
    return ag.tensor(np.array(values, dtype=np.float64), requires_grad=True)


# -- 1. grad-mode decorators ----------------------------------------------------------------------------------------
@pytest.mark.parametrize("decorator, inside", [
    (lambda: ag.no_grad(), False), (lambda: ag.no_grad, False), (lambda: ag.set_grad_enabled(False), False),
    (lambda: ag.enable_grad(), True), (lambda: ag.enable_grad, True),
])
def test_a_decorated_generator_runs_its_body_in_the_mode_and_yields_back_to_the_callers(decorator, inside):
    @decorator()
    def modes():
        sent = yield ag.is_grad_enabled()
        yield (sent, ag.is_grad_enabled())

    with ag.set_grad_enabled(not inside):
        gen = modes()
        assert next(gen) is inside
        assert ag.is_grad_enabled() is (not inside)  # between resumptions the caller's mode holds
        assert gen.send("x") == ("x", inside)
    assert ag.is_grad_enabled()


def test_bare_no_grad_and_enable_grad_decorate_functions():
    @ag.no_grad
    def off():
        return ag.is_grad_enabled()

    @ag.enable_grad
    def on():
        return ag.is_grad_enabled()

    assert off() is False
    with ag.no_grad():
        assert on() is True


def test_no_grad_given_a_non_callable_wraps_it_and_the_call_fails():
    wrapped = ag.no_grad(True)
    with pytest.raises(TypeError, match="'bool' object is not callable"):
        wrapped()


@pytest.mark.parametrize("value, name", [(0, "int"), (1, "int"), (None, "NoneType"), (0.0, "float")])
def test_set_grad_enabled_takes_only_a_bool(value, name):
    with pytest.raises(TypeError, match=re.escape(
            f"set_grad_enabled(): argument 'enabled' (position 1) must be bool, not {name}")):
        ag.set_grad_enabled(value)
    assert ag.is_grad_enabled()


# -- 2. inference mode ----------------------------------------------------------------------------------------------
def test_inference_mode_turns_grad_off_and_makes_inference_tensors():
    x = leaf()
    assert not ag.is_inference_mode_enabled()
    with ag.inference_mode():
        assert ag.is_inference_mode_enabled() and not ag.is_grad_enabled()
        y = x * 2
        made = ag.tensor([1.0, 2.0])
        view = x[0:2]  # a view of a normal tensor stays normal, and requires grad as its base does
        with ag.inference_mode(False):
            assert ag.is_grad_enabled() and not ag.is_inference_mode_enabled()
            normal = ag.tensor([1.0])
    assert y.is_inference() and made.is_inference() and not y.requires_grad and y.grad_fn is None
    assert not view.is_inference() and view.requires_grad
    assert not normal.is_inference() and not x.is_inference()
    assert y[0:1].is_inference() and y.detach().is_inference()


def test_inference_mode_decorates_bare_called_and_generators():
    @ag.inference_mode
    def bare():
        return ag.is_inference_mode_enabled(), ag.is_grad_enabled()

    @ag.inference_mode(False)
    def off():
        return ag.is_inference_mode_enabled()

    @ag.inference_mode()
    def gen():
        yield ag.is_inference_mode_enabled()

    assert bare() == (True, False) and off() is False and list(gen()) == [True]
    assert ag.autograd.inference_mode is ag.inference_mode


def test_inference_tensors_refuse_requires_grad_outside_inference_mode():
    with ag.inference_mode():
        t = ag.tensor([1.0, 2.0])
    message = "Setting requires_grad=True on inference tensor outside InferenceMode is not allowed."
    with pytest.raises(RuntimeError, match=re.escape(message)):
        t.requires_grad_()
    with pytest.raises(RuntimeError, match=re.escape(message)):
        t.requires_grad = True
    t.requires_grad_(False)
    with ag.inference_mode():
        assert t.requires_grad_().requires_grad


def test_inference_tensors_cannot_be_saved_for_backward_but_may_be_added():
    x = leaf()
    with ag.inference_mode():
        y = ag.tensor(np.ones(3))
    with pytest.raises(RuntimeError, match=r"^Inference tensors cannot be saved for backward\. .* make a clone"):
        y * x
    (y + x).sum().backward()
    assert x.grad.tolist() == [1.0, 1.0, 1.0]
    (y.clone() * x).sum().backward()


def test_inference_tensors_track_no_version_and_refuse_in_place_changes_outside_inference_mode():
    with ag.inference_mode():
        y = ag.tensor([1.0, 2.0])
        y.add_(1)  # allowed inside
    with pytest.raises(RuntimeError, match="^Inference tensors do not track version counter.$"):
        _ = y._version
    with pytest.raises(RuntimeError, match=r"^Inplace update to inference tensor outside InferenceMode"):
        y.add_(1)
    normal = ag.tensor([1.0])
    with ag.inference_mode():
        normal.add_(1)
    assert normal._version == 1


# -- 3. where the names live ----------------------------------------------------------------------------------------
def test_mode_managers_are_in_autograd_and_anomaly_queries_at_top_level():
    assert ag.autograd.no_grad is ag.no_grad and ag.autograd.enable_grad is ag.enable_grad
    assert ag.autograd.set_grad_enabled is ag.set_grad_enabled
    assert ag.is_anomaly_enabled() is False and ag.is_anomaly_check_nan_enabled() is False
    with ag.autograd.set_detect_anomaly(True):
        assert ag.is_anomaly_enabled()


# -- 4./5. nodes ----------------------------------------------------------------------------------------------------
def test_a_node_reprs_as_pytorchs():
    x = leaf()
    y = x * 2
    assert re.fullmatch(r"<MulBackward0 object at 0x[0-9a-f]+>", repr(y.grad_fn))
    accumulator = y.grad_fn.next_functions[0][0]
    assert type(accumulator).__name__ == "AccumulateGrad"
    assert re.fullmatch(r"<AccumulateGrad object at 0x[0-9a-f]+>", repr(accumulator))
    assert re.fullmatch(r"<GraphRoot object at 0x[0-9a-f]+>", repr(GraphRoot((), [], cpu)))


def test_output_nr_sequence_nr_and_requires_grad_of_nodes():
    class Twice(ag.autograd.Function):
        @staticmethod
        def forward(ctx, t):
            return t * 1, t * 2

        @staticmethod
        def backward(ctx, ga, gb):
            return ga + 2 * gb

    x = leaf()
    a, b = Twice.apply(x)
    assert (x.output_nr, a.output_nr, b.output_nr) == (0, 0, 1)
    y = x * 2
    z = y.sqrt()
    assert z.grad_fn._sequence_nr() == y.grad_fn._sequence_nr() + 1
    assert y.grad_fn.requires_grad is True and y.grad_fn.next_functions[0][0].requires_grad is True


def test_saved_values_show_as_underscore_saved_attributes():
    x = leaf()
    c = ag.tensor(np.ones(3))
    square = x * x
    assert square.grad_fn._saved_self is x and square.grad_fn._saved_other is x
    scaled = x * c
    assert scaled.grad_fn._saved_other is c and scaled.grad_fn._saved_self is None  # c needs no gradient
    root = x.sqrt()
    saved = root.grad_fn._saved_result
    assert saved is not root and saved.grad_fn is root.grad_fn and saved.tolist() == root.tolist()
    assert (x ** 3).grad_fn._saved_exponent == 3
    with pytest.raises(AttributeError, match="'MulBackward0' object has no attribute '_saved_exponent'"):
        _ = square.grad_fn._saved_exponent
    square.sum().backward()
    with pytest.raises(RuntimeError, match="Trying to backward through the graph a second time"):
        _ = square.grad_fn._saved_self


# -- 6. .grad of a non-leaf -----------------------------------------------------------------------------------------
def test_reading_grad_of_a_non_leaf_warns_unless_it_retains_grad():
    x = leaf()
    y = x * 2
    with pytest.warns(UserWarning, match=re.escape(
            "The .grad attribute of a Tensor that is not a leaf Tensor is being accessed. Its .grad attribute won't "
            "be populated during autograd.backward(). If you indeed want the .grad field to be populated for a "
            "non-leaf Tensor, use .retain_grad() on the non-leaf Tensor. If you access the non-leaf Tensor by "
            "mistake, make sure you access the leaf Tensor instead. See github.com/pytorch/pytorch/pull/30531 for "
            "more information.")) as caught:
        assert y.grad is None
    assert caught[0].filename == __file__
    y.retain_grad()
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        assert y.grad is None and x.grad is None


# -- 7. a view made in no_grad mode ---------------------------------------------------------------------------------
def test_a_view_made_in_no_grad_mode_requires_grad_as_its_base_and_is_a_leaf():
    x = leaf((1.0, 2.0, 3.0, 4.0))
    with ag.no_grad():
        v = x[0:2]
        w = v.view(1, 2)
        n = x * 2
    assert v.requires_grad and v.is_leaf and v.grad_fn is None and w.requires_grad
    assert not n.requires_grad
    assert repr(v) == "tensor([1., 2.], dtype=actorgrad.float64, requires_grad=True)"
    z = v * 2  # requires grad, but its gradient reaches nothing, as in PyTorch
    assert z.requires_grad and z.grad_fn.next_functions == ((None, 0), (None, 0))
    z.sum().backward()
    assert x.grad is None and v.grad is None
    with pytest.raises(RuntimeError, match="A view was created in no_grad mode and is being modified inplace"):
        v.mul_(2)
    with ag.no_grad():
        v.mul_(1)
    x.requires_grad_(False)
    assert not v.requires_grad


# -- 8. gradcheck ---------------------------------------------------------------------------------------------------
def test_gradcheck_takes_pytorchs_options():
    x = leaf()
    f = lambda t: (t * t).tanh()  # noqa: E731
    assert gradcheck(f, (x,), fast_mode=True, nondet_tol=0.0, check_undefined_grad=True, check_grad_dtypes=True,
                     check_batched_grad=False, masked=False)
    assert gradcheck(f, (x,), check_forward_ad=True, check_backward_ad=False)
    assert gradgradcheck(f, (x,), gen_non_contig_grad_outputs=True, check_fwd_over_rev=False,
                         check_rev_over_rev=True, fast_mode=True, nondet_tol=0.0, check_grad_dtypes=True)
    with pytest.raises(NotImplementedError, match="check_batched_grad"):
        gradcheck(f, (x,), check_batched_grad=True)
    with pytest.raises(AssertionError, match="Expected at least one of check_forward_ad or check_backward_ad"):
        gradcheck(f, (x,), check_backward_ad=False)
    with pytest.raises(AssertionError, match="Setting check_undefined_grad=True requires check_rev_over_rev"):
        gradgradcheck(f, (x,), check_rev_over_rev=False, check_fwd_over_rev=True)


def test_gradcheck_with_forward_ad_catches_a_wrong_rule():
    from actorgrad.ops.record import Rule, record

    wrong = Rule("SquareBackward", (("self",), lambda ops, g, self: g * 2.1 * self))
    with pytest.raises(GradcheckError, match="Jacobian computed with forward mode mismatch for output 0"):
        gradcheck(lambda t: record(wrong, t._data * t._data, (t,)), (leaf(),), check_forward_ad=True,
                  check_backward_ad=False)


def test_gradcheck_of_an_output_without_grad_expects_a_zero_numerical_gradient():
    x = leaf()
    assert gradcheck(lambda t: t.detach() * 0 + 1, (x,))
    with pytest.raises(GradcheckError, match="^Numerical gradient for function expected to be zero$"):
        gradcheck(lambda t: t.detach() * 2, (x,))
    assert gradcheck(lambda t: t.detach() * 2, (x,), raise_exception=False) is False


def test_gradcheck_warns_about_float32_with_pytorchs_text():
    x = ag.tensor([1.0, 2.0], requires_grad=True)
    with pytest.warns(UserWarning, match=re.escape(
            "Input #0 requires gradient and is not a double precision floating point or complex. This check will "
            "likely fail if all the inputs are not of double precision floating point or complex. ")):
        gradcheck(lambda t: t * 2, (x,), atol=1e-2, rtol=1e-2, eps=1e-3)


# -- 9. autograd.functional's refusals ------------------------------------------------------------------------------
def _cube(t):
    return (t * t * t).sum()


def test_jacobian_refuses_strict_with_forward_mode_before_vectorize():
    x = leaf()
    with pytest.raises(RuntimeError, match=re.escape(
            "actorgrad.autograd.functional.jacobian: `strict=True` and `strategy=\"forward-mode\"` are not "
            "supported together (yet). Please either set `strict=False` or `strategy=\"reverse-mode\"`.")):
        jacobian(lambda t: t * 2, x, strict=True, strategy="forward-mode")
    with pytest.raises(NotImplementedError, match=re.escape(
            "actorgrad.autograd.functional.jacobian: `create_graph=True` and `strategy=\"forward-mode\"`")):
        jacobian(lambda t: t * 2, x, create_graph=True, strict=True, strategy="forward-mode")
    with pytest.raises(NotImplementedError, match="Hessian isonly implemented for `vectorize=True`"):
        jacobian(lambda t: t * 2, x, strategy="forward-mode")


def test_vectorize_with_strict_is_refused_after_the_function_ran():
    x = leaf()
    calls = []

    def f(t):
        calls.append(1)
        return t * 2

    message = ("actorgrad.autograd.functional.jacobian: `strict=True` and `vectorized=True` are not supported "
               "together. Please either set `strict=False` or `vectorize=False`.")
    with pytest.raises(RuntimeError, match=re.escape(message)):
        jacobian(f, x, strict=True, vectorize=True)
    assert calls == [1]
    with pytest.raises(RuntimeError, match=re.escape(message)):
        hessian(_cube, x, strict=True, vectorize=True)
    with pytest.raises(RuntimeError, match=re.escape("`strict=True` and `strategy=\"forward-mode\"`")):
        hessian(_cube, x, strict=True, vectorize=True, outer_jacobian_strategy="forward-mode")


# -- 10. anomaly mode -----------------------------------------------------------------------------------------------
def test_anomaly_mode_warns_with_the_forward_stack_before_raising():
    x = ag.tensor([-1.0, 1.0], requires_grad=True)
    with pytest.warns(UserWarning, match="Anomaly Detection has been enabled"):
        mode = ag.autograd.detect_anomaly()
    with mode, np.errstate(invalid="ignore"):
        y = x.sqrt()
        with pytest.warns(UserWarning) as caught, pytest.raises(RuntimeError, match="SqrtBackward0"):
            y.sum().backward()
    messages = [str(w.message) for w in caught]
    assert any(m.startswith("Error detected in SqrtBackward0. Traceback of forward call that caused the error:\n")
               and "y = x.sqrt()" in m for m in messages), messages


def test_creation_functions_make_inference_tensors_in_inference_mode_and_their_values_survive_a_refused_write():
    with ag.inference_mode():
        made = [ag.ones(2), ag.zeros(2), ag.full((2,), 3.0), ag.arange(2.0), ag.rand(2), ag.eye(2)]
    assert all(t.is_inference() for t in made)
    assert not ag.ones(2).is_inference()
    y = made[0]
    for write in (lambda: y.add_(1), lambda: y.__setitem__(0, 5.0), lambda: y.__setitem__([0, 1], 5.0)):
        with pytest.raises(RuntimeError, match="Inplace update to inference tensor outside InferenceMode"):
            write()
    assert y.tolist() == [1.0, 1.0]
