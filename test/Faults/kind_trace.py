"""Chrome traces through bitpipe-calibrate --fit: a simulated run's trace
and a real run's (exe2 under mpirun), damaged in known ways and mutated.
A trace that fits must hold the schedule's steps; what a fit cannot read
is said, and a trace with nothing to fit on is refused."""
import json
import os

import mutations
from cases import Case, write_when_run

KIND = "Chrome traces (bitpipe-calibrate)"


def expectation(data):
    """Not JSON (or not a trace's shape) is invalid; anything else may fit
    or be refused."""
    try:
        value = json.loads(data.decode("utf-8"),
                           parse_constant=lambda name: float("nan"))
    except (ValueError, UnicodeDecodeError, RecursionError):
        return "invalid"
    events = value.get("traceEvents") if isinstance(value, dict) else value
    return "any" if isinstance(events, list) else "invalid"


def named(trace):
    """(name, bytes): each a trace no fit can take."""
    doc = json.loads(trace)
    events = doc["traceEvents"]

    def edited(fn):
        d = json.loads(trace)
        fn(d["traceEvents"])
        return json.dumps(d).encode()

    def each_span(fn):
        def apply(evs):
            for e in evs:
                if e.get("ph") == "X":
                    fn(e)
        return apply

    # The first stage call: every check below applies to it.
    first = next(i for i, e in enumerate(events)
                 if e.get("ph") == "X" and e.get("name", "")[:1] == "F")

    def one(key, value):
        def apply(evs):
            evs[first][key] = value
        return apply
    return [
        ("not-json", trace[:len(trace) // 2]),
        ("no-trace-events", b'{"events": []}'),
        ("no-events", b'{"traceEvents": []}'),
        ("only-metadata", edited(lambda evs: evs.__setitem__(
            slice(None), [e for e in evs if e.get("ph") == "M"]))),
        ("begin-end-pairs", edited(each_span(lambda e: e.update(ph="B")))),
        ("names-renamed", edited(each_span(
            lambda e: e.update(name="fwd " + e["name"])))),
        ("dur-1e308", edited(one("dur", 1e308))),
        ("dur-negative", edited(one("dur", -1))),
        ("ts-1e300", edited(one("ts", 1e300))),
        ("dur-1e400", edited(one("dur", 123456789.5)).replace(
            b"123456789.5", b"1e400", 1)),
        ("pid-string", edited(one("pid", "zero"))),
        ("pid-beyond-ranks", edited(one("pid", 7))),
        ("tid-fraction", edited(one("tid", 0.5))),
        ("duplicate-key", trace.replace(b'"traceEvents"',
                                        b'"traceEvents": [], "traceEvents"',
                                        1)),
    ]


def cases(fx, rng, mutants):
    out_dir = fx.path("traces")
    os.makedirs(out_dir, exist_ok=True)
    calibrate = fx.tool("bitpipe-calibrate")
    traces = []
    for path, spec in ((fx.sim_trace, fx.sim_trace_spec),
                       (fx.run_trace, fx.run_trace_spec)):
        with open(path, "rb") as f:
            traces.append((f.read(), spec))
    result = []

    def case(name, data, spec, expect):
        path = os.path.join(out_dir, name + ".json")
        result.append(Case(KIND, name, [calibrate, "--fit", path + ":" + spec,
                                        "--skip-steps", "0"],
                           expect, prepare=write_when_run(path, data)))

    (simulated, sim_spec), (real, real_spec) = traces
    case("simulated", simulated, sim_spec, "valid")
    case("real-run", real, real_spec, "valid")
    for name, data in named(real):
        case(name, data, real_spec, "invalid")
    for i in range(mutants):
        source, spec = traces[i % 2]
        data = mutations.mutate(rng, source, mutations.TEXT_MUTATIONS)
        case("mutant-%04d" % i, data, spec, expectation(data))
    return result
