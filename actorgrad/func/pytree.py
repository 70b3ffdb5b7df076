"""Pytrees, as PyTorch's torch.utils._pytree sees them: tuples, lists, dicts (and OrderedDicts) and namedtuples
are containers; everything else, None included, is a leaf. The transforms flatten their inputs and outputs to
lists of leaves, work on those, and rebuild the structure; a TreeSpec prints as PyTorch's, since error texts show it.
"""

from __future__ import annotations

from collections import OrderedDict
from collections.abc import Callable
from typing import Any


class TreeSpec:
    """The structure of a pytree: the container type, its context (a dict's keys, a namedtuple's class) and one
    spec per child; a leaf's spec has no type."""

    __slots__ = ("children", "context", "type")

    def __init__(self, type_: type | None, context: Any, children: tuple[TreeSpec, ...]) -> None:
        self.type = type_
        self.context = context
        self.children = children

    def is_leaf(self) -> bool:
        return self.type is None

    @property
    def num_leaves(self) -> int:
        return 1 if self.type is None else sum(child.num_leaves for child in self.children)

    def __eq__(self, other: object) -> bool:
        return (isinstance(other, TreeSpec) and self.type is other.type and self.context == other.context
                and self.children == other.children)

    def __hash__(self) -> int:
        return hash((self.type, len(self.children)))

    def __repr__(self, indent: int = 0) -> str:
        if self.type is None:
            return "*"
        indent += 2
        children = (",\n" + " " * indent).join(child.__repr__(indent) for child in self.children)
        return f"TreeSpec({self.type.__name__}, {self.context}, [{children}])"


LEAF = TreeSpec(None, None, ())


def _is_namedtuple(tree: Any) -> bool:
    return isinstance(tree, tuple) and hasattr(type(tree), "_fields")


def _children(tree: Any) -> tuple[list, Any] | None:
    """(children, context) of a container, None for a leaf."""
    kind = type(tree)
    if kind is tuple or kind is list:
        return list(tree), None
    if kind is dict or kind is OrderedDict:
        return list(tree.values()), list(tree.keys())
    if _is_namedtuple(tree):
        return list(tree), kind
    return None


def _rebuild(spec: TreeSpec, children: list) -> Any:
    if spec.type is dict or spec.type is OrderedDict:
        return spec.type(zip(spec.context, children))
    if spec.type is list:
        return children
    if spec.type is tuple:
        return tuple(children)
    return spec.type(*children)  # a namedtuple


def tree_flatten(tree: Any) -> tuple[list, TreeSpec]:
    """The leaves of `tree`, left to right (a dict's in key order), and its structure."""
    leaves: list = []

    def visit(node: Any) -> TreeSpec:
        found = _children(node)
        if found is None:
            leaves.append(node)
            return LEAF
        children, context = found
        return TreeSpec(type(node), context, tuple(visit(child) for child in children))

    return leaves, visit(tree)


def tree_unflatten(leaves: list | tuple, spec: TreeSpec) -> Any:
    """The pytree of structure `spec` holding `leaves`."""
    leaves = iter(leaves)

    def build(node: TreeSpec) -> Any:
        if node.type is None:
            return next(leaves)
        return _rebuild(node, [build(child) for child in node.children])

    return build(spec)


def tree_map(fn: Callable[[Any], Any], tree: Any) -> Any:
    leaves, spec = tree_flatten(tree)
    return tree_unflatten([fn(leaf) for leaf in leaves], spec)


def broadcast_prefix(prefix: Any, spec: TreeSpec) -> list | None:
    """`prefix`'s leaves, each repeated over the subtree of `spec` it stands for (how vmap's in_dims and
    out_dims apply to whole arguments); None when `prefix` is not a prefix of the structure `spec`."""
    found = _children(prefix)
    if found is None:
        return [prefix] * spec.num_leaves
    children, context = found
    if spec.type is not type(prefix) or spec.context != context or len(children) != len(spec.children):
        return None
    result: list = []
    for child, child_spec in zip(children, spec.children):
        part = broadcast_prefix(child, child_spec)
        if part is None:
            return None
        result.extend(part)
    return result


class _Asterisk:
    def __repr__(self) -> str:
        return "*"


def tree_pprint(spec: TreeSpec) -> str:
    """The structure as Python would print it with a `*` for each leaf: `(*, {'a': *})`."""
    return repr(tree_unflatten([_Asterisk()] * spec.num_leaves, spec))
