#!/usr/bin/env bash
# A real one-node Slurm cluster on this machine, for the `slurm` test tier (tests/runs/test_slurm.py):
# Debian's slurm-wlm, munge, and slurmdbd on MariaDB (so `sacct` answers).
#
#   bash .ci/slurm-setup.sh          install what is missing, write the configuration, start munged,
#                                    mariadbd, slurmdbd, slurmctld and slurmd; wait for the node to be idle
#   bash .ci/slurm-setup.sh stop     stop the daemons it started (by their pid files)
#
# Idempotent: a daemon already running is left as is, the configuration is rewritten only when it
# changes. Every daemon runs as root (one machine, CI only); its pid file is under /run/sdebench-slurm.
set -euo pipefail
export DEBIAN_FRONTEND=noninteractive

RUN=/run/sdebench-slurm
CONF=/etc/slurm
LOGS=/var/log/slurm
CLUSTER=sdebench
DB_PASS=sdebench-ci  # the accounting database's password (a local MariaDB socket, CI only)

# Each daemon's pid file (munged and mariadbd run as their own users and write where those may).
declare -A PIDFILE=([munged]=/run/munge/munged.pid [mariadbd]=/run/mysqld/sdebench-mariadbd.pid
                    [slurmdbd]=$RUN/slurmdbd.pid [slurmctld]=$RUN/slurmctld.pid [slurmd]=$RUN/slurmd.pid)
pid_alive() { [ -f "$1" ] && kill -0 "$(cat "$1")" 2>/dev/null; }

stop() {
    # slurmd first (it ends the running jobs' steps), then the controller, the accounting daemon, the db
    for name in slurmd slurmctld slurmdbd mariadbd munged; do
        local pf="${PIDFILE[$name]}"
        if pid_alive "$pf"; then
            local pid
            pid=$(cat "$pf")
            kill "$pid" 2>/dev/null || true
            for _ in $(seq 1 50); do kill -0 "$pid" 2>/dev/null || break; sleep 0.2; done
            kill -9 "$pid" 2>/dev/null || true
        fi
        rm -f "$pf"
    done
    echo "slurm: stopped" >&2
}

if [ "${1:-start}" = stop ]; then
    stop
    exit 0
fi

need=()
for bin in slurmctld:slurmctld slurmd:slurmd sbatch:slurm-client munged:munge slurmdbd:slurmdbd mariadbd:mariadb-server; do
    command -v "${bin%%:*}" >/dev/null 2>&1 || [ -x "/usr/sbin/${bin%%:*}" ] || need+=("${bin#*:}")
done
if [ "${#need[@]}" -gt 0 ]; then
    apt-get update -qq
    apt-get install -y -qq --no-install-recommends slurm-wlm munge slurmdbd mariadb-server >/dev/null
fi

mkdir -p "$RUN" "$CONF" "$LOGS" /var/lib/slurm/slurmctld /var/lib/slurm/slurmd /run/munge /run/mysqld
host=$(hostname -s)
cpus=$(nproc)
# Memory Slurm may hand out: the machine's, less 1 GiB for the daemons and the system.
mem=$(( $(awk '/MemTotal/ {print int($2 / 1024)}' /proc/meminfo) - 1024 ))

changed=0
write_if_changed() {  # path mode: stdin to path, only if different
    local tmp
    tmp=$(mktemp)
    cat > "$tmp"
    if ! cmp -s "$tmp" "$1"; then install -m "$2" "$tmp" "$1"; changed=1; fi
    rm -f "$tmp"
}

write_if_changed "$CONF/slurm.conf" 644 <<EOF
# Written by .ci/slurm-setup.sh: one node, this machine.
ClusterName=$CLUSTER
SlurmctldHost=$host
SlurmUser=root
SlurmdUser=root
AuthType=auth/munge
CryptoType=crypto/munge
MpiDefault=none
ProctrackType=proctrack/linuxproc
TaskPlugin=task/none
ReturnToService=2
JobRequeue=1
SlurmctldPidFile=$RUN/slurmctld.pid
SlurmdPidFile=$RUN/slurmd.pid
SlurmdSpoolDir=/var/lib/slurm/slurmd
StateSaveLocation=/var/lib/slurm/slurmctld
SlurmctldLogFile=$LOGS/slurmctld.log
SlurmdLogFile=$LOGS/slurmd.log
SchedulerType=sched/backfill
SelectType=select/cons_tres
SelectTypeParameters=CR_CPU_Memory
DefMemPerCPU=1024
AccountingStorageType=accounting_storage/slurmdbd
AccountingStorageHost=localhost
JobAcctGatherType=jobacct_gather/linux
JobAcctGatherFrequency=30
JobCompType=jobcomp/none
MaxArraySize=10001
KillWait=10
# a job past its time limit gets SIGTERM, then SIGKILL KillWait seconds later; nothing is held back
OverTimeLimit=0
SchedulerParameters=batch_sched_delay=0,sched_min_interval=100000
NodeName=$host CPUs=$cpus RealMemory=$mem State=UNKNOWN
PartitionName=debug Nodes=$host Default=YES MaxTime=INFINITE State=UP
EOF

write_if_changed "$CONF/slurmdbd.conf" 600 <<EOF
# Written by .ci/slurm-setup.sh
AuthType=auth/munge
DbdHost=localhost
SlurmUser=root
StorageType=accounting_storage/mysql
StorageHost=localhost
StorageUser=slurm
StoragePass=$DB_PASS
StorageLoc=slurm_acct_db
PidFile=$RUN/slurmdbd.pid
LogFile=$LOGS/slurmdbd.log
EOF

wait_for() {  # seconds what command...
    local secs=$1 what=$2
    shift 2
    for _ in $(seq 1 $((secs * 5))); do
        if "$@" >/dev/null 2>&1; then return 0; fi
        sleep 0.2
    done
    echo "slurm: $what did not come up in ${secs}s" >&2
    tail -n 20 "$LOGS"/*.log 2>/dev/null >&2 || true
    return 1
}

# munge: the key Debian's package made, the daemon as the munge user
[ -s /etc/munge/munge.key ] || mungekey --create --keyfile=/etc/munge/munge.key
chown munge:munge /run/munge /etc/munge/munge.key
if ! pid_alive "${PIDFILE[munged]}"; then
    runuser -u munge -- /usr/sbin/munged --pid-file="${PIDFILE[munged]}"
    wait_for 10 munged test -s "${PIDFILE[munged]}"
fi
wait_for 10 munge sh -c 'munge -n | unmunge'

# the accounting database
chown mysql:mysql /run/mysqld
if ! pid_alive "${PIDFILE[mariadbd]}"; then
    [ -d /var/lib/mysql/mysql ] || mariadb-install-db --user=mysql --datadir=/var/lib/mysql >/dev/null
    /usr/sbin/mariadbd --user=mysql --pid-file="${PIDFILE[mariadbd]}" --skip-networking=0 --bind-address=127.0.0.1 \
        >"$LOGS/mariadb.log" 2>&1 &
    wait_for 60 mariadb mariadb -e 'select 1'
fi
mariadb -e "CREATE DATABASE IF NOT EXISTS slurm_acct_db; CREATE USER IF NOT EXISTS 'slurm'@'localhost' IDENTIFIED BY '$DB_PASS';
GRANT ALL ON slurm_acct_db.* TO 'slurm'@'localhost'; FLUSH PRIVILEGES;"

if ! pid_alive "${PIDFILE[slurmdbd]}"; then
    /usr/sbin/slurmdbd
    wait_for 30 slurmdbd sacctmgr -n list cluster
fi
sacctmgr -i -n list cluster format=cluster | grep -qw "$CLUSTER" || sacctmgr -i add cluster "$CLUSTER" >/dev/null

if ! pid_alive "${PIDFILE[slurmctld]}"; then
    /usr/sbin/slurmctld
    wait_for 30 slurmctld scontrol ping
elif [ "$changed" = 1 ]; then
    scontrol reconfigure  # running daemons read the new configuration
fi
if ! pid_alive "${PIDFILE[slurmd]}"; then
    /usr/sbin/slurmd
fi
# A node left drained or down by an earlier run (or a fault test) is put back.
scontrol update nodename="$host" state=resume >/dev/null 2>&1 || true
wait_for 60 "node $host" sh -c "sinfo -h -n '$host' -o %t | grep -Eq '^(idle|mix|alloc)'"
echo "slurm: cluster $CLUSTER up: node $host, $cpus CPUs, ${mem} MB (sinfo: $(sinfo -h -o '%P %a %D %t' | head -1))" >&2
