"""The micro-batches of a training step, as docs/training-semantics.md
defines them: which token windows micro-batch g reads, and BERT's masks.

Every random choice is a pure function of (seed, stream, counter) through
SplitMix64's finaliser, so this module computes the same batches as any
rank of a compiled run without sharing code with it.
"""
import numpy as np

MASK64 = (1 << 64) - 1
SAMPLER_STREAM = int.from_bytes(b"samplers", "big")
MASK_STREAM = int.from_bytes(b"masklm15", "big")
IGNORE_INDEX = -100
MASK_PROB = 0.15


def mix64(z):
    z = (z + 0x9E3779B97F4A7C15) & MASK64
    z = ((z ^ (z >> 30)) * 0xBF58476D1CE4E5B9) & MASK64
    z = ((z ^ (z >> 27)) * 0x94D049BB133111EB) & MASK64
    return z ^ (z >> 31)


def random_bits(seed, stream, counter):
    return mix64(mix64(mix64(seed) ^ stream) ^ counter)


def random_uniform(seed, stream, counter):
    return (random_bits(seed, stream, counter) >> 11) / 9007199254740992.0


def global_index(step, dp_copy, dp, microbatch, microbatches):
    """Micro-batch m of data-parallel copy c in step s reads sample group
    (s * dp + c) * N + m: each copy and each step reads different data."""
    return (step * dp + dp_copy) * microbatches + microbatch


class Batches:
    def __init__(self, tokens, family, batch, seq_len, vocab, seed,
                 sampling):
        self.tokens = tokens
        self.family = family
        self.batch = batch
        self.seq_len = seq_len
        self.vocab = vocab
        self.seed = seed
        self.sampling = sampling
        # GPT's and LLaMA's targets are the next tokens, so a window needs
        # one more.
        self.causal = family in ("gpt", "llama")
        self.lookahead = 1 if self.causal else 0

    def offset(self, g, row):
        n, T = len(self.tokens), self.seq_len
        if self.sampling == "random":
            starts = n - (T + self.lookahead) + 1
            return random_bits(self.seed, SAMPLER_STREAM ^ mix64(g),
                               row) % starts
        windows = (n - self.lookahead) // T
        return ((g * self.batch + row) % windows) * T

    def get(self, g):
        """(inputs, labels), both [batch, seq_len] int64, of micro-batch g."""
        T = self.seq_len
        rows = [self.offset(g, b) for b in range(self.batch)]
        if self.causal:
            inputs = np.stack([self.tokens[o:o + T] for o in rows])
            labels = np.stack([self.tokens[o + 1:o + 1 + T] for o in rows])
            return inputs, labels
        original = np.stack([self.tokens[o:o + T] for o in rows])
        return self.mask(original, g)

    def mask(self, original, g):
        """BERT: each position is chosen with probability 0.15; a chosen
        token becomes the mask token (the last id) 80% of the time, a
        uniformly random token 10%, itself 10%; only chosen positions carry
        a label."""
        stream = MASK_STREAM ^ mix64(g)
        flat = original.reshape(-1)
        inputs = flat.copy()
        labels = np.full_like(flat, IGNORE_INDEX)
        for i, t in enumerate(flat):
            c = 3 * i
            if random_uniform(self.seed, stream, c) >= MASK_PROB:
                continue
            labels[i] = t
            kind = random_uniform(self.seed, stream, c + 1)
            if kind < 0.8:
                inputs[i] = self.vocab - 1
            elif kind < 0.9:
                inputs[i] = random_bits(self.seed, stream, c + 2) % self.vocab
        return inputs.reshape(original.shape), labels.reshape(original.shape)
