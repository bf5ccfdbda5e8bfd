"""Training framework and the two seq2seq recipes, on a synthetic cipher 'language pair'.

Each language is a word-substitution cipher of the same sentences over a
small vocabulary, with its own word order (neighbours swapped, or reversed),
so a model can only match sentences across languages by learning the lexicon.
Chance alignment-recovery error on 100 dev pairs is 0.99.
"""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import numpy as np
import pytest

torch = pytest.importorskip("torch")
pytest.importorskip("sentencepiece")

from bisent.encoders import get_encoder  # noqa: E402
from bisent.encoders.base import from_half  # noqa: E402
from bisent.encoders.trained import load_model_dir  # noqa: E402
from bisent.errors import BisentError  # noqa: E402
from bisent.evaluate import recovery_error  # noqa: E402
from bisent.models.rnn import Seq2SeqEncoder, build_model, init_from_word_vectors  # noqa: E402
from bisent.models.tokenizer import Tokenizer, train_tokenizer  # noqa: E402
from bisent.recipes import HERE as RECIPE_DIR  # noqa: E402
from bisent.training import checkpoint  # noqa: E402
from bisent.training.data import Bitext, Monotext, resolve_bitext, token_batches  # noqa: E402
from bisent.training.loop import train  # noqa: E402
from bisent.training.objectives import get_objective  # noqa: E402
from bisent.training.recipe import load_recipe, validate_recipe  # noqa: E402

RECIPES = str(RECIPE_DIR)
# Tiny sizes so that a run takes seconds on 2 CPU cores; the recipes' other keys are kept.
TINY = {"model.embed_dim": 48, "model.hidden_dim": 48, "model.dropout": 0.0, "tokenizer.vocab_size": 400,
        "data.batch_size": 32, "optim.lr": 0.01, "train.log_every": 5, "train.eval_every": 50}


def cipher_corpus(n: int = 400, vocab: int = 20, langs=("en", "de"), seed: int = 0) -> list[dict[str, str]]:
    """``n`` distinct sentences, each given in every language of ``langs``."""
    rng = np.random.default_rng(seed)
    letters = list("abcdefghijklmnopqrstuvwxyz")
    lex = {}
    for k, lang in enumerate(langs):
        words: set[str] = set()
        while len(words) < vocab:
            words.add("".join(rng.choice(letters, size=int(rng.integers(3, 7)))) + ["", "en", "ou"][k % 3])
        lex[lang] = sorted(words)
        rng.shuffle(lex[lang])
    seen, rows = set(), []
    while len(rows) < n:
        idx = tuple(rng.integers(0, vocab, size=int(rng.integers(4, 10))).tolist())
        if idx in seen:
            continue
        seen.add(idx)
        row = {}
        for k, lang in enumerate(langs):
            words = [lex[lang][i] for i in idx]
            if k % 3 == 1:                                     # swap neighbours
                for j in range(0, len(words) - 1, 2):
                    words[j], words[j + 1] = words[j + 1], words[j]
            elif k % 3 == 2:                                   # reverse
                words = words[::-1]
            row[lang] = " ".join(words)
        rows.append(row)
    return rows


def bitext(rows, a="en", b="de") -> Bitext:
    return Bitext(a, b, [(r[a], r[b]) for r in rows])


@pytest.fixture(autouse=True)
def _isolated_cache(monkeypatch, tmp_path):
    monkeypatch.setenv("BISENT_CACHE", str(tmp_path / "cache"))


@pytest.fixture(scope="module", autouse=True)
def _one_thread():
    """Tiny models run faster on one thread, and the test machine's 2 cores are shared."""
    before = torch.get_num_threads()
    torch.set_num_threads(1)
    yield
    torch.set_num_threads(before)


@pytest.fixture(scope="module")
def corpus():
    rows = cipher_corpus(400)
    return rows[:300], rows[300:]


@pytest.fixture(scope="module")
def kim_run(corpus, tmp_path_factory):
    recipe = load_recipe(f"{RECIPES}/kim2019.yaml", TINY)
    out = tmp_path_factory.mktemp("kim") / "model"
    return train(recipe, [bitext(corpus[0])], [], [bitext(corpus[1])], out, max_steps=100, progress=False)


@pytest.fixture(scope="module")
def artetxe_run(corpus, tmp_path_factory):
    # one language pair: x->x streams (objectives.autoencoding) give the two languages common targets
    recipe = load_recipe(f"{RECIPES}/artetxe2019.yaml", {**TINY, "model.decoder_dim": 96, "model.lang_dim": 8,
                                                         "objectives.autoencoding": 1})
    out = tmp_path_factory.mktemp("artetxe") / "model"
    return train(recipe, [bitext(corpus[0])], [], [bitext(corpus[1])], out, max_steps=200, progress=False)


def _losses(log):
    return [r["loss"] for r in log if "loss" in r]


def _recovery(model_dir, pairs):
    enc = get_encoder(model_dir)
    a = enc.encode([p[0] for p in pairs], "en", cache=False)
    b = enc.encode([p[1] for p in pairs], "de", cache=False)
    return recovery_error(a, b)[:2]


@pytest.mark.parametrize("run", ["kim_run", "artetxe_run"])
def test_loss_falls_and_alignment_recovered(run, corpus, request):
    result = request.getfixturevalue(run)
    losses = _losses(result.log)
    assert losses[-1] < 0.75 * losses[0], losses
    dev_err = [r["dev_err"] for r in result.log if "dev_err" in r]
    assert dev_err[-1] < 0.5, dev_err                        # chance: 0.99
    dev_f1 = [r["dev_mine_f1"] for r in result.log if "dev_mine_f1" in r]
    assert len(dev_f1) == len(dev_err) and dev_f1[-1] > 40, dev_f1  # BUCC-like task on the dev pairs; random: < 10
    # the saved model, loaded by path, on held-out pairs and on the training pairs
    for pairs in (bitext(corpus[1]).pairs, bitext(corpus[0][:100]).pairs):
        err_ab, err_ba = _recovery(result.model_dir, pairs)
        assert err_ab < 0.5 and err_ba < 0.5, (err_ab, err_ba)
    log_lines = (result.model_dir / "train_log.jsonl").read_text().splitlines()
    assert [json.loads(x) for x in log_lines] == json.loads(json.dumps(result.log))


@pytest.mark.parametrize("run", ["kim_run", "artetxe_run"])
def test_save_load_bit_identical(run, corpus, request, tmp_path):
    result = request.getfixturevalue(run)
    texts = [r["en"] for r in corpus[1][:50]] + ["", "unseen words zzz", "a " * 200]
    in_memory = Seq2SeqEncoder(result.model.cpu(), result.tokenizer, name="mem", content_hash="mem")
    loaded = get_encoder(result.model_dir)
    assert loaded.id.startswith(result.model.architecture + "/") and len(loaded.id) > 20
    assert loaded.lang_dependent == (run == "kim_run")
    fresh = load_model_dir(result.model_dir)                  # a second, independent load
    a = in_memory.encode(texts, "en", cache=False)
    b = loaded.encode(texts, "en", cache=False)
    c = fresh.encode(texts, "en")                             # goes through the (tmp) embedding cache
    d = fresh.encode(texts, "en")                             # now served from the cache
    assert a.dtype == np.float32 and a.shape == (len(texts), result.model.dim)
    assert np.array_equal(a, b) and np.array_equal(c, d)
    assert np.array_equal(c, from_half(b.astype(np.float16)))  # the cache holds fp16 rows (encoders/cache.py)
    # other weights -> another id, so the cache never mixes models
    other = tmp_path / "other"
    shutil.copytree(result.model_dir, other)
    from safetensors.torch import load_file, save_file
    w = load_file(other / "model.safetensors")
    key = next(iter(w))
    w[key] = w[key] + 1e-3
    save_file(w, other / "model.safetensors")
    assert load_model_dir(other).id != loaded.id


def test_kim_languages(kim_run):
    enc = get_encoder(kim_run.model_dir)
    assert enc.languages == frozenset({"en", "de"})
    with pytest.raises(BisentError, match="unknown language 'fr'"):
        enc.encode(["x"], "fr")
    assert enc.encode(["x"], "en-GB").shape == (1, enc.dim)


@pytest.mark.parametrize("name", ["config.json", "model.safetensors", "tokenizer.model"])
@pytest.mark.parametrize("damage", ["missing", "corrupt"])
def test_broken_model_dir_names_the_file(kim_run, tmp_path, name, damage):
    d = tmp_path / "m"
    shutil.copytree(kim_run.model_dir, d)
    if damage == "missing":
        (d / name).unlink()
    else:
        data = (d / name).read_bytes()
        (d / name).write_bytes(data[: len(data) // 3] + b"\x00garbage")
    with pytest.raises(BisentError) as e:
        load_model_dir(d)
    msg = str(e.value)
    assert name in msg and "\n" not in msg, msg


def test_resume_continues_the_same_curve(corpus, tmp_path):
    small = {**TINY, "model.embed_dim": 16, "model.hidden_dim": 16, "model.dropout": 0.1, "model.rnn": "lstm",
             "data.batch_size": 16, "data.bucket_batches": 2, "train.log_every": 1, "train.checkpoint_every": 100}
    recipe = load_recipe(f"{RECIPES}/kim2019.yaml", small)
    data, dev = [bitext(corpus[0][:60])], [bitext(corpus[1][:20])]   # 60 pairs / 8 per stream: epochs roll over
    straight = train(recipe, data, [], dev, tmp_path / "a", max_steps=12, progress=False)
    train(recipe, data, [], dev, tmp_path / "b", max_steps=5, progress=False)
    with pytest.raises(BisentError, match="--resume"):
        train(recipe, data, [], dev, tmp_path / "b", max_steps=12, progress=False)
    resumed = train(recipe, data, [], dev, tmp_path / "b", max_steps=12, resume=True, progress=False)
    assert len(_losses(straight.log)) == 12
    assert _losses(resumed.log) == _losses(straight.log)          # bit-exact, step by step
    for (k, v), (k2, v2) in zip(straight.model.state_dict().items(), resumed.model.state_dict().items()):
        assert k == k2 and torch.equal(v, v2)
    ck = checkpoint.read_state(tmp_path / "b")
    assert ck["step"] == 12 and ck["data"]["streams"][0]["epoch"] >= 1
    other = load_recipe(f"{RECIPES}/kim2019.yaml", {**small, "model.hidden_dim": 17})
    with pytest.raises(BisentError, match="'model' differs"):
        train(other, data, [], dev, tmp_path / "b", max_steps=14, resume=True, progress=False)


def test_batches_mixed_deterministic_and_bucketed(corpus):
    rows = corpus[0]
    tok = train_tokenizer([s for r in rows for s in r.values()], vocab_size=400)
    recipe = load_recipe(f"{RECIPES}/kim2019.yaml")
    specs = get_objective("kim2019").build_streams([bitext(rows)], [], recipe)
    assert [(s.objective, s.enc_lang, s.dec_lang) for s in specs] == [
        ("translation", "en", "de"), ("autoencoding", "de", "de")]
    it1 = token_batches(specs, tok, batch_size=32, seed=7, bucket_batches=4)
    it2 = token_batches(specs, tok, batch_size=32, seed=7, bucket_batches=4)
    it3 = token_batches(specs, tok, batch_size=32, seed=8, bucket_batches=4)
    b1, b2, b3 = next(it1), next(it2), next(it3)
    assert [sb.src.shape[0] for sb in b1] == [16, 16]         # translation : autoencoding = 1 : 1
    assert all(torch.equal(x.src, y.src) and torch.equal(x.tgt_out, y.tgt_out) for x, y in zip(b1, b2))
    assert not all(torch.equal(x.src, y.src) for x, y in zip(b1, b3))
    # length bucketing: far less padding than random batches
    pad_bucketed = sum(float((sb.src == 0).float().mean()) for _ in range(10) for sb in next(it1))
    it_flat = token_batches(specs, tok, batch_size=32, seed=7, bucket_batches=1)
    pad_flat = sum(float((sb.src == 0).float().mean()) for _ in range(10) for sb in next(it_flat))
    assert pad_bucketed < pad_flat
    # the reverse direction (Eq. 9-10) and monolingual text
    rev = validate_recipe({"architecture": "kim2019", "objectives": {"direction": "tgt2src"}})
    specs = get_objective("kim2019").build_streams([bitext(rows)], [Monotext("en", ["mono one", "mono two"])], rev)
    assert [s.name for s in specs] == ["translation de-en", "autoencoding en"] and len(specs[1].src) == 302
    with pytest.raises(BisentError, match="monolingual en"):
        get_objective("kim2019").build_streams([bitext(rows)], [Monotext("en", ["x"])], recipe)


def test_a_stream_of_weight_zero_is_skipped_without_shifting_the_others():
    """collate gets each stream's own index: with the middle stream at weight 0 the last one still reads its own
    examples (a shifted index would hand the last stream's sampler the middle stream's texts and teacher rows)."""
    from bisent.training.data import Batches

    streams = [("a", np.arange(10), 1.0), ("b", np.arange(10), 0.0), ("c", np.arange(100, 110), 1.0)]
    seen = []
    batches = Batches(streams, lambda i, idx: seen.append((i, len(idx))) or i, batch_size=8, seed=1)
    assert next(batches) == [0, 2] and [i for i, _ in seen] == [0, 2] and seen[0][1] == seen[1][1] > 0
    assert [d["name"] for d in batches.describe()] == ["a", "c"]
    with pytest.raises(BisentError, match="no stream with a positive weight"):
        Batches([("b", np.arange(3), 0.0)], lambda i, idx: i, batch_size=8, seed=1)


def test_artetxe_streams_cover_every_direction():
    rows = cipher_corpus(20, langs=("en", "de", "fr"))
    recipe = load_recipe(f"{RECIPES}/artetxe2019.yaml")
    obj = get_objective("artetxe2019")
    data = [bitext(rows, "en", "de"), bitext(rows, "fr", "en")]
    assert obj.languages(data, recipe) == ["en", "de", "fr"]
    names = [s.name for s in obj.build_streams(data, [], recipe)]
    assert names == ["translation de-en", "translation en-de", "translation en-fr", "translation fr-en"]


def test_every_architecture_declares_its_recipe_keys_beside_its_model_and_objective():
    """Adding a model is its model file, its objective and its recipe: recipe.py names no architecture, and every
    architecture's defaults are its model module's fields plus its objective's sections."""
    from bisent.training import recipe as R

    configs = R.model_configs()
    assert {"kim2019", "artetxe2019", "dan", "hash-transformer", "bilstm", "adapter", "zhang2016", "bbowae",
            "divergence", "hide", "doc-bow"} <= set(configs)
    central = Path(R.__file__).read_text(encoding="utf-8")
    for arch, cfg in configs.items():
        assert f'"{arch}"' not in central, f"training/recipe.py names {arch}: declare it beside the model"
        sections = get_objective(R.objective_of(arch)).RECIPE_SECTIONS
        out = validate_recipe({"architecture": arch}, "r.yaml")
        assert out["model"] == {k: f.default for k, f in cfg.model.items()}
        for section, fields in sections.items():
            assert {k: out[section][k] for k in fields} == {k: f.default for k, f in fields.items()}, (arch, section)
        assert ("tokenizer" in out) == cfg.tokenizer, arch                  # subword input: tokenizer section


def test_recipe_errors(tmp_path):
    for name in ("kim2019", "artetxe2019"):
        r = load_recipe(f"{RECIPES}/{name}.yaml")
        assert r["architecture"] == name and r["model"]["embed_dim"] == 256
    bad = {"model: {hiden_dim: 3}": "unknown key 'model.hiden_dim'",
           "model: {rnn: transformer}": "model.rnn: 'transformer' is not one of gru, lstm",
           "data: {batch_size: many}": "data.batch_size: expected int",
           "optim: {lr: -1}": "optim.lr: -1 is below",
           "colour: blue": "unknown key 'colour'"}
    p = tmp_path / "r.yaml"
    for line, expected in bad.items():
        p.write_text(f"architecture: kim2019\n{line}\n")
        with pytest.raises(BisentError, match=expected) as e:
            load_recipe(p)
        assert str(e.value).startswith(str(p)) and "\n" not in str(e.value)
    p.write_text("architecture: lstm9000\n")
    with pytest.raises(BisentError, match="unknown 'lstm9000'"):
        load_recipe(p)
    p.write_text("optim: {lr: 1e-3}\narchitecture: kim2019\n")
    assert load_recipe(p)["optim"]["lr"] == 0.001
    with pytest.raises(BisentError, match="no such recipe"):
        load_recipe(tmp_path / "nope.yaml")


def test_word_vector_initialisation(corpus, tmp_path):
    rows = corpus[0]
    tok = train_tokenizer([s for r in rows for s in r.values()], vocab_size=400)
    vec = tmp_path / "vectors.txt"
    words = sorted({w for r in rows[:50] for w in r["en"].split()})
    rng = np.random.default_rng(0)
    table = {w: rng.standard_normal(8).astype(np.float32) for w in words}
    vec.write_text(f"{len(words)} 8\n" + "".join(f"{w} {' '.join(map(str, v))}\n" for w, v in table.items()))
    torch.manual_seed(0)
    model = build_model("kim2019", {"vocab_size": tok.vocab_size, "languages": ["en", "de"], "embed_dim": 8,
                                    "hidden_dim": 4})
    report = init_from_word_vectors(model, {"en": str(vec)}, tok.pieces(), True, ["de"])
    assert report["encoder en"] > 0
    pieces = tok.pieces()
    w = words[0]
    i = pieces.index("\u2581" + w)
    assert torch.equal(model.encoders["en"].embed.weight[i], torch.from_numpy(table[w]))
    with pytest.raises(BisentError, match="8 dimensions, the recipe's model.embed_dim is 16"):
        model16 = build_model("kim2019", {"vocab_size": tok.vocab_size, "languages": ["en", "de"], "embed_dim": 16})
        init_from_word_vectors(model16, str(vec), tok.pieces(), True, ["de"])


def test_cli_train_and_resume(corpus, tmp_path, monkeypatch):
    from bisent.cli import main

    monkeypatch.chdir(tmp_path)
    tsv = tmp_path / "toy.en-de.tsv"
    tsv.write_text("".join(f"{r['en']}\t{r['de']}\n" for r in corpus[0][:80]))
    dev = tmp_path / "dev.tsv"
    dev.write_text("".join(f"{r['en']}\t{r['de']}\n" for r in corpus[1][:30]))
    mono = tmp_path / "mono.de.txt"
    mono.write_text("".join(f"{r['de']}\n" for r in corpus[1][30:60]))
    recipe = "kim2019"
    sets = ["--set", "model.embed_dim=16", "--set", "model.hidden_dim=16", "--set", "tokenizer.vocab_size=300",
            "--set", "data.batch_size=16", "--set", "train.log_every=2"]
    args = ["train", "-c", recipe, "--train", str(tsv), "--mono", str(mono), "--dev", f"en-de={dev}",
            "-o", "out", "--max-steps", "4", "--no-progress", *sets]
    assert main(args + ["--max-minutes", "0"]) == 0              # time limit: stops at once, with a checkpoint
    assert checkpoint.read_state(tmp_path / "out")["step"] == 0
    assert main(args + ["--resume"]) == 0
    assert main(args[:-len(sets)] + ["--resume", "--max-steps", "6"] + sets) == 0
    ck = checkpoint.read_state(tmp_path / "out")
    assert ck["step"] == 6
    log = [json.loads(x) for x in (tmp_path / "out" / "train_log.jsonl").read_text().splitlines()]
    assert [r["step"] for r in log if "loss" in r] == [2, 4, 6] and "dev_err" in log[-1]
    assert set(json.loads((tmp_path / "out" / "config.json").read_text())) >= {"architecture", "model", "tokenizer"}
    assert get_encoder(str(tmp_path / "out")).encode(["abc"], "de").shape == (1, 32)
    # one-line errors for user mistakes
    assert main(["train", "-c", recipe, "--train", str(dev), "-o", "x", "--max-steps", "1"]) == 2
    bad = tmp_path / "bad.en-de.tsv"
    bad.write_text("one\ttwo\nthree\n")
    with pytest.raises(BisentError, match="bad.en-de.tsv:2: expected 2 tab-separated columns"):
        resolve_bitext(str(bad))


def test_tokenizer_roundtrip(tmp_path):
    tok = train_tokenizer(["Hello World", "hello there"] * 20, vocab_size=50, lowercase=True, max_len=3)
    tok.save(tmp_path / "tokenizer.model")
    again = Tokenizer.load(tmp_path / "tokenizer.model", max_len=3)
    assert again.encode(["HELLO world there there"]) == tok.encode(["hello world there there"])
    assert all(len(x) <= 3 for x in again.encode(["hello world there there hello"]))


@pytest.mark.slow
def test_artetxe_paper_setting_three_languages(tmp_path):
    """Translation only (no autoencoding), every direction of en-de, en-fr, de-fr: alignment emerges later."""
    rows = cipher_corpus(400, langs=("en", "de", "fr"))
    tr, dv = rows[:300], rows[300:]
    recipe = load_recipe(f"{RECIPES}/artetxe2019.yaml", {**TINY, "model.decoder_dim": 96, "model.lang_dim": 8,
                                                         "data.batch_size": 48, "train.eval_every": 100})
    pairs = [("en", "de"), ("en", "fr"), ("de", "fr")]
    result = train(recipe, [bitext(tr, a, b) for a, b in pairs], [], [bitext(dv, a, b) for a, b in pairs],
                   tmp_path / "m", max_steps=600, progress=False)
    assert [r["dev_err"] for r in result.log if "dev_err" in r][-1] < 0.5
