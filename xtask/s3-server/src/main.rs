//! `s3-server ROOT PORT ACCESS_KEY SECRET_KEY`: serves the buckets under `ROOT` (one directory
//! each, objects as files) on `127.0.0.1:PORT` with the S3 API, requests signed with the key
//! pair. CreateBucket, HeadBucket, PutObject, HeadObject, GetObject (with ranges), DeleteObject,
//! ListObjectsV2 and the multipart upload's calls (for writing objects) are s3s-fs's; GetObject's body is read here in 1 MiB pieces.

use std::os::unix::fs::FileExt;
use std::path::PathBuf;

use bytes::Bytes;
use futures_util::StreamExt;
use hyper_util::rt::{TokioExecutor, TokioIo};
use s3s::dto::*;
use s3s::{S3, S3Request, S3Response, S3Result};

/// Bytes read per piece of a GetObject body.
const PIECE: u64 = 1 << 20;

struct Server {
    store: s3s_fs::FileSystem,
    root: PathBuf,
}

#[async_trait::async_trait]
impl S3 for Server {
    async fn create_bucket(&self, req: S3Request<CreateBucketInput>) -> S3Result<S3Response<CreateBucketOutput>> {
        self.store.create_bucket(req).await
    }

    async fn head_bucket(&self, req: S3Request<HeadBucketInput>) -> S3Result<S3Response<HeadBucketOutput>> {
        self.store.head_bucket(req).await
    }

    async fn put_object(&self, req: S3Request<PutObjectInput>) -> S3Result<S3Response<PutObjectOutput>> {
        self.store.put_object(req).await
    }

    async fn head_object(&self, req: S3Request<HeadObjectInput>) -> S3Result<S3Response<HeadObjectOutput>> {
        self.store.head_object(req).await
    }

    async fn delete_object(&self, req: S3Request<DeleteObjectInput>) -> S3Result<S3Response<DeleteObjectOutput>> {
        self.store.delete_object(req).await
    }

    async fn create_multipart_upload(
        &self,
        req: S3Request<CreateMultipartUploadInput>,
    ) -> S3Result<S3Response<CreateMultipartUploadOutput>> {
        self.store.create_multipart_upload(req).await
    }

    async fn upload_part(&self, req: S3Request<UploadPartInput>) -> S3Result<S3Response<UploadPartOutput>> {
        self.store.upload_part(req).await
    }

    async fn complete_multipart_upload(
        &self,
        req: S3Request<CompleteMultipartUploadInput>,
    ) -> S3Result<S3Response<CompleteMultipartUploadOutput>> {
        self.store.complete_multipart_upload(req).await
    }

    async fn abort_multipart_upload(
        &self,
        req: S3Request<AbortMultipartUploadInput>,
    ) -> S3Result<S3Response<AbortMultipartUploadOutput>> {
        self.store.abort_multipart_upload(req).await
    }

    async fn list_objects_v2(&self, req: S3Request<ListObjectsV2Input>) -> S3Result<S3Response<ListObjectsV2Output>> {
        self.store.list_objects_v2(req).await
    }

    /// s3s-fs answers (headers, range checks, errors); the body is replaced by the same bytes
    /// read in large pieces.
    async fn get_object(&self, req: S3Request<GetObjectInput>) -> S3Result<S3Response<GetObjectOutput>> {
        let (bucket, key, range) = (req.input.bucket.clone(), req.input.key.clone(), req.input.range);
        let mut response = self.store.get_object(req).await?;
        // s3s-fs has opened this file, so the names are safe (it refuses paths out of the root).
        let file = std::fs::File::open(self.root.join(&bucket).join(&key))
            .map_err(|e| s3s::s3_error!(e, InternalError, "cannot reopen the object"))?;
        let len = file.metadata().map_err(|e| s3s::s3_error!(e, InternalError))?.len();
        let span = match range {
            None => 0..len,
            Some(range) => range.check(len).map_err(|_| s3s::s3_error!(InvalidRange))?,
        };
        // Read in the server's task, as nginx reads in its event loop: the objects are in the
        // page cache, and a blocking-pool hop per piece cost more than the read.
        let pieces = futures_util::stream::iter(PieceRanges(span)).map(move |(start, n)| {
            let mut buf = vec![0; n as usize];
            file.read_exact_at(&mut buf, start).map(|()| Bytes::from(buf))
        });
        response.output.body = Some(StreamingBlob::wrap(pieces));
        Ok(response)
    }
}

/// The pieces of a byte range: (start, length), at most [`PIECE`] long.
struct PieceRanges(std::ops::Range<u64>);

impl Iterator for PieceRanges {
    type Item = (u64, u64);

    fn next(&mut self) -> Option<(u64, u64)> {
        let n = (self.0.end - self.0.start).min(PIECE);
        (n > 0).then(|| {
            self.0.start += n;
            (self.0.start - n, n)
        })
    }
}

#[tokio::main]
async fn main() -> Result<(), Box<dyn std::error::Error + Send + Sync>> {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let [root, port, access_key, secret_key] = &args[..] else {
        return Err("usage: s3-server ROOT PORT ACCESS_KEY SECRET_KEY".into());
    };
    let root = PathBuf::from(root).canonicalize()?;
    let server = Server { store: s3s_fs::FileSystem::new(&root).map_err(|e| format!("{e:?}"))?, root };
    let mut builder = s3s::service::S3ServiceBuilder::new(server);
    builder.set_auth(s3s::auth::SimpleAuth::from_single(access_key.as_str(), secret_key.as_str()));
    let service = builder.build();
    let listener = tokio::net::TcpListener::bind(("127.0.0.1", port.parse::<u16>()?)).await?;
    let http = hyper_util::server::conn::auto::Builder::new(TokioExecutor::new());
    loop {
        let (socket, _) = listener.accept().await?;
        // As nginx does: a response's last small piece is not held back (Nagle) for an ACK.
        socket.set_nodelay(true)?;
        let connection = http.serve_connection(TokioIo::new(socket), service.clone()).into_owned();
        tokio::spawn(async move {
            let _ = connection.await;
        });
    }
}
