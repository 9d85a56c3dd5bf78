"""`sdebench plan OVERRIDE...` (or `sdebench run ... --plan`, or `plan=true`): what a run or sweep
would do and cost, without running or paying for anything.

It takes the overrides of `sdebench run`. With `-m` the sweep is expanded the way Hydra's basic
sweeper does it (the cartesian product of the comma lists on the command line and of
`hydra.sweeper.params`, e.g. from `experiment=ablation`); other sweepers (Optuna, ranges) are not
expanded. For every job it selects the tasks and prints, per cell (delivery x agent x model x
source), the episodes, how many already have a record (reused, free), the worst case (the
per-episode cap `limits.max_cost_usd` x the episodes to run) and an estimate; then the same
episodes per competency of their tasks (and its tier, recall or hard).

The estimate prices, at the model's prices (configured, else litellm's map: the pricing code the
agents use), an episode of `estimate.turns` model calls (at most `limits.max_turns`): each call
resends the first prompt (the task's statement, the delivery's prompt additions and
`OVERHEAD_TOKENS` of system prompt and tool schemas) plus the conversation so far, which
grows by `estimate.output_tokens` (the reply) and `estimate.tool_output_tokens` (the tool result)
per turn; no prompt caching is assumed and no episode is counted above its cap. Characters are
turned into tokens at the cautious rate the cost cap uses (3 per token).
"""

from __future__ import annotations

import sys
from collections import defaultdict
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from sdebench.runs import slurm
from sdebench.runs.config import section, settings
from sdebench.runs.schema import RunConfig

slurm.register()  # the resolvers of hydra/launcher=slurm, before any config is composed
OVERHEAD_TOKENS = 1500  # the system prompt and tool schemas every turn sends (the estimate's fixed part)


@dataclass
class Cell:
    """The episodes of one delivery x agent x model x source."""

    episodes: int = 0
    to_run: int = 0
    worst_usd: float = 0.0
    estimate_usd: float = 0.0


@dataclass
class Plan:
    """A whole run or sweep: its jobs and cells."""

    jobs: int = 0
    cells: dict[tuple[str, str, str, str], Cell] = field(default_factory=lambda: defaultdict(Cell))
    competencies: dict[str, Cell] = field(default_factory=lambda: defaultdict(Cell))  # the same episodes by competency
    budget_usd: float | None = None
    notes: list[str] = field(default_factory=list)
    keys: set[str] = field(default_factory=set)  # episodes already counted (two jobs of a sweep may share one)

    def totals(self) -> Cell:
        """The sum over all cells."""
        out = Cell()
        for c in self.cells.values():
            out.episodes += c.episodes
            out.to_run += c.to_run
            out.worst_usd += c.worst_usd
            out.estimate_usd += c.estimate_usd
        return out


def addition_chars(task: Any, delivery: dict[str, Any]) -> int:
    """The characters a delivery adds to the first prompt (inject: its token budget, an upper bound)."""
    from sdebench.agents.accounting import CHARS_PER_TOKEN
    from sdebench.delivery.modes import oracle_addition

    name = delivery.get("name")
    if name == "oracle":
        return len(oracle_addition(task.fact))
    if name == "inject":
        return int(delivery.get("token_budget") or 8000) * CHARS_PER_TOKEN
    return 0


def episode_estimate(prices: Any, prompt_chars: int, conf: RunConfig) -> float:
    """The estimated cost of one episode whose first prompt has `prompt_chars` characters (module doc)."""
    from sdebench.agents.accounting import CHARS_PER_TOKEN, TokenCounts, price_tokens

    if prices is None:
        return 0.0
    opt = conf.estimate
    turns = max(1, min(opt.turns, conf.limits.max_turns or opt.turns))
    first = OVERHEAD_TOKENS + prompt_chars // CHARS_PER_TOKEN + 1
    growth = opt.output_tokens + opt.tool_output_tokens
    prompt = turns * first + growth * turns * (turns - 1) // 2
    cost = price_tokens(prices, TokenCounts(prompt=prompt, completion=turns * opt.output_tokens))
    return min(cost, conf.limits.max_cost_usd)


def model_prices(conf: RunConfig) -> Any:
    """The per-million prices of `conf`'s model (None: no model, or unpriced under cost_tracking=ignore)."""
    from sdebench.agents.accounting import known_prices, resolve_pricing
    from sdebench.agents.model import ModelSettings

    model = section(conf.model)
    if model.get("name", "none") == "none":
        return None
    m = ModelSettings.from_config(model)
    return known_prices(resolve_pricing(m.litellm_model, m.prices, m.cost_tracking))


def add_job(plan: Plan, cfg: RunConfig | dict[str, Any]) -> None:
    """Add one job's episodes (its selected tasks, one episode each) to `plan`."""
    from sdebench.runs import results
    from sdebench.runs.budget import episode_worst_case
    from sdebench.runs.episode import identity
    from sdebench.runs.jobs import filter_text, select_tasks

    conf = settings(cfg)
    plan.jobs += 1
    tasks = select_tasks(conf)
    if not tasks:
        plan.notes.append(f"a job matches no task: {filter_text(conf)}")
        return
    prices = model_prices(conf)
    cap = episode_worst_case(conf)
    results_dir = Path(conf.results_dir or "results")
    cfg_hash = results.config_hash(conf)
    for task in tasks:
        ident = identity(task, conf)
        key = results.episode_key(task.content_hash(), ident.delivery, ident.agent, ident.model, ident.seed, cfg_hash)
        if key in plan.keys:
            continue  # e.g. `memory=bm25,kg` on a delivery that serves no memory system: one episode, run once
        plan.keys.add(key)
        done = results.read_record(results.record_path(results_dir, ident, key))
        fresh = conf.rerun or done is None or (done.outcome.stop_reason == "error" and conf.retry_errors)
        delivery = f"{ident.delivery}/{ident.memory}" if ident.memory not in (None, "bm25") else ident.delivery
        cells = (plan.cells[(delivery, ident.agent, ident.model, task.source)], plan.competencies[task.competency])
        chars = len(task.statement) + addition_chars(task, section(conf.delivery))
        estimate = episode_estimate(prices, chars, conf) if fresh else 0.0
        for cell in cells:
            cell.episodes += 1
            if fresh:
                cell.to_run += 1
                cell.worst_usd += cap
                cell.estimate_usd += estimate
    if conf.budget_usd is not None:
        plan.budget_usd = conf.budget_usd


def render(plan: Plan, conf: RunConfig) -> str:
    """The plan as a table, totals, the estimate's assumptions and the budget's effect."""
    opt = conf.estimate
    rows = ["| delivery | agent | model | source | episodes | to run | worst case $ | estimate $ |",
            "|---|---|---|---|---:|---:|---:|---:|"]
    for (d, a, m, s), c in sorted(plan.cells.items()):
        rows.append(f"| {d} | {a} | {m} | {s} | {c.episodes} | {c.to_run} | {c.worst_usd:.2f} | {c.estimate_usd:.2f} |")
    from sdebench.tasks.artifacts import COMPETENCIES, tier_of

    t = plan.totals()
    cap = conf.limits.max_cost_usd
    # The same episodes by the competency of their tasks (tier recall or hard): a study reads the tiers apart.
    by_comp = ["| competency | tier | episodes | to run | worst case $ | estimate $ |", "|---|---|---:|---:|---:|---:|"]
    for comp, c in sorted(plan.competencies.items(), key=lambda kv: COMPETENCIES.index(kv[0])):
        by_comp.append(f"| {comp} | {tier_of(comp)} | {c.episodes} | {c.to_run} | {c.worst_usd:.2f} | {c.estimate_usd:.2f} |")
    out = [f"plan, nothing is run: {plan.jobs} job(s), {t.episodes} episode(s), {t.to_run} to run "
           f"({t.episodes - t.to_run} already recorded)", "", *rows, "", *(by_comp if plan.competencies else []),
           *([""] if plan.competencies else []),
           f"worst case: ${t.worst_usd:.2f} (the per-episode cap limits.max_cost_usd={cap} x each episode to run "
           "that calls a model)",
           f"estimate:   ${t.estimate_usd:.2f} (assumes {opt.turns} turns, {opt.output_tokens} output and "
           f"{opt.tool_output_tokens} tool-result tokens a turn, {OVERHEAD_TOKENS} tokens of system prompt "
           "and tools, no prompt caching; set estimate.*)"]
    if plan.budget_usd is not None:
        verdict = ("the worst case fits" if t.worst_usd <= plan.budget_usd else
                   "episodes beyond it are not started (at least "
                   f"{int(plan.budget_usd // cap) if cap else 0} run in full)")
        out.append(f"budget:     budget_usd={plan.budget_usd:g}: {verdict}")
    out += [f"note: {n}" for n in dict.fromkeys(plan.notes)]
    return "\n".join(out)


def job_overrides(args: list[str], conf_dir: str, config_name: str) -> list[list[str]]:
    """The override list of every job `args` would launch (one for a single run; Hydra's basic sweeper's product for -m)."""
    from hydra import compose, initialize_config_dir
    from hydra._internal.core_plugins.basic_sweeper import BasicSweeper
    from hydra.core.global_hydra import GlobalHydra
    from hydra.core.override_parser.overrides_parser import OverridesParser
    from omegaconf import OmegaConf

    multirun = any(a in ("-m", "--multirun") for a in args)
    overrides = [a for a in args if not a.startswith("-")]
    if not multirun:
        return [overrides]
    parser = OverridesParser.create()
    parsed = parser.parse_overrides(overrides)
    first = [f"{o.get_key_element()}={next(iter(o.sweep_string_iterator()))}" if o.is_sweep_override()
             else o.input_line for o in parsed]
    GlobalHydra.instance().clear()
    try:
        with initialize_config_dir(config_dir=conf_dir, version_base="1.3"):
            hc = compose(config_name, overrides=composable(first), return_hydra_config=True)
        raw = hc.hydra.sweeper.get("params")
        params = OmegaConf.to_container(raw, resolve=False) if raw is not None else {}
    finally:
        GlobalHydra.instance().clear()
    # as BasicSweeper.sweep: the config's params first, the command line after (and winning)
    swept = parser.parse_overrides([f"{k}={v}" for k, v in (params or {}).items()] + overrides)
    return BasicSweeper.split_arguments(swept, None)[0]


def composable(overrides: list[str]) -> list[str]:
    """The overrides `compose` accepts (Hydra's own settings dropped, except extra search paths)."""
    return [o for o in overrides if o.startswith("hydra.searchpath") or not o.lstrip("+~").startswith("hydra")]


def compose_job(overrides: list[str], conf_dir: str, config_name: str) -> dict[str, Any]:
    """The resolved plain run config of one job."""
    from hydra import compose, initialize_config_dir
    from hydra.core.global_hydra import GlobalHydra
    from omegaconf import OmegaConf

    GlobalHydra.instance().clear()
    try:
        with initialize_config_dir(config_dir=conf_dir, version_base="1.3"):
            cfg = compose(config_name, overrides=composable(overrides))
    finally:
        GlobalHydra.instance().clear()
    plain = OmegaConf.to_container(cfg, resolve=True)
    plain.pop("hydra", None)
    return plain


def build(args: list[str], conf_dir: str, config_name: str = "config") -> tuple[Plan, RunConfig]:
    """The plan of `sdebench run ARGS` and the config of its first job."""
    plan = Plan()
    first: RunConfig | None = None
    for job in job_overrides(args, conf_dir, config_name):
        conf = settings(compose_job(job, conf_dir, config_name))
        first = first or conf
        add_job(plan, conf)
    return plan, first if first is not None else settings({})


def main(argv: list[str] | None = None, prog: str = "sdebench plan") -> int:
    """`sdebench plan [-m] OVERRIDE...`: print the plan of `sdebench run` with the same overrides; run nothing."""
    from sdebench.runs import sweep
    from sdebench.runs.config import CONF_DIR, ConfigError
    from sdebench.runs.jobs import RunError

    args = [a for a in (sys.argv[1:] if argv is None else argv) if a not in ("--plan", "plan=true", "plan=True")]
    if any(a in ("-h", "--help") for a in args):
        print(f"usage: {prog} [-m] OVERRIDE...\n\n{__doc__}")
        return 0
    try:
        args = sweep.check_overrides(args, CONF_DIR, "config")
        plan, cfg = build(args, CONF_DIR)
    except (sweep.UsageError, RunError, ConfigError, ValueError) as e:
        print(f"{prog}: error: {str(e).splitlines()[0] if str(e) else type(e).__name__}", file=sys.stderr, flush=True)
        return sweep.EXIT_BAD_INPUT
    print(render(plan, cfg), flush=True)
    return 0


def episode_lines(tasks: list, conf: RunConfig, factory: Any, label: str = "") -> list[str]:
    """The episodes a job would run, one line each (whether their record already exists, and the task's grader):
    what a job prints under `plan=true` (alias `dry_run=true`), beside the sweep-wide table of `sdebench plan`."""
    from sdebench.components import ComponentError, grader_for
    from sdebench.runs import results
    from sdebench.runs.episode import identity
    from sdebench.runs.jobs import RunError, outcome

    results_dir = Path(conf.results_dir or "results")
    cfg_hash = results.config_hash(conf)
    lines = []
    for n, task in enumerate(tasks, 1):
        try:
            grader_for(task)
        except ComponentError as e:
            raise RunError(f"task {task.id}: {e}") from None
        ident = identity(task, conf)
        key = results.episode_key(task.content_hash(), ident.delivery, ident.agent, ident.model, ident.seed, cfg_hash)
        done = results.read_record(results.record_path(results_dir, ident, key))
        state = "run" if done is None or conf.rerun else f"reuse ({outcome(done)})"
        lines.append(f"[{n}/{len(tasks)}] {label}{task.id} delivery={ident.delivery} agent={ident.agent} "
                     f"model={ident.model} seed={ident.seed} grader={task.grader} sandbox={factory.name}: {state}")
    return lines
