"""An archive's own tar metadata is bounded as its members are (docs/SCALING.md "What import checks"):
tarfile reads the whole data of a pax or GNU long-name header into memory as it meets it, before any member
can be checked, so a 229 kB `.tar.xz` whose pax header claimed 1.5 GB held `raptor guilds import` at 1.6 GB of
memory for 2.5 minutes before it said "not a readable tar archive" (tried). Now no import unpacks more than an
export's archive of its size can hold. Real `raptor guilds import` processes."""

from __future__ import annotations

import bz2
import gzip
import lzma
import tarfile
from pathlib import Path

import pytest

from tests.test_import_hostile import BIG, exported, raptor, target, tree_hash  # noqa: F401 (fixtures)

OPENERS = {".tar.gz": lambda p: gzip.open(p, "wb", compresslevel=1), ".tar.xz": lambda p: lzma.open(p, "wb")}


def _metadata_bomb(path: Path, kind: bytes) -> Path:
    """A compressed tar whose first header is tar metadata (`kind`) declaring BIG bytes, all of them zeros."""
    info = tarfile.TarInfo("././@LongLink" if kind == tarfile.GNUTYPE_LONGNAME else "././@PaxHeader")
    info.type, info.size = kind, BIG
    with OPENERS["".join(path.suffixes[-2:])](path) as out:
        out.write(
            info.tobuf(
                format=tarfile.GNU_FORMAT if kind == tarfile.GNUTYPE_LONGNAME else tarfile.USTAR_FORMAT
            )
        )
        block = bytes(8 * 1024 * 1024)
        for _ in range(BIG // len(block)):
            out.write(block)
    return path


@pytest.mark.parametrize(
    ("name", "kind"),
    [
        ("pax.tar.gz", tarfile.XHDTYPE),
        ("gnu-long-name.tar.xz", tarfile.GNUTYPE_LONGNAME),
        ("global.tar.gz", tarfile.XGLTYPE),
    ],
)
def test_tar_metadata_larger_than_an_export_holds_is_refused_before_it_is_read(target, tmp_path, name, kind):  # noqa: F811
    archive = _metadata_bomb(tmp_path / name, kind)
    before = tree_hash(target)
    done = raptor(target, "guilds", "import", str(archive))
    assert done.returncode == 1, done.stderr
    [line] = done.stderr.strip().splitlines()
    assert line.startswith(
        f"Error: {name} is not a store exported by `raptor guilds export`: it unpacks to more than "
    )
    assert line.endswith(" bytes, more than an export's archive holds."), line
    assert tree_hash(target) == before


@pytest.mark.parametrize("suffix", [".tar.gz", ".tar.bz2", ".tar.xz"])
def test_an_export_compressed_for_the_trip_is_imported(exported, target, tmp_path, suffix):  # noqa: F811
    """What `gzip`, `bzip2` or `xz` make of an export (to copy it between machines) imports as the export does."""
    compress = {".tar.gz": gzip.compress, ".tar.bz2": bz2.compress, ".tar.xz": lzma.compress}[suffix]
    archive = tmp_path / f"guild-42{suffix}"
    archive.write_bytes(compress(exported.read_bytes()))
    done = raptor(target, "guilds", "import", str(archive))
    assert done.returncode == 0 and done.stdout.strip() == "42: 1 knowledge base(s) imported", done.stderr
