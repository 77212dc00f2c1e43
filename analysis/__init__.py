"""One script per reproduced figure or table; each writes JSON results and a figure (``python -m analysis.<name>``)."""
