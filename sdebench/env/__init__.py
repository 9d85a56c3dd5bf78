"""The OpenEnv-style environment over sdebench tasks and its HTTP server."""
