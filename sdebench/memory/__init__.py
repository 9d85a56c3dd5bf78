"""Memory systems: the backends a memory tool searches (BM25, a knowledge graph, a notes vault, mem0).

A backend is loaded with a task's memory corpus (`sdebench.delivery.memory.corpus_of`, one item per
commit, doc or note entry, each with its source tag), serves its own tools under their own names
and descriptions, and reports for each call which memory items its answer showed, in rank order,
so the retrieval diagnostics work the same for every backend. See docs/memory.md.
"""
