"""llm-d-style flow control at the gateway (docs/flow_control.md): bands, flows, requests.

Used only when a scenario has a `flow_control` section; the default path never runs it.
"""
