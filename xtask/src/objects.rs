//! `cargo xtask objects`: reading files in object storage against real servers on loopback,
//! started here: an S3-compatible server (`moto_server`, from `moto[server]` in a venv of its
//! own), Azure Blob Storage's emulator (Azurite, from the npm registry, into
//! `target/azurite`) and nginx (Debian's `nginx-light`, installed with apt-get if missing)
//! serving a directory with range requests. Runs the ignored `live_` Rust tests
//! (riegeli-object-store: records and fetch plans, counted in the servers' logs; the CLI on
//! URLs) and the Python package's `tests_objects`, with the servers' addresses and credentials
//! in the environment the way `object_store` reads them.
//!
//! No GCS emulator that `object_store` can read runs here (`gcp-storage-emulator` from PyPI
//! answers no HEAD and no suffix range; fake-gcs-server is a Go binary): `gs://` URLs are read
//! by object_store's GCS client anonymously from nginx, which serves the bucket's objects at
//! GCS's XML API paths (`/<bucket>/<key>`); a second bucket, which `gs://` URLs write to, nginx
//! passes to moto (GCS's XML API is S3's for the requests object_store's GCS client makes).

use std::net::{SocketAddr, TcpListener, TcpStream};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use anyhow::{Context, Result, bail};
use xshell::{Shell, cmd};

use crate::common::{project_root, step};

/// The S3-compatible server and what the Python tests need with it.
const OBJECTS_DEPS: &[&str] =
    &["moto[server]==5.2.5", "pytest==9.2.0", "protobuf==7.36.2", "azure-storage-blob==12.31.1"];

/// Azure Blob Storage's emulator, from the npm registry.
const AZURITE: &str = "azurite@3.35.0";

/// The emulator's well-known account and key (public: Azurite's documentation gives them).
const AZURITE_ACCOUNT: &str = "devstoreaccount1";
const AZURITE_KEY: &str = "Eby8vdM02xNOcqFlqUwJPLlmEtlCDXJ1OUzFT50uSRZ6IFsuFq2UVErCz4I6tq/K1SZFPTOtr/KBHBeksoGMGw==";

/// The bucket the tests use.
const BUCKET: &str = "riegeli-test";
/// The bucket that `gs://` URLs write to: moto's, behind nginx (see `nginx_conf`).
const GCS_WRITE_BUCKET: &str = "riegeli-test-gcs-writes";

/// Golden files the CLI's live tests read by URL (paths under `testdata/`).
const LIVE_TESTDATA: &[&str] = &["array_record/simple_zstd.array_record", "valid/transposed_zstd.riegeli"];

/// Children killed when the task ends, however it ends.
struct Servers(Vec<Child>);

impl Drop for Servers {
    fn drop(&mut self) {
        for child in &mut self.0 {
            let _ = child.kill();
            let _ = child.wait();
        }
    }
}

/// The benchmark's servers, and the directory on tmpfs (if any) its S3 server kept objects in:
/// removed when the servers are stopped.
struct BenchServers {
    servers: Servers,
    scratch: Option<PathBuf>,
}

impl Drop for BenchServers {
    fn drop(&mut self) {
        // The servers first (stopped as `Servers` stops them), then their files.
        drop(Servers(std::mem::take(&mut self.servers.0)));
        if let Some(scratch) = &self.scratch {
            let _ = std::fs::remove_dir_all(scratch);
        }
    }
}

/// `N` distinct ports free on loopback now: all are held until all are chosen, so no two of
/// the servers started on them can be handed the same port (one taken from a port released
/// before the other server bound it made CI's moto_server lose its port to nginx, whose static
/// root then answered the bucket's creation with 405).
fn free_ports<const N: usize>() -> Result<[u16; N]> {
    let listeners = (0..N).map(|_| TcpListener::bind("127.0.0.1:0")).collect::<std::io::Result<Vec<_>>>()?;
    let mut ports = [0; N];
    for (port, listener) in ports.iter_mut().zip(&listeners) {
        *port = listener.local_addr()?.port();
    }
    Ok(ports)
}

impl Servers {
    /// Fails naming the first server (of `names`, in the order started) that has exited: one
    /// that lost its port to another process leaves whatever took it answering in its place.
    fn all_running(&mut self, names: &[&str]) -> Result<()> {
        for (child, name) in self.0.iter_mut().zip(names) {
            if let Some(status) = child.try_wait()? {
                bail!("{name} exited ({status}) after its port answered: another process may hold the port");
            }
        }
        Ok(())
    }
}

/// Waits until something accepts connections on `port`.
fn wait_for(port: u16, what: &str, child: &mut Child, log: &Path) -> Result<()> {
    let deadline = Instant::now() + Duration::from_secs(60);
    let addr = SocketAddr::from(([127, 0, 0, 1], port));
    while Instant::now() < deadline {
        if TcpStream::connect_timeout(&addr, Duration::from_millis(200)).is_ok() {
            return Ok(());
        }
        if let Some(status) = child.try_wait()? {
            let log = std::fs::read_to_string(log).unwrap_or_default();
            bail!("{what} exited ({status}) before listening on {port}:\n{log}");
        }
        std::thread::sleep(Duration::from_millis(100));
    }
    bail!("{what} did not listen on {port} within 60 s")
}

/// nginx's path, installing Debian's `nginx-light` if there is none.
fn nginx(sh: &Shell) -> Result<PathBuf> {
    let find = || {
        ["/usr/sbin/nginx", "/usr/bin/nginx", "/usr/local/sbin/nginx"].iter().map(PathBuf::from).find(|p| p.exists())
    };
    if let Some(path) = find() {
        return Ok(path);
    }
    step("installing nginx-light (apt-get)");
    if cmd!(sh, "apt-get install -y --no-install-recommends nginx-light").run().is_err() {
        cmd!(sh, "apt-get update").run().context("apt-get update failed: nginx is needed")?;
        cmd!(sh, "apt-get install -y --no-install-recommends nginx-light").run()?;
    }
    find().context("nginx not found after installing nginx-light")
}

/// The nginx configuration: one server on loopback serving `www`, logging each request's
/// method, path, status, body bytes and Range header (what the tests count).
fn nginx_conf(dir: &Path, port: u16, gcs_writes: Option<u16>) -> String {
    let dir = dir.display();
    // GCS's XML API is S3's for what object_store's GCS client asks (PUT, the multipart
    // upload's POST `?uploads`, PUT `?partNumber=&uploadId=`, POST and DELETE `?uploadId=`, ranged
    // GET, HEAD), path-style as moto takes it: the bucket written through `gs://` URLs is a moto
    // bucket behind nginx, which passes on the path it decoded (object_store escapes the bucket's
    // `-` as `%2D`, which moto does not decode). (No GCS emulator on the package registries
    // takes these requests.) moto answers an unsigned GET of an object an unsigned PUT made with
    // 403 unless the PUT asked for it to be public.
    let gcs = gcs_writes.map_or_else(String::new, |s3_port| {
        format!(
            "location /{GCS_WRITE_BUCKET}/ {{ proxy_pass http://127.0.0.1:{s3_port}/{GCS_WRITE_BUCKET}/; proxy_http_version 1.1; \
             proxy_set_header Authorization \"\"; proxy_set_header x-amz-acl public-read; proxy_request_buffering off; client_max_body_size 0; }}"
        )
    });
    format!(
        "daemon off;\nmaster_process off;\nworker_processes 1;\npid {dir}/nginx.pid;\nerror_log {dir}/nginx-error.log;\n\
         events {{ worker_connections 64; }}\n\
         http {{\n  log_format ranges '$request_method $uri $status $body_bytes_sent \"$http_range\"';\n  \
         access_log {dir}/access.log ranges;\n  client_body_temp_path {dir}/tmp;\n  proxy_temp_path {dir}/tmp;\n  \
         fastcgi_temp_path {dir}/tmp;\n  uwsgi_temp_path {dir}/tmp;\n  scgi_temp_path {dir}/tmp;\n  \
         server {{ listen 127.0.0.1:{port}; root {dir}/www; {gcs} }}\n}}\n"
    )
}

/// Azurite's blob server, installed with npm into `target/azurite` if it is not there.
fn azurite(sh: &Shell) -> Result<PathBuf> {
    let prefix = project_root().join("target").join("azurite");
    let bin = prefix.join("node_modules").join(".bin").join("azurite-blob");
    let stamp = prefix.join(AZURITE);
    if bin.exists() && stamp.exists() {
        return Ok(bin);
    }
    step(&format!("installing {AZURITE} (npm)"));
    std::fs::create_dir_all(&prefix)?;
    cmd!(sh, "npm install --no-audit --no-fund --loglevel=error --prefix {prefix} {AZURITE}")
        .run()
        .context("npm install azurite failed: Node.js and npm are needed for the Azure tests")?;
    std::fs::write(stamp, "")?;
    Ok(bin)
}

/// The servers running, and what a client needs to know of them.
pub(crate) struct Live {
    /// Stops them when dropped.
    _servers: Servers,
    /// The venv's python (moto, boto3, pytest, our package).
    pub(crate) python: PathBuf,
    /// Endpoints, credentials and test locations, for the environment of the clients.
    pub(crate) env: Vec<(&'static str, String)>,
}

pub(crate) fn tests(sh: &Shell) -> Result<()> {
    let live = serve(sh)?;
    let python = &live.python;
    step("live tests: riegeli-object-store and the CLI on s3://, az://, gs:// and http:// URLs");
    // The workspace with all features, as `ci`'s test step builds it, so that its build is
    // reused (the two packages alone unify other features and rebuild: minutes on 2 cores);
    // the `live_` tests are in riegeli-object-store and the CLI.
    let mut rust = cmd!(sh, "cargo test --locked --workspace --all-features -- --ignored live_");
    for (key, value) in &live.env {
        rust = rust.env(key, value);
    }
    rust.run()?;
    step("live tests: the Python package on s3://, az://, gs:// and http:// URLs");
    let mut pytest = cmd!(sh, "{python} -m pytest -q crates/riegeli-python/tests_objects");
    for (key, value) in &live.env {
        pytest = pytest.env(key, value);
    }
    pytest.run()?;
    Ok(())
}

/// Starts `command` with its stdout and stderr in the file `log`.
fn spawn_logged(command: &mut Command, log: &Path, what: &str) -> Result<Child> {
    let file = std::fs::File::create(log)?;
    let child = command.stdout(file.try_clone()?).stderr(file).stdin(Stdio::null()).spawn();
    child.with_context(|| format!("cannot start {what}"))
}

/// Starts nginx serving `dir/www` on loopback `port` (configuration, logs and temporary files in
/// `dir`), added to `servers`; returns once it listens.
fn start_nginx(nginx: &Path, dir: &Path, port: u16, gcs_writes: Option<u16>, servers: &mut Servers) -> Result<()> {
    let conf = dir.join("nginx.conf");
    std::fs::write(&conf, nginx_conf(dir, port, gcs_writes))?;
    let child = Command::new(nginx)
        .args(["-p".as_ref(), dir.as_os_str(), "-c".as_ref(), conf.as_os_str()])
        .stdout(Stdio::null())
        .stderr(std::fs::File::create(dir.join("nginx-stderr.log"))?)
        .stdin(Stdio::null())
        .spawn()
        .context("cannot start nginx")?;
    servers.0.push(child);
    let child = servers.0.last_mut().context("nginx was just pushed")?;
    wait_for(port, "nginx", child, &dir.join("nginx-error.log"))
}

/// Starts what `cargo xtask bench objects` reads from, on loopback: `xtask/s3-server` (an
/// S3-compatible server: s3s over files, built here; moto_server serves about 70 MB/s, which would
/// make it the bound of every figure) and nginx. Returns the servers (stopped when dropped) and
/// the environment the benchmark reads them from.
pub(crate) fn serve_for_bench(sh: &Shell) -> Result<(impl Drop, Vec<(&'static str, String)>)> {
    let nginx = nginx(sh)?;
    step("building xtask/s3-server (release)");
    cmd!(sh, "cargo build --release --locked --manifest-path xtask/s3-server/Cargo.toml --target-dir target/s3-server")
        .run()?;
    let dir = project_root().join("target").join("objects-bench");
    let _ = std::fs::remove_dir_all(&dir);
    for sub in ["www", "tmp"] {
        std::fs::create_dir_all(dir.join(sub))?;
    }
    // The S3 server keeps its objects on tmpfs when there is one: this machine's disk is the
    // local file's, against which writing an object is timed, and the server's writes (the
    // parts, then the object they are joined into) would share it and its writeback, as S3's own
    // disks do not. A bucket is a directory of the server's root.
    let shm = Path::new("/dev/shm");
    let s3_root = if shm.is_dir() { shm.join("riegeli-objects-bench-s3") } else { dir.join("s3") };
    let _ = std::fs::remove_dir_all(&s3_root);
    std::fs::create_dir_all(s3_root.join(BUCKET))?;
    step("starting xtask/s3-server and nginx on loopback");
    let mut servers = Servers(Vec::new());
    let [s3_port, http_port] = free_ports()?;
    let s3_log = dir.join("s3-server.log");
    let mut server = Command::new(project_root().join("target/s3-server/release/s3-server"));
    server.arg(&s3_root).args([&s3_port.to_string(), "test", "test"]);
    let server = spawn_logged(&mut server, &s3_log, "xtask/s3-server")?;
    servers.0.push(server);
    wait_for(s3_port, "s3-server", &mut servers.0[0], &s3_log)?;
    start_nginx(&nginx, &dir, http_port, None, &mut servers)?;
    servers.all_running(&["xtask/s3-server", "nginx"])?;
    let env = servers_env(&format!("http://127.0.0.1:{s3_port}"), &s3_log, http_port, &dir);
    let scratch = s3_root.starts_with(shm).then_some(s3_root);
    Ok((BenchServers { servers, scratch }, env))
}

/// The environment of clients of an S3 server at `endpoint` (the test bucket, credentials it
/// takes, its log) and of nginx on `http_port` serving `dir/www`.
fn servers_env(endpoint: &str, s3_log: &Path, http_port: u16, dir: &Path) -> Vec<(&'static str, String)> {
    vec![
        ("AWS_ENDPOINT", endpoint.to_owned()),
        ("AWS_ALLOW_HTTP", "true".to_owned()),
        ("AWS_ACCESS_KEY_ID", "test".to_owned()),
        ("AWS_SECRET_ACCESS_KEY", "test".to_owned()),
        ("AWS_REGION", "us-east-1".to_owned()),
        ("RIEGELI_TEST_S3_BUCKET", BUCKET.to_owned()),
        ("RIEGELI_TEST_S3_LOG", s3_log.display().to_string()),
        ("RIEGELI_TEST_HTTP_URL", format!("http://127.0.0.1:{http_port}")),
        ("RIEGELI_TEST_HTTP_ROOT", dir.join("www").display().to_string()),
        ("RIEGELI_TEST_HTTP_LOG", dir.join("access.log").display().to_string()),
    ]
}

/// Starts moto_server and nginx on loopback (their venv and nginx installed first, the test
/// bucket created, the golden files the CLI's tests read uploaded).
pub(crate) fn serve(sh: &Shell) -> Result<Live> {
    let python = crate::python::venv_with(sh, "objects-venv", OBJECTS_DEPS)?;
    crate::python::install_package_into(sh, &[python.as_path()])?;
    let nginx = nginx(sh)?;
    let azurite = azurite(sh)?;
    let dir = project_root().join("target").join("objects-test");
    let _ = std::fs::remove_dir_all(&dir);
    for sub in ["www", "tmp", "azurite"] {
        std::fs::create_dir_all(dir.join(sub))?;
    }
    let bin = python.parent().context("venv python has no directory")?;

    step("starting moto_server, Azurite and nginx on loopback");
    let mut servers = Servers(Vec::new());
    let [s3_port, http_port, az_port] = free_ports()?;
    // Its request log (werkzeug's, one line per request) goes to stderr.
    let s3_log = dir.join("moto.log");
    let mut moto = Command::new(bin.join("moto_server"));
    moto.args(["-H", "127.0.0.1", "-p", &s3_port.to_string()]);
    let moto = spawn_logged(&mut moto, &s3_log, "moto_server")?;
    servers.0.push(moto);
    start_nginx(&nginx, &dir, http_port, Some(s3_port), &mut servers)?;
    // Its debug log has a line per request, with the method, URL and Range header.
    let az_log = dir.join("azurite-debug.log");
    let az_stderr = dir.join("azurite.log");
    let azurite = Command::new(azurite)
        .args(["--blobHost", "127.0.0.1", "--blobPort", &az_port.to_string(), "--silent"])
        .args(["--skipApiVersionCheck", "--disableTelemetry", "--location"])
        .arg(dir.join("azurite"))
        .arg("--debug")
        .arg(&az_log)
        .stdout(Stdio::null())
        .stderr(std::fs::File::create(&az_stderr)?)
        .stdin(Stdio::null())
        .spawn()
        .context("cannot start azurite-blob")?;
    servers.0.push(azurite);
    let [moto, _nginx, azurite] = &mut servers.0[..] else { unreachable!("three servers") };
    wait_for(s3_port, "moto_server", moto, &s3_log)?;
    wait_for(az_port, "azurite-blob", azurite, &az_stderr)?;
    servers.all_running(&["moto_server", "nginx", "azurite-blob"])?;

    let endpoint = format!("http://127.0.0.1:{s3_port}");
    // The test bucket, with the golden files the CLI's tests read at `testdata/<path>` (also
    // in nginx's root), by one client.
    let setup = format!(
        "import boto3, sys; s3 = boto3.client('s3', endpoint_url='{endpoint}', aws_access_key_id='test', \
         aws_secret_access_key='test', region_name='us-east-1')\n\
         s3.create_bucket(Bucket='{BUCKET}')\n\
         s3.create_bucket(Bucket='{GCS_WRITE_BUCKET}')\n\
         for path in sys.argv[1:]: s3.upload_file('testdata/' + path, '{BUCKET}', 'testdata/' + path)"
    );
    // nginx serves them at `/testdata/<path>`, and as objects of the GCS bucket (GCS's XML
    // API paths, `/<bucket>/<key>`) at `/<bucket>/testdata/<path>`.
    for path in LIVE_TESTDATA {
        for root in [dir.join("www"), dir.join("www").join(BUCKET)] {
            let target = root.join("testdata").join(path);
            std::fs::create_dir_all(target.parent().context("a testdata path has a directory")?)?;
            std::fs::copy(project_root().join("testdata").join(path), target)?;
        }
    }
    cmd!(sh, "{python} -c {setup} {LIVE_TESTDATA...}").run().context("cannot create the test bucket")?;
    let az_url = format!("http://127.0.0.1:{az_port}");
    let setup = format!(
        "import sys; from azure.storage.blob import BlobServiceClient\n\
         c = BlobServiceClient.from_connection_string('DefaultEndpointsProtocol=http;AccountName={AZURITE_ACCOUNT};\
         AccountKey={AZURITE_KEY};BlobEndpoint={az_url}/{AZURITE_ACCOUNT};')\n\
         c.create_container('{BUCKET}')\n\
         for path in sys.argv[1:]: c.get_blob_client('{BUCKET}', 'testdata/' + path).upload_blob(open('testdata/' + path, 'rb'))"
    );
    cmd!(sh, "{python} -c {setup} {LIVE_TESTDATA...}").run().context("cannot create the test container")?;

    let mut env = servers_env(&endpoint, &s3_log, http_port, &dir);
    env.extend([
        // object_store's GCS client, pointed at nginx: anonymous reads of `gs://BUCKET/key`
        // are GETs (and HEADs) of `/BUCKET/key`, which nginx serves from `www/BUCKET/key`.
        ("GOOGLE_BASE_URL", format!("http://127.0.0.1:{http_port}")),
        ("GOOGLE_SKIP_SIGNATURE", "true".to_owned()),
        ("GOOGLE_ALLOW_HTTP", "true".to_owned()),
        ("RIEGELI_TEST_GS_BUCKET", BUCKET.to_owned()),
        // `gs://` URLs of this bucket are written (and read back) through nginx to moto. A
        // write asks for a token even with GOOGLE_SKIP_SIGNATURE: this key has object_store
        // use an empty one (nginx drops it on its way to moto).
        ("RIEGELI_TEST_GS_WRITE_BUCKET", GCS_WRITE_BUCKET.to_owned()),
        (
            "GOOGLE_SERVICE_ACCOUNT_KEY",
            r#"{"disable_oauth": true, "client_email": "", "private_key": "", "private_key_id": ""}"#.to_owned(),
        ),
        // object_store's Azure builder, pointed at the emulator (its account and key).
        ("AZURE_STORAGE_USE_EMULATOR", "true".to_owned()),
        ("AZURITE_BLOB_STORAGE_URL", az_url.clone()),
        ("RIEGELI_TEST_AZ_CONTAINER", BUCKET.to_owned()),
        ("RIEGELI_TEST_AZ_LOG", az_log.display().to_string()),
        (
            "RIEGELI_TEST_AZ_CONNECTION",
            format!(
                "DefaultEndpointsProtocol=http;AccountName={AZURITE_ACCOUNT};AccountKey={AZURITE_KEY};\
                 BlobEndpoint={az_url}/{AZURITE_ACCOUNT};"
            ),
        ),
    ]);
    Ok(Live { _servers: servers, python, env })
}
