"""The user's own encoders from files: sentence-transformers folders, plain Hugging Face folders, ONNX exports.

A tiny BERT is built at test time (its WordPiece vocabulary written by the test), saved in the
sentence-transformers format (Transformer + mean Pooling + Normalize), as a plain transformers folder and as an
ONNX export; bisent's vectors must equal sentence-transformers' own ``encode`` to 1e-5. Nothing is downloaded.
"""

import json
import shutil

import numpy as np
import pytest

pytest.importorskip("sentence_transformers")
pytest.importorskip("onnxruntime")
torch = pytest.importorskip("torch")
# the exporter and the libraries warn about their own deprecations; none of it is bisent's
pytestmark = pytest.mark.filterwarnings("ignore::DeprecationWarning", "ignore::FutureWarning", "ignore::UserWarning")

from bisent.cli import main  # noqa: E402
from bisent.encoders import get_encoder  # noqa: E402
from bisent.encoders.local import detect  # noqa: E402
from bisent.errors import BisentError  # noqa: E402

WORDS = "the a cat dog house is on in der die das katze hund haus ist auf im".split()
TEXTS = ["the cat is on the house", "der hund ist im haus", "a dog", "", "the cat is on the house",
         "die katze ist auf dem haus und der hund im garten " * 3]


def _export_onnx(model, path, input_names=("input_ids", "attention_mask", "token_type_ids")):
    """``model`` (a BertModel) exported with per-token output ``last_hidden_state`` (B, T, D)."""

    class Wrap(torch.nn.Module):
        def __init__(self, m):
            super().__init__()
            self.m = m

        def forward(self, *inputs):
            return self.m(**dict(zip(("input_ids", "attention_mask", "token_type_ids"), inputs))).last_hidden_state

    ids = torch.tensor([[2, 5, 6, 3]])
    axes = {n: {0: "b", 1: "s"} for n in (*input_names, "last_hidden_state")}
    torch.onnx.export(Wrap(model).eval(), (ids, torch.ones_like(ids), torch.zeros_like(ids)), str(path),
                      input_names=list(input_names), output_names=["last_hidden_state"], dynamic_axes=axes,
                      dynamo=False)


@pytest.fixture(scope="module")
def models(tmp_path_factory):
    """Folders: ``st`` (sentence-transformers, with ``onnx/model.onnx``), ``hf`` (plain), ``onnx`` (export + card)."""
    from sentence_transformers import SentenceTransformer
    from sentence_transformers.sentence_transformer.modules import Normalize, Pooling, Transformer
    from transformers import BertConfig, BertModel, BertTokenizerFast

    root = tmp_path_factory.mktemp("own-encoders")
    letters = "abcdefghijklmnopqrstuvwxyz"
    vocab = ["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]", *WORDS, *letters, *("##" + c for c in letters)]
    (root / "vocab.txt").write_text("\n".join(vocab) + "\n")
    tok = BertTokenizerFast(vocab_file=str(root / "vocab.txt"), do_lower_case=True)
    torch.manual_seed(0)
    bert = BertModel(BertConfig(vocab_size=len(vocab), hidden_size=32, num_hidden_layers=2, num_attention_heads=2,
                                intermediate_size=64, max_position_embeddings=64)).eval()
    bert.save_pretrained(root / "hf")
    tok.save_pretrained(root / "hf")
    t = Transformer(str(root / "hf"), max_seq_length=48)
    st = SentenceTransformer(modules=[t, Pooling(t.get_embedding_dimension(), pooling_mode="mean"), Normalize()],
                             device="cpu")
    st.save(str(root / "st"))
    (root / "st" / "onnx").mkdir()
    _export_onnx(bert, root / "st" / "onnx" / "model.onnx")
    (root / "onnx").mkdir()
    shutil.copy(root / "st" / "onnx" / "model.onnx", root / "onnx" / "model.onnx")
    for f in ("tokenizer.json", "tokenizer_config.json"):
        shutil.copy(root / "st" / f, root / "onnx" / f)
    (root / "onnx" / "bisent-encoder.json").write_text(json.dumps({"pooling": "mean", "max_length": 48}))
    want = SentenceTransformer(str(root / "st"), device="cpu", local_files_only=True).encode(TEXTS)
    return root, np.asarray(want, dtype=np.float32), bert


def test_folders_are_recognised_by_their_files(models):
    root, _, _ = models
    assert [detect(root / k) for k in ("st", "hf", "onnx")] == ["sentence-transformers", "transformers", "onnx"]
    assert detect(root / "st" / "onnx" / "model.onnx") == "onnx"


@pytest.mark.parametrize("spec,kw", [("st", {}), ("onnx", {}), ("st/onnx/model.onnx", {}),
                                     ("hf", {"pooling": "mean"})])
def test_vectors_equal_sentence_transformers_own_encode(models, spec, kw):
    root, want, _ = models
    enc = get_encoder(root / spec, **kw)
    assert enc.dim == 32 and enc.languages is None
    first = enc.encode(TEXTS, "en")               # the cache is on: rows are stored as float32 ...
    again = enc.encode(TEXTS, "de")               # ... and read back exactly
    nonempty = [i for i, t in enumerate(TEXTS) if t]
    np.testing.assert_allclose(first[nonempty], want[nonempty], atol=1e-5, rtol=0)
    assert np.array_equal(first, again)


def test_embed_writes_the_models_vectors_through_the_cli(models, tmp_path, capsys):
    root, want, _ = models
    (tmp_path / "en.txt").write_text("the cat is on the house\na dog\n")
    assert main(["embed", str(tmp_path / "en.txt"), "-l", "en", "-e", str(root / "st"), "-o",
                 str(tmp_path / "v")]) in (0, None)
    rows = np.load(tmp_path / "v" / "shard-00000.npy")
    np.testing.assert_allclose(rows.astype(np.float32), want[[0, 2]], atol=1e-3)


def test_a_pooling_comes_from_the_card_or_the_option_and_is_part_of_the_id(models, tmp_path):
    root, want, _ = models
    hf = tmp_path / "hf"
    shutil.copytree(root / "hf", hf)
    with pytest.raises(BisentError, match="without a pooling: give --pooling mean"):
        get_encoder(hf)
    cls = get_encoder(hf, pooling="cls")
    (hf / "bisent-encoder.json").write_text(json.dumps({"pooling": "mean", "languages": ["de", "en"]}))
    mean = get_encoder(hf, pooling="mean")
    assert cls.id != mean.id and mean.languages == {"de", "en"}
    np.testing.assert_allclose(mean.encode(TEXTS[:3], "en"), want[:3], atol=1e-5)


def test_mistakes_are_one_line_errors(models, tmp_path):
    root, _, bert = models
    (tmp_path / "empty").mkdir()
    with pytest.raises(BisentError, match="empty: not a model directory \\(no modules.json, config.json"):
        get_encoder(tmp_path / "empty")
    no_tok = tmp_path / "no-tok"
    shutil.copytree(root / "st", no_tok)
    for f in ("tokenizer.json", "vocab.txt"):
        (no_tok / f).unlink(missing_ok=True)
    with pytest.raises(BisentError, match="no-tok: tokenizer missing \\(none of tokenizer.json"):
        get_encoder(no_tok)
    pickled = tmp_path / "pickled"
    pickled.mkdir()
    shutil.copy(root / "hf" / "config.json", pickled / "config.json")
    (pickled / "pytorch_model.bin").write_bytes(b"not loaded")
    with pytest.raises(BisentError, match="pytorch_model.bin, a pickle, which bisent never loads"):
        get_encoder(pickled)
    st_pickled = tmp_path / "st-pickled"
    shutil.copytree(root / "st", st_pickled)
    (st_pickled / "model.safetensors").rename(st_pickled / "pytorch_model.bin")
    with pytest.raises(BisentError, match="st-pickled: its weights are pytorch_model.bin, a pickle"):
        get_encoder(st_pickled)
    other = tmp_path / "other-inputs"
    other.mkdir()
    _export_onnx(bert, other / "model.onnx", input_names=("pixel_values", "attention_mask", "token_type_ids"))
    shutil.copy(root / "onnx" / "tokenizer.json", other / "tokenizer.json")
    with pytest.raises(BisentError, match="model.onnx: takes inputs pixel_values, attention_mask, token_type_ids; "
                                          "bisent feeds"):
        get_encoder(other, pooling="mean")
    (tmp_path / "notes.txt").write_text("x")
    with pytest.raises(BisentError, match="notes.txt: not an encoder"):
        get_encoder(tmp_path / "notes.txt")


def test_a_missing_device_is_a_one_line_error(models, capsys):
    root, _, _ = models
    if not torch.cuda.is_available():
        with pytest.raises(BisentError, match="--device cuda: no CUDA device here"):
            get_encoder(root / "st", device="cuda")
    with pytest.raises(BisentError, match="--device tpu: expected one of cpu, cuda, mps"):
        get_encoder(root / "st", device="tpu")


def test_device_batch_size_and_pooling_options_reach_the_encoder(models, tmp_path, capsys):
    from bisent.encoders import settings

    root, want, _ = models
    (tmp_path / "en.txt").write_text("the cat is on the house\na dog\n")
    try:
        assert main(["embed", str(tmp_path / "en.txt"), "-l", "en", "-e", str(root / "hf"), "--pooling", "mean",
                     "--batch-size", "3", "-o", str(tmp_path / "v")]) in (0, None)
        assert settings.current() == settings.Settings(device="cpu", batch_size=3, pooling="mean")
        enc = get_encoder(root / "hf")
        assert enc.batch_size == 3 and enc.pooling == "mean"
        rows = np.load(tmp_path / "v" / "shard-00000.npy").astype(np.float32)
        np.testing.assert_allclose(rows, want[[0, 2]], atol=1e-3)
        capsys.readouterr()
        if not torch.cuda.is_available():
            assert main(["embed", str(tmp_path / "en.txt"), "-l", "en", "-e", str(root / "st"), "--device", "cuda",
                         "-o", str(tmp_path / "w")]) == 2
            err = capsys.readouterr().err
            assert "'--device': no CUDA device here" in err and len(err.strip().splitlines()) == 1
            assert not (tmp_path / "w").exists()
    finally:
        settings.reset()
