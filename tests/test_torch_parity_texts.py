"""Error texts and small behaviours that match PyTorch 2.13's: the linear-algebra functions' names for an operand
that is no tensor, the size errors of the creation functions, and a deep copy's version counter."""

import copy
import math
import re

import pytest

import actorgrad as ag


# -- linear algebra: a non-tensor operand, named as PyTorch's function names it ----------------------------------
@pytest.mark.parametrize(("call", "text"), [
    (lambda: ag.linalg.det(1.0), "linalg_det(): argument 'A' (position 1) must be Tensor, not float"),
    (lambda: ag.det(1.0), "det(): argument 'input' (position 1) must be Tensor, not float"),
    (lambda: ag.linalg.inv(1.0), "linalg_inv(): argument 'A' (position 1) must be Tensor, not float"),
    (lambda: ag.inverse(1.0), "inverse(): argument 'input' (position 1) must be Tensor, not float"),
    (lambda: ag.linalg.slogdet(1.0), "linalg_slogdet(): argument 'A' (position 1) must be Tensor, not float"),
    (lambda: ag.slogdet(1.0), "slogdet(): argument 'input' (position 1) must be Tensor, not float"),
    (lambda: ag.logdet(1.0), "logdet(): argument 'input' (position 1) must be Tensor, not float"),
    (lambda: ag.linalg.solve(1.0, ag.ones(2)), "linalg_solve(): argument 'A' (position 1) must be Tensor, not float"),
    (lambda: ag.linalg.solve(ag.eye(2), 1.0), "linalg_solve(): argument 'B' (position 2) must be Tensor, not float"),
    (lambda: ag.linalg.solve(1.0, ag.eye(2), left=False),
     "linalg_solve(): argument 'A' (position 1) must be Tensor, not float"),
    (lambda: ag.linalg.cholesky(1.0), "linalg_cholesky(): argument 'input' (position 1) must be Tensor, not float"),
    (lambda: ag.linalg.svd(1.0), "linalg_svd(): argument 'A' (position 1) must be Tensor, not float"),
    (lambda: ag.linalg.svdvals(1.0), "linalg_svdvals(): argument 'A' (position 1) must be Tensor, not float"),
    (lambda: ag.linalg.eigh(1.0), "linalg_eigh(): argument 'input' (position 1) must be Tensor, not float"),
    (lambda: ag.linalg.eigvalsh(1.0), "linalg_eigvalsh(): argument 'input' (position 1) must be Tensor, not float"),
    (lambda: ag.linalg.qr(1.0), "linalg_qr(): argument 'A' (position 1) must be Tensor, not float"),
    (lambda: ag.linalg.vector_norm(1.0),
     "linalg_vector_norm(): argument 'input' (position 1) must be Tensor, not float"),
    (lambda: ag.linalg.matrix_norm(1.0),
     "linalg_matrix_norm(): argument 'input' (position 1) must be Tensor, not float"),
    (lambda: ag.linalg.norm(1.0), "linalg_norm(): argument 'input' (position 1) must be Tensor, not float"),
    (lambda: ag.linalg.matrix_power(1.0, 2),
     "linalg_matrix_power(): argument 'input' (position 1) must be Tensor, not float"),
])
def test_linalg_names_a_non_tensor_operand_as_torch(call, text):
    with pytest.raises(TypeError) as info:
        call()
    assert str(info.value) == text


def test_top_level_det_still_computes_linalg_det():
    A = ag.tensor([[2.0, 1.0], [1.0, 3.0]], dtype=ag.float64)
    assert ag.det(A).item() == pytest.approx(5.0)
    assert ag.slogdet(A).logabsdet.item() == pytest.approx(math.log(5.0))  # det 2 * 3 - 1 * 1


# -- creation: the size and a missing fill value -----------------------------------------------------------------
@pytest.mark.parametrize(("call", "text"), [
    (lambda: ag.full(2.0), "full(): argument 'size' (position 1) must be tuple of ints, not float"),
    (lambda: ag.full((2,)), 'full() missing 1 required positional arguments: "fill_value"'),
    (lambda: ag.full(), 'full() missing 2 required positional argument: "size", "fill_value"'),
    (lambda: ag.full((1.5,), "a"),
     "full(): argument 'size' (position 1) must be tuple of ints, but found element of type float at pos 0"),
    (lambda: ag.zeros((1.5,)),
     "zeros(): argument 'size' (position 1) must be tuple of ints, but found element of type float at pos 0"),
    (lambda: ag.empty([[2]]),
     "empty(): argument 'size' (position 1) must be tuple of ints, but found element of type list at pos 0"),
    (lambda: ag.zeros((ag.tensor(3.0), 2)),
     "zeros(): argument 'size' (position 1) must be tuple of ints, but found element of type Tensor at pos 0"),
    (lambda: ag.zeros((True,)),
     "zeros(): argument 'size' (position 1) must be tuple of ints, but found element of type bool at pos 0"),
    (lambda: ag.rand((1.5,)),
     "rand(): argument 'size' (position 1) must be tuple of ints, but found element of type float at pos 0"),
    (lambda: ag.randint(3, (1.5,)),
     "randint(): argument 'size' (position 2) must be tuple of ints, but found element of type float at pos 0"),
    (lambda: ag.zeros(size=(1.5,)), "zeros(): argument 'size' must be tuple of ints, not tuple"),
    (lambda: ag.zeros(size=[1.5]), "zeros(): argument 'size' must be tuple of ints, not list"),
    # only the first element is checked that way: a later one fails to unpack, counted from 1
    (lambda: ag.zeros((2, 1.5)),
     "zeros(): argument 'size' failed to unpack the object at pos 2 with error \"type must be tuple of ints,but got "
     "float\""),
    (lambda: ag.ones(1).new_full(2.0), "new_full(): argument 'size' (position 1) must be tuple of ints, not float"),
    (lambda: ag.ones(1).new_full((2,)), 'new_full() missing 1 required positional arguments: "fill_value"'),
    (lambda: ag.ones(1).new_zeros((1.5,)),
     "new_zeros(): argument 'size' (position 1) must be tuple of ints, but found element of type float at pos 0"),
])
def test_creation_size_errors_as_torch(call, text):
    with pytest.raises(TypeError) as info:
        call()
    assert str(info.value) == text


def test_sizes_with_an_int_tensor_first_still_work():
    assert ag.zeros((ag.tensor(3), 2)).shape == (3, 2)
    assert ag.full((2,), fill_value=1).tolist() == [1, 1]


# -- deepcopy ----------------------------------------------------------------------------------------------------
def test_deepcopy_counts_one_change_as_torch():
    a = ag.ones(4, requires_grad=True)
    a.grad = ag.ones(4)
    b = ag.ones(4)
    b.add_(1)
    b.add_(1)
    leaf, base, view = copy.deepcopy([a, b, b[1:]])
    assert (leaf._version, leaf.grad._version, base._version, view._version) == (1, 1, 1, 1)
    base.add_(1)  # the copies share memory but, as in PyTorch, not a version counter
    assert (base._version, view._version) == (2, 1)


def test_deepcopy_of_a_parameter_is_a_fresh_parameter_without_its_grad():
    p = ag.nn.Parameter(ag.ones(2))
    p.grad = ag.ones(2)
    q = copy.deepcopy(p)
    assert type(q) is ag.nn.Parameter and q.requires_grad and q.grad is None and q._version == 0
    q.data.add_(1)
    assert p.tolist() == [1.0, 1.0]
    frozen = copy.deepcopy(ag.nn.Parameter(ag.ones(2), requires_grad=False))
    assert not frozen.requires_grad


@pytest.mark.parametrize(("equation", "index"), [("éj->j", 0), ("ij->j2", 5), ("i-j->j", 1), ("ij->>j", 4)])
def test_einsum_refuses_a_subscript_that_is_not_an_ascii_letter_naming_its_index(equation, index):
    message = (f"einsum(): invalid subscript given at index {index} in the equation string, subscripts must be in "
               "[a-zA-Z]")
    with pytest.raises(RuntimeError, match=f"^{re.escape(message)}$"):
        ag.einsum(equation, ag.ones(2, 2))


def test_einsum_takes_spaces_in_its_equation():
    assert ag.einsum("i j -> j", ag.ones(2, 2)).tolist() == [2.0, 2.0]
