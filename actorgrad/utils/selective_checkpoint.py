"""Selective activation checkpointing: which ops of a checkpointed segment keep their saved values.

In PyTorch an op is an ATen operator seen by a dispatch mode. actorgrad has no dispatcher under its ops: what it
sees is each node an op records, when the node hands the values it saves for backward to the checkpoint's
saved-tensor hooks. So here an op is a recorded node, named as `grad_fn.name()` names it ("MmBackward0",
"SinBackward0"), and a policy is asked once per node that saves values, as
`policy_fn(SelectiveCheckpointContext(...), name)` (ctx.op_output is the op's output). A SAVE policy keeps the
node's saved values from the forward, a CPU_OFFLOAD one keeps them on the CPU, a RECOMPUTE one (the default)
drops them for the backward's rerun of the segment. The rerun starts at the segment's beginning and stops after
the last dropped value, so saved ops after it, and every op of a segment that dropped nothing, run once only.
"""

from __future__ import annotations

import contextlib
import enum
from collections.abc import Callable
from contextvars import ContextVar
from typing import Any

__all__ = [
    "CheckpointError", "CheckpointPolicy", "SelectiveCheckpointContext", "create_selective_checkpoint_contexts",
]

CACHED_MUTATED = "Tensor cached during selective activation checkpoint has been mutated"


class CheckpointError(RuntimeError):
    """A checkpointed segment's rerun did not save what its forward saved (it depends on more than its inputs)."""


class CheckpointPolicy(enum.Enum):
    """What happens to the values an op saves in a checkpointed segment: SAVE keeps them, RECOMPUTE drops them
    for the rerun, CPU_OFFLOAD keeps them on the CPU. MUST and PREFER act alike here: PyTorch keeps PREFER for
    compilers that may overrule it."""

    MUST_SAVE = 0
    PREFER_SAVE = 1
    MUST_RECOMPUTE = 2
    PREFER_RECOMPUTE = 3
    MUST_CPU_OFFLOAD = 4
    PREFER_CPU_OFFLOAD = 5


class SelectiveCheckpointContext:
    """What a policy function is told about the op: `op_output`, its output. It is asked during the forward
    only, so `is_recompute` is always False (kept for policies written for PyTorch)."""

    def __init__(self, *, is_recompute: bool, op_output: Any = None) -> None:
        self.is_recompute = is_recompute
        self.op_output = op_output


class _SavingMode:
    """The forward's context: while it is entered, a non-reentrant checkpoint asks `policy` about each op."""

    def __init__(self, policy: Callable, allow_cache_entry_mutation: bool) -> None:
        self.policy = policy
        self.allow_cache_entry_mutation = allow_cache_entry_mutation
        self._tokens: list = []

    def __enter__(self) -> None:
        self._tokens.append(current_saving_mode.set(self))

    def __exit__(self, *exc_info: object) -> None:
        current_saving_mode.reset(self._tokens.pop())


current_saving_mode: ContextVar[_SavingMode | None] = ContextVar("actorgrad_checkpoint_saving_mode", default=None)


def create_selective_checkpoint_contexts(
    policy_fn_or_list: Callable | list[str], allow_cache_entry_mutation: bool = False
) -> tuple[_SavingMode, contextlib.nullcontext]:
    """The (forward, recompute) contexts for `checkpoint(..., use_reentrant=False, context_fn=...)`, from a
    policy function `policy_fn(ctx, op_name)` returning a CheckpointPolicy, or from a list of node names to save
    (MUST_SAVE for them, PREFER_RECOMPUTE for the rest). A saved value changed in place before backward is
    refused unless `allow_cache_entry_mutation`. The recompute context does nothing: the rerun finds the values
    it must give back by their position, with no policy."""
    if isinstance(policy_fn_or_list, list):
        names = policy_fn_or_list
        for op in names:
            if not isinstance(op, str):
                raise ValueError(
                    f"Expected op in `op_list` to be a node name (as grad_fn.name() gives it) but got: {op} of type "
                    f"{type(op)}. "
                )

        def policy_fn(ctx: SelectiveCheckpointContext, op: str) -> CheckpointPolicy:
            return CheckpointPolicy.MUST_SAVE if op in names else CheckpointPolicy.PREFER_RECOMPUTE

    elif callable(policy_fn_or_list):
        policy_fn = policy_fn_or_list
    else:
        raise TypeError("policy_fn_or_list must be either a function or a list of ops.")
    return _SavingMode(_checked_policy(policy_fn), allow_cache_entry_mutation), contextlib.nullcontext()


def _checked_policy(policy_fn: Callable) -> Callable:
    """`policy_fn`, its bool answers taken as PyTorch takes them (True: MUST_SAVE, False: PREFER_RECOMPUTE)."""

    def policy(ctx: SelectiveCheckpointContext, op: str) -> CheckpointPolicy:
        answer = policy_fn(ctx, op)
        if isinstance(answer, bool):
            return CheckpointPolicy.MUST_SAVE if answer else CheckpointPolicy.PREFER_RECOMPUTE
        if not isinstance(answer, CheckpointPolicy):
            raise TypeError(f"policy_fn must return a CheckpointPolicy (or a bool), got {answer!r} for {op}")
        return answer

    return policy
