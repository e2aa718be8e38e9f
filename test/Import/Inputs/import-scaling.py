"""Checks that bitpipe-import's time and peak memory grow linearly with the
layer count: importing 2N layers must cost less than 3 times N layers
(quadratic growth gives 4). Usage: import-scaling.py BITPIPE_IMPORT DIR N.

Each import runs in its own child process, measured with wait4's rusage
(user + system time, peak resident set); the time is the least of three
runs, so that a busy machine does not fail the test.
"""
import json
import os
import subprocess
import sys

tool, workdir, n = sys.argv[1], sys.argv[2], int(sys.argv[3])


def measure(layers):
    config = os.path.join(workdir, "layers%d.json" % layers)
    with open(config, "w") as f:
        json.dump({"family": "gpt", "layers": layers, "hidden": 8, "heads": 2,
                   "vocab": 16, "max_positions": 8, "seq_len": 8,
                   "microbatch_size": 1}, f)
    best_time, peak = None, 0
    for _ in range(3):
        proc = subprocess.Popen([tool, "--config", config, "-o", os.devnull])
        _, status, usage = os.wait4(proc.pid, 0)
        if status != 0:
            sys.exit("%s failed on %d layers (status %d)" % (tool, layers,
                                                            status))
        seconds = usage.ru_utime + usage.ru_stime
        best_time = seconds if best_time is None else min(best_time, seconds)
        peak = max(peak, usage.ru_maxrss)  # KiB
    return best_time, peak


t1, m1 = measure(n)
t2, m2 = measure(2 * n)
print("%d layers: %.3f s, %d KiB; %d layers: %.3f s, %d KiB"
      % (n, t1, m1, 2 * n, t2, m2))
# A floor on the small run's time keeps the ratio meaningful when it is
# too quick to time.
time_ratio = t2 / max(t1, 0.05)
memory_ratio = m2 / m1
print("time ratio %.2f, memory ratio %.2f" % (time_ratio, memory_ratio))
if time_ratio >= 3 or memory_ratio >= 3:
    sys.exit("FAIL: import cost grows faster than linearly with the layers")
print("PASS: linear")
