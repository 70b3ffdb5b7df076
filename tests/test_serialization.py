"""save and load: tensors of every dtype and layout, nested containers, Modules' and optimizers' state dicts (a
restored run continues exactly as the uninterrupted one), shared tensors, map_location, and weights_only's
refusal of arbitrary globals."""

from __future__ import annotations

import io
import pickle
from collections import OrderedDict

import numpy as np
import pytest

import actorgrad as ag


def round_trip(obj, **load_kwargs):
    buffer = io.BytesIO()
    ag.save(obj, buffer)
    buffer.seek(0)
    return ag.load(buffer, **load_kwargs)


class Opaque:
    """A class a weights-only load must refuse to build."""

    def __init__(self, value: int) -> None:
        self.value = value


def test_tensors_and_containers_come_back_equal() -> None:
    base = ag.arange(12.0).reshape(3, 4)
    obj = {
        "float": base.t(),  # a non-contiguous view
        "int": ag.tensor([[1, -2]], dtype=ag.int32),
        "bool": ag.tensor([True, False]),
        "scalar": ag.tensor(2.5, dtype=ag.float64),
        "empty": ag.zeros(0, 3),
        "leaf": ag.ones(2, requires_grad=True),
        "nested": [(1, "a", 2.5, None), {"set": {1, 2}}, OrderedDict(b=ag.ones(1))],
        "dtype": ag.float16,
        "device": ag.device("cpu"),
    }
    back = round_trip(obj)
    for key in ("float", "int", "bool", "scalar", "empty", "leaf"):
        assert back[key].dtype == obj[key].dtype and back[key].shape == obj[key].shape
        np.testing.assert_array_equal(back[key].detach().numpy(), obj[key].detach().numpy())
    assert back["leaf"].requires_grad and back["leaf"].is_leaf and not back["float"].requires_grad
    assert back["nested"][:2] == [(1, "a", 2.5, None), {"set": {1, 2}}]
    assert isinstance(back["nested"][2], OrderedDict) and back["nested"][2]["b"].item() == 1
    assert back["dtype"] == ag.float16 and back["device"] == ag.device("cpu")


def test_a_tensor_met_twice_comes_back_as_one() -> None:
    shared = ag.arange(3.0)
    back = round_trip([shared, {"again": shared}, ag.arange(3.0)])
    assert back[0] is back[1]["again"] and back[0] is not back[2]


def test_a_parameter_stays_a_parameter_and_a_file_path_works(tmp_path) -> None:
    parameter = ag.nn.Parameter(ag.ones(2), requires_grad=False)
    path = tmp_path / "p.pt"
    ag.save(parameter, path)
    back = ag.load(str(path))
    assert isinstance(back, ag.nn.Parameter) and not back.requires_grad


def test_a_restored_model_and_optimizer_continue_as_the_uninterrupted_run() -> None:
    def step(model, optimizer, x):
        optimizer.zero_grad()
        model(x).pow(2).sum().backward()
        optimizer.step()

    ag.manual_seed(0)
    x = ag.randn(4, 3)
    model = ag.nn.Linear(3, 2)
    optimizer = ag.optim.Adam(model.parameters(), lr=0.1)
    step(model, optimizer, x)
    saved = round_trip({"model": model.state_dict(), "optimizer": optimizer.state_dict()})
    step(model, optimizer, x)
    restored = ag.nn.Linear(3, 2)
    restored.load_state_dict(saved["model"])
    restored_optimizer = ag.optim.Adam(restored.parameters(), lr=0.1)
    restored_optimizer.load_state_dict(saved["optimizer"])
    step(restored, restored_optimizer, x)
    for a, b in zip(model.parameters(), restored.parameters()):
        np.testing.assert_array_equal(a.detach().numpy(), b.detach().numpy())


def test_weights_only_refuses_arbitrary_globals() -> None:
    with pytest.raises(pickle.UnpicklingError, match="Unsupported global: GLOBAL .*Opaque was not an allowed"):
        round_trip({"x": Opaque(3)})
    with pytest.raises(pickle.UnpicklingError, match="Weights only load failed"):
        round_trip(ag.nn.Linear(2, 2))
    assert round_trip({"x": Opaque(3)}, weights_only=False)["x"].value == 3
    model = round_trip(ag.nn.Linear(2, 2), weights_only=False)
    assert isinstance(model, ag.nn.Linear) and isinstance(model.weight, ag.nn.Parameter)


def test_map_location_moves_every_tensor() -> None:
    obj = [ag.ones(2), ag.zeros(1, requires_grad=True)]
    target = ag.device("async_cpu:0")
    for where in ("async_cpu:0", target, {"cpu": "async_cpu:0"}):
        back = round_trip(obj, map_location=where)
        assert all(x.device == target for x in back) and back[1].requires_grad
    assert round_trip(obj, map_location={"cuda:0": "cpu"})[0].device == ag.device("cpu")
    seen = []
    back = round_trip(obj, map_location=lambda tensor, saved: seen.append(saved) or tensor * 2)
    assert seen == ["cpu", "cpu"] and back[0].numpy().tolist() == [2.0, 2.0]


def test_a_file_not_written_by_save_is_refused() -> None:
    with pytest.raises(pickle.UnpicklingError, match="not an archive written by actorgrad.save"):
        ag.load(io.BytesIO(b"not a zip"))


@pytest.mark.gpu
def test_cuda_tensors_save_and_load_onto_either_device(cupy) -> None:
    x = ag.arange(6.0, device="cuda:0").reshape(2, 3)
    back = round_trip({"x": x})
    assert back["x"].device == ag.device("cuda:0")
    np.testing.assert_array_equal(back["x"].cpu().numpy(), x.cpu().numpy())
    assert round_trip(x, map_location="cpu").device == ag.device("cpu")
