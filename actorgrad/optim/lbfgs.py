"""L-BFGS: PyTorch's limited-memory BFGS (after minFunc), every parameter taken as one flat vector.

Each `step(closure)` runs up to `max_iter` iterations: the two-loop recursion turns the last `history_size`
steps and gradient changes into a quasi-Newton direction, then the parameters move along it by `lr` (by a
smaller first step on the very first iteration) or by the step a strong Wolfe line search picks. The history is
kept in the state of the first parameter, under PyTorch's keys, so `state_dict()` saves and resumes it.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from typing import Any

from actorgrad.grad_mode import enable_grad, no_grad
from actorgrad.optim.line_search import strong_wolfe
from actorgrad.optim.optimizer import Optimizer, real_pairs
from actorgrad.optim.options import check_non_negative, check_tensor_lr, number
from actorgrad.tensor import Tensor
from actorgrad.version_counter import bump_version

# State entries that hold arrays (alone or in lists) while a step runs and Tensors between steps.
_ARRAY_KEYS = ("d", "t", "old_dirs", "old_stps", "ro", "H_diag", "prev_flat_grad", "al")


class LBFGS(Optimizer):
    """Minimises the loss `closure()` returns; one parameter group only, all parameters on one device."""

    def __init__(
        self,
        params: Iterable[Any],
        lr: float | Tensor = 1,
        max_iter: int = 20,
        max_eval: int | None = None,
        tolerance_grad: float = 1e-7,
        tolerance_change: float = 1e-9,
        history_size: int = 100,
        line_search_fn: str | None = None,
    ) -> None:
        check_tensor_lr(lr)
        check_non_negative("learning rate", lr)
        if max_eval is None:
            max_eval = max_iter * 5 // 4
        defaults = dict(
            lr=lr, max_iter=max_iter, max_eval=max_eval, tolerance_grad=tolerance_grad,
            tolerance_change=tolerance_change, history_size=history_size, line_search_fn=line_search_fn,
        )
        super().__init__(params, defaults)
        if len(self.param_groups) != 1:
            raise ValueError("LBFGS doesn't support per-parameter options (parameter groups)")
        self._params: list[Tensor] = self.param_groups[0]["params"]

    # -- the parameters as one flat vector -------------------------------------------------------------------
    def _flat_grad(self) -> Any:
        """The gradients as one vector; a complex parameter's as its (re, im) pairs, as PyTorch gathers them."""
        xp = self._params[0]._device.xp
        grads = [xp.zeros(p.numel(), p.dtype) if p.grad is None else p.grad._data.reshape(-1) for p in self._params]
        return xp.concatenate([real_pairs(g).reshape(-1) if g.dtype.kind == "c" else g for g in grads])

    def _move(self, step: Any, direction: Any) -> None:
        """Parameters += step * direction, in place."""
        offset = 0
        for p in self._params:
            data = self._own_array(p)
            if data.dtype.kind == "c":
                data = real_pairs(data)
            data += step * direction[offset:offset + data.size].reshape(data.shape)
            offset += data.size
            bump_version(p)

    def _copy_params(self) -> list[Any]:
        return [self._own_array(p).copy() for p in self._params]

    def _restore_params(self, saved: list[Any]) -> None:
        for p, data in zip(self._params, saved, strict=True):
            self._own_array(p)[...] = data
            bump_version(p)

    def _loss_and_grad(self, closure: Callable[[], Any]) -> tuple[Any, Any]:
        with enable_grad():
            loss = closure()
        return loss, self._flat_grad()

    # -- the step --------------------------------------------------------------------------------------------
    def step(self, closure: Callable[[], Any]) -> Any:  # type: ignore[override]
        """Up to `max_iter` iterations; `closure` clears the gradients, computes the loss, calls backward on it and
        returns it. Returns the loss at the start."""
        if len(self.param_groups) != 1:
            raise AssertionError(f"Expected exactly one param_group, but got {len(self.param_groups)}")
        with no_grad():
            return self._iterate(closure)

    def _iterate(self, closure: Callable[[], Any]) -> Any:
        group = self.param_groups[0]
        lr, max_iter, max_eval = number(group["lr"]), group["max_iter"], group["max_eval"]
        tolerance_grad, tolerance_change = group["tolerance_grad"], group["tolerance_change"]
        state = self.state[self._params[0]]
        state.setdefault("func_evals", 0)
        state.setdefault("n_iter", 0)

        orig_loss, flat_grad = self._loss_and_grad(closure)
        loss = _number(orig_loss)
        evaluations = 1
        state["func_evals"] += 1
        if abs(flat_grad).max() <= tolerance_grad:  # already optimal
            return orig_loss

        saved = {key: _arrays(state[key]) for key in _ARRAY_KEYS if key in state}
        d, t = saved.get("d"), saved.get("t")
        old_dirs, old_stps, ro = saved.get("old_dirs"), saved.get("old_stps"), saved.get("ro")
        h_diag, prev_flat_grad = saved.get("H_diag"), saved.get("prev_flat_grad")
        prev_loss = state.get("prev_loss")
        optimal = False
        iteration = 0
        while iteration < max_iter:
            iteration += 1
            state["n_iter"] += 1
            if state["n_iter"] == 1:
                d = -flat_grad
                old_dirs, old_stps, ro, h_diag = [], [], [], 1
            else:
                # Remember the last step s and gradient change y (where y.s shows positive curvature), then
                # d = -H g by the two-loop recursion, H's initial diagonal y.s / y.y.
                y = flat_grad - prev_flat_grad
                s = d * t
                ys = y.dot(s)
                if ys > 1e-10:
                    if len(old_dirs) == group["history_size"]:
                        del old_dirs[0], old_stps[0], ro[0]
                    old_dirs.append(y)
                    old_stps.append(s)
                    ro.append(1.0 / ys)
                    h_diag = ys / y.dot(y)
                if "al" not in saved:
                    saved["al"] = state["al"] = [None] * group["history_size"]  # its place among the keys, as PyTorch's
                al = saved["al"]
                q = -flat_grad
                for i in range(len(old_dirs) - 1, -1, -1):
                    al[i] = old_stps[i].dot(q) * ro[i]
                    q += -al[i] * old_dirs[i]
                d = r = q * h_diag
                for i in range(len(old_dirs)):
                    be_i = old_dirs[i].dot(r) * ro[i]
                    r += (al[i] - be_i) * old_stps[i]
            prev_flat_grad = flat_grad.copy()
            prev_loss = loss
            # The first step ever is scaled down so it moves by at most lr in the gradient's 1-norm.
            t = min(1.0, 1.0 / abs(flat_grad).sum()) * lr if state["n_iter"] == 1 else lr
            gtd = flat_grad.dot(d)
            if gtd > -tolerance_change:  # not a descent direction
                break
            step_evaluations = 0
            if group["line_search_fn"] is not None:
                if group["line_search_fn"] != "strong_wolfe":
                    raise RuntimeError("only 'strong_wolfe' is supported")
                start = self._copy_params()

                def evaluate(step: Any, start: list[Any] = start, d: Any = d) -> tuple[float, Any]:
                    self._move(step, d)
                    value, grad = self._loss_and_grad(closure)
                    self._restore_params(start)
                    return _number(value), grad

                loss, flat_grad, t, step_evaluations = strong_wolfe(
                    evaluate, t, d, loss, flat_grad, gtd, max_ls=max_eval - evaluations,
                )
                self._move(t, d)
                optimal = abs(flat_grad).max() <= tolerance_grad
            else:
                self._move(t, d)
                if iteration != max_iter:  # the last iteration's loss is left to the next step
                    value, flat_grad = self._loss_and_grad(closure)
                    loss = _number(value)
                    optimal = abs(flat_grad).max() <= tolerance_grad
                    step_evaluations = 1
            evaluations += step_evaluations
            state["func_evals"] += step_evaluations
            if (iteration == max_iter or evaluations >= max_eval or optimal
                    or abs(d * t).max() <= tolerance_change or abs(loss - prev_loss) < tolerance_change):
                break

        device = self._params[0]._device
        saved.update(d=d, t=t, old_dirs=old_dirs, old_stps=old_stps, ro=ro, H_diag=h_diag,
                     prev_flat_grad=prev_flat_grad)
        for key in _ARRAY_KEYS:
            if key in saved:
                state[key] = _tensors(saved[key], device)
        state["prev_loss"] = prev_loss
        return orig_loss


def _number(loss: Any) -> float:
    """The closure's loss as a Python float (detached first: a step reads it as a number, not for a graph)."""
    return float(loss.detach() if isinstance(loss, Tensor) else loss)


def _arrays(value: Any) -> Any:
    """A state entry's arrays: a Tensor's array, a list of them, or the value itself (a number, None)."""
    if isinstance(value, list):
        return [_arrays(v) for v in value]
    return value._data if isinstance(value, Tensor) else value


def _tensors(value: Any, device: Any) -> Any:
    """The inverse of `_arrays`: arrays and array scalars wrapped as Tensors (0-d ones for scalars); Python numbers
    and None stay as they are, as PyTorch keeps `t` and `H_diag` where they are plain numbers."""
    if isinstance(value, list):
        return [_tensors(v, device) for v in value]
    if not hasattr(value, "shape"):
        return value
    return Tensor(device.asarray(value), device=device)
