//! Property tests of riegeli-framing against a naive model that walks the file
//! block by block.

mod naive;
mod properties;
