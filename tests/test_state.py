"""bisent.state.StateDir: the one resumable state folder (fingerprint in the marker, one refusal rule, restart,
atomic parts, finish)."""

import json
import os

import numpy as np
import pytest

from bisent.errors import BisentError
from bisent.io import STATE_MARKER
from bisent.state import StateDir, differences, file_identity, fingerprint, load_arrays


def _store(tmp_path, **kw):
    return StateDir(tmp_path / "st", "test", what="a test state", remedy="start over", **kw)


def test_same_fingerprint_resumes_and_another_is_refused_naming_what_differs(tmp_path):
    src = tmp_path / "in.txt"
    src.write_text("one\ntwo\n")
    store = _store(tmp_path)
    assert store.open(inputs={"input": file_identity(src)}, settings={"k": 4, "mode": "a"}) is False
    store.write_json("progress.json", {"lines": 1})
    assert store.open(inputs={"input": file_identity(src)}, settings={"k": 4, "mode": "a"}) is True
    assert store.read_json("progress.json") == {"lines": 1}
    st = src.stat()
    src.write_text("one\nowt\n")                                   # same size, mtime put back: other bytes
    os.utime(src, ns=(st.st_atime_ns, st.st_mtime_ns))
    with pytest.raises(BisentError) as e:
        _store(tmp_path).open(inputs={"input": file_identity(src)}, settings={"k": 8, "mode": "a"})
    msg = str(e.value)
    assert msg.startswith(f"{tmp_path / 'st'}: already holds a test state of other inputs or settings")
    assert "different input in.txt" in msg and "'k' differs" in msg and "'mode'" not in msg
    assert msg.endswith("; start over") and "\n" not in msg
    assert store.read_json("progress.json") == {"lines": 1}           # refused: nothing removed


def test_restart_empties_the_folder_and_records_the_new_fingerprint(tmp_path):
    store = _store(tmp_path)
    store.open(inputs={"x": "aaa"}, settings={"k": 1})
    store.save_arrays("part.npz", a=np.arange(3))
    assert StateDir(store.path, "test").open(inputs={"x": "bbb"}, settings={"k": 1}, restart=True) is False
    assert store.parts() == []
    marker = json.loads((store.path / STATE_MARKER).read_text())
    assert marker["fingerprint"] == fingerprint("test", {"x": "bbb"}, {"k": 1})
    store.mark_done("block-1")
    assert store.is_done("block-1") and not store.is_done("block-2")
    assert StateDir(store.path, "test").open(inputs={"x": "bbb"}, settings={"k": 1}) is True


def test_a_folder_holding_only_its_marker_is_adopted_whatever_it_was_made_for(tmp_path):
    store = _store(tmp_path)
    store.open(inputs={"x": "aaa"}, settings={})
    assert _store(tmp_path).open(inputs={"x": "other"}, settings={"k": 2}) is False


def test_a_user_folder_and_a_link_are_refused_and_ignored_names_are_no_part(tmp_path):
    user = tmp_path / "user"
    user.mkdir()
    (user / "thesis.tex").write_text("mine\n")
    with pytest.raises(BisentError, match="was not made by bisent"):
        StateDir(user, "test").open(inputs={}, settings={})
    assert (user / "thesis.tex").read_text() == "mine\n"
    (tmp_path / "link").symlink_to(user)
    with pytest.raises(BisentError, match="symbolic link"):
        StateDir(tmp_path / "link", "test").open(inputs={}, settings={})
    store = StateDir(tmp_path / "v", "test", ignore=["bisent-stdin-x"])
    store.path.mkdir()
    (store.path / STATE_MARKER).write_text("{}\n")
    (store.path / "bisent-stdin-x").write_text("a copied input\n")
    assert store.open(inputs={"x": "1"}, settings={}) is False     # the copy is no state of another run
    assert (store.path / "bisent-stdin-x").is_file()


def test_arrays_of_other_settings_are_refused_and_finish_removes_the_folder(tmp_path):
    store = _store(tmp_path)
    store.open(inputs={}, settings={})
    store.save_arrays("c.npz", {"k": 4}, a=np.arange(5))
    assert np.array_equal(store.load_arrays("c.npz", {"k": 4})["a"], np.arange(5))
    with pytest.raises(BisentError, match="c.npz: saved by a test state of other inputs or settings"):
        store.load_arrays("c.npz", {"k": 5})
    assert load_arrays(store.part("missing.npz"), {"k": 4}) is None
    store.write_json("state.json", {})
    store.finish(first=["state.json"])
    assert not store.path.exists()


def test_differences_name_an_unrecorded_fingerprint():
    assert differences(None, fingerprint("x", {}, {})) == ["no fingerprint recorded (made by another version of "
                                                           "bisent)"]
    assert differences(fingerprint("x", {"training data": "a"}, {}),
                       fingerprint("x", {"training data": "b"}, {})) == ["different input training data"]
