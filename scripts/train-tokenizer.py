#!/usr/bin/env python3
"""train-tokenizer.py: a byte-level BPE tokenizer trained on a corpus.

    train-tokenizer.py --vocab V -o tokenizer.json FILE...

Trains the kind of tokenizer GPT-2 has (Hugging Face `tokenizers`: a BPE
model after a ByteLevel pre-tokenizer, the 256 byte symbols first, then the
V - 256 most useful merges) on the files, and writes its tokenizer.json,
which `bitpipe-tokenize --tokenizer` turns text into token files with
(docs/data.md). No special tokens: documents are concatenated as text.

Needs the pinned `tokenizers` of scripts/tokenizers-requirements.txt (how to
install it is written there); run this script with that environment's
python. The output is written to a temporary file and renamed into place.
"""
import argparse
import os
import sys
import tempfile


def main(argv):
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--vocab", type=int, required=True,
                   help="ids of the tokenizer (>= 256: the bytes come first); "
                        "the model's vocab must be at least this")
    p.add_argument("-o", "--output", required=True, help="tokenizer.json")
    p.add_argument("files", nargs="+", help="the training text")
    a = p.parse_args(argv)
    if a.vocab < 256:
        p.error(f"--vocab must be at least 256 (the byte symbols), got {a.vocab}")
    for f in a.files:
        if not os.path.isfile(f):
            p.error(f"{f}: not a file")
    try:
        from tokenizers import Tokenizer, decoders, models, pre_tokenizers, trainers
    except ImportError:
        sys.exit("train-tokenizer: the `tokenizers` package is missing: install "
                 "the pinned one as scripts/tokenizers-requirements.txt says, "
                 "and run this script with that environment's python")
    tokenizer = Tokenizer(models.BPE())
    tokenizer.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False)
    tokenizer.decoder = decoders.ByteLevel()
    trainer = trainers.BpeTrainer(
        vocab_size=a.vocab, special_tokens=[], show_progress=False,
        initial_alphabet=pre_tokenizers.ByteLevel.alphabet())
    tokenizer.train(a.files, trainer)
    folder = os.path.dirname(os.path.abspath(a.output))
    fd, temp = tempfile.mkstemp(dir=folder, prefix=".tokenizer.", suffix=".tmp")
    os.close(fd)
    try:
        tokenizer.save(temp)
        os.replace(temp, a.output)
    finally:
        if os.path.exists(temp):
            os.remove(temp)
    print(f"train-tokenizer: {tokenizer.get_vocab_size()} ids from "
          f"{len(a.files)} file(s) -> {a.output}")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
