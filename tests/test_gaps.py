"""benchmarks/gaps.py: encoders' gaps to use-m3 over recover records."""

import json

import pytest

from bisent.errors import BisentError
from bisent.evaluate import paired_gap
from gaps import gaps, load_records, main


def _rec(enc, domain, pair, st, ts, score="csls", paired=None):
    r = {"task": "recover", "pair": pair, "domain": domain, "encoder": enc, "score": score, "n": 300, "split": "test",
         "error_src_tgt": st, "error_tgt_src": ts}
    if paired:
        r.update({"vs": "use-m3", "paired_src_tgt": paired[0], "paired_tgt_src": paired[1]})
    return r


def _paired(only, only_ref, n=300):
    import numpy as np
    a, b = np.zeros(n, bool), np.zeros(n, bool)
    a[:only] = True
    b[only:only + only_ref] = True
    return paired_gap(a, b)


@pytest.fixture
def results(tmp_path):
    recs = [
        _rec("use-m3", "gnome", "en-de", 5.0, 4.0),
        _rec("S", "gnome", "en-de", 9.0, 9.0),                                 # an older record: replaced below
        _rec("S", "gnome", "en-de", 6.33, 3.0, paired=(_paired(5, 1), _paired(0, 3))),
        _rec("use-m3", "dict", "en-it", 32.0, 30.0),
        _rec("S", "dict", "en-it", 20.0, 30.5, paired=(_paired(2, 38), _paired(3, 2))),
        _rec("S", "dict", "en-it", 1.0, 1.0, score="cosine"),                  # another score: not read
        _rec("use-m3", "libreoffice", "en-de", 5.0, 4.4),
        _rec("S", "libreoffice", "en-de", 9.0, 9.0),                           # in domain: left out by default
        _rec("S", "gettext", "en-fr", 1.0, 1.0),                               # no use-m3 record: left out
    ]
    path = tmp_path / "recover.jsonl"
    path.write_text("".join(json.dumps(r) + "\n" for r in recs), encoding="utf-8")
    return path


def test_gaps_over_the_directions_both_ran(results):
    g = gaps(load_records([results]), "S")
    assert g["directions"] == 4 and g["paired_directions"] == 4
    assert g["mean_error"] == pytest.approx((6.33 + 3.0 + 20.0 + 30.5) / 4, abs=0.01)
    assert [(x["domain"], x["direction"]) for x in g["behind_more_than_1"]] == [("gnome", "src_tgt")]
    assert g["points_behind_summed"] == pytest.approx(1.33 + 0.5, abs=0.01)
    assert g["significantly_behind"] == []                                       # 5 against 1 item: not significant
    assert [(x["domain"], x["direction"]) for x in g["significantly_ahead"]] == [("dict", "src_tgt")]
    assert gaps(load_records([results]), "S", exclude_domains=())["directions"] == 6


def test_main_prints_a_summary_line_and_the_list(results, capsys):
    main(["-e", "S", "--results", str(results.parent), "--list"])
    out = capsys.readouterr().out.splitlines()
    head = json.loads(out[0])
    assert head["behind_more_than_1"] == 1 and head["significantly_ahead"] == 1
    assert any("gnome de->en" not in ln and "gnome en->de: 6.33 against 5.00" in ln for ln in out)


def test_bad_records_and_unknown_encoders_are_one_line_errors(results, tmp_path, capsys):
    bad = tmp_path / "bad.jsonl"
    bad.write_text(json.dumps(_rec("S", "dict", "en-it", 1, 1)) + "\n{oops\n", encoding="utf-8")
    with pytest.raises(BisentError, match=r"bad.jsonl:2: not a JSON record"):
        load_records([bad])
    with pytest.raises(SystemExit, match=r"^bisent: error: .*missing.jsonl: no such recover records file$"):
        main(["-e", "S", "--results", str(tmp_path / "missing.jsonl")])
    with pytest.raises(SystemExit, match=r"^bisent: error: -e T: no csls recover record beside use-m3's"):
        main(["-e", "T", "--results", str(results)])


def test_records_compare_only_on_the_same_pairs(tmp_path):
    recs = [dict(_rec("use-m3", "dict", "en-ja", 30.0, 30.0), set="aaa"),
            dict(_rec("S", "dict", "en-ja", 35.0, 35.0), set="aaa"),
            dict(_rec("use-m3", "dict", "en-ja", 10.0, 10.0), set="bbb"),       # a rebuilt set, use-m3 only
            _rec("use-m3", "gnome", "en-ja", 3.0, 3.0),                         # before fingerprints
            _rec("S", "gnome", "en-ja", 3.5, 3.5),
            dict(_rec("use-m3", "gnome", "en-ja", 1.0, 1.0), set="ccc")]
    path = tmp_path / "recover.jsonl"
    path.write_text("".join(json.dumps(r) + "\n" for r in recs), encoding="utf-8")
    g = gaps(load_records([path]), "S", points=2)
    assert g["directions"] == 4 and g["ref_mean_error"] == pytest.approx(16.5)   # 30 (set aaa) and 3 (no set)
    assert [x["domain"] for x in g["behind_more_than_2"]] == ["dict", "dict"]


def _row(n, only, only_ref, direction="src_tgt", domain="gnome"):
    return {"domain": domain, "pair": "en-ja", "direction": direction, "n": n,
            "gap": round(100 * (only - only_ref) / n, 2),
            "paired": {"only_this_wrong": only, "only_ref_wrong": only_ref}}


def test_target_chance_redraws_the_sets_item_by_item():
    from math import comb

    from gaps import target_chance
    # no item only one of them gets wrong: every redrawn set has the same gap, 0
    assert target_chance([_row(300, 0, 0), _row(193, 0, 0)], draws=500) == {
        "draws": 500, "points": 1.0, "as_measured": {"target_met": 1.0, "mean_directions_behind": 0.0},
        "likeliest_misses": [], "if_equal": {"target_met": 1.0, "mean_directions_behind": 0.0}}
    # 10 points behind on 300 items: never within 1 point as measured. As good as the reference, the 30 split
    # evenly: the gap's spread is sqrt(30) / 300 = 1.8 points, more than 1 point (4 items) behind about a quarter
    t = target_chance([_row(300, 30, 0)], draws=4000)
    assert t["as_measured"] == {"target_met": 0.0, "mean_directions_behind": 1.0}
    assert 0.68 < t["if_equal"]["target_met"] < 0.8
    assert t["likeliest_misses"] == [{"domain": "gnome", "pair": "en-ja", "direction": "src_tgt", "n": 300,
                                      "gap": 10.0, "share_behind": 1.0}]
    # 10 items, 2 only-this and 2 only-the-reference: within 1 point means b* <= c*; P(b* = c*) exactly
    p_tie = sum(comb(10, k) * comb(10 - k, k) * 0.2 ** (2 * k) * 0.6 ** (10 - 2 * k) for k in range(6))
    t = target_chance([_row(10, 2, 2)], draws=40000, seed=3)
    assert t["as_measured"]["target_met"] == pytest.approx((1 + p_tie) / 2, abs=0.01)
    # more sets, each as good as the reference: the target holds less often
    one = target_chance([_row(300, 30, 30)], draws=4000)["if_equal"]
    many = target_chance([_row(300, 30, 30, domain=f"d{i}") for i in range(10)], draws=4000)["if_equal"]
    assert many["target_met"] < one["target_met"] / 10
    assert many["mean_directions_behind"] == pytest.approx(10 * one["mean_directions_behind"], rel=0.1)


def test_resampling_needs_item_by_item_counts(results, tmp_path, capsys):
    from gaps import target_chance
    with pytest.raises(BisentError, match="needs the item-by-item counts"):
        target_chance([_row(300, 1, 1), {**_row(300, 1, 1), "paired": None}])
    main(["-e", "S", "--results", str(results), "--resample", "200"])
    out = capsys.readouterr().out.splitlines()
    assert json.loads(out[1])["resampled"]["draws"] == 200
    assert "gnome en->de (n=300, gap +1.33): more than 1 behind in" in out[2]
    old = tmp_path / "old.jsonl"
    old.write_text("".join(json.dumps(r) + "\n" for r in (_rec("use-m3", "dict", "en-it", 1, 1),
                                                         _rec("S", "dict", "en-it", 2, 2))), encoding="utf-8")
    with pytest.raises(SystemExit, match=r"^bisent: error: --resample needs the item-by-item counts"):
        main(["-e", "S", "--results", str(old), "--resample", "10"])
    with pytest.raises(SystemExit,
                       match=r"^bisent: error: --resample -5: the number of draws must be 0 \(none\) or more$"):
        main(["-e", "S", "--results", str(results), "--resample", "-5"])


def test_recommend_keeps_the_reference_where_the_encoder_is_behind_in_either_direction(results, capsys):
    from gaps import recommend

    recs = {(r["domain"], r["pair"]): r for r in recommend(gaps(load_records([results]), "S",
                                                                exclude_domains=())["rows"])}
    assert recs[("gnome", "en-de")]["use"] == "reference"                  # en->de 1.33 behind (not significant)
    assert recs[("gnome", "en-de")]["why"].startswith("behind: en->de +1.33")
    assert recs[("dict", "en-it")]["use"] == "this"                        # 12 ahead significantly, 0.5 behind
    assert recs[("dict", "en-it")]["why"] == "ahead, significantly: en->it"
    assert recs[("libreoffice", "en-de")]["use"] == "reference" and ("gettext", "en-fr") not in recs
    assert recommend(gaps(load_records([results]), "S", points=2.0)["rows"],
                     points=2.0)[1]["why"] == "within 2 point(s)"
    main(["-e", "S", "--results", str(results), "--recommend"])
    table = [ln for ln in capsys.readouterr().out.splitlines() if ln.startswith("|")]
    assert table[0] == "| domain | pair | n | use-m3 | S | use | why |" and len(table) == 2 + 3
    assert "| dict | en-it | 300 | 32.00 / 30.00 | 20.00 / 30.50 | S | ahead, significantly: en->it |" in table
