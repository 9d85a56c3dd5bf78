"""Runs mini-swe-agent inside the sandbox: its own agent loop, bash tool and config (`mini.yaml`).

    python3 mini_driver.py --task-file T --state S --model NAME --api-base URL            (first run)
    python3 mini_driver.py --feedback-file F --state S --model NAME --api-base URL        (resume)

A resume continues the saved message history (the trajectory mini-swe-agent writes after every
step) with the feedback as the next user message, so the model sees one conversation. The key is
read from $SDEBENCH_GATEWAY_TOKEN. Exits 0 when the agent submitted, 3 for any other exit status.
Copied into the sandbox next to the relay; imports only mini-swe-agent and the standard library.
"""

import argparse
import json
import os
import sys
from pathlib import Path


def main(argv=None):
    ap = argparse.ArgumentParser()
    ap.add_argument("--task-file")
    ap.add_argument("--feedback-file")
    ap.add_argument("--state", required=True)
    ap.add_argument("--model", required=True)
    ap.add_argument("--api-base", required=True)
    ap.add_argument("--config", default="mini.yaml")
    args = ap.parse_args(argv)

    import yaml
    from minisweagent.agents.default import DefaultAgent
    from minisweagent.config import get_config_path
    from minisweagent.environments.local import LocalEnvironment
    from minisweagent.models.litellm_model import LitellmModel

    cfg = yaml.safe_load(get_config_path(args.config).read_text())
    state = Path(args.state)
    history = None
    feedback = None
    if args.feedback_file:
        history = [m for m in json.loads(state.read_text())["messages"] if m.get("role") != "exit"]
        feedback = Path(args.feedback_file).read_text()
    task = Path(args.task_file).read_text() if args.task_file else ""

    model_cfg = {k: v for k, v in (cfg.get("model") or {}).items() if k not in ("model_name", "model_kwargs")}
    model = LitellmModel(model_name="openai/" + args.model, cost_tracking="ignore_errors",
                         model_kwargs={"api_base": args.api_base, "api_key": os.environ["SDEBENCH_GATEWAY_TOKEN"],
                                       "drop_params": True},
                         **model_cfg)
    env = LocalEnvironment(**{**(cfg.get("environment") or {}), "cwd": os.getcwd()})

    class Resuming(DefaultAgent):
        """The first messages a run adds are replaced by the saved history plus the feedback."""

        def add_messages(self, *messages):
            nonlocal history
            if history is not None:
                self.messages = list(history)
                history = None
                return super().add_messages(self.model.format_message(role="user", content=feedback))
            return super().add_messages(*messages)

    # limits are the gateway's (it refuses the call that would cross one)
    agent_cfg = {**(cfg.get("agent") or {}), "step_limit": 0, "cost_limit": 0, "output_path": state}
    agent = Resuming(model, env, **agent_cfg)
    result = agent.run(task)
    status = result.get("exit_status", "")
    print(json.dumps({"exit_status": status, "submission": result.get("submission", "")[:2000]}))
    if status != "Submitted":
        print("mini-swe-agent ended with exit status {}: {}".format(status, str(agent.messages[-1].get("content"))[:300]),
              file=sys.stderr)
        return 3
    return 0


if __name__ == "__main__":
    sys.exit(main())
