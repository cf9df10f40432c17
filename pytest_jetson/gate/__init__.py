"""The regression gate: perf bounds (``bounds``), the baseline store (``baseline``), statistics
(``stats``), verdicts (``compare``), one session's bookkeeping (``session``) and the
``compare`` / ``show`` commands (``cli``). Nothing here imports pytest."""
