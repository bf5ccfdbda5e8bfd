"""Resumable state: ONE folder type, :class:`StateDir`, for every job that continues after a kill.

A state folder is bisent's own (its marker file ``.bisent-state``, :func:`bisent.io.make_state_dir`: a link
or a user's folder is refused, never written into). The marker also records the folder's *fingerprint*: what
the state belongs to, as named entries of two kinds,

- ``inputs``: each input's identity (:func:`file_identity`: its path and the SHA-256 of its bytes, so a file
  rewritten in place with the same size and mtime is still a different input; or the hash of an array);
- ``settings``: every option the saved results depend on.

One rule for every job: a folder holding state of another fingerprint is **refused** with a one-line error
naming the folder and what differs, unless the command was asked to start over (``restart=True``: the
filter's ``--no-resume``, ``embed --force``), which empties it first. A folder that holds nothing but its
marker is simply adopted. Parts (checkpoints, finished blocks, shards) are written atomically
(:func:`bisent.io.atomic_write`): a kill leaves the previous part whole; :meth:`StateDir.finish` removes the
folder once the job's outputs are in place (jobs whose folder *is* the output keep it).
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any, Iterable

import numpy as np

from .errors import BisentError
from .io import STATE_MARKER, atomic_write, file_sha256, make_state_dir, remove_state_dir, remove_tree

#: version of the marker's layout
FORMAT = 2


def file_identity(path) -> dict[str, str]:
    """What identifies an input file in a fingerprint: its resolved path and the SHA-256 of its bytes."""
    path = Path(path)
    return {"path": str(path.resolve()), "sha256": file_sha256(path)}


def array_sha256(a: np.ndarray) -> str:
    """SHA-256 of an array's bytes (C order): the identity of vectors held in memory."""
    import hashlib

    return hashlib.sha256(np.ascontiguousarray(a).tobytes()).hexdigest()


def _canonical(value: Any) -> Any:
    """``value`` as JSON gives it back (tuples become lists, keys strings), so saved and new compare equal."""
    return json.loads(json.dumps(value, sort_keys=True, default=str))


def differences(old: dict | None, new: dict) -> list[str]:
    """What differs between two fingerprints, in words: ``different input en.txt``, ``'k' differs``."""
    if not isinstance(old, dict):
        return ["no fingerprint recorded (made by another version of bisent)"]
    out = []
    old_in, new_in = old.get("inputs") or {}, new.get("inputs") or {}
    for name in sorted(set(old_in) | set(new_in)):
        if old_in.get(name) != new_in.get(name):
            desc = new_in.get(name) if isinstance(new_in.get(name), dict) else {}
            label = Path(desc.get("path") or desc.get("name") or name).name
            out.append(f"different input {label}" + (f" ({name})" if name not in (label, "input") else ""))
    old_set, new_set = old.get("settings") or {}, new.get("settings") or {}
    out += [f"'{k}' differs" for k in sorted(set(old_set) | set(new_set)) if old_set.get(k) != new_set.get(k)]
    if old.get("job") != new.get("job"):
        out.append(f"made by {old.get('job')!r}, not {new.get('job')!r}")
    return out or ["a different fingerprint"]


def fingerprint(job: str, inputs: dict, settings: dict) -> dict:
    """The fingerprint of ``job``'s state: its inputs' identities and its settings, as JSON gives them back."""
    return _canonical({"job": job, "inputs": inputs, "settings": settings})


def check_same(path, what: str, old: dict | None, new: dict, remedy: str) -> None:
    """The one refusal: a :class:`BisentError` naming ``path`` and what differs when the saved fingerprint ``old``
    is not ``new`` (for state kept elsewhere than a folder's marker, e.g. inside a training checkpoint)."""
    if old != new:
        raise BisentError(f"{path}: already holds {what} of other inputs or settings "
                          f"({'; '.join(differences(old, new))}); {remedy}")


class StateDir:
    """bisent's folder ``path`` for the resumable state of one ``job`` (``"filter"``, ``"twostage"``, ...).

    ``what`` names what the folder holds in messages (``"a filter checkpoint"``); ``remedy`` says how to start
    over (``"pass --no-resume to start over"``). Use::

        store = StateDir(folder, "filter", what="a filter checkpoint", remedy="...")
        resumed = store.open(inputs={"input": file_identity(p)}, settings={...}, restart=not resume)
        ... store.write_json("state.json", progress) ... store.save_arrays("block.npz", a=a) ...
        store.finish()
    """

    def __init__(self, path, job: str, *, what: str | None = None, remedy: str | None = None,
                 ignore: Iterable[str] = ()):
        self.path = Path(path)
        self.ignore = {STATE_MARKER, *ignore}        # names that are no part (an input copied into the folder)
        self.job = job
        self.what = what or f"{job} state"
        self.remedy = remedy or f"remove {self.path} to start again"
        self.fingerprint: dict | None = None

    # --- life cycle -------------------------------------------------------------------------------------------

    def open(self, *, inputs: dict, settings: dict, restart: bool = False) -> bool:
        """Create or adopt the folder for this fingerprint; True when it holds state of the same one to resume.

        A missing or empty folder is created (False); the same fingerprint resumes (True); another one is
        refused (:class:`BisentError`, naming the folder and what differs), or emptied when ``restart`` (False).
        ``restart`` also empties a folder of the same fingerprint (starting over on request).
        """
        make_state_dir(self.path, self.job)             # a link or a user's folder is refused before anything else
        new = fingerprint(self.job, inputs, settings)
        old = self._read_marker().get("fingerprint")
        holds = self.parts()
        self.fingerprint = new
        if holds and old == new and not restart:
            return True
        if holds and not restart:
            check_same(self.path, self.what, old, new, self.remedy)
        self.clear()
        self._write_marker(new)
        return False

    def adopt(self) -> Path:
        """Create or adopt the folder without a fingerprint of its own: for a job whose parts carry their own
        (``bisent run``: each stage's completion mark holds the hash of that stage's inputs, and a stage whose
        inputs changed is redone, make-like). A link or a user's folder is still refused."""
        return make_state_dir(self.path, self.job)

    def check(self, *, inputs: dict, settings: dict) -> None:
        """Refuse (as :meth:`open`) when the folder's fingerprint is not this one; nothing is created or changed."""
        check_same(self.path, self.what, self._read_marker().get("fingerprint"),
                   fingerprint(self.job, inputs, settings), self.remedy)

    def parts(self) -> list[str]:
        """Names of what the folder holds besides its marker and the names it ignores (sorted)."""
        if not self.path.is_dir():
            return []
        return sorted(p.name for p in self.path.iterdir() if p.name not in self.ignore)

    def clear(self, keep: Iterable[str] = ()) -> None:
        """Remove every part but those named in ``keep`` (the marker stays)."""
        keep = set(keep)
        for name in self.parts():
            if name not in keep:
                remove_tree(self.path / name)

    def finish(self, first: Iterable[str] = ()) -> None:
        """Remove the folder: the job's outputs are in place. ``first``: parts removed before the rest (the one
        whose absence tells a rerun there is nothing to resume, so a kill while removing never resumes half)."""
        for name in first:
            (self.path / name).unlink(missing_ok=True)
        remove_state_dir(self.path)

    # --- parts ------------------------------------------------------------------------------------------------

    def part(self, name: str) -> Path:
        return self.path / name

    def has(self, name: str) -> bool:
        return (self.path / name).is_file()

    def write_json(self, name: str, data, *, indent: int | None = 2) -> None:
        """Checkpoint ``data`` as the JSON part ``name`` (atomically)."""
        write_json(self.path / name, data, indent=indent)

    def read_json(self, name: str, default=None):
        """The JSON part ``name``; ``default`` when it is missing or torn (a part is never trusted blindly)."""
        try:
            return json.loads((self.path / name).read_text(encoding="utf-8"))
        except (OSError, ValueError):
            return default

    def save_arrays(self, name: str, meta: dict | None = None, **arrays: np.ndarray) -> None:
        """Checkpoint ``arrays`` as the .npz part ``name`` (atomically), with ``meta`` inside when given."""
        save_arrays(self.path / name, meta, **arrays)

    def load_arrays(self, name: str, meta: dict | None = None) -> dict | None:
        """The arrays of the .npz part ``name`` (None when missing); see :func:`load_arrays`."""
        return load_arrays(self.path / name, meta, what=self.what, remedy=self.remedy)

    def mark_done(self, name: str, info: dict | None = None) -> None:
        """A completion mark: ``name`` (a block, a stage) is finished; ``info`` is kept with the mark."""
        self.write_json(f"done-{name}.json", info or {}, indent=None)

    def is_done(self, name: str) -> bool:
        return self.has(f"done-{name}.json")

    # --- the marker -------------------------------------------------------------------------------------------

    def _read_marker(self) -> dict:
        try:
            data = json.loads((self.path / STATE_MARKER).read_text(encoding="utf-8"))
        except (OSError, ValueError):
            return {}
        return data if isinstance(data, dict) else {}

    def _write_marker(self, fingerprint: dict) -> None:
        with atomic_write(self.path / STATE_MARKER) as f:   # replaced whole: the folder is never unmarked
            f.write(json.dumps({"bisent_state": self.job, "version": FORMAT, "fingerprint": fingerprint},
                               sort_keys=True) + "\n")


def write_json(path, data, *, indent: int | None = 2) -> None:
    """Write ``data`` as JSON to ``path`` atomically (sorted keys, a final newline)."""
    with atomic_write(path) as f:
        json.dump(data, f, indent=indent, sort_keys=True)
        f.write("\n")


def save_arrays(path, meta: dict | None = None, **arrays: np.ndarray) -> None:
    """Write ``arrays`` (and ``meta``, the inputs and settings they belong to, as JSON) to the .npz ``path``
    atomically."""
    extra = {} if meta is None else {"meta": np.array(json.dumps(meta, sort_keys=True))}
    with atomic_write(path, "wb") as f:
        np.savez(f, **extra, **arrays)


def load_arrays(path, meta: dict | None = None, *, what: str = "state", remedy: str | None = None) -> dict | None:
    """The arrays :func:`save_arrays` wrote to ``path``, None when there is no file. With ``meta``, a file saved
    for other inputs or settings is refused, as is an unreadable one (a one-line :class:`BisentError`)."""
    path = Path(path)
    remedy = remedy or f"remove {path.parent} to start again"
    if not path.is_file():
        return None
    try:
        with np.load(path, allow_pickle=False) as z:
            if meta is not None and json.loads(str(z["meta"])) != _canonical(meta):
                raise BisentError(f"{path}: saved by {what} of other inputs or settings; {remedy}")
            return {k: z[k] for k in z.files if k != "meta"}
    except (OSError, ValueError, KeyError) as e:
        raise BisentError(f"{path}: unreadable {what} ({e}); {remedy}") from None
