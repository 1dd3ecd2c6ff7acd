//! [`ObjectSink`]: one object written by a multipart upload whose parts go
//! out while the writer goes on, a bounded number at a time, on the crate's
//! runtime; the object appears only when [`ObjectSink::finish`] completes the
//! upload, and a sink dropped unfinished (or failed) aborts it.

use std::collections::VecDeque;
use std::fmt;
use std::io::{self, Write};
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};

use bytes::Bytes;
use object_store::path::Path;
use object_store::{MultipartUpload, ObjectStore, ObjectStoreExt};
use riegeli_records::SyncWrite;
use tokio::task::JoinHandle;

use crate::config::{UploadConfig, UploadStats};
use crate::store::{io_error, runtime, store_for, wait};

/// A live view of an upload's [`UploadStats`], which can be read while a
/// writer (or its I/O thread) owns the sink; clones share the counters.
#[derive(Debug, Clone, Default)]
pub struct UploadCounters(Arc<Counters>);

#[derive(Debug, Default)]
struct Counters {
    requests: AtomicU64,
    bytes: AtomicU64,
}

impl UploadCounters {
    /// The requests made and bytes uploaded so far.
    pub fn stats(&self) -> UploadStats {
        UploadStats { requests: self.0.requests.load(Ordering::Relaxed), bytes: self.0.bytes.load(Ordering::Relaxed) }
    }

    fn request(&self) {
        self.0.requests.fetch_add(1, Ordering::Relaxed);
    }

    fn uploaded(&self, bytes: usize) {
        self.0.bytes.fetch_add(bytes as u64, Ordering::Relaxed);
    }
}

/// A `Write` that uploads one object.
///
/// Bytes gather into parts of [`UploadConfig::part_size`]; each full part is
/// uploaded on the crate's runtime while writing goes on, at most
/// [`UploadConfig::max_in_flight`] at a time (a write that would start one
/// more waits for the oldest). The multipart upload is started in the
/// background once the first part is a quarter full, so that the first full
/// part does not wait for that round trip; an object smaller than a part is
/// written by one PUT at [`finish`](Self::finish) (an upload started for it
/// is aborted meanwhile).
///
/// - Nothing is visible in the bucket before [`finish`](Self::finish)
///   completes the upload (the object appears whole, or an object that was
///   there stays as it was).
/// - The first failed request fails the sink: the upload is aborted at
///   once, and every later call returns the error.
/// - A sink dropped without `finish` (a writer dropped, or failed, before
///   its close) aborts the upload: parts in flight are cancelled, then the
///   parts uploaded are deleted (S3, GCS). Azure has no way to delete
///   uploaded blocks: they stay uncommitted, invisible, and expire after 7
///   days.
///
/// Flushes (see [`FlushType`](riegeli_records::FlushType)): `Write::flush`
/// (`FromObject`, `FromProcess`) reports a failure of the parts uploaded so
/// far and waits for nothing; it cannot make the bytes visible or keep them
/// past the process, which only `finish` does. [`SyncWrite::sync`]
/// (`FromMachine`, durability) is refused with an
/// [`io::ErrorKind::Unsupported`] error, the writer staying usable: a bucket
/// makes an object durable only whole, at `finish`.
pub struct ObjectSink {
    url: String,
    store: Arc<dyn ObjectStore>,
    path: Path,
    config: UploadConfig,
    /// The part being filled.
    part: Vec<u8>,
    /// The multipart upload: started, or being started.
    upload: Option<Upload>,
    /// Parts uploading, oldest first.
    in_flight: VecDeque<JoinHandle<object_store::Result<()>>>,
    /// Parts handed out so far.
    parts: u64,
    /// The first failure (every later call returns it).
    failure: Option<(io::ErrorKind, String)>,
    counters: UploadCounters,
    /// Finished or aborted: nothing more to do on drop.
    done: bool,
    /// The process that made the sink: only it aborts the upload on drop.
    pid: u32,
}

/// The multipart upload: its start (a round trip) in the background, or started.
enum Upload {
    Starting(JoinHandle<object_store::Result<Box<dyn MultipartUpload>>>),
    Started(Box<dyn MultipartUpload>),
}

impl Upload {
    /// The upload, once started (`None` if its start failed or was cancelled).
    async fn started(self) -> Option<Box<dyn MultipartUpload>> {
        match self {
            Self::Starting(handle) => handle.await.ok()?.ok(),
            Self::Started(upload) => Some(upload),
        }
    }
}

/// The part of [`UploadConfig::part_size`] gathered when the multipart upload is started.
const START_AT_PART_FRACTION: usize = 4;

impl fmt::Debug for ObjectSink {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("ObjectSink")
            .field("url", &self.url)
            .field("parts", &self.parts)
            .field("in_flight", &self.in_flight.len())
            .finish_non_exhaustive()
    }
}

impl ObjectSink {
    /// A sink writing the object at `url` (`s3://`, `gs://`, `az://` and the
    /// other object-store schemes of [`is_url`](crate::is_url) but
    /// `http(s)://`, whose servers take no multipart upload), configured from
    /// the environment as readers are. Makes no request.
    pub fn create(url: &str, config: UploadConfig) -> io::Result<Self> {
        if url
            .split_once("://")
            .is_some_and(|(scheme, _)| matches!(scheme.to_ascii_lowercase().as_str(), "http" | "https"))
        {
            return Err(io::Error::new(
                io::ErrorKind::Unsupported,
                "writing over HTTP is not supported (no multipart upload): write to s3://, gs:// or az://, or to a local file",
            ));
        }
        let (store, path) = store_for(url)?;
        Self::with_store(store, path, url, config)
    }

    /// A sink writing object `location` of `store`; `url` names it in errors.
    pub fn with_store(
        store: Arc<dyn ObjectStore>,
        location: Path,
        url: &str,
        config: UploadConfig,
    ) -> io::Result<Self> {
        if config.part_size == 0 || config.max_in_flight == 0 {
            return Err(io::Error::new(
                io::ErrorKind::InvalidInput,
                format!("{url}: part_size and max_in_flight must be positive ({config:?})"),
            ));
        }
        Ok(Self {
            url: url.to_owned(),
            store,
            path: location,
            config,
            part: Vec::new(),
            upload: None,
            in_flight: VecDeque::new(),
            parts: 0,
            failure: None,
            counters: UploadCounters::default(),
            done: false,
            pid: std::process::id(),
        })
    }

    /// The object's URL.
    pub fn url(&self) -> &str {
        &self.url
    }

    /// The counters of this upload (shared: readable while a writer owns the sink).
    pub fn counters(&self) -> UploadCounters {
        self.counters.clone()
    }

    /// Uploads what is left, waits for every part and completes the upload:
    /// the object appears. On any failure the upload is aborted (nothing
    /// appears) and the error returned.
    pub fn finish(mut self) -> io::Result<()> {
        let result = self.complete();
        if result.is_err() {
            self.abort();
        }
        self.done = true;
        result
    }

    /// The failure, if the sink failed.
    fn check(&self) -> io::Result<()> {
        match &self.failure {
            Some((kind, message)) => Err(io::Error::new(*kind, message.clone())),
            None => Ok(()),
        }
    }

    /// Records `error` (of `what`) as the sink's failure, aborts the upload,
    /// and returns the error.
    fn fail(&mut self, error: &object_store::Error, what: &str) -> io::Error {
        self.failed(io_error(error, &format!("{what} {}", self.url)))
    }

    /// Records `error` as the sink's failure, aborts the upload at once (not
    /// at drop, which may come much later), and returns the error.
    fn failed(&mut self, error: io::Error) -> io::Error {
        self.failure.get_or_insert_with(|| (error.kind(), error.to_string()));
        self.abort();
        error
    }

    /// Sends the part gathered: starts the upload first if this is its
    /// first part, and waits while `max_in_flight` parts are uploading.
    fn send_part(&mut self) -> io::Result<()> {
        self.start_upload()?;
        self.reap()?;
        while self.in_flight.len() >= self.config.max_in_flight {
            self.wait_oldest()?;
        }
        let data = Bytes::from(std::mem::replace(&mut self.part, Vec::with_capacity(self.config.part_size)));
        let len = data.len();
        let upload = self.started()?;
        let part = upload.put_part(data.into());
        self.counters.request();
        self.parts += 1;
        let counters = self.counters.clone();
        self.in_flight.push_back(runtime()?.spawn(async move {
            part.await?;
            counters.uploaded(len);
            Ok(())
        }));
        Ok(())
    }

    /// Starts the multipart upload in the background, unless it is started.
    fn start_upload(&mut self) -> io::Result<()> {
        if self.upload.is_none() {
            let (store, path) = (Arc::clone(&self.store), self.path.clone());
            self.counters.request();
            self.upload = Some(Upload::Starting(runtime()?.spawn(async move { store.put_multipart(&path).await })));
        }
        Ok(())
    }

    /// The multipart upload, waiting for its start if need be (its failure fails the sink).
    fn started(&mut self) -> io::Result<&mut Box<dyn MultipartUpload>> {
        if let Some(Upload::Starting(handle)) = self.upload.take_if(|upload| matches!(upload, Upload::Starting(_))) {
            let upload = match wait(handle)? {
                Ok(Ok(upload)) => upload,
                Ok(Err(e)) => return Err(self.fail(&e, "starting the multipart upload of")),
                Err(e) => {
                    let error = io::Error::other(format!("starting the multipart upload of {}: {e}", self.url));
                    return Err(self.failed(error));
                }
            };
            self.upload = Some(Upload::Started(upload));
        }
        match &mut self.upload {
            Some(Upload::Started(upload)) => Ok(upload),
            _ => Err(io::Error::other("the upload was not started")),
        }
    }

    /// Collects the parts that finished, oldest first, up to the first still uploading.
    fn reap(&mut self) -> io::Result<()> {
        while self.in_flight.front().is_some_and(JoinHandle::is_finished) {
            self.wait_oldest()?;
        }
        Ok(())
    }

    /// Waits for the oldest part in flight; its failure fails the sink.
    fn wait_oldest(&mut self) -> io::Result<()> {
        let Some(handle) = self.in_flight.pop_front() else { return Ok(()) };
        let uploaded = self.parts - self.in_flight.len() as u64;
        match wait(handle)? {
            Ok(Ok(())) => Ok(()),
            Ok(Err(e)) => Err(self.fail(&e, &format!("uploading part {uploaded} of"))),
            Err(e) => Err(self.failed(io::Error::other(format!("uploading part {uploaded} of {}: {e}", self.url)))),
        }
    }

    /// [`finish`](Self::finish) but the abort.
    fn complete(&mut self) -> io::Result<()> {
        self.check()?;
        if self.parts == 0 {
            // Smaller than a part: one PUT, beside aborting the upload started for it, if any.
            let data = Bytes::from(std::mem::take(&mut self.part));
            let len = data.len();
            let (store, path) = (Arc::clone(&self.store), self.path.clone());
            let started = self.upload.take();
            if started.is_some() {
                self.counters.request();
            }
            self.counters.request();
            let put = wait(async move {
                let abort = async move {
                    if let Some(started) = started
                        && let Some(mut upload) = started.started().await
                    {
                        let _ = upload.abort().await;
                    }
                };
                futures_util::future::join(store.put(&path, data.into()), abort).await.0
            })?;
            put.map_err(|e| self.fail(&e, "PUT"))?;
            self.counters.uploaded(len);
            return Ok(());
        }
        if !self.part.is_empty() {
            self.send_part()?;
        }
        while !self.in_flight.is_empty() {
            self.wait_oldest()?;
        }
        self.started()?;
        let Some(Upload::Started(mut upload)) = self.upload.take() else {
            return Err(io::Error::other("the upload was lost"));
        };
        self.counters.request();
        let (upload, completed) = wait(async move {
            let completed = upload.complete().await;
            (upload, completed)
        })?;
        self.upload = Some(Upload::Started(upload));
        completed.map_err(|e| self.fail(&e, "completing the multipart upload of"))?;
        self.upload = None;
        Ok(())
    }

    /// Cancels the parts in flight, waits for them to stop, and aborts the
    /// upload (its errors ignored: this runs on failure and on drop).
    fn abort(&mut self) {
        for handle in &self.in_flight {
            handle.abort();
        }
        let handles: Vec<_> = self.in_flight.drain(..).collect();
        let upload = self.upload.take();
        if handles.is_empty() && upload.is_none() {
            return;
        }
        if upload.is_some() {
            self.counters.request();
        }
        let _ = wait(async move {
            for handle in handles {
                let _ = handle.await;
            }
            if let Some(upload) = upload
                && let Some(mut upload) = upload.started().await
            {
                let _ = upload.abort().await;
            }
        });
    }
}

impl Write for ObjectSink {
    fn write(&mut self, buf: &[u8]) -> io::Result<usize> {
        self.check()?;
        if self.done {
            return Err(io::Error::other(format!("{}: the upload is finished", self.url)));
        }
        if self.part.capacity() == 0 {
            self.part.reserve_exact(self.config.part_size);
        }
        let n = buf.len().min(self.config.part_size - self.part.len());
        self.part.extend_from_slice(&buf[..n]);
        if self.upload.is_none() && self.part.len() >= self.config.part_size / START_AT_PART_FRACTION {
            self.start_upload()?;
        }
        if self.part.len() >= self.config.part_size {
            self.send_part()?;
        }
        Ok(n)
    }

    /// Reports a failure of the parts uploaded so far; waits for nothing.
    fn flush(&mut self) -> io::Result<()> {
        self.check()?;
        self.reap()
    }
}

/// Durability cannot be promised before the object is complete: refused.
impl SyncWrite for ObjectSink {
    fn sync(&mut self) -> io::Result<()> {
        Err(io::Error::new(
            io::ErrorKind::Unsupported,
            format!(
                "{}: an object in a bucket is durable only once complete, at close; \
                 FlushType::FromMachine cannot be promised before",
                self.url
            ),
        ))
    }
}

impl Drop for ObjectSink {
    fn drop(&mut self) {
        if self.done {
            return;
        }
        if self.pid != std::process::id() {
            // A forked child: the upload and its parts belong to the parent's runtime.
            std::mem::forget(self.upload.take());
            std::mem::forget(std::mem::take(&mut self.in_flight));
            return;
        }
        self.abort();
    }
}
