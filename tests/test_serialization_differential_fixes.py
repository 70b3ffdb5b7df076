"""save / load where they differed from PyTorch's: tensors that share memory share it again after a load, each at
its offset and strides (as after pickling them together); files that are not archives raise pickle's errors; the
pickle_module / weights_only interplay; a map_location callable gets the values on the cpu; a missing parent
directory is named."""

from __future__ import annotations

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


def element_strides(array: np.ndarray) -> tuple[int, ...]:
    return tuple(s // array.itemsize for s in array.strides)


def test_a_base_and_its_views_share_memory_again_at_their_offsets_and_strides() -> None:
    expected = np.arange(24.0).reshape(2, 3, 4).transpose(2, 0, 1)[1:, :, ::2]
    base = ag.arange(24.0).reshape(2, 3, 4)
    view = base.permute(2, 0, 1)[1:, :, ::2]
    back = round_trip({"view": view, "base": base, "expanded": base[0, :, :1].expand(3, 5)})
    assert back["view"].stride() == element_strides(expected)
    assert back["view"].storage_offset() == 1  # element [1, 0, 0] of the permuted base is element 1 of the memory
    np.testing.assert_array_equal(back["view"].numpy(), expected)
    back["base"].add_(100.0)
    np.testing.assert_array_equal(back["view"].numpy(), expected + 100.0)
    np.testing.assert_array_equal(back["expanded"].numpy(), np.repeat(np.arange(100.0, 112.0, 4)[:, None], 5, 1))
    assert back["expanded"].stride() == (4, 0)


def test_a_view_saved_alone_keeps_its_offset_and_strides() -> None:
    back = round_trip(ag.arange(12.0).reshape(3, 4)[1:, ::2])
    assert back.shape == (2, 2) and back.stride() == (4, 2) and back.storage_offset() == 4
    np.testing.assert_array_equal(back.numpy(), np.arange(12.0).reshape(3, 4)[1:, ::2])


def test_tied_weights_of_a_state_dict_share_memory_after_a_load() -> None:
    model = ag.nn.Sequential(ag.nn.Linear(2, 2), ag.nn.Linear(2, 2))
    model[1].weight = model[0].weight
    back = round_trip(model.state_dict())
    assert back["0.weight"].data_ptr() == back["1.weight"].data_ptr()
    assert back["0.bias"].data_ptr() != back["1.bias"].data_ptr()


def test_save_and_pickle_give_the_same_tensors_back() -> None:
    base = ag.linspace(0.0, 1.0, 10, requires_grad=True)
    obj = [base, base[2::3], (base * 2)[1:]]
    loaded, unpickled = round_trip(obj), pickle.loads(pickle.dumps(obj))
    for a, b in zip(loaded, unpickled):
        assert (a.shape, a.stride(), a.storage_offset(), a.requires_grad, a.is_leaf) == \
            (b.shape, b.stride(), b.storage_offset(), b.requires_grad, b.is_leaf)
        np.testing.assert_array_equal(a.detach().numpy(), b.detach().numpy())
        assert a.grad_fn is None and a.grad is None
    assert loaded[1].data_ptr() == loaded[0].data_ptr() + 2 * loaded[0].element_size()


def test_a_file_that_is_not_an_archive_raises_pickles_errors() -> None:
    with pytest.raises(pickle.UnpicklingError, match="invalid load key, 'n'"):
        ag.load(io.BytesIO(b"not an archive"))
    with pytest.raises(pickle.UnpicklingError, match="not an archive written by actorgrad.save"):
        ag.load(io.BytesIO(pickle.dumps({"a": 1})), weights_only=False)
    with pytest.raises(EOFError, match="Ran out of input"):
        ag.load(io.BytesIO(b""))


def test_naming_a_pickle_module_unpickles_everything_but_not_with_weights_only() -> None:
    buffer = io.BytesIO()
    ag.save(ag.nn.Linear(2, 3), buffer)
    buffer.seek(0)
    assert isinstance(ag.load(buffer, pickle_module=pickle), ag.nn.Linear)
    buffer.seek(0)
    with pytest.raises(RuntimeError, match="Can not safely load weights when explicit pickle_module is specified"):
        ag.load(buffer, pickle_module=pickle, weights_only=True)


def test_weights_only_allows_bytearray() -> None:
    assert round_trip({"raw": bytearray(b"abc")}) == {"raw": bytearray(b"abc")}


def test_a_map_location_callable_gets_the_values_on_the_cpu_and_none_means_the_saved_device() -> None:
    saved = ag.arange(3.0, device="async_cpu:0")
    seen = []
    back = round_trip(saved, map_location=lambda tensor, where: seen.append((tensor.device, where)) or tensor)
    assert seen == [(ag.device("cpu"), "async_cpu:0")] and back.device == ag.device("cpu")
    assert round_trip(saved, map_location=lambda tensor, where: None).device == ag.device("async_cpu:0")


def test_saving_into_a_missing_directory_names_it(tmp_path) -> None:
    with pytest.raises(RuntimeError, match="Parent directory .*missing does not exist"):
        ag.save(ag.ones(1), tmp_path / "missing" / "x.pt")
    ag.save(ag.ones(1), tmp_path / "x.pt")
    assert ag.load(tmp_path / "x.pt", mmap=True).tolist() == [1.0]


@pytest.mark.gpu
def test_device_views_load_with_their_values_and_a_callable_gets_them_on_the_cpu(cupy) -> None:
    base = ag.arange(12.0, device="cuda:0").reshape(3, 4)
    back = round_trip([base, base[1:, ::2]])
    assert back[1].device == ag.device("cuda:0")
    np.testing.assert_array_equal(back[1].cpu().numpy(), np.arange(12.0).reshape(3, 4)[1:, ::2])
    on_cpu = round_trip([base, base[1:, ::2]], map_location=lambda tensor, where: tensor)
    assert on_cpu[1].device == ag.device("cpu") and on_cpu[1].tolist() == [[4.0, 6.0], [8.0, 10.0]]
    assert round_trip(base, map_location=lambda tensor, where: None).device == ag.device("cuda:0")


class Trusted:
    """A user's class, pickled by reference to this module."""

    def __init__(self, value: int) -> None:
        self.value = value


def test_safe_globals_let_a_weights_only_load_build_the_users_classes() -> None:
    buffer = io.BytesIO()
    ag.save({"obj": Trusted(7), "x": ag.ones(2)}, buffer)

    def load():
        buffer.seek(0)
        return ag.load(buffer)

    with pytest.raises(pickle.UnpicklingError, match=r"add_safe_globals\(\[.*Trusted\]\)"):
        load()
    with ag.serialization.safe_globals([Trusted]):
        assert load()["obj"].value == 7
    assert ag.serialization.get_safe_globals() == []
    with pytest.raises(pickle.UnpicklingError, match="Unsupported global"):
        load()
    ag.serialization.add_safe_globals([(Trusted, f"{Trusted.__module__}.Trusted")])
    try:
        assert ag.serialization.get_safe_globals() == [(Trusted, f"{Trusted.__module__}.Trusted")]
        assert load()["obj"].value == 7
    finally:
        ag.serialization.clear_safe_globals()
    assert ag.serialization.get_safe_globals() == []


def test_weights_only_allows_counter() -> None:
    from collections import Counter

    assert round_trip({"counts": Counter("abca")})["counts"] == Counter(a=2, b=1, c=1)
