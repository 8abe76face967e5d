"""Schema files on disk and the schema each run is shown with: the built-in schemas plus the user's ``steptable.toml``
files found near a run (and in the user's config directory). The part of schema handling that touches the
filesystem; ``steptable.schemas`` builds and matches schemas from what this part reads."""
