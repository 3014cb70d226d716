"""Renderers: every text, JSON, JUnit, GitHub and SVG writer.  Each returns a string;
only the CLI prints."""

# Here, not in render.check, so that the CLI builds check's parser without loading checks.
CHECK_FORMATS = ("text", "json", "junit", "github", "sarif")
