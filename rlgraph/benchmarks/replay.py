"""Prioritized replay throughput: records per second of filling, inserting, sampling and updating.

The memories, all proportional prioritized replay (alpha 0.6, beta 0.4), in one process:

- `MemPrioritizedReplay` (numpy, outside the graph), as PyTorch agents and Ray actors use it;
- a plain-Python baseline: records in a python list, sum and min trees as python lists updated
  and searched one item at a time; its `get_records` stacks the sampled rows into batch arrays
  so that it returns what the others return. It keeps references to rows of the caller's batch
  arrays, while the other memories copy each record into their storage;
- the in-graph `PrioritizedReplay` component on each backend, built as the root of a
  `ComponentTest` and called through its executor (numpy in, numpy out, one call per batch).

Records: "atari" (an 84x84 uint8 frame, an int action, a float reward, a bool terminal; the
python memories only), "cartpole" (states float32 [4], an int action, a float reward, a bool
terminal, next_states float32 [4]; all memories) and "atari-stack" (states and next_states of 4
stacked 84x84 uint8 frames from one stream of random frames, episodes of 1-400 steps whose
first stack repeats the reset frame, as an Atari env gives them): the naive
`MemPrioritizedReplay` against `FrameReplay`, which stores each frame once; their bytes are
reported too. Each memory is first filled to capacity
("fill": first writes, page faults included), then gets `rounds` more batches ("insert": the
steady state of training) and `rounds` rounds of get_records(batch) + update_records ("sample",
"update"). Backend threads are set to 1. Run:

    python -m benchmarks.replay [--capacity 100000] [--batch-size 64] [--rounds 500] [--backends tf pytorch] [--quick]
"""
from __future__ import annotations

import time
from typing import Dict, List, Optional

import numpy as np

from rlgraph.benchmarks.common import format_table, make_parser, select_backends, single_thread, write_results

ALPHA, BETA = 0.6, 0.4
OPERATIONS = ("fill", "insert", "sample", "update")
RECORDS = ("atari", "cartpole", "atari-stack")
STACK = 4


class ListPrioritizedReplay:
    """The baseline: list storage, python-list sum/min trees walked item by item."""

    def __init__(self, capacity: int, alpha: float, beta: float, epsilon: float = 1e-6, seed: int = 0):
        self.capacity, self.alpha, self.beta, self.epsilon = capacity, alpha, beta, epsilon
        self.leaves = 1
        while self.leaves < capacity:
            self.leaves *= 2
        self.sums = [0.0] * (2 * self.leaves)
        self.mins = [float("inf")] * (2 * self.leaves)
        self.records: list = []
        self.index, self.max_priority = 0, 1.0
        self.rng = np.random.RandomState(seed)

    def _set(self, i: int, value: float) -> None:
        node = i + self.leaves
        self.sums[node] = self.mins[node] = value
        node //= 2
        while node >= 1:
            self.sums[node] = self.sums[2 * node] + self.sums[2 * node + 1]
            self.mins[node] = min(self.mins[2 * node], self.mins[2 * node + 1])
            node //= 2

    def _find(self, prefix: float) -> int:
        node = 1
        while node < self.leaves:
            if self.sums[2 * node] > prefix:
                node = 2 * node
            else:
                prefix -= self.sums[2 * node]
                node = 2 * node + 1
        return node - self.leaves

    def insert_records(self, records: dict) -> None:
        keys = list(records)
        for row in range(len(records[keys[0]])):
            record = {k: records[k][row] for k in keys}
            if len(self.records) < self.capacity:
                self.records.append(record)
            else:
                self.records[self.index] = record
            self._set(self.index, self.max_priority ** self.alpha)
            self.index = (self.index + 1) % self.capacity

    def get_records(self, num_records: int):
        total, size = self.sums[1], len(self.records)
        segment = total / num_records
        indices = [min(self._find((i + self.rng.uniform()) * segment), size - 1) for i in range(num_records)]
        max_weight = (size * self.mins[1] / total) ** -self.beta
        weights = [(size * self.sums[i + self.leaves] / total) ** -self.beta / max_weight for i in indices]
        batch = {k: np.stack([self.records[i][k] for i in indices]) for k in self.records[0]}
        return batch, indices, np.array(weights, dtype=np.float32)

    def update_records(self, indices, priorities) -> None:
        for i, p in zip(indices, priorities):
            p = abs(float(p)) + self.epsilon
            self._set(int(i), p ** self.alpha)
            self.max_priority = max(self.max_priority, p)


class GraphPrioritizedReplay:
    """The in-graph `PrioritizedReplay` on one backend, with the python memories' interface."""

    def __init__(self, capacity: int, record_space, backend: str, seed: int = 0):
        from rlgraph.components.memories.prioritized_replay import PrioritizedReplay
        from rlgraph.spaces import FloatBox, IntBox
        from rlgraph.tests import ComponentTest
        memory = PrioritizedReplay(capacity=capacity, alpha=ALPHA, beta=BETA)
        spaces = dict(records=record_space.with_batch_rank(), num_records=int,
                      indices=IntBox(capacity, add_batch_rank=True), update=FloatBox(add_batch_rank=True))
        test = ComponentTest(memory, input_spaces=spaces, backend=backend, seed=seed)
        self.build_time = test.build_stats["total_build_time"]
        self.execute = test.graph_executor.execute

    def warm_up(self, batch: dict) -> None:
        """One call of each API method (first calls pay one-time costs), then `clear`."""
        self.insert_records(batch)
        _, indices, _ = self.get_records(len(next(iter(batch.values()))))
        self.update_records(indices, np.ones(len(indices), np.float32))
        self.execute("clear")

    def insert_records(self, records: dict) -> None:
        self.execute(("insert_records", records))

    def get_records(self, num_records: int):
        return self.execute(("get_records", num_records))

    def update_records(self, indices, priorities) -> None:
        self.execute(("update_records", [indices, priorities]))


def record_space(kind: str):
    """The space of one record (no batch rank)."""
    from rlgraph.spaces import BoolBox, Dict, FloatBox, IntBox
    if kind == "atari-stack":
        stacked = IntBox(256, shape=(84, 84, STACK), dtype="uint8")
        return Dict(states=stacked, actions=IntBox(6), rewards=FloatBox(), terminals=BoolBox(), next_states=stacked)
    if kind == "atari":
        return Dict(s=IntBox(256, shape=(84, 84), dtype="uint8"), a=IntBox(6), r=FloatBox(), t=BoolBox())
    return Dict(states=FloatBox(shape=(4,)), actions=IntBox(2), rewards=FloatBox(), terminals=BoolBox(),
                next_states=FloatBox(shape=(4,)))


class FrameStream:
    """Consecutive stacked-frame transitions of one env: random 84x84 frames, episodes of 1-400
    steps, each starting with a stack of copies of its reset frame."""

    def __init__(self, rng: np.random.RandomState):
        self.rng = rng
        self.stack: List[np.ndarray] = []
        self.left = 0

    def _frame(self) -> np.ndarray:
        return self.rng.randint(0, 256, size=(84, 84), dtype=np.uint8)

    def batch(self, n: int) -> Dict[str, np.ndarray]:
        states, next_states, terminals = [], [], []
        for _ in range(n):
            if self.left == 0:
                self.stack, self.left = [self._frame()] * STACK, int(self.rng.randint(1, 401))
            states.append(np.stack(self.stack, axis=-1))
            self.stack = self.stack[1:] + [self._frame()]
            next_states.append(np.stack(self.stack, axis=-1))
            self.left -= 1
            terminals.append(self.left == 0)
        return {"states": np.stack(states), "actions": self.rng.randint(0, 6, size=n).astype(np.int32),
                "rewards": self.rng.randn(n).astype(np.float32), "terminals": np.array(terminals),
                "next_states": np.stack(next_states)}


def make_records(kind: str, rng: np.random.RandomState, n: int) -> Dict[str, np.ndarray]:
    """A batch of `n` random records of `kind` ("atari" or "cartpole"; "atari-stack": `FrameStream`)."""
    if kind == "atari":
        return {"s": rng.randint(0, 256, size=(n, 84, 84), dtype=np.uint8),
                "a": rng.randint(0, 6, size=n).astype(np.int32), "r": rng.randn(n).astype(np.float32),
                "t": rng.rand(n) < 0.01}
    return {"states": rng.randn(n, 4).astype(np.float32), "actions": rng.randint(0, 2, size=n).astype(np.int32),
            "rewards": np.ones(n, np.float32), "terminals": rng.rand(n) < 0.05,
            "next_states": rng.randn(n, 4).astype(np.float32)}


def measure(memory, batches: List[dict], batch_size: int, rounds: int, rng: np.random.RandomState) -> Dict[str, float]:
    """Records/s of "fill" (all `batches`), "insert" (`rounds` more), "sample" and "update" (`rounds` each)."""
    clock = time.perf_counter
    start = clock()
    for batch in batches:
        memory.insert_records(batch)
    fill_time = clock() - start
    filled = sum(len(next(iter(b.values()))) for b in batches)
    start = clock()
    for i in range(rounds):
        memory.insert_records(batches[i % len(batches)])
    insert_time = clock() - start
    priorities = [np.abs(rng.randn(batch_size)).astype(np.float32) for _ in range(rounds)]
    sample_time = update_time = 0.0
    for i in range(rounds):
        start = clock()
        _, indices, _ = memory.get_records(batch_size)
        sample_time += clock() - start
        indices = np.asarray(indices, np.int32)
        start = clock()
        memory.update_records(indices, priorities[i])
        update_time += clock() - start
    done = rounds * batch_size
    return {"fill": filled / fill_time, "insert": done / insert_time, "sample": done / sample_time,
            "update": done / update_time}


def main(argv: Optional[List[str]] = None) -> Dict:
    """Runs the benchmark; returns the results (also written as JSON)."""
    from rlgraph.components.memories.frame_replay import FrameReplay
    from rlgraph.components.memories.mem_prioritized_replay import MemPrioritizedReplay
    parser = make_parser("replay", __doc__.splitlines()[0])
    parser.add_argument("--capacity", type=int, help="memory capacity (default 100000, --quick 2000)")
    parser.add_argument("--batch-size", type=int, default=64, help="records per insert and per sample")
    parser.add_argument("--rounds", type=int, help="inserts and sample+update rounds after the fill "
                                                   "(default 500, --quick 20)")
    parser.add_argument("--backends", nargs="+", help="backends of the in-graph memory (default: those installed)")
    args = parser.parse_args(argv)
    capacity = args.capacity or (2_000 if args.quick else 100_000)
    rounds = args.rounds or (20 if args.quick else 500)
    batch_size = args.batch_size
    backends = select_backends(args.backends, "rlgraph benchmark replay (--backends)")
    rows = []
    for kind in RECORDS:
        rng = np.random.RandomState(0)
        stream = FrameStream(rng) if kind == "atari-stack" else None
        batches = [stream.batch(batch_size) if stream else make_records(kind, rng, batch_size)
                   for _ in range(-(-capacity // batch_size))]
        memories = [("MemPrioritizedReplay", "numpy", lambda: MemPrioritizedReplay(
                        capacity, alpha=ALPHA, beta=BETA, record_space=record_space(kind), seed=0))]
        if kind == "atari-stack":
            memories.append(("FrameReplay", "numpy", lambda: FrameReplay(
                capacity, alpha=ALPHA, beta=BETA, record_space=record_space(kind), seed=0, frame_stack=STACK)))
        else:
            memories.append(("list baseline", "python", lambda: ListPrioritizedReplay(capacity, ALPHA, BETA, seed=0)))
        if kind == "cartpole":
            memories += [("PrioritizedReplay", backend,
                          lambda backend=backend: GraphPrioritizedReplay(capacity, record_space(kind), backend))
                         for backend in backends]
        for name, backend, make in memories:
            if backend in ("tf", "pytorch"):
                single_thread(backend)
            memory = make()
            if hasattr(memory, "warm_up"):
                memory.warm_up(batches[0])
            figures = measure(memory, batches, batch_size, rounds, np.random.RandomState(1))
            if kind == "atari-stack":
                figures["bytes"] = int(memory.nbytes) if isinstance(memory, FrameReplay) else \
                    int(sum(array.nbytes for array in memory.storage.values()) + memory._tree_bytes())
            rows.append(dict(memory=name, backend=backend, record=kind, **figures))
            del memory
        del batches
    by_key = {(r["memory"], r["record"]): r for r in rows}
    ratio = {kind: {op: by_key["MemPrioritizedReplay", kind][op] / by_key["list baseline", kind][op]
                    for op in OPERATIONS} for kind in RECORDS if kind != "atari-stack"}
    frames = {op: by_key["FrameReplay", "atari-stack"][op] / by_key["MemPrioritizedReplay", "atari-stack"][op]
              for op in OPERATIONS + ("bytes",)}

    print(f"Prioritized replay, capacity {capacity}, batch {batch_size}, {rounds} inserts and sample+update rounds "
          f"after the fill (records/s)")
    print(format_table(["memory", "backend", "record"] + list(OPERATIONS),
                       [[r["memory"], r["backend"], r["record"]] + [r[op] for op in OPERATIONS] for r in rows]))
    print("MemPrioritizedReplay / list baseline:")
    print(format_table(["record"] + list(OPERATIONS),
                       [[kind] + [f"{ratio[kind][op]:.2f}x" for op in OPERATIONS] for kind in ratio]))
    print("FrameReplay / MemPrioritizedReplay on stacked frames (records/s, and bytes):")
    print(format_table(list(OPERATIONS) + ["bytes"], [[f"{frames[op]:.2f}x" for op in OPERATIONS + ("bytes",)]]))
    result = {"benchmark": "replay", "capacity": capacity, "batch_size": batch_size, "rounds": rounds,
              "alpha": ALPHA, "beta": BETA, "quick": args.quick, "records_per_s": rows, "ratio": ratio,
              "frame_replay_ratio": frames}
    path = write_results(result, args.out)
    if path:
        print(f"wrote {path}")
    return result


if __name__ == "__main__":
    main()
