"""actorgrad.viz.to_dot: the backward graph in DOT (nodes, edges, shapes, leaves, saved tensors) and rendering."""

import re
import shutil

import numpy as np
import pytest

import actorgrad as ag
import actorgrad.viz as viz


def parse(dot):
    """{node id: label} and the set of (from label's first line, to label's first line) edges."""
    labels = dict(re.findall(r'^\s+(n\d+) \[label="([^"]*)"', dot, re.M))
    edges = re.findall(r"^\s+(n\d+) -> (n\d+)", dot, re.M)
    return labels, {(labels[a].split("\\n")[0], labels[b].split("\\n")[0]) for a, b in edges}, edges


def test_known_graph_has_its_nodes_and_edges():
    x = ag.tensor(np.ones((2, 3)), requires_grad=True)
    w = ag.tensor(np.ones(3), requires_grad=True)
    dot = viz.to_dot((x * w).tanh().sum())
    labels, named_edges, edges = parse(dot)
    assert sorted(label.split("\\n")[0] for label in labels.values()) == [
        "AccumulateGrad", "AccumulateGrad", "MulBackward0", "SumBackward0", "TanhBackward0"]
    assert named_edges == {("SumBackward0", "TanhBackward0"), ("TanhBackward0", "MulBackward0"),
                           ("MulBackward0", "AccumulateGrad")}
    assert len(edges) == 4
    mul = next(label for label in labels.values() if label.startswith("MulBackward0"))
    assert mul.split("\\n")[1:] == ["out (2, 3)", "saved other (3,)", "saved self (2, 3)"]
    tanh = next(label for label in labels.values() if label.startswith("TanhBackward0"))
    assert "saved result (2, 3)" in tanh
    leaves = sorted(label for label in labels.values() if label.startswith("AccumulateGrad"))
    assert leaves == ["AccumulateGrad\\nleaf (2, 3) float64", "AccumulateGrad\\nleaf (3,) float64"]
    assert dot.count("peripheries=2") == 2, "leaves are marked"
    assert set(re.findall(r'fillcolor="([^"]+)"', dot)) == {viz.DEVICE_COLOURS["cpu"]}


def test_a_shared_leaf_is_one_node_and_freed_saved_tensors_are_not_listed():
    x = ag.tensor([1.0, 2.0], requires_grad=True)
    loss = (x * x).sum()
    labels, _, edges = parse(viz.to_dot(loss))
    assert [label for label in labels.values() if label.startswith("AccumulateGrad")] == [
        "AccumulateGrad\\nleaf (2,) float32"]
    assert len(edges) == 3
    loss.backward()
    labels, _, _ = parse(viz.to_dot(loss))
    assert not any("saved" in label for label in labels.values())


def test_a_tensor_without_grad_fn_is_refused():
    with pytest.raises(RuntimeError, match="no grad_fn"):
        viz.to_dot(ag.tensor([1.0], requires_grad=True))


def test_rendering_without_graphviz_says_how_to_install_it(monkeypatch, tmp_path):
    monkeypatch.setattr(viz.shutil, "which", lambda name: None)
    with pytest.raises(viz.GraphvizNotFound, match="Graphviz's `dot` is not installed.*apt-get install graphviz"):
        viz.render("digraph { a -> b }", tmp_path / "g.svg")


@pytest.mark.skipif(shutil.which("dot") is None, reason="Graphviz is not installed")
def test_rendering_with_graphviz(tmp_path):
    x = ag.tensor([1.0, 2.0], requires_grad=True)
    path = viz.render(viz.to_dot((x * 2.0).sum()), tmp_path / "g.svg")
    assert "<svg" in path.read_text() and "MulBackward0" in path.read_text()
