"""Everyday monolingual text from fortune cookies: the reader, its filters, and a student distilled on it."""

import shutil

import numpy as np
import pytest

from bisent.cli import main
from bisent.datasets import fortunes
from bisent.errors import BisentError

FILE = ("Der frühe Vogel fängt den Wurm.\n\t\t-- Sprichwort\n%\nKurz.\n%\n"
        "Wer zuletzt lacht,\nlacht am besten.\n%\n  /\\_/\\\n ( o.o )\n  > ^ < :-) ## 12 34\n%\n"
        "\x1b[1mFett\x1b[0m gedruckt ist halb gelesen.\n%\nwer zuletzt lacht, lacht am besten.\n%\n"
        "Die Gnade unseres Herrn sei mit euch allen, Amen, sprach er.\n")


def test_cookies_split_and_filtered(tmp_path):
    assert fortunes.split_cookies(FILE)[:3] == ["Der frühe Vogel fängt den Wurm.", "Kurz.",
                                                "Wer zuletzt lacht, lacht am besten."]
    assert fortunes.split_cookies("_\bb_\bo_\bl_\bd text\n")[0] == "bold text"       # overstriking
    root = tmp_path / "usr/share/games/fortunes/de"
    (root / "off").mkdir(parents=True)
    (root / "sprueche").write_text(FILE, encoding="utf-8")
    (root / "sprueche.u8").symlink_to("sprueche")                                  # read once
    (root / "sprueche.dat").write_bytes(b"\0\0\0\2binary index")
    (root / "latin").write_bytes("Größe zählt nicht immer, sagt man.\n".encode("latin-1"))
    (root / "off" / "rot13").write_text("Qnf vfg avpug sÃ¼e nyyr Bueera orfgvzzg.\n", encoding="utf-8")
    removed = dict.fromkeys(fortunes.REMOVAL_REASONS, 0)
    held = fortunes.word_runs("die gnade unseres herrn sei mit euch allen, amen")
    kept = fortunes.package_cookies(tmp_path, "de", removed, held)
    assert sorted(kept) == ["Der frühe Vogel fängt den Wurm.", "Fett gedruckt ist halb gelesen.",
                            "Wer zuletzt lacht, lacht am besten."]
    assert kept == fortunes.package_cookies(tmp_path, "de", dict.fromkeys(fortunes.REMOVAL_REASONS, 0), held)
    assert removed == {"not_utf8_files": 1, "too_short": 1, "too_long": 0, "few_letters": 1, "bible_overlap": 1,
                       "duplicate": 1}
    assert fortunes.drop_reason("天下大事必作于细", "zh-cn") == "too_short"
    assert fortunes.drop_reason("x " * 300, "en") == "too_long"


def test_unknown_language_is_a_one_line_error(tmp_path):
    with pytest.raises(BisentError, match="no fortunes package known for xx"):
        fortunes.write_fortunes(tmp_path / "f", ("de", "xx"))
    assert main(["data", "fortunes", "--langs", "de,xx", "-o", str(tmp_path / "f")]) == 2


def _fetched_cookies(lang):
    if shutil.which("apt-get") is None or shutil.which("dpkg-deb") is None:
        pytest.skip("needs apt-get and dpkg-deb (a Debian-based system)")
    try:
        folder = fortunes.fetch_package(fortunes.PACKAGES[lang])
    except BisentError as e:
        pytest.skip(f"cannot fetch {fortunes.PACKAGES[lang]} from Debian's archive: {e}")
    return fortunes.package_cookies(folder, lang, dict.fromkeys(fortunes.REMOVAL_REASONS, 0))


@pytest.mark.slow
@pytest.mark.network
def test_a_student_distilled_on_everyday_text_moves_towards_its_teacher_on_held_out_cookies(tmp_path, monkeypatch):
    """A toy mix of German and Spanish cookies (300 each) distils a tiny DAN for 120 steps; 100 other cookies of each
    language, never trained on, end closer to the teacher's vectors than before training (mean cosine)."""
    torch = pytest.importorskip("torch")
    from bisent.encoders import get_encoder
    from bisent.training.data import Monotext
    from bisent.training.loop import train
    from bisent.training.recipe import validate_recipe

    cookies = {lang: _fetched_cookies(lang) for lang in ("de", "es")}
    monkeypatch.setenv("BISENT_CACHE", str(tmp_path / "cache"))        # the teacher's vectors of this test only
    torch.set_num_threads(1)
    recipe = validate_recipe({"seed": 1, "architecture": "dan", "objective": "distill",
                              "model": {"buckets": 4096, "embed_dim": 32, "hidden": [64]},
                              "objectives": {"teacher": "char-ngram"}, "data": {"batch_size": 32},
                              "optim": {"lr": 0.003},
                              "train": {"log_every": 10, "eval_every": 1000, "checkpoint_every": 1000, "threads": 1}})
    monos = [Monotext(lang, c[:300]) for lang, c in cookies.items()]
    s0 = get_encoder(str(train(recipe, [], monos, [], tmp_path / "m0", max_steps=0, progress=False).model_dir))
    s1 = get_encoder(str(train(recipe, [], monos, [], tmp_path / "m", max_steps=120, progress=False).model_dir))
    teacher = get_encoder("char-ngram")
    for lang, c in cookies.items():
        held = c[300:400]
        assert len(held) == 100 and not set(held) & set(c[:300])
        t = teacher.encode(held, lang)
        before, after = (float(np.mean(np.sum(s.encode(held, lang) * t, axis=1))) for s in (s0, s1))
        assert after > before + 0.15, (lang, before, after)            # about 0.0 -> 0.2 in both languages
