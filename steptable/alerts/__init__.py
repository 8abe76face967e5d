"""Alerts: rules, detectors, the engine that reads a run's rows, rows replaced by a restart, alert text."""
