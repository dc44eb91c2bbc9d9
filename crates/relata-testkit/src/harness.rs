//! The one test harness: a fresh PostgreSQL database and a fresh RabbitMQ queue prefix per
//! test (or benchmark run), each removed by a guard when it goes out of scope — also when
//! the test fails and unwinds, so no test needs to remember a `teardown().await`.
//!
//! - [`TestDatabase`]: `CREATE DATABASE relata_<label>_<random>` on the server of
//!   [`Services::admin_url`]; dropped `WITH (FORCE)` on drop. Migrations are the caller's
//!   choice: the store's tests apply `MIGRATOR` through the code under test, the end-to-end
//!   tests run `relata migrate`.
//! - [`QueuePrefix`]: a unique queue prefix; on drop, every queue and exchange of that
//!   prefix's topology is deleted.
//! - [`ScratchDir`]: a directory under the system's temporary directory, removed on drop.
//! - [`Harness`]: the three together, for tests and benchmarks that run the whole pipeline.
//!
//! `keep()` on any guard leaves its resource behind and prints where it is, for a person
//! who wants to look at what a run left (the benchmarks' `--keep`).
//!
//! Async drop does not exist: each guard cleans up on a thread of its own with a
//! single-threaded runtime, so it works from synchronous code, from any tokio runtime and
//! while unwinding from a panic. A cleanup that fails (the server is down) is reported on
//! standard error, never as a second panic.

use std::path::{Path, PathBuf};
use std::sync::OnceLock;
use std::time::Duration;

use anyhow::{Context, Result, bail};
use relata_queue::{Broker, BrokerConfig, TopologyConfig};

const DEFAULT_ADMIN_URL: &str = "postgres://postgres@127.0.0.1:5432/postgres";
const DEFAULT_AMQP_URL: &str = "amqp://guest:guest@127.0.0.1:5672/%2f";

/// Where the real services are.
#[derive(Debug, Clone)]
pub struct Services {
    /// A PostgreSQL URL naming a database the harness may connect to in order to create
    /// and drop others (usually `postgres`).
    pub admin_url: String,
    /// The RabbitMQ URL.
    pub amqp_url: String,
}

impl Services {
    /// `RELATA_TEST_DATABASE_URL` and `RELATA_TEST_AMQP_URL`, else the local servers that
    /// `scripts/ensure-services.sh` starts.
    pub fn from_env() -> Services {
        Services {
            admin_url: std::env::var("RELATA_TEST_DATABASE_URL")
                .unwrap_or_else(|_| DEFAULT_ADMIN_URL.to_owned()),
            amqp_url: std::env::var("RELATA_TEST_AMQP_URL")
                .unwrap_or_else(|_| DEFAULT_AMQP_URL.to_owned()),
        }
    }
}

/// `<label><12 hex digits>`: unique enough for parallel tests, short enough for a
/// PostgreSQL identifier (63 bytes) and a queue name.
pub fn unique_name(label: &str) -> String {
    let n: u64 = rand::random();
    format!("{label}{:012x}", n & 0xffff_ffff_ffff)
}

/// The URL of database `name` on the server of `admin_url`: the path segment after the
/// last `/` is replaced, a query string is kept.
pub fn database_url(admin_url: &str, name: &str) -> Result<String> {
    let (base, query) = match admin_url.split_once('?') {
        Some((b, q)) => (b, Some(q)),
        None => (admin_url, None),
    };
    let Some((server, _)) = base.rsplit_once('/') else {
        bail!("database URL {admin_url:?} has no database part");
    };
    if !server.contains("://") || server.ends_with(':') || server.ends_with('/') {
        bail!("database URL {admin_url:?} has no database part");
    }
    Ok(match query {
        Some(q) => format!("{server}/{name}?{q}"),
        None => format!("{server}/{name}"),
    })
}

/// Run `cleanup` to completion on a thread of its own with its own runtime.
fn run_cleanup<F>(what: String, cleanup: F)
where
    F: Future<Output = Result<()>> + Send + 'static,
{
    let joined = std::thread::spawn(move || {
        let rt = tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
            .context("a runtime for cleanup")?;
        rt.block_on(async {
            tokio::time::timeout(Duration::from_secs(30), cleanup)
                .await
                .context("timed out after 30 s")?
        })
    })
    .join();
    match joined {
        Ok(Ok(())) => {}
        Ok(Err(e)) => eprintln!("harness: could not remove {what}: {e:#}"),
        Err(_) => eprintln!("harness: cleanup of {what} panicked"),
    }
}

/// A fresh database, dropped when this guard is dropped.
#[derive(Debug)]
pub struct TestDatabase {
    name: String,
    url: String,
    admin_url: String,
    keep: bool,
}

impl TestDatabase {
    /// Create `relata_<label>_<random>`, empty (no migrations).
    pub async fn create(services: &Services, label: &str) -> Result<TestDatabase> {
        let name = unique_name(&format!("relata_{label}_"));
        let url = database_url(&services.admin_url, &name)?;
        relata_store::testing::create_database(&services.admin_url, &name)
            .await
            .with_context(|| {
                format!(
                    "create test database {name} through {} (is PostgreSQL running? \
                     scripts/ensure-services.sh starts it)",
                    redact(&services.admin_url)
                )
            })?;
        Ok(TestDatabase {
            name,
            url,
            admin_url: services.admin_url.clone(),
            keep: false,
        })
    }

    pub fn name(&self) -> &str {
        &self.name
    }

    /// The URL of this database, for `RELATA_DATABASE_URL` or `Store::connect`.
    pub fn url(&self) -> &str {
        &self.url
    }

    /// Leave the database behind when the guard is dropped.
    pub fn keep(&mut self) {
        self.keep = true;
    }
}

impl Drop for TestDatabase {
    fn drop(&mut self) {
        if self.keep {
            eprintln!("kept: database {}", self.name);
            return;
        }
        let admin = self.admin_url.clone();
        let name = self.name.clone();
        run_cleanup(format!("database {name}"), async move {
            relata_store::testing::drop_database(&admin, &name).await?;
            Ok(())
        });
    }
}

/// A fresh queue prefix; its topology is deleted when this guard is dropped.
#[derive(Debug)]
pub struct QueuePrefix {
    config: BrokerConfig,
    keep: bool,
}

impl QueuePrefix {
    /// A unique prefix `<label><random>` whose topology has these retry tiers (the
    /// delayed-retry queues are named by delay, so deletion must know them).
    pub fn new(services: &Services, label: &str, retry_delays_ms: Vec<u64>) -> QueuePrefix {
        let prefix = unique_name(label);
        let config = BrokerConfig {
            topology: TopologyConfig {
                prefix: prefix.clone(),
                retry_delays_ms,
                ..TopologyConfig::default()
            },
            connection_name: format!("relata-test-{prefix}"),
            ..BrokerConfig::new(services.amqp_url.clone())
        };
        QueuePrefix {
            config,
            keep: false,
        }
    }

    pub fn prefix(&self) -> &str {
        &self.config.topology.prefix
    }

    /// `RELATA_RETRY_DELAYS_MS` for processes that must declare the same topology.
    pub fn retry_delays_env(&self) -> String {
        self.config
            .topology
            .retry_delays_ms
            .iter()
            .map(u64::to_string)
            .collect::<Vec<_>>()
            .join(",")
    }

    pub fn amqp_url(&self) -> &str {
        &self.config.url
    }

    /// A broker configuration for this prefix's topology.
    pub fn broker_config(&self) -> BrokerConfig {
        self.config.clone()
    }

    /// Connect (declaring the topology).
    pub async fn broker(&self) -> Result<Broker> {
        Broker::connect(self.broker_config())
            .await
            .context("connect to the test broker (scripts/ensure-services.sh starts it)")
    }

    /// Leave the queues behind when the guard is dropped.
    pub fn keep(&mut self) {
        self.keep = true;
    }
}

impl Drop for QueuePrefix {
    fn drop(&mut self) {
        if self.keep {
            eprintln!("kept: queue prefix {}", self.prefix());
            return;
        }
        let mut config = self.broker_config();
        // Cleanup is best effort: do not wait the default 30 s for a broker that is down.
        config.connect_retry_max_ms = 5_000;
        run_cleanup(format!("queue prefix {}", self.prefix()), async move {
            let broker = Broker::connect(config).await?;
            let deleted = broker.delete_topology().await;
            broker.close().await;
            deleted?;
            Ok(())
        });
    }
}

/// A fresh directory under the system's temporary directory, removed on drop.
#[derive(Debug)]
pub struct ScratchDir {
    path: PathBuf,
    keep: bool,
}

impl ScratchDir {
    pub fn new(label: &str) -> Result<ScratchDir> {
        let path = std::env::temp_dir().join(unique_name(label));
        std::fs::create_dir_all(&path)
            .with_context(|| format!("create scratch directory {}", path.display()))?;
        Ok(ScratchDir { path, keep: false })
    }

    pub fn path(&self) -> &Path {
        &self.path
    }

    /// Leave the directory behind when the guard is dropped.
    pub fn keep(&mut self) {
        self.keep = true;
    }
}

impl Drop for ScratchDir {
    fn drop(&mut self) {
        if self.keep {
            eprintln!("kept: directory {}", self.path.display());
            return;
        }
        let _ = std::fs::remove_dir_all(&self.path);
    }
}

/// One run's world: a database, a queue prefix and a scratch directory, each removed
/// when the harness is dropped (queues first, then the database, then the directory).
#[derive(Debug)]
pub struct Harness {
    pub queues: QueuePrefix,
    pub db: TestDatabase,
    pub dir: ScratchDir,
}

impl Harness {
    /// Names start with `label` (`e2e`, `bench`), so a left-over resource says where it
    /// came from.
    pub async fn new(
        services: &Services,
        label: &str,
        retry_delays_ms: Vec<u64>,
    ) -> Result<Harness> {
        let db = TestDatabase::create(services, label).await?;
        Ok(Harness {
            queues: QueuePrefix::new(services, label, retry_delays_ms),
            db,
            dir: ScratchDir::new(&format!("relata-{label}-"))?,
        })
    }

    /// Leave everything behind.
    pub fn keep(&mut self) {
        self.queues.keep();
        self.db.keep();
        self.dir.keep();
    }
}

/// A URL with its password replaced by `***`, for messages.
fn redact(url: &str) -> String {
    let Some((scheme, rest)) = url.split_once("://") else {
        return url.to_owned();
    };
    let Some((userinfo, host)) = rest.split_once('@') else {
        return url.to_owned();
    };
    match userinfo.split_once(':') {
        Some((user, _)) => format!("{scheme}://{user}:***@{host}"),
        None => url.to_owned(),
    }
}

/// The `relata` binary of this workspace, for tests outside `relata-cli` (which cannot
/// use `CARGO_BIN_EXE_relata`).
///
/// `RELATA_BIN` names it explicitly. Otherwise it is built (once per test process, with
/// the cargo that runs the tests, into the same target directory and profile) so that a
/// test never runs a stale binary; a cargo that has just built it finds nothing to do.
pub fn relata_binary() -> &'static Path {
    static BIN: OnceLock<PathBuf> = OnceLock::new();
    BIN.get_or_init(|| match locate_relata() {
        Ok(p) => p,
        Err(e) => panic!("the relata binary: {e:#}"),
    })
}

fn locate_relata() -> Result<PathBuf> {
    if let Some(p) = std::env::var_os("RELATA_BIN") {
        return Ok(PathBuf::from(p));
    }
    // A test executable lives in <target>/<profile>/deps/.
    let exe = std::env::current_exe().context("the test executable's path")?;
    let deps = exe
        .parent()
        .context("the test executable has no directory")?;
    let profile_dir = if deps.file_name().is_some_and(|n| n == "deps") {
        deps.parent().context("deps has no parent")?
    } else {
        deps
    };
    let bin = profile_dir.join(format!("relata{}", std::env::consts::EXE_SUFFIX));
    let Some(cargo) = std::env::var_os("CARGO") else {
        // Not run by cargo: use what is there.
        if bin.exists() {
            return Ok(bin);
        }
        bail!("no {} and no CARGO to build it with", bin.display());
    };
    let target_dir = profile_dir
        .parent()
        .context("profile directory has no parent")?;
    let profile = profile_dir
        .file_name()
        .and_then(|n| n.to_str())
        .context("profile directory name")?;
    let profile = if profile == "debug" { "dev" } else { profile };
    let workspace = Path::new(env!("CARGO_MANIFEST_DIR")).join("../..");
    let status = std::process::Command::new(cargo)
        .current_dir(&workspace)
        .args([
            "build",
            "--quiet",
            "--locked",
            "-p",
            "relata-cli",
            "--bin",
            "relata",
        ])
        .arg("--profile")
        .arg(profile)
        .arg("--target-dir")
        .arg(target_dir)
        .status()
        .context("run cargo build for the relata binary")?;
    if !status.success() {
        bail!("cargo build -p relata-cli failed ({status})");
    }
    Ok(bin)
}

/// A moment at least `span` into its UTC day, and at most now: now, or — in the first
/// `span` after midnight — the last second of the day before. Tests that seed a history
/// ending at this moment and reaching `span` back (the drift report and the doubling
/// check count by UTC day) then see it all on one day, whatever the time they run.
pub fn seeding_moment(span: chrono::Duration) -> chrono::DateTime<chrono::Utc> {
    let now = chrono::Utc::now();
    let midnight = now
        .date_naive()
        .and_hms_opt(0, 0, 0)
        .expect("midnight exists")
        .and_utc();
    if now - midnight >= span {
        now
    } else {
        midnight - chrono::Duration::seconds(1)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn database_url_replaces_the_database_and_keeps_the_query() {
        assert_eq!(
            database_url("postgres://u@h:5432/postgres", "x").unwrap(),
            "postgres://u@h:5432/x"
        );
        assert_eq!(
            database_url("postgres://u@h/postgres?sslmode=disable", "x").unwrap(),
            "postgres://u@h/x?sslmode=disable"
        );
        assert!(database_url("postgres://u@h", "x").is_err());
        assert!(database_url("not a url", "x").is_err());
    }

    #[test]
    fn unique_names_differ_and_fit_an_identifier() {
        let a = unique_name("relata_e2e_");
        let b = unique_name("relata_e2e_");
        assert_ne!(a, b);
        assert!(a.len() < 63);
    }

    #[test]
    fn redact_hides_the_password_only() {
        assert_eq!(redact("postgres://u:secret@h/db"), "postgres://u:***@h/db");
        assert_eq!(redact("postgres://u@h/db"), "postgres://u@h/db");
    }
}
