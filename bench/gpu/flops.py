"""The FLOP count of one GPT block's forward and backward: the one formula
that both block benchmarks (ours, bench/gpu/block-bench.cpp, which repeats it
in C++, and PyTorch's, torch_block.py) divide by their time, so that their
TFLOP/s compare.

Convention (the "model FLOPs" of Megatron-LM's and PaLM's MFU): the useful
multiply-adds of the computation, 2 FLOPs each, not the work an
implementation chooses to do:
  - a matrix product of [m, k] by [k, n] is 2 m k n; the backward of a
    linear layer is two such products (input and weight gradients), so
    forward + backward = 3x the forward;
  - the block's four linear layers (qkv H->3H, proj H->H, fc H->4H,
    proj 4H->H) on N = B T rows: forward 2 N (3 + 1 + 4 + 4) H^2 = 24 N H^2,
    forward + backward 72 N H^2;
  - attention: Q K^T and P V are 2 B T^2 H each (summed over the heads),
    forward 4 B T^2 H, forward + backward 3x; causal attention needs only
    the lower triangle, so it counts half. FlashAttention's recomputation of
    the scores in the backward is not counted (it is the implementation's
    choice, and counting it would reward it);
  - biases, layer norms, GELU, residual adds and softmax are not counted
    (a few N H each: under 0.1% at these shapes).
"""


def block_flops(hidden, heads, seq_len, batch, causal=True):
    """FLOPs of one forward + backward of one GPT block (heads does not
    change the count; it is taken so that callers pass the whole shape)."""
    del heads
    n = batch * seq_len
    matmuls = 72 * n * hidden * hidden
    attention = 3 * 4 * batch * seq_len * seq_len * hidden
    if causal:
        attention //= 2
    return matmuls + attention


# The block benchmark's shapes: (hidden, heads, seq_len, batch).
BLOCK_SHAPES = [(1024, 16, 1024, 8), (2048, 16, 2048, 4), (4096, 32, 2048, 2)]


if __name__ == "__main__":
    for shape in BLOCK_SHAPES:
        print("H=%d nh=%d T=%d B=%d: %.4e FLOPs" % (shape + (block_flops(*shape),)))
