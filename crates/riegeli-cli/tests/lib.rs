//! Integration tests that run the `riegeli` binary.
