"""Agents: the protocol and context (base.py), reference agents, the learner, and the LLM agent.

Agents are selected by `agent.name`, a name registered in `sdebench.components.AGENTS` or a
`package.module:Class`, and built by `sdebench.components.build_agent` (classes are imported on
use, so reference runs never load litellm).
"""
