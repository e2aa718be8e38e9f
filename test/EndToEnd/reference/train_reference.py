#!/usr/bin/env python3
"""train_reference.py: an independent float64 reference of bitpipe training.

Trains a GPT-, BERT- or LLaMA-style model (a bitpipe JSON config) for a few AdamW
steps exactly as docs/training-semantics.md defines a step: N x K
micro-batches (N per data-parallel copy, K copies), the loss of a step the
mean of the micro-batches' losses, the gradient the mean of theirs. Starts
from the initial parameters of a checkpoint (initialisation is not under
test here) and writes what a compiled run writes, so that bitpipe-compare
can hold the two side by side:

  --metrics FILE   one JSON line per step: {"step", "loss", "grad_norm"}
  --save FILE      the final parameters (safetensors, F32)

Everything is float64 and shares no code with the compiler or the runtime.
A model with dropout draws each micro-batch's masks from the run's seed and
its sample group (dropout.py).
"""
import argparse
import json
import sys

import numpy as np

from adamw import AdamW
from batches import Batches, global_index
from dropout import Dropout
from lr_schedule import learning_rate
from model import make_model
import safetensors_io


def parse_args(argv):
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--config", required=True, help="bitpipe model JSON")
    p.add_argument("--init", required=True,
                   help="checkpoint holding the initial parameters")
    p.add_argument("--data", required=True, help="flat uint16 token file")
    p.add_argument("--steps", type=int, required=True)
    p.add_argument("--microbatches", type=int, required=True,
                   help="micro-batches per data-parallel copy (N)")
    p.add_argument("--dp", type=int, default=1, help="copies (K)")
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--sampling", choices=["random", "sequential"],
                   default="random")
    p.add_argument("--lr", type=float, default=1e-3)
    p.add_argument("--weight-decay", type=float, default=0.01)
    p.add_argument("--max-grad-norm", type=float, default=0.0)
    p.add_argument("--adam-beta1", type=float, default=0.9)
    p.add_argument("--adam-beta2", type=float, default=0.999)
    p.add_argument("--adam-eps", type=float, default=1e-8)
    p.add_argument("--lr-warmup-steps", type=int, default=0)
    p.add_argument("--lr-decay-style", default="constant",
                   choices=["constant", "linear", "cosine"])
    p.add_argument("--lr-decay-steps", type=int, default=0,
                   help="default: --steps")
    p.add_argument("--min-lr", type=float, default=0.0)
    p.add_argument("--metrics", required=True)
    p.add_argument("--save", required=True)
    return p.parse_args(argv)


def main(argv):
    a = parse_args(argv)
    with open(a.config) as f:
        config = json.load(f)
    model = make_model(config)
    loaded, _ = safetensors_io.read(a.init)
    params = {k: v for k, v in loaded.items() if not k.startswith("optim.")}
    tokens = np.fromfile(a.data, dtype="<u2").astype(np.int64)
    batches = Batches(tokens, config["family"], config["microbatch_size"],
                      config["seq_len"], config["vocab"], a.seed, a.sampling)
    optimizer = AdamW(a.lr, a.weight_decay, a.max_grad_norm, a.adam_beta1,
                      a.adam_beta2, a.adam_eps)
    decay_steps = a.lr_decay_steps or a.steps
    total = a.microbatches * a.dp
    with open(a.metrics, "w") as metrics:
        for step in range(a.steps):
            grads = {k: np.zeros_like(v) for k, v in params.items()}
            loss = 0.0
            for copy in range(a.dp):
                for m in range(a.microbatches):
                    g = global_index(step, copy, a.dp, m, a.microbatches)
                    inputs, labels = batches.get(g)
                    l, gr = model.loss_and_grads(params, inputs, labels,
                                                 Dropout(a.seed, g))
                    loss += l
                    for k in grads:
                        grads[k] += gr[k]
            for k in grads:
                grads[k] /= total
            optimizer.lr = learning_rate(a.lr, step + 1, a.lr_warmup_steps,
                                         a.lr_decay_style, decay_steps,
                                         a.min_lr)
            norm = optimizer.step(params, grads)
            metrics.write(json.dumps({"step": step + 1, "loss": loss / total,
                                      "grad_norm": norm,
                                      "lr": optimizer.lr}) + "\n")
    safetensors_io.write(a.save, params, {"step": a.steps})
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
