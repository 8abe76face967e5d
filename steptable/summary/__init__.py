"""Run summaries for agents and CI: trend statistics, key columns, the summary text."""
