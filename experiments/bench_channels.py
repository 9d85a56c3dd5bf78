"""What two sandboxes open at once can still tell each other, and how fast.

    PYTHONPATH=$PWD python experiments/bench_channels.py [--backends local docker unsafe_local]
                                                         [--bits 64] [--skip-inventory] [--skip-capacity]

Inventory: for every probe of `sdebench.testing.channels` (advisory locks, leases, inotify and
fanotify on shared files, atime, IPC names, sockets, keys, the hostname, the pipe inode counter,
per-user kernel quotas, page-cache residency) a sender and a receiver sandbox opened at once, from
one factory and from two (as two episodes of a sweep would), and whether the receiver tells bit 0
from bit 1 (twice for each bit); then every host reading (a file under /proc or /sys, sysinfo())
that moved while the other sandbox worked. `unsafe_local` (no isolation) is the control: there
the probes pass their bit (but the pipe quota, which spares root) and the readings move.

Capacity: the channels that stay open (CPU contention, the pipe inode counter, inode allocation
and free blocks (fstatfs: docker keeps it) of the disk both workspaces live on, page-cache
residency of a shared file) each carry a random
bit string between two sandboxes of one factory; printed: the raw rate, the bit error rate and the
capacity of a binary symmetric channel at that rate. Before the page-cache run the host evicts
the shared file's pages (as an attacker would find them: cold). On a machine shared with other
work the timing channels are noisier than on an idle one; rerun when it is quieter.
"""

from __future__ import annotations

import argparse
import os
import secrets
import sys
import tempfile
from pathlib import Path

from sdebench.sandbox import make_factory
from sdebench.sandbox.docker import unavailable_reason
from sdebench.testing import channels as ch


def factories(backend: str, image: str):
    """Two factories of `backend`: as two episodes of a sweep, each with its own view."""
    if backend == "docker":
        cfg = {"backend": "docker", "image": image, "prestart": 0}
        return make_factory(dict(cfg)), make_factory(dict(cfg))
    if backend == "local":
        # A second memory limit builds a second view: another process's sandboxes, as far as they go.
        return make_factory({"backend": "local"}), make_factory({"backend": "local", "memory_mb": 1536})
    return make_factory({"backend": backend}), make_factory({"backend": backend})


def inventory(backend: str, image: str) -> None:
    """Print which probes pass a bit, with one factory and with two."""
    f1, f2 = factories(backend, image)
    layers = ch.image_layers(image) if backend == "docker" else []
    boxes = []
    try:
        for a_f, b_f, how in ((f1, f1, "one factory"), (f1, f2, "two factories")):
            a = a_f.open(Path(tempfile.mkdtemp(prefix="chan-")))
            b = b_f.open(Path(tempfile.mkdtemp(prefix="chan-")))
            boxes += [a, b]
            print(f"\n{backend}, {how}:")
            probes = [p for p in ch.all_probes(ch.shared_files(backend))
                      if not (backend == "unsafe_local" and p.name == "hostname")]  # it would rename the host
            target = ch.page_target(backend, a)
            if target:
                probes.append(ch.page_probe(target))
            probes.append(ch.SCAN)
            try:
                # Twice for each bit, the exact probes too: a pass printed here is a reproducible one.
                results = ch.inventory(probes, a, b, rounds=2,
                                       prepare=lambda p: p.name == "page-cache" and ch.evict(p.target, layers))
            except RuntimeError as err:
                print(f"  error: {str(err)[:300]}")
                continue
            moved = ch.moved(results.pop(ch.SCAN.name))
            for name, e in results.items():
                verdict = "PASSES A BIT" if e.passes else "closed"
                print(f"  {name:32s} {verdict:13s} {e.observed[0][0][:40]!r} / {e.observed[1][0][:40]!r}")
            print(f"  host readings that moved: {len(moved)}" + "".join(f"\n    {k}" for k in sorted(moved)[:40]))
    finally:
        for box in boxes:
            box.close()
        for f in (f1, f2):
            f.cleanup()


def capacity(backend: str, image: str, n_bits: int) -> None:
    """Print rate, error rate and capacity of each open channel between two sandboxes."""
    f1, _ = factories(backend, image)
    a = f1.open(Path(tempfile.mkdtemp(prefix="chan-")))
    b = f1.open(Path(tempfile.mkdtemp(prefix="chan-")))
    target = ch.page_target(backend, a) or ""
    layers = ch.image_layers(image) if backend == "docker" else []
    print(f"\n{backend}: {n_bits} random bits per channel, two sandboxes of one factory")
    print(f"  {'channel':18s} {'raw bit/s':>10s} {'errors':>7s} {'capacity bit/s':>15s}")
    try:
        for link in ch.links(target):
            bits = [secrets.randbelow(2) for _ in range(n_bits)]
            if link.name == "page-cache":
                if not target or not ch.evict(target, layers):
                    print(f"  {link.name:18s} skipped: no large shared file to use")
                    continue
                bits = bits[: (4 << 20) // ch.STRIDE - 1]
            try:
                t = ch.transmit(link, a, b, bits)
            except RuntimeError as err:
                print(f"  {link.name:18s} error: {str(err)[:200]}")
                continue
            print(f"  {link.name:18s} {len(bits) / t.seconds:10.1f} {t.errors:7.1%} {t.capacity:15.1f}")
    finally:
        a.close()
        b.close()
        f1.cleanup()


def main() -> None:
    """Print the inventory and the capacities."""
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--backends", nargs="+", default=["unsafe_local", "local", "docker"])
    ap.add_argument("--bits", type=int, default=64)
    ap.add_argument("--docker-image", default=os.environ.get("SDEBENCH_TEST_IMAGE", "sdebench-py:test"))
    ap.add_argument("--skip-inventory", action="store_true")
    ap.add_argument("--skip-capacity", action="store_true")
    args = ap.parse_args()
    for backend in args.backends:
        if backend == "docker" and (reason := unavailable_reason(args.docker_image)):
            print(f"\ndocker: skipped ({reason})")
            continue
        if not args.skip_inventory:
            inventory(backend, args.docker_image)
        if not args.skip_capacity:
            capacity(backend, args.docker_image, args.bits)
        sys.stdout.flush()


if __name__ == "__main__":
    main()
