"""Renderers of inventories and findings (text, JSON); the only code besides cli/ that
produces output, and it returns strings rather than printing."""
