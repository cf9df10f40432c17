"""The regression gate: perf bounds (``bounds``), the baseline store (``baseline``), statistics of
one measurement (``stats``), the sequential decision of one comparison (``sequential``), the
error control of a session's family of comparisons (``family``), verdicts (``compare``) and one
session's bookkeeping (``session``). Nothing here imports pytest."""
