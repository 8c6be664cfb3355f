"""95% intervals for the report's proportions, honest at every size (checked by ``bench/interval_coverage.py``).

- A proportion over independent units (cited URLs, sources, responses): the Clopper–Pearson exact interval
  (Clopper & Pearson 1934, Biometrika 26:404). Its coverage is at least 95% at every n and rate; the Wilson
  interval dips to 85% near 0 or 100% (n = 8, rate 2%) and 88% at n = 4.
- A proportion over statements, which are grouped by response (claims of one answer are correlated): the
  Korn–Graubard interval (Korn & Graubard 1998, Survey Methodology 24:193, as NCHS uses it for survey
  proportions): Clopper–Pearson on the effective sample size n_eff = n / deff · (z / t_{m-1})², where the
  design effect deff is the cluster-robust (CR1) variance of k/n over the binomial one, at least 1, and the
  t quantile carries the uncertainty of estimating it from few responses: Satterthwaite's degrees of freedom
  for that variance (:func:`degrees_of_freedom`), at most m - 1 for m responses. When every statement agrees
  (k = 0 or k = n) the design effect cannot be estimated and is taken as 1, as Korn and Graubard do (the t
  factor still widens the interval for few responses); a single response counts as one observation (n_eff = 1).
- A mean (an answer's similarity to the expert's answer, per model): Student's t interval (:func:`mean_interval`).
- A Spearman rank correlation (similarity against graders' grades): Fisher's z with the Bonett–Wright standard
  error (:func:`spearman_interval`).
"""
from __future__ import annotations

import math
from typing import Sequence

Z95 = 1.959963984540054   # the normal quantile of a two-sided 95% interval
ALPHA = 0.05


def wilson_interval(k: int, n: int, z: float = Z95) -> tuple[float, float]:
    """The Wilson score interval of k successes in n trials: never zero width for n > 0."""
    if n <= 0:
        raise ValueError("a Wilson interval needs n > 0")
    p = k / n
    denom = 1 + z * z / n
    centre = (p + z * z / (2 * n)) / denom
    half = z * math.sqrt(max(p * (1 - p) / n + z * z / (4 * n * n), 0.0)) / denom
    return max(0.0, centre - half), min(1.0, centre + half)


def clopper_pearson(k: float, n: float, alpha: float = ALPHA) -> tuple[float, float]:
    """The Clopper–Pearson (exact binomial) interval of k successes in n trials; k and n may be effective
    (non-integer) counts, as the Korn–Graubard interval passes them. Never zero width for n > 0."""
    if n <= 0:
        raise ValueError("a Clopper-Pearson interval needs n > 0")
    from scipy.special import betaincinv  # imported when first needed: it takes a second to load

    k = min(max(k, 0.0), n)
    lo = 0.0 if k <= 0 else float(betaincinv(k, n - k + 1, alpha / 2))
    hi = 1.0 if k >= n else float(betaincinv(k + 1, n - k, 1 - alpha / 2))
    return lo, hi


def design_effect(ks: Sequence[float], ns: Sequence[float]) -> float | None:
    """The cluster-robust (CR1) variance of sum(k)/sum(n) over the binomial variance, at least 1; None when it
    cannot be estimated (one response, or every statement alike)."""
    m = len(ns)
    n, k = float(sum(ns)), float(sum(ks))
    if m < 2 or n <= 0 or k <= 0 or k >= n:
        return None
    p = k / n
    robust = m / (m - 1) * sum((ki - p * ni) ** 2 for ki, ni in zip(ks, ns)) / (n * n)
    return max(1.0, robust / (p * (1 - p) / n))


def degrees_of_freedom(ks: Sequence[float], ns: Sequence[float]) -> float:
    """The degrees of freedom of the cluster-robust variance: Satterthwaite's (1946) effective number of terms
    in the sum of squared response residuals, 3 (sum r^2)^2 / sum r^4 (the fourth moment taken as r^4 / 3, its
    normal value), at most responses - 1 and at least 1. When a few responses hold every rare outcome it falls
    towards their number: those few responses are all the run can show about how claims cluster."""
    m = len(ns)
    n, k = float(sum(ns)), float(sum(ks))
    if m < 2 or n <= 0:
        return 1.0
    p = k / n
    r2 = [(ki - p * ni) ** 2 for ki, ni in zip(ks, ns)]
    s2, s4 = sum(r2), sum(x * x for x in r2)
    if s4 <= 0:
        return float(m - 1)
    return min(float(m - 1), max(1.0, 3 * s2 * s2 / s4))


def korn_graubard(ks: Sequence[float], ns: Sequence[float],
                  alpha: float = ALPHA) -> tuple[float, float, float, float | None]:
    """The Korn–Graubard 95% interval of sum(k)/sum(n) over responses (clusters) with ks[i] of ns[i] statements
    supported: (low, high, effective sample size, design effect or None when it could not be estimated)."""
    from scipy.special import stdtrit

    m = len(ns)
    n, k = float(sum(ns)), float(sum(ks))
    if n <= 0:
        raise ValueError("an interval needs at least one statement")
    z = Z95 if alpha == ALPHA else float(stdtrit(1e9, 1 - alpha / 2))
    if m < 2:
        n_eff = 1.0          # one response: its statements stand or fall together as far as the data can show
        deff = None
    else:
        deff = design_effect(ks, ns)
        t = float(stdtrit(degrees_of_freedom(ks, ns), 1 - alpha / 2))
        # the design effect is at most its value at intraclass correlation 1, sum(n_i^2) / n: the responses
        # themselves are then the units, however noisy the estimate from few responses
        floor = n * n / sum(float(x) * float(x) for x in ns)
        n_eff = min(n, max(floor, n / (deff or 1.0) * (z / t) ** 2))
    lo, hi = clopper_pearson(k / n * n_eff, n_eff, alpha)
    return lo, hi, n_eff, deff


def mean_interval(values: Sequence[float], alpha: float = ALPHA) -> tuple[float | None, float | None]:
    """The t interval of a mean (Student 1908): mean ± t_{n-1} · s / √n; (None, None) under two values."""
    from scipy.special import stdtrit

    n = len(values)
    if n < 2:
        return None, None
    mean = sum(values) / n
    sd = math.sqrt(sum((v - mean) ** 2 for v in values) / (n - 1))
    half = float(stdtrit(n - 1, 1 - alpha / 2)) * sd / math.sqrt(n)
    return mean - half, mean + half


def spearman_interval(rho: float, n: int, alpha: float = ALPHA) -> tuple[float | None, float | None]:
    """The interval of a Spearman rank correlation: Fisher's z = atanh(rho) with the standard error of Bonett
    & Wright (2000, Psychometrika 65:23), √((1 + rho²/2) / (n − 3)); (None, None) under four pairs."""
    if n < 4 or not math.isfinite(rho):
        return None, None
    from scipy.special import ndtri

    z = Z95 if alpha == ALPHA else float(ndtri(1 - alpha / 2))
    r = max(-0.999999, min(0.999999, rho))
    se = math.sqrt((1 + r * r / 2) / (n - 3))
    centre = math.atanh(r)
    return math.tanh(centre - z * se), math.tanh(centre + z * se)
