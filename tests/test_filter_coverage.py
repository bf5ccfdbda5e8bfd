"""The partial-translation check (coverage) and the learned length-ratio bound, on hand-made pairs."""

import pytest

from bisent.filtering import FilterPipeline
from bisent.filtering.coverage import CoverageStep, LeaveOutStep, split_units
from bisent.filtering.rules import LengthRatioFilter

CLEAN = [
    ("Click OK.", "Klicken Sie auf OK."),
    ("Choose Format - Cells.", "Wählen Sie Format - Zellen."),
    ("The document is saved in the default format.", "Das Dokument wird im Standardformat gespeichert."),
    ("Select the cells that you want to sort.", "Wählen Sie die Zellen aus, die Sie sortieren möchten."),
    ("Opens the Print dialog.", "Öffnet den Dialog Drucken."),
    ("Inserts a new row above the selected row.", "Fügt eine neue Zeile über der ausgewählten Zeile ein."),
] * 10


def test_learned_ratio_keeps_short_real_pairs_a_fixed_ratio_rejects():
    fixed = LengthRatioFilter(max_ratio=1.8, unit="char")
    assert not fixed.keep(next(fixed.score([CLEAN[0]])))                   # 19 / 9 chars = 2.1
    learned = LengthRatioFilter(unit="char", learned=True, max_z=2.5)
    truncated = ("Select the cells that you want to sort and then choose Data - Sort to open the dialog.",
                 "Wählen Sie die Zellen")
    # an input whose short strings vary widely in length ratio (German "Klicken Sie auf ..."), long ones less
    sample = [("x" * n, "y" * round(n * r)) for n in (6, 8, 10, 12) for r in (0.9, 1.2, 1.5, 1.8, 2.1, 2.4, 2.7)]
    sample += [("x" * n, "y" * round(n * r)) for n in range(60, 120, 5) for r in (0.95, 1.05, 1.15, 1.25, 1.35)]
    learned.fit_sample(sample + [truncated])
    z = learned.score_batch(CLEAN[:6] + [truncated])
    assert all(learned.keep(v) for v in z[:6])
    assert not learned.keep(z[6]) and z[6] < 0                               # the target far too short
    assert learned.band_stats()[0]["range"][1] > (19 + 5) / (9 + 5)           # the short band allows "Click OK."
    assert learned.sample_size() == 20000 and LengthRatioFilter().sample_size() == 0


def test_learned_ratio_parameters_are_checked():
    with pytest.raises(ValueError, match="bands"):
        LengthRatioFilter(learned=True, bands=[10, 5])
    with pytest.raises(ValueError, match="max_z"):
        LengthRatioFilter(learned=True, max_z=0)


def test_split_units_sentences_then_halves():
    assert split_units("Open the file. Then save it.", "en") == ["Open the file.", "Then save it."]
    assert split_units("one two three four five six seven eight", "en", 8) == ["one two three four",
                                                                                  "five six seven eight"]
    assert split_units("Click OK.", "en") == ["Click OK."]
    assert split_units("  ", "en") == []


def _pipeline(min_coverage):
    return FilterPipeline.from_config(
        {"steps": [{"type": "coverage", "encoder": "char-ngram", "min_coverage": min_coverage}]},
        src_lang="en", tgt_lang="en")


def test_glued_pair_flagged_at_the_inserted_sentence():
    # same-language sides, so the char-ngram encoder's cosines say plainly which units match
    src = "The printer prints every page of the document."
    glued = "The printer prints every page of the document. Spreadsheets hold formulas in their cells."
    step = CoverageStep(src_lang="en", tgt_lang="en", encoder="char-ngram")
    (cov, side, unit, mismatch, cut), = step.score_batch([(src, glued)]).tolist()
    assert (side, unit, mismatch, cut) == (1, 2, 1, 0)     # the target's second sentence has no counterpart
    clean_cov = step.score_batch([(src, src)])[0, 0]
    assert clean_cov > 0.99 and cov < 0.5
    res, = _pipeline(0.5).process([(src, glued)])
    assert not res.kept and res.reason == "coverage" and res.score[1:] == [1, 2, 1, 0]   # one sentence more


def test_truncated_pair_rejected_with_its_reason_and_real_pair_kept():
    src = "Select the cells that you want to sort and then choose the sort order in the dialog."
    truncated = "Select the cells that you want"
    short = ("Click OK.", "Click OK.")
    kept, cut, ok = _pipeline(0.5).process([(src, src), (src, truncated), short])
    assert kept.kept and ok.kept
    assert not cut.kept and cut.reason == "coverage"
    assert cut.score[1:] == [0, 2, 0, 0]            # the source's second half is what the target lacks


def test_glued_pair_is_cut_at_the_inserted_sentence():
    src = "The printer prints every page of the document."
    extra = "Spreadsheets hold formulas in their cells."
    config = {"steps": [{"type": "coverage", "encoder": "char-ngram", "min_coverage": 0.5, "cut": True},
                        {"type": "empty"}]}
    pipe = FilterPipeline.from_config(config, src_lang="en", tgt_lang="en")
    end, start, middle, same = pipe.process([
        (src, f"{src} {extra}"),                                            # glued at the end of the target
        (f"{extra} {src}", src),                                            # at the start of the source
        (f"{src} {extra} The printer stops.", f"{src} The printer stops."),  # in the middle: not cut
        (src, src)])
    assert end.kept and end.pair == (src, src) and end.score is not None
    assert start.kept and start.pair == (src, src)
    assert not middle.kept and middle.reason == "coverage" and middle.pair[0].count(".") == 3
    assert same.kept and same.pair == (src, src)
    step = CoverageStep(src_lang="en", tgt_lang="en", encoder="char-ngram", min_coverage=0.5, cut=True)
    value = step.score_batch([(src, f"{src} {extra}")])[0].tolist()
    assert value[1:] == [1, 2, 1, 6] and value[0] > 0.99 and step.keep(value)  # target, sentence 2: 6 words cut
    assert step.rewrite((src, f"{src} {extra}")) == (src, src)


def test_learned_ratio_on_a_tiny_input_falls_back_to_max_ratio():
    step = LengthRatioFilter(unit="char", learned=True, max_z=2.5, max_ratio=1.8)
    pairs = [CLEAN[0], ("Select the cells that you want to sort and then choose the sort order.", "Wählen Sie die")]
    step.fit_sample(pairs)
    keep = [step.keep(v) for v in step.score_batch(pairs)]
    assert keep == [True, False]          # (19 + 5) / (9 + 5) = 1.71 kept; the truncated target rejected


def test_mismatch_coverage_is_stricter_only_where_sentence_counts_differ():
    step = CoverageStep(src_lang="en", tgt_lang="en", encoder="char-ngram", min_coverage=0.1, mismatch_coverage=0.5)
    assert step.keep([0.3, 1, 2, 0]) and not step.keep([0.3, 1, 2, 1]) and step.keep([0.6, 1, 2, 1])
    assert not step.keep([0.05, 0, 1, 0]) and not step.keep([float("nan"), 0, 1, 0])
    with pytest.raises(ValueError, match="split_words"):
        CoverageStep(src_lang="en", tgt_lang="en", encoder="char-ngram", split_words=1)


@pytest.mark.slow
def test_default_coverage_with_use_m3_keeps_a_short_real_pair_and_names_the_unmatched_sentence(tmp_path):
    from bisent.filtering import filter_file

    lines = ["Click OK.\tKlicken Sie auf OK.",                                          # cosine 0.95: kept
             "Open the file.\tÖffnen Sie die Datei. Die Tabelle enthält Formeln.",        # glued target
             "Click OK. Then close the window.\tKlicken Sie auf OK."]                    # truncated target
    (tmp_path / "in.tsv").write_text("\n".join(lines) + "\n")
    config = {"steps": [{"type": "coverage", "encoder": "use-m3", "min_coverage": 0.15, "mismatch_coverage": 0.3}]}
    summary = filter_file(tmp_path / "in.tsv", tmp_path / "k.tsv", tmp_path / "r.tsv", "en", "de", config,
                          progress=False)
    assert (tmp_path / "k.tsv").read_text().splitlines() == lines[:1]
    rows = [r.split("\t") for r in (tmp_path / "r.tsv").read_text().splitlines()]
    assert [r[:2] for r in rows] == [["2", "coverage"], ["3", "coverage"]]
    assert [r[2].split(",")[1:4] for r in rows] == [["side=1", "unit=2", "mismatch=1"],
                                                    ["side=0", "unit=2", "mismatch=1"]]
    assert summary["lines"] == 3 and summary["rejected_by"] == {"coverage": 2}


def test_leave_out_names_the_glued_sentence_and_the_half_a_truncated_side_lacks():
    # same-language sides: the char-ngram encoder's cosines say plainly what leaving a unit out does
    step = LeaveOutStep(src_lang="en", tgt_lang="en", encoder="char-ngram", max_gain=0.02)
    src = "The printer prints every page of the document."
    glued = (src, src + " Spreadsheets hold formulas in their cells.")
    truncated = ("Select the cells that you want to sort and then choose Data in the menu.",
                 "Select the cells that you want to sort")
    clean = ("Open the file. Then save it under a new name.", "Open the file. Then save it under a new name.")
    v = step.score_batch([glued, truncated, clean, ("Click OK.", "Click OK.")])
    assert not step.keep(v[0]) and list(v[0][1:]) == [1, 2]        # the target's second (last) sentence
    assert not step.keep(v[1]) and list(v[1][1:]) == [0, 2]        # the source's second half: the target lacks it
    assert step.keep(v[2]) and v[2][0] < 0                          # leaving out a translated unit costs cosine
    assert step.keep(v[3]) and list(v[3]) == [0, -1, 0]             # one unit a side: nothing to leave out
    with pytest.raises(ValueError, match="split_words"):
        LeaveOutStep(src_lang="en", tgt_lang="en", encoder="char-ngram", split_words=1)


@pytest.mark.slow
def test_leave_out_with_use_m3_on_real_pairs():
    step = LeaveOutStep(src_lang="en", tgt_lang="de", encoder="use-m3", max_gain=0.05)
    pairs = [("Click OK.", "Klicken Sie auf OK."),
             ("Select the cells that you want to sort. Then choose Data - Sort.",
              "Wählen Sie die Zellen aus, die Sie sortieren möchten. Wählen Sie dann Daten - Sortieren."),
             ("Open the file.", "Öffnen Sie die Datei. Die Tabelle enthält Formeln."),                       # glued
             ("Select the cells that you want to sort and then choose Data - Sort to open the dialog.",
              "Wählen Sie die Zellen aus, die Sie sortieren möchten")]                                      # truncated
    v = step.score_batch(pairs)
    assert [step.keep(x) for x in v] == [True, True, False, False]
    assert list(v[2][1:]) == [1, 2]


TWO = {"max_gain": 0.05, "length_z": 2.5, "length_gain": -0.02, "toward_z": 1.0, "hard_gain": 0.1}


def test_two_signals_reject_only_where_length_and_leave_out_agree():
    step = LeaveOutStep(src_lang="en", tgt_lang="de", encoder="char-ngram", **TWO)
    # [gain, side, unit, z, longer_gain, longer_units]
    assert not step.keep([0.0, -1, 0, 3.6, 0.0, 1])          # out of band, one unit: no second signal to ask
    assert step.keep([-0.05, 1, 2, 3.0, -0.05, 2])          # out of band, but the longer side needs every unit
    assert not step.keep([0.0, 1, 2, 3.0, 0.01, 2])          # out of band and the longer side gains
    assert not step.keep([0.0, 0, 2, -3.0, 0.01, 2])         # the same with the source the longer
    assert step.keep([0.07, 1, 1, 0.2, 0.07, 2])            # a gain, the sides of a length: a loose half
    assert not step.keep([0.07, 1, 1, 1.5, 0.07, 2])         # a gain on the longer side: glued
    assert not step.keep([0.07, 0, 1, -1.5, -0.1, 2])        # ... the source the longer and the gaining one
    assert step.keep([0.07, 0, 1, 1.5, -0.1, 2])            # the gaining side is the shorter one
    assert not step.keep([0.12, 1, 1, 0.0, 0.12, 2])         # a gain above hard_gain whatever the lengths
    assert not step.keep([float("nan"), -1, 0, 0.0, 0.0, 1])
    lengths = LeaveOutStep(src_lang="en", tgt_lang="de", encoder="char-ngram", max_gain=None, length_z=2.5,
                           length_gain=-0.02)
    assert lengths.keep([0.3, 1, 2, 0.0, 0.3, 2])            # lengths only: no bound on the gain alone
    assert not lengths.keep([0.0, -1, 0, 3.6, 0.0, 1])
    bad_options = (({"hard_gain": 0.1}, "hard_gain"), ({"max_gain": None}, "max_gain"), ({"length_z": 0}, "length_z"),
                   ({"max_gain": None, "length_z": 2.5, "toward_z": 1.0}, "max_gain"))
    for bad, match in bad_options:
        with pytest.raises(ValueError, match=match):
            LeaveOutStep(src_lang="en", tgt_lang="de", encoder="char-ngram", **bad)


def test_two_signals_learn_the_band_and_ask_the_longer_side():
    # same-language sides: the char-ngram encoder's cosines say plainly what leaving a unit out does
    step = LeaveOutStep(src_lang="en", tgt_lang="en", encoder="char-ngram", **TWO)
    assert step.sample_size() == 20000
    step.fit_sample([(s, s) for s, _ in CLEAN[:6]] * 6)                      # a band of ratio 1
    src = "Open the file and save the document under a new name."
    free = (src, "Open the file, please, and then save the document under a new name now.")
    glued = (src, src + " Spreadsheets hold formulas in their cells.")
    short = ("Save", "Save the document now")
    v = step.score_batch([free, glued, short, (src, src)])
    assert v.shape == (4, 6) and all(x[3] > 2.5 for x in v[:3])                 # all three out of the band
    assert step.keep(v[0]) and v[0][4] < -0.02 and v[0][5] == 2                # each half of the longer side needed
    assert not step.keep(v[1]) and v[1][4] > 0 and v[1][1] == 1               # the glued sentence gains
    assert not step.keep(v[2]) and v[2][5] == 1                                # one unit: the length alone decides
    assert step.keep(v[3]) and abs(v[3][3]) < 1
    step.reset()
    assert step._length.stats is None
    plain = LeaveOutStep(src_lang="en", tgt_lang="en", encoder="char-ngram", max_gain=0.05)
    assert plain.sample_size() == 0 and plain.score_batch([free]).shape == (1, 3)


@pytest.mark.slow
def test_two_signals_with_use_m3_keep_free_help_translations():
    # published LibreOffice help pairs whose length is far out of the band of short strings, and cut or glued ones
    step = LeaveOutStep(src_lang="en", tgt_lang="de", encoder="use-m3", **TWO)
    step.fit_sample(CLEAN)
    cell = "Returns the last used cell in a given range or sheet."
    row = "The last used row in a given range or sheet."
    pairs = [(cell, "Gibt die zuletzt verwendete Zelle in einem bestimmten Bereich oder einer bestimmten Tabelle "
                    "zurück."),
             ("Calculates the values of the right tail of the F distribution.",
              "Berechnet die Werte der F-Verteilungsfunktion."),
             (cell, "Gibt die zuletzt verwendete Zelle"),                                               # truncated
             (row, "Die letzte verwendete Zeile in einem bestimmten Bereich oder einer bestimmten Tabelle. "
                   "Gibt die Position einer vorhandenen Zeichenfolge zurück.")]                           # glued
    v = step.score_batch(pairs)
    assert all(abs(x[3]) > 2.5 for x in v)                     # a length bound alone would reject all four
    assert [step.keep(x) for x in v] == [True, True, False, False]
    assert [int(x[1]) for x in v[2:]] == [0, 1]                # the source's lost half, the target's extra sentence


def test_two_signals_say_which_signals_rejected():
    from bisent.report.explain import crossed_bound

    step = LeaveOutStep(src_lang="en", tgt_lang="de", encoder="char-ngram", **TWO)
    assert crossed_bound(step, [0.0, -1, 0, 3.6, 0.0, 1]) == \
        "leave_out length z 3.6 beyond length_z 2.5 (target longer) and it is one unit"
    assert crossed_bound(step, [0.0, 0, 2, -3.0, 0.01, 2]) == \
        "leave_out length z -3 beyond length_z 2.5 (source longer) and it gains 0.01 > length_gain -0.02 without a unit"
    assert crossed_bound(step, [0.07, 1, 1, 1.5, 0.07, 2]) == \
        "leave_out target gain 0.07 > max_gain 0.05 and the target is longer by z 1.5 > toward_z 1"
    assert crossed_bound(step, [0.12, 1, 1, 0.0, 0.12, 2]) == "leave_out target gain 0.12 > hard_gain 0.1"
    assert step.describe_rejection([-0.05, 1, 2, 3.0, -0.05, 2]) is None           # kept


def test_a_list_value_is_written_with_its_parts_named():
    from bisent.filtering.pipeline import FilterPipeline
    from bisent.filtering.records import format_value, rejected_line

    two = LeaveOutStep(name="length_ratio", src_lang="en", tgt_lang="de", encoder="char-ngram", max_gain=None,
                       length_z=2.5, length_gain=-0.02)
    pipe = FilterPipeline([two, LeaveOutStep(src_lang="en", tgt_lang="de", encoder="char-ngram")])
    value = [0.0, -1.0, 0.0, 3.61787, 0.0, 1.0]
    assert format_value(value, pipe.value_names("length_ratio")) == \
        "gain=0,side=-1,unit=0,z=3.61787,longer_gain=0,longer_units=1"
    assert pipe.value_names("leave_out") == ("gain", "side", "unit")
    assert format_value([0.05, 1.0], pipe.value_names("leave_out")) == "0.05,1"     # another length: bare numbers
    assert format_value(0.5, pipe.value_names("nope")) == "0.5"
    line = rejected_line(18, "length_ratio", value, b"a\tb", names=pipe.value_names("length_ratio"))
    assert line.decode().split("\t")[2] == "gain=0,side=-1,unit=0,z=3.61787,longer_gain=0,longer_units=1"
