#!/usr/bin/env python3
"""metrics-summary.py METRICS.jsonl... [--skip K]

One line about runs of one executable from their --metrics files: the
median tokens/s and the mean measured bubble per rank over their steps,
leaving out the first K of each run (default 3: the first steps grow the
memory pool and warm the caches), and the last run's last loss. Standard
library only."""
import argparse
import json
import statistics


def main():
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("metrics", nargs="+")
    p.add_argument("--skip", type=int, default=3)
    a = p.parse_args()
    kept = []
    for path in a.metrics:
        with open(path) as f:
            steps = [json.loads(line) for line in f if line.strip()]
        kept += steps[a.skip:] or steps
    tps = statistics.median(s["tokens_per_s"] for s in kept)
    ranks = len(kept[0]["bubble"])
    bubble = [statistics.mean(s["bubble"][r] for s in kept)
              for r in range(ranks)]
    print(f"{tps:8.0f} tokens/s   bubble {statistics.mean(bubble):.3f} "
          f"(per rank {' '.join(f'{b:.3f}' for b in bubble)})   "
          f"over {len(kept)} steps; "
          f"loss at step {steps[-1]['step']}: {steps[-1]['loss']:.6f}")


if __name__ == "__main__":
    main()
