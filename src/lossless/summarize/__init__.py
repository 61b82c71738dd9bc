"""Summarizers: the protocol, depth-aware prompts, providers and escalation."""
