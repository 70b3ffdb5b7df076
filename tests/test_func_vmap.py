"""actorgrad.func.vmap (in_dims and out_dims as pytrees, nesting, randomness, chunk_size, PyTorch's errors),
per-sample gradients with vmap(grad) against a loop, and func.functional_call."""

from __future__ import annotations

import numpy as np
import pytest

import actorgrad as ag
from actorgrad import func, nn

RNG = np.random.default_rng(11)


def _t(*shape: int, requires_grad: bool = False) -> ag.Tensor:
    return ag.tensor(RNG.uniform(-1.0, 1.0, shape), requires_grad=requires_grad)


def _close(got, expected, tol: float = 1e-12) -> None:
    np.testing.assert_allclose(got.detach().numpy() if isinstance(got, ag.Tensor) else got,
                               expected.detach().numpy() if isinstance(expected, ag.Tensor) else expected,
                               rtol=tol, atol=tol)


def test_vmap_maps_over_in_dims_and_passes_none_inputs_whole():
    x, w = _t(4, 3), _t(3, 5)
    _close(func.vmap(lambda row, w: row @ w, in_dims=(0, None))(x, w), x.numpy() @ w.numpy())
    _close(func.vmap(lambda column: column.sum(), in_dims=1)(x), x.numpy().sum(0))
    _close(func.vmap(lambda column: column * 2, in_dims=-1)(x), 2 * x.numpy().T)
    _close(func.vmap(lambda row, *, scale: row * scale)(x, scale=3.0), 3 * x.numpy())


def test_vmap_in_dims_and_out_dims_follow_the_pytrees():
    a, b = _t(3, 4), _t(4, 3)
    def f(d):
        assert d["b"][1] == "tag"
        return {"s": d["a"] + d["b"][0], "p": d["b"][0]}

    out = func.vmap(f, in_dims=({"a": 1, "b": (0, None)},), out_dims={"s": 0, "p": 1})({"a": a, "b": (b, "tag")})
    _close(out["s"], a.numpy().T + b.numpy())
    _close(out["p"], b.numpy().T)
    first, second = func.vmap(lambda x: (x, x.sum()), out_dims=(1, 0))(b)
    _close(first, b.numpy().T)
    _close(second, b.numpy().sum(1))
    _close(func.vmap(lambda x: x.sum(), out_dims=(0,))(b), b.numpy().sum(1))
    _close(func.vmap(lambda x: x * 2, out_dims=-1)(b), 2 * b.numpy().T)


def test_vmap_out_dims_none_returns_an_unbatched_output_once():
    x = _t(3, 2)
    total, constant = func.vmap(lambda r: (r.sum(), ag.ones(2)), out_dims=(0, None))(x)
    _close(total, x.numpy().sum(1))
    _close(constant, np.ones(2))
    assert func.vmap(lambda r: 3, out_dims=None)(x) == 3
    _close(func.vmap(lambda r: ag.ones(2))(x), np.ones((3, 2)))  # an unbatched output is repeated


def test_nested_vmap_gives_an_outer_product():
    a, b = _t(3), _t(4)
    got = func.vmap(func.vmap(lambda x, y: x * y, in_dims=(None, 0)), in_dims=(0, None))(a, b)
    _close(got, np.outer(a.numpy(), b.numpy()))


def test_gradients_flow_through_vmap():
    x = _t(3, 2, requires_grad=True)
    y = func.vmap(lambda r: (r ** 3).sum())(x)
    (g,) = ag.autograd.grad(y.sum(), x)
    _close(g, 3 * x.detach().numpy() ** 2)
    _close(func.grad(lambda x: func.vmap(lambda r: ag.sin(r).sum())(x).sum())(x), np.cos(x.detach().numpy()))


def test_per_sample_gradients_by_vmap_of_grad_match_a_loop():
    model = nn.Linear(3, 2).double()
    params = {name: p.detach() for name, p in model.named_parameters()}
    x, y = _t(5, 3), _t(5, 2)

    def loss(params, xi, yi):
        out = func.functional_call(model, params, (xi.unsqueeze(0),))
        return ((out - yi.unsqueeze(0)) ** 2).mean()

    per_sample = func.vmap(func.grad(loss), in_dims=(None, 0, 0))(params, x, y)
    for i in range(5):
        leaves = [p.detach().requires_grad_() for p in params.values()]
        value = loss(dict(zip(params, leaves)), x[i], y[i])
        for name, expected in zip(params, ag.autograd.grad(value, leaves)):
            _close(per_sample[name][i], expected)
    assert all(p.grad is None for p in model.parameters())
    # a closed form for one of them: d/db mean((Wx + b - y)**2) = (Wx + b - y)
    w, b = params["weight"].numpy(), params["bias"].numpy()
    _close(per_sample["bias"], x.numpy() @ w.T + b - y.numpy())


def test_randomness_error_same_and_different():
    x = ag.zeros(3, 4)
    ag.manual_seed(5)
    with pytest.raises(RuntimeError, match=r"^vmap: called random operation while in randomness error mode. Please "
                       r"either use the 'same' or 'different' randomness flags on vmap or perform the randomness "
                       r"operation out of vmap$"):
        func.vmap(lambda r: r + ag.rand(4))(x)
    after = ag.rand(2)
    ag.manual_seed(5)
    _close(after, ag.rand(2))  # the refused call left the generator where it was
    same = func.vmap(lambda r: r + ag.rand(4), randomness="same")(x)
    assert all(np.array_equal(same[i].numpy(), same[0].numpy()) for i in range(3))
    different = func.vmap(lambda r: r + ag.rand(4), randomness="different")(x)
    assert not np.array_equal(different[0].numpy(), different[1].numpy())
    ag.manual_seed(9)
    chunked = func.vmap(lambda r: r + ag.rand(4), randomness="different", chunk_size=2)(x)
    ag.manual_seed(9)
    _close(chunked, ag.stack([ag.rand(4) for _ in range(3)]))
    with pytest.raises(RuntimeError, match="^Only allowed values for randomness are 'error', 'different', or 'same'. "
                       "Got sometimes$"):
        func.vmap(lambda r: r, randomness="sometimes")(x)


def test_chunk_size_gives_the_same_result_and_is_checked():
    x = _t(7, 2)
    _close(func.vmap(lambda r: r.exp(), chunk_size=3)(x), np.exp(x.numpy()))
    with pytest.raises(ValueError, match=r"^vmap: chunk_size should be None or greater than 0. \(got 0\)$"):
        func.vmap(lambda r: r, chunk_size=0)


def test_vmap_refuses_what_pytorch_refuses():
    x = _t(3, 2)

    def ident(r):
        return r

    with pytest.raises(ValueError, match=r"^vmap: Expected all tensors to have the same size in the mapped dimension, "
                       r"got sizes \[2, 3\] for the mapped dimension$"):
        func.vmap(lambda a, b: a + b)(ag.ones(2), ag.ones(3))
    with pytest.raises(ValueError, match=r"^vmap\(ident, in_dims=2, \.\.\.\)\(<inputs>\): Got in_dim=2 for some "
                       r"input, but that input is a Tensor of dimensionality 2 so expected in_dim to satisfy "
                       r"-2 <= in_dim < 2.$"):
        func.vmap(ident, in_dims=2)(x)
    with pytest.raises(ValueError, match=r"in_dims is not compatible with the structure of `inputs`. in_dims has "
                       r"structure TreeSpec\(tuple, None, \[\*,\n  \*\]\) but inputs has structure "
                       r"TreeSpec\(tuple, None, \[\*\]\).$"):
        func.vmap(ident, in_dims=(0, 0))(x)
    with pytest.raises(ValueError, match=r"expected `in_dims` to be int or a \(potentially nested\) tuple matching the "
                       r"structure of inputs, got: <class 'NoneType'>.$"):
        func.vmap(ident, in_dims=None)(x)
    with pytest.raises(ValueError, match=r"Got in_dim=0 for an input but the input is of type <class 'int'>. We "
                       r"cannot vmap over non-Tensor arguments, please use None as the respective in_dim$"):
        func.vmap(lambda a, b: a, in_dims=(0, 0))(x, 3)
    with pytest.raises(ValueError, match=r"^vmap\(ident\)\(<inputs>\): got no inputs."):
        func.vmap(ident)()
    with pytest.raises(ValueError, match="^vmap: Expected at least one Tensor to vmap over$"):
        func.vmap(ident, in_dims=(None,))(x)
    with pytest.raises(ValueError, match=r"^vmap\(<lambda>, \.\.\.\): `<lambda>` must only return Tensors, got type "
                       r"<class 'int'>. Did you mean to set out_dims= to None for output\?$"):
        func.vmap(lambda r: 3)(x)
    with pytest.raises(ValueError, match=r"^vmap\(ident, \.\.\.\): `ident` can not return a BatchedTensor when "
                       r"out_dim is None$"):
        func.vmap(ident, out_dims=None)(x)
    with pytest.raises(ValueError, match=r"out_dims is not compatible with the structure of `outputs`"):
        func.vmap(lambda r: (r, r), out_dims=(0, 0, 0))(x)
    with pytest.raises(ValueError, match=r"^vmap\(ident, \.\.\., out_dims=0.5\): `out_dims` must be an int, None or "
                       r"a python collection of ints"):
        func.vmap(ident, out_dims=0.5)(x)


def test_functional_call_takes_a_dict_or_several_and_checks_them():
    model = nn.Linear(2, 1).double()
    x = _t(4, 2)
    weight, bias = _t(1, 2), _t(1)
    expected = x.numpy() @ weight.numpy().T + bias.numpy()
    _close(func.functional_call(model, {"weight": weight, "bias": bias}, x), expected)
    _close(func.functional_call(model, ({"weight": weight}, {"bias": bias}), (x,)), expected)
    g = func.grad(lambda p: func.functional_call(model, p, (x,)).sum())({"weight": weight, "bias": bias})
    _close(g["weight"], x.numpy().sum(0, keepdims=True))
    _close(g["bias"], [4.0])
    assert model.weight.grad is None
    with pytest.raises(ValueError, match=r"^\['bias'\] appeared in multiple dictionaries; behavior of functional "
                       r"call is ambiguous$"):
        func.functional_call(model, ({"bias": bias}, {"bias": bias}), x)
    with pytest.raises(ValueError, match="^Expected all elements of parameter_and_buffer_dicts to be dictionaries$"):
        func.functional_call(model, ({"bias": bias}, 3), x)
    with pytest.raises(ValueError, match=r"^Expected parameter_and_buffer_dicts to be a dict, or a list/tuple of "
                       r"dicts, but got <class 'int'>$"):
        func.functional_call(model, 3, x)
    with pytest.raises(RuntimeError, match=r"Missing key\(s\): 'weight'"):
        func.functional_call(model, {"bias": bias}, x, strict=True)


def test_functional_call_passes_kwargs_and_ties_shared_weights():
    class Twice(nn.Module):
        def __init__(self) -> None:
            super().__init__()
            self.first = nn.Linear(2, 2, bias=False).double()
            self.second = nn.Linear(2, 2, bias=False).double()
            self.second.weight = self.first.weight

        def forward(self, x, *, shift):
            return self.second(self.first(x)) + shift

    model, x, weight = Twice(), _t(3, 2), _t(2, 2)
    w = weight.numpy()
    tied = func.functional_call(model, {"first.weight": weight}, (x,), {"shift": 1.0})
    _close(tied, x.numpy() @ w.T @ w.T + 1.0)
    untied = func.functional_call(model, {"first.weight": weight}, (x,), {"shift": 0.0}, tie_weights=False)
    _close(untied, x.numpy() @ w.T @ model.first.weight.detach().numpy().T)


def test_gradients_of_per_sample_gradients_match_a_loop():
    """A gradient penalty: d/dw sum_i |d loss_i / dw|**2, by grad of vmap of grad, against create_graph loops."""
    w, x = _t(3, requires_grad=True), _t(4, 3)

    def loss(w, xi):
        return ag.tanh((w * xi).sum()) ** 2

    def penalty(w):
        return (func.vmap(func.grad(loss), in_dims=(None, 0))(w, x) ** 2).sum()

    expected = 0
    for i in range(4):
        (g,) = ag.autograd.grad(loss(w, x[i]), w, create_graph=True)
        expected = expected + (g ** 2).sum()
    (reference,) = ag.autograd.grad(expected, w)
    _close(func.grad(penalty)(w), reference)
    (through_tape,) = ag.autograd.grad(penalty(w), w)
    _close(through_tape, reference)
    assert w.grad is None
