"""The parts of sweeps, capacity plans and reports; `simsched.sweep`, `simsched.plan` and
`simsched.report` put them together and are the modules to import.

- sweeps: `grid` (flags to points), `runners` (points run here or on Dask), `table` (the frame
  and its file);
- plans: `slo` (SLO expressions), `knob` (the candidate values), `bisection` (the search and
  its verdicts);
- reports: `report_data` (what a scenario report reads), `scenario_plots`, `sweep_plots`, `page`
  (figures and the HTML page).
"""
