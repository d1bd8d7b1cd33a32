#!/usr/bin/env python3
"""Writes tiny.model, a SentencePiece model trained on the project's README, and tiny.expected.json:
what the sentencepiece library itself says of it, for tests/cli/test_tokenizer_vocab.cpp.

The expected vocabulary with special tokens follows Megatron-LM's SentencePieceTokenizer
(megatron/core/tokenizers/text/libraries/sentencepiece_tokenizer.py, add_special_tokens in legacy
mode): a token is added when piece_to_id() answers the unknown token's id and it is not added yet.
Run once with Debian's python3-sentencepiece; the outputs are committed, so tests need no library.
"""
import json
import os

import sentencepiece as spm

HERE = os.path.dirname(os.path.abspath(__file__))
README = os.path.join(HERE, "..", "..", "..", "README.md")

spm.SentencePieceTrainer.train(
    input=README, model_prefix=os.path.join(HERE, "tiny"), vocab_size=600, model_type="unigram",
    byte_fallback=True, user_defined_symbols=["<tool>"], control_symbols=["<ctl>"],
    character_coverage=1.0, num_threads=1, normalization_rule_name="identity")

sp = spm.SentencePieceProcessor(model_file=os.path.join(HERE, "tiny.model"))
special = ["<unk>", "<s>", "<tool>", "<ctl>", "<new_a>", "<new_b>", "<new_a>", "\u2581the"]
added = []
for token in special:
    if sp.piece_to_id(token) == sp.unk_id() and token not in added:
        added.append(token)
expected = {
    "piece_size": sp.get_piece_size(),
    "unk_piece": sp.id_to_piece(sp.unk_id()),
    "special_tokens": special,
    "vocab_with_special_tokens": sp.get_piece_size() + len(added),
    "sentencepiece_version": spm.__version__,
}
with open(os.path.join(HERE, "tiny.expected.json"), "w") as f:
    json.dump(expected, f, indent=1)
    f.write("\n")
os.remove(os.path.join(HERE, "tiny.vocab"))
