"""Memory systems behind memtool that run as their own programs: a knowledge graph, a notes vault, mem0.

Each is a `sdebench.delivery.backend.MemoryBackend` (the seam, with BM25, the built-in system, in
`sdebench.delivery.bm25`), reached by name through the registry (`memory=kg`): loaded with a task's
memory corpus, serving its own tools under their own names and descriptions, reporting which memory
items each answer showed. Installed, pinned, by `python -m sdebench.memory.install`. See docs/memory.md.
"""
