"""The regression gate: perf bounds (``bounds``); the baseline store (``baseline``, the names of
its parts: ``entries``, ``merge``, ``file_format``, ``entry_schema``, ``safe_read``,
``file_update``, ``store``, ``listing``); the fingerprint fields compared (``fields``); statistics of one measurement (``stats``, on
``distributions``); the sequential decision of one comparison (``sequential``), the error control
of a session's family of comparisons (``family``), verdicts (``checks``) and one session's
bookkeeping (``session``). Nothing here imports pytest."""
