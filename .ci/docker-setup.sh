#!/usr/bin/env bash
# Bring up a Docker engine and the local test image `sdebench-py:test`; safe to run repeatedly.
#
# Without a registry, the image is built from Debian packages: debootstrap a minimal bookworm
# with python3, pytest and git (exported SWE-bench and Harbor tasks clone and patch repos in it),
# then `docker import` the tree. The Debian mirror is the one apt uses.
set -euo pipefail

IMAGE="${SDEBENCH_TEST_IMAGE:-sdebench-py:test}"
SUITE="${SDEBENCH_DEBIAN_SUITE:-bookworm}"
LOG="${SDEBENCH_DOCKERD_LOG:-/tmp/sdebench-dockerd.log}"
# overlay2 where the kernel has overlayfs (a container starts in ~1 s instead of several), else vfs,
# which works on any backing filesystem. SDEBENCH_DOCKER_STORAGE forces one.
if [[ -n "${SDEBENCH_DOCKER_STORAGE:-}" ]]; then
    STORAGE="$SDEBENCH_DOCKER_STORAGE"
elif grep -qw overlay /proc/filesystems 2>/dev/null || modprobe overlay 2>/dev/null; then
    STORAGE=overlay2
else
    STORAGE=vfs
fi

need_pkgs=()
command -v dockerd >/dev/null 2>&1 || need_pkgs+=(docker.io)
command -v docker >/dev/null 2>&1 || need_pkgs+=(docker.io)
command -v debootstrap >/dev/null 2>&1 || need_pkgs+=(debootstrap)
command -v bwrap >/dev/null 2>&1 || need_pkgs+=(bubblewrap)
if ((${#need_pkgs[@]})); then
    echo "docker-setup: installing ${need_pkgs[*]}"
    export DEBIAN_FRONTEND=noninteractive
    apt-get update -qq
    apt-get install -y -qq --no-install-recommends "${need_pkgs[@]}" >/dev/null
fi

engine_up() { timeout 10 docker version --format '{{.Server.Version}}' >/dev/null 2>&1; }

start_engine() {
    echo "docker-setup: starting dockerd ($1 storage, no iptables, no bridge; log: $LOG)"
    # setsid: the engine outlives this script and is not in its process group.
    setsid dockerd --iptables=false --ip6tables=false --bridge=none --storage-driver="$1" \
        >"$LOG" 2>&1 </dev/null &
    for _ in $(seq 1 60); do
        engine_up && return 0
        kill -0 $! 2>/dev/null || return 1
        sleep 1
    done
    return 1
}

if ! engine_up; then
    if ! start_engine "$STORAGE"; then
        tail -n 5 "$LOG" >&2 || true
        if [[ "$STORAGE" != vfs ]]; then
            pkill -x -F /var/run/docker.pid dockerd 2>/dev/null || true
            sleep 2
            start_engine vfs || true
        fi
    fi
    if ! engine_up; then
        echo "docker-setup: dockerd did not answer within 60 s; last log lines:" >&2
        tail -n 20 "$LOG" >&2 || true
        exit 1
    fi
fi
echo "docker-setup: engine $(docker version --format '{{.Server.Version}}') is up"

# An image from before git was part of it is rebuilt.
if docker image inspect "$IMAGE" >/dev/null 2>&1 &&
    docker run --rm --network none "$IMAGE" git --version >/dev/null 2>&1; then
    echo "docker-setup: image $IMAGE already present"
    exit 0
fi

# The first Debian mirror apt is configured with (deb822 .sources or one-line .list files).
mirror="${SDEBENCH_DEBIAN_MIRROR:-}"
if [[ -z "$mirror" ]]; then
    mirror="$(grep -hsE '^URIs:' /etc/apt/sources.list.d/*.sources 2>/dev/null |
        awk '{print $2}' | grep -E '/debian/?$' | head -n1 || true)"
fi
if [[ -z "$mirror" ]]; then
    mirror="$(grep -hsE '^deb ' /etc/apt/sources.list /etc/apt/sources.list.d/*.list 2>/dev/null |
        awk '{for (i = 2; i <= NF; i++) if ($i ~ /^https?:/) {print $i; exit}}' | grep -E '/debian/?$' | head -n1 || true)"
fi
mirror="${mirror:-http://deb.debian.org/debian}"

root="$(mktemp -d /var/tmp/sdebench-rootfs.XXXXXX)"
chmod 755 "$root"  # mktemp makes it 0700, which would become the image's / and lock out non-root users
trap 'rm -rf "$root"' EXIT
echo "docker-setup: debootstrap $SUITE from $mirror (about a minute)"
debootstrap --variant=minbase --include=python3,python3-pytest,git "$SUITE" "$root" "$mirror" \
    >"$root.log" 2>&1 || { tail -n 30 "$root.log" >&2; rm -f "$root.log"; exit 1; }
rm -f "$root.log"
# Package caches are not needed in the image.
rm -rf "$root"/var/cache/apt/archives/*.deb "$root"/var/lib/apt/lists/*
tar -C "$root" -c . | docker import -c 'ENV PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin' -c 'CMD ["/bin/bash"]' - "$IMAGE" >/dev/null
echo "docker-setup: built $IMAGE"
