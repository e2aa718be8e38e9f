"""AdamW (Loshchilov & Hutter; PyTorch's torch.optim.AdamW) in float64, with
the global-norm clipping of torch.nn.utils.clip_grad_norm_. No weight decay
on vectors (biases, layer-norm gains and biases); decay on matrices."""
import math

import numpy as np


class AdamW:
    def __init__(self, lr, weight_decay, max_grad_norm=0.0, beta1=0.9,
                 beta2=0.999, eps=1e-8):
        self.lr, self.weight_decay = lr, weight_decay
        self.max_grad_norm = max_grad_norm
        self.beta1, self.beta2, self.eps = beta1, beta2, eps
        self.t = 0
        self.m, self.v = {}, {}

    def step(self, params, grads):
        """Updates params in place from the step's mean gradients; returns
        the global gradient norm before clipping."""
        norm = math.sqrt(sum(float((g * g).sum()) for g in grads.values()))
        clip = 1.0
        if self.max_grad_norm > 0 and norm > self.max_grad_norm:
            clip = self.max_grad_norm / (norm + 1e-6)
        self.t += 1
        b1, b2 = self.beta1, self.beta2
        for name, p in params.items():
            g = grads[name] * clip
            m = self.m.get(name, np.zeros_like(p))
            v = self.v.get(name, np.zeros_like(p))
            m = b1 * m + (1 - b1) * g
            v = b2 * v + (1 - b2) * g * g
            self.m[name], self.v[name] = m, v
            if p.ndim >= 2:
                p *= 1 - self.lr * self.weight_decay
            mhat = m / (1 - b1 ** self.t)
            vhat = v / (1 - b2 ** self.t)
            p -= self.lr * mhat / (np.sqrt(vhat) + self.eps)
        return norm
