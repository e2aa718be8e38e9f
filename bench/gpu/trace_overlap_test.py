#!/usr/bin/env python3
"""trace_overlap_test.py: bench/gpu/trace_overlap.py on traces made by hand,
whose overlap is worked out below, for each of its three sources (a CPU
trace; a CUDA trace without the communicator's own spans; one with them).
Exit status 0 when every number is as worked out, 1 otherwise."""
import json
import os
import subprocess
import sys
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))


def X(events, name, cat, ts, dur, tid=0, pid=0):
    events.append({"name": name, "cat": cat, "ph": "X", "ts": ts, "dur": dur,
                   "pid": pid, "tid": tid})


def host_events():
    """One step of one rank, as the host records it (microseconds)."""
    e = []
    X(e, "F0.s0", "forward", 0, 1)
    X(e, "B0.s0", "backward", 2, 1)
    X(e, "allreduce b0", "allreduce", 4, 0.5)
    X(e, "B1.s0", "backward", 5, 1)
    X(e, "recv r1 t3", "recv", 6, 1)
    X(e, "allreduce.wait b0", "allreduce", 7, 1)
    X(e, "optimizer", "optimizer", 100, 10)
    return e


def analyse(events):
    with tempfile.NamedTemporaryFile("w", suffix=".json", delete=False) as f:
        json.dump({"traceEvents": events}, f)
        path = f.name
    try:
        out = subprocess.run(
            [sys.executable, os.path.join(HERE, "trace_overlap.py"), path,
             "--warmup", "0"], capture_output=True, text=True, check=True).stdout
    finally:
        os.unlink(path)
    last = [l for l in out.splitlines() if l.startswith("TRACE overlap=")][-1]
    return dict(kv.split("=", 1) for kv in last.split()[1:])


def main():
    failures = 0

    def expect(what, got, key, want):
        nonlocal failures
        value = got[key]
        ok = value == want if isinstance(want, str) else abs(float(value) - want) < 1e-9
        print(f"{'ok  ' if ok else 'FAIL'} {what}: {key}={value} (expected {want})")
        failures += not ok

    # CPU: the host's own intervals. The all-reduce runs from its start (4)
    # to the end of its wait (8); backward B1 covers 5..6 of it: 1 of 4.
    cpu = analyse(host_events())
    expect("cpu", cpu, "source", "host")
    expect("cpu", cpu, "overlap", 0.25)
    expect("cpu", cpu, "allreduce_ms_per_step", 0.004)
    expect("cpu", cpu, "p2p_ms_per_step", 0.001)

    # CUDA, stage spans only: the device ran F0 10..30, B0 30..50, B1
    # 50..90. The bucket was started after B0 was issued, so it starts on
    # the device at B0's end (50), and is bounded by the optimizer's start
    # (100): 50 of it, 40 covered by B1.
    cuda = host_events()
    X(cuda, "F0.s0", "device", 10, 20, tid=1)
    X(cuda, "B0.s0", "device", 30, 20, tid=1)
    X(cuda, "B1.s0", "device", 50, 40, tid=1)
    bound = analyse(cuda)
    expect("cuda host-bound", bound, "source", "host-bound")
    expect("cuda host-bound", bound, "overlap", 0.8)
    expect("cuda host-bound", bound, "exposed_ms_per_step", 0.01)

    # CUDA with the communicator's own device spans, on the streams' rows
    # (tid 2: point-to-point, tid 3: all-reduce): all-reduce 55..95 (5 of
    # it after B1); a batch of a receive and a send, which share the
    # batch's span of 3 (counted once).
    X(cuda, "allreduce b0", "allreduce", 55, 40, tid=3)
    X(cuda, "recv r1 t3", "recv", 5, 3, tid=2)
    X(cuda, "send r1 t4", "send", 5, 3, tid=2)
    device = analyse(cuda)
    expect("cuda device", device, "source", "device")
    expect("cuda device", device, "overlap", 0.875)
    expect("cuda device", device, "p2p_ms_per_step", 0.003)
    expect("cuda device", device, "p2p_ops_per_step", 2.0)

    print(f"trace_overlap_test: {failures} failure(s)")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
