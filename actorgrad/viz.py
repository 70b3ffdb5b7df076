"""The backward graph as a picture: DOT source for Graphviz, and rendering it when Graphviz is installed.

One box per node, labelled with its name and output shapes (what its input metadata expects of the arriving
gradients) and the tensors its formula saved; leaves (AccumulateGrad) are double-bordered and show the leaf's
shape; the fill colour says the device. Edges follow the gradients, from a node to the nodes it sends to.
"""

from __future__ import annotations

import shutil
import subprocess
from pathlib import Path
from typing import Any

from actorgrad.accumulate_grad import AccumulateGrad
from actorgrad.formula_node import FormulaNode
from actorgrad.tensor import Tensor

DEVICE_COLOURS = {"cpu": "#dbe9f6", "cuda": "#fde0c5", "mps": "#e2f0d9"}
OTHER_DEVICE_COLOUR = "#eeeeee"
INSTALL_HINT = ("install Graphviz (Debian/Ubuntu: apt-get install graphviz; macOS: brew install graphviz; "
                "conda: conda install graphviz)")


class GraphvizNotFound(RuntimeError):
    """Graphviz's `dot` is not on PATH."""


def to_dot(tensor: Tensor, title: str = "backward graph") -> str:
    """The graph that backward from `tensor` would run, as DOT source."""
    root = tensor.grad_fn
    if root is None:
        raise RuntimeError("to_dot: the tensor has no grad_fn (it does not require grad or was made under no_grad)")
    ids: dict[Any, str] = {root: "n0"}
    order, lines = [root], [f'digraph "{_escape(title)}" {{', "  rankdir=TB;",
                            '  node [shape=box, style="rounded,filled", fontname="Helvetica", fontsize=10];']
    for node in order:  # grows as the walk finds new nodes: a breadth-first walk
        for next_node, input_nr in node.next_functions:
            if next_node is None:
                continue
            if next_node not in ids:
                ids[next_node] = f"n{len(ids)}"
                order.append(next_node)
            label = f' [label="{input_nr}"]' if len(next_node.input_metadata) > 1 else ""
            lines.append(f"  {ids[node]} -> {ids[next_node]}{label};")
    nodes = [f'  {ids[node]} [label="{_escape(_label(node))}", fillcolor="{_colour(node)}"'
             + (", peripheries=2" if isinstance(node, AccumulateGrad) else "") + "];" for node in order]
    return "\n".join(lines[:3] + nodes + lines[3:] + ["}"]) + "\n"


def render(dot_source: str, path: str | Path) -> Path:
    """Render DOT to `path`, its format from the suffix (.svg, .png, .pdf); raises GraphvizNotFound without `dot`."""
    path = Path(path)
    dot = shutil.which("dot")
    if dot is None:
        raise GraphvizNotFound(f"cannot render {path}: Graphviz's `dot` is not installed; {INSTALL_HINT}")
    subprocess.run([dot, f"-T{path.suffix.lstrip('.') or 'svg'}", "-o", str(path)], input=dot_source, text=True,
                   check=True, capture_output=True)
    return path


def _label(node: Any) -> str:
    lines = [node.name().removeprefix("torch::autograd::")]  # as torchviz: AccumulateGrad, CopySlices
    if isinstance(node, AccumulateGrad):
        leaf = node.variable
        lines.append(f"leaf {_shape(leaf.shape)} {leaf.dtype}")
    else:
        lines += [f"out {_shape(meta.shape)}" for meta in node.input_metadata]
    lines += _saved(node)
    return "\n".join(lines)


def _saved(node: Any) -> list[str]:
    """The arrays a FormulaNode keeps for its backward, by the names its rule gives them (empty once freed)."""
    if not isinstance(node, FormulaNode) or node.saved is None:
        return []
    seen, lines = set(), []
    for index, _, values, _, _, _ in node.saved:
        for name, value in zip(node._rule.grads[index][0], values):
            if name not in seen and hasattr(value, "shape"):
                seen.add(name)
                lines.append(f"saved {name} {_shape(value.shape)}")
    return lines


def _colour(node: Any) -> str:
    return DEVICE_COLOURS.get(getattr(node.device, "type", str(node.device)), OTHER_DEVICE_COLOUR)


def _shape(shape: tuple) -> str:
    return str(tuple(shape))


def _escape(text: str) -> str:
    return text.replace("\\", "\\\\").replace('"', '\\"').replace("\n", "\\n")
