"""Tasks: the task record (load, save, select), its vocabulary, and deterministic git repos."""
