#!/usr/bin/env python3
"""compare_runs.py OUT MODEL...: the comparison bench/peers/run.sh prints.

Reads OUT/MODEL/{bitpipe,eager,compiled,bitpipe2,eager2,debian,debian2}.R.jsonl
(step lines; bitpipe2, eager2 and debian2 at 2 threads; debian and debian2:
Debian's own PyTorch on plain_model.py, run.sh --debian-torch),
OUT/MODEL/bitpipe{,2}.R.rss (KiB) and OUT/MODEL/PEER.R.out (torch_step.py's
summary line), and prints per model each step's losses and tokens/s, then
one table. Plain Python, no packages.

- tokens/s: the median over every round of the steps after the first two
  (the first steps carry first-touch page faults, and torch.compile's
  compilation).
- losses: |loss_peer - loss_bitpipe| / |loss_bitpipe| per step, from round 1
  (every round trains the same steps from the same weights).
- peak RSS: the largest over the rounds, MiB.
"""

import glob
import json
import os
import statistics
import sys

WARMUP = 2
PEERS = [("eager", "eager"), ("compiled", "compile"), ("eager2", "eager 2t"), ("debian", "Debian eager"),
         ("debian2", "Debian eager 2t")]


def steps_of(path):
    rows = {}
    with open(path) as f:
        for line in f:
            line = line.strip()
            if line:
                j = json.loads(line)
                rows[j["step"]] = j
    return rows


def runs(d, kind):
    """[(round, {step: line})] of one kind, by round."""
    out = []
    for p in sorted(glob.glob(os.path.join(d, kind + ".*.jsonl")),
                    key=lambda p: int(p.rsplit(".", 2)[1])):
        out.append((int(p.rsplit(".", 2)[1]), steps_of(p)))
    return out


def median_tps(rs):
    v = [row["tokens_per_s"] for _, rows in rs for s, row in rows.items() if s > WARMUP]
    return statistics.median(v) if v else None


def summary(d, kind, r):
    p = os.path.join(d, "%s.%d.out" % (kind, r))
    if not os.path.exists(p):
        return None
    with open(p) as f:
        for line in f:
            if line.startswith("{") and '"summary"' in line:
                return json.loads(line)
    return None


def page_faults(d, kind, rounds):
    """The most page faults per step of any round's --profile table (steps
    after the first), or None when the logs have none."""
    worst = None
    for r in rounds:
        p = os.path.join(d, "%s.%d.log" % (kind, r))
        if not os.path.exists(p):
            continue
        with open(p) as f:
            for line in f:
                f_ = line.split()
                if line.startswith("  page faults") and len(f_) >= 3:
                    worst = max(worst or 0.0, float(f_[2]))
    return worst


def rel(a, b):
    return abs(a - b) / abs(b) if b else float("inf")


def fmt(x, spec):
    return "-" if x is None else format(x, spec)


def main(argv):
    if len(argv) < 2:
        sys.exit(__doc__)
    out, models = argv[0], argv[1:]
    with open(os.path.join(out, "run.json")) as f:
        run = json.load(f)
    table = []
    for name in models:
        d = os.path.join(out, name)
        bp = runs(d, "bitpipe")
        peers = {k: runs(d, k) for k, _ in PEERS}
        if not bp:
            sys.exit("compare_runs.py: no bitpipe runs in %s" % d)
        b1 = bp[0][1]
        print("\n%s: per step (round 1): loss bitpipe, eager, compile; relative difference; tokens/s" % name)
        print("%4s %12s %12s %12s %9s %9s %8s %8s %8s" % ("step", "bitpipe", "eager", "compile", "rel eag", "rel cmp",
                                                       "bp t/s", "eag t/s", "cmp t/s"))
        e1 = peers["eager"][0][1] if peers["eager"] else {}
        c1 = peers["compiled"][0][1] if peers["compiled"] else {}
        for s in sorted(b1):
            b = b1[s]["loss"]
            e = e1.get(s, {}).get("loss")
            c = c1.get(s, {}).get("loss")
            print("%4d %12.8f %12s %12s %9s %9s %8.1f %8s %8s" % (
                s, b, fmt(e, ".8f"), fmt(c, ".8f"),
                fmt(None if e is None else rel(e, b), ".1e"), fmt(None if c is None else rel(c, b), ".1e"),
                b1[s]["tokens_per_s"], fmt(e1.get(s, {}).get("tokens_per_s"), ".1f"),
                fmt(c1.get(s, {}).get("tokens_per_s"), ".1f")))
        row = {"model": name, "bitpipe_tps": median_tps(bp),
               "bitpipe2_tps": median_tps(runs(d, "bitpipe2"))}
        rss = []
        for r, _ in bp:
            p = os.path.join(d, "bitpipe.%d.rss" % r)
            if os.path.exists(p):
                rss.append(int(open(p).read().split()[0]) / 1024.0)
        row["bitpipe_rss"] = max(rss) if rss else None
        row["bitpipe_faults"] = page_faults(d, "bitpipe", [r for r, _ in bp])
        for k, _ in PEERS:
            rs = peers[k]
            row[k + "_tps"] = median_tps(rs)
            sums = [summary(d, k, r) for r, _ in rs]
            sums = [x for x in sums if x]
            row[k + "_rss"] = max(x["peak_rss_mib"] for x in sums) if sums else None
            row[k + "_rss_load"] = max(x["rss_after_load_mib"] for x in sums) if sums else None
            row[k + "_first"] = sums[0]["first_step_s_with_compile"] if sums else None
            first = rs[0][1] if rs else {}
            diffs = {s: rel(first[s]["loss"], b1[s]["loss"]) for s in b1 if s in first}
            row[k + "_rel13"] = max((diffs[s] for s in (1, 2, 3) if s in diffs), default=None)
            row[k + "_rel10"] = diffs.get(10)
            row[k + "_relmax"] = max(diffs.values(), default=None)
            gn = {s: rel(first[s]["grad_norm"], b1[s]["grad_norm"]) for s in b1 if s in first}
            row[k + "_gn13"] = max((gn[s] for s in (1, 2, 3) if s in gn), default=None)
        # The two PyTorch runs against each other: how far float rounding
        # alone carries the same semantics apart.
        ec = [(s, rel(c1[s]["loss"], e1[s]["loss"])) for s in sorted(e1) if s in c1]
        if ec:
            d13 = max((x for s, x in ec if s <= 3), default=None)
            d10 = dict(ec).get(10)
            print("PyTorch eager vs compile, loss: max relative difference steps 1-3 %s, step 10 %s, all steps %s" % (
                fmt(d13, ".1e"), fmt(d10, ".1e"), fmt(max(x for _, x in ec), ".1e")))
            row["eager_vs_compiled_rel10"] = d10
            row["eager_vs_compiled_relmax"] = max(x for _, x in ec)
        print("grad_norm vs bitpipe, max relative difference steps 1-3: eager %s, compile %s" % (
            fmt(row["eager_gn13"], ".1e"), fmt(row["compiled_gn13"], ".1e")))
        table.append(row)
        if row["compiled_first"] is not None:
            print("torch.compile: first step %.1f s (compilation included)" % row["compiled_first"])
        elif not peers["compiled"]:
            err = os.path.join(d, "compiled.1.err")
            last = ""
            if os.path.exists(err):
                lines = [l.strip() for l in open(err) if l.strip()]
                last = lines[-1] if lines else ""
            print("torch.compile: no steps (%s)" % (last or "did not run"))

    def ratio(a, b):
        return None if a is None or b is None or b == 0 else a / b

    print("\nbitpipe 1 rank (%s) vs PyTorch 1 thread, transformers' classes, fp32, eager attention; %d steps x %d "
          "round(s); lr %s, weight decay %s, max grad norm %s, seed %d, %s sampling; %s, %d cores" % (
              run.get("schedule", "gpipe"), run["steps"], run["rounds"], run["lr"], run["weight_decay"], run["max_grad_norm"],
              run["seed"], run["sampling"], run["cpu"], run["cores"]))
    print("tokens/s: median of steps %d-%d over the rounds; RSS: peak, MiB (PyTorch's after loading the model, before "
          "the first step, in parentheses); loss: max relative difference to bitpipe over steps 1-3 | at step 10 | "
          "over all steps" % (WARMUP + 1, run["steps"]))
    has2 = any(r["eager2_tps"] is not None for r in table)
    hasdeb = any(r["debian_tps"] is not None for r in table)
    hasdeb2 = any(r["debian2_tps"] is not None for r in table)
    head = ["model", "bitpipe tok/s", "eager tok/s", "bitpipe/eager", "compile tok/s", "bitpipe/compile"]
    if has2:
        head += ["bitpipe 2t tok/s", "eager 2t tok/s", "bitpipe/eager 2t"]
    if hasdeb:
        head += ["Debian eager tok/s", "bitpipe/Debian"]
    if hasdeb2:
        head += ["Debian eager 2t tok/s", "bitpipe/Debian 2t"]
    head += ["faults/step bitpipe", "RSS bitpipe", "RSS eager", "RSS compile", "loss vs eager", "loss vs compile"]
    print("| " + " | ".join(head) + " |")
    print("|" + "---|" * len(head))
    for r in table:
        cells = [r["model"], fmt(r["bitpipe_tps"], ".0f"), fmt(r["eager_tps"], ".0f"),
                 fmt(ratio(r["bitpipe_tps"], r["eager_tps"]), ".2f"), fmt(r["compiled_tps"], ".0f"),
                 fmt(ratio(r["bitpipe_tps"], r["compiled_tps"]), ".2f")]
        if has2:
            cells += [fmt(r["bitpipe2_tps"], ".0f"), fmt(r["eager2_tps"], ".0f"),
                      fmt(ratio(r["bitpipe2_tps"], r["eager2_tps"]), ".2f")]
        if hasdeb:
            cells += [fmt(r["debian_tps"], ".0f"), fmt(ratio(r["bitpipe_tps"], r["debian_tps"]), ".2f")]
        if hasdeb2:
            cells += [fmt(r["debian2_tps"], ".0f"), fmt(ratio(r["bitpipe2_tps"], r["debian2_tps"]), ".2f")]
        cells += [fmt(r["bitpipe_faults"], ".0f"), fmt(r["bitpipe_rss"], ".0f"),
                  "%s (%s)" % (fmt(r["eager_rss"], ".0f"), fmt(r["eager_rss_load"], ".0f")),
                  "%s (%s)" % (fmt(r["compiled_rss"], ".0f"), fmt(r["compiled_rss_load"], ".0f")),
                  "%s / %s / %s" % (fmt(r["eager_rel13"], ".1e"), fmt(r["eager_rel10"], ".1e"), fmt(r["eager_relmax"], ".1e")),
                  "%s / %s / %s" % (fmt(r["compiled_rel13"], ".1e"), fmt(r["compiled_rel10"], ".1e"),
                                    fmt(r["compiled_relmax"], ".1e"))]
        print("| " + " | ".join(cells) + " |")
    if hasdeb:
        vers = sorted({(summary(os.path.join(out, r["model"]), "debian", 1) or {}).get("torch", "?") for r in table})
        print("\nDebian's PyTorch (%s) on bench/peers/plain_model.py; its peak RSS, MiB, and losses against bitpipe "
              "(steps 1-3 | step 10 | all steps):" % ", ".join(vers))
        for r in table:
            print("  %s: RSS %s (%s); loss %s / %s / %s" % (
                r["model"], fmt(r["debian_rss"], ".0f"), fmt(r["debian_rss_load"], ".0f"), fmt(r["debian_rel13"], ".1e"),
                fmt(r["debian_rel10"], ".1e"), fmt(r["debian_relmax"], ".1e")))
    bad = [r["model"] for r in table
           if any(r[k + "_rel13"] is not None and r[k + "_rel13"] > 1e-5 for k in ("eager", "compiled", "debian"))]
    print("\nlosses of steps 1-3 within 1e-5 relative: %s" % ("all" if not bad else "NOT for " + ", ".join(bad)))
    with open(os.path.join(out, "table.json"), "w") as f:
        json.dump(table, f, indent=1)
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
