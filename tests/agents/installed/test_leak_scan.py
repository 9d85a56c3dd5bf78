"""Nothing a real agent CLI sees names its task: from the CLI's own shell tool, inside the sandbox, a
scan of its environment, every process's command line, the mount table, the hostname, its HOME and
the gateway dir (the configuration sdebench wrote for it), the workspace (`.git` included) and git's
reflog and config, for the task id, family, variant, bundle name and task-store paths; and every
request the CLI sent to the model (its system prompt, the directory listings and context it
gathered) is searched for the same names. Controls must be found, so the scan is shown to work: a
token planted in the agent's HOME, the relay's command line and the CLI's own HOME variable.

The names go into the sandbox base64-encoded, so the model requests carry them only if the scan
found them."""

from __future__ import annotations

import base64
import os
import re
import secrets

import pytest

from sdebench.tasks import repo as repo_mod
from sdebench.tasks.record import load
from sdebench.testing import testmodel
from tests.agents.installed.helpers import (
    KEY_ENV,
    PLANTED,
    ROOT,
    api_base_for,
    compose,
    episode,
    requests,
    usage,
)
from tests.agents.installed.test_episodes import AGENTS, PRESETS

pytestmark = [pytest.mark.slow, pytest.mark.agents]

TASK = "billing-rounding-v0-H"  # H under the full delivery: the whole history is in the workspace
# each CLI's own shell tool: (tool name, arguments around the command)
SHELLS = {
    "claude-code": ("Bash", lambda c: {"command": c, "description": "scan"}),
    "codex": ("exec_command", lambda c: {"cmd": c}),
    "mini-swe-agent": ("bash", lambda c: {"command": c}),
    "qwen-code": ("run_shell_command", lambda c: {"command": c}),
    "opencode": ("bash", lambda c: {"command": c, "description": "scan"}),
    "gemini-cli": ("run_shell_command", lambda c: {"command": c}),
}
SCAN = (
    "echo {b64} | base64 -d > /tmp/.sdb-pats; printf '%s' {control} > /tmp/agent/home/control.txt; "
    "{{ pwd; env; for p in /proc/[0-9]*; do tr '\\0' ' ' < $p/cmdline; echo; done; cat /proc/self/mountinfo; "
    "hostname; ls -laR /tmp/agent /repo; grep -raoFf /tmp/.sdb-pats /tmp/agent /repo \"$HOME\"; "
    "git -C /repo reflog; git -C /repo config -l; git -C /repo cat-file --batch-all-objects --batch; }} 2>&1 "
    "| grep -aoFf /tmp/.sdb-pats | sort | uniq -c | sed 's/^ */HIT /'; echo SCAN-DONE"
)


def names(task) -> list[str]:
    """What would name the task: its id, family, variant, bundle and the task store's paths."""
    return [task.id, task.family, f"-v{task.variant}-", str((ROOT / "tasks").resolve()), str(task.path.resolve()),
            "repo.bundle", "/tasks/"]


@pytest.fixture(scope="module")
def task():
    return load(ROOT / "tasks" / TASK)


# every CLI in bubblewrap; two in docker (the sandbox's view is the same for every agent)
CASES = [pytest.param(a, "local", marks=pytest.mark.bwrap) for a in sorted(SHELLS)] + [
    pytest.param(a, "docker", marks=pytest.mark.docker) for a in ("claude-code", "gemini-cli")]
# found where the scan must look: the relay's command line (processes), the CLI's environment
SEEN = ["--socket /tmp/agent/gateway/", "HOME=/tmp/agent/home"]


@pytest.mark.parametrize(("agent", "sandbox"), CASES)
def test_nothing_an_installed_agent_sees_names_its_task(agent, sandbox, task, server, tmp_path, monkeypatch, request):
    if sandbox == "docker":
        request.getfixturevalue("docker_image")
    monkeypatch.setenv(KEY_ENV, PLANTED)
    content = "\n".join(repo_mod.read_tree(repo_mod.unbundle(task.bundle, tmp_path / "probe")).values())
    pats = names(task)
    assert not [n for n in pats if n in content + task.statement], "precondition: the task's own text spells no name"
    control = "ctl" + secrets.token_hex(8)
    b64 = base64.b64encode("\n".join([*pats, control, *SEEN]).encode()).decode()
    tool, args = SHELLS[agent]
    finish = ({"tool": "bash", "arguments": {"command": "echo COMPLETE_TASK_AND_SUBMIT_FINAL_OUTPUT"}}
              if agent == "mini-swe-agent" else {"text": "done"})
    steps = [usage({"tool": tool, "arguments": args(SCAN.format(b64=b64, control=control))}, 100, 10),
             usage(finish, 100, 10)]
    server.model.reset(testmodel.parse_script(steps))
    model = {**AGENTS, **PRESETS}[agent][0]
    base = testmodel.base_url(server)
    api_base = api_base_for(model, base)
    cfg = compose(f"agent={agent}", f"model={model}", f"model.api_base={api_base}", "delivery=full",
                  f"sandbox={sandbox}", "max_interventions=0")
    if sandbox == "docker":
        cfg["sandbox"]["image"] = os.environ.get("SDEBENCH_TEST_IMAGE", "sdebench-py:test")
    rec, _ = episode(task, cfg, tmp_path)
    assert rec["error"] is None and rec["model_calls"] == 2, rec
    sent = requests(base)
    result = str(sent[1]["body"])
    assert "SCAN-DONE" in result, result[-2000:]
    hits = re.findall(r"HIT +\d+ ([^\\'\"\n]+)", result.replace("\\n", "\n"))
    assert sorted(hits) == sorted([control, *SEEN]), f"the scan found {hits} (only the controls may be found)"
    # what the CLI told the model of its surroundings (prompts, listings, context) names nothing either
    for i, r in enumerate(sent):
        body = str(r["body"]).replace(b64, "")
        leaked = [n for n in pats if n in body]
        assert not leaked, f"request {i + 1} names the task: {leaked}"
