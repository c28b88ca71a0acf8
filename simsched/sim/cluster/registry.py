"""Service models by name (`cluster.service_model`): add a model here, and its settings in
`cluster_config.py`."""

from __future__ import annotations

from simsched.sim.cluster.continuous_batching import ContinuousBatching
from simsched.sim.cluster.token_server import TokenServer

SERVICE_MODELS = {"token_server": TokenServer, "continuous_batching": ContinuousBatching}
