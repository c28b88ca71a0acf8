"""Service models by name (`cluster.service_model`)."""

from __future__ import annotations

from simsched.cluster.continuous_batching import ContinuousBatching
from simsched.cluster.token_server import TokenServer

SERVICE_MODELS = {"token_server": TokenServer, "continuous_batching": ContinuousBatching}

__all__ = ["SERVICE_MODELS", "ContinuousBatching", "TokenServer"]
