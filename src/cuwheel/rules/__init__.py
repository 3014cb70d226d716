"""CUDA's rules, applied to inventory facts: what the driver loads (``loading``) and what a
binary's linked CUDA runtime needs from the driver (``runtime``), rolled up to libraries
and wheels, and the judge that applies them with one catalog (``judge.Rules``).  check and
compat both judge through these modules; neither keeps a copy of a rule (docs/compat.md)."""
