"""The map operators: one model call (``llm_map``) or one sub-agent (``agentic_map``) per item.

``jobs`` creates, resumes, cancels and reports jobs; ``runner`` drives the
claims; ``llm_map`` and ``agentic`` answer one item; ``answers`` parses and
validates what a model said; ``scope_guard`` keeps delegation finite.
"""
