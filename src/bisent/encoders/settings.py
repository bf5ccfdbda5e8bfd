"""How torch and ONNX encoders run: device, batch size and pooling, set once per process.

The commands' ``--device``, ``--batch-size`` and ``--pooling`` options call
:func:`configure`; :func:`bisent.encoders.get_encoder` reads :func:`current`
when it builds an encoder (an encoder built under other settings is another
encoder). The Python API can pass the same keywords to ``get_encoder``.
"""

from __future__ import annotations

from dataclasses import dataclass, replace

from ..errors import BisentError

DEVICES = ("cpu", "cuda", "mps")
#: pooling of token vectors into a sentence vector: mean over the tokens, the first token ([CLS]), the element-wise
#: maximum, or the last token (decoder models)
POOLINGS = ("mean", "cls", "max", "lasttoken")


@dataclass(frozen=True)
class Settings:
    """``device`` (cpu, cuda, cuda:N, mps), ``batch_size`` (None: the encoder's own), ``pooling`` (None: the
    model's card)."""

    device: str = "cpu"
    batch_size: int | None = None
    pooling: str | None = None


_CURRENT = Settings()


def check_device(device: str) -> str:
    """``device`` if it names a kind bisent knows (``cpu``, ``cuda``, ``cuda:1``, ``mps``), else a one-line error."""
    if not isinstance(device, str) or device.split(":")[0] not in DEVICES or (
            ":" in device and not (device.startswith("cuda:") and device[5:].isdigit())):
        raise BisentError(f"--device {device}: expected one of {', '.join(DEVICES)} (or cuda:N)")
    return device


def configure(*, device: str | None = None, batch_size: int | None = None, pooling: str | None = None) -> Settings:
    """Set the settings later encoders are built with (None leaves one as it is); returns them."""
    global _CURRENT
    changes: dict = {}
    if device is not None:
        changes["device"] = check_device(device)
    if batch_size is not None:
        if int(batch_size) < 1:
            raise BisentError(f"--batch-size {batch_size}: must be at least 1")
        changes["batch_size"] = int(batch_size)
    if pooling is not None:
        if pooling not in POOLINGS:
            raise BisentError(f"--pooling {pooling}: expected one of {', '.join(POOLINGS)}")
        changes["pooling"] = pooling
    _CURRENT = replace(_CURRENT, **changes)
    return _CURRENT


def set_option(name: str, value) -> Settings:
    """Set one setting to ``value``, None included (a command's option left out puts the default back)."""
    global _CURRENT
    if value is not None:
        configure(**{name: value})
    else:
        _CURRENT = replace(_CURRENT, **{name: Settings.__dataclass_fields__[name].default})
    return _CURRENT


def current() -> Settings:
    """The settings :func:`configure` last set (default: CPU, each encoder's batch size, the card's pooling)."""
    return _CURRENT


def reset() -> None:
    """Back to the defaults (tests)."""
    global _CURRENT
    _CURRENT = Settings()


def torch_device(device: str):
    """A ``torch.device`` for ``device``, or a one-line error when this machine has no such device."""
    import torch

    kind = check_device(device).split(":")[0]
    if kind == "cuda":
        if not torch.cuda.is_available():
            raise BisentError(f"--device {device}: no CUDA device here (torch {torch.__version__}); use --device cpu")
        index = int(device.split(":")[1]) if ":" in device else 0
        if index >= torch.cuda.device_count():
            raise BisentError(f"--device {device}: this machine has {torch.cuda.device_count()} CUDA device(s)")
    if kind == "mps" and not (getattr(torch.backends, "mps", None) and torch.backends.mps.is_available()):
        raise BisentError(f"--device {device}: no Apple MPS device here; use --device cpu")
    return torch.device(device)
