"""The calibrate stage: measurements back into the models.

- ``memory``: a memory calibration fitted from a start-up log (``infer-advisor calibrate --from-log``; the log is read
  by ``engines.startup_log``: each engine's log lines are engine facts);
- ``inputs``: measured points from bench.json reports or benchmarks/gpu/measure_transformers.py JSON;
- ``speed``: the step-time coefficients fitted to those points through the simulator (``infer-advisor calibrate``).

It sits above plan, simulate and bench: it runs them. What it writes is data the estimate stage reads through
``estimate/calibration.py`` (typed models and loaders only); no module below imports this package.
"""
