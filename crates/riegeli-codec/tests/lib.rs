//! Integration tests of riegeli-codec.

mod compression;
mod delta;
mod fuzz_regressions;
mod simple;
mod transpose_examples;
mod transpose_gen;
mod transpose_interop;
mod transpose_roundtrip;
mod varint;
