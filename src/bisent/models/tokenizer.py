"""A joint SentencePiece model over the training text of all languages, saved as ``tokenizer.model``.

One vocabulary for every language (Artetxe & Schwenk's joint BPE; Kim et
al.'s joint BPE over both languages). Lower-casing, when the recipe asks for
it, is part of the model file (SentencePiece's ``nmt_nfkc_cf`` normaliser), so
training and later embedding always preprocess the same way. Ids 0-3 are
``<pad> <unk> <s> </s>``.
"""

from __future__ import annotations

import io
from pathlib import Path
from typing import Iterable

from ..errors import BisentError

PAD, UNK, BOS, EOS = 0, 1, 2, 3
FILENAME = "tokenizer.model"


class Tokenizer:
    """Text -> subword ids, truncated to ``max_len``; wraps a SentencePiece model."""

    def __init__(self, proto: bytes, max_len: int, source: str = FILENAME):
        import sentencepiece as spm

        self.proto = proto
        self.max_len = max_len
        self.sp = spm.SentencePieceProcessor()
        try:
            self.sp.LoadFromSerializedProto(proto)
        except (RuntimeError, OSError, TypeError) as e:
            raise BisentError(f"{source}: corrupt SentencePiece model ({' '.join(str(e).split())[:120]})") from None
        if self.sp.pad_id() != PAD or self.sp.bos_id() != BOS or self.sp.eos_id() != EOS:
            raise BisentError(f"{source}: not a bisent tokenizer (expected ids pad=0 unk=1 bos=2 eos=3)")

    @classmethod
    def load(cls, path, max_len: int) -> "Tokenizer":
        """Read ``tokenizer.model``; a missing or corrupt file is a one-line error naming it."""
        path = Path(path)
        if not path.is_file():
            raise BisentError(f"{path}: missing (the model directory needs its tokenizer)")
        return cls(path.read_bytes(), max_len, str(path))

    @property
    def vocab_size(self) -> int:
        return self.sp.get_piece_size()

    def encode(self, texts: list[str]) -> list[list[int]]:
        """Subword ids per text, at most ``max_len`` each (no BOS/EOS; the model adds those)."""
        return [ids[: self.max_len] for ids in self.sp.encode(list(texts))]

    def pieces(self) -> list[str]:
        """The vocabulary, id order."""
        return [self.sp.id_to_piece(i) for i in range(self.vocab_size)]

    @classmethod
    def from_model_dir(cls, md) -> "Tokenizer":
        """The tokenizer a model directory's ``config.json`` names (``"tokenizer": {"file", "max_len"}``),
        checked against the model's ``vocab_size``."""
        tc = md.config.get("tokenizer")
        if not isinstance(tc, dict) or not isinstance(tc.get("max_len"), int) or isinstance(tc["max_len"], bool) \
                or tc["max_len"] < 1:
            raise md.error("needs 'tokenizer': {'file': ..., 'max_len': a positive integer}")
        name = str(tc.get("file", FILENAME))
        tok = cls(md.read_file(name, "tokenizer"), tc["max_len"], str(md.path / name))
        if tok.vocab_size != md.hp.get("vocab_size"):
            raise BisentError(f"{md.path / name}: vocabulary of {tok.vocab_size} pieces, "
                              f"config.json says {md.hp.get('vocab_size')}")
        return tok

    def config(self) -> dict:
        """The ``tokenizer`` section of a model's ``config.json``."""
        return {"file": FILENAME, "max_len": self.max_len}

    def save(self, path) -> None:
        from ..io import atomic_write

        with atomic_write(path, "wb") as f:
            f.write(self.proto)


def train_tokenizer(texts: Iterable[str], *, vocab_size: int, model_type: str = "bpe", lowercase: bool = True,
                    character_coverage: float = 1.0, input_sentence_size: int = 1_000_000, seed: int = 1,
                    max_len: int = 60) -> Tokenizer:
    """Train a joint SentencePiece model on ``texts`` (all languages together), deterministically.

    ``vocab_size`` is an upper bound: on a small corpus the model stops when
    nothing is left to merge (``hard_vocab_limit=False``).
    """
    import sentencepiece as spm

    spm.set_random_generator_seed(seed)
    texts = [t for t in texts if t.strip()]
    if not texts:
        raise BisentError("tokenizer: no training text")
    buf = io.BytesIO()
    try:
        spm.SentencePieceTrainer.train(
            sentence_iterator=iter(texts), model_writer=buf, vocab_size=vocab_size, model_type=model_type,
            hard_vocab_limit=False, character_coverage=character_coverage,
            input_sentence_size=input_sentence_size, shuffle_input_sentence=True,
            normalization_rule_name="nmt_nfkc_cf" if lowercase else "nmt_nfkc",
            pad_id=PAD, unk_id=UNK, bos_id=BOS, eos_id=EOS, num_threads=1, minloglevel=2)
    except RuntimeError as e:
        raise BisentError(f"tokenizer: SentencePiece training failed ({' '.join(str(e).split())[:200]})") from None
    return Tokenizer(buf.getvalue(), max_len, "trained tokenizer")
