"""steptable serve: the watch app in a browser (textual-serve), behind a token, an Origin check and a session cap."""
