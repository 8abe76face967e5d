"""Files: finding runs under paths, reading growing files, following them."""
