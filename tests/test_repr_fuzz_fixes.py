"""Printing defects found by fuzzing repr/str/format against PyTorch's layout: `edgeitems=0` (a summary with no
values, and the shape named), and a 0-d Parameter formatting as a Parameter rather than as its value."""

import pytest

import actorgrad as ag


@pytest.fixture
def restored():
    yield
    ag.set_printoptions(profile="default")


def test_a_summary_without_edge_items_shows_no_values_and_names_the_shape(restored):
    ag.set_printoptions(edgeitems=0, threshold=0)
    assert repr(ag.arange(6.0)) == "tensor([...], size=(6,))"
    assert repr(ag.arange(6).reshape(2, 3)) == "tensor([...], size=(2, 3))"
    assert repr(ag.ones(2, 3, 4, dtype=ag.float64)) == "tensor([...], size=(2, 3, 4), dtype=actorgrad.float64)"
    assert repr(ag.tensor([1 + 2j, 3j])) == "tensor([...], size=(2,))"
    x = ag.tensor([1.0], requires_grad=True)
    assert repr(x * 2) == "tensor([...], size=(1,), grad_fn=<MulBackward0>)"


def test_without_edge_items_a_zero_dim_tensor_still_shows_its_value(restored):
    ag.set_printoptions(edgeitems=0, threshold=0)
    assert repr(ag.tensor(2.5, dtype=ag.float64)) == "tensor(2.5000, size=(), dtype=actorgrad.float64)"
    assert repr(ag.tensor(True)) == "tensor(True, size=())"


def test_without_edge_items_an_unsummarized_tensor_shows_all_values_and_its_shape(restored):
    ag.set_printoptions(edgeitems=0)
    assert repr(ag.tensor([0.5, 1.25])) == "tensor([0.5000, 1.2500], size=(2,))"
    assert repr(ag.arange(6).reshape(2, 3)) == "tensor([[0, 1, 2],\n        [3, 4, 5]], size=(2, 3))"
    assert repr(ag.zeros(0, 2)) == "tensor([], size=(0, 2))"


def test_edge_items_come_back_with_the_default_profile(restored):
    ag.set_printoptions(edgeitems=0, threshold=0)
    ag.set_printoptions(profile="default")
    assert repr(ag.arange(3)) == "tensor([0, 1, 2])"


def test_a_zero_dim_parameter_formats_as_its_repr_and_refuses_a_format_spec():
    p = ag.nn.Parameter(ag.tensor(1.5))
    assert format(p) == "Parameter containing:\ntensor(1.5000, requires_grad=True)"
    assert f"{p}" == repr(p)
    with pytest.raises(TypeError, match=r"^unsupported format string passed to Parameter.__format__$"):
        format(p, ".3f")
    assert f"{p.item():.3f}" == "1.500"


def test_a_zero_dim_tensor_still_formats_as_its_value():
    x = ag.tensor(1.5, requires_grad=True)
    assert f"{x:.3f}" == "1.500"
    assert f"{x * 2}" == "3.0"


@pytest.mark.gpu
def test_on_cuda_without_edge_items_the_device_comes_before_the_shape(cupy, restored):
    ag.set_printoptions(edgeitems=0, threshold=0)
    assert repr(ag.arange(6.0, device="cuda")) == "tensor([...], device='cuda:0', size=(6,))"
