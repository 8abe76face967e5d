"""Table: the column registry, cell text, number formats and the row renderer. Pure: no I/O, textual or torch."""
