//! Limits on what decoding may allocate, for data from untrusted files.

/// Limits checked before any allocation whose size comes from the data.
///
/// A chunk header or a compressed block states sizes (the number of records,
/// the decoded size, a decompressed size); decoders compare each with these
/// limits before allocating for it, and report
/// [`LimitExceeded`](crate::CodecErrorKind::LimitExceeded) rather than trying.
///
/// The defaults are [`DEFAULT_MAX_DECODED_SIZE`](Self::DEFAULT_MAX_DECODED_SIZE)
/// (1 GiB) and [`DEFAULT_MAX_NUM_RECORDS`](Self::DEFAULT_MAX_NUM_RECORDS)
/// (2<sup>28</sup>).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct DecodeLimits {
    /// The largest decoded size of one chunk (the sum of its record sizes), and
    /// the largest decompressed size of any one buffer inside it.
    pub max_decoded_size: u64,
    /// The largest number of records in one chunk.
    pub max_num_records: u64,
}

impl DecodeLimits {
    /// The default [`max_decoded_size`](Self::max_decoded_size): 1 GiB.
    pub const DEFAULT_MAX_DECODED_SIZE: u64 = 1 << 30;
    /// The default [`max_num_records`](Self::max_num_records): 2<sup>28</sup>
    /// (268,435,456).
    pub const DEFAULT_MAX_NUM_RECORDS: u64 = 1 << 28;

    /// The default limits, as a constant.
    pub const DEFAULT: Self =
        Self { max_decoded_size: Self::DEFAULT_MAX_DECODED_SIZE, max_num_records: Self::DEFAULT_MAX_NUM_RECORDS };

    /// No limits beyond what the address space allows (for trusted data only).
    pub const UNLIMITED: Self = Self { max_decoded_size: u64::MAX, max_num_records: u64::MAX };

    /// Checks a chunk header's `num_records` and `decoded_data_size` against
    /// the limits, before anything is allocated for them.
    pub(crate) fn check_chunk(
        &self,
        what: &'static str,
        num_records: u64,
        decoded_data_size: u64,
    ) -> Result<(), crate::CodecError> {
        if num_records > self.max_num_records {
            return Err(crate::CodecError::limit(what, 0, "max_num_records", num_records, self.max_num_records));
        }
        if decoded_data_size > self.max_decoded_size {
            return Err(crate::CodecError::limit(
                what,
                0,
                "max_decoded_size",
                decoded_data_size,
                self.max_decoded_size,
            ));
        }
        Ok(())
    }
}

impl Default for DecodeLimits {
    fn default() -> Self {
        Self::DEFAULT
    }
}
