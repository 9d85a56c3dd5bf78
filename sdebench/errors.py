"""The exceptions of sdebench: one base, and one class per stage that every error of that stage derives from.

`except SdebenchError` catches every error the package raises on purpose (and nothing else);
`except GenerationError` every error of generation, and so on. A concrete class keeps the builtin
base it had (a ValueError for bad input, a RuntimeError for a failed operation), so callers that
catch those still do. Where a stage had one error of its own, that class is the stage's class
(ConfigError, TaskError, SandboxError, RunError), re-exported where it was defined before.

Three modules run outside the package and import nothing of it, so their private exceptions are plain:
the in-sandbox test runner (`grading/_runner.py`), the bounded line parser and the Harbor verifier
shipped beside an exported task (`grading/records.py`, `interop/harbor_verify.py`).
"""

from __future__ import annotations


class SdebenchError(Exception):
    """Every error sdebench raises on purpose; the message is one line."""


class ConfigError(SdebenchError, ValueError):
    """A config value that cannot be used (run config, model, agent, grading options); names the choices."""


class TaskError(SdebenchError, ValueError):
    """A task dir that is malformed or incomplete; names the file and field."""


class GenerationError(SdebenchError):
    """A family, a fresh set or a generated task that cannot be built or fails a rule."""


class DeliveryError(SdebenchError):
    """Memory that cannot be delivered as asked."""


class SandboxError(SdebenchError, RuntimeError):
    """The sandbox could not be created, started or cleaned up (never the command's own failure)."""


class AgentError(SdebenchError):
    """An agent, its model seam, its tools or its gateway that cannot do what was asked."""


class RunError(SdebenchError):
    """Bad input for a whole run, a stream or a sweep; reported as one line."""


class AnalysisError(SdebenchError):
    """Records that cannot be analysed together."""


class InteropError(SdebenchError):
    """A task or record that cannot be converted to or from a neighbouring format."""
