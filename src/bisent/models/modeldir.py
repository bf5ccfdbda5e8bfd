"""The model-directory contract: ONE :func:`save` and ONE :func:`load` for every trained model.

A model directory is ``config.json`` + ``model.safetensors`` (+ files the
architecture names, e.g. ``tokenizer.model``); never pickle. ``config.json``::

    {"architecture": "dan", "format_version": 1,
     "model": {...exactly the architecture's config_keys...},
     ...whatever the architecture adds ("tokenizer", "base", "training", "encoder")}

``model`` holds every keyword the module's constructor takes, so
``cls(**config["model"])`` rebuilds it (sentence-transformers' ``config_keys``
rule). :func:`load` checks those keys against the architecture's declared
``config_keys``: an unknown or a missing key is a one-line error naming
``config.json``; so is a missing or corrupt weights file, or weights that do
not fit. :func:`save` writes the extra files, then the weights, then
``config.json`` last, each atomically. The content hash (:func:`content_hash`)
of the weights and the ``model`` section goes into an encoder's ``id``, so the
embedding cache never mixes two models. Weights load as NumPy arrays by
default, so the NumPy encoders (DAN, adapter) need no torch.

Adding an architecture (one file, ``models/<name>.py``)::

    class Foo(nn.Module):
        architecture = "foo"
        config_keys = ("dim", "hidden")            # the constructor's keyword arguments
        def __init__(self, dim=256, hidden=512):
            ...; self.hp = {"dim": dim, "hidden": hidden}   # exactly config_keys
        def featurize(self, texts, lang) -> dict[str, Tensor]: ...   # CPU tensors
        def forward(self, **inputs) -> Tensor: ...                    # (B, D), not normalised

    @register_architecture("foo")                   # bisent.encoders.trained
    def load_foo(model_dir, config) -> Encoder:
        model, md = load_module(model_dir, Foo, config)
        return TorchDualEncoder(model, name=str(model_dir), content_hash=md.content_hash())

then add ``foo`` to the import line of :mod:`bisent.models` (registration) and
save with ``save(out_dir, model.architecture, model.hp, model.state_dict(), extra=...)``.
Old directories keep loading: a change of config keys must come with a
default in the loader, or a converter.
"""

from __future__ import annotations

import hashlib
import json
import struct
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Iterable

import numpy as np

from ..encoders.trained import read_config
from ..errors import BisentError
from ..io import atomic_write

CONFIG_FILE = "config.json"
WEIGHTS_FILE = "model.safetensors"
FORMAT_VERSION = 1
#: ``save(..., int8=True)`` stores a floating matrix of at least this many rows (a hashed or word table)
#: as int8 rows, ``NAME.int8`` (rows, cols), with one float32 scale a row, ``NAME.int8_scale`` (rows, 1)
INT8_MIN_ROWS = 4096
INT8, INT8_SCALE = ".int8", ".int8_scale"
_INT8_BLOCK = 65536                              # rows quantised at a time


def save(out_dir, architecture: str, hp: dict, tensors: dict, *, extra: dict | None = None,
         files: dict[str, bytes] | None = None, half: bool = False, int8: bool = False) -> Path:
    """Write a model directory: ``files`` (name -> bytes), ``model.safetensors``, then ``config.json``.

    ``tensors`` are NumPy arrays or torch tensors (a ``state_dict()``); ``hp``
    is the ``model`` section (the architecture's ``config_keys``); ``extra``
    are further top-level keys of ``config.json``. ``half``: floating-point
    tensors are stored as float16 (half the file; :func:`read_safetensors`
    reads them back as float32, so loaders and old directories are unchanged). ``int8``: large tables
    (:data:`INT8_MIN_ROWS` rows or more) are stored as int8 rows with a float32 scale each (max |row| / 127;
    a quarter of float32), everything else as float16; read back as float32 (row * scale).
    """
    out_dir = Path(out_dir)
    out_dir.mkdir(parents=True, exist_ok=True)
    for name, data in (files or {}).items():
        with atomic_write(out_dir / name, "wb") as f:
            f.write(data)
    arrays = {k: np.ascontiguousarray(v.detach().cpu().numpy() if hasattr(v, "detach") else v)
              for k, v in tensors.items()}
    if int8:
        arrays = dict(pair for k, v in arrays.items() for pair in _int8_rows(k, v))
    if half or int8:
        arrays = {k: v.astype(np.float16) if v.dtype.kind == "f" and not k.endswith(INT8_SCALE) else v
                  for k, v in arrays.items()}
    with atomic_write(out_dir / WEIGHTS_FILE, "wb") as f:
        write_safetensors(f, arrays, metadata={"architecture": architecture})
    config = {"architecture": architecture, "format_version": FORMAT_VERSION, "model": hp, **(extra or {})}
    with atomic_write(out_dir / CONFIG_FILE) as f:
        json.dump(config, f, indent=2)
        f.write("\n")
    return out_dir


#: dtype name (NumPy's or torch's, without "torch.") -> the safetensors format's name for it
_SAFETENSORS_DTYPES = {"float64": "F64", "float32": "F32", "float16": "F16", "bfloat16": "BF16", "int64": "I64",
                       "int32": "I32", "int16": "I16", "int8": "I8", "uint8": "U8", "bool": "BOOL"}


def write_safetensors(f, tensors: dict, metadata: dict[str, str]) -> None:
    """Write ``tensors`` (NumPy arrays or torch tensors) to the binary file ``f`` in the safetensors format,
    one tensor at a time.

    ``safetensors``' own ``save`` copies every tensor to bytes and then builds the whole file as one bytes
    object: about twice the tensors more in memory (a 3 GB training state peaked at 13.0 GB against 7.6 GB;
    saving a 2^20 x 256 table as int8 raised the peak by 782 MB against 373). Here only a GPU tensor's CPU
    copy (or a non-contiguous tensor's contiguous one) exists beside them, one at a time. The layout is the format's
    own (8-byte little-endian header length, JSON header padded with spaces to 8 bytes, the raw
    little-endian data in header order, wider dtypes first so every tensor starts aligned), so
    ``safetensors`` reads the file back."""
    items = sorted(tensors.items(), key=lambda kv: -_itemsize(kv[1]))            # stable: same-width in given order
    header: dict = {"__metadata__": metadata}
    offset = 0
    for name, t in items:
        kind = str(t.dtype).removeprefix("torch.")
        if kind not in _SAFETENSORS_DTYPES:
            raise TypeError(f"{name}: dtype {t.dtype} has no safetensors name")
        n = _itemsize(t) * int(np.prod(tuple(t.shape), dtype=np.int64))
        header[name] = {"dtype": _SAFETENSORS_DTYPES[kind], "shape": [int(d) for d in t.shape],
                        "data_offsets": [offset, offset + n]}
        offset += n
    head = json.dumps(header, separators=(",", ":")).encode("utf-8")
    head += b" " * (-len(head) % 8)
    f.write(struct.pack("<Q", len(head)))
    f.write(head)
    for _, t in items:
        if hasattr(t, "detach"):                                                  # torch: bytes via a uint8 view
            import torch

            flat = t.detach().to("cpu").contiguous().reshape(-1)
            raw = flat.view(torch.uint8).numpy() if flat.numel() else None
        else:
            flat = np.ascontiguousarray(t).reshape(-1)
            raw = flat.view(np.uint8) if flat.size else None
        if raw is not None:
            f.write(memoryview(raw))


def _itemsize(t) -> int:
    return t.element_size() if hasattr(t, "element_size") else t.dtype.itemsize


@dataclass
class ModelDir:
    """A model directory read by :func:`load`: its config, checked ``model`` section and weights."""

    path: Path
    config: dict
    hp: dict                  # config["model"], keys checked
    weights: bytes            # model.safetensors as stored (hashed into the encoder id)
    tensors: dict             # name -> NumPy array or torch tensor

    @property
    def config_path(self) -> Path:
        return self.path / CONFIG_FILE

    def error(self, problem: str) -> BisentError:
        """A one-line error about ``config.json``."""
        return BisentError(f"{self.config_path}: {problem}")

    def read_file(self, name: str, what: str) -> bytes:
        """The bytes of a file the architecture keeps beside the weights (``tokenizer.model``)."""
        p = self.path / name
        if (not isinstance(name, str) or Path(name).name != name or name in (".", "..")
                or not p.resolve().is_relative_to(self.path.resolve())):
            raise self.error(f"its {what} file {name!r} is not a file inside {self.path} (a model directory "
                             f"reads only its own files)")
        if not p.is_file():
            raise BisentError(f"{p}: missing (the model directory needs its {what})")
        return p.read_bytes()

    def content_hash(self, *extra: bytes) -> str:
        """sha256 over the weights, the ``model`` section and ``extra`` (a tokenizer's bytes)."""
        return content_hash(self.weights, self.hp, *extra)


def load(model_dir, config_keys: Iterable[str], *, architecture: str | Iterable[str] | None = None,
         framework: str = "numpy", config: dict | None = None, keep_int8: bool = False) -> ModelDir:
    """Read and check a model directory; every problem is a one-line :class:`BisentError` naming the file.

    ``config_keys``: the keys ``config["model"]`` must have, no more, no fewer.
    ``architecture``: the name(s) this loader accepts. ``framework``:
    ``"numpy"`` or ``"torch"`` tensors. Tensor names and shapes are the
    caller's to check (``load_state_dict(strict=True)``, :func:`check_tensors`). ``keep_int8``: int8
    tables come back as :class:`Int8Rows` instead of float32 (NumPy only).
    """
    model_dir = Path(model_dir)
    config = read_config(model_dir) if config is None else config
    cfg_path = model_dir / CONFIG_FILE
    arch = config.get("architecture")
    if architecture is not None:
        names = (architecture,) if isinstance(architecture, str) else tuple(architecture)
        if arch not in names:
            raise BisentError(f"{cfg_path}: architecture {arch!r}, expected {' or '.join(map(repr, names))}")
    hp = config.get("model")
    if not isinstance(hp, dict):
        raise BisentError(f"{cfg_path}: no 'model' section")
    check_keys(cfg_path, arch, hp, config_keys)
    data, tensors = read_safetensors(model_dir / WEIGHTS_FILE, framework, keep_int8=keep_int8)
    return ModelDir(model_dir, config, hp, data, tensors)


#: keys added after models were saved without them: a config may lack them (the loader's default applies)
OPTIONAL_KEYS = frozenset({"cjk_n_min", "translit", "hash_seed"})


def check_keys(cfg_path, architecture: Any, hp: dict, config_keys: Iterable[str]) -> None:
    """One-line error for unknown or missing keys of the ``model`` section (:data:`OPTIONAL_KEYS` may be missing)."""
    keys = list(config_keys)
    unknown = sorted(set(hp) - set(keys))
    missing = [k for k in keys if k not in hp and k not in OPTIONAL_KEYS]
    if unknown:
        raise BisentError(f"{cfg_path}: unknown key(s) {', '.join(unknown)} in 'model' "
                          f"(a {architecture} model takes {', '.join(keys)})")
    if missing:
        raise BisentError(f"{cfg_path}: missing key(s) {', '.join(missing)} in 'model' (a {architecture} model needs "
                          "them)")


def load_module(model_dir, cls, config: dict | None = None, *, classes: dict | None = None):
    """``(torch module in eval mode, ModelDir)``: ``cls(**model)`` with the stored weights loaded strictly.

    ``classes`` (architecture -> class) replaces ``cls`` when one loader serves several architectures.
    """
    classes = classes or {cls.architecture: cls}
    model_dir = Path(model_dir)
    config = read_config(model_dir) if config is None else config
    cls = classes.get(config.get("architecture"))
    if cls is None:
        raise BisentError(f"{model_dir / CONFIG_FILE}: architecture {config.get('architecture')!r}, "
                          f"expected one of {', '.join(classes)}")
    md = load(model_dir, cls.config_keys, framework="torch", config=config)
    model = build(md, cls)
    try:
        model.load_state_dict(md.tensors, strict=True)
    except RuntimeError as e:
        raise BisentError(f"{model_dir / WEIGHTS_FILE}: weights do not match config.json "
                          f"({' '.join(str(e).split())[:160]})") from None
    return model.eval(), md


def build(md: ModelDir, cls):
    """``cls(**md.hp)``; a value the constructor refuses is a one-line error naming config.json."""
    try:
        return cls(**md.hp)
    except (TypeError, ValueError, KeyError, AttributeError) as e:
        raise md.error(f"cannot build a {md.config.get('architecture')} model from 'model' ({e})") from None


def read_safetensors(path: Path, framework: str = "numpy", *, keep_int8: bool = False) -> tuple[bytes, dict]:
    """The bytes of a weights file and its tensors (``"numpy"`` arrays or ``"torch"`` tensors); float16
    tensors (a directory saved with ``half=True``) and int8 tables (``int8=True``) come back as float32,
    which every model computes in, or with ``keep_int8`` (NumPy) int8 tables as :class:`Int8Rows`, for
    a loader that gathers rows and scales only those (a quarter of the memory)."""
    from safetensors import SafetensorError

    if framework == "torch":
        from safetensors.torch import load as load_bytes
    else:
        from safetensors.numpy import load as load_bytes
    path = Path(path)
    if not path.is_file():
        raise BisentError(f"{path}: missing (the model directory needs its weights)")
    data = path.read_bytes()
    try:
        tensors = _dequantize(load_bytes(data), keep_int8=keep_int8 and framework != "torch")
    except (SafetensorError, ValueError, RuntimeError, OSError) as e:
        raise BisentError(f"{path}: corrupt safetensors file ({' '.join(str(e).split())[:120]})") from None
    return data, {k: _widen(v) for k, v in tensors.items()}


def _int8_rows(name: str, v: np.ndarray):
    """``(name, array)`` items storing ``v``: a floating table of :data:`INT8_MIN_ROWS` rows or more as int8
    rows plus one float32 scale a row (symmetric, max |row| / 127), anything else unchanged."""
    if v.dtype.kind != "f" or v.ndim != 2 or v.shape[0] < INT8_MIN_ROWS:
        return [(name, v)]
    scale = np.empty((v.shape[0], 1), np.float32)                                # (rows, 1)
    q = np.empty(v.shape, np.int8)                                               # (rows, cols)
    for a in range(0, v.shape[0], _INT8_BLOCK):     # in blocks: whole-table temporaries were 2 GB for 2^20 x 256
        block = v[a:a + _INT8_BLOCK]
        s = np.abs(block).max(axis=1, keepdims=True).astype(np.float32) / 127.0
        s[s == 0] = 1.0
        scale[a:a + _INT8_BLOCK] = s
        q[a:a + _INT8_BLOCK] = np.clip(np.rint(block / s), -127, 127)
    return [(name + INT8, q), (name + INT8_SCALE, scale)]


@dataclass(frozen=True)
class Int8Rows:
    """A table stored with ``save(..., int8=True)``, as stored: row i is ``q[i] * scale[i]``."""

    q: np.ndarray             # (rows, cols) int8
    scale: np.ndarray         # (rows, 1) float32

    @property
    def shape(self) -> tuple[int, ...]:
        return self.q.shape

    def dequantize(self) -> np.ndarray:
        """``(rows, cols)`` float32, computed in blocks of rows (no whole-table temporaries)."""
        out = np.empty(self.q.shape, np.float32)
        for a in range(0, len(out), _INT8_BLOCK):
            np.multiply(self.q[a:a + _INT8_BLOCK], self.scale[a:a + _INT8_BLOCK], out=out[a:a + _INT8_BLOCK])
        return out


def _dequantize(tensors: dict, keep_int8: bool = False) -> dict:
    """Tensors read back: each ``NAME.int8`` with its ``NAME.int8_scale`` becomes float32 ``NAME``
    (``keep_int8``: an :class:`Int8Rows` of NumPy arrays)."""
    out = {}
    for k, v in tensors.items():
        if k.endswith(INT8_SCALE):
            continue
        if k.endswith(INT8):
            scale = tensors.get(k[:-len(INT8)] + INT8_SCALE)
            if scale is None:
                raise ValueError(f"{k} has no {k[:-len(INT8)] + INT8_SCALE}")
            if hasattr(v, "detach"):
                out[k[:-len(INT8)]] = v.float() * scale.float()
            else:
                rows = Int8Rows(v, scale.astype(np.float32))
                out[k[:-len(INT8)]] = rows if keep_int8 else rows.dequantize()
        else:
            out[k] = v
    return out


def _widen(t):
    """float16 / bfloat16 -> float32 (NumPy array or torch tensor); anything else unchanged."""
    if hasattr(t, "detach"):
        import torch

        return t.float() if t.dtype in (torch.float16, torch.bfloat16) else t
    return t.astype(np.float32) if getattr(t, "dtype", None) == np.float16 else t


def content_hash(*parts: bytes | dict) -> str:
    """sha256 over the sha256 of each part (a dict is hashed as sorted JSON)."""
    h = hashlib.sha256()
    for part in parts:
        data = json.dumps(part, sort_keys=True).encode() if isinstance(part, dict) else part
        h.update(hashlib.sha256(data).digest())
    return h.hexdigest()


def load_checked(model_dir, config: dict, config_keys: Iterable[str], architecture: str, shapes, *,
                 keep_int8: bool = False) -> ModelDir:
    """:func:`load` (NumPy) for a loader without torch: ``shapes(hp) -> {tensor name: shape}`` is checked
    against the weights (names and shapes), and a config it cannot read is a one-line error."""
    md = load(model_dir, config_keys, architecture=architecture, config=config, keep_int8=keep_int8)
    try:
        expected = shapes(md.hp)
    except (KeyError, TypeError, ValueError) as e:
        raise md.error(f"incomplete {architecture} config ({e})") from None
    check_tensors(md.path / WEIGHTS_FILE, md.tensors, expected)
    return md


def dense_shapes(sizes: list[int]) -> dict[str, tuple[int, ...]]:
    """Shapes of ``layers.{i}.weight`` (out, in) and ``.bias`` (out,) of dense layers of ``sizes`` = [in, ..., out]."""
    out = {}
    for i in range(len(sizes) - 1):
        out[f"layers.{i}.weight"] = (sizes[i + 1], sizes[i])
        out[f"layers.{i}.bias"] = (sizes[i + 1],)
    return out


def check_tensors(path, tensors: dict, shapes: dict[str, tuple[int, ...]]) -> None:
    """The tensor names are exactly ``shapes``' keys and each has its shape (a NumPy loader's strict check)."""
    if set(tensors) != set(shapes):
        missing, unexpected = sorted(set(shapes) - set(tensors)), sorted(set(tensors) - set(shapes))
        raise BisentError(f"{path}: weights do not match config.json (missing {missing}, unexpected {unexpected})")
    for name, shape in shapes.items():
        if tuple(tensors[name].shape) != tuple(shape):
            raise BisentError(f"{path}: tensor '{name}' has shape {tuple(tensors[name].shape)}, "
                              f"config.json implies {tuple(shape)}")
