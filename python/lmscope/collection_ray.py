"""Shards on a Ray cluster: lmscope.collect(..., ray="auto" | ADDRESS), lmscope-collect --ray,
and the sweeps over a dataset (sweep.py, lmscope-sweep --ray): the same shards as local worker
processes (collection_pool.py), computed by Ray actors (docs/collect.md, "Ray").

Each actor holds one worker, built once by factory(*args) (for a collection a ShardWorker: one
lmscope.Model, loaded once) and asks Ray for `threads` CPUs, which are its OpenMP threads. A
shard is the unit of work: an actor gets its next shard as soon as it returns one (before this
process fetches that one), and this process records each result (for a collection: the one
atomic writer, then the manifest), so the workers need no access to the output. When an actor
dies (its process killed, its node lost), its shards go back to the front of the queue for
another actor and a new actor is started in its place; a shard is recorded only when it has
come back whole, so nothing is lost and nothing is recorded twice. Ray is an optional extra of the package: pip install './python[ray]'.
"""
import os
import socket
import time
from collections import deque

from .collection_pool import WorkerDied

CONNECT_TIMEOUT_S = 10   # an address that does not answer within this is refused
MAX_RETRIES = 3          # a shard whose actor died this many times ends the run
HEAD_CHECK_S = 2         # while no shard comes back, the head is asked this often whether it is there


class RayWorker:
    """The actor: one worker, one shard at a time."""

    def __init__(self, factory, args):
        self.worker = factory(*args)

    def run(self, index, payload):
        return self.worker.run(index, payload)

    def pid(self) -> int:
        return os.getpid()


def connect(address: str):
    """ray, connected to `address` ("auto": the cluster this machine is in, as `ray start`
    left it, or RAY_ADDRESS; "host:port": that head). ValueError in one line when ray is
    missing or the address does not answer within CONNECT_TIMEOUT_S."""
    try:
        import ray
    except ImportError:
        raise ValueError("--ray needs the ray package: pip install './python[ray]'") from None
    if ray.is_initialized():
        return ray, False
    if address != "auto" and not address.startswith("ray://"):
        check_answers(address)
    # The workers import this very package: from the folder it was imported from.
    package_root = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    path = os.pathsep.join(filter(None, [package_root, os.environ.get("PYTHONPATH")]))
    try:
        ray.init(address=address, runtime_env={"env_vars": {"PYTHONPATH": path}}, log_to_driver=False,
                 logging_level="ERROR")
    except (ConnectionError, RuntimeError) as e:
        raise ValueError("cannot connect to the Ray cluster '%s': %s" % (address, str(e).splitlines()[0])) from None
    return ray, True


# HTTP/2's client connection preface and an empty SETTINGS frame (RFC 9113, 3.4 and 6.5).
_HTTP2_HELLO = b"PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n" + bytes([0, 0, 0, 4, 0, 0, 0, 0, 0])


def check_answers(address: str, timeout: float = CONNECT_TIMEOUT_S) -> None:
    """ValueError in one line unless `address` ("host:port") answers as a Ray head within
    `timeout` seconds. The head's GCS is a gRPC server, which answers a client's HTTP/2 preface
    with a SETTINGS frame (type 4, the frame header's fourth byte). A closed port is refused at
    once; a port that accepts and never speaks would hang ray.init for minutes."""
    host, _, port = address.rpartition(":")
    deadline = time.monotonic() + timeout
    head = b""
    try:
        with socket.create_connection((host or "127.0.0.1", int(port)), timeout=timeout) as s:
            s.sendall(_HTTP2_HELLO)
            while len(head) < 4:
                s.settimeout(max(0.01, deadline - time.monotonic()))
                got = s.recv(64)
                if not got:
                    break
                head += got
    except socket.timeout:
        raise ValueError("the Ray address '%s' does not answer within %g s (it accepts and stays silent)"
                         % (address, timeout)) from None
    except (OSError, ValueError) as e:
        raise ValueError("the Ray address '%s' does not answer within %g s (%s)" % (address, timeout, e)) from None
    if len(head) < 4 or head[3] != 4:
        raise ValueError("the Ray address '%s' answers, but not as a Ray head (no gRPC server there)" % address)


def run_on_ray(address, factory, args, tasks, workers, threads, record) -> int:
    """RayPool(...).run(tasks, record), then the pool closed: see RayPool."""
    with RayPool(address, factory, args, workers, threads) as pool:
        return pool.run(tasks, record)


class RayPool:
    """`workers` actors of `threads` CPUs each, each holding factory(*args). They start (a
    worker process each, and factory's model load) as soon as the pool is made, so a caller
    that makes it before its own preparation (lmscope.collect: before the corpus scan) has
    them ready when the shards come. Close it (a with block) to kill them."""

    def __init__(self, address, factory, args, workers, threads):
        self.ray, self.started = connect(address)
        self.address, self.lost = address, False
        remote = self.ray.remote(num_cpus=threads, max_restarts=0,
                                 runtime_env={"env_vars": {"OMP_NUM_THREADS": str(threads)}})(RayWorker)
        self.spawn = lambda: remote.remote(factory, args)
        # The head's address as this driver reaches it (through Ray Client, ray://, it may not).
        self.gcs = None if address.startswith("ray://") else self.ray.get_runtime_context().gcs_address
        self.queued = {self.spawn(): 0 for _ in range(workers)}    # live actor -> its shards not yet returned

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()

    def close(self) -> None:
        if self.lost:            # a cluster that is gone has no actors to kill, and no one to say goodbye to
            return
        for actor in self.queued:
            self.ray.kill(actor)
        self.queued = {}
        if self.started:
            self.ray.shutdown()
            self.started = False

    def run(self, tasks, record) -> int:
        """Runs the shards of `tasks` ((index, payload) pairs, streamed); record(result, entry)
        is called for each finished shard, in this process. An actor gets its next shard as
        soon as one comes back, before this process fetches and records that one, so it never
        waits for this process; and only then, so a fast actor takes more shards than a slow
        one. At most two shards per actor are held here (as the local pool holds). Returns how
        many times a shard was given to another actor because the one running it died.
        WorkerDied (one line) when a shard's actor died MAX_RETRIES + 1 times or the cluster
        stopped answering; what was recorded stays recorded."""
        ray, queued = self.ray, self.queued
        running, queue, retries = {}, deque(), {}
        source = iter(tasks)

        def give(actor) -> None:
            task = queue.popleft() if queue else next(source, None)
            if task is not None:
                running[actor.run.remote(*task)] = (actor, task)
                queued[actor] += 1

        try:
            while True:
                for actor in [a for a, n in queued.items() if n == 0]:     # at the start, and a new actor
                    give(actor)
                if not running:
                    break
                ready, _ = ray.wait(list(running), num_returns=1, timeout=HEAD_CHECK_S)
                if not ready:
                    # Nothing back for a while: is the head still there? Without it ray.wait would
                    # wait on, until Ray's own reconnect timeout (60 s) ends this process.
                    try:
                        if self.gcs:
                            check_answers(self.gcs, timeout=HEAD_CHECK_S)
                    except ValueError as e:
                        self.lost = True
                        raise WorkerDied("the Ray cluster '%s' stopped answering (%s)" % (self.address, e)) from None
                    continue
                actor, task = running.pop(ready[0])
                if actor in queued:
                    queued[actor] -= 1
                    give(actor)                 # its next shard first: it works while this one is fetched
                try:
                    result, entry = ray.get(ready[0])
                except ray.exceptions.RayActorError:
                    queue.appendleft(task)      # to another actor, first
                    if queued.pop(actor, None) is None:
                        continue                # queued on an actor already known dead: it never ran there
                    retries[task[0]] = retries.get(task[0], 0) + 1
                    if retries[task[0]] > MAX_RETRIES:
                        raise WorkerDied("shard %d: its Ray worker died %d times" % (task[0], MAX_RETRIES + 1)) from None
                    queued[self.spawn()] = 0    # and a new actor in the dead one's place
                    continue
                except ray.exceptions.RayTaskError as e:
                    raise (e.cause if isinstance(e.cause, ValueError) else ValueError(str(e).splitlines()[0])) from None
                record(result, entry)
            return sum(retries.values())
        except (OSError, ray.exceptions.RaySystemError) as e:
            # The head stopped (its GCS gone): the driver's channels to it break.
            self.lost = True
            raise WorkerDied("the Ray cluster '%s' stopped answering (%s)" % (self.address, _first_line(e))) from None


def _first_line(e) -> str:
    lines = str(e).strip().splitlines()
    return lines[0] if lines else type(e).__name__
