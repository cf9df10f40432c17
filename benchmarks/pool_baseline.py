"""What a pool's workers do, with multiprocessing alone: the baseline of the pool's spin-up
benchmark (``test_bench_pool.py``). Each child opens the same fake engine, runs it for the
window and sends its latencies back; nothing else (no barriers, reaper, marks or logs).

``fast_exit``: the child ends with ``os._exit`` once its result is sent, as a pool worker does,
instead of tearing its interpreter down (which takes a plain multiprocessing child about as long
as its whole window here): the stricter baseline, where what is left between the two is the
pool's own work."""

import os
import time


def child(factory, options, window, conn, fast_exit=False):
    from fakes.pools import open_fake  # noqa: F401  (the import a pool worker does by name)

    from pytest_jetson.engines.backends import import_reference

    engine = import_reference(factory)("fake", **options)
    lat = []
    end = time.perf_counter() + window
    t = time.perf_counter()
    while t < end:
        engine.infer()
        now = time.perf_counter()
        lat.append(now - t)
        t = now
    conn.send(("result", lat))
    conn.close()
    if fast_exit:
        os._exit(0)


def run(processes, factory, options, window, fast_exit=False):
    """Spawn ``processes`` children, collect their results, join them: wall seconds."""
    import multiprocessing

    from pytest_jetson.run.pool_procs import _lean_main

    ctx = multiprocessing.get_context("spawn")
    t0 = time.perf_counter()
    procs = []
    for _ in range(processes):
        receiver, sender = ctx.Pipe(duplex=False)
        p = ctx.Process(target=child, args=(factory, options, window, sender, fast_exit),
                        daemon=True)
        with _lean_main():
            p.start()
        sender.close()
        procs.append((p, receiver))
    for p, receiver in procs:
        receiver.recv()
        p.join()
    return time.perf_counter() - t0
