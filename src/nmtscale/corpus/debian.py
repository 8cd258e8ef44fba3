"""Pinned Debian binary packages: the lock file, download, checksum, extraction and licence lookup."""

from __future__ import annotations

import hashlib
import os
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


# Licences named in prose, for copyright files that predate the machine-readable (DEP-5) format.
LICENCE_NAMES = (
    (re.compile(r"GNU (?:Library|Lesser) General Public Licen[cs]e|\bLGPL"), "LGPL"),
    (re.compile(r"GNU General Public Licen[cs]e|\bGPL"), "GPL"),
    (re.compile(r"GNU Free Documentation Licen[cs]e|\bGFDL"), "GFDL"),
    (re.compile(r"Mozilla Public Licen[cs]e|\bMPL"), "MPL"),
    (re.compile(r"Creative Commons|\bCC-BY"), "Creative Commons"),
    (re.compile(r"Apache Licen[cs]e"), "Apache"),
    (re.compile(r"\bBSD\b"), "BSD"),
    (re.compile(r"\bMIT\b|\bExpat\b"), "MIT/Expat"),
)


def licence(root: Path, name: str) -> str:
    """The licences named in a package's Debian copyright file, in file order.

    DEP-5 `License:` fields when present, otherwise the licences the prose names. Packages whose doc
    folder is a link to another package's (dpkg -x does not follow it) say so.
    """
    doc = root / "usr/share/doc" / name
    if doc.is_symlink():
        return f"as Debian package {Path(os.readlink(doc)).name} (its copyright file)"
    copyright_path = doc / "copyright"
    if not copyright_path.exists():
        return "not stated in the package"
    text = copyright_path.read_text(encoding="utf-8", errors="replace")
    found: list[str] = []
    for line in text.splitlines():
        if line.startswith("License:"):
            value = line.removeprefix("License:").strip()
            if value and value not in found:
                found.append(value)
    if not found:
        found = [
            f"{label} (named in copyright prose)" for pattern, label in LICENCE_NAMES if pattern.search(text)
        ]
    return "; ".join(found) if found else f"see /usr/share/doc/{name}/copyright"
