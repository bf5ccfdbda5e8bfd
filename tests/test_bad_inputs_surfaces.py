"""Bad inputs to the surfaces added since the second hardening round (review, its labels and run records, the
review server, JSONL/YAML/XML readers, language codes, temp files of killed writes): each is one
``bisent: error:`` line or correct handling, never a traceback; every file that existed before is unchanged;
every input line is accounted for. Tiny inputs, the char-ngram encoder; no model download."""

from __future__ import annotations

import http.client
import json
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
    assert {"filter kept", "filter rejected", "mine output", "review report", "review output"} <= checked, checked
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
