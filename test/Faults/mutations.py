"""Deterministic byte and text mutations of the fault suite's inputs.

Every generator takes a random.Random seeded from the suite's --seed, so a
seed names the same cases on every machine. The dictionary holds the values
where readers break: non-finite and huge numbers, 64-bit boundaries, deep
nesting (docs/robustness.md).
"""

TOKENS = [
    b"{", b"}", b"[", b"]", b'"', b":", b",", b"\\", b"1e400", b"-1e400",
    b"-1", b"0", b"-0", b"NaN", b"Infinity", b"1e-400", b"null", b"true",
    b"2147483647", b"2147483648", b"4294967296", b"4611686018427387904",
    b"9223372036854775807", b"9223372036854775808", b"18446744073709551615",
    b"1.5", b"0x10", b"\x00", b"\xff",
]


def flip_bit(rng, data):
    if not data:
        return data
    i = rng.randrange(len(data))
    return data[:i] + bytes([data[i] ^ (1 << rng.randrange(8))]) + data[i + 1:]


def set_byte(rng, data):
    if not data:
        return data
    i = rng.randrange(len(data))
    return data[:i] + bytes([rng.randrange(256)]) + data[i + 1:]


def insert_byte(rng, data):
    i = rng.randrange(len(data) + 1)
    return data[:i] + bytes([rng.randrange(256)]) + data[i:]


def delete_range(rng, data):
    if not data:
        return data
    i = rng.randrange(len(data))
    return data[:i] + data[i + 1 + rng.randrange(16):]


def duplicate_range(rng, data):
    if not data:
        return data
    i = rng.randrange(len(data))
    piece = data[i:i + 1 + rng.randrange(64)]
    j = rng.randrange(len(data) + 1)
    return data[:j] + piece + data[j:]


def truncate(rng, data):
    return data[:rng.randrange(len(data) + 1)]


def insert_token(rng, data):
    i = rng.randrange(len(data) + 1)
    return data[:i] + rng.choice(TOKENS) + data[i:]


def replace_number(rng, data):
    """Replaces one run of digits (with its sign, point and exponent)."""
    starts = [i for i in range(len(data)) if chr(data[i]).isdigit()
              and (i == 0 or not chr(data[i - 1]).isdigit())]
    if not starts:
        return insert_token(rng, data)
    i = rng.choice(starts)
    j = i
    while j < len(data) and (chr(data[j]).isalnum() or data[j] in b".-+"):
        j += 1
    return data[:i] + rng.choice(TOKENS) + data[j:]


def nest(rng, data):
    """Deep nesting: a short piece repeated 10 to 100,000 times."""
    piece = rng.choice([b"[", b"{\"a\":", b"(", b"{"])
    count = rng.choice([10, 1000, 100000])
    i = rng.randrange(len(data) + 1)
    return data[:i] + piece * count + data[i:]


BYTE_MUTATIONS = [flip_bit, set_byte, insert_byte, delete_range,
                  duplicate_range, truncate]
TEXT_MUTATIONS = BYTE_MUTATIONS + [insert_token, insert_token, replace_number,
                                   replace_number, nest]


def mutate(rng, data, mutations, count=None):
    """1 to 3 mutations from `mutations` stacked on data."""
    for _ in range(count or 1 + rng.randrange(3)):
        data = rng.choice(mutations)(rng, data)
    return data


def _lines(data):
    return data.split(b"\n")


def delete_line(rng, data):
    lines = _lines(data)
    del lines[rng.randrange(len(lines))]
    return b"\n".join(lines)


def duplicate_line(rng, data):
    lines = _lines(data)
    i = rng.randrange(len(lines))
    lines.insert(rng.randrange(len(lines) + 1), lines[i])
    return b"\n".join(lines)


def swap_lines(rng, data):
    lines = _lines(data)
    i, j = rng.randrange(len(lines)), rng.randrange(len(lines))
    lines[i], lines[j] = lines[j], lines[i]
    return b"\n".join(lines)


# Line edits keep most of an IR file parseable, so that the verifiers and
# passes, not only the parser, see the damage.
LINE_MUTATIONS = [delete_line, duplicate_line, swap_lines, replace_number]
