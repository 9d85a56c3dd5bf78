"""The minimal /etc a local sandbox sees instead of the host's.

The host's /etc names the host (its users, hostname, machine id, package and credential
configuration, SSH host keys) and is shared by every sandbox. A sandbox gets a fresh one holding
only what shells, Python, git and the agent CLIs read: the one user and group commands run as, name
resolution from files, the dynamic linker's configuration, CA certificates, Debian's alternatives
links, and a few static tables. The clock is UTC.
"""

from __future__ import annotations

import os
import shutil
from pathlib import Path

HOSTNAME = "sandbox"
HOME = "/tmp"
# Written here: the only accounts, and name resolution from files alone.
FILES = {
    "passwd": f"root:x:0:0:root:{HOME}:/bin/bash\nnobody:x:65534:65534:nobody:/nonexistent:/usr/sbin/nologin\n",
    "group": "root:x:0:\nnogroup:x:65534:\n",
    "nsswitch.conf": "passwd: files\ngroup: files\nshadow: files\nhosts: files\nnetworks: files\n"
                     "protocols: files\nservices: files\n",
    "hosts": f"127.0.0.1\tlocalhost {HOSTNAME}\n::1\tlocalhost ip6-localhost ip6-loopback\n",
    "hostname": f"{HOSTNAME}\n",
    "timezone": "Etc/UTC\n",
    "resolv.conf": "",
}
LINKS = {"mtab": "../proc/self/mounts", "localtime": "/usr/share/zoneinfo/Etc/UTC"}
# Copied from the host when present (links kept as links): tables and configuration that name nothing.
COPIED = ("alternatives", "ld.so.conf.d", "ssl/certs", "ssl/openssl.cnf", "os-release", "debian_version",
          "services", "protocols", "ethertypes", "mime.types", "python3", "python3.11", "python3.12",
          "python3.13")


def _copy(src: Path, dst: Path) -> None:
    if src.is_symlink():
        dst.parent.mkdir(parents=True, exist_ok=True)
        os.symlink(os.readlink(src), dst)
    elif src.is_dir():
        shutil.copytree(src, dst, symlinks=True)
    elif src.is_file():
        dst.parent.mkdir(parents=True, exist_ok=True)
        shutil.copyfile(src, dst)


def build(dest: Path, host_etc: Path = Path("/etc"), ld_dirs: tuple[str, ...] = ()) -> None:
    """Write the minimal /etc into the empty dir `dest`; `ld_dirs` are library dirs added to the
    linker's search (an interpreter's lib dir at its neutral path; the cache is built later)."""
    dest.mkdir(parents=True, exist_ok=True)
    for name, text in FILES.items():
        (dest / name).write_text(text)
    for name, target in LINKS.items():
        os.symlink(target, dest / name)
    for rel in COPIED:
        src = host_etc / rel
        if src.exists() or src.is_symlink():
            _copy(src, dest / rel)
    # The interpreter's own library first: the system may carry another build of the same one.
    conf = "".join(f"{d}\n" for d in ld_dirs) + "include /etc/ld.so.conf.d/*.conf\n"
    (dest / "ld.so.conf").write_text(conf)
    for p in [dest, *dest.rglob("*")]:
        if not p.is_symlink():
            os.chmod(p, 0o755 if p.is_dir() else 0o644)
