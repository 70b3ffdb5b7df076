"""Conversions and save/load where a generated comparison with PyTorch found them differing: a tensor whose own memory
is laid out in another order than row-major (a permuted clone, channels_last, a Fortran-ordered numpy array) keeps
its strides, and its views keep sharing its memory, through save/load and copying; from_numpy and as_tensor name an
unsupported dtype before a negative stride."""

from __future__ import annotations

import copy
import io
import pickle

import numpy as np
import pytest

import actorgrad as ag


def round_trip(obj, **load_kwargs):
    buffer = io.BytesIO()
    ag.save(obj, buffer)
    buffer.seek(0)
    return ag.load(buffer, **load_kwargs)


def element_strides(shape: tuple[int, ...], order: tuple[int, ...]) -> tuple[int, ...]:
    """The strides of a dense layout whose dims, innermost first, are `order` (reversed)."""
    strides, step = [0] * len(shape), 1
    for dim in reversed(order):
        strides[dim] = step
        step *= shape[dim]
    return tuple(strides)


def permuted_copy() -> tuple[ag.Tensor, np.ndarray]:
    """A clone of a transposed tensor (memory in the transposed order, as preserve_format lays it out), and its
    values."""
    values = np.arange(12.0).reshape(3, 2, 2)
    return ag.from_numpy(values.copy()).transpose(0, 1).clone(), values.transpose(1, 0, 2)


def test_a_permuted_copy_keeps_its_strides_and_shares_with_its_view_after_a_load() -> None:
    tensor, values = permuted_copy()
    assert tensor.stride() == (2, 4, 1)
    back, view = round_trip([tensor, tensor[1]])
    assert back.stride() == (2, 4, 1) and view.stride() == (4, 1)
    np.testing.assert_array_equal(back.numpy(), values)
    np.testing.assert_array_equal(view.numpy(), values[1])
    back[1, 2, 0] = -7.0
    assert view[2, 0].item() == -7.0


def test_channels_last_and_fortran_ordered_tensors_keep_their_layout_through_save() -> None:
    values = np.arange(24.0).reshape(1, 2, 3, 4)
    channels_last = ag.from_numpy(values.copy()).contiguous(memory_format=ag.channels_last)
    fortran = ag.from_numpy(np.asfortranarray(values[0, 0]))
    parameter = ag.nn.Parameter(channels_last.clone())
    back = round_trip({"cl": channels_last, "f": fortran, "p": parameter})
    assert back["cl"].stride() == element_strides((1, 2, 3, 4), (0, 2, 3, 1))
    assert back["f"].stride() == element_strides((3, 4), (1, 0))
    assert back["p"].stride() == element_strides((1, 2, 3, 4), (0, 2, 3, 1))
    assert isinstance(back["p"], ag.nn.Parameter) and back["p"].requires_grad
    np.testing.assert_array_equal(back["cl"].numpy(), values)
    np.testing.assert_array_equal(back["f"].numpy(), values[0, 0])
    np.testing.assert_array_equal(back["p"].detach().numpy(), values)


def test_memory_with_overlaps_or_gaps_still_loads_its_values() -> None:
    overlapping = ag.empty_strided((3, 3), (1, 1))  # its memory is its own and holds 5 elements, not 9
    expected = overlapping.numpy().copy()
    np.testing.assert_array_equal(round_trip(overlapping).numpy(), expected)
    gaps = ag.arange(24.0).reshape(4, 6).t()[::2]
    np.testing.assert_array_equal(round_trip(gaps).numpy(), np.arange(24.0).reshape(4, 6).T[::2])


@pytest.mark.parametrize("copier", [copy.deepcopy, lambda obj: pickle.loads(pickle.dumps(obj))],
                         ids=["deepcopy", "pickle"])
def test_copies_of_a_permuted_copy_and_its_view_keep_values_and_strides(copier) -> None:
    tensor, values = permuted_copy()
    out, view = copier([tensor, tensor[1]])
    assert out.stride() == (2, 4, 1) and view.stride() == (4, 1)
    np.testing.assert_array_equal(out.numpy(), values)
    np.testing.assert_array_equal(view.numpy(), values[1])
    assert not np.shares_memory(out.numpy(), tensor.numpy())


def test_deepcopied_views_of_a_permuted_copy_share_memory_again() -> None:
    tensor, _ = permuted_copy()
    out, view = copy.deepcopy([tensor, tensor[1]])
    out[1, 0, 1] = 50.0
    assert view[0, 1].item() == 50.0


@pytest.mark.parametrize("convert", [ag.from_numpy, ag.as_tensor, ag.tensor], ids=["from_numpy", "as_tensor", "tensor"])
def test_an_unsupported_dtype_is_named_before_a_negative_stride(convert) -> None:
    with pytest.raises(TypeError, match="can't convert np.ndarray of type numpy.object_"):
        convert(np.array([[1, 2], [3, 4]], dtype=object)[:, ::-1])
    with pytest.raises(ValueError, match="negative strides are not currently supported"):
        convert(np.arange(4, dtype=">f4")[::-1])
    with pytest.raises(ValueError, match="byte order different from the native"):
        convert(np.arange(4, dtype=">f4"))


@pytest.mark.gpu
def test_a_permuted_device_copy_loads_with_its_values(cupy) -> None:
    tensor, values = permuted_copy()
    on_device = tensor.to("cuda:0")
    back = round_trip([on_device, on_device[1]])
    assert back[0].device == ag.device("cuda:0")
    np.testing.assert_array_equal(back[0].cpu().numpy(), values)
    np.testing.assert_array_equal(back[1].cpu().numpy(), values[1])
    on_cpu = round_trip([on_device, on_device[1]], map_location="cpu")
    np.testing.assert_array_equal(on_cpu[1].numpy(), values[1])
