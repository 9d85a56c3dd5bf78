# The sdebench environment server as a Hugging Face Space (Docker SDK; `openenv push` deploys this
# repository with openenv.yaml): the OpenEnv protocol on port 8000 over the committed tasks.
#
#   docker build -t sdebench-env .
#   docker run --rm -p 8000:8000 --security-opt seccomp=unconfined --security-opt apparmor=unconfined sdebench-env
#
# Graded code runs under bubblewrap (`--sandbox local`), which needs user namespaces in the
# container (hence the security options; a host that refuses them answers each step with 503, the
# sandbox unavailable). SDEBENCH_SANDBOX=unsafe_local runs graded code unisolated beside the answer
# key: a submission could read it, so only for trusted agents.
ARG BASE_IMAGE=python:3.11-slim-bookworm
FROM ${BASE_IMAGE}

RUN apt-get update \
    && apt-get install -y --no-install-recommends git bubblewrap \
    && rm -rf /var/lib/apt/lists/* \
    && useradd -m -u 1000 user
# Spaces run the container as uid 1000.
WORKDIR /app
RUN chown user /app
USER user
ENV HOME=/home/user PATH=/app/.venv/bin:/home/user/.local/bin:$PATH PYTHONUNBUFFERED=1 \
    UV_LINK_MODE=copy UV_PYTHON_DOWNLOADS=never SDEBENCH_SANDBOX=local PORT=8000

RUN python3 -m pip install --no-cache-dir --user "uv>=0.5"
# The locked dependencies first (a layer that survives code changes); --locked fails on a stale uv.lock.
COPY --chown=user pyproject.toml uv.lock README.md ./
RUN uv sync --locked --no-dev --no-install-project
COPY --chown=user conf ./conf
COPY --chown=user sdebench ./sdebench
COPY --chown=user server ./server
COPY --chown=user tasks ./tasks
RUN uv sync --locked --no-dev --no-editable

EXPOSE 8000
HEALTHCHECK --interval=30s --timeout=5s --start-period=20s --retries=3 \
    CMD python -c "import os, urllib.request; urllib.request.urlopen(f'http://127.0.0.1:{os.environ[\"PORT\"]}/health', timeout=4)"
CMD ["sh", "-c", "exec server --host 0.0.0.0 --port \"$PORT\" --tasks-dir /app/tasks --sandbox \"$SDEBENCH_SANDBOX\""]
