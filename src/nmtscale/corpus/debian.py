"""Pinned Debian binary packages: the lock file, download, checksum, extraction and licence lookup."""

from __future__ import annotations

import hashlib
import re
import shutil
import subprocess
from dataclasses import dataclass
from pathlib import Path

from nmtscale.errors import DataError


@dataclass(frozen=True)
class LockedPackage:
    """One line of `data/packages.lock`: the exact .deb the corpus was built from."""

    name: str
    version: str
    sha256: str
    filename: str


def sha256_of(path: Path) -> str:
    digest = hashlib.sha256()
    with path.open("rb") as handle:
        for block in iter(lambda: handle.read(1 << 20), b""):
            digest.update(block)
    return digest.hexdigest()


def deb_field(deb: Path, field: str) -> str:
    """A control field (Package, Version, ...) of a .deb, read with dpkg-deb."""
    return subprocess.run(
        ["dpkg-deb", "-f", str(deb), field], check=True, capture_output=True, text=True
    ).stdout.strip()


def write_lock(debs: list[Path], lock_path: Path) -> list[LockedPackage]:
    """Record name, version and SHA-256 of each .deb in `lock_path`, sorted by package name."""
    locked = sorted(
        (
            LockedPackage(deb_field(deb, "Package"), deb_field(deb, "Version"), sha256_of(deb), deb.name)
            for deb in debs
        ),
        key=lambda package: package.name,
    )
    lines = [f"{p.name} {p.version} {p.sha256} {p.filename}" for p in locked]
    lock_path.write_text("# package version sha256 filename\n" + "\n".join(lines) + "\n", encoding="utf-8")
    return locked


def read_lock(lock_path: Path) -> list[LockedPackage]:
    """The packages of a lock file; a malformed line is a DataError naming file and line."""
    packages = []
    for number, line in enumerate(lock_path.read_text(encoding="utf-8").splitlines(), start=1):
        if not line.strip() or line.startswith("#"):
            continue
        fields = line.split()
        if len(fields) != 4 or not re.fullmatch(r"[0-9a-f]{64}", fields[2]):
            raise DataError(f"{lock_path}:{number}: expected 'name version sha256 filename', got {line!r}")
        packages.append(LockedPackage(*fields))
    return packages


def fetch(package: LockedPackage, downloads: Path) -> Path:
    """The verified .deb of `package` in `downloads`, fetched by `apt-get download name=version` if absent."""
    deb = downloads / package.filename
    if not deb.exists():
        if shutil.which("apt-get") is None:
            raise DataError(f"{deb} is missing and apt-get is not available to download {package.name}")
        downloads.mkdir(parents=True, exist_ok=True)
        subprocess.run(
            ["apt-get", "download", f"{package.name}={package.version}"], cwd=downloads, check=True
        )
    actual = sha256_of(deb)
    if actual != package.sha256:
        raise DataError(f"{deb}: sha256 {actual} does not match the lock file's {package.sha256}")
    return deb


def extract(deb: Path, extract_root: Path) -> Path:
    """Unpack `deb` with `dpkg -x` under `extract_root/<deb stem>` once; later calls reuse the tree."""
    target = extract_root / deb.stem
    done_marker = target / ".extracted"
    if not done_marker.exists():
        if target.exists():
            shutil.rmtree(target)
        target.mkdir(parents=True)
        subprocess.run(["dpkg", "-x", str(deb), str(target)], check=True)
        done_marker.touch()
    return target


def licence(root: Path, name: str) -> str:
    """The licences named in a package's Debian copyright file (DEP-5 `License:` fields), in file order."""
    copyright_path = root / "usr/share/doc" / name / "copyright"
    if not copyright_path.exists():
        return "unknown (no copyright file)"
    found: list[str] = []
    for line in copyright_path.read_text(encoding="utf-8", errors="replace").splitlines():
        if line.startswith("License:"):
            value = line.removeprefix("License:").strip()
            if value and value not in found:
                found.append(value)
    return "; ".join(found) if found else f"see /usr/share/doc/{name}/copyright"
