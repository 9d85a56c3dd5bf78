"""Inspect AI adapter: sdebench tasks as an Inspect `Task` (needs `pip install 'sdebench[inspect]'`).

    inspect eval sdebench/inspect/tasks.py@sdebench --model PROVIDER/MODEL \
        -T source=K -T delivery=memtool [-T family=...] [-T attempts=6] [-T sandbox=docker]

The dataset is the task records (source, delivery, bottleneck, family in each sample's metadata);
the delivery prepares the workspace on the host and copies it into Inspect's sandbox (the setup
step); the agent works there with a bash tool (plus `memory_search` under memtool); the scorer
copies the workspace back out and grades it on the host with sdebench's grader, so the hidden
tests never enter Inspect's sandbox. A failing grade's feedback (what the feedback policy allows)
is the agent's next message, up to `attempts - 1` times (the interventions).
"""

from sdebench.inspect.tasks import sdebench, sdebench_task

__all__ = ["sdebench", "sdebench_task"]
