"""The one directory-sync rule: errors that mean "not durable" are raised, a filesystem without directory fsync is not."""

from __future__ import annotations

import errno
import os

import pytest

from tau_collector.spool import durable
from tau_collector.spool.durable import fsync_directory


def test_a_directory_with_a_new_name_is_synced(tmp_path):
    (tmp_path / "chunk").write_bytes(b"x")
    fsync_directory(tmp_path)  # returns quietly
    fsync_directory(str(tmp_path))


def test_a_missing_directory_is_an_error_naming_it(tmp_path):
    with pytest.raises(FileNotFoundError) as info:
        fsync_directory(tmp_path / "gone")
    assert info.value.filename == str(tmp_path / "gone")


def test_a_file_is_not_a_directory(tmp_path):
    (tmp_path / "f").write_bytes(b"")
    with pytest.raises(NotADirectoryError):
        fsync_directory(tmp_path / "f")


@pytest.mark.parametrize("code", [errno.EINVAL, errno.ENOTSUP])
def test_a_filesystem_without_directory_fsync_is_accepted(tmp_path, monkeypatch, code):
    # Some network and FUSE filesystems answer fsync on a directory this way; none is mountable here.
    def refuse(fd):
        raise OSError(code, os.strerror(code))

    monkeypatch.setattr(os, "fsync", refuse)
    fsync_directory(tmp_path)


def test_an_io_error_while_syncing_is_raised(tmp_path, monkeypatch):
    def fail(fd):
        raise OSError(errno.EIO, os.strerror(errno.EIO))

    monkeypatch.setattr(os, "fsync", fail)
    with pytest.raises(OSError) as info:
        fsync_directory(tmp_path)
    assert info.value.errno == errno.EIO


def test_make_dirs_syncs_each_new_directory_into_its_parent(tmp_path, monkeypatch):
    synced = []
    real = durable.fsync_directory
    monkeypatch.setattr(durable, "fsync_directory", lambda d: (synced.append(str(d)), real(d)))
    durable.make_dirs(tmp_path / "a" / "b" / "c")
    assert (tmp_path / "a" / "b" / "c").is_dir()
    assert synced == [str(tmp_path), str(tmp_path / "a"), str(tmp_path / "a" / "b")]
    synced.clear()
    durable.make_dirs(tmp_path / "a" / "b")  # exists: nothing to sync
    assert synced == []


def test_make_dirs_refuses_a_file_in_the_way_as_os_makedirs_does(tmp_path):
    (tmp_path / "f").write_text("")
    with pytest.raises(FileExistsError):
        durable.make_dirs(tmp_path / "f")
    with pytest.raises(NotADirectoryError):
        durable.make_dirs(tmp_path / "f" / "sub")
