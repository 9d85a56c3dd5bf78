"""Delivery: the five modes, the memory corpus with BM25 search and inject rendering, carried memory."""
