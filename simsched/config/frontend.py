"""The API server as a queueing stage: `cluster.frontend` (no SimPy here).

`processes` API-server processes (vLLM's `--api-server-count`) serve each replica's requests in
FIFO order: before the engine (tokenise, chat template: `per_request_ms` plus
`per_input_token_us` per prompt token) and after it (detokenise and stream:
`per_output_token_us` per output token). Without this section the front end is
`latency_model.frontend_before_ms` / `frontend_after_ms`, fixed delays with no queue.
docs/engines.md has the formulas and the sources of the defaults.
"""

from __future__ import annotations

from typing import Annotated

from pydantic import BaseModel, ConfigDict, Field

from simsched.config.spec_base import MeasureOrZero

# vLLM's API server, one process: 1000 requests of 128 prompt / 4 output tokens sent at once run
# at 4916.63 total tok/s on an A100 (GPUStack, Qwen3-14B, vLLM 0.11; measurements README 3c),
# 37.2 requests/s, i.e. 26.9 ms of API-server time per request.
VLLM_PER_REQUEST_MS = 26.9


class FrontendSpec(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True, strict=True)

    processes: Annotated[int, Field(gt=0, le=4096)] = 1
    per_request_ms: MeasureOrZero = VLLM_PER_REQUEST_MS
    per_input_token_us: MeasureOrZero = 0.0
    per_output_token_us: MeasureOrZero = 0.0

    @property
    def costs_nothing(self) -> bool:
        return self.per_request_ms == self.per_input_token_us == self.per_output_token_us == 0
