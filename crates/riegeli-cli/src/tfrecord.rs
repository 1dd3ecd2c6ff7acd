//! TFRecord files: each record is `u64 length`, `u32 masked crc32c(length)`,
//! the bytes, `u32 masked crc32c(bytes)`, all little-endian; optionally the
//! whole stream is gzip- or zlib-compressed.

use std::io::{self, Read, Write};

use anyhow::{Result, bail};
use clap::ValueEnum;

/// Compression of a whole TFRecord stream.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum, Default)]
pub(crate) enum TfCompression {
    /// Plain.
    #[default]
    None,
    /// gzip (`.tfrecord.gz`).
    Gzip,
    /// zlib.
    Zlib,
}

/// The largest record accepted from a TFRecord file (its length field is untrusted).
const MAX_RECORD: u64 = 1 << 31;

fn masked_crc(data: &[u8]) -> u32 {
    let crc = crc32c::crc32c(data);
    crc.rotate_right(15).wrapping_add(0xa282_ead8)
}

/// Reads TFRecord records, checking both CRCs.
pub(crate) struct TfReader {
    inner: Box<dyn Read>,
    offset: u64,
}

impl TfReader {
    pub(crate) fn new(inner: impl Read + 'static, compression: TfCompression) -> Self {
        let inner: Box<dyn Read> = match compression {
            TfCompression::None => Box::new(io::BufReader::with_capacity(1 << 16, inner)),
            TfCompression::Gzip => Box::new(flate2::read::MultiGzDecoder::new(io::BufReader::new(inner))),
            TfCompression::Zlib => Box::new(flate2::read::ZlibDecoder::new(io::BufReader::new(inner))),
        };
        Self { inner, offset: 0 }
    }

    /// The next record into `buf`; `false` at a clean end.
    pub(crate) fn read_into(&mut self, buf: &mut Vec<u8>) -> Result<bool> {
        let mut header = [0u8; 12];
        let mut got = 0;
        while got < header.len() {
            match self.inner.read(&mut header[got..]) {
                Ok(0) if got == 0 => return Ok(false),
                Ok(0) => bail!("truncated TFRecord header at offset {}", self.offset),
                Ok(n) => got += n,
                Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
                Err(e) => return Err(e.into()),
            }
        }
        let (len_bytes, crc_bytes) = header.split_at(8);
        let len = u64::from_le_bytes(len_bytes.try_into()?);
        if masked_crc(len_bytes) != u32::from_le_bytes(crc_bytes.try_into()?) {
            bail!("TFRecord length CRC mismatch at offset {}", self.offset);
        }
        if len > MAX_RECORD {
            bail!("TFRecord at offset {} claims {len} bytes, more than the {MAX_RECORD}-byte limit", self.offset);
        }
        buf.clear();
        let read = (&mut self.inner).take(len).read_to_end(buf)?;
        if read as u64 != len {
            bail!("truncated TFRecord data at offset {}", self.offset);
        }
        let mut crc = [0u8; 4];
        self.inner.read_exact(&mut crc).map_err(|_| anyhow::anyhow!("truncated TFRecord at offset {}", self.offset))?;
        if masked_crc(buf) != u32::from_le_bytes(crc) {
            bail!("TFRecord data CRC mismatch at offset {}", self.offset);
        }
        self.offset += 16 + len;
        Ok(true)
    }
}

/// Writes TFRecord records.
pub(crate) struct TfWriter<'a> {
    inner: Box<dyn Write + 'a>,
}

impl<'a> TfWriter<'a> {
    pub(crate) fn new(inner: Box<dyn Write + 'a>, compression: TfCompression) -> Self {
        let inner: Box<dyn Write + 'a> = match compression {
            TfCompression::None => inner,
            TfCompression::Gzip => Box::new(flate2::write::GzEncoder::new(inner, flate2::Compression::default())),
            TfCompression::Zlib => Box::new(flate2::write::ZlibEncoder::new(inner, flate2::Compression::default())),
        };
        Self { inner }
    }

    pub(crate) fn write(&mut self, record: &[u8]) -> Result<()> {
        let len = (record.len() as u64).to_le_bytes();
        self.inner.write_all(&len)?;
        self.inner.write_all(&masked_crc(&len).to_le_bytes())?;
        self.inner.write_all(record)?;
        self.inner.write_all(&masked_crc(record).to_le_bytes())?;
        Ok(())
    }

    pub(crate) fn finish(mut self) -> Result<()> {
        self.inner.flush()?;
        drop(self.inner);
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn known_crc_and_round_trip() {
        // CRC-32C of "123456789" is 0xe3069283 (the standard check value).
        assert_eq!(crc32c::crc32c(b"123456789"), 0xe306_9283);
        let mut bytes = Vec::new();
        {
            let sink: Box<dyn Write> = Box::new(io::Cursor::new(&mut bytes));
            let mut w = TfWriter::new(sink, TfCompression::None);
            w.write(b"hello").unwrap();
            w.write(b"").unwrap();
            w.finish().unwrap();
        }
        assert_eq!(bytes.len(), 16 + 5 + 16);
        assert_eq!(&bytes[..8], &5u64.to_le_bytes());
        let mut r = TfReader::new(io::Cursor::new(bytes.clone()), TfCompression::None);
        let mut buf = Vec::new();
        assert!(r.read_into(&mut buf).unwrap());
        assert_eq!(buf, b"hello");
        assert!(r.read_into(&mut buf).unwrap());
        assert!(buf.is_empty());
        assert!(!r.read_into(&mut buf).unwrap());
        let mut damaged = bytes;
        damaged[14] ^= 1;
        let mut r = TfReader::new(io::Cursor::new(damaged), TfCompression::None);
        assert!(r.read_into(&mut buf).is_err());
    }
}
