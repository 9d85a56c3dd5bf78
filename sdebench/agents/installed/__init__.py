"""Installed agents: real coding-agent CLIs (Claude Code, Codex CLI, mini-swe-agent, ...) run in the
episode's sandbox behind the model gateway (see base.py)."""
