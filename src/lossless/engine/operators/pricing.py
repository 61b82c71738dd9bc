"""A cost estimate for a job's token usage.

Prices change; the table holds list prices (USD per million input / output
tokens) of a few common models as of late 2026 and is only a default: a job
started with ``--price-input`` / ``--price-output`` uses those instead. A
model that is not known and has no price given gets no estimate rather than
a wrong one. Local servers and commands cost nothing we could know.
"""

from __future__ import annotations

from lossless.engine.operators.spec import MapSpec

# Prefix of the model name -> (input, output) USD per million tokens.
_LIST_PRICES: tuple[tuple[str, float, float], ...] = (
    ("claude-opus-4", 15.0, 75.0),
    ("claude-sonnet-4", 3.0, 15.0),
    ("claude-haiku-4", 1.0, 5.0),
    ("claude-3-5-haiku", 0.8, 4.0),
    ("gpt-4o-mini", 0.15, 0.6),
    ("gpt-4o", 2.5, 10.0),
    ("gpt-4.1-mini", 0.4, 1.6),
    ("gpt-4.1-nano", 0.1, 0.4),
    ("gpt-4.1", 2.0, 8.0),
)


def prices_for(spec: MapSpec, model: str | None) -> tuple[float, float] | None:
    if spec.price_input_per_mtok is not None or spec.price_output_per_mtok is not None:
        return (spec.price_input_per_mtok or 0.0, spec.price_output_per_mtok or 0.0)
    if model is None or spec.base_url or spec.provider == "command":
        return None
    for prefix, price_in, price_out in _LIST_PRICES:
        if model.startswith(prefix):
            return (price_in, price_out)
    return None


def estimate_cost(
    spec: MapSpec, model: str | None, input_tokens: int, output_tokens: int
) -> float | None:
    """USD for the tokens used so far, or None when the price is not known."""
    prices = prices_for(spec, model)
    if prices is None:
        return None
    return (input_tokens * prices[0] + output_tokens * prices[1]) / 1_000_000
