#!/usr/bin/env python3
"""check_progress.py METRICS INIT RANK_DUMP...

Did the run train at all? A comparison with a reference cannot tell when
both sides are broken the same way (an optimizer step that does nothing,
a gradient that is always zero), so this asks directly: the loss of the
last step is below that of the first, and every parameter tensor held by
any rank has moved away from its initial value in INIT (a checkpoint
written before the first step). Exits 1 naming what did not change."""
import json
import sys

import numpy as np

import safetensors_io


def main(metrics_path, init_path, dumps):
    with open(metrics_path) as f:
        losses = [json.loads(line)["loss"] for line in f if line.strip()]
    problems = []
    if len(losses) < 2:
        problems.append(f"{metrics_path}: {len(losses)} step(s); need two "
                        "to see the loss fall")
    elif not losses[-1] < losses[0]:
        problems.append(f"the loss did not fall: {losses[0]:.6f} at step 1, "
                        f"{losses[-1]:.6f} at step {len(losses)}")
    init, _ = safetensors_io.read(init_path)
    seen = 0
    for path in dumps:
        params, _ = safetensors_io.read(path)
        for name, value in params.items():
            seen += 1
            if np.array_equal(value, init[name]):
                problems.append(f"{path}: {name} never moved from its "
                                "initial value")
    if seen == 0:
        problems.append("the rank dumps hold no parameters")
    for p in problems:
        print("check_progress: " + p)
    if not problems:
        print(f"check_progress: loss {losses[0]:.6f} -> {losses[-1]:.6f} "
              f"over {len(losses)} steps; all {seen} rank tensors moved")
    return 1 if problems else 0


if __name__ == "__main__":
    if len(sys.argv) < 4:
        sys.exit(__doc__)
    sys.exit(main(sys.argv[1], sys.argv[2], sys.argv[3:]))
