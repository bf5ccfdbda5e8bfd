"""The defaults' dead ends: inputs a default would silently mishandle stop with a one-line error or a warning."""

from __future__ import annotations

import pytest

from bisent.cli import main
from bisent.errors import BisentError
from bisent.filtering import LanguageIdFilter

EN_DE = [
    ("The museum is closed on Mondays.", "Das Museum ist montags geschlossen."),
    ("Please close the window before you leave.", "Bitte schließen Sie das Fenster, bevor Sie gehen."),
    ("The train to Berlin is late again today.", "Der Zug nach Berlin hat heute wieder Verspätung."),
    ("My brother works in a large hospital.", "Mein Bruder arbeitet in einem großen Krankenhaus."),
    ("We are going to the beach tomorrow morning.", "Wir fahren morgen früh an den Strand."),
    ("This book was written by a famous author.", "Dieses Buch wurde von einem berühmten Autor geschrieben."),
    ("The children are playing in the garden.", "Die Kinder spielen im Garten."),
    ("Where is the nearest pharmacy, please?", "Wo ist bitte die nächste Apotheke?"),
    ("I would like a cup of coffee with milk.", "Ich hätte gern eine Tasse Kaffee mit Milch."),
    ("The weather was beautiful all week.", "Das Wetter war die ganze Woche schön."),
    ("She has lived in this city for ten years.", "Sie wohnt seit zehn Jahren in dieser Stadt."),
    ("Our neighbours have bought a new car.", "Unsere Nachbarn haben ein neues Auto gekauft."),
]


def _tsv(path, pairs):
    path.write_text("".join(f"{a}\t{b}\n" for a, b in pairs), encoding="utf-8")
    return path


def test_swapped_languages_stop_with_one_line(tmp_path, capsys):
    src = _tsv(tmp_path / "en-de.tsv", EN_DE)
    cfg = tmp_path / "lid.yaml"
    cfg.write_text("- {type: empty}\n- {type: langid, require_top: false, min_prob: 0.05}\n")
    assert main(["filter", src, "-l", "de", "-L", "en", "-c", cfg,
                 "-o", tmp_path / "kept.tsv", "--rejected", tmp_path / "kept.rej.tsv"]) != 0
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and str(src) in err[0] and "swapped" in err[0] and "12 of 12" in err[0], err
    assert not (tmp_path / "kept.tsv").exists()
    # the right way round, the same file passes; the check can be turned off
    assert main(["filter", src, "-l", "en", "-L", "de", "-c", cfg,
                 "-o", tmp_path / "kept.tsv", "--rejected", tmp_path / "kept.rej.tsv"]) == 0
    assert (tmp_path / "kept.tsv").read_text(encoding="utf-8").count("\n") == len(EN_DE)
    off = tmp_path / "off.yaml"
    off.write_text("- {type: langid, check_swapped: false}\n")
    assert main(["filter", src, "-l", "de", "-L", "en", "-c", off,
                 "-o", tmp_path / "k2.tsv", "--rejected", tmp_path / "k2.rej.tsv"]) == 0


def test_swapped_check_in_a_tmx_names_the_users_file(tmp_path, capsys):
    """A memory whose language labels are the wrong way round (English text in the de variants)."""
    tus = "".join(f'<tu tuid="{i}"><tuv xml:lang="de"><seg>{a}</seg></tuv><tuv xml:lang="en"><seg>{b}</seg></tuv></tu>'
                  for i, (a, b) in enumerate(EN_DE, 1))
    tmx = tmp_path / "mem.tmx"
    tmx.write_text(f'<?xml version="1.0"?><tmx version="1.4"><header srclang="de"/><body>{tus}</body></tmx>',
                   encoding="utf-8")
    cfg = tmp_path / "lid.yaml"
    cfg.write_text("- {type: langid}\n")
    assert main(["filter", tmx, "-l", "de", "-L", "en", "-c", cfg, "-o", tmp_path / "kept.tmx",
                 "--rejected", tmp_path / "rej.tsv"]) != 0
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and str(tmx) in err[0] and "swapped" in err[0], err


def test_swapped_check_needs_enough_confident_pairs():
    step = LanguageIdFilter(src_lang="de", tgt_lang="en")
    step.fit_sample(EN_DE[:5])                            # too few pairs to decide: no error
    with pytest.raises(BisentError, match="12 of 12"):
        step.fit_sample(EN_DE)
    mixed = EN_DE[:5] + [(b, a) for a, b in EN_DE[5:]]    # 7 straight of 12: not most of them swapped
    step.fit_sample(mixed)
    assert LanguageIdFilter(src_lang="en", tgt_lang="en").sample_size() == 0


def test_review_apply_warns_when_the_interval_does_not_reach_the_precision(tmp_path, capsys):
    import json

    from bisent.review import open_review
    from test_review import is_parallel, mined_run

    out = mined_run(tmp_path, n_true=400, n_false=200)
    r = open_review(out, per_band=30)
    top = max(range(len(r.items)), key=lambda i: r.items[i].score)
    few = sorted(range(len(r.items)), key=lambda i: -r.items[i].score)[:4]     # four labels, all at the top
    for i in few:
        r.label(i, "y" if is_parallel(r.items[i].src, r.items[i].tgt) else "n")
    assert top in few
    assert main(["review", out, "--apply", "0.95", "-o", tmp_path / "cut.tsv"]) == 0
    got = json.loads(capsys.readouterr().out)
    assert got["threshold_interval"][1] is None and "not reached for certain" in got["warning"]
    for i, it in enumerate(r.items):                               # every sampled pair labelled: no warning
        r.label(i, "y" if is_parallel(it.src, it.tgt) else "n")
    assert main(["review", out, "--apply", "0.9", "-o", tmp_path / "cut2.tsv"]) == 0
    assert "warning" not in json.loads(capsys.readouterr().out)


# ---------------------------------------------------------------------------
# Formats: whole units, ids, regional variants, malformed units kept apart
# ---------------------------------------------------------------------------

RULES = "- {type: empty}\n- {type: length, min_length: 1, max_length: 4, unit: word}\n"


def _rejected(path) -> list[list[str]]:
    return [line.split("\t") for line in path.read_text(encoding="utf-8").splitlines()]


def test_xliff2_unit_of_several_segments_is_rejected_whole(tmp_path):
    xlf = tmp_path / "doc.xlf"
    xlf.write_text(
        '<?xml version="1.0" encoding="UTF-8"?>\n'
        '<xliff xmlns="urn:oasis:names:tc:xliff:document:2.0" version="2.0" srcLang="en" trgLang="de"><file id="f">'
        '<unit id="u1"><segment id="s1"><source>Open the file.</source><target>Datei öffnen.</target></segment>'
        '<segment id="s2"><source>Then save it under another name in a folder.</source>'
        '<target>Dann unter einem anderen Namen in einem Ordner speichern.</target></segment></unit>'
        '<unit id="u2"><segment><source>Close it.</source><target>Schließen.</target></segment></unit>'
        '</file></xliff>\n', encoding="utf-8")
    cfg = tmp_path / "rules.yaml"
    cfg.write_text(RULES)
    out, rej = tmp_path / "kept.xlf", tmp_path / "rej.tsv"
    assert main(["filter", xlf, "-l", "en", "-L", "de", "-c", cfg, "-o", out, "--rejected", rej]) == 0
    kept = out.read_text(encoding="utf-8")
    assert 'id="u1"' not in kept and "Open the file." not in kept and 'id="u2"' in kept
    rows = _rejected(rej)
    assert [(r[0], r[1]) for r in rows] == [("1", "whole_unit:length"), ("2", "length")]
    assert rows[0][3].startswith("[id u1/s1] Open the file.") and rows[1][3].startswith("[id u1/s2] Then")


def test_tmx_regional_variant_asked_for_and_ids_in_rejected_rows(tmp_path):
    tmx = tmp_path / "mem.tmx"
    tmx.write_text(
        '<?xml version="1.0"?><tmx version="1.4"><header srclang="en"/><body>'
        '<tu tuid="greet"><tuv xml:lang="en"><seg>Hello</seg></tuv><tuv xml:lang="de-DE"><seg>Hallo</seg></tuv>'
        '<tuv xml:lang="de-CH"><seg>Grüezi</seg></tuv></tu>'
        '<tu tuid="long"><tuv xml:lang="en"><seg>One two three four five six</seg></tuv>'
        '<tuv xml:lang="de-DE"><seg>Eins zwei drei vier fünf sechs</seg></tuv></tu>'
        '<tu tuid="lonely"><prop type="x-project">docs</prop><note>check this</note>'
        '<tuv xml:lang="en"><seg>Only English</seg></tuv></tu>'
        '</body></tmx>', encoding="utf-8")
    cfg = tmp_path / "rules.yaml"
    cfg.write_text(RULES)
    out, rej = tmp_path / "kept.tmx", tmp_path / "rej.tsv"
    assert main(["filter", tmx, "-l", "en", "-L", "de-DE", "-c", cfg, "-o", out, "--rejected", rej]) == 0
    kept = out.read_text(encoding="utf-8")
    assert 'tuid="greet"' in kept and "Grüezi" in kept          # the unit is written back whole
    rows = {r[0]: r for r in _rejected(rej)}
    assert rows["2"][1] == "length" and rows["2"][3].startswith("[id long] One two")
    lonely = rows["3"]
    assert lonely[1] == "bad_unit:no_target" and lonely[3] == "[id lonely] en: Only English"
    assert lonely[4:] == ["prop x-project=docs", "note: check this"]   # text, properties and notes apart
    # -L de names no variant: two de variants are still ambiguous
    assert main(["filter", tmx, "-l", "en", "-L", "de", "-c", cfg, "-o", tmp_path / "k2.tmx",
                 "--rejected", tmp_path / "r2.tsv"]) == 0
    assert _rejected(tmp_path / "r2.tsv")[0][1] == "bad_unit:several_target"


def test_score_all_writes_every_unit_with_every_steps_value(tmp_path, capsys):
    cfg = tmp_path / "rules.yaml"
    cfg.write_text(RULES + "- {type: numbers}\n")
    tsv = tmp_path / "in.tsv"
    tsv.write_text("Open the file.\tDatei öffnen.\n"
                   "One two three four five six\tEins zwei drei vier fünf sechs\n"
                   "a line without a tab\n"
                   "Page 3\tSeite 4\n", encoding="utf-8")
    every = tmp_path / "all.tsv"
    assert main(["filter", tsv, "-l", "en", "-L", "de", "-c", cfg, "-o", tmp_path / "kept.tsv",
                 "--rejected", tmp_path / "rej.tsv", "--score-all", every]) == 0
    rows = [line.split("\t") for line in every.read_text(encoding="utf-8").splitlines()]
    assert len(rows) == 4                                              # nothing dropped, in input order
    assert rows[0][:2] == ["Open the file.", "Datei öffnen."] and rows[0][2:] == ["kept", "13", "3,2", "0"]
    assert rows[1][2] == "length" and rows[1][4] == "6,6" and rows[1][5] == "0"   # later steps scored too
    assert rows[2][0] == "a line without a tab" and rows[2][1] == "bad_row:columns" and rows[2][2:] == ["", "", ""]
    assert rows[3][2] == "numbers" and rows[3][5] == "2"
    assert (tmp_path / "kept.tsv").read_text(encoding="utf-8") == "Open the file.\tDatei öffnen.\n"
    # TMX: properties on each unit; XLIFF 2: attributes on the unit, one value per segment
    tmx = tmp_path / "mem.tmx"
    tmx.write_text('<?xml version="1.0"?><tmx version="1.4"><header srclang="en"/><body>'
                   '<tu tuid="a"><tuv xml:lang="en"><seg>Open the file.</seg></tuv>'
                   '<tuv xml:lang="de"><seg>Datei öffnen.</seg></tuv></tu>'
                   '<tu tuid="b"><tuv xml:lang="en"><seg>One two three four five six</seg></tuv>'
                   '<tuv xml:lang="de"><seg>Eins zwei drei vier fünf sechs</seg></tuv></tu></body></tmx>',
                   encoding="utf-8")
    assert main(["filter", tmx, "-l", "en", "-L", "de", "-c", cfg, "-o", tmp_path / "kept.tmx",
                 "--rejected", tmp_path / "r.tsv", "--score-all", tmp_path / "all.tmx"]) == 0
    out = (tmp_path / "all.tmx").read_text(encoding="utf-8")
    assert out.count("<tu ") == 2 and '<prop type="x-bisent-decision">kept</prop>' in out
    assert '<prop type="x-bisent-decision">length</prop>' in out and '<prop type="x-bisent-length">6,6</prop>' in out
    xlf = tmp_path / "doc.xlf"
    xlf.write_text('<?xml version="1.0" encoding="UTF-8"?>\n<xliff xmlns="urn:oasis:names:tc:xliff:document:2.0" '
                   'version="2.0" srcLang="en" trgLang="de"><file id="f"><unit id="u1">'
                   '<segment><source>Open the file.</source><target>Datei öffnen.</target></segment>'
                   '<segment><source>One two three four five six</source>'
                   '<target>Eins zwei drei vier fünf sechs</target></segment></unit></file></xliff>\n',
                   encoding="utf-8")
    assert main(["filter", xlf, "-l", "en", "-L", "de", "-c", cfg, "-o", tmp_path / "kept.xlf",
                 "--rejected", tmp_path / "r2.tsv", "--score-all", tmp_path / "all.xlf"]) == 0
    out = (tmp_path / "all.xlf").read_text(encoding="utf-8")
    assert 'bisent:decision="whole_unit:length length"' in out and 'bisent:length="3,2 6,6"' in out
    # Moses files have no room for them
    (tmp_path / "c.en").write_text("Open the file.\n")
    (tmp_path / "c.de").write_text("Datei öffnen.\n")
    capsys.readouterr()
    assert main(["filter", tmp_path / "c.en", tmp_path / "c.de", "-l", "en", "-L", "de", "-c", cfg,
                 "-o", tmp_path / "k", "--rejected", tmp_path / "r3.tsv", "--score-all", tmp_path / "all.tsv"]) == 2
    assert "no place for the scores" in capsys.readouterr().err and not (tmp_path / "k.en").exists()


# ---------------------------------------------------------------------------
# Document matching: a cosine floor beside the margin, and the settings in the summary
# ---------------------------------------------------------------------------

def test_docs_mine_default_settings_and_cosine_floor(tmp_path, capsys):
    import json

    from bisent.documents import DEFAULT_MIN_COSINE, DEFAULT_THRESHOLD

    src = [{"id": f"s{i}", "text": [a]} for i, (a, _) in enumerate(EN_DE[:6])]
    tgt = [{"id": f"t{i}", "text": [b]} for i, (_, b) in enumerate(EN_DE[:6])]
    for name, docs in (("en.jsonl", src), ("de.jsonl", tgt)):
        (tmp_path / name).write_text("".join(json.dumps(d, ensure_ascii=False) + "\n" for d in docs),
                                     encoding="utf-8")
    base = ["documents", "mine", tmp_path / "en.jsonl", tmp_path / "de.jsonl", "-l", "en", "-L", "de",
            "-e", "char-ngram",
            "--segmentation", "given"]
    capsys.readouterr()
    assert main(base + ["-o", tmp_path / "d.tsv"]) == 0
    summary = json.loads(capsys.readouterr().out)
    assert summary["threshold"] == DEFAULT_THRESHOLD and summary["min_cosine"] == DEFAULT_MIN_COSINE
    assert main(base + ["-o", tmp_path / "all.tsv", "--threshold", "none", "--min-cosine", "none"]) == 0
    every = json.loads(capsys.readouterr().out)
    assert every["threshold"] is None and every["min_cosine"] is None
    assert every["matched"] >= max(4, summary.get("matched", 0))
    assert main(base + ["-o", tmp_path / "floor.tsv", "--threshold", "none", "--min-cosine", "0.99"]) == 0
    rows = (tmp_path / "floor.tsv").read_text(encoding="utf-8").splitlines()[1:]
    floor = [r for r in rows if "unmatched: cosine " in r and "below the floor 0.99" in r]
    assert len(floor) == every["matched"] and not any("\tmatched\t" in r for r in rows)
