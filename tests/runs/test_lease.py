"""Lease claims (`claims=lease`): exclusive, renewed by their holder, taken over by exactly one taker
once stale, released by their holder; real processes on a real filesystem."""

from __future__ import annotations

import json
import os
import signal
import socket
import subprocess
import sys
import time
from pathlib import Path

import pytest

from sdebench.runs import lease, sweep
from tests.runs.test_run import env

HOLD = """
import sys, time
from pathlib import Path
from sdebench.runs import lease
got = lease.take(Path(sys.argv[1]), float(sys.argv[2]), poll_s=0.05)
print("held", flush=True)
while not got.lost:  # only the heartbeat thread renews it
    time.sleep(0.05)
print("lost", flush=True)
time.sleep(60)
"""


def hold(path: Path, lease_s: float) -> subprocess.Popen:
    p = subprocess.Popen([sys.executable, "-c", HOLD, str(path), str(lease_s)],
                         env=env(), stdout=subprocess.PIPE, text=True)
    assert p.stdout.readline().strip() == "held"
    return p


def stale_lease(path: Path, age_s: float = 1000.0) -> None:
    """A lease a holder on another machine stopped renewing `age_s` ago."""
    path.parent.mkdir(parents=True, exist_ok=True)
    body = {"host": "elsewhere", "ns": "pid:[1]", "pid": 1, "start": "1", "nonce": "old", "renewed": time.time() - age_s}
    path.write_text(json.dumps(body).ljust(lease.SIZE - 1) + "\n")


def test_a_lease_is_exclusive_and_released_by_its_holder(tmp_path):
    path = tmp_path / "ep.lease"
    holder = hold(path, 30)
    try:
        assert lease.try_take(path, 30) is None  # held by a live process
        info = lease.read(path).info
        assert info["pid"] == holder.pid and info["host"] == socket.gethostname()
    finally:
        holder.kill()
        holder.wait()
    mine = lease.try_take(path, 30)  # its holder is gone from this host: taken over at once
    assert mine is not None and lease.read(path).info["nonce"] == mine.nonce
    assert lease.try_take(path, 30) is None  # this process holds it now: still exclusive
    mine.release()
    assert not path.exists()
    again = lease.try_take(path, 30)
    assert again is not None
    again.release()
    assert not list(tmp_path.iterdir())  # no private link or temp file left behind


def test_a_holder_renews_its_lease_and_a_stopped_one_loses_it(tmp_path):
    path = tmp_path / "ep.lease"
    holder = hold(path, 2.4)
    try:
        first = lease.read(path).info["renewed"]
        time.sleep(5)  # twice the lease: only renewals (every 0.4 s) keep it
        assert lease.read(path).info["renewed"] > first
        assert lease.try_take(path, 2.4) is None
        holder.send_signal(signal.SIGSTOP)  # alive, but no longer renewing
        time.sleep(3)
        mine = lease.try_take(path, 2.4)
        assert mine is not None  # stale: taken over although its holder still exists
        holder.send_signal(signal.SIGCONT)
        assert holder.stdout.readline().strip() == "lost"  # the old holder learns it at its next renewal
        assert lease.read(path).info["nonce"] == mine.nonce  # and leaves the new lease alone
        mine.release()
    finally:
        holder.kill()
        holder.wait()


RACE = """
import sys, time
from pathlib import Path
from sdebench.runs import lease
path, go, done = Path(sys.argv[1]), float(sys.argv[2]), Path(sys.argv[3])
while time.time() < go:
    pass
got = lease.try_take(path, 5)
print("won" if got is not None else "lost", flush=True)
if got is not None:  # the winner holds it until every taker has tried
    deadline = time.time() + 60
    while not done.exists() and time.time() < deadline:
        time.sleep(0.05)
    print("kept" if got.mine() else "stolen", flush=True)
    got.release()
"""


@pytest.mark.parametrize("round_", range(6))
def test_a_stale_lease_is_taken_over_by_exactly_one_of_many_racing_processes(tmp_path, round_):
    path = tmp_path / "ep.lease"
    stale_lease(path)
    go = time.time() + 2.0  # every taker spins until then, so they try within a millisecond or so
    done = tmp_path.parent / f"{tmp_path.name}.done"
    procs = [subprocess.Popen([sys.executable, "-c", RACE, str(path), str(go), str(done)], env=env(),
                              stdout=subprocess.PIPE, text=True) for _ in range(8)]
    firsts = [p.stdout.readline().strip() for p in procs]
    done.touch()
    outs = [[first, *p.communicate(timeout=60)[0].split()] for first, p in zip(firsts, procs, strict=True)]
    assert sorted(o[0] for o in outs).count("won") == 1, outs
    assert [o[1:] for o in outs if o[0] == "won"] == [["kept"]]  # nobody replaced the winner's lease
    assert not list(tmp_path.iterdir())  # released; no taker left a link behind


def test_a_taker_that_linked_before_a_winners_rename_backs_off(tmp_path, monkeypatch):
    # The interleaving the race above hits only now and then, made to happen: taker B links the stale file,
    # then winner A (which counted two names before B linked) renames its fresh lease over the path while
    # its own link is still there, so B counts two names on the stale file: B must see the path moved on.
    path = tmp_path / "ep.lease"
    stale_lease(path)
    seen = lease.read(path)
    real_link = os.link

    def link_then_lose_the_race(src, dst):
        real_link(src, dst)
        real_link(src, tmp_path / "ep.lease.A.take")  # winner A's link, removed only after its rename
        fresh = tmp_path / "ep.lease.A.new"
        fresh.write_text(json.dumps({"nonce": "A"}))
        os.rename(fresh, path)

    monkeypatch.setattr(os, "link", link_then_lose_the_race)
    assert lease._take_over(path, seen, 5) is None
    monkeypatch.undo()
    assert lease.read(path).info == {"nonce": "A"}  # A's lease stands
    assert sorted(p.name for p in tmp_path.iterdir()) == ["ep.lease", "ep.lease.A.take"]  # B left no link


def test_a_fresh_lease_of_another_machine_is_not_taken_and_a_stale_one_is(tmp_path):
    path = tmp_path / "ep.lease"
    stale_lease(path, age_s=1.0)
    assert lease.try_take(path, 30) is None  # renewed a second ago by a holder this host cannot see
    stale_lease(path, age_s=31.0)
    mine = lease.try_take(path, 30)
    assert mine is not None
    mine.release()


def test_a_link_a_crashed_taker_left_does_not_block_takeovers_for_ever(tmp_path):
    path = tmp_path / "ep.lease"
    stale_lease(path)
    os.link(path, path.with_name(f"{path.name}.deadhost.1.abcd1234.{int(time.time()) - 100}.take"))
    assert lease.try_take(path, 30) is None  # two names besides ours: someone may be taking it over
    mine = lease.try_take(path, 30)  # the abandoned link (older than the lease) was removed
    assert mine is not None
    mine.release()
    assert not list(tmp_path.iterdir())


def test_sweep_claims_in_lease_mode(tmp_path):
    record = tmp_path / "t" / "ep.json"
    mode = sweep.ClaimMode("lease", 30)
    handle = sweep.try_claim(record, mode)
    assert handle is not None and sweep.lease_path(record).exists()
    assert sweep.try_claim(record, mode) is None
    sweep.release(handle)
    assert not sweep.lease_path(record).exists()
    with sweep.claim(record, mode=mode):
        assert sweep.lease_path(record).exists()
    assert not list(tmp_path.rglob("*.json"))  # hidden from record readers


@pytest.mark.parametrize("cfg, msg", [({"claims": "fcntl"}, "claims must be one of flock, lease, got 'fcntl'"),
                                      ({"claims": "lease", "claim_lease_s": 0}, "claim_lease_s must be")])
def test_a_bad_claim_mode_is_one_line(cfg, msg):
    with pytest.raises(ValueError, match=msg):
        sweep.ClaimMode.of(cfg["claims"], cfg.get("claim_lease_s", 60))
