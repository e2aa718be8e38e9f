#!/usr/bin/env python3
"""Every call of the CUDA runtime that may make the host wait for the whole
device says when it is made.

A host blocked in such a call while a peer rank's NCCL kernel spins on this
device waits for a kernel that waits for a peer that waits for this host,
and no --timeout fires (docs/runtime-abi.md, "Start-up on CUDA"). So in
runtime/lib/cuda and runtime/lib/comm/nccl, each call of cudaDeviceSynchronize,
cudaMalloc, cudaFree, cudaMallocHost, cudaHostAlloc, cudaFreeHost, the
synchronous cudaMemcpy and cudaMemset, and cudaStreamSynchronize of the
legacy default stream carries, on its line or in the comment lines right
above it, a comment "Host-waiting call: WHEN" with WHEN one of:
  start-up              before the first step (configure, prepare, the
                        parameter store's creation, the communicators');
  teardown              destructors, after the last step;
  without memory pools  the device pool's fallback on a device without
                        stream-ordered allocation (DeviceMemory.cpp);
  inside a capture      while a step is captured into a CUDA graph
                        (--cuda-graphs): nothing of this process runs on
                        the device then (the step before ended by waiting
                        for its stream, and a capture launches nothing),
                        so no NCCL kernel of this rank can spin meanwhile.
A call without one is refused, naming file, line and call: make it
asynchronous (in a stream's order), move it to start-up, or say when.

  host-waits.py SOURCE_ROOT [FILE...]
prints one line per call and "host-waits: N calls, all at start-up or
teardown" (or the refusals, exit 1). FILEs (relative to SOURCE_ROOT)
replace the default set, for the test's own cases.
"""
import pathlib
import re
import sys

CALL = re.compile(
    r"\b(cudaDeviceSynchronize|cudaMalloc|cudaFree|cudaMallocHost|cudaHostAlloc"
    r"|cudaFreeHost|cudaMemcpy|cudaMemset)(?!\w)\s*\("
    r"|\b(cudaStreamSynchronize)\s*\(\s*(?:nullptr|0|NULL)\s*\)")
WHEN = re.compile(r"Host-waiting call: ([a-z][a-z -]*[a-z])")
ALLOWED = {"start-up", "teardown", "without memory pools", "inside a capture"}


def sources(root):
    for pattern in ("runtime/lib/cuda/**/*.cpp", "runtime/lib/cuda/**/*.cu",
                    "runtime/lib/cuda/**/*.h", "runtime/lib/cuda/**/*.cuh",
                    "runtime/lib/comm/nccl/*.cpp", "runtime/lib/comm/nccl/*.h"):
        yield from sorted(root.glob(pattern))


def main(argv):
    root = pathlib.Path(argv[1])
    files = [root / f for f in argv[2:]] or list(sources(root))
    calls, refused = 0, []
    for path in files:
        lines = path.read_text().split("\n")
        for i, line in enumerate(lines):
            code = line.split("//")[0]
            for m in CALL.finditer(code):
                name = m.group(1) or m.group(2)
                calls += 1
                where = f"{path.relative_to(root)}:{i + 1}: {name}"
                # The call's own line, and the comment lines right above.
                said_on = [line]
                j = i - 1
                while j >= 0 and lines[j].strip().startswith("//"):
                    said_on.append(lines[j])
                    j -= 1
                said = [WHEN.search(l) for l in said_on]
                said = [w.group(1) for w in said if w][:1]
                if not said:
                    refused.append(f"{where}: no 'Host-waiting call: WHEN' "
                                   "comment says when this call is made")
                elif said[0] not in ALLOWED:
                    refused.append(f"{where}: '{said[0]}' is not a time "
                                   f"without steps ({', '.join(sorted(ALLOWED))})")
                else:
                    print(f"{where} ({said[0]})")
    for r in refused:
        print(f"host-waits: refused: {r}")
    if refused:
        return 1
    print(f"host-waits: {calls} calls, all outside the steps")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
