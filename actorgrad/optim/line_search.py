"""The strong Wolfe line search LBFGS runs with `line_search_fn='strong_wolfe'`: PyTorch's, after minFunc's
(Nocedal and Wright, Numerical Optimization, algorithms 3.5 and 3.6), on flat arrays.

A step t along direction d is accepted when the loss fell enough (f(t) <= f + c1 t g.d, Armijo) and the slope
flattened enough (|g(t).d| <= -c2 g.d, curvature). The search first widens t until a bracket holds such a step,
then narrows the bracket by cubic interpolation.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

# evaluate(t) -> (loss, flat gradient) at x + t d, the parameters left at x afterwards.
Evaluate = Callable[[Any], tuple[float, Any]]


def cubic_minimum(x1: Any, f1: Any, g1: Any, x2: Any, f2: Any, g2: Any, bounds: tuple[Any, Any] | None = None) -> Any:
    """The minimiser of the cubic through (x1, f1) and (x2, f2) with slopes g1 and g2, kept within `bounds` (by
    default the interval between x1 and x2); the interval's middle where the cubic has no minimum."""
    low, high = bounds if bounds is not None else ((x1, x2) if x1 <= x2 else (x2, x1))
    d1 = g1 + g2 - 3 * (f1 - f2) / (x1 - x2)
    d2_square = d1**2 - g1 * g2
    if not d2_square >= 0:
        return (low + high) / 2.0
    d2 = d2_square**0.5
    if x1 <= x2:
        at = x2 - (x2 - x1) * ((g2 + d2 - d1) / (g2 - g1 + 2 * d2))
    else:
        at = x1 - (x1 - x2) * ((g1 + d2 - d1) / (g1 - g2 + 2 * d2))
    return min(max(at, low), high)


class _Point:
    """A step length tried, with its loss, gradient and slope along the direction."""

    __slots__ = ("t", "f", "g", "gtd")

    def __init__(self, t: Any, f: Any, g: Any, gtd: Any) -> None:
        self.t, self.f, self.g, self.gtd = t, f, g, gtd


def strong_wolfe(
    evaluate: Evaluate, t: Any, d: Any, f: float, g: Any, gtd: Any, c1: float = 1e-4, c2: float = 0.9,
    tolerance_change: float = 1e-9, max_ls: int = 25,
) -> tuple[float, Any, Any, int]:
    """Search along `d` from the point with loss `f`, gradient `g` and slope `gtd`, starting at step `t`;
    returns the loss, gradient and step chosen and how many evaluations it took."""
    d_norm = abs(d).max()
    start = _Point(0, f, g.copy(), gtd)
    f_new, g_new = evaluate(t)
    evaluations = 1
    new = _Point(t, f_new, g_new, g_new.dot(d))
    prev = start
    done = False
    tries = 0
    bracket: list[_Point] = []
    # Widen: step on until the loss rises or the slope turns, which brackets an acceptable step.
    while tries < max_ls:
        if new.f > f + c1 * new.t * gtd or (tries > 1 and new.f >= prev.f):
            bracket = [prev, _Point(new.t, new.f, new.g.copy(), new.gtd)]
            break
        if abs(new.gtd) <= -c2 * gtd:
            bracket, done = [new], True
            break
        if new.gtd >= 0:
            bracket = [prev, _Point(new.t, new.f, new.g.copy(), new.gtd)]
            break
        next_t = cubic_minimum(prev.t, prev.f, prev.gtd, new.t, new.f, new.gtd,
                               bounds=(new.t + 0.01 * (new.t - prev.t), new.t * 10))
        prev = _Point(new.t, new.f, new.g.copy(), new.gtd)
        f_new, g_new = evaluate(next_t)
        evaluations += 1
        new = _Point(next_t, f_new, g_new, g_new.dot(d))
        tries += 1
    if tries == max_ls:
        bracket = [_Point(0, f, g, start.gtd), _Point(new.t, new.f, new.g, new.gtd)]
    if done:
        return bracket[0].f, bracket[0].g, bracket[0].t, evaluations
    # Zoom: shrink the bracket around the acceptable step.
    insufficient_progress = False
    low, high = (0, 1) if bracket[0].f <= bracket[-1].f else (1, 0)
    while not done and tries < max_ls:
        ends = (bracket[0].t, bracket[1].t)
        if abs(ends[1] - ends[0]) * d_norm < tolerance_change:
            break
        t = cubic_minimum(bracket[0].t, bracket[0].f, bracket[0].gtd, bracket[1].t, bracket[1].f, bracket[1].gtd)
        # A step too near an end of the bracket makes little progress: move it into the bracket, the second time
        # in a row (or at once if it fell outside).
        top, bottom = max(ends), min(ends)
        eps = 0.1 * (top - bottom)
        if min(top - t, t - bottom) < eps:
            if insufficient_progress or t >= top or t <= bottom:
                t = top - eps if abs(t - top) < abs(t - bottom) else bottom + eps
                insufficient_progress = False
            else:
                insufficient_progress = True
        else:
            insufficient_progress = False
        f_new, g_new = evaluate(t)
        evaluations += 1
        tries += 1
        point = _Point(t, f_new, g_new.copy(), g_new.dot(d))
        if point.f > f + c1 * t * gtd or point.f >= bracket[low].f:
            bracket[high] = point
            low, high = (0, 1) if bracket[0].f <= bracket[1].f else (1, 0)
        else:
            if abs(point.gtd) <= -c2 * gtd:
                done = True
            elif point.gtd * (bracket[high].t - bracket[low].t) >= 0:
                bracket[high] = bracket[low]
            bracket[low] = point
    best = bracket[low]
    return best.f, best.g, best.t, evaluations
