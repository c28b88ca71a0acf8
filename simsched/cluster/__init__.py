"""Service models by name (`cluster.service_model`)."""

from __future__ import annotations

from simsched.cluster.token_server import TokenServer

SERVICE_MODELS = {"token_server": TokenServer}

__all__ = ["SERVICE_MODELS", "TokenServer"]
