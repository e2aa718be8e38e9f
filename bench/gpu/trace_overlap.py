#!/usr/bin/env python3
"""trace_overlap.py TRACE.json [--warmup W]

What a multi-rank run's Chrome trace (the executables' --trace) says about
its communication, per rank and over the steps after W warm-up steps:

  overlap      the DDP paper's measure of how much of the gradient
               all-reduce was hidden behind compute:
                   1 - exposed all-reduce time / all-reduce time
               where the all-reduce time is the union of the buckets'
               all-reduce intervals and the exposed part is what of it no
               forward or backward of the same rank covers;
  p2p per step the time the rank spent in point-to-point transfers, and
               their count (sends and receives);
  per bucket   the median duration of each bucket's all-reduce (for the
               bandwidth next to raw NCCL calls: bench/gpu/ranks-bench.sh).

The trace's rows (runtime/lib/train/Trace.h, TraceRow): tid 0 is the host
(stage calls "F3.s1", "B3.s1", "W3.s1" as forward/backward; "send rP tT",
"recv rP tT"; "allreduce bN" when a bucket's all-reduce is started and
"allreduce.wait bN" when it is waited for; "optimizer" ends each step);
the device rows (CUDA only) are measured with CUDA events on the host's
clock: tid 1 the compute stream's stage calls, tid 2 the NCCL sends and
receives ("send rP tT", "recv rP tT"; a batch's transfers run as one
NCCL launch, so each of them has the batch's span), tid 3 the NCCL
all-reduces ("allreduce bN": from when the all-reduce stream could start
it, its wait for the gradients met, to its end). Which intervals are
used, printed as `source`:
  device      the device rows have all-reduce spans (multi-rank CUDA runs
              since the communicator times its operations): those are
              the operations, so the overlap is measured, not bounded; p2p
              per step is the time the point-to-point stream spent in
              transfers (the union of their spans) and their count;
  host-bound  (CUDA traces without such spans, from before that) a
              bucket's all-reduce starts on the device no earlier than
              the host started it and no earlier
              than the end of the device span of the stage call issued just
              before (the one whose gradient completed the bucket: the
              all-reduce stream waits for its event), and has ended by the
              start of the step's optimizer span (the executor waits for
              the all-reduces and then for the compute stream before it;
              the host's "allreduce.wait" span is no bound when the wait
              is put on the device stream): an upper bound on its length,
              so the overlap printed is a lower bound. p2p per step is
              then the host's time in send/recv calls and waits, which says
              little where receives are waited for on the device;
  host        (CPU runs: no device row) the host intervals themselves.
Compute is the device row's stage spans where there is one, else the host's
forward/backward spans.

Prints one line per rank and a summary line:
    TRACE overlap=F allreduce_ms_per_step=A exposed_ms_per_step=E
          p2p_ms_per_step=P p2p_ops_per_step=M steps=S source=...
    TRACEBUCKET bucket=bN rank=R us=MEDIAN count=C
Exit status 0; 2 on an unreadable trace or one without steps.
"""
import argparse
import json
import re
import statistics
import sys

STAGE = re.compile(r"^[FBW]\d+\.s\d+$")


def union(intervals):
    out = []
    for s, e in sorted(intervals):
        if e <= s:
            continue
        if out and s <= out[-1][1]:
            out[-1][1] = max(out[-1][1], e)
        else:
            out.append([s, e])
    return out


def length(intervals):
    return sum(e - s for s, e in intervals)


def minus(a, b):
    """|a \\ b| for two unions (sorted, disjoint)."""
    covered, j = 0.0, 0
    for s, e in a:
        while j < len(b) and b[j][1] <= s:
            j += 1
        k = j
        while k < len(b) and b[k][0] < e:
            covered += min(e, b[k][1]) - max(s, b[k][0])
            k += 1
    return length(a) - covered


def steps_of(host):
    """[(start, end)] of each step: from one optimizer span's end to the next's."""
    ends = [e["ts"] + e["dur"] for e in host if e["name"] == "optimizer"]
    starts = [min(e["ts"] for e in host)] + ends[:-1]
    return list(zip(starts, ends))


def analyse_rank(events, warmup):
    host = sorted((e for e in events if e.get("tid", 0) == 0), key=lambda e: e["ts"])
    dev = sorted((e for e in events if e.get("tid", 0) >= 1), key=lambda e: e["ts"])
    steps = steps_of(host)[warmup:]
    if not steps:
        return None
    dev_stage = [e for e in dev if STAGE.match(e["name"])]
    dev_ar = [e for e in dev if e["name"].startswith("allreduce")]
    dev_p2p = [e for e in dev if e["name"].startswith(("send", "recv"))]
    source = "device" if dev_ar else ("host-bound" if dev else "host")
    total = exposed = p2p = 0.0
    messages = 0
    per_bucket = {}
    for s0, s1 in steps:
        inside = lambda e: s0 <= e["ts"] < s1  # noqa: E731
        h = [e for e in host if inside(e)]
        if dev:
            compute = [(e["ts"], e["ts"] + e["dur"]) for e in dev_stage if inside(e)]
        else:
            compute = [(e["ts"], e["ts"] + e["dur"]) for e in h
                       if e["cat"] in ("forward", "backward")]
        ar = []
        if dev_ar:
            for e in dev_ar:
                if inside(e):
                    ar.append((e["ts"], e["ts"] + e["dur"]))
                    per_bucket.setdefault(e["name"].split()[-1], []).append(e["dur"])
        else:
            # The k-th host stage call of the step is the k-th device span.
            host_stage = [e for e in h if STAGE.match(e["name"])]
            dev_in = [e for e in dev_stage if inside(e)]
            for i, e in enumerate(h):
                m = re.match(r"^allreduce (b\d+)$", e["name"])
                if not m:
                    continue
                bucket = m.group(1)
                start = e["ts"]
                if dev:
                    before = [k for k, c in enumerate(host_stage) if c["ts"] <= e["ts"]]
                    if before and before[-1] < len(dev_in):
                        d = dev_in[before[-1]]
                        start = max(start, d["ts"] + d["dur"])
                wait = next((w for w in h[i + 1:]
                             if w["name"] == f"allreduce.wait {bucket}"), None)
                if wait is None:
                    continue
                end = wait["ts"] + wait["dur"]
                if dev:
                    end = next((o["ts"] for o in h[i + 1:]
                                if o["name"] == "optimizer"), s1)
                end = max(start, end)
                ar.append((start, end))
                per_bucket.setdefault(bucket, []).append(end - start)
        ar_u, comp_u = union(ar), union(compute)
        total += length(ar_u)
        exposed += minus(ar_u, comp_u)
        if dev_p2p:
            # A batch's transfers share one span: count its time once.
            p2p += length(union((e["ts"], e["ts"] + e["dur"])
                                for e in dev_p2p if inside(e)))
            messages += sum(1 for e in dev_p2p if inside(e))
        else:
            p2p += sum(e["dur"] for e in h if e["cat"] in ("send", "recv"))
            messages += sum(1 for e in h if e["cat"] in ("send", "recv"))
    n = len(steps)
    return {
        "overlap": (1 - exposed / total) if total > 0 else float("nan"),
        "allreduce_ms": total / n / 1000,
        "exposed_ms": exposed / n / 1000,
        "p2p_ms": p2p / n / 1000,
        "p2p_messages": messages / n,
        "steps": n,
        "source": source,
        "buckets": per_bucket,
    }


def main():
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("trace")
    p.add_argument("--warmup", type=int, default=2,
                   help="steps left out at the start (default 2)")
    a = p.parse_args()
    try:
        with open(a.trace) as f:
            doc = json.load(f)
    except (OSError, ValueError) as e:
        print(f"trace_overlap: {a.trace}: {e}", file=sys.stderr)
        return 2
    events = doc["traceEvents"] if isinstance(doc, dict) else doc
    ranks = {}
    for e in events:
        if e.get("ph") == "X":
            ranks.setdefault(e["pid"], []).append(e)
    results = {}
    for r in sorted(ranks):
        res = analyse_rank(ranks[r], a.warmup)
        if res is None:
            continue
        results[r] = res
        print(f"TRACE rank={r} overlap={res['overlap']:.3f} "
              f"allreduce_ms_per_step={res['allreduce_ms']:.3f} "
              f"exposed_ms_per_step={res['exposed_ms']:.3f} "
              f"p2p_ms_per_step={res['p2p_ms']:.3f} "
              f"p2p_ops_per_step={res['p2p_messages']:.1f} steps={res['steps']} "
              f"source={res['source']}")
        for bucket, durs in sorted(res["buckets"].items()):
            print(f"TRACEBUCKET bucket={bucket} rank={r} "
                  f"us={statistics.median(durs):.1f} count={len(durs)}")
    if not results:
        print(f"trace_overlap: {a.trace}: no rank has a step after "
              f"{a.warmup} warm-up step(s) (no 'optimizer' spans)",
              file=sys.stderr)
        return 2
    total = sum(r["allreduce_ms"] for r in results.values())
    exposed = sum(r["exposed_ms"] for r in results.values())
    sources = sorted({r["source"] for r in results.values()})
    overlap = (1 - exposed / total) if total > 0 else float("nan")
    print(f"TRACE overlap={overlap:.3f} "
          f"allreduce_ms_per_step={total / len(results):.3f} "
          f"exposed_ms_per_step={exposed / len(results):.3f} "
          f"p2p_ms_per_step={statistics.mean(r['p2p_ms'] for r in results.values()):.3f} "
          f"p2p_ops_per_step={statistics.mean(r['p2p_messages'] for r in results.values()):.1f} "
          f"steps={min(r['steps'] for r in results.values())} "
          f"source={','.join(sources)}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
