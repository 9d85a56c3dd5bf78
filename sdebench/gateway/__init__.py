"""The model gateway: one HTTP server per episode on the host that speaks the agents' protocols
(Anthropic Messages, OpenAI Chat Completions and Responses), forwards every call through litellm to
the configured model entry, meters and limits it, and serves the memory tool over MCP."""
