"""Throughput of `MemPrioritizedReplay` against a plain-Python prioritized replay.

Both memories run in the same process on the same records (Atari-like: an 84x84 uint8 frame,
an int action, a float reward, a bool terminal), batch size 64, capacity 100k (`--quick`: 2k
and a few rounds). The baseline stores records in a python list and keeps its sum and min
trees as python lists, updated and searched one item at a time in python loops; its
`get_records` stacks the sampled records into batch arrays so both return the same thing.
Reported: records per second for the first fill, inserts into the full memory, sampling and
priority updates, and the speed-up. Note that the baseline keeps references to rows of the
caller's batch arrays while `MemPrioritizedReplay` copies each record into its storage. Run:

    python -m benchmarks.prioritized_replay [--quick] [--out benchmarks/results/prioritized_replay.json]
"""
import argparse
import json
import os
import platform
import time

import numpy as np

from rlgraph.components.memories.mem_prioritized_replay import MemPrioritizedReplay
from rlgraph.spaces import BoolBox, Dict, FloatBox, IntBox

DEFAULT_OUT = os.path.join(os.path.dirname(os.path.abspath(__file__)), "results", "prioritized_replay.json")


class ListPrioritizedReplay:
    """The baseline: list storage, python-list sum/min trees walked item by item."""

    def __init__(self, capacity, alpha, beta, epsilon=1e-6, seed=0):
        self.capacity, self.alpha, self.beta, self.epsilon = capacity, alpha, beta, epsilon
        self.leaves = 1
        while self.leaves < capacity:
            self.leaves *= 2
        self.sums = [0.0] * (2 * self.leaves)
        self.mins = [float("inf")] * (2 * self.leaves)
        self.records = []
        self.index, self.max_priority = 0, 1.0
        self.rng = np.random.RandomState(seed)

    def _set(self, i, value):
        node = i + self.leaves
        self.sums[node] = self.mins[node] = value
        node //= 2
        while node >= 1:
            self.sums[node] = self.sums[2 * node] + self.sums[2 * node + 1]
            self.mins[node] = min(self.mins[2 * node], self.mins[2 * node + 1])
            node //= 2

    def _find(self, prefix):
        node = 1
        while node < self.leaves:
            if self.sums[2 * node] > prefix:
                node = 2 * node
            else:
                prefix -= self.sums[2 * node]
                node = 2 * node + 1
        return node - self.leaves

    def insert_records(self, records):
        keys = list(records)
        for row in range(len(records[keys[0]])):
            record = {k: records[k][row] for k in keys}
            if len(self.records) < self.capacity:
                self.records.append(record)
            else:
                self.records[self.index] = record
            self._set(self.index, self.max_priority ** self.alpha)
            self.index = (self.index + 1) % self.capacity

    def get_records(self, num_records):
        total, size = self.sums[1], len(self.records)
        segment = total / num_records
        indices = [min(self._find((i + self.rng.uniform()) * segment), size - 1) for i in range(num_records)]
        max_weight = (size * self.mins[1] / total) ** -self.beta
        weights = [(size * self.sums[i + self.leaves] / total) ** -self.beta / max_weight for i in indices]
        batch = {k: np.stack([self.records[i][k] for i in indices]) for k in self.records[0]}
        return batch, indices, np.array(weights, dtype=np.float32)

    def update_records(self, indices, priorities):
        for i, p in zip(indices, priorities):
            p = abs(float(p)) + self.epsilon
            self._set(int(i), p ** self.alpha)
            self.max_priority = max(self.max_priority, p)


def make_records(rng, n):
    return {"s": rng.randint(0, 256, size=(n, 84, 84), dtype=np.uint8), "a": rng.randint(0, 6, size=n).astype(np.int32),
            "r": rng.randn(n).astype(np.float32), "t": rng.rand(n) < 0.01}


def measure(memory, batches, batch_size, rounds, rng):
    """Fills the memory with `batches` (timed as "fill": first writes, incl. page faults), then times
    `rounds` inserts into the full memory ("insert", the steady state of training) and `rounds`
    sample + update rounds. Returns records/s of each."""
    start = time.perf_counter()
    for batch in batches:
        memory.insert_records(batch)
    fill_time = time.perf_counter() - start
    filled = sum(len(b["a"]) for b in batches)
    start = time.perf_counter()
    for i in range(rounds):
        memory.insert_records(batches[i % len(batches)])
    insert_time = time.perf_counter() - start
    priorities = [np.abs(rng.randn(batch_size)) for _ in range(rounds)]
    sample_time = update_time = 0.0
    for i in range(rounds):
        start = time.perf_counter()
        _, indices, _ = memory.get_records(batch_size)
        sample_time += time.perf_counter() - start
        start = time.perf_counter()
        memory.update_records(indices, priorities[i])
        update_time += time.perf_counter() - start
    done = rounds * batch_size
    return {"fill": filled / fill_time, "insert": done / insert_time, "sample": done / sample_time,
            "update": done / update_time}


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="tiny run (smoke test)")
    parser.add_argument("--capacity", type=int, default=None)
    parser.add_argument("--batch-size", type=int, default=64)
    parser.add_argument("--rounds", type=int, default=None, help="sample+update rounds")
    parser.add_argument("--out", default=DEFAULT_OUT, help="JSON results path")
    args = parser.parse_args(argv)
    capacity = args.capacity or (2_000 if args.quick else 100_000)
    rounds = args.rounds or (20 if args.quick else 500)
    batch_size = args.batch_size
    rng = np.random.RandomState(0)
    batches = [make_records(rng, batch_size) for _ in range(-(-capacity // batch_size))]
    space = Dict(s=IntBox(256, shape=(84, 84), dtype="uint8"), a=IntBox(6), r=FloatBox(), t=BoolBox())
    ours = measure(MemPrioritizedReplay(capacity, alpha=0.6, beta=0.4, record_space=space, seed=0),
                   batches, batch_size, rounds, np.random.RandomState(1))
    baseline = measure(ListPrioritizedReplay(capacity, alpha=0.6, beta=0.4, seed=0), batches, batch_size, rounds,
                       np.random.RandomState(1))
    print(f"Prioritized replay, capacity {capacity}, batch {batch_size}, {rounds} sample+update rounds (records/s)")
    print(f"{'operation':<10}{'MemPrioritizedReplay':>22}{'list baseline':>16}{'ratio':>9}")
    for op in ("fill", "insert", "sample", "update"):
        print(f"{op:<10}{ours[op]:>22,.0f}{baseline[op]:>16,.0f}{ours[op] / baseline[op]:>8.1f}x")
    result = {"capacity": capacity, "batch_size": batch_size, "rounds": rounds, "quick": args.quick,
              "python": platform.python_version(), "numpy": np.__version__, "machine": platform.machine(),
              "records_per_s": {"mem_prioritized_replay": ours, "list_baseline": baseline},
              "ratio": {op: ours[op] / baseline[op] for op in ours}}
    os.makedirs(os.path.dirname(os.path.abspath(args.out)), exist_ok=True)
    with open(args.out, "w") as handle:
        json.dump(result, handle, indent=2)
    print(f"wrote {args.out}")
    return result


if __name__ == "__main__":
    main()
