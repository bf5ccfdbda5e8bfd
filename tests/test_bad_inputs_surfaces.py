"""Bad inputs to review (its labels, run records and server), the JSONL, YAML and XML readers, language codes and the
temp files of killed writes: each is one ``bisent: error:`` line or correct handling, never a traceback; every
file that existed before is unchanged; every input line is accounted for. Tiny inputs, the char-ngram encoder; no
model download."""

from __future__ import annotations

import http.client
import json
import os
import socket
import threading
import time
from pathlib import Path

import pytest

from bisent.cli import main
from conftest import snapshot
from test_review import mined_run

DEEP = 5000


def run_main(argv, capsys) -> tuple[int, str, str]:
    capsys.readouterr()
    rc = main([str(a) for a in argv])
    cap = capsys.readouterr()
    return rc, cap.out, cap.err


def one_error(argv, capsys, root: Path, expected: str) -> str:
    """Run ``argv``: exit 2, one error line holding ``expected``, no traceback, nothing under ``root`` changed."""
    before = snapshot(root)
    rc, out, err = run_main(argv, capsys)
    errors = [ln for ln in err.splitlines() if ln.startswith("bisent: error:")]
    assert rc == 2, (rc, err)
    assert len(errors) == 1 and expected in errors[0], err
    assert "Traceback" not in err + out
    after = snapshot(root)
    assert {k: v for k, v in after.items() if k in before} == before
    return errors[0]


def deep_json(depth: int = DEEP) -> str:
    return "[" * depth + "]" * depth


# ---------------------------------------------------------------------------
# Review: its labels file and its run's record are read, never written, unless they are its outputs
# ---------------------------------------------------------------------------

def test_review_summary_leaves_a_labels_file_without_final_newline_unchanged(tmp_path, capsys):
    out = mined_run(tmp_path, 40, 20)
    for data in (b"notes\nlast", b"last"):
        notes = tmp_path / "n.txt"
        notes.write_bytes(data)
        one_error(["review", out, "--labels", notes, "--summary"], capsys, tmp_path, "n.txt:1:")
        assert notes.read_bytes() == data
        one_error(["eval", "bucc", out, "--labels", notes], capsys, tmp_path, "n.txt:1:")
        assert notes.read_bytes() == data


def test_review_outputs_never_overwrite_the_runs_record_or_labels(tmp_path, capsys):
    out = mined_run(tmp_path, 40, 20)
    rec = Path(f"{out}.report.json")
    from bisent.review import open_review

    r = open_review(out, per_band=2)
    r.label(0, "y")
    for argv in (["--report", rec], ["--apply", "0.5", "-o", rec], ["--report", r.labels_path],
                 ["--apply", "0.5", "-o", r.labels_path]):
        one_error(["review", out, *argv], capsys, tmp_path, "refusing to overwrite an input")
    rc, _, err = run_main(["review", out, "--summary"], capsys)
    assert rc == 0, err


def test_any_command_refuses_to_overwrite_review_labels_or_another_outputs_record(tmp_path, capsys):
    out = mined_run(tmp_path, 40, 20)
    from bisent.review import open_review

    r = open_review(out, per_band=2)
    r.label(0, "y")
    (tmp_path / "in.tsv").write_text("a b\tc d\ne f\tg h\n")
    (tmp_path / "cfg.yaml").write_text("steps:\n  - type: empty\n")
    base = ["filter", tmp_path / "in.tsv", "-l", "en", "-L", "de", "-c", tmp_path / "cfg.yaml"]
    one_error([*base, "-o", r.labels_path, "--rejected", tmp_path / "r.tsv"], capsys, tmp_path,
              "would overwrite the labels of a review")
    one_error([*base, "-o", tmp_path / "k.tsv", "--rejected", f"{out}.report.json"], capsys, tmp_path,
              "would overwrite the run record of m.tsv")


def test_every_written_path_option_of_every_command_is_refused_on_review_labels(tmp_path):
    """Introspected from the click commands and their path declarations: an output option added later (a new
    command's, an index file, an encoder folder) is covered without a change here."""
    from bisent.errors import BisentError
    from bisent.paths import check_command_paths, command_specs, resolve

    labels = tmp_path / "l.jsonl"
    labels.write_text('{"bisent_review": 1, "sample": 1}\n')
    given = tmp_path / "in.txt"
    given.write_text("an input\n")
    checked = set()
    for name, (cmd, spec) in command_specs().items():
        flags = {p.name: max(p.opts, key=len) for p in cmd.params}
        for param in (*spec.writes, *spec.derived_params):
            if param in spec.resumes:
                continue
            kwargs = {p.name: p.default if isinstance(p.default, (str, int, float, tuple, list)) else
                      () if p.multiple or p.nargs == -1 else None for p in cmd.params}
            for p in cmd.params:                 # the other paths: an input that exists, outputs of their own
                value = (str(given) if p.name in (*spec.reads, *spec.specs) else
                         str(tmp_path / f"out-{p.name}") if p.name in spec.names() else None)
                if value is not None:
                    kwargs[p.name] = (value,) if p.multiple or p.nargs == -1 else value
            kwargs[param] = str(labels)
            try:
                paths = resolve(spec, kwargs, flags)
            except (TypeError, KeyError, AttributeError, ValueError):
                continue                     # a derived declaration that needs other arguments
            if str(labels) not in {str(v) for kind in ("writes", "folders", "states")
                                   for v in paths[kind].values()}:
                continue
            with pytest.raises(BisentError) as e:
                check_command_paths(paths)
            assert "\n" not in str(e.value)
            if str(labels) in {str(v) for v in paths["writes"].values()}:
                assert "would overwrite the labels of a review" in str(e.value), (name, param, e.value)
            checked.add(f"{name} {param}")
    assert len(checked) >= 12, checked
    assert {"filter output", "filter rejected", "mine output", "review report", "review output"} <= checked, checked
    assert labels.read_text() == '{"bisent_review": 1, "sample": 1}\n'


def test_labels_with_invalid_utf8_or_deep_lines_are_one_line_errors(tmp_path, capsys):
    out = mined_run(tmp_path, 40, 20)
    bad = tmp_path / "l.jsonl"
    bad.write_bytes(b'{"bisent_review": 1}\n{"i": 0, "label": "y", "src": "\xff"}\n')
    one_error(["review", out, "--labels", bad, "--summary"], capsys, tmp_path, "l.jsonl:2: not valid UTF-8")
    one_error(["eval", "bucc", out, "--labels", bad], capsys, tmp_path, "l.jsonl:2: not valid UTF-8")
    bad.write_text('{"bisent_review": 1}\n{"i": 0, "label": "y", "x": ' + deep_json() + "}\n")
    one_error(["review", out, "--labels", bad, "--summary"], capsys, tmp_path, "l.jsonl:2: JSON nested more than")
    one_error(["eval", "bucc", out, "--labels", bad], capsys, tmp_path, "l.jsonl:2: JSON nested more than")


def test_replayed_labels_of_items_outside_the_sample_are_refused(tmp_path, capsys):
    out = mined_run(tmp_path, 40, 20)
    from bisent.review import open_review

    r = open_review(out, per_band=2)
    r.label(0, "y")
    good = r.labels_path.read_bytes()
    for i in (99999, -3):
        r.labels_path.write_bytes(good + json.dumps({"i": i, "label": "y"}).encode() + b"\n")
        one_error(["review", out, "--summary"], capsys, tmp_path, f"m.tsv.review.jsonl:3: item {i} is not in the "
                                                                  "sample")
    for bad in ({"i": True, "label": "y"}, {"i": 0, "label": ["y"]}, {"undo": "0"}):
        r.labels_path.write_bytes(good + json.dumps(bad).encode() + b"\n")
        one_error(["review", out, "--summary"], capsys, tmp_path, "m.tsv.review.jsonl:3:")


def test_a_deeply_nested_run_record_is_one_line_error(tmp_path, capsys):
    out = mined_run(tmp_path, 40, 20)
    Path(f"{out}.report.json").write_text('{"kind": "mining", "x": ' + deep_json(100_000) + "}")
    one_error(["review", out, "--summary"], capsys, tmp_path, "m.tsv.report.json: JSON nested more than")


def test_review_on_a_port_in_use_is_one_line_error(tmp_path, capsys):
    out = mined_run(tmp_path, 40, 20)
    busy = socket.socket()
    busy.bind(("127.0.0.1", 0))
    busy.listen(1)
    try:
        one_error(["review", out, "--port", busy.getsockname()[1]], capsys, tmp_path, "cannot listen on 127.0.0.1")
    finally:
        busy.close()


class _Server:
    def __init__(self, review):
        from bisent.review.server import ReviewServer

        self.server = ReviewServer(review)
        self.thread = threading.Thread(target=self.server.serve_forever, daemon=True)
        self.thread.start()

    def post(self, body: str, path: str = "/api/label"):
        c = http.client.HTTPConnection(*self.server.server_address, timeout=10)
        c.request("POST", path, body=body, headers={"Host": self.server.host, "X-Bisent-Token": self.server.token,
                                                    "Content-Type": "application/json"})
        r = c.getresponse()
        data = r.read()
        c.close()
        return r.status, data

    def stop(self):
        self.server.shutdown()
        self.server.server_close()
        self.thread.join(5)


def test_server_answers_400_to_labels_of_wrong_type_and_deep_bodies(tmp_path, capsys):
    from bisent.review import open_review

    s = _Server(open_review(mined_run(tmp_path, 40, 20), per_band=2))
    try:
        for body in ('{"i": 0, "label": ["y"]}', '{"i": 0, "label": {"y": 1}}', "[" * 1500 + "]" * 1500,
                     '{"i": 0, "label": "y", "x": ' + "[" * 1500 + "]" * 1500 + "}", '{"i": 0, "label": null}'):
            code, data = s.post(body)
            assert code == 400, (body[:40], code, data)
        assert s.post('{"i": 0, "label": "y"}')[0] == 200
    finally:
        s.stop()
    assert "Traceback" not in capsys.readouterr().err


def test_idle_connections_never_keep_a_labelling_page_out(tmp_path):
    from bisent.review import open_review
    from bisent.review.server import MAX_CONNECTIONS

    s = _Server(open_review(mined_run(tmp_path, 40, 20), per_band=2))
    try:
        idle = [socket.create_connection(s.server.server_address, timeout=5) for _ in range(3 * MAX_CONNECTIONS)]
        time.sleep(0.3)
        t0 = time.monotonic()
        for i in range(3):
            assert s.post(json.dumps({"i": i, "label": "y"}))[0] == 200
        assert time.monotonic() - t0 < 10
        assert len(s.server._conns) <= MAX_CONNECTIONS
        for c in idle:
            c.close()
    finally:
        s.stop()


# ---------------------------------------------------------------------------
# JSONL and YAML readers: bounded, a BOM read as the TSV reader reads it
# ---------------------------------------------------------------------------

PAIR = {"src": "The house is red.", "tgt": "Das Haus ist rot."}


def _filter_files(d: Path) -> Path:
    cfg = d / "cfg.yaml"
    cfg.write_text("steps:\n  - type: empty\n")
    return cfg


def test_a_deeply_nested_jsonl_line_is_a_rejected_row_in_filter(tmp_path, capsys):
    cfg = _filter_files(tmp_path)
    src = tmp_path / "in.jsonl"
    src.write_text(json.dumps(PAIR) + "\n" + '{"src": "a", "tgt": "b", "n": ' + deep_json() + "}\n")
    rc, out, err = run_main(["filter", src, "-l", "en", "-L", "de", "-c", cfg, "-o", tmp_path / "k.jsonl",
                             "--rejected", tmp_path / "r.tsv"], capsys)
    assert rc == 0 and "Traceback" not in err, err
    assert (tmp_path / "k.jsonl").read_text() == json.dumps(PAIR) + "\n"
    assert [ln.split("\t")[:2] for ln in (tmp_path / "r.tsv").read_text().splitlines()] == [["2", "bad_row:json"]]


def test_a_deeply_nested_jsonl_line_is_one_line_error_in_explain_and_train(tmp_path, capsys):
    src = tmp_path / "in.jsonl"
    src.write_text('{"src": "a b", "tgt": "c d", "n": ' + deep_json() + "}\n")
    one_error(["explain", src, "--line", "1", "-l", "en", "-L", "de", "-e", "char-ngram"], capsys, tmp_path,
              "in.jsonl: line 1: cannot explain it: bad_row:json")
    from bisent.errors import BisentError
    from bisent.training.data import read_bitext

    with pytest.raises(BisentError, match=r"in.jsonl:1: not valid JSON \(bad_row:json\)"):
        read_bitext(src, "en", "de")


def test_a_jsonl_byte_order_mark_is_read_as_in_tsv(tmp_path, capsys):
    cfg = _filter_files(tmp_path)
    bom = tmp_path / "bom.jsonl"
    bom.write_bytes(b"\xef\xbb\xbf" + json.dumps(PAIR).encode() + b"\n")
    rc, _, err = run_main(["filter", bom, "-l", "en", "-L", "de", "-c", cfg, "-o", tmp_path / "k.jsonl",
                           "--rejected", tmp_path / "r.tsv"], capsys)
    assert rc == 0, err
    assert (tmp_path / "r.tsv").read_text() == "" and len((tmp_path / "k.jsonl").read_bytes().splitlines()) == 1
    docs = tmp_path / "s.jsonl"
    docs.write_bytes(b"\xef\xbb\xbf" + json.dumps({"id": "a", "text": PAIR["src"]}).encode() + b"\n")
    (tmp_path / "t.jsonl").write_text(json.dumps({"id": "b", "text": PAIR["tgt"]}) + "\n")
    rc, _, err = run_main(["documents", "mine", docs, tmp_path / "t.jsonl", "-l", "en", "-L", "de", "-e", "char-ngram",
                           "--segmentation", "given", "-o", tmp_path / "m.tsv"], capsys)
    assert rc == 0, err
    assert "a\tb\t" in (tmp_path / "m.tsv").read_text()


@pytest.mark.parametrize("where", ["set", "config", "recipe", "run-set"])
def test_a_yaml_integer_of_thousands_of_digits_is_one_line_error(where, tmp_path, capsys):
    big = "9" * 5000
    cfg = _filter_files(tmp_path)
    (tmp_path / "in.tsv").write_text("a b\tc d\n")
    base = ["filter", tmp_path / "in.tsv", "-l", "en", "-L", "de", "-o", tmp_path / "k.tsv", "--rejected",
            tmp_path / "r.tsv"]
    if where == "set":
        argv = [*base, "-c", cfg, "--set", f"empty.x={big}"]
    elif where == "config":
        (tmp_path / "big.yaml").write_text(f"steps:\n  - type: length\n    max_length: {big}\n")
        argv = [*base, "-c", tmp_path / "big.yaml"]
    elif where == "recipe":
        (tmp_path / "r.yaml").write_text(f"model: {{dim: {big}}}\n")
        argv = ["train", "-c", tmp_path / "r.yaml", "--train", f"en-de={tmp_path / 'in.tsv'}", "-o", tmp_path / "m"]
    else:
        argv = ["run", "-c", "run-default", "--set", f"align.max_size={big}", "-o", tmp_path / "run"]
    line = one_error(argv, capsys, tmp_path, "an integer of 5000 characters")
    assert len(line) < 300


def test_a_yaml_key_given_twice_is_one_line_error(tmp_path, capsys):
    (tmp_path / "in.tsv").write_text("a b\tc d\n")
    dup = tmp_path / "dup.yaml"
    dup.write_text("steps:\n  - type: empty\nsteps:\n  - type: duplicate\n")
    one_error(["filter", tmp_path / "in.tsv", "-l", "en", "-L", "de", "-c", dup, "-o", tmp_path / "k.tsv",
               "--rejected", tmp_path / "r.tsv"], capsys, tmp_path, "dup.yaml:3: invalid YAML: duplicate key 'steps'")


# ---------------------------------------------------------------------------
# Language codes: the shape of a BCP 47 tag in every command that takes one
# ---------------------------------------------------------------------------

def test_bcp47_shape():
    from bisent.langcodes import check_bcp47

    for good in ("en", "de", "pt-BR", "pt_br", "zh-Hant-TW", "sr-Latn", "de-CH-1996", "en-x-legal", "es-419",
                 "yue", "zh-yue-hk"):
        check_bcp47(good)
    for bad in ("../../x", "en; rm -rf /", "", "e", "english-language-x", "en--us", "de fr", "en/us", "x" * 300,
                "en-", "-en", "1en"):
        with pytest.raises(ValueError):
            check_bcp47(bad)


def test_every_language_option_of_every_command_refuses_a_path_or_shell_text(tmp_path, capsys):
    """Introspected: every option named -l/-L/--src-lang/--tgt-lang/--lang of every command has the shared type."""
    from bisent.cli.options import LangCode
    from bisent.paths import command_specs

    found = []
    for name, (cmd, _) in command_specs().items():
        for p in cmd.params:
            if isinstance(p, __import__("click").Option) and {"-l", "-L", "--src-lang", "--tgt-lang", "--lang"} & \
                    set(p.opts):
                if name.startswith("data") or name in ("docs data", "documents data"):
                    continue             # the dataset builders check a stricter list of their own
                assert isinstance(p.type, LangCode), (name, p.opts)
                found.append(name)
    assert {"filter", "mine", "align", "embed", "explain", "documents mine", "train-scorer"} <= set(found)
    (tmp_path / "in.tsv").write_text("a b\tc d\n")
    (tmp_path / "cfg.yaml").write_text("steps:\n  - type: empty\n")
    for code in ("../../x", "en; rm -rf /"):
        one_error(["filter", tmp_path / "in.tsv", "-l", code, "-L", "de", "-c", tmp_path / "cfg.yaml", "-o",
                   tmp_path / "k.tsv", "--rejected", tmp_path / "r.tsv"], capsys, tmp_path, "is not a language code")
        one_error(["run", "-c", "run-default", "--set", f"src_lang={code}", "-o", tmp_path / "run"], capsys, tmp_path,
                  "src_lang: ")


# ---------------------------------------------------------------------------
# TMX and XLIFF: nested units, a default namespace, huge text nodes, markup of repaired units
# ---------------------------------------------------------------------------

TMX_HEAD = ('<?xml version="1.0" encoding="UTF-8"?>\n<tmx version="1.4"{ns}><header srclang="en" datatype="plaintext" '
            'segtype="sentence" adminlang="en" o-tmf="x" creationtool="x" creationtoolversion="1"/><body>\n')


def tu(src: str, tgt: str, inner: str = "") -> str:
    return (f'<tu><tuv xml:lang="en"><seg>{src}</seg></tuv><tuv xml:lang="de"><seg>{tgt}</seg></tuv>{inner}'
            '</tu>\n')


def tmx(*units: str, ns: str = "") -> str:
    return TMX_HEAD.format(ns=ns) + "".join(units) + "</body></tmx>\n"


def _filter_tmx(d: Path, text: str, capsys, *extra) -> tuple[dict, str, list[str]]:
    cfg = _filter_files(d)
    (d / "in.tmx").write_text(text)
    rc, out, err = run_main(["filter", d / "in.tmx", "-l", "en", "-L", "de", "-c", cfg, "-o", d / "kept.tmx",
                             "--rejected", d / "rej.tsv", *extra], capsys)
    assert rc == 0 and "Traceback" not in err, err
    summary = next(ln for ln in reversed((out + err).splitlines()) if ln.startswith("{"))
    return json.loads(summary), (d / "kept.tmx").read_text(), \
        (d / "rej.tsv").read_text().splitlines()


def test_a_tu_nested_in_a_rejected_tu_is_rejected_not_lost(tmp_path, capsys):
    text = tmx(tu("The house is red.", "Das Haus ist rot."), tu("", "", tu("A dog runs.", "Ein Hund rennt.")))
    summary, kept, rejected = _filter_tmx(tmp_path, text, capsys)
    assert summary["kept"] == kept.count("<tu>") == 1 and summary["rejected"] == len(rejected) == 2
    assert summary["lines"] == summary["kept"] + summary["rejected"]
    assert any(r.startswith("3\tbad_unit:nested\t") and "A dog runs." in r for r in rejected)


def test_a_trans_unit_nested_in_another_is_rejected_not_lost(tmp_path, capsys):
    from bisent.formats import read_bitext, write_bitext

    (tmp_path / "in.xlf").write_text(
        '<?xml version="1.0" encoding="UTF-8"?>\n<xliff version="1.2" xmlns="urn:oasis:names:tc:xliff:document:1.2">'
        '<file source-language="en" target-language="de" datatype="plaintext" original="x"><body>\n'
        '<trans-unit id="1"><source></source><target></target>'
        '<trans-unit id="2"><source>A dog runs.</source><target>Ein Hund rennt.</target></trans-unit></trans-unit>\n'
        '<trans-unit id="3"><source>Red.</source><target>Rot.</target></trans-unit>\n'
        '</body></file></xliff>\n')
    bt = read_bitext([tmp_path / "in.xlf"], src_lang="en", tgt_lang="de")
    assert [u.problem for u in bt.units] == [None, "bad_unit:nested", None]
    write_bitext([tmp_path / "k.xlf"], bt, [bt.units[2]])
    assert "Red." in (tmp_path / "k.xlf").read_text() and "dog" not in (tmp_path / "k.xlf").read_text()


def test_a_tmx_with_a_default_namespace_reads_as_one_without(tmp_path, capsys):
    text = tmx(tu("The house is red.", "Das Haus ist rot."), tu("", ""), ns=' xmlns="http://www.lisa.org/tmx14"')
    summary, kept, rejected = _filter_tmx(tmp_path, text, capsys)
    assert summary["kept"] == 1 and summary["rejected"] == 1 and "Das Haus ist rot." in kept
    assert kept.count("<tu>") == 1 and 'xmlns="http://www.lisa.org/tmx14"' in kept


def test_a_text_node_over_10_mb_rejects_its_unit_only(tmp_path, capsys):
    text = tmx(tu("The house is red.", "Das Haus ist rot."), tu("a " * 5_500_000, "b"))
    summary, kept, rejected = _filter_tmx(tmp_path, text, capsys)
    assert summary["kept"] == 1 and [r.split("\t")[:2] for r in rejected] == [["2", "bad_row:too_long"]]


def test_a_repaired_unit_keeps_the_markup_of_the_side_left_as_it_was(tmp_path):
    from bisent.formats import read_bitext, remember_text, write_bitext

    (tmp_path / "in.tmx").write_text(tmx(tu('The <bpt i="1">&lt;b&gt;</bpt>house<ept i="1">&lt;/b&gt;</ept> is red. '
                                            "It rains.", 'Das <bpt i="1">&lt;b&gt;</bpt>Haus<ept i="1">&lt;/b&gt;'
                                            "</ept> ist rot.")))
    bt = read_bitext([tmp_path / "in.tmx"], src_lang="en", tgt_lang="de")
    remember_text(bt)
    u = bt.units[0]
    assert u.src == "The house is red. It rains." and u.tgt == "Das Haus ist rot."
    u.src = "The house is red."                            # the repair cut the source's glued sentence
    write_bitext([tmp_path / "out.tmx"], bt, [u])
    out = (tmp_path / "out.tmx").read_text()
    assert "<seg>The house is red.</seg>" in out
    assert 'Das <bpt i="1">&lt;b&gt;</bpt>Haus<ept i="1">&lt;/b&gt;</ept> ist rot.' in out


# ---------------------------------------------------------------------------
# Temp files of a killed write: removed by the next write of the same output
# ---------------------------------------------------------------------------

def test_the_next_write_of_an_output_removes_the_temp_files_a_killed_one_left(tmp_path, capsys):
    import subprocess
    import sys

    dead = subprocess.run([sys.executable, "-c", "import os; print(os.getpid())"], capture_output=True,
                          text=True).stdout.strip()
    cfg = _filter_files(tmp_path)
    (tmp_path / "in.tmx").write_text(tmx(tu("The house is red.", "Das Haus ist rot.")))
    stale = tmp_path / f".kept.tmx.{dead}.5b870f8c.tmp"
    stale.write_bytes(b"x" * 1000)
    stale_dir = tmp_path / f".kept.tmx.{dead}.0badf00d.tmp"
    stale_dir.mkdir()
    old = tmp_path / ".kept.tmx.0123abcd.tmp"                 # an older bisent's name: removed when an hour old
    old.write_bytes(b"x")
    os.utime(old, (time.time() - 7200, time.time() - 7200))
    live = tmp_path / f".kept.tmx.{os.getpid()}.aaaabbbb.tmp"  # a writer still running: left alone
    live.write_bytes(b"x")
    other = tmp_path / f".other.tmx.{dead}.5b870f8c.tmp"     # another output's: not this command's to remove
    other.write_bytes(b"x")
    victim = tmp_path / "victim.txt"
    victim.write_text("keep\n")
    link = tmp_path / f".kept.tmx.{dead}.cccccccc.tmp"
    link.symlink_to(victim)
    rc, _, err = run_main(["filter", tmp_path / "in.tmx", "-l", "en", "-L", "de", "-c", cfg, "-o",
                           tmp_path / "kept.tmx", "--rejected", tmp_path / "rej.tsv"], capsys)
    assert rc == 0, err
    assert not stale.exists() and not stale_dir.exists() and not old.exists()
    assert live.exists() and other.exists() and link.is_symlink() and victim.read_text() == "keep\n"
    assert not [p for p in tmp_path.iterdir() if p.name.startswith(".kept.tmx.") and p not in (live, link)]


# ---------------------------------------------------------------------------
# Refused before any work; errors that never echo a file that is no configuration
# ---------------------------------------------------------------------------

def test_train_divergence_into_a_users_folder_is_refused_before_any_work(tmp_path, capsys, monkeypatch):
    import bisent.filtering as filtering

    cfg = _filter_files(tmp_path)
    (tmp_path / "in.tsv").write_text("".join(f"a{i} b\tc{i} d\n" for i in range(20)))
    user = tmp_path / "user"
    user.mkdir()
    (user / "thesis.tex").write_text("chapter 1\n")
    passes = []
    monkeypatch.setattr(filtering, "filter_file", lambda *a, **k: passes.append(a))
    one_error(["filter", tmp_path / "in.tsv", "-l", "en", "-L", "de", "-c", cfg, "-o", tmp_path / "k.tsv",
               "--rejected", tmp_path / "r.tsv", "--train-divergence", user], capsys, tmp_path,
              "was not made by bisent")
    assert not passes and not (tmp_path / "k.tsv").exists()


@pytest.mark.parametrize("command", ["filter", "explain", "run", "train"])
def test_a_file_that_is_no_configuration_is_not_echoed_in_the_error(command, tmp_path, capsys):
    secret = tmp_path / "shadow"
    secret.write_text("root:$6$secretHASH:19000:0:99999:7:::\ndaemon:*:19000:0:99999:7:::\n")
    (tmp_path / "in.tsv").write_text("a b\tc d\n")
    argv = {"filter": ["filter", tmp_path / "in.tsv", "-l", "en", "-L", "de", "-c", secret, "-o", tmp_path / "k.tsv",
                       "--rejected", tmp_path / "r.tsv"],
            "explain": ["explain", "a", "b", "-l", "en", "-L", "de", "-e", "char-ngram", "-c", secret],
            "run": ["run", "-c", secret, "-o", tmp_path / "run"],
            "train": ["train", "-c", secret, "--train", f"en-de={tmp_path / 'in.tsv'}", "-o", tmp_path / "m"]}[command]
    line = one_error(argv, capsys, tmp_path, "shadow")
    assert "secretHASH" not in line and "daemon" not in line and "19000" not in line


def test_a_fetch_writes_lines_to_a_log_while_it_runs(monkeypatch, capsys, tmp_path):
    """A download by apt-get shows no count; off a terminal a line every BISENT_PROGRESS_SECONDS says it is alive."""
    from bisent.datasets import debian

    monkeypatch.setenv("BISENT_CACHE", str(tmp_path / "cache"))
    monkeypatch.setattr(debian, "_require_tools", lambda name: None)
    monkeypatch.setattr(debian, "_download", lambda name, into: time.sleep(0.35) or into / "x.deb")
    monkeypatch.setattr(debian, "extract_deb", lambda deb, name: tmp_path / name)
    from bisent.progress import heartbeat

    with heartbeat("probe", every=0.1):
        time.sleep(0.35)
    lines = capsys.readouterr().err.splitlines()
    assert lines[0] == "probe ..." and lines[-1].startswith("probe: done") and len(lines) >= 4
    monkeypatch.setenv("BISENT_PROGRESS_SECONDS", "0.1")
    assert debian.fetch_package("some-package") == tmp_path / "some-package"
    err = capsys.readouterr().err
    assert "fetching Debian package some-package ..." in err and "still running" in err


@pytest.mark.parametrize("field", ['"calibration": "x"', '"calibration": {"thresholds": [1]}', '"threshold": "abc"',
                                   '"threshold": 1e999', '"threshold": [1]', '"params": []'])
def test_a_run_record_with_a_field_of_the_wrong_type_is_one_line_error(field, tmp_path, capsys):
    out = mined_run(tmp_path, 40, 20)
    Path(f"{out}.report.json").write_text('{"kind": "mining", ' + field + "}")
    one_error(["review", out, "--summary"], capsys, tmp_path, "m.tsv.report.json: '")


@pytest.mark.parametrize("header", ['"seed": "abc"', '"bands": [1]', '"bands": 0', '"per_band": -5', '"margin": "x"',
                                    '"sample": -1'])
def test_a_labels_header_with_options_review_never_writes_is_one_line_error(header, tmp_path, capsys):
    out = mined_run(tmp_path, 40, 20)
    labels = tmp_path / "l.jsonl"
    labels.write_text('{"bisent_review": 1, ' + header + "}\n")
    one_error(["review", out, "--labels", labels, "--summary"], capsys, tmp_path, "l.jsonl:1: the header's")
