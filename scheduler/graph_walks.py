"""The walks over a graph a pass makes before it runs (PyTorch's compute_dependencies and init_to_execute): how many
edges point at each node, which devices the nodes run on, and which nodes lie on a path to the inputs grad() asks
for (selective execution)."""

from __future__ import annotations

from typing import Any

from actorgrad.scheduler.workers import HEAVY_NODE_NS


def count_dependencies(root: Any) -> tuple[dict, set, set, set]:
    """For every node reachable from `root`, how many edges point at it; and, in the same walk, the devices
    the nodes run on, those with heavy nodes, and those with heavy nodes whose kernels are multithreaded."""
    dependencies: dict = {}
    device = root.device
    devices = {device}
    heavy_devices = set()
    multithreaded_devices = set()
    heavy = HEAVY_NODE_NS
    stack = [root]
    while stack:
        for node, _ in stack.pop().next_functions:
            if node is None:
                continue
            if node in dependencies:
                dependencies[node] += 1
                continue
            dependencies[node] = 1
            stack.append(node)
            if node.device is not device:
                devices.add(node.device)
            if node.cost >= heavy:
                (multithreaded_devices if node.multithreaded else heavy_devices).add(node.device)
    return dependencies, devices, heavy_devices, multithreaded_devices


def on_the_callers_stream(devices: set, nodes: dict) -> bool:
    """Does a pass run on one CUDA device, every node's forward on the stream current now? Then it needs no
    events: its kernels queue from the host thread, on that one stream, in the order the engine runs the nodes,
    and the caller's later kernels on the stream follow them, as PyTorch's do."""
    if len(devices) != 1:
        return False
    (device,) = devices
    if not device.streams.issues_inline:
        return False
    current = device.current_stream()
    return all(getattr(node, "stream", current) is current for node in nodes)


def nodes_on_paths(root: Any, targets: set) -> set:
    """Nodes with a path of at least one edge to a target (PyTorch's init_to_execute).

    Nodes whose topological_nr is below every target's cannot reach one and are not explored.
    """
    min_topo = min(node.topological_nr for node in targets)
    reaches: dict = {}
    on_path: set = set()
    stack = [(root, iter(root.next_functions))]
    reaches[root] = False
    while stack:
        node, edges = stack[-1]
        for child, _ in edges:
            if child is None or child.topological_nr < min_topo:
                continue
            if child not in reaches:
                reaches[child] = False
                stack.append((child, iter(child.next_functions)))
                break
            if reaches[child]:
                on_path.add(node)
        else:
            stack.pop()
            reached = node in on_path or node in targets
            reaches[node] = reached
            if reached and stack:
                on_path.add(stack[-1][0])
    return on_path
