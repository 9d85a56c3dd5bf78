"""What keeps a sweep safe and honest: per-episode claims, workers that die with their sweep, the
problems a sweep reports in its exit status, and the command-line wrapper of the Hydra apps.

- **Claims.** Before an episode runs, its process takes an exclusive `flock` on a claim file beside
  the record (`.<record>.claim`). The kernel drops the lock when the holder dies, however it dies,
  so no episode runs twice at once and no trajectory gets two writers. With `claims=lease` the claim
  is instead a lease file its holder renews (`.<record>.lease`, sdebench.runs.lease), for shared
  filesystems whose `flock` is node-local; a lease whose holder is gone is taken over. A job takes the next episode
  nobody holds and comes back to the held ones at the end (sdebench.runs.pool), waiting then for
  their records: two sweeps on one `results_dir` share the work instead of queueing on each other.
- **Workers die with the sweep.** The wrapper puts its pid in `SDEBENCH_SWEEP_PID`; a job running
  in a worker process of that sweep (joblib, submitit local) starts a watchdog thread that kills
  the worker, and the processes it started, as soon as the sweep process is gone (`kill -9`).
- **Problems.** Each job appends its problems (an episode that errored, a failed job, a filter
  that matched no task, a malformed task skipped) as JSON lines to the file named by
  `SDEBENCH_STATUS_FILE`; the wrapper prints one line per kind and exits 1 if there were any.
- **The wrapper** checks the command line before Hydra sees it (an unknown group option or key is
  one line naming the choices, not a Hydra error dump), ends Ctrl-C with one line (exit 130;
  episodes remove their temp dirs on the way out), and turns the problems into the exit status.
"""

from __future__ import annotations

import contextlib
import fcntl
import json
import os
import re
import shlex
import signal
import socket
import sys
import tempfile
import threading
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

from sdebench.errors import RunError
from sdebench.runs import lease as lease_mod
from sdebench.runs.lease import CLAIM_MODES, LEASE_S, ClaimMode, Lease  # noqa: F401 - re-exported

SWEEP_PID_ENV = "SDEBENCH_SWEEP_PID"
STATUS_ENV = "SDEBENCH_STATUS_FILE"
EXIT_PROBLEMS, EXIT_BAD_INPUT, EXIT_INTERRUPTED = 1, 2, 130
# Keys taking comma lists as one value (filters); in a single run `select.family=a,b` means the list.
LIST_KEYS = ("source", "select.family", "select.variant", "select.ids", "select.bottleneck", "select.competency",
             "select.tier")


# --- claims ----------------------------------------------------------------------------------------


def claim_path(record: Path) -> Path:
    """The claim file of the episode whose record is `record` (hidden, so record readers skip it)."""
    return record.with_name(f".{record.name}.claim")


def lease_path(record: Path) -> Path:
    """The lease file of the episode whose record is `record` under `claims=lease` (hidden too)."""
    return record.with_name(f".{record.name}.lease")


FLOCK = ClaimMode()
Handle = int | Lease  # a held claim: the descriptor holding the flock, or the lease


def try_claim(record: Path, mode: ClaimMode = FLOCK) -> Handle | None:
    """Take the exclusive claim on one episode if nobody holds it: the handle holding it, else None.

    Release it with `release(handle)`. Under `flock` the lock is on an open file: it dies with its
    holder, so a killed sweep never leaves an episode claimed; the claim file is never removed
    (removing it while another process waits on it would let a third one lock a new file). Under
    `lease` a stale lease is taken over (sdebench.runs.lease).
    """
    if mode.kind == "lease":
        return lease_mod.try_take(lease_path(record), mode.lease_s)
    path = claim_path(record)
    path.parent.mkdir(parents=True, exist_ok=True)
    fd = os.open(path, os.O_RDWR | os.O_CREAT, 0o644)
    try:
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except BlockingIOError:
        os.close(fd)
        return None
    except OSError as e:  # ENOLCK, ENOSYS: a filesystem without (cluster-wide) flock
        os.close(fd)
        raise RunError(f"cannot lock {path}: {e.strerror}; results_dir must be on a filesystem whose flock works "
                       "across the machines of a sweep, or use claims=lease "
                       "(docs/experiments.md#shared-filesystems)") from None
    except BaseException:
        os.close(fd)
        raise
    _mark(fd)
    return fd


def _mark(fd: int) -> None:
    """Write who holds a claim into its file (for people reading it; the lock is what counts)."""
    os.ftruncate(fd, 0)
    os.write(fd, f"{socket.gethostname()} {os.getpid()}\n".encode())


def release(handle: Handle) -> None:
    """Release a claim taken by `try_claim` or `claim`."""
    if isinstance(handle, Lease):
        handle.release()
    else:
        os.close(handle)  # releases the lock


@contextlib.contextmanager
def claim(record: Path, on_wait: Callable[[], None] | None = None, mode: ClaimMode = FLOCK) -> Iterator[None]:
    """Hold the exclusive claim on one episode; if another process holds it, call `on_wait` and wait."""
    handle = try_claim(record, mode)
    if handle is None:
        if on_wait is not None:
            on_wait()
        if mode.kind == "lease":
            handle = lease_mod.take(lease_path(record), mode.lease_s)
        else:
            fd = os.open(claim_path(record), os.O_RDWR | os.O_CREAT, 0o644)
            try:
                fcntl.flock(fd, fcntl.LOCK_EX)
                _mark(fd)
            except BaseException:
                os.close(fd)
                raise
            handle = fd
    try:
        yield
    finally:
        release(handle)


# --- workers die with the sweep ------------------------------------------------------------------
def _descendants(pid: int) -> list[int]:
    out: list[int] = []
    try:
        tasks = os.listdir(f"/proc/{pid}/task")
    except OSError:
        return out
    for tid in tasks:
        try:
            children = Path(f"/proc/{pid}/task/{tid}/children").read_text().split()
        except OSError:
            continue
        for c in map(int, children):
            out += [c, *_descendants(c)]
    return out


def kill_tree_and_exit() -> None:
    """SIGKILL every process this one started, then this one."""
    for pid in reversed(_descendants(os.getpid())):
        with contextlib.suppress(OSError):
            os.kill(pid, signal.SIGKILL)
    os.kill(os.getpid(), signal.SIGKILL)


def die_with_sweep(poll_s: float = 0.5) -> bool:
    """In a worker process of a sweep, start the watchdog that kills it when the sweep dies; True if started."""
    raw = os.environ.get(SWEEP_PID_ENV, "")
    if not raw.isdigit() or int(raw) == os.getpid() or os.getppid() != int(raw):
        return False  # the sweep process itself, or not a direct worker of it
    if any(t.name == "sdebench-sweep-watchdog" for t in threading.enumerate()):
        return True  # joblib reuses workers: one watchdog per process

    def watch(parent: int) -> None:
        while os.getppid() == parent:
            time.sleep(poll_s)
        kill_tree_and_exit()

    threading.Thread(target=watch, args=(int(raw),), name="sdebench-sweep-watchdog", daemon=True).start()
    return True


# --- problems ----------------------------------------------------------------------------------------
PROBLEM_TEXT = {
    "episode_error": "{n} episode(s) ended in an error (stop_reason=error; see the records' `error`)",
    "job_failed": "{n} job(s) failed: {detail}",
    "no_match": "{n} job(s) matched no task: {detail}",
    "malformed_task": "{n} task dir(s) skipped as malformed: {detail}",
    "budget": "{n} episode(s) not run: the sweep budget is spent ({detail})",
}


def report(kind: str, detail: str = "", n: int = 1) -> None:
    """Record one problem of this job for the sweep's exit status (a no-op outside the wrapper)."""
    path = os.environ.get(STATUS_ENV)
    if not path:
        return
    line = json.dumps({"kind": kind, "n": n, "detail": detail}) + "\n"
    with contextlib.suppress(OSError), open(path, "a") as f:
        f.write(line)  # one short write in append mode: lines from parallel jobs never interleave


def read_problems(path: Path) -> list[str]:
    """One line per kind of problem recorded in the status file `path`."""
    by_kind: dict[str, tuple[int, list[str]]] = {}
    try:
        lines = Path(path).read_text().splitlines()
    except OSError:
        return []
    for line in lines:
        try:
            p = json.loads(line)
        except ValueError:
            continue
        n, details = by_kind.get(p["kind"], (0, []))
        if p.get("detail") and p["detail"] not in details:
            details.append(p["detail"])
        by_kind[p["kind"]] = (n + int(p.get("n", 1)), details)
    out = []
    for kind in PROBLEM_TEXT:
        if kind in by_kind:
            n, details = by_kind[kind]
            shown = "; ".join(details[:3]) + (f"; and {len(details) - 3} more" if len(details) > 3 else "")
            out.append(PROBLEM_TEXT[kind].format(n=n, detail=shown or "-"))
    return out


# --- the command line --------------------------------------------------------------------------
class UsageError(RunError, ValueError):
    """A command-line override that names no option or key; the message is one line."""


def group_options(conf_dir: Path, group: str) -> list[str]:
    """The options of a config group (its yaml files), or [] if `group` is not a group."""
    d = Path(conf_dir) / group
    return sorted(p.stem for p in d.glob("*.yaml")) if d.is_dir() else []


def check_overrides(args: list[str], conf_dir: str, config_name: str) -> list[str]:
    """The Hydra overrides in `args`, checked (UsageError) and with comma-list filters quoted in a single run."""
    from hydra import compose, initialize_config_dir
    from hydra.core.global_hydra import GlobalHydra
    from hydra.core.override_parser.overrides_parser import OverridesParser
    from hydra.errors import HydraException
    from omegaconf.errors import OmegaConfBaseException

    multirun = any(a in ("-m", "--multirun") for a in args)
    overrides = [a for a in args if not a.startswith("-")]
    if not multirun:
        overrides = [_quote_list(a) for a in overrides]
    try:
        parsed = OverridesParser.create().parse_overrides(overrides)
    except HydraException as e:
        raise UsageError(str(e).splitlines()[0]) from None
    roots = [Path(conf_dir)]
    for o in parsed:  # extra config dirs (hydra.searchpath=[file://...]) add options
        if o.key_or_group == "hydra.searchpath":
            roots += [Path(u[len("file://"):]) for u in re.findall(r"file://[^,\]\s'\"]+", o.input_line)]
    first = []
    for o in parsed:
        key = o.key_or_group
        values = list(o.sweep_string_iterator()) if o.is_sweep_override() else [o.get_value_element_as_str()]
        if not o.is_hydra_override() and not o.is_add() and not o.is_delete() and "/" not in key:
            options = sorted({opt for root in roots for opt in group_options(root, key)})
            bad = [v for v in values if options and v not in options and v != "null"]
            if bad:
                raise UsageError(f"{key}={','.join(bad)}: no such {key} (choose {', '.join(options)})")
        first.append(f"{o.get_key_element()}={values[0]}" if o.is_sweep_override() and values else o.input_line)
    composable = [f for f in first if f.startswith("hydra.searchpath") or not f.lstrip("+~").startswith("hydra")]
    # the options chosen, without any value set: what a misspelt key is compared with when composing fails
    groups = [f for f in composable if f.startswith("hydra.searchpath")
              or ("." not in f.partition("=")[0] and not f.startswith(("+", "~"))
                  and any(group_options(r, f.partition("=")[0]) for r in roots))]
    added = [o.key_or_group for o in parsed if o.is_add() and not o.is_hydra_override()  # keys, not group choices
             and "/" not in o.key_or_group and not any(group_options(r, o.key_or_group) for r in roots)]
    known: set[str] = set()
    GlobalHydra.instance().clear()
    try:
        with initialize_config_dir(config_dir=conf_dir, version_base="1.3"):
            try:
                cfg = compose(config_name, overrides=composable)
            except (HydraException, OmegaConfBaseException):
                with contextlib.suppress(HydraException, OmegaConfBaseException):
                    known = _keys(compose(config_name, overrides=groups))
                raise
            # `+` adds past the schema (Hydra opens it for an add): the keys the config has without the adds
            known = {k for k in _keys(cfg) if not any(k == a or k.startswith(a + ".") for a in added)}
            known |= {f"stream.{k}" for k in STREAM_KEYS} if "stream" in cfg else set()
            for key in added:  # only a section read by a component of the user's own may grow
                if key not in known and not _open(key, cfg, known):
                    raise UsageError(_unknown(key, known))
    except (HydraException, OmegaConfBaseException) as e:
        raise UsageError(_one_line(e, known)) from None
    finally:
        GlobalHydra.instance().clear()
    return [a if a.startswith("-") or multirun else _quote_list(a) for a in args]


# Sections a component reads as its own: a `package.module:Class` of the user's may take keys of its own,
# added with `+agent.KEY=VALUE`; the section's owner is named by the key here (the model section is read
# by the agent). Every other key is fixed by the schema (sdebench.runs.schema) or by the option's yaml.
OPEN_SECTIONS = {"agent": "agent.name", "model": "agent.name", "delivery": "delivery.name",
                 "sandbox": "sandbox.backend"}

# The keys a stream reads (the fields of sdebench.runs.stream.StreamSpec, which imports this module; a test
# keeps the two equal); a stream yaml may leave some out.
STREAM_KEYS = ("name", "tasks", "shuffle", "shuffle_seed", "carry", "fresh")


def _open(key: str, cfg: Any, known: set[str]) -> bool:
    """Whether `+key` may add a key the config lacks: in a section that a component of the user's own
    (`module:Class`) reads, or in a map its yaml leaves empty for free-form entries (`agent.env`,
    `model.extra`). Our own components read only the keys their yaml lists, so nothing else is open."""
    from omegaconf import DictConfig, OmegaConf

    owner = OPEN_SECTIONS.get(key.split(".")[0])
    if owner is not None and ":" in str(OmegaConf.select(cfg, owner, default="")):
        return True
    parent = key.rpartition(".")[0]
    return ("." in parent and parent in known and not any(k.startswith(parent + ".") for k in known)
            and isinstance(OmegaConf.select(cfg, parent, default=None), DictConfig))


def _keys(cfg: Any, prefix: str = "") -> set[str]:
    """Every dotted key of a composed config (a section and its leaves), hydra's own left out."""
    from omegaconf import DictConfig

    out: set[str] = set()
    for k in cfg:
        if not prefix and k == "hydra":
            continue
        full = f"{prefix}{k}"
        out.add(full)
        v = cfg._get_node(k)
        if isinstance(v, DictConfig) and not v._is_missing() and not v._is_none():
            out |= _keys(v, full + ".")
    return out


def _unknown(key: str, known: set[str]) -> str:
    """One line for a key the config does not have, with the closest known key when there is one.

    Under a section the config has, only that section's keys are candidates (compared by name), so a
    misspelt `select.famly` suggests `select.family`, never another section's key; `+` is never
    suggested, since adding a key the schema lacks is refused anyway.
    """
    import difflib

    parent, _, leaf = key.rpartition(".")
    siblings = sorted(k.rpartition(".")[2] for k in known if k.rpartition(".")[0] == parent) if parent else []
    if siblings:
        close = difflib.get_close_matches(leaf, siblings, n=1, cutoff=0.6)
        if close:
            return f"{key}: no such config key; did you mean {parent}.{close[0]}?"
        return f"{key}: no such config key (keys of {parent}: {', '.join(siblings)})"
    close = difflib.get_close_matches(key, sorted(known), n=1, cutoff=0.6)
    if close:
        return f"{key}: no such config key; did you mean {close[0]}?"
    return f"{key}: no such config key"


def _quote_list(arg: str) -> str:
    key, sep, value = arg.partition("=")
    if sep and key in LIST_KEYS and "," in value and not value.startswith(("'", '"', "[")):
        return f"{key}='{value}'"
    return arg


def _one_line(e: Exception, known: set[str]) -> str:
    lines = [ln.strip() for ln in str(e).splitlines() if ln.strip()]
    head = lines[0] if lines else str(e)
    if ("Could not override" in head and len(lines) > 1) or head.startswith("Could not delete from config"):
        return _unknown(head.split("'")[1] if "'" in head else "?", known)
    if m := re.match(r"Could not append to config\. An item is already at '(.*)'", head):
        return f"{m.group(1)} is already a config key: set it without +"
    cause = e.__cause__
    if head.startswith("Error merging override") and cause is not None:  # the schema refused a value
        override = head.removeprefix("Error merging override ")
        why = str(cause).splitlines()[0]
        m = re.match(r"Value '(.*)' of type '\w+' could not be converted to (\w+)", why)
        if m and m.group(2) in KINDS:
            return f"{override.partition('=')[0]} must be {KINDS[m.group(2)]}, got {m.group(1)!r}"
        if m := re.match(r"Value '(.*)' is not a valid bool", why):
            return f"{override.partition('=')[0]} must be true or false, got {m.group(1)!r}"
        return f"{override}: {why}"
    return head


KINDS = {"Integer": "a whole number", "Float": "a number", "Boolean": "true or false", "String": "text"}


STATUS_DIR_ENV = "SDEBENCH_STATUS_DIR"
CLUSTER_LAUNCHERS = ("slurm", "submitit_slurm")


def status_dir(args: list[str]) -> str | None:
    """Where the problems file goes: a dir every job can write (None: the system's temp dir).

    Jobs on a cluster's other nodes cannot see this machine's /tmp: with a Slurm launcher the file
    goes in the current directory (where the sweep is submitted from: a shared filesystem on a
    cluster), or in `$SDEBENCH_STATUS_DIR`.
    """
    if os.environ.get(STATUS_DIR_ENV):
        return os.environ[STATUS_DIR_ENV]
    on_cluster = any(a.partition("=")[2] in CLUSTER_LAUNCHERS for a in args if a.startswith("hydra/launcher="))
    return os.getcwd() if on_cluster else None


def cli(app: Callable[[], Any], prog: str, conf_dir: str, config_name: str, argv: list[str] | None = None) -> int:
    """Run the Hydra `app` for `prog` with `argv`: checked overrides, one-line errors, problems as exit status."""
    args = list(sys.argv[1:] if argv is None else argv)
    if not any(a in ("-h", "--help", "--hydra-help", "--info", "-c", "--cfg", "--shell-completion") or a.startswith("--info")
               for a in args):
        try:
            args = check_overrides(args, conf_dir, config_name)
        except UsageError as e:
            print(f"{prog}: error: {e}", file=sys.stderr, flush=True)
            return EXIT_BAD_INPUT
    fd, status = tempfile.mkstemp(prefix=".sdebench-status-", suffix=".jsonl", dir=status_dir(args))
    os.close(fd)
    from sdebench.runs.budget import SWEEP_ID_ENV, new_sweep_id
    from sdebench.runs.provenance import COMMAND_ENV

    saved_env = {k: os.environ.get(k) for k in (SWEEP_PID_ENV, STATUS_ENV, SWEEP_ID_ENV, COMMAND_ENV)}
    os.environ[SWEEP_PID_ENV], os.environ[STATUS_ENV] = str(os.getpid()), status
    os.environ[COMMAND_ENV] = f"{prog} {shlex.join(sys.argv[1:] if argv is None else argv)}".strip()  # as typed
    os.environ[SWEEP_ID_ENV] = new_sweep_id()  # the budget ledger all jobs of this sweep share
    saved_argv = sys.argv
    sys.argv = [prog, *args]
    code = 0
    try:
        app()
    except KeyboardInterrupt:
        print(f"\n{prog}: interrupted; finished episodes are kept, the running ones will run again", file=sys.stderr, flush=True)
        code = EXIT_INTERRUPTED
    except SystemExit as e:
        code = e.code if isinstance(e.code, int) else (0 if e.code is None else 1)
    finally:
        sys.argv = saved_argv
        for k, v in saved_env.items():
            if v is None:
                os.environ.pop(k, None)
            else:
                os.environ[k] = v
    problems = read_problems(Path(status))
    Path(status).unlink(missing_ok=True)
    for p in problems:
        print(f"{prog}: {p}", file=sys.stderr, flush=True)
    if code == 0 and problems:
        code = EXIT_PROBLEMS
    return code
