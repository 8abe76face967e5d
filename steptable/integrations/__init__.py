"""steptable where training loops already are: one adapter module per framework, each importing its framework only
when it is imported itself (``import steptable`` never imports transformers, lightning, accelerate, ...).

    steptable.integrations.hf          StepTableCallback      transformers.Trainer and every TRL trainer
    steptable.integrations.lightning   StepTableLogger        lightning.pytorch.loggers.Logger
    steptable.integrations.accelerate  StepTableTracker       Accelerator(log_with="steptable") / an instance
    steptable.integrations.sb3         StepTableOutputFormat  stable_baselines3 Logger output format
    steptable.integrations.tinker      StepTableLogger        tinker-cookbook ml_log.Logger; use_steptable()

Each writes ``<run_dir>/metrics.jsonl`` through StepLogger (rank 0 only), one row per step with the evaluation
logged at that step merged in, and closes the run when training ends (marked ended with the error when it raises).
The shared part is ``steptable.integrations.rows``.
"""
