"""The user's own encoders from files on disk, recognised by their files; nothing is downloaded.

:func:`detect` tells what a path holds:

- ``bisent``: a model directory bisent trained (``config.json`` with an ``"architecture"`` key);
- ``sentence-transformers``: a folder with ``modules.json`` (Transformer, Pooling, Normalize, ...), loaded by
  sentence-transformers itself, so its pooling and normalisation are the model's own;
- ``transformers``: a plain Hugging Face folder (``config.json`` with a ``model_type``, safetensors weights, a
  tokenizer); the pooling comes from ``--pooling`` or the card;
- ``onnx``: an ``.onnx`` file, or a folder holding one (``model.onnx``, ``onnx/model.onnx``), run by onnxruntime
  with the tokenizer of its folder (or of the folder above ``onnx/``, as sentence-transformers exports them);
- ``vectors``: vectors computed elsewhere, read from files (:mod:`bisent.encoders.vectors`).

A small optional card, ``bisent-encoder.json`` in the folder, says what the files cannot::

    {"languages": ["de", "en", "et"] | "any", "pooling": "mean" | "cls" | "max" | "lasttoken",
     "prefix": "query: ", "max_length": 512, "batch_size": 32}

Without ``languages`` in the card, the ``language:`` list of the folder's model card (``README.md`` front
matter) is used, else any language. The encoder ``id`` (the embedding cache's key) holds a hash of every file of
the model, so two models under one name never share cached rows. Rows are cached as float32, so a cached row is
the model's own output to float32 precision.
"""

from __future__ import annotations

import contextlib
import os
from pathlib import Path

import numpy as np

from ..errors import BisentError
from .base import Encoder
from .files import VECTOR_CARD, files_hash, json_or_none, parse_languages
from .settings import POOLINGS, Settings, torch_device

CARD = "bisent-encoder.json"
CARD_KEYS = {"languages", "pooling", "prefix", "max_length", "batch_size", "name", "onnx"}
#: files one of which a Hugging Face tokenizer needs
TOKENIZER_FILES = ("tokenizer.json", "vocab.txt", "tokenizer.model", "sentencepiece.bpe.model", "spiece.model",
                   "vocab.json")
#: the inputs bisent can feed an ONNX model (a tokenizer's outputs)
ONNX_INPUTS = ("input_ids", "attention_mask", "token_type_ids")


def detect(path) -> str:
    """What ``path`` holds: ``bisent``, ``sentence-transformers``, ``transformers``, ``onnx`` or ``vectors``; a
    one-line error naming what is missing when it is none of them."""
    p = Path(path)
    if p.is_file():
        if p.suffix == ".onnx":
            return "onnx"
        if p.suffix == ".json":
            return "vectors"
        raise BisentError(f"{p}: not an encoder (give a model folder, an .onnx file or a vectors card .json)")
    if not p.is_dir():
        raise BisentError(f"{p}: no such model directory")
    config = json_or_none(p / "config.json")
    if isinstance(config, dict) and "architecture" in config:
        return "bisent"
    if (p / VECTOR_CARD).is_file():
        return "vectors"
    card = read_card(p)
    if card.get("onnx"):
        return "onnx"
    if (p / "modules.json").is_file():
        return "sentence-transformers"
    weights = [f for f in ("model.safetensors", "model.safetensors.index.json") if (p / f).is_file()]
    if isinstance(config, dict) and "model_type" in config and weights:
        return "transformers"
    if _onnx_files(p):
        return "onnx"
    if isinstance(config, dict) and "model_type" in config:
        check_safetensors(p)
    if (p / "config.json").is_file():
        raise BisentError(f"{p / 'config.json'}: neither a bisent model ('architecture') nor a Hugging Face "
                          "model ('model_type')")
    raise BisentError(f"{p}: not a model directory (no modules.json, config.json, *.onnx, {VECTOR_CARD} or "
                      "bisent config.json)")


def read_card(folder: Path) -> dict:
    """``folder/bisent-encoder.json`` checked (an empty dict without one)."""
    path = Path(folder) / CARD
    card = json_or_none(path)
    if card is None:
        return {}
    if not isinstance(card, dict):
        raise BisentError(f"{path}: expected a JSON object")
    unknown = set(card) - CARD_KEYS
    if unknown:
        raise BisentError(f"{path}: unknown key(s) {', '.join(sorted(unknown))} "
                          f"(known: {', '.join(sorted(CARD_KEYS))})")
    if "pooling" in card and card["pooling"] not in POOLINGS:
        raise BisentError(f"{path}: pooling {card['pooling']!r}, expected one of {', '.join(POOLINGS)}")
    for key in ("max_length", "batch_size"):
        if key in card and not (isinstance(card[key], int) and not isinstance(card[key], bool) and card[key] >= 1):
            raise BisentError(f"{path}: {key} must be a whole number >= 1")
    for key in ("prefix", "name", "onnx"):
        if key in card and not isinstance(card[key], str):
            raise BisentError(f"{path}: {key} must be a string")
    if "languages" in card:
        card["languages"] = parse_languages(card["languages"], path)
    return card


def card_languages(folder: Path) -> frozenset[str] | None:
    """The ``language:`` list of a Hugging Face model card (``README.md`` front matter), None when it has none."""
    path = Path(folder) / "README.md"
    if not path.is_file():
        return None
    try:
        text = path.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError):
        return None
    if not text.startswith("---"):
        return None
    end = text.find("\n---", 3)
    if end < 0:
        return None
    import yaml

    try:
        meta = yaml.safe_load(text[3:end])
    except yaml.YAMLError:
        return None
    value = meta.get("language") if isinstance(meta, dict) else None
    try:
        return parse_languages(value, path) if value else None
    except BisentError:
        return None


@contextlib.contextmanager
def offline():
    """Hugging Face libraries told not to reach the network while a model loads (the environment put back)."""
    names = ("HF_HUB_OFFLINE", "TRANSFORMERS_OFFLINE", "HF_DATASETS_OFFLINE", "HF_HUB_DISABLE_PROGRESS_BARS")
    saved = {n: os.environ.get(n) for n in names}
    os.environ.update({n: "1" for n in names})
    try:
        with contextlib.suppress(ImportError):
            from transformers.utils import logging as hf_logging

            hf_logging.disable_progress_bar()   # "Loading weights" bars on stderr
        yield
    finally:
        for n, v in saved.items():
            if v is None:
                os.environ.pop(n, None)
            else:
                os.environ[n] = v


def check_safetensors(folder: Path) -> None:
    """A one-line error when a transformers model folder has no safetensors weights (a pickle is never loaded)."""
    if any((folder / f).is_file() for f in ("model.safetensors", "model.safetensors.index.json")):
        return
    if (folder / "pytorch_model.bin").is_file():
        raise BisentError(f"{folder}: its weights are pytorch_model.bin, a pickle, which bisent never loads; save the "
                          "model with safetensors (model.save_pretrained(DIR, safe_serialization=True))")
    raise BisentError(f"{folder}: a Hugging Face config.json but no model.safetensors")


def _first_line(e: Exception) -> str:
    text = " ".join(str(e).split()) or type(e).__name__
    return text[:300]


def check_tokenizer(folder: Path, model: Path | None = None) -> None:
    """A one-line error when ``folder`` holds no tokenizer file."""
    if not any((folder / f).is_file() for f in TOKENIZER_FILES):
        raise BisentError(f"{model or folder}: tokenizer missing (none of {', '.join(TOKENIZER_FILES)} in {folder})")


def load_tokenizer(folder: Path, model: Path):
    """The Hugging Face tokenizer saved in ``folder`` (offline)."""
    check_tokenizer(folder, model)
    from transformers import AutoTokenizer

    with offline():
        try:
            return AutoTokenizer.from_pretrained(str(folder), local_files_only=True)
        except Exception as e:  # noqa: BLE001 - any failure of a user's files is one line
            raise BisentError(f"{folder}: the tokenizer does not load ({_first_line(e)})") from None


def pool(hidden: np.ndarray, mask: np.ndarray, how: str) -> np.ndarray:
    """Token vectors ``hidden`` (B, T, D) with ``mask`` (B, T) of 1 for real tokens -> sentence vectors (B, D)."""
    mask = mask.astype(hidden.dtype)[:, :, None]                       # (B, T, 1)
    if how == "mean":
        return (hidden * mask).sum(axis=1) / np.maximum(mask.sum(axis=1), 1e-9)
    if how == "cls":
        return hidden[:, 0]
    if how == "max":
        return np.where(mask > 0, hidden, -np.inf).max(axis=1)
    if how == "lasttoken":
        last = mask[:, :, 0].sum(axis=1).astype(np.int64) - 1           # (B,): right padding
        return hidden[np.arange(len(hidden)), np.maximum(last, 0)]
    raise BisentError(f"pooling {how!r}: expected one of {', '.join(POOLINGS)}")


def st_pooling(folder: Path) -> str | None:
    """The pooling a sentence-transformers folder's Pooling module uses, when it is one bisent knows."""
    modules = json_or_none(folder / "modules.json")
    if not isinstance(modules, list):
        return None
    for m in modules:
        if isinstance(m, dict) and str(m.get("type", "")).endswith("Pooling"):
            cfg = json_or_none(folder / str(m.get("path", "")) / "config.json")
            if isinstance(cfg, dict):
                mode = cfg.get("pooling_mode")
                if mode in ("mean", "cls", "max", "lasttoken"):
                    return mode
                for key, name in (("pooling_mode_mean_tokens", "mean"), ("pooling_mode_cls_token", "cls"),
                                  ("pooling_mode_max_tokens", "max"), ("pooling_mode_lasttoken", "lasttoken")):
                    if cfg.get(key):
                        return name
    return None


class LocalEncoder(Encoder):
    """Common part of the encoders read from the user's files: name, card, languages, id, prefix."""

    kind = "local"
    cache_dtype = "float32"

    def __init__(self, path: Path, settings: Settings, root: Path | None = None):
        self.path = Path(path)
        self.root = Path(root or path)
        self.card = read_card(self.root)
        self.name = self.card.get("name") or str(path)
        self.languages = self.card["languages"] if "languages" in self.card else card_languages(self.root)
        self.prefix = self.card.get("prefix", "")
        self.batch_size = settings.batch_size or self.card.get("batch_size") or 32
        self.settings = settings

    def make_id(self, files_digest: str, extra: str = "") -> None:
        self.id = f"{self.kind}/{self.root.name}-{files_digest}{extra}" + (
            f"/prefix={self.prefix!r}" if self.prefix else "")

    def texts(self, sentences) -> list[str]:
        return [self.prefix + s for s in sentences] if self.prefix else list(sentences)


class SentenceTransformersEncoder(LocalEncoder):
    """A sentence-transformers folder loaded by sentence-transformers itself (its modules, pooling, normalisation)."""

    kind = "sentence-transformers"

    def __init__(self, path: Path, settings: Settings):
        super().__init__(path, settings)
        modules = json_or_none(self.path / "modules.json")
        if not isinstance(modules, list) or not all(isinstance(m, dict) for m in modules):
            raise BisentError(f"{self.path / 'modules.json'}: expected a list of modules")
        for m in modules:
            folder = self.path / str(m.get("path", ""))
            if not folder.is_dir():
                raise BisentError(f"{self.path / 'modules.json'}: module folder {m.get('path')!r} is missing")
            if str(m.get("type", "")).endswith("Transformer"):
                check_tokenizer(folder, self.path)
                check_safetensors(folder)
        device = torch_device(settings.device)
        try:
            from sentence_transformers import SentenceTransformer
        except ImportError:
            raise BisentError(f"{self.path}: a sentence-transformers model needs pip install "
                              "'bisent[encoders]'") from None
        with offline():
            try:
                self._model = SentenceTransformer(str(self.path), device=str(device), local_files_only=True,
                                                  model_kwargs={"use_safetensors": True})
            except Exception as e:  # noqa: BLE001
                raise BisentError(f"{self.path}: the sentence-transformers model does not load "
                                  f"({_first_line(e)})") from None
        self._model.eval()
        get_dim = getattr(self._model, "get_embedding_dimension", None) or self._model.get_sentence_embedding_dimension
        self.dim = int(get_dim() or len(self._encode(["x"])[0]))
        self.make_id(files_hash(self.path))

    def _encode(self, sentences):
        import torch

        with torch.inference_mode():
            out = self._model.encode(self.texts(sentences), batch_size=max(len(sentences), 1),
                                     convert_to_numpy=True, normalize_embeddings=False, show_progress_bar=False)
        return np.asarray(out, dtype=np.float32)

    def embed_batch(self, sentences, lang):
        return self._encode(sentences)


class TransformersEncoder(LocalEncoder):
    """A plain Hugging Face transformers folder: the encoder's token vectors pooled (``--pooling`` or the card)."""

    kind = "transformers"

    def __init__(self, path: Path, settings: Settings):
        super().__init__(path, settings)
        self.pooling = settings.pooling or self.card.get("pooling")
        if self.pooling is None:
            raise BisentError(f"{self.path}: a Hugging Face model without a pooling: give --pooling "
                              f"{'|'.join(POOLINGS)} or \"pooling\" in {CARD}")
        self.tokenizer = load_tokenizer(self.path, self.path)
        self.device = torch_device(settings.device)
        try:
            from transformers import AutoModel
        except ImportError:
            raise BisentError(f"{self.path}: a transformers model needs pip install 'bisent[encoders]'") from None
        with offline():
            try:
                self._model = AutoModel.from_pretrained(str(self.path), local_files_only=True, use_safetensors=True)
            except Exception as e:  # noqa: BLE001
                raise BisentError(f"{self.path}: the transformers model does not load ({_first_line(e)})") from None
        self._model.eval().to(self.device)
        self.dim = int(self._model.config.hidden_size)
        self.max_length = self.card.get("max_length") or _max_length(self.tokenizer, self._model.config)
        self.make_id(files_hash(self.path), f"/{self.pooling}/{self.max_length}")

    def embed_batch(self, sentences, lang):
        import torch

        enc = self.tokenizer(self.texts(sentences), padding=True, truncation=True, max_length=self.max_length,
                             return_tensors="pt")
        with torch.inference_mode():
            hidden = self._model(**{k: v.to(self.device) for k, v in enc.items()}).last_hidden_state  # (B, T, D)
        return pool(hidden.float().cpu().numpy(), enc["attention_mask"].numpy(), self.pooling)


def _max_length(tokenizer, config=None) -> int:
    """The longest input in tokens: the tokenizer's limit, capped by the model's positions (512 when unknown)."""
    limit = getattr(tokenizer, "model_max_length", None) or 512
    positions = getattr(config, "max_position_embeddings", None) if config is not None else None
    if positions:
        limit = min(limit, int(positions))
    return int(min(limit, 8192))


def _onnx_files(folder: Path) -> list[Path]:
    return sorted(folder.glob("*.onnx")) + sorted((folder / "onnx").glob("model*.onnx"))


class OnnxEncoder(LocalEncoder):
    """An ONNX export run by onnxruntime: the tokenizer of its folder, the output pooled when it is per token."""

    kind = "onnx"

    def __init__(self, path: Path, settings: Settings):
        path = Path(path)
        if path.is_file():
            model = path
            root = path.parent.parent if path.parent.name == "onnx" else path.parent
        else:
            root = path
            card = read_card(path)
            if card.get("onnx"):
                model = path / card["onnx"]
                if not model.is_file():
                    raise BisentError(f"{path / CARD}: onnx file {card['onnx']!r} is missing")
            else:
                found = _onnx_files(path)
                if not found:
                    raise BisentError(f"{path}: no .onnx file")
                if len(found) > 1 and not any(f.name == "model.onnx" for f in found):
                    raise BisentError(f"{path}: several .onnx files ({', '.join(f.name for f in found)}); name one "
                                      f"with \"onnx\" in {CARD} or give the file")
                model = next((f for f in found if f.name == "model.onnx"), found[0])
        super().__init__(path, settings, root=root)
        self.model_file = model
        tok_folder = model.parent if any((model.parent / f).is_file() for f in TOKENIZER_FILES) else root
        self.tokenizer = load_tokenizer(tok_folder, model)
        try:
            import onnxruntime as ort
        except ImportError:
            raise BisentError(f"{model}: an ONNX model needs pip install 'bisent[encoders]'") from None
        providers = ["CPUExecutionProvider"]
        if settings.device.startswith("cuda"):
            if "CUDAExecutionProvider" not in ort.get_available_providers():
                raise BisentError(f"--device {settings.device}: this onnxruntime has no CUDA provider "
                                  "(pip install onnxruntime-gpu); use --device cpu")
            providers.insert(0, "CUDAExecutionProvider")
        elif settings.device != "cpu":
            raise BisentError(f"--device {settings.device}: ONNX models run on cpu or cuda")
        opts = ort.SessionOptions()
        from ..threads import default_threads

        opts.intra_op_num_threads = default_threads()
        try:
            self._session = ort.InferenceSession(str(model), sess_options=opts, providers=providers)
        except Exception as e:  # noqa: BLE001
            raise BisentError(f"{model}: not a loadable ONNX model ({_first_line(e)})") from None
        names = [i.name for i in self._session.get_inputs()]
        other = [n for n in names if n not in ONNX_INPUTS]
        if other or "input_ids" not in names:
            raise BisentError(f"{model}: takes inputs {', '.join(names)}; bisent feeds a text model "
                              f"{', '.join(ONNX_INPUTS)} (input_ids required)")
        self.inputs = names
        outputs = self._session.get_outputs()
        out = next((o for o in outputs if o.name == "sentence_embedding"), None) or next(
            (o for o in outputs if o.name in ("last_hidden_state", "token_embeddings")), outputs[0])
        self.output = out.name
        self.per_token = len(out.shape) == 3
        self.pooling = None
        if self.per_token:
            self.pooling = settings.pooling or self.card.get("pooling") or st_pooling(root)
            if self.pooling is None:
                raise BisentError(f"{model}: its output {out.name} is per token and no pooling is known: give "
                                  f"--pooling {'|'.join(POOLINGS)} or \"pooling\" in {root / CARD}")
        self.max_length = self.card.get("max_length") or _max_length(self.tokenizer)
        self.dim = int(out.shape[-1]) if isinstance(out.shape[-1], int) else int(self._run(["x"]).shape[1])
        hashed = sorted({model, *[f for f in tok_folder.iterdir() if f.is_file()]})
        self.make_id(files_hash(root, hashed), f"/{self.pooling or 'sentence'}/{self.max_length}")

    def _run(self, sentences) -> np.ndarray:
        enc = self.tokenizer(self.texts(sentences), padding=True, truncation=True, max_length=self.max_length,
                             return_tensors="np")
        feed = {n: np.asarray(enc[n], dtype=np.int64) if n in enc else np.zeros_like(enc["input_ids"],
                                                                                    dtype=np.int64)
                for n in self.inputs}
        (out,) = self._session.run([self.output], feed)
        out = np.asarray(out, dtype=np.float32)
        return pool(out, np.asarray(enc["attention_mask"]), self.pooling) if self.per_token else out

    def embed_batch(self, sentences, lang):
        return self._run(sentences)


def load_local(path, settings: Settings) -> Encoder:
    """The encoder stored at ``path`` (see :func:`detect`)."""
    kind = detect(path)
    if kind == "bisent":
        from .trained import load_model_dir

        return load_model_dir(path)
    if kind == "vectors":
        from .vectors import VectorTable

        return VectorTable.from_card(path)
    if kind == "sentence-transformers":
        return SentenceTransformersEncoder(Path(path), settings)
    if kind == "transformers":
        return TransformersEncoder(Path(path), settings)
    return OnnxEncoder(Path(path), settings)
