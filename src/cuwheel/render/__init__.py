"""Renderers: every text, JSON, JUnit, GitHub and SVG writer.  Each returns a string;
only the CLI prints."""
