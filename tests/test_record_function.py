"""`actorgrad.profiler.record_function` labels ranges in the active profile (block or decorator), the Chrome trace
shows them, and `key_averages()` sums nodes and ranges up by name with their self times."""

import contextvars
import threading
from types import SimpleNamespace

import numpy as np
import pytest

import actorgrad as ag
from actorgrad.profiler import EventList, chrome_trace, record_function
from actorgrad.scheduler.trace import RangeEvent, TraceEvent


def small_backward():
    x = ag.tensor(np.linspace(-1, 1, 6), requires_grad=True)
    (x.sin() * 2.0).sum().backward()


def test_ranges_are_recorded_inside_a_profile_only():
    with record_function("outside"):
        small_backward()
    with ag.profile() as prof:
        with record_function("step") as labelled:
            assert isinstance(labelled, record_function)
            small_backward()
    assert [r.name for r in prof.ranges] == ["step"]
    (step,) = prof.ranges
    assert all(step.start_ns <= e.start_ns and e.end_ns <= step.end_ns for e in prof.events)
    assert {e.name for e in prof.events} >= {"SinBackward0", "MulBackward0"}


def test_a_decorated_function_gets_a_range_per_call_and_nested_ranges_keep_their_order():
    @record_function("inner")
    def inner(k):
        return k * 2

    with ag.profile() as prof:
        with record_function("outer"):
            assert [inner(k) for k in range(3)] == [0, 2, 4]
    assert [r.name for r in prof.ranges] == ["inner", "inner", "inner", "outer"]  # in order of closing
    outer = prof.ranges[-1]
    assert all(outer.start_ns <= r.start_ns <= r.end_ns <= outer.end_ns for r in prof.ranges[:3])


def test_ranges_of_other_threads_get_their_own_track():
    def work():
        with record_function("on a thread"):
            pass

    with ag.profile() as prof:
        with record_function("main"):
            pass
        thread = threading.Thread(target=contextvars.copy_context().run, args=(work,))  # the profile is a ContextVar
        thread.start()
        thread.join()
    assert {r.name: r.thread for r in prof.ranges} == {"main": 1, "on a thread": 2}


def test_the_chrome_trace_shows_ranges_as_user_annotations():
    with ag.profile() as prof:
        with record_function("forward and backward"):
            small_backward()
    trace = chrome_trace(prof)["traceEvents"]
    (annotation,) = [e for e in trace if e.get("cat") == "user_annotation"]
    (span,) = prof.ranges
    assert annotation["name"] == "forward and backward"
    assert annotation["dur"] == (span.end_ns - span.start_ns) / 1000
    host = [e for e in trace if e["ph"] == "M" and e["args"]["name"] == "host threads"]
    assert host and host[0]["pid"] == annotation["pid"]


def fake_profile():
    """Spans in microseconds, as a profile would hold them: node A (0-10) on the dispatcher with node B (2-5)
    nested in it (a reentrant pass), node B again on a worker (0-4), range R (0-20) with range S (1-3) inside."""
    us = 1000
    events = [TraceEvent("A", 1, "cpu", 0, 1, 0, 0, 10 * us), TraceEvent("B", 2, "cpu", 1, 2, 0, 2 * us, 5 * us),
              TraceEvent("B", 3, "cpu", 0, 1, 1, 0, 4 * us)]
    ranges = [RangeEvent("S", 1, 1 * us, 3 * us), RangeEvent("R", 1, 0, 20 * us)]
    return SimpleNamespace(events=events, ranges=ranges)


def test_key_averages_counts_and_times_by_name_with_self_time_less_what_ran_inside():
    prof = fake_profile()
    rows = {e.key: e for e in ag.profile.key_averages(prof)}
    assert isinstance(ag.profile.key_averages(prof), EventList)
    a, b, r, s = rows["A"], rows["B"], rows["R"], rows["S"]
    assert (a.count, a.cpu_time_total, a.self_cpu_time_total) == (1, 10.0, 7.0)
    assert (b.count, b.cpu_time_total, b.self_cpu_time_total, b.cpu_time) == (2, 7.0, 7.0, 3.5)
    assert (r.cpu_time_total, r.self_cpu_time_total, s.self_cpu_time_total) == (20.0, 18.0, 2.0)


def test_table_sorts_limits_and_refuses_an_unknown_key():
    averages = ag.profile.key_averages(fake_profile())
    table = averages.table(sort_by="count", row_limit=1)
    lines = table.splitlines()
    assert "# of Calls" in lines[1] and lines[3].split()[0] == "B" and lines[3].split()[-1] == "2"
    assert len([line for line in lines if line.split() and line.split()[0] in "ABRS"]) == 1
    assert "Self CPU time total: 34.000us" in table
    by_self = [line.split()[0] for line in averages.table(sort_by="self_cpu_time_total").splitlines()[3:7]]
    assert by_self == ["R", "A", "B", "S"]
    with pytest.raises(AttributeError, match="has no attribute 'bogus'"):
        averages.table(sort_by="bogus")


def test_autograd_profiler_is_the_profile_and_enabled_false_records_nothing():
    assert ag.autograd.profiler.profile is ag.profile
    assert ag.autograd.profiler.record_function is record_function
    with ag.autograd.profiler.profile(enabled=False) as prof:
        with record_function("ignored"):
            small_backward()
    assert prof.events == [] and prof.ranges == []
    with ag.autograd.profiler.profile() as prof:
        small_backward()
    assert {e.key for e in prof.key_averages()} == {e.name for e in prof.events}
