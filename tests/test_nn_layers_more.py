"""More layers and their functions: bilinear (Bilinear), embedding_bag (EmbeddingBag), max_unpool1d/2d/3d
(MaxUnpool1d/2d/3d), lp_pool1d/2d/3d (LPPool1d/2d/3d) and channel_shuffle (ChannelShuffle).

Expected values come from each function's documented formula in numpy, by brute force (bags reduced one by one,
pooling windows enumerated, unpooling as a scatter); gradients from central differences of those formulas, from
gradcheck in float64 (away from ties and zeros) and, where PyTorch picks one place for a gradient (embedding_bag's
max ties, max_unpool's repeated indices), from the rule worked by hand or as a gather. Reprs and error texts are
PyTorch's.
"""

import itertools
import math
import re
import warnings

import numpy as np
import pytest

import actorgrad as ag
from actorgrad import nn
from actorgrad.autograd import gradcheck, gradgradcheck
from actorgrad.nn import functional as F

TOL = {"eps": 1e-6, "atol": 1e-6, "rtol": 1e-4}


def f64(values, requires_grad=False, device=None):
    return ag.tensor(values, dtype=ag.float64, requires_grad=requires_grad, device=device)


def close(t, expected, rtol=1e-12):
    np.testing.assert_allclose(t.detach().numpy(), expected, rtol=rtol, atol=1e-14)


def raises(call, kind, text):
    with pytest.raises(kind, match="^" + re.escape(text) + "$"):
        call()


# -- bilinear ---------------------------------------------------------------------------------------------------------
X1 = [[0.5, -1.0, 2.0], [1.5, 0.25, -0.75]]
X2 = [[1.0, -0.5], [0.25, 2.0]]
A = (np.arange(12.0).reshape(2, 3, 2) / 4 - 1.3).tolist()
B = [0.1, -0.2]


def bilinear_reference(x1, x2, weight, bias=None):
    """y[..., k] = x1[..., :] @ weight[k] @ x2[..., :] + bias[k], the documented formula."""
    out = np.einsum("...i,kij,...j->...k", np.array(x1), np.array(weight), np.array(x2))
    return out if bias is None else out + np.array(bias)


BILINEAR = bilinear_reference(X1, X2, A, B)
BILINEAR_NO_BIAS_3D = bilinear_reference(np.array(X1)[:, None], np.array(X2)[:, None], A)


def test_bilinear_gives_the_formulas_values_over_any_leading_dims():
    close(F.bilinear(f64(X1), f64(X2), f64(A), f64(B)), BILINEAR)
    close(ag.bilinear(f64(X1), f64(X2), f64(A), f64(B)), BILINEAR)
    close(F.bilinear(f64(X1).unsqueeze(1), f64(X2).unsqueeze(1), f64(A)), BILINEAR_NO_BIAS_3D)
    close(F.bilinear(f64(X1[0]), f64(X2[0]), f64(A), f64(B)), BILINEAR[0])  # one pair of vectors
    assert F.bilinear(ag.ones(0, 3), ag.ones(0, 2), ag.ones(2, 3, 2)).shape == (0, 2)


def test_bilinear_differentiates_every_operand():
    inputs = [f64(X1, True), f64(X2, True), f64(A, True), f64(B, True)]
    assert gradcheck(F.bilinear, inputs, **TOL)
    assert gradgradcheck(F.bilinear, inputs, **TOL)


@pytest.mark.parametrize(("call", "kind", "text"), [
    (lambda: F.bilinear(ag.ones(2, 3), ag.ones(2, 2, dtype=ag.float64), ag.ones(2, 3, 2), ag.ones(2)), RuntimeError,
     "All tensors must have the same dtype, got input1: float, input2: double, weight: float, bias: float"),
    (lambda: F.bilinear(ag.ones(2, 3), ag.ones(2, 2), ag.ones(2, 3, 2, dtype=ag.int64)), RuntimeError,
     "All tensors must have the same dtype, got input1: float, input2: float, weight: long int"),
    (lambda: F.bilinear(ag.ones(1, 2, 3), ag.ones(2, 2), ag.ones(2, 3, 2)), RuntimeError,
     "bilinear(): input dimensions do not match: got 3 and 2"),
    (lambda: F.bilinear(ag.ones(3, 3), ag.ones(2, 2), ag.ones(2, 3, 2)), RuntimeError,
     "bilinear(): input batch dimensions do not match at dim 0: got 3 and 2"),
    (lambda: F.bilinear(ag.ones(2, 4), ag.ones(2, 2), ag.ones(2, 3, 2)), RuntimeError,
     "bilinear(): input1 size does not match weight size: got 4 but expected 3"),
    (lambda: F.bilinear(ag.ones(2, 3), ag.ones(2, 5), ag.ones(2, 3, 2)), RuntimeError,
     "bilinear(): input2 size does not match weight size: got 5 but expected 2"),
    (lambda: F.bilinear(ag.ones(2, 3), ag.ones(2, 2), ag.ones(2, 3, 2), ag.ones(3)), RuntimeError,
     "bilinear(): bias size does not match weight size: got 3 but expected 2"),
    (lambda: F.bilinear(ag.tensor(1.0), ag.tensor(1.0), ag.ones(2, 1, 1)), IndexError,
     "Dimension specified as -1 but tensor has no dimensions"),
    (lambda: F.bilinear(ag.ones(2, 3), ag.ones(2, 2), ag.ones(2, 3, 2), ag.tensor(1.0)), IndexError,
     "Dimension specified as 0 but tensor has no dimensions"),
    (lambda: F.bilinear(ag.ones(2, 3), 1.0, ag.ones(2, 3, 2)), TypeError,
     "bilinear(): argument 'input2' (position 2) must be Tensor, not float"),
])
def test_bilinear_refuses_what_pytorch_refuses(call, kind, text):
    raises(call, kind, text)


def test_bilinear_layer_has_pytorchs_parameters_init_and_repr():
    ag.manual_seed(0)
    layer = nn.Bilinear(20, 30, 40)
    assert layer.weight.shape == (40, 20, 30) and layer.bias.shape == (40,)
    bound = 1 / math.sqrt(20)  # in1_features, for the weight and the bias alike
    for p in (layer.weight, layer.bias):
        values = p.detach().numpy()
        assert np.abs(values).max() <= bound and np.abs(values).max() > 0.9 * bound
    assert repr(layer) == "Bilinear(in1_features=20, in2_features=30, out_features=40, bias=True)"
    plain = nn.Bilinear(3, 2, 2, bias=False, dtype=ag.float64)
    assert plain.bias is None and [name for name, _ in plain.named_parameters()] == ["weight"]
    assert plain.weight.dtype == ag.float64
    plain.weight.data = f64(A)
    close(plain(f64(X1).unsqueeze(1), f64(X2).unsqueeze(1)), BILINEAR_NO_BIAS_3D)
    raises(lambda: nn.Bilinear(0, 2, 3), ValueError, "in1_features must be > 0, but got (in1_features=0)")


# -- embedding_bag ----------------------------------------------------------------------------------------------------
E = [[0.5, -1.2, 2.0], [1.1, 0.3, -0.7], [-0.4, 0.9, 1.6], [2.2, -0.8, 0.05], [-1.5, 1.3, -0.6], [0.7, 0.2, -1.9]]
INDICES = [1, 2, 4, 5, 4, 3, 2, 0]
OFFSETS = [0, 3, 3, 6]  # bags [1, 2, 4], [], [5, 4, 3], [2, 0]
G = [[1.0, -2.0, 0.5], [0.25, 1.5, -1.0], [2.0, 0.5, 1.0], [-0.5, 1.0, 3.0]]
PER_SAMPLE = [0.5, -1.0, 2.0, 1.5, 0.25, -0.75, 3.0, 1.0]


def bags_reference(weight, mode, padding_idx=None, per_sample_weights=None, indices=INDICES, offsets=OFFSETS,
                   include_last_offset=False):
    """Each bag's rows (times their per-sample weights) reduced by brute force as documented: entries equal to
    padding_idx left out (a mean counts only the others), an empty bag zeros, max taken per column."""
    weight = np.asarray(weight, dtype=np.float64)
    scale = np.ones(len(indices)) if per_sample_weights is None else np.asarray(per_sample_weights)
    ends = list(offsets[1:]) + ([] if include_last_offset else [len(indices)])
    rows = []
    for start, end in zip(offsets, ends, strict=False):
        kept = [k for k in range(start, end) if indices[k] != padding_idx]
        picked = weight[[indices[k] for k in kept]] * scale[kept, None]
        reduce = {"sum": np.sum, "mean": np.mean, "max": np.max}[mode]
        rows.append(reduce(picked, axis=0) if kept else np.zeros(weight.shape[1]))
    return np.array(rows)


BAGS = {(mode, padding_idx): bags_reference(E, mode, padding_idx)
        for mode in ("sum", "mean", "max") for padding_idx in (None, 2)}


def bag(weight, mode, **options):
    return F.embedding_bag(ag.tensor(INDICES), weight, ag.tensor(OFFSETS), mode=mode, **options)


@pytest.mark.parametrize(("mode", "padding_idx"), list(BAGS), ids=[f"{m}-{p}" for m, p in BAGS])
def test_embedding_bag_reduces_each_bag_as_documented(mode, padding_idx, numpy_gradient):
    """Values against the brute-force reduction; the weight's gradient for the output gradient G against that
    reduction's central differences (E has no ties within a bag, so max's winning rows are clear)."""
    weight = f64(E, True)
    out = bag(weight, mode, padding_idx=padding_idx)
    close(out, BAGS[mode, padding_idx])  # an empty bag (and one of padding only) gives zeros
    out.backward(f64(G))
    expected = numpy_gradient(lambda w: (bags_reference(w, mode, padding_idx) * G).sum(), np.array(E))
    close(weight.grad, expected, rtol=1e-8)  # max: each column's gradient to its bag's winning row only


def test_embedding_bag_weighs_each_entry_in_sum_mode(numpy_gradient):
    weight, weights = f64(E, True), f64(PER_SAMPLE, True)
    out = bag(weight, "sum", per_sample_weights=weights, padding_idx=2)
    close(out, bags_reference(E, "sum", 2, PER_SAMPLE))
    out.backward(f64(G))
    close(weight.grad, numpy_gradient(lambda w: (bags_reference(w, "sum", 2, PER_SAMPLE) * G).sum(), np.array(E)),
          rtol=1e-8)
    expected = numpy_gradient(lambda p: (bags_reference(E, "sum", 2, p) * G).sum(), np.array(PER_SAMPLE))
    close(weights.grad, expected, rtol=1e-8)  # a padding entry's weight gets none


def test_embedding_bag_takes_fixed_length_bags_as_rows_and_csr_offsets():
    rows = ag.tensor(INDICES[:6]).reshape(2, 3)
    close(F.embedding_bag(rows, f64(E)), [BAGS["mean", None][0], BAGS["mean", None][2]])
    weights = f64(PER_SAMPLE[:6]).reshape(2, 3)
    close(F.embedding_bag(rows, f64(E), mode="sum", per_sample_weights=weights),
          F.embedding_bag(ag.tensor(INDICES[:6]), f64(E), ag.tensor([0, 3]), mode="sum",
                          per_sample_weights=f64(PER_SAMPLE[:6])).detach().numpy())
    csr = F.embedding_bag(ag.tensor(INDICES), f64(E), ag.tensor([0, 3, 3, 8]), mode="max", include_last_offset=True)
    close(csr, bags_reference(E, "max", offsets=[0, 3, 3, 8], include_last_offset=True))
    int32 = F.embedding_bag(ag.tensor(INDICES, dtype=ag.int32), f64(E), ag.tensor(OFFSETS), mode="sum")
    close(int32, BAGS["sum", None])
    assert F.embedding_bag(ag.zeros(0, 3, dtype=ag.int64), f64(E)).shape == (0, 3)
    close(F.embedding_bag(ag.zeros(0, dtype=ag.int64), f64(E), ag.tensor([0, 0]), mode="max"), np.zeros((2, 3)))


@pytest.mark.parametrize("mode", ["sum", "mean", "max"])
def test_embedding_bag_differentiates_the_weight_and_the_per_sample_weights(mode):
    if mode == "sum":
        assert gradcheck(lambda w, p: bag(w, mode, per_sample_weights=p, padding_idx=2),
                         [f64(E, True), f64(PER_SAMPLE, True)], **TOL)
    assert gradcheck(lambda w: bag(w, mode, padding_idx=3), [f64(E, True)], **TOL)  # no ties in E's bags


def test_embedding_bag_max_keeps_the_first_maximum_and_a_leading_nan_as_pytorch_does():
    """Ties by hand: bag [0, 1, 2] has column maxima 1 (rows 0, 1) and 3 (rows 1, 2), bag [2, 1, 0] the same with
    rows 1 and 2 first; each column's gradient goes to the first of its tied rows in bag order."""
    weight = f64([[1.0, 2.0], [1.0, 3.0], [0.0, 3.0]], True)
    out = F.embedding_bag(ag.tensor([0, 1, 2, 2, 1, 0]), weight, ag.tensor([0, 3]), mode="max")
    close(out, [[1.0, 3.0], [1.0, 3.0]])
    out.backward(f64([[10.0, 20.0], [100.0, 200.0]]))
    close(weight.grad, [[10.0, 0.0], [100.0, 20.0], [0.0, 200.0]])
    nan = f64([[1.0, math.nan], [2.0, 0.0]])
    close(F.embedding_bag(ag.tensor([0, 1, 1, 0]), nan, ag.tensor([0, 2]), mode="max"), [[2.0, math.nan], [2.0, 0.0]])


def renormed(weight, rows, max_norm, norm_type=2.0):
    """The weight with each named row whose norm exceeds max_norm scaled by max_norm / (norm + 1e-7), the 1e-7
    being PyTorch's (embedding_renorm_'s) guard."""
    weight = np.array(weight, dtype=np.float64)
    for row in set(rows):
        norm = np.linalg.norm(weight[row], norm_type)
        if norm > max_norm:
            weight[row] *= max_norm / (norm + 1e-7)
    return weight


def test_embedding_bag_max_norm_rescales_the_named_rows_in_place_first():
    weight = f64(E, True)
    version = weight._version
    out = F.embedding_bag(ag.tensor([0, 3, 3]), weight, ag.tensor([0, 1]), max_norm=1.5, mode="sum")
    expected = renormed(E, [0, 3], 1.5)
    assert not np.allclose(expected[[0, 3]], np.array(E)[[0, 3]])  # rows 0 and 3 were above 1.5
    close(out, bags_reference(expected, "sum", indices=[0, 3, 3], offsets=[0, 1]))
    close(weight, expected)  # the others, not named, stay
    assert weight._version == version + 1 and weight.grad_fn is None
    single = ag.tensor(E, dtype=ag.float32)
    F.embedding_bag(ag.tensor([0, 3, 3, 5]), single, ag.tensor([0]), max_norm=1.0, norm_type=1.0, mode="sum")
    np.testing.assert_allclose(single.numpy(), renormed(E, [0, 3, 5], 1.0, 1.0), rtol=1e-6)
    raises(lambda: F.embedding_bag(ag.tensor([0, 7]), f64(E), ag.tensor([0]), max_norm=1.0), IndexError,
           "select(): index 7 out of range for tensor of size [6, 3] at dimension 0")


def test_embedding_bag_takes_the_old_argument_order_with_pytorchs_warning():
    with pytest.warns(UserWarning, match="^Argument order of nn.functional.embedding_bag was changed"):
        out = F.embedding_bag(f64(E), ag.tensor(INDICES), ag.tensor(OFFSETS))
    close(out, BAGS["mean", None])


TYPE_CHECK = "(while checking arguments for embedding_bag)"


@pytest.mark.parametrize(("call", "kind", "text"), [
    (lambda: bag(f64(E), "sum", per_sample_weights=f64(PER_SAMPLE[:7])), ValueError,
     "embedding_bag: If per_sample_weights ([7]) is not None, then it must have the same shape as the input ([8])"),
    (lambda: F.embedding_bag(ag.tensor(INDICES), f64(E[0]), ag.tensor(OFFSETS)), ValueError,
     "weight has to be a 2D Tensor, but got Tensor of dimension 1"),
    (lambda: F.embedding_bag(ag.tensor([[1, 2]]), f64(E), ag.tensor([0])), ValueError,
     "if input is 2D, then offsets has to be None, as input is treated is a mini-batch of fixed length sequences. "
     "However, found offsets of type <class 'actorgrad.tensor.Tensor'>"),
    (lambda: F.embedding_bag(ag.tensor(INDICES), f64(E)), ValueError, "offsets has to be a 1D Tensor but got None"),
    (lambda: F.embedding_bag(ag.tensor(INDICES), f64(E), ag.tensor([[0]])), ValueError,
     "offsets has to be a 1D Tensor"),
    (lambda: F.embedding_bag(ag.tensor([[[1]]]), f64(E)), ValueError,
     "input has to be 1D or 2D Tensor, but got Tensor of dimension 3"),
    (lambda: bag(f64(E), "min"), ValueError, "mode has to be one of sum, mean or max"),
    (lambda: bag(f64(E), "max", scale_grad_by_freq=True), ValueError,
     "max mode does not support scaling the gradient by the frequency"),
    (lambda: bag(f64(E), "max", sparse=True), ValueError, "max mode does not support sparse weights"),
    (lambda: bag(f64(E), "mean", per_sample_weights=f64(PER_SAMPLE)), NotImplementedError,
     "embedding_bag: per_sample_weights was not None. per_sample_weights is only supported for mode='sum' (got "
     "mode='mean'). Please open a feature request on GitHub."),
    (lambda: bag(f64(E), "sum", sparse=True), NotImplementedError,
     "embedding_bag: scale_grad_by_freq and sparse gradients are not supported by actorgrad (it has no sparse "
     "tensors); leave both False"),
    (lambda: bag(f64(E), "mean", scale_grad_by_freq=True), NotImplementedError,
     "embedding_bag: scale_grad_by_freq and sparse gradients are not supported by actorgrad (it has no sparse "
     "tensors); leave both False"),
    (lambda: F.embedding_bag(ag.tensor([1.0]), f64(E), ag.tensor([0])), RuntimeError,
     "Expected tensor for argument #1 'indices' to have one of the following scalar types: Long, Int; but got "
     f"actorgrad.FloatTensor instead {TYPE_CHECK}"),
    (lambda: F.embedding_bag(ag.tensor([1]), f64(E), ag.tensor([0.0])), RuntimeError,
     "Expected tensor for argument #1 'indices' to have one of the following scalar types: Long, Int; but got "
     f"actorgrad.FloatTensor instead {TYPE_CHECK}"),
    (lambda: F.embedding_bag(ag.tensor([1]), ag.ones(3, 2, dtype=ag.int32), ag.tensor([0])), RuntimeError,
     "Expected tensor for argument #1 'weight' to have one of the following scalar types: Half, BFloat16, Float, "
     f"Double; but got actorgrad.IntTensor instead {TYPE_CHECK}"),
    (lambda: bag(f64(E), "sum", padding_idx=6), RuntimeError,
     "padding_idx must be within the number of embeddings, -6 through 5, but got 6"),
    (lambda: F.embedding_bag(ag.tensor(INDICES), f64(E), ag.tensor([1, 3])), RuntimeError,
     "offsets[0] has to be 0, i.e., the first sequence in the mini-batch has to start from position 0. However, "
     "got 1"),
    (lambda: F.embedding_bag(ag.tensor(INDICES), f64(E), ag.tensor([0, 9])), RuntimeError,
     "offsets[-1] can not be greater than input's length 8 but got offsets[-1] of 9"),
    (lambda: bag(f64(E), "sum", per_sample_weights=ag.tensor(PER_SAMPLE)), RuntimeError,
     "Expected tensor for argument #1 'weight' to have the same type as tensor for argument #1 "
     f"'per_sample_weights'; but type actorgrad.DoubleTensor does not equal actorgrad.FloatTensor {TYPE_CHECK}"),
    (lambda: F.embedding_bag(ag.tensor(INDICES), f64(E), ag.tensor([], dtype=ag.int64), include_last_offset=True),
     RuntimeError, "include_last_offset: number of offset should be at least 1"),
    (lambda: F.embedding_bag(ag.tensor([1, 7, 9, -3]), f64(E), ag.tensor([0, 2])), RuntimeError,
     "embedding_bag: Expected idx >= 0 && idx < num_embeddings but found idx to be 7"),
    (lambda: F.embedding_bag(ag.tensor([[1, 2], [0, -1]]), f64(E), mode="max"), RuntimeError,
     "embedding_bag: Expected idx >= 0 && idx < num_embeddings but found idx to be -1"),
    (lambda: F.embedding_bag(ag.zeros(2, 0, dtype=ag.int64), f64(E)), RuntimeError, "step must be nonzero"),
    (lambda: F.embedding_bag(ag.tensor(INDICES), f64(E), ag.tensor([0, 3, 1])), RuntimeError,
     "embedding_bag: offsets must be non-decreasing, but offsets[2] = 1 comes after offsets[1] = 3"),
    (lambda: F.embedding_bag(1.0, f64(E)), TypeError,
     "embedding_bag(): argument 'input' (position 1) must be Tensor, not float"),
])
def test_embedding_bag_refuses_what_pytorch_refuses(call, kind, text):
    raises(call, kind, text)


def test_embedding_bag_layer_has_pytorchs_settings_init_and_repr():
    ag.manual_seed(0)
    layer = nn.EmbeddingBag(50, 40, padding_idx=-2)
    assert layer.weight.shape == (50, 40) and layer.padding_idx == 48
    assert (layer.mode, layer.max_norm, layer.norm_type, layer.scale_grad_by_freq, layer.sparse,
            layer.include_last_offset) == ("mean", None, 2.0, False, False, False)
    values = layer.weight.detach().numpy()
    assert not values[48].any() and abs(values.std() - 1) < 0.05  # N(0, 1), the padding row zero
    assert repr(layer) == "EmbeddingBag(50, 40, mode='mean', padding_idx=48)"
    assert repr(nn.EmbeddingBag(10, 3, max_norm=1.0, norm_type=1.0, scale_grad_by_freq=True, mode="sum")) == (
        "EmbeddingBag(10, 3, max_norm=1.0, norm_type=1.0, scale_grad_by_freq=True, mode='sum')")
    raises(lambda: nn.EmbeddingBag(5, 2, padding_idx=5), AssertionError, "padding_idx must be within num_embeddings")
    raises(lambda: nn.EmbeddingBag(5, 2, _weight=ag.ones(4, 2)), AssertionError,
           "Shape of weight does not match num_embeddings and embedding_dim")


def test_embedding_bag_layer_from_pretrained_reduces_through_the_given_rows(numpy_gradient):
    table = f64(E)
    layer = nn.EmbeddingBag.from_pretrained(table, mode="sum", padding_idx=2)
    assert not layer.weight.requires_grad and (layer.num_embeddings, layer.embedding_dim) == (6, 3)
    close(layer(ag.tensor(INDICES), ag.tensor(OFFSETS)), BAGS["sum", 2])
    close(layer(ag.tensor(INDICES), ag.tensor(OFFSETS), f64(PER_SAMPLE)), bags_reference(E, "sum", 2, PER_SAMPLE))
    trained = nn.EmbeddingBag.from_pretrained(table, freeze=False, mode="max")
    out = trained(ag.tensor(INDICES), ag.tensor(OFFSETS))
    out.backward(f64(G))
    close(trained.weight.grad, numpy_gradient(lambda w: (bags_reference(w, "max") * G).sum(), np.array(E)), rtol=1e-8)
    raises(lambda: nn.EmbeddingBag.from_pretrained(f64(E[0])), AssertionError,
           "Embeddings parameter is expected to be 2-dimensional")


# -- max_unpool -------------------------------------------------------------------------------------------------------
def windows(spatial, kernel, stride, padding=0, ceil_mode=False) -> tuple[tuple, list]:
    """The output's spatial shape, and each output place with the in-bounds input places of its window, by brute
    force; with ceil_mode, a last window that starts inside the input but runs past its end counts too."""
    sizes = []
    for n, k, step in zip(spatial, kernel, stride, strict=True):
        size = (-(-(n + 2 * padding - k) // step) if ceil_mode else (n + 2 * padding - k) // step) + 1
        sizes.append(size - 1 if (size - 1) * step >= n + padding else size)
    places = []
    for out in itertools.product(*map(range, sizes)):
        spans = [range(max(o * step - padding, 0), min(o * step - padding + k, n))
                 for o, n, k, step in zip(out, spatial, kernel, stride, strict=True)]
        places.append((out, list(itertools.product(*spans))))
    return tuple(sizes), places


def max_pool_reference(x, kernel, stride=None, padding=0):
    """Each window's maximum and its flat index in the input plane, the first in row-major order among equals."""
    x = np.asarray(x)
    d = len(kernel)
    planes = x.reshape(-1, *x.shape[-d:])
    found = {}
    sizes, places_of = windows(x.shape[-d:], kernel, stride or kernel, padding)
    for out, places in places_of:
        for b, plane in enumerate(planes):
            best = int(np.argmax([plane[place] for place in places]))  # argmax: the first maximum
            found[(b, *out)] = plane[places[best]], np.ravel_multi_index(places[best], x.shape[-d:])
    shape = x.shape[:-d] + sizes
    values = np.array([found[key][0] for key in sorted(found)]).reshape(shape)
    return values, np.array([found[key][1] for key in sorted(found)]).reshape(shape)


def max_unpool_reference(values, indices, spatial):
    """Zeros of the trailing shape `spatial` with each value written at its flat index, in order (the last write
    at a repeated index stays)."""
    values, indices = np.asarray(values), np.asarray(indices)
    lead = values.shape[:values.ndim - len(spatial)]
    out = np.zeros((math.prod(lead), math.prod(spatial)))
    for plane, (row, where) in enumerate(zip(values.reshape(len(out), -1), indices.reshape(len(out), -1),
                                             strict=True)):
        for value, index in zip(row, where, strict=True):
            out[plane, index] = value
    return out.reshape(*lead, *spatial)


def max_unpool_grad_reference(grad_out, indices):
    """max_unpool is a scatter, so its input's gradient is the output gradient gathered at each index."""
    planes = grad_out.reshape(math.prod(np.shape(indices)[:-2]), -1)
    return np.take_along_axis(planes, np.reshape(indices, (len(planes), -1)), 1).reshape(np.shape(indices))


PICTURE = np.cos(np.arange(32.0) * 1.7).reshape(1, 2, 4, 4)  # no ties in any window
POOLED, POOL_INDICES = max_pool_reference(PICTURE, (2, 2))
UNPOOLED = max_unpool_reference(POOLED, POOL_INDICES, (4, 4))
UNPOOLED_5X5 = max_unpool_reference(POOLED, POOL_INDICES, (5, 5))
OVERLAP_POOLED, OVERLAP_INDICES = max_pool_reference(PICTURE, (3, 3), (1, 1), 1)
OVERLAP_GRAD_OUT = np.sin(np.arange(32.0)).reshape(1, 2, 4, 4)


def test_max_unpool2d_puts_each_value_back_where_max_pool2d_found_it():
    pooled, indices = ag.max_pool2d(f64(PICTURE), 2, return_indices=True)
    assert indices.tolist() == POOL_INDICES.tolist()
    close(pooled, POOLED)
    close(F.max_unpool2d(pooled, indices, 2), UNPOOLED)
    close(F.max_unpool2d(pooled[0], indices[0], 2), UNPOOLED[0])  # unbatched
    close(F.max_unpool2d(pooled, indices, (2, 2), output_size=(5, 5)), UNPOOLED_5X5)  # flat indices into 5x5 planes
    close(F.max_unpool2d(pooled, indices, 2, output_size=[1, 2, 5, 5]), UNPOOLED_5X5)
    assert F.max_unpool2d(pooled[:0], indices[:0], 2).shape == (0, 2, 4, 4)


def test_max_unpool2d_sends_each_repeated_index_that_places_gradient():
    pooled, indices = ag.max_pool2d(f64(PICTURE), 3, 1, 1, return_indices=True)
    assert indices.tolist() == OVERLAP_INDICES.tolist()  # overlapping windows: indices repeat
    leaf = pooled.detach().requires_grad_()
    out = F.max_unpool2d(leaf, indices, 3, 1, 1)
    close(out, max_unpool_reference(OVERLAP_POOLED, OVERLAP_INDICES, (4, 4)))
    out.backward(f64(OVERLAP_GRAD_OUT))
    close(leaf.grad, max_unpool_grad_reference(OVERLAP_GRAD_OUT, OVERLAP_INDICES))


def test_max_unpool_keeps_the_last_value_written_at_a_repeated_index():
    values = f64([[[1.0, 2.0, 3.0]]], True)
    out = F.max_unpool1d(values, ag.tensor([[[0, 0, 1]]]), 2, output_size=[5])
    close(out, [[[2.0, 3.0, 0.0, 0.0, 0.0]]])
    out.backward(f64([[[10.0, 20.0, 30.0, 40.0, 50.0]]]))
    close(values.grad, [[[10.0, 10.0, 20.0]]])


def test_max_unpool1d_and_3d_invert_their_poolings():
    line = np.cos(np.arange(14.0) * 0.9).reshape(2, 7)
    pooled, indices = ag.max_pool1d(f64(line), 2, return_indices=True)
    expected_pooled, expected_indices = max_pool_reference(line, (2,))
    assert indices.tolist() == expected_indices.tolist()
    close(F.max_unpool1d(pooled, indices, 2, output_size=[7]), max_unpool_reference(expected_pooled,
                                                                                    expected_indices, (7,)))
    volume = np.cos(np.arange(96.0) * 1.3).reshape(2, 3, 4, 4)  # unbatched: (channels, depth, height, width)
    pooled, indices = ag.max_pool3d(f64(volume), 2, return_indices=True)
    expected_pooled, expected_indices = max_pool_reference(volume, (2, 2, 2))
    assert indices.tolist() == expected_indices.tolist()
    out = F.max_unpool3d(pooled, indices, 2, output_size=(3, 5, 4))
    close(out, max_unpool_reference(expected_pooled, expected_indices, (3, 5, 4)))
    assert indices[0, 0, 0, 1].item() == 19  # flat index 19 of a (3, 5, 4) grid is place (0, 4, 3)
    close(out[0, 0, 4, 3], expected_pooled[0, 0, 0, 1])


@pytest.mark.parametrize("dims", [1, 2, 3])
def test_max_unpool_differentiates_its_input(dims):
    unpool = (F.max_unpool1d, F.max_unpool2d, F.max_unpool3d)[dims - 1]
    pool = (ag.max_pool1d, ag.max_pool2d, ag.max_pool3d)[dims - 1]
    x = f64(np.cos(np.arange(2 * 4**dims) * 1.7).reshape(1, 2, *(4,) * dims))
    pooled, indices = pool(x, 2, return_indices=True)
    assert gradcheck(lambda t: unpool(t, indices, 2), [pooled.detach().requires_grad_()], **TOL)
    assert gradgradcheck(lambda t: unpool(t, indices, 2), [pooled.detach().requires_grad_()], **TOL)


POOLED_T, INDICES_T = f64(POOLED), ag.tensor(POOL_INDICES)
VOLUME_T, VOLUME_INDICES_T = f64(np.ones((1, 2, 2, 2, 2))), ag.zeros(1, 2, 2, 2, 2, dtype=ag.int64)


@pytest.mark.parametrize(("call", "kind", "text"), [
    (lambda: F.max_unpool2d(POOLED_T, INDICES_T, 2, output_size=(5,)), ValueError,
     "output_size should be a sequence containing 2 or 4 elements, but it has a length of '1'"),
    (lambda: F.max_unpool2d(POOLED_T, INDICES_T, 2, output_size=(6, 5)), ValueError,
     'invalid output_size "(6, 5)" (dim 0 must be between 2 and 6)'),
    (lambda: F.max_unpool1d(POOLED_T[0], INDICES_T[0, :, 0], 2, output_size=[10]), ValueError,
     'invalid output_size "[10]" (dim 0 must be between 2 and 6)'),
    (lambda: F.max_unpool2d(POOLED_T, INDICES_T, 2, padding=3), ValueError,
     "max_unpooling: output_size must contain non-negative spatial dimensions, but got output_size[0]=-2"),
    (lambda: F.max_unpool2d(POOLED_T, INDICES_T, 2, output_size=[4.0, 4]), TypeError,
     "max_unpool2d(): argument 'output_size' (position 3) must be tuple of ints, but found element of type float at "
     "pos 0"),
    (lambda: F.max_unpool2d(POOLED_T, INDICES_T.int(), 2), RuntimeError,
     "elements in indices should be type int64 but got: Int"),
    (lambda: F.max_unpool3d(VOLUME_T, VOLUME_INDICES_T.double(), 2), RuntimeError,
     "elements in indices should be type int64"),
    (lambda: F.max_unpool2d(POOLED_T[0, 0], INDICES_T[0, 0], 2), RuntimeError,
     "Input to max_unpooling2d should be a 3d or 4d Tensor, but got a tensor with 2 dimensions."),
    (lambda: F.max_unpool3d(VOLUME_T[0, 0], VOLUME_INDICES_T[0, 0], 2), RuntimeError,
     "Input to max_unpooling3d should be a 4d or 5d Tensor, but got a tensor with 3 dimensions."),
    (lambda: F.max_unpool2d(POOLED_T[:, :0], INDICES_T[:, :0], 2), RuntimeError,
     "max_unpooling2d_forward_out_cpu(): Expected input to have non-zero size for non-batch dimensions, but got "
     "[1, 0, 2, 2] with dimension 1 being empty."),
    (lambda: F.max_unpool2d(POOLED_T, INDICES_T[:, :1], 2), RuntimeError,
     "Expected shape of indices to be same as that of the input tensor ([1, 2, 2, 2]) but got indices tensor with "
     "shape: [1, 1, 2, 2]"),
    (lambda: F.max_unpool3d(VOLUME_T, VOLUME_INDICES_T, 2, stride=(1, 0, 2)), RuntimeError,
     "strides should be greater than zero, but got stride: [1, 0, 2]"),
    (lambda: F.max_unpool2d(ag.ones(1, 2, 2, 2, dtype=ag.int64), INDICES_T, 2), NotImplementedError,
     "\"max_unpool2d\" not implemented for 'Long'"),
    (lambda: F.max_unpool2d(POOLED_T, INDICES_T.index_fill(3, ag.tensor([1]), 16), 2), RuntimeError,
     "Found an invalid max index: 16 (output volumes are of size 4x4)"),
    (lambda: F.max_unpool3d(VOLUME_T, VOLUME_INDICES_T - 1, 2), RuntimeError,
     "Found an invalid max index: -1 (output volumes are of size 4x4x4)"),
    (lambda: F.max_unpool1d(POOLED_T[0, :, 0], ag.tensor([[0, 4], [1, 2]]), 2), RuntimeError,
     "Found an invalid max index: 4 (output volumes are of size 4x1)"),
])
def test_max_unpool_refuses_what_pytorch_refuses(call, kind, text):
    raises(call, kind, text)


def test_max_unpool_layers_keep_tuples_and_take_an_output_size():
    layer = nn.MaxUnpool2d(2)
    assert repr(layer) == "MaxUnpool2d(kernel_size=(2, 2), stride=(2, 2), padding=(0, 0))"
    assert repr(nn.MaxUnpool1d(2)) == "MaxUnpool1d(kernel_size=(2,), stride=(2,), padding=(0,))"
    assert repr(nn.MaxUnpool3d(2, stride=(1, 2, 1), padding=1)) == (
        "MaxUnpool3d(kernel_size=(2, 2, 2), stride=(1, 2, 1), padding=(1, 1, 1))")
    close(layer(POOLED_T, INDICES_T), UNPOOLED)
    close(layer(POOLED_T, INDICES_T, output_size=[5, 5]), UNPOOLED_5X5)
    pooled, indices = nn.MaxPool1d(2, return_indices=True)(f64(np.arange(6.0).reshape(1, 1, 6)))
    assert nn.MaxUnpool1d(2)(pooled, indices).tolist() == [[[0.0, 1.0, 0.0, 3.0, 0.0, 5.0]]]


# -- lp_pool ----------------------------------------------------------------------------------------------------------
POSITIVE = (0.5 + (np.arange(40.0) % 7) / 4).reshape(1, 2, 4, 5)


def lp_pool_reference(x, p, kernel, stride=None, ceil_mode=False):
    """PyTorch's documented formula: the average of x ** p over each window's in-bounds elements (avg_pool's
    divisor), times the full window's size, to the power 1 / p (NaN where a negative sum meets a fractional power);
    for p = +-inf, the max / min of |x| over the window."""
    x = np.asarray(x, dtype=np.float64)
    d = len(kernel)
    planes = x.reshape(-1, *x.shape[-d:])
    found = {}
    sizes, places_of = windows(x.shape[-d:], kernel, stride or kernel, 0, ceil_mode)
    for out, places in places_of:
        for b, plane in enumerate(planes):
            window = np.array([plane[place] for place in places])
            if math.isinf(p):
                found[(b, *out)] = np.abs(window).max() if p > 0 else np.abs(window).min()
            else:
                with np.errstate(invalid="ignore"):
                    found[(b, *out)] = (np.mean(window**p) * math.prod(kernel)) ** (1 / p)
    return np.array([found[key] for key in sorted(found)]).reshape(x.shape[:-d] + sizes)


LP2 = lp_pool_reference(POSITIVE, 2, (2, 2))
LP_FRACTIONAL_1D = lp_pool_reference(POSITIVE[0, :, 0], 1.5, (3,), (2,), ceil_mode=True)
MIXED = np.cos(np.arange(20.0) * 1.1).reshape(1, 1, 4, 5)


def test_lp_pool_gives_the_formulas_power_averages():
    close(F.lp_pool2d(f64(POSITIVE), 2, 2), LP2)
    close(F.lp_pool2d(f64(POSITIVE), 3, (2, 3), (1, 2), ceil_mode=True),
          lp_pool_reference(POSITIVE, 3, (2, 3), (1, 2), ceil_mode=True))
    edge = lp_pool_reference(POSITIVE, 3, (2, 3), (1, 3), ceil_mode=True)  # each row's last window: 2 of 3 columns
    assert edge.shape == (1, 2, 3, 2)
    close(F.lp_pool2d(f64(POSITIVE), 3, (2, 3), (1, 3), ceil_mode=True), edge)
    close(F.lp_pool1d(f64(POSITIVE[0, :, 0]), 1.5, 3, 2, ceil_mode=True), LP_FRACTIONAL_1D)
    close(F.lp_pool3d(f64(POSITIVE), 2, (1, 2, 2)), LP2)  # unbatched, a unit depth window
    expected = lp_pool_reference(MIXED, 3, (2, 2))
    assert np.isnan(expected).sum() == 1  # one window of negative sum
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)  # a negative window sum to the power 1/3 is NaN
        close(F.lp_pool2d(f64(MIXED), 3, 2), expected)
    close(F.lp_pool2d(f64(MIXED), math.inf, 2), lp_pool_reference(MIXED, math.inf, (2, 2)))
    close(F.lp_pool2d(f64(MIXED), -math.inf, 2), lp_pool_reference(MIXED, -math.inf, (2, 2)))


@pytest.mark.parametrize(("fn", "shape", "options"), [
    (F.lp_pool1d, (2, 3, 7), {"norm_type": 2, "kernel_size": 3, "stride": 2, "ceil_mode": True}),
    (F.lp_pool2d, (1, 2, 4, 5), {"norm_type": 1.5, "kernel_size": (2, 3), "stride": (1, 2)}),
    (F.lp_pool3d, (1, 2, 3, 4, 4), {"norm_type": 3, "kernel_size": 2, "ceil_mode": True}),
    (F.lp_pool2d, (1, 2, 4, 5), {"norm_type": math.inf, "kernel_size": 2}),
])
def test_lp_pool_differentiates_away_from_zero(fn, shape, options):
    x = f64((0.5 + (np.arange(math.prod(shape)) * 0.37) % 2).reshape(shape), True)
    assert gradcheck(lambda t: fn(t, **options), [x], **TOL)


def test_lp_pool_gives_a_zero_window_a_zero_gradient():
    x = f64(np.zeros((1, 1, 2, 2)), True)
    F.lp_pool2d(x, 2, 2).sum().backward()
    assert x.grad.tolist() == [[[[0.0, 0.0], [0.0, 0.0]]]]


def test_lp_pool_refuses_as_pytorchs_python_does():
    raises(lambda: F.lp_pool2d(f64(POSITIVE), 2, (2, 2, 2)), ValueError, "too many values to unpack (expected 2)")
    raises(lambda: F.lp_pool2d(f64(POSITIVE), 0, 2), ZeroDivisionError, "float division by zero")
    raises(lambda: F.lp_pool1d(f64(POSITIVE[0, 0]), 2, 20), RuntimeError,
           "Given input size: (4x1x5). Calculated output size: (4x1x0). Output size is too small")


def test_lp_pool_layers_keep_their_settings_as_given():
    layer = nn.LPPool2d(2, 2)
    assert repr(layer) == "LPPool2d(norm_type=2, kernel_size=2, stride=None, ceil_mode=False)"
    assert repr(nn.LPPool1d(1.5, 3, 2, True)) == "LPPool1d(norm_type=1.5, kernel_size=3, stride=2, ceil_mode=True)"
    close(layer(f64(POSITIVE)), LP2)
    close(nn.LPPool1d(1.5, 3, 2, True)(f64(POSITIVE[0, :, 0])), LP_FRACTIONAL_1D)
    close(nn.LPPool3d(2, (1, 2, 2))(f64(POSITIVE)), LP2)


# -- channel_shuffle --------------------------------------------------------------------------------------------------
def channel_shuffle_reference(x, groups):
    """The documented reshape: channels (groups, C / groups) transposed to (C / groups, groups)."""
    x = np.asarray(x)
    return x.reshape(x.shape[0], groups, -1, *x.shape[2:]).swapaxes(1, 2).reshape(x.shape)


def test_channel_shuffle_interleaves_the_groups():
    x = ag.arange(24.0).reshape(1, 6, 2, 2)
    shuffled = F.channel_shuffle(x, 2)
    # channel j of group g goes to place 2 j + g: channels 0, 3, 1, 4, 2, 5, whose first elements are 4 times those
    assert shuffled[0, :, 0, 0].tolist() == [0.0, 12.0, 4.0, 16.0, 8.0, 20.0]
    assert shuffled.tolist() == channel_shuffle_reference(x.numpy(), 2).tolist()
    assert ag.channel_shuffle(x, 3).tolist() == channel_shuffle_reference(x.numpy(), 3).tolist()
    assert nn.ChannelShuffle(2)(x).tolist() == shuffled.tolist()
    assert repr(nn.ChannelShuffle(2)) == "ChannelShuffle(groups=2)"
    # dim 1 is always the channels: an unbatched (6, 2, 2) input shuffles its 2 "channels" in 2 groups of 1
    assert F.channel_shuffle(x[0], 2).tolist() == x[0].tolist()
    five_d = ag.arange(12).reshape(1, 6, 2, 1, 1)
    assert F.channel_shuffle(five_d, 2).tolist() == channel_shuffle_reference(five_d.numpy(), 2).tolist()
    assert gradcheck(lambda t: F.channel_shuffle(t, 3), [f64(np.arange(24.0).reshape(2, 6, 2), True)], **TOL)


@pytest.mark.parametrize(("call", "kind", "text"), [
    (lambda: F.channel_shuffle(ag.ones(2, 6), 2), RuntimeError,
     "channel_shuffle expects input with > 2 dims, but got input with sizes [2, 6]"),
    (lambda: F.channel_shuffle(ag.ones(1, 6, 2), 0), RuntimeError,
     "Number of groups to divide channels in must be positive. Value of groups:0"),
    (lambda: F.channel_shuffle(ag.ones(1, 6, 2), 4), RuntimeError,
     "Number of channels must be divisible by groups. Got 6 channels and 4 groups."),
    (lambda: F.channel_shuffle(ag.ones(1, 6, 2), 2.0), TypeError,
     "channel_shuffle(): argument 'groups' (position 2) must be int, not float"),
    (lambda: ag.channel_shuffle([1.0], 2), TypeError,
     "channel_shuffle(): argument 'input' (position 1) must be Tensor, not list"),
])
def test_channel_shuffle_refuses_what_pytorch_refuses(call, kind, text):
    raises(call, kind, text)


# -- on cuda:0 (CuPy, or the stand-in in CI) --------------------------------------------------------------------------
def _bag_on(device, mode):
    def reduce(weight, per_sample_weights=None):
        return F.embedding_bag(ag.tensor(INDICES, device=device), weight, ag.tensor(OFFSETS, device=device), mode=mode,
                               per_sample_weights=per_sample_weights, padding_idx=2)
    return reduce


DEVICE_CASES = {
    "bilinear": (lambda device: F.bilinear, [X1, X2, A, B]),
    "embedding_bag_sum": (lambda device: _bag_on(device, "sum"), [E, PER_SAMPLE]),
    "embedding_bag_mean": (lambda device: _bag_on(device, "mean"), [E]),
    "embedding_bag_max": (lambda device: _bag_on(device, "max"), [E]),
    # distinct indices: where indices repeat, which value a GPU writes last is not defined (nor is it in PyTorch)
    "max_unpool2d": (lambda device: lambda t: F.max_unpool2d(t, ag.tensor(POOL_INDICES, device=device), 2),
                     [np.array(POOLED)]),
}


@pytest.mark.gpu
@pytest.mark.parametrize("name", list(DEVICE_CASES))
def test_the_layers_give_the_cpus_values_and_gradients_on_cuda(name):
    pytest.importorskip("cupy")
    cuda = ag.device("cuda:0")
    make, values = DEVICE_CASES[name]
    results = []
    for device in (None, cuda):
        inputs = [f64(v, True, device) for v in values]
        out = make(device)(*inputs)
        (out * out).sum().backward()
        assert out.device == inputs[0].device and all(t.grad.device == t.device for t in inputs)
        results.append([out.detach().cpu().numpy(), *(t.grad.cpu().numpy() for t in inputs)])
    for got, expected in zip(results[1], results[0], strict=True):
        np.testing.assert_allclose(got, expected, rtol=1e-12, atol=1e-14)
