//! Integration tests of riegeli-codec.
