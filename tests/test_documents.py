"""Document embeddings, document mining and the document builders (Guo et al. 2019)."""

from __future__ import annotations

import json
import tracemalloc

import numpy as np
import pytest

from bisent.cli import main
from bisent.documents import Document, SentenceAvg, mine_documents, read_documents, sentence_sums, write_matches
from bisent.encoders import get_encoder
from bisent.encoders.base import Encoder
from bisent.errors import BisentError
from bisent.evaluate import precision_at, retrieval_p_at_n


class TinyEncoder(Encoder):
    """A cheap deterministic encoder: 8-d vector from the characters of each sentence."""

    name = id = "tiny-test"
    dim = 8
    batch_size = 4096

    def embed_batch(self, sentences, lang):
        out = np.zeros((len(sentences), 8), np.float32)
        for i, s in enumerate(sentences):
            for j, ch in enumerate(s[:16]):
                out[i, (ord(ch) + j) % 8] += 1.0
            out[i, 0] += 0.5
        return out


# --- P@N and kNN ------------------------------------------------------------------------------------------

def test_precision_at_hand_made():
    ranked = np.array([[2, 0, 1], [0, 1, 2], [1, 2, 0], [1, 0, 2]])
    gold = np.array([2, 1, 0, 3])
    assert precision_at(ranked, gold, (1, 2, 3)) == {1: 0.25, 2: 0.5, 3: 0.75}


def test_retrieval_p_at_n_matches_brute_force():
    rng = np.random.default_rng(0)
    a = rng.standard_normal((300, 16)).astype(np.float32)
    b = a[rng.permutation(300)] + 0.9 * rng.standard_normal((300, 16)).astype(np.float32)
    a /= np.linalg.norm(a, axis=1, keepdims=True)
    b /= np.linalg.norm(b, axis=1, keepdims=True)
    a_gold = np.arange(0, 300, 3)
    # gold: row i of a pairs with the row of b nearest its noiseless copy
    b_gold = np.array([int(np.argmax(b @ a[i])) for i in a_gold])
    got = retrieval_p_at_n(a, b, a_gold, b_gold)
    s = a[a_gold] @ b.T                                                       # brute force
    fwd_rank = np.argsort(-s, axis=1)
    t = b[b_gold] @ a.T
    bwd_rank = np.argsort(-t, axis=1)
    for n in (1, 3, 10):
        assert got[f"p@{n}_src_tgt"] == round(100 * float(np.mean([(fwd_rank[i, :n] == b_gold[i]).any()
                                                                   for i in range(len(a_gold))])), 2)
        assert got[f"p@{n}_tgt_src"] == round(100 * float(np.mean([(bwd_rank[i, :n] == a_gold[i]).any()
                                                                   for i in range(len(a_gold))])), 2)


# --- reading documents ------------------------------------------------------------------------------------

def _jsonl(path, rows):
    path.write_text("".join(json.dumps(r, ensure_ascii=False) + "\n" for r in rows), encoding="utf-8")
    return path


def test_read_jsonl_and_folder(tmp_path):
    p = _jsonl(tmp_path / "d.jsonl", [{"id": "a", "text": "One. Two sentences here.\nA new paragraph."},
                                      {"id": "b", "text": ["Given unit one.", "Given unit two."]},
                                      {"id": "c", "text": ""}])
    docs = read_documents(p, "en")
    assert [d.id for d in docs] == ["a", "b", "c"]
    assert docs[0].sentences == ["One.", "Two sentences here.", "A new paragraph."]
    assert docs[2].sentences == [] and docs[2].reason == "empty document"
    assert read_documents(p, "en", segmentation="given")[0].sentences == ["One. Two sentences here.",
                                                                          "A new paragraph."]
    folder = tmp_path / "docs"
    (folder / "sub").mkdir(parents=True)
    (folder / "x.txt").write_text("Hello there. Bye.", encoding="utf-8")
    (folder / "sub" / "y.txt").write_text("Only one sentence", encoding="utf-8")
    docs = read_documents(folder, "en")
    assert [(d.id, d.sentences) for d in docs] == [("sub/y.txt", ["Only one sentence"]),
                                                   ("x.txt", ["Hello there.", "Bye."])]


@pytest.mark.parametrize("content, message", [
    ('{"id": "a", "text": "x"}\n{"id": "a", "text": "y"}\n', "d.jsonl:2: duplicate document id 'a' (first at"),
    ('{"id": "a", "text": "x"}\nnot json\n', "d.jsonl:2: not a JSON object"),
    ('{"text": "x"}\n', "d.jsonl:1: 'id' must be a non-empty string"),
    ('{"id": "a", "text": 3}\n', "d.jsonl:1: 'text' must be a string or a list of strings"),
    ('{"id": "a"}\n', "d.jsonl:1: expected an object with 'id' and 'text'"),
])
def test_bad_documents_are_one_line_errors(tmp_path, content, message):
    p = tmp_path / "d.jsonl"
    p.write_text(content, encoding="utf-8")
    with pytest.raises(BisentError, match="^" + str(tmp_path).replace("\\", "\\\\") + "/" + message.replace("(",
                                                                                                            r"\(")):
        read_documents(p, "en")


def test_folder_with_bad_bytes_names_file_and_line(tmp_path):
    (tmp_path / "f").mkdir()
    (tmp_path / "f" / "bad.txt").write_bytes(b"fine\nbad \xff here\n")
    with pytest.raises(BisentError, match=r"bad.txt:2: not valid UTF-8"):
        read_documents(tmp_path / "f", "en")


# --- document embeddings ----------------------------------------------------------------------------------

def test_streamed_sums_equal_one_pass_and_centring():
    enc = TinyEncoder()
    docs = [["a b c", "d e"], [], ["x"], ["p q", "r s", "t u", "v w", "y z"]]
    s1, c1 = sentence_sums(docs, enc, "en", chunk=2)
    s2, c2 = sentence_sums(docs, enc, "en", chunk=4096)
    np.testing.assert_allclose(s1, s2, rtol=1e-6)
    assert c1.tolist() == [2, 0, 1, 5]
    flat = enc.encode([s for d in docs for s in d], "en").astype(np.float64)
    mu = flat.mean(axis=0)
    got = SentenceAvg(enc, chunk=3).encode_documents(docs, "en")
    want = flat[:2].sum(0) - 2 * mu
    np.testing.assert_allclose(got[0], want / np.linalg.norm(want), atol=1e-6)
    assert not got[1].any()                                                   # empty document: zero row


def test_hundred_thousand_sentence_document_memory_is_bounded(monkeypatch):
    """A 100k-sentence document is summed in chunks: peak traced memory stays far below its vectors' size."""
    monkeypatch.setenv("BISENT_NO_EMBED_CACHE", "1")
    enc = TinyEncoder()
    long_doc = [f"sentence number {i}" for i in range(100_000)]
    tracemalloc.start()
    v = SentenceAvg(enc, chunk=2048).encode_documents([long_doc, ["short one"]], "en")
    _, peak = tracemalloc.get_traced_memory()
    tracemalloc.stop()
    assert v.shape == (2, 8) and np.isfinite(v).all() and abs(np.linalg.norm(v[0]) - 1) < 1e-5
    # all 100k float64 rows at once would be 100k x 8 x 8 B = 6.4 MB plus the encoder's copies
    assert peak < 3_000_000, peak


# --- mining -----------------------------------------------------------------------------------------------

def test_mine_documents_accounts_for_every_source(tmp_path):
    enc = get_encoder("char-ngram")
    topics = ["printer paper tray jam", "network cable router wifi", "spreadsheet formula cell sum",
              "font size bold italic", "backup archive restore disk", "keyboard shortcut ctrl key"]
    src = [Document(f"s{i}", [f"The {t} guide.", f"More about {t} here."], f"s:{i}") for i, t in enumerate(topics)]
    src.append(Document("empty", [], "s:empty"))
    tgt = [Document(f"t{i}", [f"Die {t} Anleitung.", f"Mehr zu {t} hier."], f"t:{i}")
           for i, t in reversed(list(enumerate(topics)))][:5]               # one source has no counterpart
    a = SentenceAvg(enc).encode_documents([d.sentences for d in src], "en")
    b = SentenceAvg(enc).encode_documents([d.sentences for d in tgt], "de")
    matches = mine_documents(src, tgt, a, b, k=2)
    assert [m.src_id for m in matches] == [d.id for d in src]
    got = {m.src_id: m.tgt_id for m in matches if m.reason is None}
    assert got == {f"s{i}": f"t{i}" for i in range(1, 6)}
    reasons = {m.src_id: m.reason for m in matches if m.reason}
    assert reasons == {"s0": "its candidates matched better-scoring source documents", "empty": "empty document"}
    counts = write_matches(matches, tmp_path / "pairs.tsv")
    lines = (tmp_path / "pairs.tsv").read_text(encoding="utf-8").splitlines()
    assert lines[0].split("\t")[:5] == ["src_id", "tgt_id", "score", "cosine", "status"]
    assert len(lines) == 1 + len(src) and counts == {"matched": 5, "unmatched": 2}


def test_cli_docs_mine_and_eval(tmp_path, capsys):
    topics = ["printer paper tray", "network cable router", "formula cell sum", "font size bold"]
    _jsonl(tmp_path / "en.jsonl", [{"id": f"e{i}", "text": f"The {t} guide. More on {t}."}
                                   for i, t in enumerate(topics)])
    _jsonl(tmp_path / "de.jsonl", [{"id": f"d{i}", "text": f"Die {t} Anleitung. Mehr zu {t}."}
                                   for i, t in enumerate(topics)])
    (tmp_path / "gold.tsv").write_text("".join(f"e{i}\td{i}\ttest\n" for i in range(4)), encoding="utf-8")
    out = tmp_path / "pairs.tsv"
    assert main(["documents", "mine", tmp_path / "en.jsonl", tmp_path / "de.jsonl", "-l", "en", "-L", "de",
                 "-e", "char-ngram", "-o", out]) == 0
    assert json.loads(capsys.readouterr().out)["matched"] == 4
    assert main(["eval", "docs", tmp_path / "en.jsonl", tmp_path / "de.jsonl", tmp_path / "gold.tsv", "-l", "en",
                 "-L", "de", "-e", "char-ngram", "--mined", out]) == 0
    r = json.loads(capsys.readouterr().out)
    assert r["p@1_src_tgt"] == 100.0 and r["p@1_tgt_src"] == 100.0 and r["mined_precision"] == 100.0
    (tmp_path / "gold2.tsv").write_text("e0\tnope\ttest\n", encoding="utf-8")
    assert main(["eval", "docs", tmp_path / "en.jsonl", tmp_path / "de.jsonl", tmp_path / "gold2.tsv", "-l", "en",
                 "-L", "de", "-e", "char-ngram"]) == 2
    assert "1 gold pair(s) name documents not in the collections, e.g. e0 -> nope" in capsys.readouterr().err
    # the gold ids are checked before any encoder is loaded: a model folder that does not exist is never reached
    assert main(["eval", "docs", tmp_path / "en.jsonl", tmp_path / "de.jsonl", tmp_path / "gold2.tsv", "-l", "en",
                 "-L", "de", "-e", tmp_path / "no-such-model"]) == 2
    assert "name documents not in the collections" in capsys.readouterr().err


# --- trained document encoders ----------------------------------------------------------------------------

def _toy_docset(folder, n_docs=160, seed=0):
    """Two toy 'languages': the target keeps half of the words and spells the other half backwards + 'q'."""
    rng = np.random.default_rng(seed)
    vocab = [f"w{i}{chr(97 + i % 26)}{chr(97 + (i * 7) % 26)}" for i in range(400)]
    cipher = {w: (w[::-1] + "q" if i % 2 else w) for i, w in enumerate(vocab)}
    src, tgt, gold = [], [], []
    for d in range(n_docs):
        topic = rng.choice(len(vocab), size=12, replace=False)
        sents = [" ".join(vocab[j] for j in rng.choice(topic, size=5)) + "." for _ in range(6)]
        split = "train" if d < n_docs - 40 else "dev"
        src.append({"id": f"s{d}", "text": sents, "split": split})
        tgt.append({"id": f"t{d}", "text": [" ".join(cipher[w] for w in s[:-1].split()) + "." for s in sents],
                    "split": split})
        gold.append(f"s{d}\tt{d}\t{split}\n")
    folder.mkdir()
    _jsonl(folder / "src.jsonl", src)
    _jsonl(folder / "tgt.jsonl", tgt)
    (folder / "gold.tsv").write_text("".join(gold), encoding="utf-8")
    (folder / "stats.json").write_text(json.dumps({"src": "en", "tgt": "de"}), encoding="utf-8")
    return folder


DOC_RECIPES = [
    ("hide-dnn-pool", {"model.base": "char-ngram"}),
    ("hide-pool-dnn", {"model.base": "char-ngram"}),
    ("doc-bow", {"model.buckets": 4096}),
]


def _doc_recipe(recipe: str, arch_keys: dict, **more):
    from bisent.training.recipe import load_recipe

    return load_recipe(recipe, {**arch_keys, "data.segmentations": ["given"], "data.batch_size": 32, **more})


@pytest.mark.parametrize("recipe, arch_keys", DOC_RECIPES)
def test_document_models_trained_for_seconds_beat_chance(tmp_path, recipe, arch_keys):
    from bisent.documents import get_document_encoder
    from bisent.training.loop import train

    data = _toy_docset(tmp_path / "toy")
    rc = _doc_recipe(recipe, arch_keys, **{"train.eval_every": 60})
    result = train(rc, [data], out_dir=tmp_path / "model", max_steps=60, progress=False)   # the one training loop
    res = next(r for r in reversed(result.log) if "dev_p1_given_src_tgt" in r)
    assert res["step"] == 60
    # 40 dev pairs: chance P@1 is 2.5 %
    assert res["dev_p1_given_src_tgt"] >= 60 and res["dev_p1_given_tgt_src"] >= 60, res
    enc = get_document_encoder(tmp_path / "model")                           # the saved model directory
    docs = [json.loads(x) for x in (data / "src.jsonl").read_text().splitlines()][-40:]
    tdocs = [json.loads(x) for x in (data / "tgt.jsonl").read_text().splitlines()][-40:]
    a = enc.encode_documents([d["text"] for d in docs], "en")
    b = enc.encode_documents([d["text"] for d in tdocs], "de")
    p = retrieval_p_at_n(a, b, np.arange(40), np.arange(40))
    assert p["p@1_src_tgt"] == res["dev_p1_given_src_tgt"]                   # NumPy inference = torch training


@pytest.mark.parametrize("recipe, arch_keys", [DOC_RECIPES[0], DOC_RECIPES[2]])
def test_document_training_resumes_bit_exact(tmp_path, recipe, arch_keys):
    """Stopped at 6 steps (checkpoint every 3), then resumed to 10: the same weights as 10 steps straight."""
    from safetensors.numpy import load_file

    from bisent.training.loop import train

    data = _toy_docset(tmp_path / "toy", n_docs=100)
    for side in ("src", "tgt"):                            # paragraphs of two sentences: the two views differ
        rows = [json.loads(x) for x in (data / f"{side}.jsonl").read_text().splitlines()]
        _jsonl(data / f"{side}.jsonl", [{**r, "text": [" ".join(r["text"][i:i + 2]) for i in range(0, 6, 2)]}
                                        for r in rows])
    rc = _doc_recipe(recipe, arch_keys, **{"train.checkpoint_every": 3, "train.log_every": 1,
                                           "data.segmentations": ["given", "sentencex"], "data.batch_size": 16})
    straight = train(rc, [data], out_dir=tmp_path / "a", max_steps=10, progress=False)
    train(rc, [data], out_dir=tmp_path / "b", max_steps=6, progress=False)
    resumed = train(rc, [data], out_dir=tmp_path / "b", max_steps=10, resume=True, progress=False)
    losses = lambda log: [r["loss"] for r in log if "loss" in r]  # noqa: E731
    assert losses(resumed.log) == losses(straight.log) and len(losses(straight.log)) == 10
    a, b = load_file(tmp_path / "a" / "model.safetensors"), load_file(tmp_path / "b" / "model.safetensors")
    assert sorted(a) == sorted(b) and all(np.array_equal(a[k], b[k]) for k in a)


def test_document_recipe_errors(tmp_path, capsys):
    from bisent.training.recipe import load_recipe

    p = tmp_path / "r.yaml"
    p.write_text("architecture: hide\nmodel:\n  mode: sideways\n", encoding="utf-8")
    with pytest.raises(BisentError, match="model.mode: 'sideways' is not one of dnn-pool, pool-dnn"):
        load_recipe(p)
    p.write_text("architecture: doc-bow\nmodel:\n  nope: 1\n", encoding="utf-8")
    with pytest.raises(BisentError, match="unknown key 'model.nope'"):
        load_recipe(p)
    p.write_text("architecture: doc-bow\ndata:\n  segmentations: [lines]\n", encoding="utf-8")
    with pytest.raises(BisentError, match="data.segmentations: choose from given, sentencex"):
        load_recipe(p)


def test_cli_trains_a_document_model_and_resumes(tmp_path, capsys):
    """``bisent train --recipe doc-bow --train DOCSET`` runs the training loop: checkpoint, --resume."""
    recipe = "doc-bow"
    data, out = _toy_docset(tmp_path / "toy", n_docs=60), str(tmp_path / "m")
    args = ["train", "-c", recipe, "--train", str(data), "-o", out, "--set", "model.buckets=1024",
            "--set", "data.batch_size=8", "--set", "train.eval_every=100", "--threads", "1", "--no-progress"]
    assert main(args + ["--max-steps", "4"]) == 0
    first = json.loads(capsys.readouterr().out.strip().splitlines()[-1])
    assert first["step"] == 4 and "dev_p1_given_src_tgt" in first, first        # the dev figure of the last step
    assert (tmp_path / "m" / "checkpoint.safetensors").exists()
    assert main(args + ["--max-steps", "6", "--resume"]) == 0
    summary = json.loads(capsys.readouterr().out.strip().splitlines()[-1])
    assert summary["step"] == 6 and "dev_p1_given_src_tgt" in summary, summary
    assert main(args + ["--max-steps", "6", "--dev", str(data / "gold.tsv"), "-o", str(tmp_path / "m2")]) != 0
    assert "bisent: error:" in capsys.readouterr().err


# --- builders: parsers on small real-format samples ------------------------------------------------------

def test_parsers_on_samples():
    from bisent.datasets.docsets import html_paragraphs, mallard_paragraphs, roff_paragraphs

    html = ('<html><body><div class="navheader"><p>Prev Next</p></div><h1>3. The Menu</h1>'
            '<p>Click <span class="guilabel">OK</span> to close.</p><ul><li><p>First item</p></li></ul></body></html>')
    assert html_paragraphs(html) == ["3. The Menu", "Click OK to close.", "First item"]
    page = ('<page xmlns="http://projectmallard.org/1.0/" id="x"><info><desc>hidden</desc></info>'
            '<title>Wireless</title><p>Turn it <gui>on</gui>.</p><list><item><p>Step one</p></item></list></page>')
    assert mallard_paragraphs(page) == ["Wireless", "Turn it on.", "Step one"]
    roff = ('.\\" comment\n.TH LS 1\n.SH BEZEICHNUNG\nls \\- Verzeichnisinhalte auflisten\n.SH BESCHREIBUNG\n.PP\n'
            'Auflistung von \\fBInformationen\\fP über\ndie DATEIen.\n.TP\n\\fB\\-a\\fP, \\fB\\-\\-all\\fP\n')
    assert roff_paragraphs(roff) == ["BEZEICHNUNG", "ls - Verzeichnisinhalte auflisten", "BESCHREIBUNG",
                                     "Auflistung von Informationen über die DATEIen.", "-a, --all"]
    assert roff_paragraphs(".so man3/other.3\n") is None


def test_page_readers_leave_out_aliases_and_broken_files(tmp_path, capsys):
    """One reader per format for the document sets and the scale collection: a manual page that is a link or
    not gzip, a Mallard page that does not parse, are left out (the broken gzip said on stderr)."""
    import gzip

    from bisent.datasets.docsets import mallard_pages, man_page

    (tmp_path / "man1").mkdir()
    good = tmp_path / "man1" / "ls.1.gz"
    good.write_bytes(gzip.compress(b".TH LS 1\n.SH NAME\nls \\- list\n"))
    (tmp_path / "man1" / "dir.1.gz").symlink_to(good)
    (tmp_path / "man1" / "bad.1.gz").write_bytes(b"not gzip")
    assert man_page(good) == ["NAME", "ls - list"]
    assert man_page(tmp_path / "man1" / "dir.1.gz") is None
    assert man_page(tmp_path / "man1" / "bad.1.gz") is None
    assert "bad.1.gz: not a readable gzip file; left out" in capsys.readouterr().err
    (tmp_path / "help" / "sub").mkdir(parents=True)
    (tmp_path / "help" / "sub" / "b.page").write_text('<page xmlns="http://projectmallard.org/1.0/" id="b">'
                                                      '<title>Wi-Fi</title></page>', encoding="utf-8")
    (tmp_path / "help" / "a.page").write_text("<page><title>unclosed", encoding="utf-8")
    assert mallard_pages(tmp_path / "help") == {"sub/b.page": ["Wi-Fi"]}


def test_man_pages_of_japanese_and_chinese(tmp_path, monkeypatch):
    """Japanese and Chinese pages come from their own projects' packages and folders (manpages-ja, -ja-dev;
    manpages-zh's zh_CN), under the same page ids as English; a space a roff line wrap put between two CJK
    characters is taken out, one between Latin words kept."""
    import gzip

    from bisent.datasets import docsets

    monkeypatch.setattr(docsets, "fetch_package", lambda name: tmp_path / name)
    for package, folder, text in (("manpages-ja", "ja", "ls \\- ディレクトリの\n内容をリスト表示する\n"),
                                  ("manpages-ja-dev", "ja", "open \\- ファイルを\n開く"),
                                  ("manpages-zh", "zh_CN", "ls \\- 列目录\n内容"),
                                  ("manpages-zh", "zh_TW", "ls \\- 列出目錄")):
        name = "open.2.gz" if package.endswith("-dev") else "ls.1.gz"
        d = tmp_path / package / "usr/share/man" / folder / f"man{name[-4]}"
        d.mkdir(parents=True, exist_ok=True)
        (d / name).write_bytes(gzip.compress(f".TH X 1\n.SH NAME\n{text}\n".encode()))
    assert docsets.man_pages("ja") == {"man:man1/ls.1": ["NAME", "ls - ディレクトリの内容をリスト表示する"],
                                       "man:man2/open.2": ["NAME", "open - ファイルを開く"]}
    assert docsets.man_pages("zh-cn") == {"man:man1/ls.1": ["NAME", "ls - 列目录内容"]}
    assert docsets.man_packages("ja")[:2] == ["manpages-ja", "manpages-ja-dev"]
    assert docsets.man_packages("de")[0] == "manpages-de"


@pytest.mark.network
def test_gnome_docset_from_debian(tmp_path):
    """gnome-user-docs (apt-get download, cached): the same page path in C and de is a gold pair."""
    from bisent.datasets.docsets import load_docset, write_docset

    st = write_docset("gnome", "en", "de", tmp_path / "g")
    ds = load_docset(tmp_path / "g")
    assert st["documents_src"] > 100 and len(ds["gold"]) == sum(st["gold"].values()) > 100
    ids = {d["id"] for d in ds["tgt"]}
    assert all(t in ids for _, t, _ in ds["gold"])


def test_html_sections_and_heading_only_merge():
    from bisent.datasets.docsets import _MANUAL_NAV, html_sections, merge_heading_only

    html = ('<html><body><div class="toc"><p>1. Intro 2. Use</p></div><p>Preface text.</p>'
            '<h1><a id="a"></a>1. Intro</h1><h2 id="b">1.1. Why</h2><p>Because.</p>'
            '<div class="navfooter"><p>Next</p></div><h2>1.2. How</h2><p>Like this.</p><li>Step</li></body></html>')
    secs = html_sections(html, skip=_MANUAL_NAV)
    assert secs == [(0, ["Preface text."]), (1, ["1. Intro"]), (2, ["1.1. Why", "Because."]),
                    (2, ["1.2. How", "Like this.", "Step"])]
    assert merge_heading_only(secs) == [(0, ["Preface text."]), (2, ["1. Intro", "1.1. Why", "Because."]),
                                        (2, ["1.2. How", "Like this.", "Step"])]
    assert merge_heading_only([(0, []), (1, ["Title only"])]) == [(0, ["Title only"])]


def _fake_manual(root, lang, pages):
    folder = root / f"pkg-{lang}" / "doc"
    folder.mkdir(parents=True)
    for name, body in pages.items():
        (folder / name).write_text(f"<html><body>{body}</body></html>", encoding="utf-8")


def test_manual_sections_gold_by_structure(tmp_path, monkeypatch):
    """The k-th section of the same page pairs only when both pages have the same heading levels."""
    from bisent.datasets import docsets

    _fake_manual(tmp_path, "en", {"a.html": "<h1>A</h1><p>one</p><h2>A.1</h2><p>two</p>",
                                  "b.html": "<h1>B</h1><p>x</p><h2>B.1</h2><p>y</p>", "only-en.html": "<p>z</p>"})
    _fake_manual(tmp_path, "de", {"a.html": "<h1>A-de</h1><p>eins</p><h2>A.1-de</h2><p>zwei</p>",
                                  "b.html": "<h1>B-de</h1><p>x</p><h3>B.1-de</h3><p>y</p>"})
    monkeypatch.setattr(docsets, "fetch_package", lambda name: tmp_path / name)
    monkeypatch.setitem(docsets.MANUALS, "toy", docsets.Manual(lambda l: f"pkg-{l}", lambda l: "doc",
                                                                lambda l: "*.html"))
    en, de = docsets.manual_pages("toy", "en", "de")
    assert en["toy:a.html#000"] == ["A", "one"] and de["toy:a.html#001"] == ["A.1-de", "zwei"]
    assert "toy:b.html#en000" in en and "toy:b.html#de001" in de and "toy:b.html#000" not in en   # levels differ
    assert sorted(en.keys() & de.keys()) == ["toy:a.html#000", "toy:a.html#001"]
    assert en["toy:only-en.html#en000"] == ["z"]                                        # a distractor
    monkeypatch.setitem(docsets.MANUALS, "toy", docsets.Manual(lambda l: f"pkg-{l}", lambda l: "doc",
                                                                lambda l: "*.html", skip=("b.",)))
    assert "toy:b.html#en000" not in docsets.manual_pages("toy", "en", "de")[0]           # a one-page copy left out
    assert docsets.same_structure([(1, ["2.1. A"]), (2, ["2.1.1 B"])], [(1, ["2.1. A-de"]), (2, ["2.1.1 B-de"])])
    assert not docsets.same_structure([(1, ["10.2.5. Import"])], [(1, ["10.1.5. Allgemein"])])   # another edition
    monkeypatch.setitem(docsets.MANUALS, "toy", docsets.Manual(lambda l: f"pkg-{l}", lambda l: "missing",
                                                                lambda l: "*.html"))
    with pytest.raises(BisentError, match="pkg-en: no missing folder"):
        docsets.manual_pages("toy", "en", "de")


def test_identical_documents_kept_once():
    from bisent.datasets.docsets import drop_duplicates

    pages = {"b": ["same", "text"], "a": ["same", "text"], "c": ["other"], "d": [], "e": []}
    assert drop_duplicates(pages) == 1 and sorted(pages) == ["a", "c", "d", "e"]       # empty pages stay (reasons)


@pytest.mark.network
def test_maint_guide_docset_from_debian(tmp_path):
    """maint-guide / maint-guide-de (cached): sections paired by page and position, the rest distractors."""
    from bisent.datasets.docsets import load_docset, write_docset

    st = write_docset("maint-guide", "en", "de", tmp_path / "m")
    ds = load_docset(tmp_path / "m")
    assert st["documents_src"] > 50 and len(ds["gold"]) == sum(st["gold"].values()) > 50
    text = {d["id"]: d["text"] for d in ds["tgt"]}
    assert all(text[t] for _, t, _ in ds["gold"])
