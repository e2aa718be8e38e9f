"""The learning-rate schedule of docs/training-semantics.md, in float64:
a linear warm-up over the first W updates (update u takes lr * u / W), then
a constant, linear or cosine fall to min_lr at update D, min_lr after."""
import math


def learning_rate(lr, u, warmup=0, style="constant", decay_steps=0,
                  min_lr=0.0):
    if u <= warmup:
        return lr * u / warmup
    if style == "constant":
        return lr
    if u >= decay_steps:
        return min_lr
    p = (u - warmup) / (decay_steps - warmup)
    f = 1.0 - p if style == "linear" else 0.5 * (1.0 + math.cos(math.pi * p))
    return min_lr + (lr - min_lr) * f
