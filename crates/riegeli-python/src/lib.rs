//! `riegeli._riegeli`: the native part of the `riegeli` Python package.
//!
//! Google's Python API for Riegeli/records (`RecordWriter`, `RecordReader`,
//! `RecordPosition`) and array_record's (`ArrayRecordReader`, `ArrayRecordWriter`) on
//! riegeli-records. The Python package around it (`python/riegeli/`)
//! holds what is plain Python in Google's: the exception classes, `SkippedRegion`,
//! `FlushType`, `RecordsMetadata` and the record type helpers.
//!
//! The code here is conversions only: arguments in, results and exceptions out. Every read,
//! write, encode and decode runs without the GIL; a Python file object given as source or
//! destination takes it for each call of its methods.
#![forbid(unsafe_code)]

mod array_reader;
mod array_writer;
mod errors;
mod position;
mod pyio;
mod reader;
mod writer;

use pyo3::prelude::*;

/// The module `riegeli._riegeli`.
#[pymodule]
fn _riegeli(module: &Bound<'_, PyModule>) -> PyResult<()> {
    module.add_class::<position::RecordPosition>()?;
    module.add_class::<reader::RecordReader>()?;
    module.add_class::<reader::RecordIterator>()?;
    module.add_class::<reader::SearchProbe>()?;
    module.add_class::<writer::RecordWriter>()?;
    module.add_class::<array_reader::ArrayRecordReader>()?;
    module.add_class::<array_writer::ArrayRecordWriter>()?;
    module.add("EXISTENCE_ONLY", riegeli_records::FieldProjection::EXISTENCE_ONLY)?;
    Ok(())
}
