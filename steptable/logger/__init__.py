"""The in-loop logger: StepLogger, the JSONL writer, console sinks, rank gating and the table file at close."""
