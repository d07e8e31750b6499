"""stalls.py: what the benchmark calls a stall, decided in one place.

Every child run of a scenario has one bound, the run's watchdog (params
"watchdog_s", the same value for every scenario): past it the run is killed.
A stall is either such a killed run, or a run that finished but took more than
FACTOR times the median wall time of its peers, the other runs of the same
contender in the same cell (same scenario, same parameters). Both are reported
with their time: a stock run that waits 181 s for a server's idle timeout among
runs of 3 s is a stall even when the watchdog allows 900 s.

A run with no finished peer (one repetition per cell) can only be a stall by
the watchdog. Killed runs are not peers: their wall time is the watchdog's, not
the run's.

Pure standard library: imported by the scenario modules, bench/run.py and the
tests (tests/integration/test_bench_honest.py); never by the renderer, which
only reads what this module wrote into the results.
"""

import statistics

FACTOR = 2.0


def mark(runs, wall="wall_s", killed="killed"):
    """Decide, for the runs of one contender in one cell (dicts holding the wall
    time under `wall` and the watchdog's verdict under `killed`), which are
    stalls. Sets run["stall"] on every run: None, or {"how": "watchdog" | "slow",
    "wall_s": the run's time, "peers_median_s": the median it was held to (None
    for a killed run)}. Returns the summary for the cell: {"stalls": count,
    "stall_walls_s": the stalled runs' times, in run order}."""
    for i, run in enumerate(runs):
        peers = [r[wall] for j, r in enumerate(runs)
                 if j != i and not r.get(killed) and r.get(wall) is not None]
        ref = statistics.median(peers) if peers else None
        if run.get(killed):
            run["stall"] = {"how": "watchdog", "wall_s": run[wall], "peers_median_s": ref}
        elif ref is not None and run.get(wall) is not None and run[wall] > FACTOR * ref:
            run["stall"] = {"how": "slow", "wall_s": run[wall], "peers_median_s": ref}
        else:
            run["stall"] = None
    stalled = [r["stall"]["wall_s"] for r in runs if r["stall"]]
    return {"stalls": len(stalled), "stall_walls_s": [round(w, 1) for w in stalled]}


def rule(watchdog_s):
    """The rule as the results file records it (and the page words it)."""
    return {"watchdog_s": watchdog_s, "factor": FACTOR}
