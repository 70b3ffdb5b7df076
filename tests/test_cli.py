"""The `actorgrad` command: help, a tiny `bench --quick` that writes JSON and the scaling PNG, `trace` and
`graph` on small scripts. Each runs `python -m actorgrad` in a subprocess, as a user would."""

import json
import os
import subprocess
import sys

import pytest

PNG_MAGIC = b"\x89PNG\r\n\x1a\n"


def actorgrad(*args, cwd=None, env=None):
    return subprocess.run([sys.executable, "-m", "actorgrad", *map(str, args)], capture_output=True, text=True,
                          cwd=cwd, env=env, timeout=120)


def test_help_lists_the_commands():
    done = actorgrad("--help")
    assert done.returncode == 0, done.stderr
    for command in ("bench", "trace", "graph"):
        assert command in done.stdout


def test_bench_quick_writes_json_and_the_scaling_plot(tmp_path):
    pytest.importorskip("matplotlib")
    results, plot = tmp_path / "bench.json", tmp_path / "scaling.png"
    done = actorgrad("bench", "--quick", "--size", "tiny", "--no-peers", "--only", "W1,W4", "--json", results,
                     "--plot", plot)
    assert done.returncode == 0, done.stderr
    data = json.loads(results.read_text())
    assert data["repeat"] == 3
    rows = {(r["workload"], r["engine"]): r for r in data["results"]}
    assert {w for w, _ in rows} == {"W1", "W4"}
    traced = rows[("W1", "actorgrad backward, traced (profile)")]
    assert traced["median"] > 0 and len(traced["samples"]) == 3 and traced["target"] == "<= 1.15x ag"
    assert rows[("W1", "torch backward (1 thread)")]["median"] is None, "--no-peers leaves torch out"
    scaling = data["scaling"]
    assert scaling["W2"]["workers"][0] == 1 and scaling["W2"]["workers"][-1] == data["machine"]["cores"]
    assert len(scaling["W2"]["actorgrad_ms"]) == len(scaling["W2"]["workers"])
    assert scaling["W4"]["graphs"] == [1, 4, 16, 64]
    assert all(t > 0 for t in scaling["W4"]["concurrent_ms_per_graph"])
    assert plot.read_bytes()[:8] == PNG_MAGIC


def test_bench_plain_table_without_scaling():
    done = actorgrad("bench", "--quick", "--size", "tiny", "--no-peers", "--only", "w1", "--plain", "--no-scaling")
    assert done.returncode == 0, done.stderr
    assert "W1: gradients match the numpy floor" in done.stdout
    assert "actorgrad backward, traced (profile)" in done.stdout and "scaling" not in done.stdout


def test_bench_rejects_an_unknown_workload():
    done = actorgrad("bench", "--only", "W9", "--no-scaling")
    assert done.returncode == 2 and "unknown workloads ['W9']" in done.stderr


SCRIPT = """
import sys
import actorgrad as ag
x = ag.tensor([1.0, 2.0, 3.0], requires_grad=True)
loss = (x * float(sys.argv[1]) if len(sys.argv) > 1 else x).tanh().sum()
other = x.exp().sum()
loss.backward()
loss
"""


def test_trace_runs_a_script_and_writes_json_and_a_timeline(tmp_path):
    pytest.importorskip("matplotlib")
    (tmp_path / "script.py").write_text(SCRIPT)
    done = actorgrad("trace", "-o", "t.json", "--png", "t.png", "script.py", "2.0", cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    trace = json.loads((tmp_path / "t.json").read_text())
    names = [e["name"] for e in trace["traceEvents"] if e.get("cat") == "node"]
    assert sorted(names) == ["MulBackward0", "SumBackward0", "TanhBackward0", "torch::autograd::AccumulateGrad",
                            "torch::autograd::GraphRoot"]
    assert (tmp_path / "t.png").read_bytes()[:8] == PNG_MAGIC


def test_graph_writes_the_last_expression_or_a_named_variable(tmp_path):
    (tmp_path / "script.py").write_text(SCRIPT.replace("loss.backward()\n", ""))
    done = actorgrad("graph", "script.py", cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    assert "TanhBackward0" in done.stdout and "ExpBackward0" not in done.stdout
    done = actorgrad("graph", "script.py", "--var", "other", "-o", "g.dot", cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    assert "ExpBackward0" in (tmp_path / "g.dot").read_text()


def test_graph_without_graphviz_says_so_and_writes_dot(tmp_path):
    (tmp_path / "script.py").write_text(SCRIPT)
    env = {**os.environ, "PATH": str(tmp_path)}  # no `dot` there
    done = actorgrad("graph", "script.py", "-o", "g.svg", cwd=tmp_path, env=env)
    assert done.returncode == 1
    assert "Graphviz's `dot` is not installed" in done.stderr and "apt-get install graphviz" in done.stderr
    assert "digraph" in (tmp_path / "g.dot").read_text()


def test_trace_keeps_the_trace_and_exit_status_of_a_script_that_calls_sys_exit(tmp_path):
    (tmp_path / "script.py").write_text(SCRIPT.replace("loss\n", "sys.exit(3)\n"))
    done = actorgrad("trace", "-o", "t.json", "script.py", cwd=tmp_path)
    assert done.returncode == 3, done.stderr
    trace = json.loads((tmp_path / "t.json").read_text())
    assert sum(e.get("cat") == "node" for e in trace["traceEvents"]) == 4, "GraphRoot, Sum, Tanh, AccumulateGrad"
