"""The run config's schema: typed dataclasses registered as Hydra structured configs.

Hydra checks every composed config against them, so a wrong type (`max_interventions=many`) or an
unknown key (`select.famly=...`) is refused before anything runs; Hydra lets `+` add past a schema,
so the command line's check (`sdebench.runs.sweep.check_overrides`) refuses such an add itself. The YAML files under
`conf/` keep the values (and the only defaults a user reads); the fields here carry no default of
their own but where a YAML file may leave a key out. `register()` is idempotent and runs wherever
the config tree is located (`sdebench.runs.config`), so every entry point and test composes against it.

The `agent` group is typed by its `name` alone (agents differ in their keys; a component's own
section is checked by the component); `stream` by `sdebench.runs.stream`.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from enum import StrEnum
from typing import Any

from hydra.core.config_store import ConfigStore
from omegaconf import MISSING

GROUP = "schema"  # conf-tree group the schemas live in: `- /schema/<name>@_here_` in an option's defaults


class Claims(StrEnum):
    """How an episode is claimed (sdebench.runs.sweep): an `flock`, or a `lease` file its holder renews."""

    flock = "flock"
    lease = "lease"


@dataclass
class SelectConfig:
    """Which tasks a run takes (each a value or a comma list; null: any)."""

    family: Any = None
    variant: Any = None
    ids: Any = None
    bottleneck: Any = None
    competency: Any = None
    tier: Any = None


@dataclass
class LimitsConfig:
    """Per-episode budgets (sdebench.agents.base.Limits)."""

    max_turns: int = MISSING
    max_cost_usd: float = MISSING
    max_wall_s: float = MISSING


@dataclass
class ToolsConfig:
    """The tool layer's limits."""

    max_output_chars: int = MISSING
    bash_timeout: float = MISSING
    test_timeout: float = MISSING


@dataclass
class PreflightConfig:
    """What is checked once per job before its first episode."""

    model: bool = True
    sandbox: bool = True
    timeout_s: float = MISSING


@dataclass
class EstimateConfig:
    """The plan's cost-estimate assumptions."""

    turns: int = MISSING
    output_tokens: int = MISSING
    tool_output_tokens: int = MISSING


@dataclass
class GradingConfig:
    """Grading options (sdebench.grading.options.GradeOptions)."""

    feedback_hidden: str = MISSING
    timeout: float = MISSING
    test_time_limit_s: float | None = None
    test_time_floor_s: float = MISSING
    per_test_chars: int = MISSING
    feedback_chars: int = MISSING
    step_cost: float = MISSING
    max_workspace_mb: int = MISSING
    keep_dir: bool = False


@dataclass
class PricesConfig:
    """USD per million tokens (null: litellm's price map)."""

    input: float | None = None
    output: float | None = None
    cache_read: float | None = None
    cache_write: float | None = None


@dataclass
class NoModelConfig:
    """`model=none`: the reference agents use no model."""

    name: str = MISSING


@dataclass
class ModelConfig(NoModelConfig):
    """A model endpoint."""

    litellm_model: str | None = None
    api_base: str | None = None
    api_key_env: str | None = None
    temperature: float = 0.0
    max_tokens: int = 4096
    send_seed: bool = True
    cost_tracking: str = "strict"
    prices: PricesConfig = field(default_factory=PricesConfig)
    extra: dict[str, Any] = field(default_factory=dict)
    gateway_route: str = "auto"


@dataclass
class DeliveryConfig:
    """How memory reaches the agent (name, or package.module:Class): full, squashed, oracle."""

    name: str = MISSING


@dataclass
class InjectDeliveryConfig(DeliveryConfig):
    """Memory pushed into the prompt."""

    token_budget: int = MISSING
    top_k: int = MISSING


@dataclass
class MemtoolDeliveryConfig(DeliveryConfig):
    """Memory behind a search tool."""

    default_k: int = MISSING


@dataclass
class MemoryConfig:
    """The memory system behind memtool (name, or package.module:Class): bm25, kg, basic-memory, mem0."""

    name: str = MISSING


@dataclass
class ServedMemoryConfig(MemoryConfig):
    """A memory system that runs as its own server (kg, basic-memory, mem0)."""

    cache_dir: str | None = None  # where the system is installed (null: $SDEBENCH_AGENT_CACHE or /var/tmp/sdebench-agents)
    timeout_s: float = 120.0  # start-up, load and each call
    write: bool = False  # also offer the system's own write tools (streams: the agent writes memory)


@dataclass
class Mem0MemoryConfig(ServedMemoryConfig):
    """mem0: an LLM-curated memory; its model calls go through a metering gateway."""

    infer: bool = True  # mem0 extracts memories with the model when adding (false: stores each item as is)
    base_url: str | None = None  # OpenAI-compatible endpoint of its LLM and embedder (null: litellm resolves the names)
    model: str | None = None  # its LLM (a name at base_url, else a litellm model string); required
    embedding_model: str | None = None  # its embedder (null: text-embedding-3-small, mem0's default)
    embedding_dims: int = 256
    api_key_env: str | None = None  # the env var holding the endpoint's key (read by its metering gateways only)
    prices: PricesConfig = field(default_factory=PricesConfig)  # of its LLM (nulls: litellm's price map)
    embedding_prices: PricesConfig = field(default_factory=PricesConfig)  # of its embedder
    cost_tracking: str = "strict"  # an unpriced model: strict = a load error, ignore = free


@dataclass
class LocalSandboxConfig:
    """Bubblewrap on the host."""

    backend: str = MISSING
    tasks_dir: str = MISSING
    results_dir: str = MISSING
    masked: list[str] = field(default_factory=list)
    mask_home: bool = True
    output_cap: int = MISSING
    memory_mb: int = MISSING
    pids_max: int = MISSING
    address_space_mb: int = MISSING
    file_size_mb: int = MISSING
    tmp_size_mb: int = MISSING
    require_cgroup: bool = False
    seccomp: bool = True
    require_private_inodes: bool = False


@dataclass
class DockerSandboxConfig:
    """One container per episode or grade."""

    backend: str = MISSING
    image: str = MISSING
    output_cap: int = MISSING
    memory_mb: int = MISSING
    pids_max: int = MISSING
    tmp_size_mb: int = MISSING
    user: str = MISSING
    seccomp: bool = True
    cpus: float = 0.0
    max_workspace_mb: int = MISSING
    client_timeout_s: float = MISSING
    prestart: int = MISSING


@dataclass
class UnsafeLocalSandboxConfig:
    """Plain host subprocesses (no isolation)."""

    backend: str = MISSING
    output_cap: int = MISSING


@dataclass
class AgentConfig:
    """An agent option with nothing but its name (oracle, noop, conventional, learner; a custom `module:Class`)."""

    name: str = MISSING


@dataclass
class PatchAgentConfig(AgentConfig):
    """`agent=patch`: one unified diff, applied on the first run."""

    patch: str | None = None


@dataclass
class ReaderAgentConfig(AgentConfig):
    """The naive memory readers: they know the family specs (public), never the fact."""

    generators: str | None = None


@dataclass
class ProberAgentConfig(ReaderAgentConfig):
    """The memoryless prober: the family specs, and where its candidate models are cached."""

    cache_dir: str | None = None


@dataclass
class RetryConfig:
    """Retries of one model call (429, timeouts, connection errors, 5xx)."""

    max_retries: int = MISSING
    backoff_base_s: float = MISSING
    backoff_max_s: float = MISSING
    request_timeout_s: float = MISSING


@dataclass
class LlmAgentConfig(AgentConfig):
    """The built-in tool-calling agent."""

    prompts: dict[str, str] = MISSING
    max_format_errors: int = MISSING
    retry: RetryConfig = field(default_factory=RetryConfig)


@dataclass
class InstalledAgentConfig(AgentConfig):
    """A real agent CLI run in the sandbox behind the model gateway."""

    version: str = MISSING
    cache_dir: str | None = None
    port: int = MISSING
    args: list[str] = field(default_factory=list)
    env: dict[str, str] = field(default_factory=dict)
    dead_model_s: float = MISSING
    prompts: dict[str, str] = MISSING


@dataclass
class MiniSweAgentConfig(InstalledAgentConfig):
    """mini-swe-agent: also the name of its builtin config file."""

    config: str = MISSING


@dataclass
class GeminiCliAgentConfig(InstalledAgentConfig):
    """Gemini CLI: also the project files it loads by itself (null: its default)."""

    context_files: list[str] | None = None


@dataclass
class RunConfig:
    """The top level of `conf/config.yaml` (and of `stream_run.yaml`, which adds `stream`)."""

    agent: Any = MISSING
    model: Any = MISSING
    delivery: Any = MISSING
    memory: Any = None  # the memory system behind memtool (conf/memory/; null in configs older than the group: bm25)
    sandbox: Any = MISSING
    grading: GradingConfig = MISSING
    stream: Any = None
    source: Any = MISSING
    tasks_dir: str = MISSING
    results_dir: str = MISSING
    rerun: bool = False
    retry_errors: bool = True
    keep_workspace: bool = False
    progress: Any = "auto"  # auto | true | false
    seed: int = 0
    max_interventions: int = MISSING
    reuse_unchanged_grades: bool = True
    dry_run: bool = False
    cost_tracking: str | None = None  # deprecated: model.cost_tracking
    budget_usd: float | None = None
    plan: bool = False
    concurrency: int = 1  # episodes of one job at once (sdebench.runs.pool)
    worker: int = 0  # a label with no effect on episodes: `-m worker=0,1,2,3` runs each job as four sharing its episodes
    claims: Claims = Claims.flock  # flock | lease (sdebench.runs.sweep, sdebench.runs.lease)
    claim_lease_s: float = 60.0  # a lease not renewed for this long is stale and taken over
    preflight: PreflightConfig = field(default_factory=PreflightConfig)
    estimate: EstimateConfig = field(default_factory=EstimateConfig)
    limits: LimitsConfig = field(default_factory=LimitsConfig)
    select: SelectConfig = field(default_factory=SelectConfig)
    tools: ToolsConfig = field(default_factory=ToolsConfig)


SCHEMAS: dict[str, type] = {
    "run": RunConfig, "grading": GradingConfig, "model": ModelConfig, "model_none": NoModelConfig, "delivery": DeliveryConfig,
    "delivery_inject": InjectDeliveryConfig, "delivery_memtool": MemtoolDeliveryConfig,
    "memory": MemoryConfig, "memory_served": ServedMemoryConfig, "memory_mem0": Mem0MemoryConfig,
    "sandbox_local": LocalSandboxConfig, "sandbox_docker": DockerSandboxConfig, "sandbox_unsafe_local": UnsafeLocalSandboxConfig,
    "agent": AgentConfig, "agent_patch": PatchAgentConfig, "agent_reader": ReaderAgentConfig, "agent_prober": ProberAgentConfig,
    "agent_llm": LlmAgentConfig, "agent_installed": InstalledAgentConfig, "agent_mini_swe_agent": MiniSweAgentConfig,
    "agent_gemini_cli": GeminiCliAgentConfig,
}


def register() -> None:
    """Store every schema in Hydra's ConfigStore under `schema/<name>` (again is harmless)."""
    cs = ConfigStore.instance()
    for name, node in SCHEMAS.items():
        cs.store(group=GROUP, name=name, node=node)
