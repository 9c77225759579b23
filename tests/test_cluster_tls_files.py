"""The build cluster's TLS files are its whole trust (docs/SCALING.md): whoever reads the key joins the cluster
and can run code on the scheduler, the workers and, through what a worker sends back, the bot; whoever may
change the CA file chooses whom the bot trusts. A key another user could read was used as it was (tried: uid
65534 read a 0644 copy), and so were files another user could change. Played as root, with uid 65534
(`setpriv`) as the other user."""

from __future__ import annotations

import logging
import os
import shutil
import stat
from collections.abc import Iterator
from pathlib import Path

import pytest

from raptor_engine.workers import ClusterSettingsError, cluster_security
from tests.other_user import OTHER_UID, as_other_user, needs_root, reachable_folder
from tests.test_cluster_certificates import Authority, _settings

ADDRESS = "tls://10.0.0.5:8786"


@pytest.fixture
def folder() -> Iterator[Path]:
    """A folder other users can reach (pytest's own are closed to them), as /etc/raptor would be."""
    yield from reachable_folder("raptor-tls-")


@needs_root
def test_a_key_of_this_users_that_others_can_read_is_made_private_before_it_is_used(folder, caplog):
    ca = Authority(folder, "raptor-ca")
    cert, key = ca.issue("cluster")
    Path(key).chmod(0o644)  # as `cp` under umask 022, or a config tool, copies it
    with caplog.at_level(logging.WARNING, logger="raptor_engine.workers"):
        assert cluster_security(_settings(folder, ca.pem, (cert, key)), ADDRESS) is not None
    assert stat.S_IMODE(Path(key).stat().st_mode) == 0o600
    assert "could be read by other users of this machine (mode 644)" in caplog.text
    read = as_other_user("cat", key)
    assert read.returncode != 0 and "Permission denied" in read.stderr


@needs_root
def test_a_key_of_another_user_that_others_can_read_is_refused(folder):
    ca = Authority(folder, "raptor-ca")
    cert, key = ca.issue("cluster")
    os.chown(key, 1, 1)  # another account's (daemon), as a key in a shared folder would be
    Path(key).chmod(0o644)
    with pytest.raises(ClusterSettingsError) as caught:
        cluster_security(_settings(folder, ca.pem, (cert, key)), ADDRESS)
    assert str(caught.value).startswith(
        f"The TLS file RAPTOR_DASK_TLS_KEY={key} is not used: it belongs to another"
    )


@needs_root
def test_tls_files_another_user_could_change_are_refused_in_one_sentence(folder):
    ca = Authority(folder, "raptor-ca")
    pair = ca.issue("cluster")
    open_folder = folder / "shared"  # not sticky: anyone may put another CA file in place of this one
    open_folder.mkdir()
    open_folder.chmod(0o777)
    moved_ca = shutil.copy(ca.pem, open_folder / "ca.pem")
    with pytest.raises(ClusterSettingsError) as caught:
        cluster_security(_settings(folder, str(moved_ca), pair), ADDRESS)
    assert str(caught.value) == (
        f"The TLS file RAPTOR_DASK_TLS_CA_FILE={moved_ca} is not used: it is in {open_folder}, where any user can "
        "replace it (mode 777), and it decides whom the cluster trusts; make it and its folders writable by this "
        "user only."
    )
    os.chown(ca.pem, OTHER_UID, OTHER_UID)
    with pytest.raises(
        ClusterSettingsError, match=r"CA_FILE=.* is not used: it belongs to another user \(uid 65534\)"
    ):
        cluster_security(_settings(folder, ca.pem, pair), ADDRESS)
    os.chown(ca.pem, 0, 0)
    Path(ca.pem).chmod(0o666)
    with pytest.raises(ClusterSettingsError, match="is not used: any user can write it"):
        cluster_security(_settings(folder, ca.pem, pair), ADDRESS)
    theirs = folder / "theirs"  # a folder of another user's: they may swap what is in it
    theirs.mkdir()
    os.chown(theirs, OTHER_UID, OTHER_UID)
    Path(ca.pem).chmod(0o644)
    in_theirs = shutil.copy(ca.pem, theirs / "ca.pem")
    with pytest.raises(ClusterSettingsError, match=rf"it is inside {theirs}, which belongs to another user"):
        cluster_security(_settings(folder, str(in_theirs), pair), ADDRESS)


def test_a_key_readable_by_a_group_no_one_else_is_in_is_used_as_it_is(tmp_path):
    ca = Authority(tmp_path, "raptor-ca")
    cert, key = ca.issue("cluster")
    Path(key).chmod(0o640)  # root:root, or the bot user's own group: no one else reads it
    if os.getgid() != Path(key).stat().st_gid:
        pytest.skip("the key's group is not this user's")
    assert cluster_security(_settings(tmp_path, ca.pem, (cert, key)), ADDRESS) is not None
    assert stat.S_IMODE(Path(key).stat().st_mode) == 0o640
