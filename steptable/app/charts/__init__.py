"""The chart view's pieces: the data feed (pyramids per arm, kept up to date) and the drawing."""
