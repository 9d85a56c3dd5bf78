"""What produced a sweep, for the top of its report: command, code commit, config, dates, counts.

The jobs' provenance lines (sdebench.runs.provenance) in the results dirs of the records come first;
for results written before those lines existed, a `sweep.json` beside the results (the committed
reference sweep's) or Hydra's `.hydra/overrides.yaml` / `config.yaml` in a run or multirun dir
stand in. Whatever none of them says is shown as unknown.
"""

from __future__ import annotations

import contextlib
import datetime as dt
import json
from collections.abc import Iterable
from pathlib import Path
from typing import Any

from sdebench.runs import provenance
from sdebench.runs.record import EpisodeRecord
from sdebench.runs.rules import is_error

UNKNOWN = "unknown"
MAX_LISTED = 4  # distinct commands or commits listed before "and N more"


def results_dirs(dirs: Iterable[Path], record_paths: Iterable[Path]) -> list[Path]:
    """The dirs given and the results dir of every record (`<results_dir>/<task>/<record>.json`)."""
    out = {Path(d).resolve() for d in dirs if Path(d).is_dir()}
    out |= {Path(p).resolve().parent.parent for p in record_paths}
    return sorted(out)


def _sweep_json(d: Path) -> list[dict[str, Any]]:
    """A committed sweep's `sweep.json` (command, started_utc) in `d` or beside it."""
    for p in (d / "sweep.json", d.parent / "sweep.json"):
        with contextlib.suppress(OSError, ValueError):
            data = json.loads(p.read_text())
            if isinstance(data, dict) and data.get("command"):
                return [{"command": str(data["command"]), "started_utc": data.get("started_utc")}]
    return []


def _hydra(d: Path) -> list[dict[str, Any]]:
    """Jobs described by Hydra's saved configs under a run or multirun dir `d`."""
    import yaml

    out = []
    sweep = d / "multirun.yaml"
    with contextlib.suppress(OSError, yaml.YAMLError, AttributeError, TypeError):
        task = yaml.safe_load(sweep.read_text())["hydra"]["overrides"]["task"]
        return [{"command": "sdebench run -m " + " ".join(map(str, task)), "config": {}}]
    for job in sorted(d.rglob(".hydra/overrides.yaml")):
        with contextlib.suppress(OSError, yaml.YAMLError, TypeError):
            overrides = yaml.safe_load(job.read_text()) or []
            cfg = yaml.safe_load((job.parent / "config.yaml").read_text()) or {}
            out.append({"command": "sdebench run " + " ".join(map(str, overrides)),
                        "config": {k: provenance.dotted(cfg, k) for k in provenance.KEY_VALUES}})
    return out


def jobs(dirs: Iterable[Path], record_paths: Iterable[Path], records: Iterable[EpisodeRecord]) -> list[dict[str, Any]]:
    """The provenance of the jobs that made `records`: their lines whose config_hash a record carries, else a fallback."""
    dirs = [Path(d) for d in dirs]
    hashes = {r.storage.config_hash for r in records if r.storage.config_hash}
    found = []
    for d in results_dirs(dirs, record_paths):
        found += [e for e in provenance.read(d) if not hashes or e.get("config_hash") in hashes]
    if found:
        return found
    for d in results_dirs(dirs, record_paths):
        found += _sweep_json(d)
    for d in dirs:
        if Path(d).is_dir() and not found:
            found += _hydra(Path(d))
    return found


def _distinct(values: Iterable[Any]) -> list[Any]:
    out: list[Any] = []
    for v in values:
        if v not in out:
            out.append(v)
    return out


def _listed(values: list[str]) -> str:
    if not values:
        return UNKNOWN
    more = len(values) - MAX_LISTED
    return "; ".join(values[:MAX_LISTED]) + (f"; and {more} more" if more > 0 else "")


def _commit(e: dict[str, Any]) -> str:
    if not e.get("commit"):
        return UNKNOWN
    state = {True: "uncommitted changes", False: "clean"}.get(e.get("dirty"), "dirty flag unknown")
    return f"{str(e['commit'])[:12]} ({state})"


def _config(entries: list[dict[str, Any]]) -> str:
    """Key config values: one value where every job agrees, the list where they differ (swept)."""
    keys = _distinct(k for e in entries for k in (e.get("config") or {}))
    parts = []
    for k in keys:
        values = _distinct(json.dumps((e.get("config") or {}).get(k), default=str) for e in entries)
        values = [v.strip('"') for v in values if v != "null"]
        if values:
            parts.append(f"{k}={values[0]}" if len(values) == 1 else f"{k} in {{{', '.join(values)}}}")
    return ", ".join(parts) or UNKNOWN


def _config_text(digests: list[str], entries: list[dict[str, Any]]) -> str:
    """The config digest(s) and key values, or unknown."""
    values = _config(entries)
    if not digests and values == UNKNOWN:
        return UNKNOWN
    if len(digests) > 1:  # a sweep: one per job, each in the provenance lines; the values below say how they differ
        head = f"{len(digests)} configs, one per job (digests in {provenance.FILE})"
    else:
        head = f"digest {digests[0] if digests else UNKNOWN}"
    return f"{head}; {values}"


def summary(dirs: Iterable[Path], record_paths: Iterable[Path], records: list[EpisodeRecord],
            now: dt.datetime | None = None) -> list[tuple[str, str]]:
    """(label, text) rows saying what produced `records`: command, code, config, dates, episodes, errors."""
    dirs = [Path(d) for d in dirs]
    entries = jobs(dirs, record_paths, records)
    digests = _distinct(e["config_digest"] for e in entries if e.get("config_digest"))
    started = sorted(str(e["started_utc"]) for e in entries if e.get("started_utc"))
    streams = sum(bool(r.stream and r.stream.stream_id) for r in records)
    now = now or dt.datetime.now(dt.UTC)
    return [
        ("results", ", ".join(str(d) for d in dirs)),
        ("episodes", f"{len(records)}" + (f" ({streams} of them stream episodes, tabled apart)" if streams else "")),
        ("errors", f"{sum(is_error(r) for r in records)} (no outcome: counted apart, out of every rate and mean)"),
        ("command", _listed(_distinct(str(e["command"]) for e in entries if e.get("command")))),
        ("code", _listed(_distinct(_commit(e) for e in entries if e.get("commit"))) + (
            f" (sdebench {', '.join(_distinct(str(e['version']) for e in entries if e.get('version')))})"
            if any(e.get("version") for e in entries) else "")),
        ("config", _config_text(digests, entries)),
        ("started", f"{started[0]} to {started[-1]}" if len(started) > 1 and started[0] != started[-1]
         else (started[0] if started else UNKNOWN)),
        ("report written", now.strftime("%Y-%m-%dT%H:%M:%SZ")),
    ]
