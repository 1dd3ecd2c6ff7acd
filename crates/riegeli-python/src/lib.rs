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
mod arrow;
mod errors;
mod position;
mod pyio;
mod reader;
mod shards;
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
    module.add_class::<shards::ArrayRecordShards>()?;
    module.add_class::<shards::PendingRead>()?;
    module.add_class::<arrow::ArrowBatches>()?;
    module.add("EXISTENCE_ONLY", riegeli_records::FieldProjection::EXISTENCE_ONLY)?;
    // The version of this crate, the package's (maturin takes it from Cargo.toml).
    module.add("__version__", env!("CARGO_PKG_VERSION"))?;
    module.add_function(wrap_pyfunction!(byte_ranges, module)?)?;
    finish_cache_writes_at_exit(module.py())?;
    track_forks(module.py())
}

/// Has the interpreter, as it exits, wait until what its reads fetched has reached the local
/// chunk cache (`riegeli_object_store::finish_cache_writes`, at most
/// `CACHE_WRITES_AT_EXIT`): a short script reading an object once would otherwise leave the
/// last ranges it fetched out of it.
///
/// A forked `multiprocessing` child (Grain's worker processes may be) ends with `os._exit`,
/// which runs no `atexit` handler, but runs `multiprocessing`'s own finalizers first; a child
/// clears those it inherited or registered while starting, then runs the after-fork hooks. So
/// the wait is also a finalizer, registered again by an after-fork hook in every child.
fn finish_cache_writes_at_exit(py: Python<'_>) -> PyResult<()> {
    use pyo3::types::{PyCFunction, PyDict};
    let hook = PyCFunction::new_closure(py, Some(c"_riegeli_finish_cache_writes"), None, |args, _| {
        args.py().detach(|| riegeli_object_store::finish_cache_writes(riegeli_object_store::CACHE_WRITES_AT_EXIT))
    })?;
    py.import("atexit")?.getattr("register")?.call1((&hook,))?;
    let util = py.import("multiprocessing.util")?;
    let (finalize, hook) = (util.getattr("Finalize")?.unbind(), hook.unbind());
    let register = PyCFunction::new_closure(py, Some(c"_riegeli_finalize_cache_writes"), None, move |args, _| {
        let py = args.py();
        let kwargs = PyDict::new(py);
        kwargs.set_item("exitpriority", 0)?;
        finalize.bind(py).call((py.None(), hook.bind(py)), Some(&kwargs)).map(|_| ())
    })?;
    register.call1((py.None(),))?;
    // The hook is kept as long as its key (this module's function object), so for good.
    util.getattr("register_after_fork")?.call1((&register, &register))?;
    Ok(())
}

/// Has every forked child that runs Python again tell riegeli-records it was forked (CPython
/// runs `os.register_at_fork` handlers in each): readers and writers then see that they were
/// inherited from another process (and rebuild what they share with threads, or refuse to
/// write) by a look at memory rather than a system call at each call.
fn track_forks(py: Python<'_>) -> PyResult<()> {
    let os = py.import("os")?;
    if !os.hasattr("register_at_fork")? {
        return Ok(());
    }
    let hook = pyo3::types::PyCFunction::new_closure(py, Some(c"_riegeli_after_fork_in_child"), None, |_, _| {
        riegeli_records::track_forks();
    })?;
    let kwargs = pyo3::types::PyDict::new(py);
    kwargs.set_item("after_in_child", hook)?;
    os.getattr("register_at_fork")?.call((), Some(&kwargs))?;
    riegeli_records::track_forks();
    Ok(())
}

/// riegeli-rs: `[start, end)` byte ranges of about `target` bytes (whole 64 KiB blocks)
/// partitioning a file of `size` bytes; read each with `RecordReader.set_byte_range` to
/// split a file among workers (each record is read by exactly one range).
#[pyfunction]
fn byte_ranges(size: u64, target: u64) -> Vec<(u64, u64)> {
    riegeli_records::byte_ranges(size, target).map(|range| (range.start, range.end)).collect()
}
