"""Chrome trace export of actorgrad.profile(): one slice per executed node on its device and worker track, inside
its pass's span, with flow arrows for gradients that cross devices; and the PNG timeline."""

import json
import time

import numpy as np
import pytest
import trio

import actorgrad as ag
from actorgrad.ops.record import Rule, record
from actorgrad.profiler import chrome_trace
from actorgrad.scheduler.trace import TraceLog, WaitEvent


@pytest.fixture
def two_workers(num_workers):
    with num_workers(2):
        yield


def heavy_branches(n):
    """`n` branches whose kernels sleep (releasing the GIL) and claim to be heavy, so they go to worker threads."""

    def slow(ops, g):
        time.sleep(0.005)
        return g

    rule = Rule("SlowBackward0", ((), slow), cost=lambda data, params: 1e12)
    x = ag.tensor(np.ones(4), requires_grad=True)
    total = None
    for i in range(n):
        y = (x * float(i + 1)).tanh()
        branch = record(rule, y._data, (y,)).sum()
        total = branch if total is None else total + branch
    return total


async def traced_passes():
    """Two concurrent passes (one with heavy branches on workers) and a plain chain after them."""
    w = ag.tensor(np.linspace(0.1, 0.5, 5), requires_grad=True)
    chain = (w * 2.0).tanh().exp().sum()
    with ag.profile() as prof:
        async with trio.open_nursery() as nursery:
            nursery.start_soon(ag.backward, heavy_branches(3))
            nursery.start_soon(ag.backward, (w * w).sum())
        await ag.backward(chain)
    return prof


def slices(trace, category):
    return [e for e in trace["traceEvents"] if e["ph"] == "X" and e["cat"] == category]


async def test_one_slice_per_executed_node_with_its_fields(two_workers, tmp_path):
    prof = await traced_passes()
    path = tmp_path / "trace.json"
    prof.export_chrome_trace(str(path))
    trace = json.loads(path.read_text())
    nodes = slices(trace, "node")
    assert len(nodes) == len(prof.events)
    assert sorted(s["name"] for s in nodes) == sorted(e.name for e in prof.events)
    names = {s["name"] for s in nodes}
    assert {"SlowBackward0", "TanhBackward0", "ExpBackward0", "torch::autograd::AccumulateGrad"} <= names
    by_key = {(s["args"]["graph_task"], s["args"]["sequence_nr"], s["name"]) for s in nodes}
    assert by_key == {(e.graph_task, e.sequence_nr, e.name) for e in prof.events}
    assert {s["args"]["reentrant_depth"] for s in nodes} == {0}
    assert len({s["args"]["graph_task"] for s in nodes}) == 3
    assert all(s["dur"] >= 0 for s in nodes)


async def test_tracks_are_devices_and_workers(two_workers):
    trace = chrome_trace(await traced_passes())
    names = {(e["pid"], e["tid"]): e["args"]["name"] for e in trace["traceEvents"]
             if e["ph"] == "M" and e["name"] == "thread_name"}
    processes = {e["pid"]: e["args"]["name"] for e in trace["traceEvents"]
                 if e["ph"] == "M" and e["name"] == "process_name"}
    nodes = slices(trace, "node")
    cpu = next(pid for pid, name in processes.items() if name == "device cpu")
    assert {s["pid"] for s in nodes} == {cpu}
    assert {s["tid"] for s in nodes} == {0, 1, 2}, "the dispatcher and both worker slots"
    assert names[(cpu, 0)] == "dispatcher" and names[(cpu, 1)] == "worker 1"
    assert {s["name"] for s in nodes if s["tid"] != 0} == {"SlowBackward0"}


async def test_node_slices_lie_within_their_pass_and_do_not_overlap_on_a_track(two_workers):
    trace = chrome_trace(await traced_passes())
    passes = {s["args"]["graph_task"]: s for s in slices(trace, "pass")}
    nodes = slices(trace, "node")
    assert set(passes) == {s["args"]["graph_task"] for s in nodes}
    for s in nodes:
        span = passes[s["args"]["graph_task"]]
        assert span["ts"] <= s["ts"] and s["ts"] + s["dur"] <= span["ts"] + span["dur"] + 1e-6, s
    tracks = {}
    for s in nodes:
        tracks.setdefault((s["pid"], s["tid"]), []).append(s)
    for track in tracks.values():
        track.sort(key=lambda s: s["ts"])
        for before, after in zip(track, track[1:]):
            assert before["ts"] + before["dur"] <= after["ts"] + 1e-6, (before, after)


def test_gradients_crossing_devices_are_flow_arrows_and_waits_are_slices():
    """Recorded tuples as the engine writes them, for a pass over two devices (none exist on CPU-only builds)."""

    class FakeProfile:
        events = None

    log = TraceLog()
    #          name            seq  device  depth task worker start  end    node_id sends
    log.append(("MulBackward0", 7, "cuda:0", 0, 1, 0, 1_000, 2_000, 11, (12,)))
    log.append(("AccumulateGrad", 9, "cpu", 0, 1, 0, 5_000, 6_000, 12, ()))
    log.waits.append(WaitEvent("copy cuda:0->cpu", "cpu", 0, 1, 2_500, 4_500))
    prof = FakeProfile()
    prof.events = [ag.scheduler.TraceEvent(r[0], r[1], str(r[2]), *r[3:]) for r in log]
    prof.passes, prof.waits = log.passes, log.waits
    trace = chrome_trace(prof)
    start, finish = (e for e in trace["traceEvents"] if e.get("cat") == "gradient")
    assert (start["ph"], finish["ph"], finish["bp"]) == ("s", "f", "e")
    assert start["id"] == finish["id"] and start["pid"] != finish["pid"]
    assert start["ts"] <= 1.0 and finish["ts"] == 4.0
    (wait,) = slices(trace, "wait")
    assert (wait["ts"], wait["dur"], wait["name"]) == (1.5, 2.0, "wait copy cuda:0->cpu")


def test_tracing_is_off_outside_the_block():
    x = ag.tensor([1.0, 2.0], requires_grad=True)
    with ag.profile() as prof:
        (x * x).sum().backward()
    (x * 3.0).sum().backward()
    assert [e.name for e in prof.events] == ["torch::autograd::GraphRoot", "SumBackward0", "MulBackward0",
                                                "torch::autograd::AccumulateGrad"]
    assert len(prof.passes) == 1


async def test_timeline_png(two_workers, tmp_path):
    pytest.importorskip("matplotlib")
    from actorgrad.profiler import save_timeline_png

    path = tmp_path / "timeline.png"
    save_timeline_png(await traced_passes(), str(path))
    assert path.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
