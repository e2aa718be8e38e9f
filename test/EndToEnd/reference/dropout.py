"""Dropout as docs/training-semantics.md ("Dropout") defines it, written from
that page: which elements of a site a micro-batch keeps, and the scale of
the kept ones. Shares no code with the runtime's kernels.
"""
import numpy as np

from batches import MASK64, mix64

DROPOUT_STREAM = 0x64726F706F757421  # "dropout!"
SITE_SHIFT = 40


def embedding_site():
    return 0


def attention_site(layer):
    return 3 * layer + 1


def attention_output_site(layer):
    return 3 * layer + 2


def mlp_output_site(layer):
    return 3 * layer + 3


def _mix64_array(z):
    """mix64 over a uint64 array (numpy's uint64 arithmetic wraps)."""
    with np.errstate(over="ignore"):
        z = z + np.uint64(0x9E3779B97F4A7C15)
        z = (z ^ (z >> np.uint64(30))) * np.uint64(0xBF58476D1CE4E5B9)
        z = (z ^ (z >> np.uint64(27))) * np.uint64(0x94D049BB133111EB)
        return z ^ (z >> np.uint64(31))


class Dropout:
    """The dropouts of one micro-batch: sample group g of a run seeded
    `seed`, with the config's probabilities (0 where a site has none)."""

    def __init__(self, seed, g):
        stream = DROPOUT_STREAM ^ mix64(g)
        # bits(seed, stream, c) = mix64(mix64(mix64(seed) ^ stream) ^ c)
        self.base = mix64(mix64(seed) ^ stream) & MASK64

    def mask(self, site, shape, p):
        """The kept elements (bool, `shape`) times 1 / (1 - p): the factor
        each element of the site's tensor is multiplied by. p is taken as
        its fp32 value, as the model holds it."""
        p32 = float(np.float32(p))
        n = int(np.prod(shape))
        counter = (np.uint64(site) << np.uint64(SITE_SHIFT)) + np.arange(
            n, dtype=np.uint64)
        bits = _mix64_array(np.uint64(self.base) ^ counter)
        uniform = (bits >> np.uint64(11)).astype(np.float64) / 2.0 ** 53
        keep = (uniform >= p32).reshape(shape)
        return keep * (1.0 / (1.0 - p32))


class NoDropout:
    """A model without dropout, or evaluation."""

    def mask(self, site, shape, p):
        return None


def apply(factor, x):
    """x dropped by a mask() factor (None: unchanged)."""
    return x if factor is None else x * factor
