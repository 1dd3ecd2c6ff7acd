//! Integration tests of riegeli-records.
