"""Service models by name (`cluster.service_model`): add a model here, and its settings in
`cluster_config.py`."""

from __future__ import annotations

from simsched.cluster.continuous_batching import ContinuousBatching
from simsched.cluster.token_server import TokenServer

SERVICE_MODELS = {"token_server": TokenServer, "continuous_batching": ContinuousBatching}
