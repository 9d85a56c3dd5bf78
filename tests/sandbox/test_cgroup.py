import subprocess

import pytest

from sdebench.sandbox import cgroup


@pytest.fixture
def group():
    g = cgroup.create(256 * 1024 * 1024, 16)
    if g is None:
        pytest.skip("no writable cgroup on this machine")
    yield g
    g.remove()


def test_limits_are_written_and_processes_drained(group):
    proc = subprocess.Popen(["sh", "-c", f"echo $$ > {group.procs_files[0]}; exec sleep 300"])
    try:
        for _ in range(100):
            if group.pids():
                break
            subprocess.run(["sleep", "0.01"], check=False)
        assert proc.pid in group.pids()
        assert group.drain()
        assert proc.wait(timeout=5) == -9
    finally:
        proc.kill()
    group.remove()
    assert all(not d.exists() for d in group.dirs)


def test_prune_removes_groups_of_dead_openers(group):
    dead = subprocess.Popen(["true"])
    dead.wait()
    stale = [d.with_name(f"{cgroup.PREFIX}{dead.pid}-feedbeef") for d in group.dirs]
    for d in stale:
        d.mkdir()
    assert cgroup.prune() >= len(stale)
    assert all(not d.exists() for d in stale)
    assert all(d.exists() for d in group.dirs)  # its opener (this process) still runs
