"""The review page: an HTTP server on 127.0.0.1 (at most 8 connections at once, one label at a time), a random
port and a random token. When all 8 are taken, the connection idle longest (open, but with no request under
way: a browser's pre-connection, or one that never sends a byte) is closed to make room, so idle connections
never keep a labelling page out.

Only three paths answer: ``GET /`` (the page), ``GET /api/state`` (the
sample, the labels, the summary) and ``POST /api/label`` / ``POST /api/undo``.
Every request must carry the token (``?t=`` for the page, the
``X-Bisent-Token`` header for the API), name this server as its Host, and
come from no other Origin; anything else is refused. The page fetches
nothing from the network: its script and styles are inline under a nonce, and
its policy allows no other source. Pair text is set as text, never as markup.
"""

from __future__ import annotations

import hmac
import json
import secrets
import socket
import threading
import time
from http.server import BaseHTTPRequestHandler, HTTPServer
from socketserver import ThreadingMixIn
from urllib.parse import parse_qs, urlsplit

from ..errors import BisentError
from ..safeload import json_text
from .labels import LABELS
from .session import Review

MAX_BODY = 4096
#: connections served at once (a browser's idle pre-connection does not hold up the page); more are closed
MAX_CONNECTIONS = 8


class ReviewServer(ThreadingMixIn, HTTPServer):
    """Serve ``review`` on 127.0.0.1 (``port`` 0: a free one); :attr:`url` holds the token.

    Each connection has a thread, at most :data:`MAX_CONNECTIONS` at once; the
    review itself (labels, undo, summary) is touched under one lock.
    """

    allow_reuse_address = False
    daemon_threads = True
    block_on_close = False

    def __init__(self, review: Review, *, port: int = 0, token: str | None = None, precision: float | None = None):
        self.review = review
        self.token = token or secrets.token_urlsafe(24)
        self.precision = precision
        self.lock = threading.Lock()
        self._slots = threading.BoundedSemaphore(MAX_CONNECTIONS)
        self._conns: dict = {}                  # open connection -> since when it is idle (None: a request)
        self._conns_lock = threading.Lock()
        try:
            super().__init__(("127.0.0.1", port), Handler)
        except OSError as e:
            raise BisentError(f"--port {port}: cannot listen on 127.0.0.1:{port} ({e.strerror or e}); give another "
                              "port, or 0 for a free one") from None
        self.host = f"127.0.0.1:{self.server_address[1]}"

    def process_request(self, request, client_address):
        if not self._slots.acquire(blocking=False):
            self._close_idlest()
            if not self._slots.acquire(timeout=2.0):   # every slot busy with a request: refuse this one
                self.shutdown_request(request)
                return
        with self._conns_lock:
            self._conns[request] = time.monotonic()
        try:
            super().process_request(request, client_address)
        except BaseException:
            self._forget(request)
            raise

    def process_request_thread(self, request, client_address):
        try:
            super().process_request_thread(request, client_address)
        finally:
            self._forget(request)

    def _forget(self, request) -> None:
        with self._conns_lock:
            self._conns.pop(request, None)
        self._slots.release()

    def mark(self, request, idle: bool) -> None:
        """Say whether the connection ``request`` waits for a request (``idle``) or is serving one."""
        with self._conns_lock:
            if request in self._conns:
                self._conns[request] = time.monotonic() if idle else None

    def _close_idlest(self) -> None:
        """Close the connection idle longest (its thread ends and gives its slot back)."""
        with self._conns_lock:
            idle = [(since, conn) for conn, since in self._conns.items() if since is not None]
        if idle:
            try:
                min(idle, key=lambda x: x[0])[1].shutdown(socket.SHUT_RDWR)
            except OSError:
                pass

    @property
    def url(self) -> str:
        return f"http://{self.host}/?t={self.token}"

    def state(self, items: bool = False) -> dict:
        """What the page shows (the caller holds :attr:`lock`)."""
        r = self.review
        out = {"labels": {str(i): lb for i, lb in r.log.labels.items()}, "next": r.next_index(),
               "summary": r.summary(self.precision)}
        if items:
            out["items"] = [{"key": it.key, "score": it.score, "band": it.band + 1, "src": it.src, "tgt": it.tgt}
                            for it in r.items]
            out["bands"] = r.bands
            out["run"], out["kind"] = r.run.name, r.run.kind
        return out


class Handler(BaseHTTPRequestHandler):
    server: ReviewServer
    timeout = 30                      # a stalled connection does not hold its slot for long
    server_version = "bisent-review"
    sys_version = ""

    def log_message(self, format, *args):
        return

    def handle_one_request(self):
        self.server.mark(self.request, idle=True)       # no request under way: may be closed to make room
        super().handle_one_request()

    def parse_request(self):
        self.server.mark(self.request, idle=False)      # a request line came: served to its end
        return super().parse_request()

    # -- checks ---------------------------------------------------------------------------------------------------

    def _allowed(self, token: str | None) -> bool:
        s = self.server
        if self.headers.get("Host") != s.host:
            return False                       # another name for this address (DNS rebinding)
        origin = self.headers.get("Origin")
        if origin is not None and origin != f"http://{s.host}":
            return False
        site = self.headers.get("Sec-Fetch-Site")
        if site is not None and site not in ("same-origin", "none"):
            return False
        return token is not None and hmac.compare_digest(token.encode(), s.token.encode())

    def _send(self, code: int, body: bytes, ctype: str, extra: dict | None = None) -> None:
        self.send_response(code)
        self.send_header("Content-Type", ctype)
        self.send_header("Content-Length", str(len(body)))
        self.send_header("Cache-Control", "no-store")
        self.send_header("X-Content-Type-Options", "nosniff")
        self.send_header("Referrer-Policy", "no-referrer")
        self.send_header("X-Frame-Options", "DENY")
        self.send_header("Cross-Origin-Resource-Policy", "same-origin")
        for k, v in (extra or {}).items():
            self.send_header(k, v)
        self.end_headers()
        self.wfile.write(body)

    def _json(self, code: int, data) -> None:
        self._send(code, json.dumps(data, ensure_ascii=False).encode("utf-8"), "application/json; charset=utf-8")

    def _refuse(self, code: int = 403, why: str = "forbidden") -> None:
        self._json(code, {"error": why})

    # -- routes ---------------------------------------------------------------------------------------------------

    def do_GET(self):
        url = urlsplit(self.path)
        if url.path == "/":
            token = (parse_qs(url.query).get("t") or [None])[0]
            if not self._allowed(token):
                return self._refuse()
            nonce = secrets.token_urlsafe(16)
            csp = (f"default-src 'none'; script-src 'nonce-{nonce}'; style-src 'nonce-{nonce}'; connect-src 'self'; "
                   "img-src 'none'; base-uri 'none'; form-action 'none'; frame-ancestors 'none'")
            return self._send(200, page(nonce).encode("utf-8"), "text/html; charset=utf-8",
                              {"Content-Security-Policy": csp})
        if url.path == "/api/state":
            if not self._allowed(self.headers.get("X-Bisent-Token")):
                return self._refuse()
            with self.server.lock:
                state = self.server.state(items=True)
            return self._json(200, state)
        return self._refuse(404, "not found")

    def do_POST(self):
        url = urlsplit(self.path)
        if url.path not in ("/api/label", "/api/undo"):
            return self._refuse(404, "not found")
        if not self._allowed(self.headers.get("X-Bisent-Token")):
            return self._refuse()
        if (self.headers.get("Content-Type") or "").split(";")[0].strip() != "application/json":
            return self._refuse(415, "expected application/json")
        try:
            size = int(self.headers.get("Content-Length") or 0)
        except ValueError:
            size = -1
        if not 0 <= size <= MAX_BODY:
            return self._refuse(413, "body too large")
        try:
            body = json_text(self.rfile.read(size) or b"{}", "request body")
        except BisentError as e:
            return self._refuse(400, str(e))
        review = self.server.review
        with self.server.lock:
            try:
                if url.path == "/api/undo":
                    undone = review.undo()
                    state = {**self.server.state(), "undone": undone}
                else:
                    i = body.get("i") if isinstance(body, dict) else None
                    label = body.get("label") if isinstance(body, dict) else None
                    if not isinstance(i, int) or isinstance(i, bool) or not isinstance(label, str) \
                            or label not in LABELS:
                        return self._refuse(400, "expected {\"i\": N, \"label\": y|n|p|s}")
                    review.label(i, label)
                    state = self.server.state()
            except BisentError as e:
                return self._refuse(400, str(e))
        return self._json(200, state)

    def do_PUT(self):
        self._refuse(405, "method not allowed")

    do_DELETE = do_PATCH = do_OPTIONS = do_HEAD = do_PUT


def page(nonce: str) -> str:
    """The review page (no data in it: the script asks the API, with the token from its own URL)."""
    return PAGE.replace("{nonce}", nonce)


PAGE = """<!DOCTYPE html>
<html lang=en><head><meta charset=utf-8><meta name=viewport content="width=device-width,initial-scale=1">
<title>bisent review</title>
<style nonce="{nonce}">
body{font-family:system-ui,-apple-system,'Segoe UI',sans-serif;max-width:1100px;margin:1em auto;padding:0 1em;
color:#1a202c;line-height:1.45}
h1{font-size:1.3em;margin:.2em 0}.muted{color:#4a5568;font-size:.9em}
.pair{display:grid;grid-template-columns:1fr 1fr;gap:1em;margin:1em 0}
.side{font-size:1.5em;background:#f7fafc;border:1px solid #cbd5e0;border-radius:6px;padding:.7em;min-height:4em;
white-space:pre-wrap;overflow-wrap:anywhere}
.meta{font-size:1.05em}.meta b{font-variant-numeric:tabular-nums}
.keys button{font-size:1em;margin:.2em .3em .2em 0;padding:.4em .8em;cursor:pointer}
kbd{border:1px solid #a0aec0;border-radius:3px;padding:0 .3em;background:#edf2f7}
table{border-collapse:collapse;font-size:.9em;margin:.6em 0;width:100%}
td,th{border:1px solid #e2e8f0;padding:3px 6px;text-align:left}th{background:#f7fafc}
td.num{text-align:right;font-variant-numeric:tabular-nums;white-space:nowrap}
#status{min-height:1.4em}.y{color:#276749}.n{color:#9b2c2c}.p{color:#975a16}.s{color:#4a5568}
#done{display:none;font-size:1.2em;background:#f0fff4;border-left:4px solid #38a169;padding:.5em .9em}
</style></head><body>
<h1>bisent review: <span id=run></span></h1>
<p class=muted>Is the target a translation of the source? Keys: <kbd>y</kbd> parallel, <kbd>n</kbd> not,
<kbd>p</kbd> partial (counts as not parallel), <kbd>s</kbd> skip, <kbd>u</kbd> undo. Each label is saved as given.</p>
<div class=meta>Pair <b id=pos></b> of <b id=total></b> (<b id=count></b> labelled) &middot; score <b id=score></b>
&middot; band <b id=band></b> <span class=muted id=bandrange></span> &middot; key <span id=key></span></div>
<div id=done>Every sampled pair is labelled. Undo with <kbd>u</kbd>, or stop the server (Ctrl-C).</div>
<div class=pair><div><div class=muted>source</div><div class=side id=src></div></div>
<div><div class=muted>target</div><div class=side id=tgt></div></div></div>
<div class=keys><button id=by>y parallel</button><button id=bn>n not</button><button id=bp>p partial</button>
<button id=bs>s skip</button><button id=bu>u undo</button></div>
<div id=status class=muted></div>
<h2>What the labels say</h2>
<table><thead><tr><th>band</th><th>scores</th><th>pairs</th><th>labelled</th><th>measured precision</th>
<th>95 % interval</th><th>no-gold estimate</th></tr></thead><tbody id=bands></tbody></table>
<table><thead><tr><th>precision asked for</th><th>threshold from the labels</th><th>threshold interval</th>
<th>measured precision there</th><th>no-gold estimate there</th><th>pairs kept</th></tr></thead>
<tbody id=thresholds></tbody></table>
<p class=muted>Measured: parallel / (parallel + not + partial) of the labelled pairs; interval: Wilson's,
finite-population corrected. Threshold: the lowest labelled score whose pairs above reach the precision (bands
weighted by their size);
its interval runs from where the precision's interval top reaches it to where its bottom does.</p>
<script nonce="{nonce}">
"use strict";
const token = new URLSearchParams(location.search).get("t") || "";
let S = null, cur = null, busy = false;
const $ = id => document.getElementById(id);
function text(id, v) { $(id).textContent = v === null || v === undefined ? "" : String(v); }
function pct(x) { return x === null || x === undefined ? "" : (100 * x).toFixed(1) + " %"; }
function num(x) { return x === null || x === undefined ? "" : Number(x).toFixed(4); }
async function api(path, body) {
  const opt = {headers: {"X-Bisent-Token": token}, cache: "no-store"};
  if (body !== undefined) {
    opt.method = "POST"; opt.headers["Content-Type"] = "application/json"; opt.body = JSON.stringify(body);
  }
  const r = await fetch(path, opt);
  if (!r.ok) throw new Error(path + ": " + r.status);
  return r.json();
}
function row(cells) {
  const tr = document.createElement("tr");
  for (const [v, cls] of cells) {
    const td = document.createElement("td");
    td.textContent = v;
    if (cls) td.className = cls;
    tr.appendChild(td);
  }
  return tr;
}
function show() {
  const total = S.items.length, n = Object.keys(S.labels).length;
  text("total", total); text("count", n);
  cur = S.next;
  $("done").style.display = cur === null ? "block" : "none";
  const it = cur === null ? null : S.items[cur];
  text("pos", it ? cur + 1 : "-"); text("score", it ? num(it.score) : "");
  text("band", it ? it.band + " of " + S.bands.length : "");
  const band = it ? S.bands[it.band - 1] : null;
  text("bandrange", band ? "(scores " + num(band.high) + " to " + num(band.low) + ")" : "");
  text("key", it ? it.key : ""); text("src", it ? it.src : ""); text("tgt", it ? it.tgt : "");
  const tb = $("bands"); tb.replaceChildren();
  for (const b of S.summary.bands) {
    tb.appendChild(row([[b.band], [num(b.high) + " to " + num(b.low)], [b.pairs, "num"],
      [b.labelled + " / " + b.sampled, "num"],
      [pct(b.precision), "num"], [b.interval ? pct(b.interval[0]) + " to " + pct(b.interval[1]) : "", "num"],
      [pct(b.estimated), "num"]]));
  }
  const th = $("thresholds"); th.replaceChildren();
  for (const t of S.summary.thresholds) {
    const ti = t.threshold_interval;
    const none = S.summary.labelled ? "not reached" : "no labels yet";
    th.appendChild(row([[pct(t.precision)], [t.threshold === null ? none : num(t.threshold), "num"],
      [ti ? num(ti[0]) + " to " + (ti[1] === null ? "not reached" : num(ti[1])) : "", "num"],
      [t.interval ? pct(t.measured) + " (" + pct(t.interval[0]) + " to " + pct(t.interval[1]) + ")" : "", "num"],
      [pct(t.estimated), "num"], [t.kept === undefined ? "" : t.kept, "num"]]));
  }
}
function merge(st) { S.labels = st.labels; S.next = st.next; S.summary = st.summary; show(); }
async function act(key) {
  if (busy || S === null) return;
  busy = true;
  try {
    if (key === "u") {
      const st = await api("/api/undo", {});
      merge(st);
      text("status", st.undone === null ? "nothing to undo" : "undid pair " + (st.undone + 1));
    } else if (cur !== null) {
      const i = cur;
      merge(await api("/api/label", {i: i, label: key}));
      text("status", "pair " + (i + 1) + ": " + key);
      $("status").className = key;
    }
  } catch (e) { text("status", "not saved: " + e.message); }
  finally { busy = false; }
}
document.addEventListener("keydown", e => {
  if (e.ctrlKey || e.metaKey || e.altKey) return;
  const k = e.key.toLowerCase();
  if ("ynpsu".includes(k) && k.length === 1) { e.preventDefault(); act(k); }
});
for (const k of "ynpsu") $("b" + k).addEventListener("click", () => act(k));
api("/api/state").then(st => {
  S = st;
  text("run", st.run + " (" + st.kind + ")");
  document.title = "bisent review: " + st.run;
  show();
})
  .catch(e => text("status", "could not load the sample: " + e.message));
</script></body></html>
"""
