"""The calibration areas' median absolute errors with the shipped defaults
(`simsched calibrate calibration/published.yaml --no-fit`; docs/continuous_batching.md,
"Fidelity"), the margins a plan's near-ties default to.

Imports nothing, so that `simsched plan --help` can state them without loading the library.
"""

# the dense figures: 5.8% over the 102 published figures the default tie margin was set from
DENSE_MEDIAN_SHARE = 0.058
# the MoE throughput figures (every MoE cell of the TensorRT-LLM tables and MX-D3) and the
# speculative-decoding / MTP ones
MOE_MEDIAN_SHARE = 0.118
SPEC_MEDIAN_SHARE = 0.015
