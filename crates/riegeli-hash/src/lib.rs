//! HighwayHash-64 keyed with the Riegeli/records key.
//!
//! Every hash in a Riegeli/records file (block header, chunk header and chunk
//! data) is a 64-bit [HighwayHash](https://github.com/google/highwayhash)
//! with the key `{0x2f696c6567656952, 0x0a7364726f636572, 0x2f696c6567656952,
//! 0x0a7364726f636572}` (`"Riegeli/"`, `"records\n"`, twice). This crate is the
//! only place in the workspace that knows that key.
//!
//! # Example
//! ```
//! use riegeli_hash::{hash, Hasher};
//!
//! assert_eq!(hash(b""), 0x72c3_b1e9_c013_9fe1);
//!
//! // Chunk data arrives in pieces split by block headers: hash it in pieces.
//! let mut hasher = Hasher::new();
//! hasher.update(b"Riegeli");
//! hasher.update(b"/records");
//! assert_eq!(hasher.finish(), hash(b"Riegeli/records"));
//! ```
#![forbid(unsafe_code)]

use highway::{HighwayHash, HighwayHasher, Key};

/// The HighwayHash key of the Riegeli/records format: `"Riegeli/records\n"` twice,
/// read as four little-endian `u64`s.
pub const RIEGELI_KEY: [u64; 4] =
    [0x2f69_6c65_6765_6952, 0x0a73_6472_6f63_6572, 0x2f69_6c65_6765_6952, 0x0a73_6472_6f63_6572];

/// Returns the Riegeli HighwayHash-64 of `data`.
#[inline]
pub fn hash(data: &[u8]) -> u64 {
    HighwayHasher::new(Key(RIEGELI_KEY)).hash64(data)
}

/// A streaming Riegeli HighwayHash-64: feed data in any number of pieces with
/// [`update`](Hasher::update), then read the hash with [`finish`](Hasher::finish).
///
/// The result does not depend on how the input is split.
#[derive(Debug, Clone)]
pub struct Hasher {
    inner: HighwayHasher,
}

impl Hasher {
    /// Creates a hasher with the Riegeli key.
    #[inline]
    pub fn new() -> Self {
        Self { inner: HighwayHasher::new(Key(RIEGELI_KEY)) }
    }

    /// Feeds `data` into the hash.
    #[inline]
    pub fn update(&mut self, data: &[u8]) {
        self.inner.append(data);
    }

    /// Returns the hash of everything fed so far, consuming the hasher.
    #[inline]
    pub fn finish(self) -> u64 {
        self.inner.finalize64()
    }
}

impl Default for Hasher {
    fn default() -> Self {
        Self::new()
    }
}
