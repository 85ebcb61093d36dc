"""Shards on local worker processes: the pool behind lmscope.collect(..., workers=N) and the
sweeps over a dataset (sweep.py). Ray actors do the same in collection_ray.py.

A worker is built once per process by factory(*args) (a module-level function, so that it can
be named in the spawned process) and runs one shard at a time: worker.run(index, payload) ->
(result, entry). The results come back to this process, which records them (record(result,
entry)) in the order they finish; what a shard holds depends only on its payload, so the
caller's merge is the same whatever ran it.
"""
import concurrent.futures as futures
import ctypes
import multiprocessing
import os
import signal

_WORKER = None   # this worker process's worker


class WorkerDied(ValueError):
    """A local worker process ended without its result (the caller says what is kept)."""


# prctl(2), looked up once per process: between fork and exec a child (of a process that may
# run threads) makes this one C call and nothing else.
_PRCTL, _PR_SET_PDEATHSIG, _SIGKILL = ctypes.CDLL(None, use_errno=True).prctl, 1, int(signal.SIGKILL)


def die_with_parent():
    """This process dies (SIGKILL) when its parent does (PR_SET_PDEATHSIG): a worker of a killed
    run, and a tool of a killed worker (sweep.py), go on with no shard that nobody will record."""
    _PRCTL(_PR_SET_PDEATHSIG, _SIGKILL)


def _start(factory, args, parent):
    global _WORKER
    die_with_parent()
    if os.getppid() != parent:       # the parent died before the line above took effect
        os._exit(1)
    _WORKER = factory(*args)


def _run(index, payload):
    return _WORKER.run(index, payload)


def run_local(factory, args, tasks, workers, threads, record) -> None:
    """Runs the (index, payload) pairs of `tasks` (streamed) on `workers` processes of
    `threads` OpenMP threads each (default: the cores shared out), at most two shards in
    flight per worker so that memory stays bounded whatever the dataset. A worker that dies
    ends the run (WorkerDied, one line); what was recorded stays recorded."""
    threads = threads or max(1, (os.cpu_count() or 1) // workers)
    saved = os.environ.get("OMP_NUM_THREADS")
    os.environ["OMP_NUM_THREADS"] = str(threads)     # read by each worker's OpenMP at start
    try:
        pool = futures.ProcessPoolExecutor(workers, mp_context=multiprocessing.get_context("spawn"),
                                           initializer=_start, initargs=(factory, args, os.getpid()))
    finally:
        if saved is None:
            del os.environ["OMP_NUM_THREADS"]
        else:
            os.environ["OMP_NUM_THREADS"] = saved
    with pool:
        pending = set()
        for index, payload in tasks:
            pending.add(pool.submit(_run, index, payload))
            if len(pending) >= 2 * workers:
                pending = _drain(pending, record, futures.FIRST_COMPLETED)
        _drain(pending, record, futures.ALL_COMPLETED)


def _drain(pending, record, when):
    done, rest = futures.wait(pending, return_when=when)
    for f in done:
        try:
            result, entry = f.result()
        except futures.process.BrokenProcessPool:
            raise WorkerDied("a worker process died (killed, or out of memory)") from None
        record(result, entry)
    return rest
