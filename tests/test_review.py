"""bisent review: the sample, the label log, what the labels say, the re-cut, the server's refusals, a real browser."""

import http.client
import json
import os
import queue
import signal
import socket
import subprocess
import sys
import threading
import time
from pathlib import Path

import numpy as np
import pytest

import bisent
from bisent.cli import main
from bisent.errors import BisentError
from bisent.report import calibrate
from bisent.report.record import mining_record, write_record
from bisent.review import band_size, draw, open_review, read_log, wilson
from bisent.review.labels import band_precision, labelled_pairs, precision_above
from bisent.review.server import ReviewServer
from test_report import chromium_path

HOSTILE = ['<script>window.__pwned = 1</script>', '"><img src=x onerror="window.__pwned = 2">',
           '</textarea><b id=bold>bold</b>', '<a href="javascript:window.__pwned = 3">click me</a>']


def is_parallel(src: str, tgt: str) -> bool:
    return tgt == src + " ."


def mined_run(tmp_path: Path, n_true: int = 200, n_false: int = 100, seed: int = 0, hostile: bool = False) -> Path:
    """A mined TSV (best first) of ``n_true`` parallel pairs (target = source + " .") scoring high and
    ``n_false`` others scoring low, with its record and a no-gold calibration, as ``bisent mine --report`` leaves."""
    rng = np.random.default_rng(seed)
    scores = np.concatenate([rng.normal(1.3, 0.1, n_true), rng.normal(1.0, 0.08, n_false)])
    texts = [(f"sentence {i} of the source", f"sentence {i} of the source .") for i in range(n_true)]
    texts += [(f"lonely {i} source", f"unrelated {i} target") for i in range(n_false)]
    if hostile:
        texts[:len(HOSTILE)] = [(h, h + " .") for h in HOSTILE]
    order = np.argsort(-scores, kind="stable")
    scores, texts = scores[order], [texts[i] for i in order]
    out = tmp_path / "m.tsv"
    out.write_text("".join(f"{s:.6f}\t{a}\t{b}\n" for s, (a, b) in zip(scores, texts)), encoding="utf-8")
    cal = calibrate(scores, rng.normal(1.0, 0.08, 2000))
    write_record(mining_record(scores, texts, calibration=cal), f"{out}.report.json")
    return out


# ---------------------------------------------------------------------------
# Sample sizes, intervals, the draw
# ---------------------------------------------------------------------------

def test_band_size_gives_five_points_at_95_percent():
    assert band_size(10**9) == 385 and band_size(10**6) == 384 and band_size(0) == 0 and band_size(7) == 7
    assert band_size(100) == 80                      # finite-population correction
    lo, hi = wilson(192, 385)
    assert hi - lo <= 0.1 + 1e-9                     # the worst case p = 1/2: ±5 points


def test_wilson_interval_known_values():
    assert wilson(0, 10) == pytest.approx((0.0, 0.2775), abs=1e-4)
    assert wilson(5, 10) == pytest.approx((0.2366, 0.7634), abs=1e-4)
    assert wilson(7, 7, population=7) == (1.0, 1.0)                 # a band labelled in full
    assert wilson(5, 10, population=20)[1] - wilson(5, 10, population=20)[0] < 0.7634 - 0.2366


def test_sample_is_stratified_and_seeded():
    rng = np.random.default_rng(1)
    scores = rng.normal(size=1000)
    keys = [str(i) for i in range(1000)]
    texts = [f"t{i}" for i in range(1000)]
    items, bands, _ = draw(keys, scores, texts, texts, bands=5, per_band=20, seed=3)
    again, _, _ = draw(keys, scores, texts, texts, bands=5, per_band=20, seed=3)
    other, _, _ = draw(keys, scores, texts, texts, bands=5, per_band=20, seed=4)
    assert items == again and items != other
    assert [b["pairs"] for b in bands] == [200] * 5 and [b["sampled"] for b in bands] == [20] * 5
    assert bands[0]["low"] > bands[1]["high"]                                       # best band first
    for it in items:
        assert bands[it.band]["low"] <= it.score <= bands[it.band]["high"]
        assert scores[int(it.key)] == it.score
    assert len({it.key for it in items}) == 100
    assert [it.band for it in items] != sorted(it.band for it in items)            # shown in a shuffled order
    _, bands, _ = draw(keys, scores, texts, texts, bands=2)
    assert [b["sampled"] for b in bands] == [band_size(500)] * 2 == [218, 218]


def test_simulated_labels_reproduce_band_precision():
    """Labels drawn from gold: each band's measured precision holds the band's true precision in its interval
    about 95 % of the time, and the precision above a threshold likewise."""
    rng = np.random.default_rng(2)
    n = 6000
    scores = rng.normal(size=n)
    gold = rng.random(n) < 1 / (1 + np.exp(-2.5 * scores))        # precision falls with the score
    keys = [str(i) for i in range(n)]
    texts = [""] * n
    inside = inside_t = total = 0
    for seed in range(40):
        items, bands, band_scores = draw(keys, scores, texts, texts, bands=6, seed=seed)
        labels = {i: "y" if gold[int(it.key)] else ("p" if i % 2 else "n") for i, it in enumerate(items)}
        order = np.argsort(-scores, kind="stable")
        truth = [gold[part].mean() for part in np.array_split(order, 6)]
        for row, true in zip(band_precision(items, labels, bands), truth):
            assert abs(row["precision"] - true) < 0.08
            inside += row["interval"][0] <= true <= row["interval"][1]
            total += 1
        t = bands[2]["low"]
        _, (lo, hi), kept = precision_above(t, items, labels, band_scores)
        assert kept == int((scores >= t).sum())
        inside_t += lo <= gold[scores >= t].mean() <= hi
    assert inside / total >= 0.9 and inside_t / 40 >= 0.85


# ---------------------------------------------------------------------------
# The label log: as given, resumed, undone
# ---------------------------------------------------------------------------

def test_label_log_resumes_undoes_and_counts_partial_as_not_parallel(tmp_path):
    out = mined_run(tmp_path)
    r = open_review(out, per_band=4)
    assert r.labels_path == tmp_path / "m.tsv.review.jsonl" and len(r.items) == 24
    assert not r.labels_path.exists()                                   # looking writes nothing
    for i, lb in enumerate("yynpsy"):
        r.label(i, lb)
    assert r.undo() == 5 and r.next_index() == 5
    r.label(5, "n")
    again = open_review(out)                                  # resumed with the options of the log
    assert again.options["per_band"] == 4 and again.log.labels == dict(enumerate("yynpsn"))
    assert again.next_index() == 6
    s = again.summary()
    assert sum(b["labelled"] for b in s["bands"]) == 6 and sum(b["skipped"] for b in s["bands"]) == 1
    judged = sum(b["parallel"] + b["partial"] + b["not_parallel"] for b in s["bands"])
    assert judged == 5 and sum(b["parallel"] for b in s["bands"]) == 2
    lines = (tmp_path / "m.tsv.review.jsonl").read_text().splitlines()
    assert len(lines) == 1 + 6 + 1 + 1 and json.loads(lines[7]) == {"undo": 5, "time": json.loads(lines[7])["time"]}
    pairs = labelled_pairs(r.labels_path)
    assert [p["label"] for p in pairs] == list("yynpn") and [p["parallel"] for p in pairs] == [1, 1, 0, 0, 0]
    assert pairs[0]["src"] == r.items[0].src and pairs[0]["score"] == r.items[0].score
    # another sample on the same labels is refused; a line cut short (killed while writing) is left out when
    # read, and removed from the file only by the next label
    with pytest.raises(BisentError, match="another sample"):
        open_review(out, per_band=5)
    with open(r.labels_path, "ab") as f:
        f.write(b'{"i": 7, "lab')
    cut = r.labels_path.read_bytes()
    resumed = open_review(out)
    assert resumed.log.labels == dict(enumerate("yynpsn"))
    assert r.labels_path.read_bytes() == cut
    resumed.label(7, "y")
    assert r.labels_path.read_bytes().startswith(cut[:cut.rindex(b"\n") + 1])
    assert read_log(r.labels_path).labels == {**dict(enumerate("yynpsn")), 7: "y"}
    out.write_text(out.read_text().replace("of the source", "of another source"))    # the output rewritten
    with pytest.raises(BisentError, match="other pairs than the run's output holds now"):
        open_review(out)


def test_bad_label_logs_are_one_line_errors(tmp_path, capsys):
    out = mined_run(tmp_path)
    bad = tmp_path / "bad.jsonl"
    bad.write_text('{"some": "thing"}\n')
    assert main(["review", out, "--labels", bad, "--summary"]) == 2
    assert capsys.readouterr().err.startswith(f"bisent: error: {bad}:1: not a labels file")
    r = open_review(out, tmp_path / "l.jsonl", per_band=2)
    r.label(0, "y")
    with open(r.labels_path, "a") as f:
        f.write("not json\n")
    assert main(["review", out, "--labels", tmp_path / "l.jsonl", "--summary"]) == 2
    assert "l.jsonl:3: corrupt JSON" in capsys.readouterr().err
    assert main(["review", tmp_path / "nothing.tsv", "--summary"]) == 2
    assert main(["review", out, "--apply", "0.9"]) == 2
    assert "needs -o" in capsys.readouterr().err


# ---------------------------------------------------------------------------
# Labels give the threshold; --apply re-cuts the output
# ---------------------------------------------------------------------------

def label_by_gold(r) -> None:
    for i, it in enumerate(r.items):
        r.label(i, "y" if is_parallel(it.src, it.tgt) else "n")


def test_threshold_from_labels_and_apply(tmp_path, capsys):
    out = mined_run(tmp_path, n_true=400, n_false=200)
    r = open_review(out, per_band=30)
    label_by_gold(r)
    s = r.summary(0.9)
    rows = [line.split("\t") for line in out.read_text().splitlines()]
    for b in s["bands"]:
        part = [is_parallel(x[1], x[2]) for x in rows if b["low"] <= float(x[0]) <= b["high"]]
        assert b["interval"][0] <= np.mean(part) <= b["interval"][1]
        assert b["estimated"] is not None and 0 <= b["estimated"] <= 1
    t = next(x for x in s["thresholds"] if x["precision"] == 0.9)
    assert t["threshold"] is not None and t["interval"][0] <= t["measured"] <= t["interval"][1]
    assert t["threshold_interval"][0] <= t["threshold"] and "estimated" in t
    cut = tmp_path / "cut.tsv"
    assert main(["review", out, "--apply", "0.9", "-o", cut]) == 0
    got = json.loads(capsys.readouterr().out)
    kept = [line.split("\t") for line in cut.read_text().splitlines()]
    assert got["threshold"] == t["threshold"] and got["kept"] == len(kept) == t["kept"]
    assert all(float(x[0]) >= t["threshold"] for x in kept)
    assert len(kept) + got["dropped"] == len(rows)
    assert np.mean([is_parallel(x[1], x[2]) for x in kept]) >= t["interval"][0]
    assert main(["review", out, "--apply", "0.9", "-o", out]) == 2          # never over the reviewed output
    assert main(["review", out, "--summary", "--report", tmp_path / "r.html"]) == 0
    html = (tmp_path / "r.html").read_text()
    assert "Checked by eye: 180 of 180 sampled pairs labelled" in html and "no-gold estimate" in html
    cut.unlink()
    assert main(["report", tmp_path, "-o", tmp_path / "folder.html"]) == 0         # bisent report finds the labels
    assert "Checked by eye: 180 of 180" in (tmp_path / "folder.html").read_text()


# ---------------------------------------------------------------------------
# The other runs: filter, documents mine, align, bisent run
# ---------------------------------------------------------------------------

def test_review_a_filter_run(tmp_path, capsys):
    from test_report import _sentences

    rng = np.random.default_rng(5)
    clean = [(s, s[:-3] + " !") for s in _sentences(rng, 60)]
    noise = [(s, t) for (s, _), (_, t) in zip(clean[:30], reversed(clean[30:]))]
    (tmp_path / "in.tsv").write_text("".join(f"{a}\t{b}\n" for a, b in clean + noise))
    cfg = tmp_path / "f.yaml"
    cfg.write_text("steps:\n  - {name: cos, type: cosine, encoder: char-ngram, accept: {min: 0.0}}\n")
    kept = tmp_path / "kept.tsv"
    assert main(["filter", tmp_path / "in.tsv", "-l", "en", "-L", "de", "-c", cfg, "-o", kept,
                 "--rejected", tmp_path / "rej.tsv", "--report", tmp_path / "r.html"]) == 0
    capsys.readouterr()
    r = open_review(kept, per_band=5, bands=3)
    assert r.run.kind == "filter" and len(r.run.scores) == len(kept.read_text().splitlines()) >= 60
    for i, it in enumerate(r.items):
        r.label(i, "y" if (it.src, it.tgt) in clean else "n")
    assert main(["review", kept, "--apply", "0.8", "-o", tmp_path / "cut.tsv"]) == 0
    got = json.loads(capsys.readouterr().out)
    cut = (tmp_path / "cut.tsv").read_text().splitlines()
    assert got["kept"] == len(cut) and set(cut) <= set(kept.read_text().splitlines())
    assert sum(tuple(x.split("\t")) in clean for x in cut) / len(cut) >= 0.8


def test_review_docs_and_align_runs(tmp_path, capsys):
    from test_report import _docs_run

    _docs_run(tmp_path)
    capsys.readouterr()
    r = open_review(tmp_path / "m.tsv", per_band=3, bands=2)
    assert r.run.kind == "docs" and all(" " in it.src for it in r.items)      # texts from the collections
    for i, it in enumerate(r.items):                  # gold: document s<i> is the translation of t<i>
        a, b = it.key.split(" / ")
        r.label(i, "y" if a[1:] == b[1:] else "n")
    assert main(["review", tmp_path / "m.tsv", "--apply", "0.5", "-o", tmp_path / "cut.tsv"]) == 0
    got = json.loads(capsys.readouterr().out)
    rows = [x.split("\t") for x in (tmp_path / "cut.tsv").read_text().splitlines()]
    before = [x.split("\t") for x in (tmp_path / "m.tsv").read_text().splitlines()]
    assert rows[0] == before[0] and len(rows) == len(before) and [x[:4] for x in rows] == [x[:4] for x in before]
    assert sum(x[4] == "matched" for x in rows[1:]) == got["kept"]
    assert all(float(x[2]) >= got["threshold"] for x in rows[1:] if x[4] == "matched")

    (tmp_path / "a.txt").write_text("The cat sleeps.\nThe dog runs fast.\nIt rains today.\nWe eat bread.\n")
    (tmp_path / "b.txt").write_text("The cat sleeps .\nThe dog runs fast .\nIt rains today .\nWe eat bread .\n")
    al = tmp_path / "al.tsv"
    assert main(["align", tmp_path / "a.txt", tmp_path / "b.txt", "-l", "en", "-L", "en", "-e", "char-ngram",
                 "-o", al]) == 0
    capsys.readouterr()
    r = open_review(al, per_band=2, bands=2)
    assert r.run.kind == "align" and len(r.items) == 4
    for i in range(4):
        r.label(i, "y")
    assert main(["review", al, "--apply", "0.9", "-o", tmp_path / "al.cut.tsv"]) == 0
    assert (tmp_path / "al.cut.tsv").read_text() == al.read_text()
    capsys.readouterr()
    assert main(["eval", "align", al, "--labels", r.labels_path, "--json"]) == 0
    got = json.loads(capsys.readouterr().out)
    assert got["all"]["precision"] == 1.0 and got["all"]["n_mined"] == 4 and got["all"]["recall"] == 1.0
    assert main(["eval", "align", al]) == 2


def test_review_a_run_folder(tmp_path, capsys):
    from test_run import make_run

    cfg = make_run(tmp_path)
    assert main(["run", "-c", str(cfg), "-o", str(tmp_path / "r"), "--quiet"]) == 0
    assert main(["review", tmp_path / "r", "--summary"]) == 2
    assert "--report" in capsys.readouterr().err                         # the filter stage must be recorded
    assert main(["run", "-c", str(cfg), "-o", str(tmp_path / "r"), "--quiet",
                 "--report", str(tmp_path / "run.html")]) == 0
    capsys.readouterr()
    r = open_review(tmp_path / "r", per_band=2)
    assert r.run.kind == "filter" and r.labels_path == tmp_path / "r" / "review.jsonl"
    assert len(r.run.scores) == len((tmp_path / "r" / "bitext.tsv").read_text().splitlines())


# ---------------------------------------------------------------------------
# The server: only its page and API, only with the token, only from itself
# ---------------------------------------------------------------------------

class Running:
    """A :class:`ReviewServer` on a thread, stopped by the test."""

    def __init__(self, review):
        self.server = ReviewServer(review)
        self.thread = threading.Thread(target=self.server.serve_forever, daemon=True)
        self.thread.start()

    def request(self, method, path, *, body=None, headers=None, token=True):
        h = {"Host": self.server.host, **({"X-Bisent-Token": self.server.token} if token else {}), **(headers or {})}
        c = http.client.HTTPConnection(*self.server.server_address, timeout=10)
        c.request(method, path, body=body, headers=h)
        r = c.getresponse()
        data = r.read()
        c.close()
        return r.status, dict(r.getheaders()), data

    def stop(self):
        self.server.shutdown()
        self.server.server_close()
        self.thread.join(5)


def test_server_refuses_without_token_other_origin_and_other_paths(tmp_path):
    run = Running(open_review(mined_run(tmp_path), per_band=2))
    try:
        s = run.server
        assert s.server_address[0] == "127.0.0.1" and s.url.startswith(f"http://127.0.0.1:{s.server_address[1]}/?t=")
        code, headers, page = run.request("GET", f"/?t={s.token}", token=False)
        assert code == 200 and "default-src 'none'" in headers["Content-Security-Policy"]
        assert "connect-src 'self'" in headers["Content-Security-Policy"] and b"http" not in page.split(b"<script")[1]
        assert run.request("GET", "/", token=False)[0] == 403
        assert run.request("GET", "/?t=wrong", token=False)[0] == 403
        assert run.request("GET", "/api/state", token=False)[0] == 403
        assert run.request("GET", "/api/state", headers={"X-Bisent-Token": "x" + s.token})[0] == 403
        assert run.request("GET", "/api/state", headers={"Origin": "http://evil.example"})[0] == 403
        assert run.request("GET", "/api/state", headers={"Host": "evil.example"})[0] == 403
        assert run.request("GET", "/api/state", headers={"Sec-Fetch-Site": "cross-site"})[0] == 403
        body = json.dumps({"i": 0, "label": "y"})
        ctype = {"Content-Type": "application/json"}
        assert run.request("POST", "/api/label", body=body, headers={**ctype, "Origin": "http://localhost:1"})[0] == 403
        assert run.request("POST", "/api/label", body=body, headers=ctype, token=False)[0] == 403
        assert run.request("POST", "/api/label", body=body, headers={"Content-Type": "text/plain"})[0] == 415
        for path in ("/etc/passwd", "/../m.tsv", "/m.tsv", "/api/state/../../m.tsv", "/favicon.ico", "/api"):
            assert run.request("GET", path)[0] == 404, path
        assert run.request("PUT", "/api/label", body=body, headers=ctype)[0] == 405
        assert not run.server.review.labels_path.exists()                           # nothing refused was written
        code, _, data = run.request("GET", "/api/state", headers={"Origin": f"http://{s.host}"})
        assert code == 200 and len(json.loads(data)["items"]) == 12
        assert run.request("POST", "/api/label", body=body, headers=ctype)[0] == 200
        assert run.request("POST", "/api/label", body='{"i": 99, "label": "y"}', headers=ctype)[0] == 400
        assert run.request("POST", "/api/label", body='{"i": 1, "label": "maybe"}', headers=ctype)[0] == 400
        assert read_log(run.server.review.labels_path).labels == {0: "y"}
        # bounded: at most MAX_CONNECTIONS connections; when idle ones fill them, the idlest is closed for a request
        from bisent.review.server import MAX_CONNECTIONS
        idle = [socket.create_connection(s.server_address, timeout=5) for _ in range(MAX_CONNECTIONS)]
        time.sleep(0.3)
        assert run.request("GET", "/api/state")[0] == 200
        assert len(s._conns) <= MAX_CONNECTIONS
        for c in idle:
            c.close()
        time.sleep(0.3)
        assert run.request("GET", "/api/state")[0] == 200
    finally:
        run.stop()


# ---------------------------------------------------------------------------
# A real browser: label with the keyboard, undo, reload, kill the server, resume
# ---------------------------------------------------------------------------

def wait_text(page, selector: str, want: str, seconds: float = 20) -> None:
    """Wait for ``selector`` to show ``want`` (polled from here: the page's policy forbids the string
    evaluation Playwright's own wait uses)."""
    deadline = time.time() + seconds
    while (got := page.text_content(selector)) != want:
        if time.time() > deadline:
            raise AssertionError(f"{selector} shows {got!r}, not {want!r}")
        time.sleep(0.05)


def start_cli(args, env):
    """``bisent review`` in a process of its own; returns it and the URL it printed (once), with the lines before."""
    proc = subprocess.Popen([sys.executable, "-m", "bisent", "review", *map(str, args)], stdout=subprocess.PIPE,
                            stderr=subprocess.DEVNULL, env=env, text=True)
    lines: queue.Queue = queue.Queue()
    threading.Thread(target=lambda: [lines.put(line) for line in proc.stdout], daemon=True).start()
    seen = []
    deadline = time.time() + 60
    while time.time() < deadline:
        try:
            line = lines.get(timeout=1)
        except queue.Empty:
            if proc.poll() is not None:
                break
            continue
        seen.append(line)
        if line.startswith("http://"):
            return proc, line.strip(), seen
    proc.kill()
    raise AssertionError(f"no URL from bisent review: {seen}")


@pytest.mark.skipif(chromium_path() is None, reason="no Chromium installed (apt-get install chromium-headless-shell)")
def test_label_in_a_browser_undo_reload_kill_and_resume(tmp_path):
    pytest.importorskip("playwright")
    from playwright.sync_api import sync_playwright

    out = mined_run(tmp_path, n_true=16, n_false=8, hostile=True)           # 24 pairs, all sampled (4 bands of 6)
    labels_file = tmp_path / "labels.jsonl"
    env = {**os.environ, "PYTHONPATH": str(Path(bisent.__file__).parents[1])}
    args = [out, "--labels", labels_file, "--bands", "4", "--per-band", "6"]
    pressed: dict[str, str] = {}          # key of the pair -> the label pressed
    errors, requests = [], []
    procs = []

    def label(page, key_press, count):
        it = page.text_content("#key")
        page.keyboard.press(key_press)
        wait_text(page, "#count", str(count))
        return it

    def check_shown_as_text(page):
        src, tgt = page.text_content("#src"), page.text_content("#tgt")
        assert page.evaluate("window.__pwned") is None
        assert page.evaluate("document.querySelectorAll('img, a, #bold').length") == 0
        assert page.evaluate("document.scripts.length") == 1
        return src, tgt

    def gold_key(page):
        src, tgt = check_shown_as_text(page)
        return "y" if is_parallel(src, tgt) else "n"

    try:
        proc, url, lines = start_cli(args, env)
        procs.append(proc)
        assert sum(line.startswith("http://") for line in lines) == 1 and "127.0.0.1" in url
        with sync_playwright() as p:
            browser = p.chromium.launch(executable_path=chromium_path(), args=[
                "--no-sandbox", "--disable-gpu", "--disable-background-networking", "--disable-component-update",
                "--no-first-run"])
            page = browser.new_page(viewport={"width": 1200, "height": 900})
            page.on("console", lambda m: errors.append(m.text) if m.type == "error" else None)
            page.on("pageerror", lambda e: errors.append(str(e)))
            page.on("request", lambda r: requests.append(r.url))
            page.goto(url)
            wait_text(page, "#total", "24")
            seen_hostile = set()
            for n in range(1, 11):                                       # ten pairs with the keyboard
                k = {4: "p", 7: "s"}.get(n) or gold_key(page)
                src = page.text_content("#src")
                seen_hostile.update(h for h in HOSTILE if src == h)
                pressed[label(page, k, n)] = k
            page.keyboard.press("u")                                     # undo the tenth
            wait_text(page, "#count", "9")
            undone = page.text_content("#key")
            assert undone in pressed and list(pressed)[-1] == undone
            pressed.pop(undone)
            page.reload()
            wait_text(page, "#count", "9")
            assert page.text_content("#key") == undone                   # back at the pair undone
            for n in range(10, 14):
                src = page.text_content("#src")
                seen_hostile.update(h for h in HOSTILE if src == h)
                k = gold_key(page)
                pressed[label(page, k, n)] = k
            os.kill(proc.pid, signal.SIGKILL)                            # stop the server mid-way
            proc.wait(10)
            proc, url2, _ = start_cli(args, env)                         # resume: a new port and token
            procs.append(proc)
            assert url2 != url
            page.goto(url2)
            wait_text(page, "#count", "13")
            while page.text_content("#pos") != "-":                      # label the rest, checking the hostile texts
                src = page.text_content("#src")
                seen_hostile.update(h for h in HOSTILE if src == h)
                k = gold_key(page)
                pressed[label(page, k, len(pressed) + 1)] = k
            assert seen_hostile == set(HOSTILE)
            assert page.is_visible("#done")
            shown = page.eval_on_selector_all("#bands tr", "rs => rs.map(r => [...r.cells].map(c => c.textContent))")
            page.screenshot(path=str(tmp_path / "review.png"))
            browser.close()
    finally:
        for proc in procs:
            if proc.poll() is None:
                proc.send_signal(signal.SIGINT)
                try:
                    proc.wait(10)
                except subprocess.TimeoutExpired:
                    proc.kill()
    assert errors == []
    hosts = {r.split("/")[2] for r in requests}
    assert hosts == {url.split("/")[2], url2.split("/")[2]}                  # nothing fetched from elsewhere
    # the labels file holds what was pressed, undo included
    log = read_log(labels_file)
    r = open_review(out, labels_file)
    assert {r.items[i].key: lb for i, lb in log.labels.items()} == pressed and len(pressed) == 24
    assert sum('"undo"' in line for line in labels_file.read_text().splitlines()) == 1
    # measured precision per band is what was pressed, on the page and in the summary
    s = r.summary()
    for b, row in zip(s["bands"], shown):
        keys = [it.key for it in r.items if it.band == b["band"] - 1 and pressed[it.key] != "s"]
        want = sum(pressed[k] == "y" for k in keys) / len(keys)
        assert b["precision"] == pytest.approx(want, abs=1e-4) and row[4] == f"{100 * want:.1f} %"
    assert sorted(pressed.values()).count("s") == 1 and "p" in pressed.values()


def test_eval_bucc_with_labels(tmp_path, capsys):
    """Labels as gold: `bisent eval bucc MINED --labels FILE` estimates P/R/F1 close to the gold ones."""
    out = mined_run(tmp_path, n_true=400, n_false=200)
    r = open_review(out, per_band=40)
    label_by_gold(r)
    assert main(["eval", "bucc", out, "--labels", r.labels_path, "--threshold", "1.2", "--json"]) == 0
    got = json.loads(capsys.readouterr().out)
    rows = [line.split("\t") for line in out.read_text().splitlines()]
    for res in (got["best"], got["at_threshold"]):
        kept = [is_parallel(x[1], x[2]) for x in rows if float(x[0]) >= res["threshold"]]
        lo, hi = res["precision_interval"]
        assert lo <= np.mean(kept) <= hi and res["n_mined"] == len(kept)
        assert res["recall"] == pytest.approx(sum(kept) / 400, abs=0.08)
    assert got["all"]["threshold"] is None and got["all"]["n_mined"] == len(rows) and got["all"]["recall"] == 1.0
    assert got["all"]["precision_interval"][0] <= 400 / 600 <= got["all"]["precision_interval"][1]
    assert main(["eval", "bucc", out, "--labels", r.labels_path]) == 0
    assert capsys.readouterr().out.splitlines()[1].startswith("best          P=")
    assert main(["eval", "bucc", out, tmp_path / "gold.tsv", "--labels", r.labels_path]) == 2
    assert main(["eval", "bucc", out]) == 2


def test_review_an_align_pairs_folder(tmp_path, capsys):
    """`bisent align --pairs ... --report`: the folder is reviewed as one run; --apply writes a folder of the
    same files; `bisent report` on it shows the labels."""
    docs = [("The cat sleeps.\nThe dog runs.\nIt rains.", "The cat sleeps .\nThe dog runs .\nIt rains ."),
            ("We eat bread.\nShe reads books.", "We eat bread .\nShe reads books .")]
    for k, (a, b) in enumerate(docs):
        (tmp_path / f"s{k}.txt").write_text(a + "\n")
        (tmp_path / f"t{k}.txt").write_text(b + "\n")
    (tmp_path / "pairs.tsv").write_text("s0.txt\tt0.txt\ns1.txt\tt1.txt\n")
    out = tmp_path / "al"
    assert main(["align", "--pairs", tmp_path / "pairs.tsv", "-l", "en", "-L", "en", "-e", "char-ngram", "-o", out,
                 "--report", tmp_path / "al.html"]) == 0
    capsys.readouterr()
    r = open_review(out, bands=1, per_band=5)
    assert r.run.kind == "align" and r.labels_path == out / "review.jsonl" and len(r.items) == 5
    assert {it.key.split(":")[0] for it in r.items} == {"00000.tsv", "00001.tsv"}
    for i in range(5):
        r.label(i, "y" if i else "n")
    assert main(["review", out, "--apply", "0.5", "-o", tmp_path / "cut"]) == 0
    got = json.loads(capsys.readouterr().out)
    assert sorted(p.name for p in (tmp_path / "cut").iterdir()) == ["00000.tsv", "00001.tsv"]
    assert sum(len(p.read_text().splitlines()) for p in (tmp_path / "cut").iterdir()) == got["kept"]
    assert main(["review", out, "--apply", "0.5", "-o", tmp_path / "cut"]) == 0             # again: replaced
    capsys.readouterr()
    assert main(["review", out, "--apply", "0.5", "-o", out]) == 2
    assert main(["review", out, "--apply", "0.5", "-o", out / "sub"]) == 2
    assert main(["report", out, "-o", tmp_path / "folder.html"]) == 0
    assert "Checked by eye: 5 of 5" in (tmp_path / "folder.html").read_text()


def test_partial_labels_feed_the_repair_step(tmp_path, capsys, toy_model):
    """Pairs labelled partial in a run with a repair step: counted with their interval, and each shown with
    what `bisent repair` (every shape of cut) would cut; the HTML report lists them, text escaped."""
    from divergence_toys import toy_pairs

    _, model_dir = toy_model
    pairs = toy_pairs(40, 11)
    junk = " ".join(f"b{i}" for i in range(40) if f"a{i}" not in pairs[3][0].split())
    glued = (pairs[3][0], pairs[3][1] + " " + " ".join(junk.split()[:5]))
    rows = [glued if k == 3 else p for k, p in enumerate(pairs)]
    rows[5] = (rows[5][0], rows[5][1] + " <script>x</script>")
    (tmp_path / "in.tsv").write_text("".join(f"{a}\t{b}\n" for a, b in rows), encoding="utf-8")
    cfg = tmp_path / "f.yaml"
    cfg.write_text(json.dumps({"steps": [
        {"type": "repair", "model": str(model_dir), "tau": 2, "min_word_gain": 0},
        {"name": "cos", "type": "cosine", "encoder": "char-ngram", "accept": {"min": -1.0}}]}))
    kept = tmp_path / "kept.tsv"
    assert main(["filter", tmp_path / "in.tsv", "-l", "xa", "-L", "xb", "-c", cfg, "-o", kept,
                 "--rejected", tmp_path / "rej.tsv", "--report", tmp_path / "r.html"]) == 0
    assert glued[1] in kept.read_text(encoding="utf-8")         # the step's default shapes leave it whole
    capsys.readouterr()
    r = open_review(kept, per_band=40, bands=1)
    assert len(r.items) == 40
    partial = {glued[0], rows[5][0]}
    for i, it in enumerate(r.items):
        r.label(i, "p" if it.src in partial else "y")
    pt = r.summary()["partial"]
    assert pt["labelled"] == 2 and pt["judged"] == 40 and pt["share"] == 0.05
    assert pt["interval"][0] < 0.05 < pt["interval"][1]
    assert pt["repair_step"]["model"] == str(model_dir)
    cut = {p["src"]: p["repair"] for p in pt["pairs"]}
    assert cut[glued[0]]["status"] == "cut" and cut[glued[0]]["tgt"] == pairs[3][1]
    assert pt["would_cut"] >= 1
    assert main(["review", kept, "--report", tmp_path / "rv.html"]) == 0
    page = (tmp_path / "rv.html").read_text(encoding="utf-8")
    assert "Labelled partial: 2 of 40" in page and "&lt;script&gt;x&lt;/script&gt;" in page
    assert "<script>x</script>" not in page


def test_partial_labels_without_a_repair_step(tmp_path):
    run = mined_run(tmp_path, n_true=30, n_false=10)
    r = open_review(run, per_band=10, bands=2)
    for i, _ in enumerate(r.items):
        r.label(i, "p" if i == 0 else "y")
    pt = r.summary()["partial"]
    assert pt["labelled"] == 1 and pt["repair_step"] is None and "would_cut" not in pt
    assert "repair" not in pt["pairs"][0]


def test_review_samples_below_a_mining_cut_and_apply_lowers_it(tmp_path, capsys):
    """A mining run cut too high keeps the pairs it dropped aside (OUTPUT.below); the review samples them in bands of
    their own, and --apply, where their labels say so, writes a lower cut that takes them back."""
    from bisent.review.sample import BELOW_BANDS

    rng = np.random.default_rng(0)
    words = [f"{a}{b}" for a in ("ka", "lo", "mi", "nu", "pe", "ri", "su", "to") for b in ("ba", "de", "fi", "go")]
    same = [" ".join(rng.choice(words, 6)) for _ in range(120)]
    src = same + [" ".join(rng.choice(words, 6)) + " x" for _ in range(30)]
    tgt = same + [" ".join(rng.choice(words, 6)) + " y" for _ in range(30)]
    (tmp_path / "a.txt").write_text("\n".join(src) + "\n")
    (tmp_path / "b.txt").write_text("\n".join(rng.permutation(tgt)) + "\n")
    out = tmp_path / "m.tsv"
    assert main(["mine", tmp_path / "a.txt", tmp_path / "b.txt", "-l", "en", "-L", "en", "-e", "char-ngram",
                 "--threshold", "none", "-o", tmp_path / "all.tsv"]) == 0
    every = [line.split("\t") for line in (tmp_path / "all.tsv").read_text().splitlines()]
    high = float(every[39][0])                                  # a cut that keeps 40 of the 120 right pairs
    assert main(["mine", tmp_path / "a.txt", tmp_path / "b.txt", "-l", "en", "-L", "en", "-e", "char-ngram",
                 "--threshold", str(high), "--report", tmp_path / "r.html", "-o", out]) == 0
    kept = out.read_text().splitlines()
    below = (tmp_path / "m.tsv.below").read_text().splitlines()
    assert len(kept) == 40 and kept + below == (tmp_path / "all.tsv").read_text().splitlines()
    r = open_review(out, per_band=10)
    assert r.run.below == len(below) and sum(b.get("below", False) for b in r.bands) == BELOW_BANDS
    assert {it.band for it in r.items if it.key.startswith("below:")} == {len(r.bands) - 2, len(r.bands) - 1}
    for i, it in enumerate(r.items):
        r.label(i, "y" if it.src == it.tgt else "n")
    capsys.readouterr()
    cut = tmp_path / "cut.tsv"
    assert main(["review", out, "--apply", "0.9", "-o", cut]) == 0
    got = json.loads(capsys.readouterr().out)
    rows = [line.split("\t") for line in cut.read_text().splitlines()]
    assert got["threshold"] < high and got["lowered_from"] == pytest.approx(high)
    assert got["kept"] == len(rows) > 40 and all(float(x[0]) >= got["threshold"] for x in rows)
    assert np.mean([x[1] == x[2] for x in rows]) >= 0.9
    # a run that keeps every pair leaves no pairs aside, and no stale file of an earlier run
    assert main(["mine", tmp_path / "a.txt", tmp_path / "b.txt", "-l", "en", "-L", "en", "-e", "char-ngram",
                 "--threshold", "-100", "--report", tmp_path / "r.html", "-o", out]) == 0
    assert not (tmp_path / "m.tsv.below").exists() and open_review(out, tmp_path / "l.jsonl").run.below == 0


def test_default_mine_falls_back_where_the_estimate_cannot_set_the_cut(tmp_path, capsys):
    """Under 30 mined pairs the estimate is too rough to set the default cut: the run keeps the pairs above the 98th
    percentile of its simulated false pairs and says so on stderr, in the summary and in the record."""
    from bisent.calibration import FALLBACK_QUANTILE

    rng = np.random.default_rng(1)
    words = [f"{a}{b}" for a in ("ka", "lo", "mi", "nu", "pe", "ri") for b in ("ba", "de", "fi", "go")]
    same = [" ".join(rng.choice(words, 5)) for _ in range(18)]
    (tmp_path / "a.txt").write_text("\n".join(same + [" ".join(rng.choice(words, 5)) + " x" for _ in range(8)]) + "\n")
    (tmp_path / "b.txt").write_text("\n".join(same[::-1] + [" ".join(rng.choice(words, 5)) + " y" for _ in range(8)])
                                    + "\n")
    out = tmp_path / "m.tsv"
    capsys.readouterr()
    assert main(["mine", tmp_path / "a.txt", tmp_path / "b.txt", "-l", "en", "-L", "en", "-e", "char-ngram",
                 "--report", tmp_path / "r.html", "-o", out]) == 0
    err = capsys.readouterr().err
    rec = json.loads((tmp_path / "m.tsv.report.json").read_text())
    assert rec["calibration"] is not None and rec["calibration"]["n_scores"] < 30
    assert "mined pairs" in rec["fallback"]["reason"] and rec["fallback"]["negatives_quantile"] == FALLBACK_QUANTILE
    assert rec["threshold"] == rec["calibration"]["fallback_threshold"] and rec["warnings"]
    assert "the default's fallback" in err and "above 98% of the simulated false pairs" in err
    kept = [float(line.split("\t")[0]) for line in out.read_text().splitlines()]
    assert kept and min(kept) >= rec["threshold"] and len(kept) == rec["counts"]["kept"]
    assert "<b>Warning:</b> the estimate rests on" in (tmp_path / "r.html").read_text()


def test_mine_refuses_an_output_whose_below_file_is_an_input(tmp_path, capsys):
    """OUTPUT.below (the pairs a default cut drops) is a declared output: an input of that name is refused
    before any work, never overwritten or removed."""
    from bisent.cli import main

    en = tmp_path / "a.en"
    en.write_text("Hello world.\nGood morning.\n", encoding="utf-8")
    de = tmp_path / "a.de.below"
    de.write_text("Hallo Welt.\nGuten Morgen.\n", encoding="utf-8")
    assert main(["mine", str(en), str(de), "-l", "en", "-L", "de", "-e", "char-ngram",
                 "-o", str(tmp_path / "a.de")]) != 0
    err = capsys.readouterr().err.strip()
    assert "OUTPUT.below" in err and "\n" not in err
    assert de.read_text(encoding="utf-8") == "Hallo Welt.\nGuten Morgen.\n" and not (tmp_path / "a.de").exists()
