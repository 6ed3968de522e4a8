"""The start-up doctor: reads a failed engine start-up log (or a command), names the error, sums the memory
ledger and ranks the first edits that should make the server start (`infer-advisor doctor`, docs/doctor.md).

Its own stage above calibrate (it runs the memory model and the start-up-log calibration); the entry point is
:func:`.diagnosis.diagnose`."""
