"""Everything a map job needs to run again, stored with the job (``map_jobs.spec``).

A resumed job, or a second worker on another machine, reads its prompt,
schema, model and limits from here, never from the command line that started
it, so every item of a job is processed the same way.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass, field, fields
from typing import Any

from lossless.errors import InputError
from lossless.store.map_jobs import MapKind

DEFAULT_CONCURRENCY = {"llm_map": 16, "agentic_map": 4}
DEFAULT_MAX_RETRIES = 3


@dataclass(frozen=True, slots=True)
class MapSpec:
    kind: MapKind
    prompt: str
    schema: dict[str, Any] | None = None
    provider: str | None = None  # None: the configured summarizer provider
    model: str | None = None
    base_url: str | None = None
    command: list[str] | None = None  # the command provider's argv
    concurrency: int = 16
    max_retries: int = DEFAULT_MAX_RETRIES
    item_timeout_s: float = 120.0
    max_output_tokens: int = 2_000
    # A worker's claim on an item lapses this long after its last renewal
    # (renewed every third of it while the worker lives).
    lease_ttl_s: float = 60.0
    input_path: str | None = None
    output_path: str | None = None
    # USD per million tokens, for the cost estimate; None: not known.
    price_input_per_mtok: float | None = None
    price_output_per_mtok: float | None = None
    # agentic_map only
    item_token_budget: int = 50_000
    max_steps: int = 12
    file_root: str | None = None  # opt-in read-only file tool confined here
    read_only: bool = True
    max_delegation_depth: int = 2
    tags: list[str] = field(default_factory=list)

    def __post_init__(self) -> None:
        if not self.prompt.strip():
            raise InputError("the prompt is empty")
        if self.concurrency < 1 or self.concurrency > 256:
            raise InputError(f"concurrency must be within 1..256, got {self.concurrency}")
        if self.max_retries < 0 or self.max_retries > 20:
            raise InputError(f"max retries must be within 0..20, got {self.max_retries}")
        if self.item_timeout_s <= 0:
            raise InputError(f"the per-item timeout must be > 0, got {self.item_timeout_s}")
        if self.lease_ttl_s < 1:
            raise InputError(f"the lease must last >= 1 s, got {self.lease_ttl_s}")
        if self.max_output_tokens < 1:
            raise InputError("max output tokens must be >= 1")
        if self.item_token_budget < 1 or self.max_steps < 1:
            raise InputError("the per-item token budget and step limit must be >= 1")

    def to_json(self) -> dict[str, Any]:
        return asdict(self)

    @classmethod
    def from_json(cls, data: object) -> MapSpec:
        if not isinstance(data, dict):
            raise InputError("the stored job spec is not an object")
        known = {f.name for f in fields(cls)}
        return cls(**{k: v for k, v in data.items() if k in known})
