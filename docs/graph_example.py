"""A one-layer network's loss, for the README's graph picture:

    actorgrad graph docs/graph_example.py -o docs/graph.png
"""

import actorgrad as ag

x = ag.randn(4, 3)
W = ag.randn(3, 2, requires_grad=True)
b = ag.zeros(2, requires_grad=True)
target = ag.randn(4, 2)
((x @ W + b).tanh() - target).pow(2).mean()
