"""Riegeli/records: reading and writing files of records."""
