"""Coverage of the report's 95% intervals on simulated clustered runs (issue 25, item 5).

Each cell simulates ``--sims`` runs of R responses (2, 5, 10, 30, 100), each response making 1-10 claims
(uniform) and citing 1-5 URLs; a response's claims are supported with a rate drawn per response from a beta
distribution with mean p (0.02, 0.5, 0.98) and intraclass correlation rho (none 0, moderate 0.2, strong 0.5):
the beta-binomial model of claims that stand or fall together. Every interval comes from the project's own
functions (``MetricsTally`` through ``metrics.clustered_counts`` and ``metrics.proportion_of``), and the
bench prints, per figure and cell, how often the interval holds the true value and its mean width:

- statement-level support (claims clustered by response; true value p);
- response-level support (a response is supported when all its claims are; true value E[p_i^n_i], exact);
- URL validity (each cited URL readable with probability p; independent units).

Target: coverage >= 0.93 in every cell. Run: ``python bench/interval_coverage.py`` (about 40 s of CPU on one
core at the default 5,000 simulations per cell; the coverage's own standard error is then about 0.003).
"""
from __future__ import annotations

import argparse
import math
import sys
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from sourcecheckup.metrics import clustered_counts, proportion_of  # noqa: E402

RESPONSES = (2, 5, 10, 30, 100)
RATES = (0.02, 0.5, 0.98)
CORRELATIONS = (("none", 0.0), ("moderate", 0.2), ("strong", 0.5))
CLAIMS = (1, 10)          # claims per response, uniform, inclusive
URLS = (1, 5)             # cited URLs per response
TARGET = 0.93


def response_truth(rate: float, rho: float) -> float:
    """P(every claim of a response supported) = E[p^n] over n ~ U{1..10} and p ~ Beta: exact."""
    total = 0.0
    for n in range(CLAIMS[0], CLAIMS[1] + 1):
        if rho == 0:
            total += rate ** n
        else:
            a, b = rate * (1 - rho) / rho, (1 - rate) * (1 - rho) / rho
            total += math.prod((a + j) / (a + b + j) for j in range(n))
    return total / (CLAIMS[1] - CLAIMS[0] + 1)


def simulate(rng: np.random.Generator, responses: int, rate: float, rho: float) -> tuple[np.ndarray, np.ndarray, int, int]:
    ns = rng.integers(CLAIMS[0], CLAIMS[1] + 1, responses)
    if rho == 0:
        ps = np.full(responses, rate)
    else:
        ps = rng.beta(rate * (1 - rho) / rho, (1 - rate) * (1 - rho) / rho, responses)
    ks = rng.binomial(ns, ps)
    urls = int(rng.integers(URLS[0], URLS[1] + 1, responses).sum())
    return ks, ns, urls, int(rng.binomial(urls, rate))


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--sims", type=int, default=5000, help="simulated runs per cell (default 5000)")
    ap.add_argument("--seed", type=int, default=25)
    args = ap.parse_args(argv)
    rng = np.random.default_rng(args.seed)
    start = time.perf_counter()
    rows = []
    for responses in RESPONSES:
        for rate in RATES:
            for corr, rho in CORRELATIONS:
                truth = {"statement": rate, "response": response_truth(rate, rho), "url": rate}
                hits = dict.fromkeys(truth, 0)
                width = dict.fromkeys(truth, 0.0)
                for _ in range(args.sims):
                    ks, ns, urls, valid = simulate(rng, responses, rate, rho)
                    figures = {"statement": clustered_counts(ks.tolist(), ns.tolist()),
                               "response": proportion_of(int((ks == ns).sum()), responses),
                               "url": proportion_of(valid, urls)}
                    for key, m in figures.items():
                        lo, hi = m.ci95
                        hits[key] += lo <= truth[key] <= hi
                        width[key] += hi - lo
                for key in truth:
                    rows.append((key, responses, rate, corr, truth[key], hits[key] / args.sims,
                                 width[key] / args.sims))
    elapsed = time.perf_counter() - start
    print(f"95% interval coverage, {args.sims} simulated runs per cell, seed {args.seed} ({elapsed:.0f} s)")
    print(f"{'figure':<10} {'responses':>9} {'rate':>5} {'correlation':<11} {'true':>6} {'coverage':>8} "
          f"{'width':>6}  target")
    failed = []
    for key, responses, rate, corr, truth, cov, w in rows:
        ok = cov >= TARGET
        if not ok:
            failed.append((key, responses, rate, corr, cov))
        print(f"{key:<10} {responses:>9} {rate:>5} {corr:<11} {truth:>6.3f} {cov:>8.3f} {w:>6.3f}  "
              f"{'meets' if ok else 'BELOW'}")
    print(f"\n{len(rows) - len(failed)} of {len(rows)} cells meet coverage >= {TARGET}")
    for key, responses, rate, corr, cov in failed:
        print(f"  below target: {key} figure, {responses} responses, rate {rate}, {corr} correlation: {cov:.3f}")
    return 0 if not failed else 1


if __name__ == "__main__":
    sys.exit(main())
