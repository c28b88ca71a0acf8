"""`simsched calibrate`: fit numeric settings to measurements by simulating (docs/calibration.md).

`spec.py` reads and validates a calibration file, `metrics.py` turns a simulated run into the
measured figures, `fit.py` runs the cases and the bounded robust optimiser, `command.py` is the
command line.
"""
