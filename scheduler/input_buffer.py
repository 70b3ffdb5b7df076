"""InputBuffer: an actor's mailbox, summing the gradient messages for each of its slots.

Messages are summed in the order of their senders' sequence numbers, not in arrival order, so a pass gives
bitwise the same gradients however many workers ran it and whichever message came first.
"""

from __future__ import annotations

from operator import itemgetter
from typing import Any

from numpy import ndarray

_by_sender = itemgetter(0)


class InputBuffer:
    """`left` counts the messages still expected; the actor runs when it reaches zero."""

    __slots__ = ("messages", "left")

    def __init__(self, slots: int, left: int = 0) -> None:
        # Per slot: None, one (sender_seq, grad) pair, or a list of such pairs.
        self.messages: list = [None] * slots
        self.left = left

    def add(self, slot: int, grad: Any, sender_seq: int) -> None:
        held = self.messages[slot]
        if held is None:
            self.messages[slot] = (sender_seq, grad)
        elif held.__class__ is tuple:
            self.messages[slot] = [held, (sender_seq, grad)]
        else:
            held.append((sender_seq, grad))

    def grads(self) -> list:
        """One summed gradient (or None) per slot."""
        out = []
        for held in self.messages:
            if held is None:
                out.append(None)
            elif held.__class__ is tuple:
                out.append(held[1])
            else:
                held.sort(key=_by_sender)
                total = held[0][1] + held[1][1]
                fresh = total.__class__ is ndarray  # a new array no one else holds: add the rest in place
                for _, grad in held[2:]:
                    # In place only where the sum keeps its shape: a tensor reshaped in place under no_grad
                    # (unsqueeze_, say) sends its later messages in the new shape, which broadcasts larger.
                    if fresh and grad.shape == total.shape:
                        total += grad
                    else:
                        total = total + grad
                out.append(total)
        return out
