//! `s3-server ROOT PORT ACCESS_KEY SECRET_KEY`: serves the buckets under `ROOT` (one directory
//! each, objects as files) on `127.0.0.1:PORT` with the S3 API, requests signed with the key
//! pair. CreateBucket, HeadBucket, PutObject, HeadObject, GetObject (with ranges), DeleteObject,
//! ListObjectsV2 and the multipart upload's calls (for writing objects) are s3s-fs's; GetObject's body is read here in 1 MiB pieces,
//! and CompleteMultipartUpload joins the parts here with the kernel's file copy.

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

    /// The part written where s3s-fs keeps parts, without s3s-fs's MD5 of it: on this machine
    /// the server's hashing (MD5 in software, a fifth of all the samples of a write) competed
    /// with the client's encoding for the same two cores, where S3's runs on its own. The
    /// part's ETag names the part (upload, number, size), not its content: clients only hand
    /// it back at the completion, whose ETag is made from them as S3 makes it.
    async fn upload_part(&self, req: S3Request<UploadPartInput>) -> S3Result<S3Response<UploadPartOutput>> {
        let input = req.input;
        let upload_id = input.upload_id;
        if !(1..=10_000).contains(&input.part_number) || !upload_id.chars().all(|c| c.is_ascii_hexdigit() || c == '-') {
            return Err(s3s::s3_error!(InvalidArgument));
        }
        if !self.root.join(format!(".upload-{upload_id}.json")).exists() {
            return Err(s3s::s3_error!(NoSuchUpload));
        }
        let mut body = input.body.ok_or_else(|| s3s::s3_error!(IncompleteBody))?;
        let mut bytes = Vec::new();
        while let Some(piece) = body.next().await {
            bytes.extend_from_slice(&piece.map_err(|e| s3s::s3_error!(IncompleteBody, "{e}"))?);
        }
        let (root, part) = (self.root.clone(), input.part_number);
        let name = format!("{}/{upload_id}/{part}/{}", req.uri.path(), bytes.len());
        tokio::task::spawn_blocking(move || -> std::io::Result<()> {
            let tmp = root.join(format!(".tmp.part.{upload_id}.{part}"));
            std::fs::write(&tmp, &bytes)?;
            std::fs::rename(tmp, root.join(format!(".upload_id-{upload_id}.part-{part}")))?;
            Ok(())
        })
        .await
        .map_err(|e| s3s::s3_error!(InternalError, "{e}"))?
        .map_err(|e| s3s::s3_error!(e, InternalError, "writing the part"))?;
        let digest = <md5::Md5 as md5::Digest>::digest(name.as_bytes());
        let e_tag = digest.iter().map(|b| format!("{b:02x}")).collect();
        Ok(S3Response::new(UploadPartOutput { e_tag: Some(ETag::Strong(e_tag)), ..Default::default() }))
    }

    /// s3s-fs's completion reads every part back in 64 KiB pieces, hashes it again and copies
    /// it: 213-286 ms of a 620 ms write of 64 MB here, a cost of this server, not of the client
    /// (S3 answers a completion without copying the object through it). Here the parts are
    /// joined with the kernel's copy (`std::io::copy` between files: `copy_file_range`), the
    /// ETag is made from the parts' ETags the client sent (the MD5 of their MD5s and "-N", as
    /// S3 makes it), and s3s-fs's own records of the upload and the object are written where
    /// it keeps them (its file layout, pinned by the `=0.14.1` requirement).
    async fn complete_multipart_upload(
        &self,
        req: S3Request<CompleteMultipartUploadInput>,
    ) -> S3Result<S3Response<CompleteMultipartUploadOutput>> {
        let input = req.input;
        let parts = input.multipart_upload.and_then(|m| m.parts).unwrap_or_default();
        let upload_id = input.upload_id;
        // A UUID: nothing that could name a path elsewhere.
        if parts.is_empty() || !upload_id.chars().all(|c| c.is_ascii_hexdigit() || c == '-') {
            return Err(s3s::s3_error!(InvalidPart));
        }
        let root = self.root.clone();
        let object = root.join(&input.bucket).join(&input.key);
        if !object.starts_with(&root) || input.key.split('/').any(|p| p == "..") {
            return Err(s3s::s3_error!(InvalidArgument, "bad key"));
        }
        let upload_info = root.join(format!(".upload-{upload_id}.json"));
        if !upload_info.exists() {
            return Err(s3s::s3_error!(NoSuchUpload));
        }
        let (bucket, key) = (input.bucket, input.key);
        let (b64_bucket, b64_key) = (
            base64_simd::URL_SAFE_NO_PAD.encode_to_string(&bucket),
            base64_simd::URL_SAFE_NO_PAD.encode_to_string(&key),
        );
        let joined = tokio::task::spawn_blocking(move || -> std::io::Result<String> {
            let tmp = root.join(format!(".tmp.complete.{upload_id}"));
            let mut out = std::fs::File::create(&tmp)?;
            let mut md5s = Vec::with_capacity(16 * parts.len());
            let mut paths = Vec::with_capacity(parts.len());
            for (i, part) in parts.iter().enumerate() {
                if part.part_number != Some(i as i32 + 1) {
                    return Err(std::io::Error::other("parts out of order"));
                }
                let path = root.join(format!(".upload_id-{upload_id}.part-{}", i + 1));
                std::io::copy(&mut std::fs::File::open(&path)?, &mut out)?;
                let tag = part.e_tag.as_ref().map(|t| t.value().trim_matches('"')).unwrap_or_default();
                let md5 = (0..tag.len())
                    .step_by(2)
                    .map(|j| tag.get(j..j + 2).and_then(|h| u8::from_str_radix(h, 16).ok()))
                    .collect::<Option<Vec<u8>>>()
                    .filter(|md5| md5.len() == 16)
                    .ok_or_else(|| std::io::Error::other("a part without its MD5 ETag"))?;
                md5s.extend(md5);
                paths.push(path);
            }
            std::fs::rename(&tmp, &object)?;
            for path in paths {
                std::fs::remove_file(path)?;
            }
            std::fs::remove_file(&upload_info)?;
            // The object's attributes (its content type) from the upload's, as s3s-fs moves them.
            let meta = |upload: &str| root.join(format!(".bucket-{b64_bucket}.object-{b64_key}{upload}.metadata.json"));
            let upload_meta = meta(&format!(".upload-{upload_id}"));
            if upload_meta.exists() {
                std::fs::rename(upload_meta, meta(""))?;
            }
            let digest = <md5::Md5 as md5::Digest>::digest(&md5s);
            let hex: String = digest.iter().map(|b| format!("{b:02x}")).collect();
            let e_tag = format!("{hex}-{}", parts.len());
            // The ETag where s3s-fs's HeadObject and GetObject look for it (else they hash the object).
            let info = serde_json::json!({ "e_tag": e_tag });
            std::fs::write(
                root.join(format!(".bucket-{b64_bucket}.object-{b64_key}.internal.json")),
                info.to_string(),
            )?;
            Ok(e_tag)
        })
        .await
        .map_err(|e| s3s::s3_error!(InternalError, "{e}"))?;
        let e_tag = joined.map_err(|e| s3s::s3_error!(e, InternalError, "completing the upload"))?;
        let output = CompleteMultipartUploadOutput {
            bucket: Some(bucket),
            key: Some(key),
            e_tag: Some(ETag::Strong(e_tag)),
            ..Default::default()
        };
        Ok(S3Response::new(output))
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
