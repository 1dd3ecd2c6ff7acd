//! Reading and writing Riegeli/records files.
//!
//! This is the crate most users call, and the only one in the workspace that
//! does I/O. It joins `riegeli-framing` (blocks and chunk headers) and
//! `riegeli-codec` (chunk payloads) behind `RecordReader<R: Read>` and
//! `RecordWriter<W: Write>`, with record positions, seeking, binary search,
//! recovery from corruption, metadata, padding and parallel encoding.
#![forbid(unsafe_code)]
