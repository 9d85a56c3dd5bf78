"""`python -m sdebench.generate`: run the family generators, validate every task, write tasks/.

A task that breaks a generation rule is not written; the message names the task and the rule.
`--check` regenerates into a temporary dir and compares byte for byte with the tasks dir.
`--fresh SEED --out DIR` emits a private set: fresh facts, names and draws from a secret seed
(`sdebench.generation.fresh`, docs/fresh.md), validated by the same rules.
"""

from __future__ import annotations

import argparse
import filecmp
import importlib.util
import shutil
import sys
import tempfile
import time
from concurrent.futures import ProcessPoolExecutor, ThreadPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path

from sdebench import GENERATORS_DIR
from sdebench.errors import GenerationError
from sdebench.generation import validate
from sdebench.generation.bytecode import bytecode_files
from sdebench.generation.fresh import FreshFamily, SeedError, SetKey, derive, new_seed, read_seed
from sdebench.generation.observe import (
    ObservationTests,
    TransformError,
    run_observations,
    time_limit,
    write_task_observations,
    written_path,
)
from sdebench.generation.probe import DEFAULT_SUBMITS, ProbeResult, declares_space, probe_family
from sdebench.generation.readers import READERS, VIEWS, Judged, judge
from sdebench.generation.scale import LEVELS, SCALE_HELP, Scale, enlarge, parse_scale
from sdebench.generation.spec import Generator, TaskSpec, visible_files
from sdebench.grading import rules
from sdebench.grading.testrun import TestRun, module_names
from sdebench.sandbox import make_factory
from sdebench.sandbox.scratch import scratch_dir
from sdebench.tasks import repo
from sdebench.tasks.artifacts import RECALL, SOURCES
from sdebench.tasks.record import (
    CONVENTIONAL_PATCH,
    ORACLE_PATCH,
    Task,
    Tests,
    save_meta,
)
from sdebench.tasks.selection import comma_list

DEFAULT_GENERATORS = Path(GENERATORS_DIR)  # the families shipped in the package
DEFAULT_OUT = Path("tasks")


class GeneratorError(GenerationError, RuntimeError):
    """A generator module cannot be loaded or is not a valid family."""


# --- discovery --------------------------------------------------------------------------------


def load_generator(path: Path) -> Generator:
    """Import one generator module by path and return its GENERATOR."""
    name = f"sdebench_family_{path.stem}"
    try:
        spec = importlib.util.spec_from_file_location(name, path)
        if spec is None or spec.loader is None:
            raise GeneratorError(f"{path}: not a Python module")
        module = importlib.util.module_from_spec(spec)
        # dataclasses and pickling look the module up by name while it executes.
        sys.modules[name] = module
        spec.loader.exec_module(module)
    except GeneratorError:
        raise
    except Exception as e:  # noqa: BLE001 - a broken generator is reported, not fatal
        raise GeneratorError(f"{path}: import failed: {type(e).__name__}: {e}") from None
    gen = getattr(module, "GENERATOR", None)
    if gen is None:
        raise GeneratorError(f"{path}: defines no GENERATOR")
    if not isinstance(gen, Generator):
        raise GeneratorError(f"{path}: GENERATOR lacks family/bottleneck/variants/description/build")
    return gen


def discover(generators_dir: Path) -> tuple[dict[str, Path], list[str]]:
    """Family name -> module path for every generator file, and the load errors met."""
    found: dict[str, Path] = {}
    errors = []
    if not generators_dir.is_dir():
        return found, [f"{generators_dir}: generators dir does not exist (pass --generators DIR, a dir of family modules)"]
    for path in sorted(generators_dir.glob("*.py")):
        if path.name.startswith("_"):
            continue
        try:
            gen = load_generator(path)
        except GeneratorError as e:
            errors.append(str(e))
            continue
        if gen.family in found:
            errors.append(f"{path}: family {gen.family!r} is also defined in {found[gen.family]}")
            continue
        found[gen.family] = path
    return found, errors


# --- one task -----------------------------------------------------------------------------------


@dataclass
class TaskOutcome:
    """What generating one task gave."""

    task_id: str
    violations: list[str] = field(default_factory=list)
    seconds: float = 0.0
    written: bool = False
    competency: str = RECALL
    source: str = ""
    readers: list[Judged] = field(default_factory=list)  # the naive readers' picks per view (rule 8)


def is_test_file(path: str) -> bool:
    """Whether a repo path is a test file (or conftest) rather than code (sdebench.grading.rules)."""
    return rules.is_test_path(path) or path.rsplit("/", 1)[-1] == "conftest.py"


def _write_tree(root: Path, files: dict[str, str]) -> None:
    for rel, content in files.items():
        p = root / rel
        p.parent.mkdir(parents=True, exist_ok=True)
        p.write_text(content)


def run_all(spec: TaskSpec, head: dict[str, str], work: Path, sandbox_cfg: dict,
            tests: ObservationTests) -> dict[str, TestRun]:
    """The three runs the rules need (see validate.check_runs), in parallel: HEAD, the oracle fix
    and the conventional fix with the observation tests; the oracle's also runs the authored
    held-out tests as written, after the observation tests. The modules of each tree are compiled
    once for all three (checked bytecode: what runs is each tree's own source)."""
    factory = make_factory(sandbox_cfg)
    modules = module_names(sorted(spec.oracle_files))
    trees = {
        "head": head,
        "oracle": {**head, **spec.oracle_files},
        "conventional": {**head, **spec.conventional_files},
    }
    written = {written_path(p): src for p, src in spec.hidden_tests.items()}
    overlay = tests.overlay()
    # Before the threads, so each source is compiled once.
    compiled = {n: bytecode_files({**t, **overlay, **(written if n == "oracle" else {})}, modules)
                for n, t in trees.items()}

    def observed(name: str) -> TestRun:
        return run_observations(factory, work / name / "repo", trees[name], tests, modules,
                                after=written if name == "oracle" else None, bytecode=compiled[name])

    with ThreadPoolExecutor(3) as pool:
        futures = {n: pool.submit(observed, n) for n in trees}
        return {n: f.result() for n, f in futures.items()}


def _space_size(gen_path: Path) -> int:
    """The number of candidates a family's probe runs (0: none, or the generator does not load)."""
    try:
        gen = load_generator(gen_path)
        return gen.space.size if declares_space(gen) else 0
    except Exception:  # noqa: BLE001 - a broken generator is reported by its probe and build
        return 0


def family_of(gen_path: Path, fresh: SetKey | None = None):
    """The family a module defines, seen through `fresh` (a private set's key) when given."""
    gen = load_generator(gen_path)
    return FreshFamily(gen, fresh) if fresh is not None else gen


def probe_variant(gen_path: Path, variant: int, sandbox_cfg: dict, fresh: SetKey | None = None,
                  scale: Scale = LEVELS["default"]) -> ProbeResult | None:
    """Rule-7 figures of one family variant at `scale` (None: the family declares no fact space);
    never raises."""
    gen = load_generator(gen_path)
    if not declares_space(gen):
        return None
    try:
        gen = family_of(gen_path, fresh)
    except Exception as e:  # noqa: BLE001 - a family that cannot be seen fresh is a reported failure
        return ProbeResult(gen.family, variant, 0, 0, DEFAULT_SUBMITS, "?", problems=[f"{type(e).__name__}: {e}"])
    try:
        return probe_family(gen, variant, sandbox_cfg, scale=scale)
    except Exception as e:  # noqa: BLE001 - a crashing renderer is a reported failure
        return ProbeResult(gen.family, variant, 0, 0, DEFAULT_SUBMITS, "?",
                           problems=[f"the fact space cannot be probed: {type(e).__name__}: {e}"])


def shape_variant(gen_path: Path, variant: int, fresh: SetKey | None = None,
                  scale: Scale = LEVELS["default"]) -> list[validate.Violation]:
    """The shape violations of one variant across all its placements (validate.check_shape), as
    built at `scale` (and seen through `fresh`); never raises."""
    try:
        gen = family_of(gen_path, fresh)
        specs = {s: enlarge(gen.build(variant, s), scale, gen) for s in SOURCES}
    except Exception as e:  # noqa: BLE001 - a placement that does not build leaves the shape unchecked
        return [validate.Violation(validate.SHAPE, f"{gen_path.stem} v{variant}: not checked, a placement does "
                                                   f"not build ({type(e).__name__}: {e})")]
    return validate.check_shape(specs)


def build_task(gen_path: Path, variant: int, source: str, out_dir: Path, sandbox_cfg: dict,
               probed: ProbeResult | None = None, *, fresh: SetKey | None = None,
               scale: Scale = LEVELS["default"], shape: list[validate.Violation] | None = None) -> TaskOutcome:
    """Build, validate and (if every rule holds) write one task; never raises. `probed` holds the
    variant's rule-7 figures (the same for every placement: code and tests do not depend on it) and
    `shape` its placements' shape violations (`shape_variant`); `fresh` is a private set's key;
    `scale` grows the task's memory (sdebench.generation.scale)."""
    start = time.monotonic()
    gen = load_generator(gen_path)
    tid = f"{gen.family}-v{variant}-{source}"
    outcome = TaskOutcome(tid)
    try:
        gen = family_of(gen_path, fresh)
        spec = enlarge(gen.build(variant, source), scale, gen)
        outcome.competency, outcome.source = spec.competency, source
        violations = validate.check_structure(spec, gen.family, variant, source)
        if probed is not None:
            violations += [validate.Violation(7, v) for v in probed.violations()]
        violations += shape or []
        violations += validate.check_determinism(spec, enlarge(gen.build(variant, source), scale, gen))
        if not violations:
            violations += validate.check_placement(spec)
            violations += validate.check_no_future_leak(spec)
        if not violations and spec.competency != RECALL and (probed is None or probed.readers is None):
            violations.append(validate.Violation(8, "a hard-tier family must declare its fact space (the readers "
                                                    "pick among its candidates)"))
        if not violations:
            with scratch_dir(f"sdebench-gen-{tid}-") as tmp:
                violations += _build_and_write(spec, Path(tmp), out_dir, sandbox_cfg,
                                               probed.readers if probed is not None else None, outcome)
        outcome.violations = [str(v) for v in violations]
        outcome.written = not violations
    except Exception as e:  # noqa: BLE001 - a crashing generator is a reported failure
        outcome.violations = [f"generator crashed: {type(e).__name__}: {e}"]
    outcome.seconds = time.monotonic() - start
    return outcome


def _build_and_write(spec: TaskSpec, tmp: Path, out_dir: Path, sandbox_cfg: dict, readers=None,
                     outcome: TaskOutcome | None = None) -> list[validate.Violation]:
    head = validate.head_tree(spec)
    try:
        tests = ObservationTests.of(visible_files(spec, head), spec.hidden_tests)
    except TransformError as e:
        return [validate.Violation(3, f"the tests cannot become observation tests: {e}")]
    runs = run_all(spec, head, tmp / "runs", sandbox_cfg, tests)
    violations, expected = validate.check_runs(spec, runs, tests.hidden)
    if violations:
        return violations
    git_dir = tmp / "repo"
    head_sha = repo.build(git_dir, spec.commits)
    fix_blobs = {p: repo.blob_sha(c) for p, c in spec.oracle_files.items()}
    violations = validate.check_repo(repo.refs(git_dir), repo.all_objects(git_dir), fix_blobs)
    if violations:
        return violations
    if readers is not None:
        violations = _rule8(spec, git_dir, readers, outcome)
        if violations:
            return violations
    oracle_patch = repo.diff_files({p: head.get(p) for p in spec.oracle_files}, spec.oracle_files)
    conv_patch = repo.diff_files({p: head.get(p) for p in spec.conventional_files}, spec.conventional_files)
    # The patches must apply to the real checkout exactly as the validated files say.
    repo.apply_patch(git_dir, oracle_patch)
    for p, c in spec.oracle_files.items():
        if (git_dir / p).read_text() != c:
            return [validate.Violation(3, f"oracle.patch does not reproduce {p}")]
    staging = out_dir / f".staging-{spec.task_id}"
    if staging.exists():
        shutil.rmtree(staging)
    staging.mkdir(parents=True)
    repo.bundle(git_dir, staging / "repo.bundle")
    (staging / ORACLE_PATCH).write_text(oracle_patch)
    (staging / CONVENTIONAL_PATCH).write_text(conv_patch)
    write_task_observations(staging, tests, expected)
    durations = [r.duration for r in runs["oracle"].tests.values()]
    task = task_record(spec, head, head_sha, time_limit(durations))
    save_meta(task, staging)
    _replace_dir(staging, out_dir / spec.task_id)
    return []


def _rule8(spec: TaskSpec, git_dir: Path, readers, outcome: TaskOutcome | None) -> list[validate.Violation]:
    """Rule 8 over the built repo: the naive readers' picks in every delivery's view, judged by the
    probe's runs (`readers`: the variant's ReaderSpace); on a recall task they are only recorded."""
    from sdebench.delivery.memory import dated_corpus

    if readers.problem:
        return [validate.Violation(8, readers.problem)] if spec.competency != RECALL else []
    items, dates = dated_corpus(git_dir)
    judged = judge(readers, items, dates, spec.statement, spec.fact)
    if outcome is not None:
        outcome.readers = judged
    return validate.check_readers(spec.competency, judged)


def task_record(spec: TaskSpec, head: dict[str, str], head_sha: str, test_time_limit_s: float | None = None) -> Task:
    """The Task record of a validated spec."""
    from sdebench.tasks.artifacts import artifact_kind

    code = [p for p in head if p.endswith(".py") and not is_test_file(p)]
    return Task(
        id=spec.task_id,
        family=spec.family,
        variant=spec.variant,
        source=spec.source,
        bottleneck=spec.bottleneck,
        statement=spec.statement,
        fact=spec.fact,
        fact_tokens=tuple(spec.fact_tokens),
        conventional_guess=spec.conventional_guess,
        modules=len(code),
        commits=len(spec.commits),
        head_sha=head_sha,
        tests=Tests(tuple(spec.fail_to_pass), tuple(spec.pass_to_pass), tuple(spec.hidden_to_pass)),
        memory_artifacts=tuple(sorted(p for p in head if artifact_kind(p) is not None)),
        test_files=tuple(sorted(p for p in head if is_test_file(p))),
        tags=tuple(spec.tags),
        description=spec.description,
        test_time_limit_s=test_time_limit_s,
        set_digest=spec.set_digest,
        competency=spec.competency,
    )


def _replace_dir(src: Path, dest: Path) -> None:
    old = dest.with_name(f".old-{dest.name}")
    if old.exists():
        shutil.rmtree(old)
    if dest.exists():
        dest.rename(old)
    src.rename(dest)
    if old.exists():
        shutil.rmtree(old)


# --- many tasks ---------------------------------------------------------------------------------


def plan(
    generators_dir: Path, families: set[str] | None, variants: set[int] | None, sources: set[str] | None
) -> tuple[list[tuple[Path, int, str]], list[str]]:
    """The (generator, variant, source) jobs selected, and discovery errors."""
    found, errors = discover(generators_dir)
    if families:
        unknown = sorted(families - set(found))
        if unknown:
            errors.append(f"unknown families: {', '.join(unknown)} (known: {', '.join(sorted(found))})")
    jobs = []
    for family, path in sorted(found.items()):
        if families and family not in families:
            continue
        gen = load_generator(path)
        for v in gen.variants:
            if variants is not None and v not in variants:
                continue
            for s in SOURCES:
                if sources is None or s in sources:
                    jobs.append((path, v, s))
    return jobs, errors


def generate(
    jobs: list[tuple[Path, int, str]], out_dir: Path, sandbox_cfg: dict, workers: int = 2, progress: bool = True,
    fresh: SetKey | None = None, scale: Scale = LEVELS["default"],
) -> list[TaskOutcome]:
    """Run every job, `workers` at a time, with a progress bar on stderr (`fresh`: a private set's key;
    `scale` sizes the memory)."""
    out_dir.mkdir(parents=True, exist_ok=True)
    outcomes = []
    bar = None
    if progress and sys.stderr.isatty():
        from tqdm import tqdm

        bar = tqdm(total=len(jobs), unit="task", file=sys.stderr)
    with ProcessPoolExecutor(max(1, workers)) as pool:
        variants = sorted({(p, v) for p, v, _ in jobs})
        # Every placement of a variant is built for the shape check, even when only some are selected.
        shapes = [pool.submit(shape_variant, p, v, fresh, scale) for p, v in variants]
        # The largest spaces first, so the probes' tail is short (a probe's cost grows with its space).
        costly = sorted(variants, key=lambda pv: -_space_size(pv[0]))
        probed = dict(zip(costly, pool.map(probe_variant, *zip(*costly, strict=True), [sandbox_cfg] * len(costly),
                                           [fresh] * len(costly), [scale] * len(costly)), strict=True))
        probed = {pv: probed[pv] for pv in variants}
        for r in probed.values():
            if r is not None:
                print(f"rule 7: {r.summary()} [{r.seconds:.1f}s]", file=sys.stderr)
        unchecked = sorted({load_generator(p).family for (p, _), r in probed.items() if r is None})
        if unchecked:
            print(f"rule 7: no fact space declared (unchecked): {', '.join(unchecked)}", file=sys.stderr)
        shaped = {pv: f.result() for pv, f in zip(variants, shapes, strict=True)}
        futures = [pool.submit(build_task, p, v, s, out_dir, sandbox_cfg, probed[(p, v)], fresh=fresh, scale=scale,
                               shape=shaped[(p, v)])
                   for p, v, s in jobs]
        for fut in futures:
            outcomes.append(fut.result())
            if bar is not None:
                bar.update(1)
    if bar is not None:
        bar.close()
    return outcomes


def reader_calibration(outcomes: list[TaskOutcome]) -> list[str]:
    """Rule 8's figures: per tier, how often each naive reader resolves from each delivery's view,
    over the tasks whose fact lives in memory (H, K, F, X). On the recall tier this is the
    calibration (readers should mostly succeed there); on the hard tier rule 8 allows none outside
    `oracle`."""
    lines = []
    for tier, label in ((RECALL, "recall tier (calibration)"), ("hard", "hard tier")):
        judged = [j for o in outcomes if o.source in "HKFX" and o.source and o.readers
                  and (o.competency == RECALL) == (tier == RECALL) for j in o.readers]
        if not judged:
            continue
        tasks = sum(1 for o in outcomes if o.source in "HKFX" and o.source and o.readers
                    and (o.competency == RECALL) == (tier == RECALL))
        parts = []
        for reader in READERS:
            cells = []
            for view in VIEWS:
                js = [j for j in judged if j.reader == reader and j.view == view]
                cells.append(f"{view} {sum(j.resolves for j in js) / len(js):.0%}" if js else f"{view} -")
            parts.append(f"{reader}: " + ", ".join(cells))
        lines.append(f"rule 8, {label}: readers resolve over {tasks} tasks with memory: " + "; ".join(parts))
    return lines


def compare_dirs(a: Path, b: Path) -> list[str]:
    """Relative paths that differ between two trees (missing on either side included)."""
    diffs = []

    def walk(cmp: filecmp.dircmp, prefix: str) -> None:
        diffs.extend(prefix + n for n in cmp.left_only + cmp.right_only + cmp.funny_files)
        for name in cmp.common_files:
            if not filecmp.cmp(Path(cmp.left) / name, Path(cmp.right) / name, shallow=False):
                diffs.append(prefix + name)
        for name, sub in cmp.subdirs.items():
            walk(sub, prefix + name + "/")

    walk(filecmp.dircmp(a, b, ignore=[]), "")
    return sorted(diffs)


INDEX = "README.md"


def _span(values: list[int]) -> str:
    return str(values[0]) if values[0] == values[-1] else f"{values[0]}-{values[-1]}"


def render_index(tasks_dir: Path) -> str:
    """tasks/README.md: every family with its tags, sizes and fact space (never the facts)."""
    from sdebench.tasks.record import discover, load

    fams: dict[str, list[Task]] = {}
    for d in discover(tasks_dir):
        t = load(d)
        fams.setdefault(t.family, []).append(t)
    digests = sorted({t.set_digest for ts in fams.values() for t in ts if t.set_digest})
    lines = [
        "# The sdebench tasks",
        "",
        "Generated by `python -m sdebench.generate`; do not edit. Each family is emitted per variant in every",
        "placement (H, K, F, X, none). Sizes are ranges over the family's tasks. The competency says how the fact",
        "must be worked out of memory (`recall`: one item states it; any other: the hard tier, docs/hard.md).",
        "",
    ]
    if digests:
        lines += [
            f"A fresh private set, digest `{', '.join(digests)}`: regenerate it with the seed, "
            "`python -m sdebench.generate --fresh @SEEDFILE --check --out DIR` (docs/fresh.md).",
            "",
        ]
    lines += [
        f"{sum(len(v) for v in fams.values())} tasks, {len(fams)} families.",
        "",
        "| family | competency | bottleneck | tags | variants | tasks | modules | commits | fact space |",
        "|---|---|---|---|---|---|---|---|---|",
    ]
    for fam, tasks in sorted(fams.items()):
        t0 = tasks[0]
        mods = sorted({t.modules for t in tasks})
        coms = sorted({t.commits for t in tasks})
        variants = ",".join(str(v) for v in sorted({t.variant for t in tasks}))
        competencies = ", ".join(dict.fromkeys(t.competency for t in sorted(tasks, key=lambda t: t.variant)))
        lines.append(
            f"| {fam} | {competencies} | {t0.bottleneck} | {', '.join(t0.tags)} | {variants} | {len(tasks)} | {_span(mods)} | "
            f"{_span(coms)} | {t0.description} |"
        )
    return "\n".join(lines) + "\n"


def _csv(value: str | None) -> set[str] | None:
    items = comma_list(value)
    return set(items) if items is not None else None


def main(argv: list[str] | None = None) -> int:
    """Command-line entry point."""
    ap = argparse.ArgumentParser(prog="python -m sdebench.generate", description=__doc__.splitlines()[0])
    ap.add_argument("--generators", type=Path, default=DEFAULT_GENERATORS, help="dir of family modules (default: the families shipped with sdebench)")
    ap.add_argument("--out", type=Path, default=None, help="tasks dir to write (default: tasks; required with --fresh)")
    ap.add_argument("--families", help="comma-separated families (default: all)")
    ap.add_argument("--variants", help="comma-separated variant numbers (default: all)")
    ap.add_argument("--sources", help=f"comma-separated sources among {','.join(SOURCES)} (default: all)")
    ap.add_argument("--check", action="store_true", help="regenerate into a temp dir and compare byte for byte with --out")
    ap.add_argument("--jobs", type=int, default=2, help="parallel workers (default: 2)")
    ap.add_argument("--sandbox", default="unsafe_local", help="sandbox backend for validation runs (default: unsafe_local)")
    ap.add_argument("--no-progress", action="store_true", help="no progress bar")
    ap.add_argument("--fresh", metavar="SEED",
                    help="emit a private set from a secret seed (@FILE reads it from a file, - from stdin); "
                         "tasks carry only its digest (docs/fresh.md)")
    ap.add_argument("--new-seed", action="store_true", help="print a new random seed for --fresh and exit")
    ap.add_argument("--scale", default="default", help=SCALE_HELP + " (default: default)")
    args = ap.parse_args(argv)
    if args.new_seed:
        print(new_seed())
        return 0
    fresh = None
    if args.fresh is not None:
        if args.out is None:
            print("error: --fresh needs --out DIR (a private set never goes into the published tasks dir)", file=sys.stderr)
            return 2
        try:
            fresh = derive(read_seed(args.fresh))
        except SeedError as e:
            print(f"error: {e}", file=sys.stderr)
            return 2
    args.out = DEFAULT_OUT if args.out is None else args.out

    try:
        scale = parse_scale(args.scale)
    except ValueError as e:
        ap.error(str(e))

    sources = _csv(args.sources)
    if sources and not sources <= set(SOURCES):
        ap.error(f"unknown sources: {', '.join(sorted(sources - set(SOURCES)))} (choose among {', '.join(SOURCES)})")
    try:
        variants = {int(v) for v in _csv(args.variants)} if args.variants else None
    except ValueError:
        ap.error(f"--variants takes comma-separated integers, got {args.variants!r}")
    jobs, errors = plan(args.generators, _csv(args.families), variants, sources)
    if fresh is not None:
        jobs, skipped = fresh_jobs(jobs)
        errors += skipped
        errors += other_sets(args.out, fresh.digest, args.check)
    for e in errors:
        print(f"error: {e}", file=sys.stderr)
    if fresh is not None and any(e.startswith(OTHER_SET) for e in errors):
        return 1
    if not jobs:
        print("error: nothing to generate", file=sys.stderr)
        return 1
    sandbox_cfg = {"backend": args.sandbox}
    start = time.monotonic()
    target = Path(tempfile.mkdtemp(prefix="sdebench-check-")) if args.check else args.out
    try:
        outcomes = generate(jobs, target, sandbox_cfg, args.jobs, progress=not args.no_progress, fresh=fresh,
                            scale=scale)
        failed = [o for o in outcomes if o.violations]
        for o in failed:
            for v in o.violations:
                print(f"{o.task_id}: {v}", file=sys.stderr)
        for line in reader_calibration(outcomes):
            print(line, file=sys.stderr)
        elapsed = time.monotonic() - start
        print(f"{len(outcomes) - len(failed)}/{len(outcomes)} tasks valid in {elapsed:.1f}s -> {target}", file=sys.stderr)
        if fresh is not None:
            print(f"fresh set digest: {fresh.digest}", file=sys.stderr)
        if not args.check:
            (args.out / INDEX).write_text(render_index(args.out))
        if args.check:
            mismatched = _check_against(outcomes, target, args.out)
            if not (args.families or args.variants or args.sources):
                produced = {o.task_id for o in outcomes}
                mismatched += [f"{d.name}: stale task dir (no generator emits it)" for d in sorted(args.out.iterdir())
                               if d.is_dir() and d.name not in produced]
                index = args.out / INDEX
                if not index.is_file() or index.read_text() != render_index(args.out):
                    mismatched.append(f"{INDEX}: out of date (regenerate)")
            for m in mismatched:
                print(f"check: {m}", file=sys.stderr)
            if mismatched:
                return 1
            print(f"check: {len(outcomes)} tasks byte-identical to {args.out}", file=sys.stderr)
        return 1 if failed or errors else 0
    finally:
        if args.check:
            shutil.rmtree(target, ignore_errors=True)


OTHER_SET = "tasks of another set"


def fresh_jobs(jobs: list[tuple[Path, int, str]]) -> tuple[list[tuple[Path, int, str]], list[str]]:
    """The jobs of families that can be emitted fresh, and one line per family skipped."""
    keep, skipped = [], {}
    for path, v, s in jobs:
        gen = load_generator(path)
        if declares_space(gen):
            keep.append((path, v, s))
        else:
            skipped[gen.family] = f"{gen.family}: declares no fact space; skipped (a fresh set draws its facts from it)"
    return keep, list(skipped.values())


def other_sets(out_dir: Path, digest: str, check: bool) -> list[str]:
    """One line if `out_dir` holds tasks not of the set `digest` (a fresh set never mixes with another set)."""
    from sdebench.tasks.record import TaskError, discover, load

    if not out_dir.is_dir():
        return [f"{out_dir}: no such tasks dir"] if check else []
    others: dict[str, list[str]] = {}
    for d in discover(out_dir):
        try:
            got = load(d).set_digest
        except TaskError:
            got = "unreadable"
        if got != digest:
            others.setdefault("the published set" if got is None else got, []).append(d.name)
    if not others:
        return []
    what = "; ".join(f"{len(ds)} of {k} (e.g. {ds[0]})" for k, ds in sorted(others.items()))
    return [f"{OTHER_SET} in {out_dir}, not of this seed's set: {what}"]


def _check_against(outcomes: list[TaskOutcome], fresh: Path, committed: Path) -> list[str]:
    problems = []
    for o in outcomes:
        a, b = fresh / o.task_id, committed / o.task_id
        if not b.is_dir():
            problems.append(f"{o.task_id}: missing from {committed}")
        elif a.is_dir():
            problems += [f"{o.task_id}: {p} differs" for p in compare_dirs(a, b)]
    return problems


if __name__ == "__main__":
    sys.exit(main())
