"""The demo run: a synthetic three-arm routing run written live by StepLogger."""
