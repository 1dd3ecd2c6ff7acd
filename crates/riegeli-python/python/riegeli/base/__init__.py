"""Definitions shared by the riegeli modules."""
