"""Cluster service models (SimPy): the registry, the two models, and what they are built from.

`registry.SERVICE_MODELS` maps `cluster.service_model` names to classes that follow
`contract.ServiceModel`.
"""
