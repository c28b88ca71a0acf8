"""The machinery of `make bench`: whole-process measurement, rows with goals, the table.

`benchmarks/bench.py` is the command; `rows.py` lists what it measures (one entry per row, so a
new row is a few lines); `measure.py` times and sizes child processes; `verdicts.py` turns
measurements into PASS/FAIL lines; `budgets.py` holds the speed checks moved out of the tests.
"""
