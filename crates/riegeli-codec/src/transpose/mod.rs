//! Transposed chunks (`'t'`) and the file metadata chunk (`'m'`).
//!
//! A transposed chunk stores proto records column by column: the values of
//! each field path go to their own buffer, buffers are grouped into
//! separately compressed buckets, and a state machine, run backwards,
//! re-interleaves them into records. The format is described in
//! `transposed-chunk.md` (cited as "spec §N" in this module).
//!
//! - [`TransposedChunkDecoder`] decodes chunk data into records, optionally
//!   keeping only some fields ([`FieldProjection`]);
//! - [`TransposedChunkEncoder`] writes chunk data byte-identical to the C++
//!   encoder's (when uncompressed).

mod decoder;
mod encoder;
mod fxhash;
mod projection;
mod proto;
mod state_machine;

pub use self::{
    decoder::{FieldSink, SubmessageAs, TransposedChunkDecoder},
    encoder::TransposedChunkEncoder,
    projection::FieldProjection,
};
