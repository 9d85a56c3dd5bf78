"""Run the Inspect adapter offline with a scripted `mockllm` (executed by tests/interop/test_inspect.py
inside the Inspect virtualenv): it fixes one task with its oracle patch and only submits on the other.

    python inspect_driver.py TASKS_DIR LOG_DIR GOOD_ID BAD_ID ATTEMPTS

Every scripted output carries its token usage, so mockllm never counts tokens (which would fetch
a tokenizer). Prints the path of the eval log.
"""

import sys
from pathlib import Path

from inspect_ai import eval as inspect_eval
from inspect_ai.model import ModelOutput, ModelUsage, get_model

from sdebench.inspect import sdebench_task
from sdebench.tasks.record import load


def main() -> int:
    tasks_dir, log_dir, good, bad, attempts = sys.argv[1:6]
    good_task = load(Path(tasks_dir) / good)
    patch = good_task.oracle_patch

    def out(o: ModelOutput) -> ModelOutput:
        o.usage = ModelUsage(input_tokens=10, output_tokens=5, total_tokens=15)
        return o

    def script(messages, tools, tool_choice, config) -> ModelOutput:
        first = next(m.text for m in messages if m.role == "user")
        turn = sum(m.role == "assistant" for m in messages)
        if good_task.statement.strip() in first:
            if turn == 0:  # look for anything hidden in the workspace
                return out(ModelOutput.for_tool_call("mockllm", "bash", {"command": "find . -name 'test_hidden*' | wc -l"}))
            if turn == 1:
                cmd = f"cd repo && git apply <<'SDEBENCH_EOF'\n{patch}SDEBENCH_EOF\ngit status --short"
                return out(ModelOutput.for_tool_call("mockllm", "bash", {"command": cmd}))
        return out(ModelOutput.for_tool_call("mockllm", "submit", {"answer": "done"}))

    task = sdebench_task(tasks_dir, delivery="squashed", ids=f"{good},{bad}", attempts=int(attempts),
                         sandbox_kind="local", grader_sandbox="unsafe_local")
    model = get_model("mockllm/model", custom_outputs=script)
    logs = inspect_eval(task, model=model, log_dir=log_dir, log_format="json", display="none", max_samples=1)
    print(logs[0].location)
    if logs[0].status != "success":
        print(f"eval {logs[0].status}: {logs[0].error}", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
