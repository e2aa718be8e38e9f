"""Deliberate faults in a compiled bitpipe program, applied to its LLVM IR.

Each mutant is what a compiler bug would do to every program it compiles
(the one-rank reference of an equivalence test too), so the mutation check
asks the real question: does any test notice when the whole compiler is
wrong in this way, not only when one schedule differs from another?

A mutant takes the module's text and its manifest (the JSON the module
embeds, docs/ and runtime/include/bitpipe/program.h describe it) and
returns the mutated text and how many places it changed (0: the fault
does not apply to this program, e.g. no all-reduce on one rank).
"""
import json
import re

RANK_FN = re.compile(r"^define void @bitpipe_rank(\d+)\(ptr %0\) \{$")
CALL_RESULT = re.compile(r"^(\s*)%[\w.]+ = (tail call .*)$")


def manifest_of(ir):
    m = re.search(r'^@bitpipe_manifest = .*c"(.*)"(, align \d+)?$', ir,
                  re.MULTILINE)
    if not m:
        raise ValueError("the module has no @bitpipe_manifest")
    raw = re.sub(r"\\([0-9A-Fa-f]{2})", lambda h: chr(int(h.group(1), 16)),
                 m.group(1))
    return json.loads(raw)


def rank_bodies(lines):
    """{rank: (first line index, last line index)} of the rank programs."""
    spans, rank, start = {}, None, 0
    for i, line in enumerate(lines):
        m = RANK_FN.match(line)
        if m:
            rank, start = int(m.group(1)), i
        elif rank is not None and line == "}":
            spans[rank] = (start, i)
            rank = None
    return spans


def drop_allreduce(ir, manifest):
    """One bucket's gradients are never summed over its replicas: its
    all-reduce start and wait are gone on every rank of the group (so no
    rank waits for a partner that never comes)."""
    chosen = None
    for r in manifest["ranks"]:
        if r.get("buckets"):
            chosen = sorted(r["buckets"][0]["params"])
            break
    if chosen is None:
        return ir, 0
    lines = ir.split("\n")
    changed = 0
    for rank, (begin, end) in rank_bodies(lines).items():
        buckets = {i for i, b in enumerate(manifest["ranks"][rank]["buckets"])
                   if sorted(b["params"]) == chosen}
        tokens = set()
        for i in range(begin, end):
            m = re.search(r"@bp_rt_allreduce_start\(ptr %0, i32 (\d+), "
                          r"i32 (\d+)\)", lines[i])
            if m and int(m.group(1)) in buckets:
                tokens.add(m.group(2))
                lines[i] = ""
                changed += 1
        for i in range(begin, end):
            m = re.search(r"@bp_rt_allreduce_wait\(ptr %0, i32 (\d+)\)",
                          lines[i])
            if m and m.group(1) in tokens:
                lines[i] = ""
    return "\n".join(lines), changed


def swap_directions(ir, manifest):
    """BitPipe's up direction reads the down direction's micro-batches (the
    reference implementation's defect): in each unit of D micro-batches
    the first D/2 go down and the next D/2 go up; every load of an up
    micro-batch m reads m - D/2 instead."""
    schedule = manifest["schedule"]
    if schedule["name"] != "bitpipe":
        return ir, 0
    d = schedule["devices"]
    changed = 0

    def remap(m):
        nonlocal changed
        mb = int(m.group(2))
        if mb % d < d // 2:
            return m.group(0)
        changed += 1
        return f"{m.group(1)}{mb - d // 2}{m.group(3)}"

    ir = re.sub(r"(@bp_rt_load_input\(ptr %0, i32 \d+, i32 \d+, i64 )(\d+)"
                r"(, i64 \d+\))", remap, ir)
    return ir, changed


def scale_gradient(ir, manifest):
    """The weight gradient of every linear with out = 4 x in (each MLP's
    first linear; in the tiny models, whose vocabulary is 4 x hidden, the
    tied output projection too) is accumulated twice: those gradients, and
    so the gradient norm, double; AdamW's normalised update hides most of
    it from loss and weights."""
    lines, out, changed = ir.split("\n"), [], 0
    for line in lines:
        out.append(line)
        m = re.search(r"@bp_linear_bwd_weight(?:_g64)?\(.*, i64 (\d+), i64 (\d+)\)",
                      line)
        if m and int(m.group(2)) == 4 * int(m.group(1)):
            # The copy's result gets a name: LLVM numbers unnamed values in
            # order, so an extra unnamed one would shift every later number.
            call = CALL_RESULT.match(line)
            out.append(f"{call.group(1)}%mutant.{changed} = {call.group(2)}"
                       if call else line)
            changed += 1
    return "\n".join(out), changed


def skip_optimizer(ir, manifest):
    """No rank takes the optimizer step."""
    lines = ir.split("\n")
    changed = 0
    for i, line in enumerate(lines):
        if "@bp_rt_optimizer_step(ptr %0" in line:
            lines[i] = ""
            changed += 1
    return "\n".join(lines), changed


def flip_attention_mask(ir, manifest):
    """Causal attention becomes bidirectional and back (GPT sees the
    future; BERT sees only the past), in forward and backward alike."""
    changed = 0

    def flip(m):
        nonlocal changed
        changed += 1
        return f"{m.group(1)}{1 - int(m.group(2))})"

    ir = re.sub(r"(@bp_attention_(?:fwd|bwd)\(.*, i32 )([01])\)", flip, ir)
    return ir, changed


MUTANTS = {
    "drop-allreduce": drop_allreduce,
    "swap-directions": swap_directions,
    "scale-gradient": scale_gradient,
    "skip-optimizer": skip_optimizer,
    "flip-attention-mask": flip_attention_mask,
}
