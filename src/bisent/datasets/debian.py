"""Fetch and unpack Debian packages into the bisent cache (``apt-get download`` + ``dpkg -x``).

Real data (translated documentation) comes from Debian's archive at run time,
never from the repository. A package is unpacked once into
``cache_dir("debian")/NAME`` and reused; the folder appears atomically (built
under a temp name, then renamed), so a crash or a bad download leaves nothing
half-extracted behind. Every failure is a one-line :class:`BisentError`
naming the package and the problem.
"""

from __future__ import annotations

import contextlib
import json
import os
import re
import shlex
import shutil
import subprocess
import tempfile
import time
from pathlib import Path

from ..cache import cache_dir
from ..errors import BisentError
from ..io import atomic_dir

#: Debian package names: lower-case letters, digits, + - . (at least 2 characters).
PACKAGE_RE = re.compile(r"^[a-z0-9][a-z0-9+.-]+$")
#: File written inside each unpacked package folder; its presence marks a complete unpack.
MARKER = ".bisent-package.json"
#: Package lists older than this are refreshed (once per process) when a package cannot be found.
LISTS_MAX_AGE_S = 7 * 24 * 3600
#: Seconds allowed for one apt-get call (download or update).
APT_TIMEOUT_S = 900
#: Leftover temp folders (from a killed process) older than this are removed.
STALE_TMP_S = 24 * 3600

_updated_once = False


def fetch_package(name: str) -> Path:
    """Return the folder holding the unpacked Debian package ``name``, downloading it on first use.

    The folder is ``cache_dir("debian")/name`` and mirrors the package's file
    tree (``usr/share/...``). A second call returns at once. If the package
    cannot be found (or its file is gone from the mirror) and the package lists
    are empty or stale, ``apt-get update`` runs once and the download is retried.
    """
    if not PACKAGE_RE.match(name or ""):
        raise BisentError(f"{name!r}: not a valid Debian package name")
    dest = cache_dir("debian") / name
    if (dest / MARKER).is_file():
        return dest
    _require_tools(name)
    _remove_stale_temp(dest.parent)
    from ..progress import heartbeat

    with heartbeat(f"fetching Debian package {name}"), \
            tempfile.TemporaryDirectory(prefix=f".{name}.", suffix=".dl", dir=dest.parent) as dl:
        deb = _download(name, Path(dl))
        return extract_deb(deb, name)


def extract_deb(deb: Path, name: str) -> Path:
    """Unpack the .deb file ``deb`` into ``cache_dir("debian")/name`` atomically; return that folder.

    A truncated or corrupt file is a :class:`BisentError` and leaves no folder behind.
    """
    dest = cache_dir("debian") / name
    if (dest / MARKER).is_file():
        return dest
    _require_tools(name, need_apt=False)
    if dest.is_dir():  # a folder without the marker: not a complete unpack; make room
        shutil.rmtree(dest)
    elif dest.exists():
        dest.unlink()
    with atomic_dir(dest) as tmp:
        _run(["dpkg-deb", "-x", str(deb), str(tmp)], name, "cannot unpack the .deb (truncated or corrupt?)")
        fields = _run(["dpkg-deb", "-f", str(deb), "Package", "Version"], name,
                      "cannot read the .deb's control fields").stdout
        info = dict(line.split(": ", 1) for line in fields.splitlines() if ": " in line)
        if info.get("Package") != name:
            raise BisentError(f"{name}: downloaded file holds package {info.get('Package')!r}, not {name!r}")
        meta = {"package": name, "version": info.get("Version", ""), "file": deb.name,
                "fetched": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())}
        (tmp / MARKER).write_text(json.dumps(meta, indent=1) + "\n", encoding="utf-8")
    return dest


def package_info(folder: Path) -> dict:
    """The metadata (package, version, file, fetched) recorded when ``folder`` was unpacked."""
    return json.loads((Path(folder) / MARKER).read_text(encoding="utf-8"))


def available_packages(prefix: str) -> list[str]:
    """Packages in the apt lists whose names start with ``prefix`` (``apt-get update`` once if the lists are empty)."""
    _require_tools(prefix, need_dpkg=False)
    names = _pkgnames(prefix)
    if not names and not _updated_once and _lists_state() != "fresh":
        _apt_update(prefix)
        names = _pkgnames(prefix)
    return names


def _pkgnames(prefix: str) -> list[str]:
    out = _run(["apt-cache", "pkgnames", prefix], prefix, "cannot list packages", check=False).stdout
    return sorted(set(out.split()))


def _download(name: str, into: Path) -> Path:
    """``apt-get download name`` into ``into``; one ``apt-get update`` + retry if the lists look out of date."""
    proc = _apt_download(name, into)
    if proc.returncode != 0:
        missing = "Unable to locate package" in proc.stderr or "has no installation candidate" in proc.stderr
        gone = "404" in proc.stderr or "Failed to fetch" in proc.stderr
        if not _updated_once and (gone or (missing and _lists_state() != "fresh")):
            _apt_update(name)
            proc = _apt_download(name, into)
        if proc.returncode != 0:
            if "Unable to locate package" in proc.stderr:
                raise BisentError(f"{name}: no such package in the apt lists "
                                  "(apt-get download: unable to locate package)")
            raise BisentError(f"{name}: apt-get download failed: {_last_error(proc.stderr)}")
    debs = sorted(into.glob("*.deb"))
    if len(debs) != 1:
        raise BisentError(f"{name}: apt-get download produced {len(debs)} .deb files, expected 1")
    return debs[0]


def _apt_download(name: str, into: Path) -> subprocess.CompletedProcess:
    return _run(["apt-get", *_sandbox_opts(), "download", name], name, "apt-get download failed",
                cwd=into, check=False)


def _apt_update(name: str) -> None:
    """Run ``apt-get update`` (once per process); a failure is a one-line error."""
    global _updated_once
    _updated_once = True
    proc = _run(["apt-get", *_sandbox_opts(), "update"], name, "apt-get update failed", check=False)
    if proc.returncode != 0:
        raise BisentError(f"{name}: package lists are missing or stale and apt-get update failed "
                          f"(no network or not root?): {_last_error(proc.stderr)}")


def _sandbox_opts() -> list[str]:
    """As root, download as root (avoids apt's warning that ``_apt`` cannot write to a private temp folder)."""
    return ["-o", "APT::Sandbox::User=root"] if hasattr(os, "geteuid") and os.geteuid() == 0 else []


def _lists_state() -> str:
    """``"empty"``, ``"stale"`` (older than :data:`LISTS_MAX_AGE_S`) or ``"fresh"`` for apt's package lists."""
    lists = _lists_dir()
    files = list(lists.glob("*_Packages*")) if lists else []
    if not files:
        return "empty"
    newest = max(f.stat().st_mtime for f in files)
    return "stale" if time.time() - newest > LISTS_MAX_AGE_S else "fresh"


def _lists_dir() -> Path | None:
    """apt's package-list folder, as ``apt-config`` reports it."""
    try:
        out = subprocess.run(["apt-config", "shell", "D", "Dir::State::lists/d"], capture_output=True,
                             text=True, timeout=30).stdout
    except (OSError, subprocess.SubprocessError):
        return None
    values = shlex.split(out.partition("=")[2])
    return Path(values[0]) if values else None


def _require_tools(name: str, *, need_apt: bool = True, need_dpkg: bool = True) -> None:
    tools = (["apt-get", "apt-cache"] if need_apt else []) + (["dpkg-deb"] if need_dpkg else [])
    missing = [t for t in tools if shutil.which(t) is None]
    if missing:
        raise BisentError(f"{name}: cannot fetch Debian packages: {', '.join(missing)} not found "
                          "(needs a Debian-based system with apt)")


def _run(cmd: list[str], name: str, what: str, *, cwd: Path | None = None,
         check: bool = True) -> subprocess.CompletedProcess:
    """Run ``cmd`` capturing text output; failures (and, with ``check``, non-zero exits) become one-line errors."""
    env = dict(os.environ, LC_ALL="C", DEBIAN_FRONTEND="noninteractive")
    try:
        proc = subprocess.run(cmd, cwd=cwd, capture_output=True, text=True, env=env, timeout=APT_TIMEOUT_S)
    except subprocess.TimeoutExpired:
        raise BisentError(f"{name}: {what}: {cmd[0]} timed out after {APT_TIMEOUT_S} s") from None
    except OSError as e:
        raise BisentError(f"{name}: {what}: {e}") from None
    if check and proc.returncode != 0:
        raise BisentError(f"{name}: {what}: {_last_error(proc.stderr)}")
    return proc


def _last_error(stderr: str) -> str:
    """The most telling line of a tool's stderr (an ``E:``/``error`` line if any), for one-line messages."""
    lines = [ln.strip() for ln in stderr.splitlines() if ln.strip()]
    errors = [ln for ln in lines if ln.startswith("E:") or "error" in ln.lower()]
    return (errors or lines or ["no message"])[-1]


def _remove_stale_temp(folder: Path) -> None:
    """Remove temp folders left by killed runs (names start with a dot, older than a day)."""
    now = time.time()
    for p in folder.glob(".*"):
        with contextlib.suppress(OSError):
            if p.is_dir() and now - p.stat().st_mtime > STALE_TMP_S:
                shutil.rmtree(p, ignore_errors=True)
