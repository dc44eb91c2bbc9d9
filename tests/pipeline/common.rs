//! The harness: a fresh database and queue prefix per test, `relata` processes with the
//! environment pointing at them, and ways to wait for the ledger.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Output, Stdio};
use std::time::{Duration, Instant};

use relata_core::Task;
use relata_queue::Broker;
use relata_store::Store;
use relata_testkit::Route;
use relata_testkit::harness::{Harness, Services, TestDatabase, relata_binary};
use relata_testkit::{Behaviour, FakeModelServer, FakeOptions};

/// One test's world: a fresh database and queue prefix (removed when the `Env` drops,
/// also when the test fails), a scratch directory and a fake model server.
pub struct Env {
    pub database_url: String,
    pub prefix: String,
    pub fake: FakeModelServer,
    pub dir: PathBuf,
    extra: Vec<(String, String)>,
    harness: Harness,
}

impl Env {
    pub async fn new(options: FakeOptions, queue: Vec<Behaviour>) -> Env {
        let harness = Harness::new(&Services::from_env(), "e2e", vec![300, 600])
            .await
            .expect("test services (run scripts/ensure-services.sh)");
        let fake = FakeModelServer::start_with(options, queue, 0)
            .await
            .expect("fake model server");
        let env = Env {
            database_url: harness.db.url().to_owned(),
            prefix: harness.queues.prefix().to_owned(),
            fake,
            dir: harness.dir.path().to_owned(),
            extra: Vec::new(),
            harness,
        };
        let out = env.relata(&["migrate"]);
        assert!(
            out.status.success(),
            "migrate failed: {}",
            String::from_utf8_lossy(&out.stderr)
        );
        env
    }

    pub fn set(&mut self, name: &str, value: &str) {
        self.extra.push((name.to_owned(), value.to_owned()));
    }

    /// The value `name` has in this environment's commands: the last [`Env::set`], else
    /// the base model settings every command gets.
    pub fn var(&self, name: &str) -> Option<String> {
        if let Some((_, v)) = self.extra.iter().rev().find(|(k, _)| k == name) {
            return Some(v.clone());
        }
        match name {
            "RELATA_MODEL_URL" => Some(self.fake.base_url()),
            "RELATA_MODEL_NAME" => Some("fake-model".into()),
            "RELATA_MODEL_DIALECT" => Some("json_schema".into()),
            "RELATA_MODEL_EXTRACT_PROMPT" => Some("extract-p2".into()),
            _ => None,
        }
    }

    pub fn command(&self, args: &[&str]) -> Command {
        let mut cmd = Command::new(relata_binary());
        cmd.args(args)
            .env_remove("RELATA_CONFIG")
            .env("RELATA_DATABASE_URL", &self.database_url)
            .env("RELATA_AMQP_URL", self.harness.queues.amqp_url())
            .env("RELATA_QUEUE_PREFIX", &self.prefix)
            .env("RELATA_MODEL_URL", self.fake.base_url())
            .env("RELATA_MODEL_NAME", "fake-model")
            .env("RELATA_MODEL_DIALECT", "json_schema")
            // These tests script responses that copy quotes (relata.extract v1); the
            // default prompt's (extract-p10, v3) have their own, which set it.
            .env("RELATA_MODEL_EXTRACT_PROMPT", "extract-p2")
            // ... and answers in relata.answer v1's shape (answer-p2's v2 has its own
            // test).
            .env("RELATA_MODEL_ANSWER_PROMPT", "answer-p1")
            .env("RELATA_MODEL_RETRY_BASE_DELAY_MS", "20")
            .env("RELATA_MODEL_RETRY_MAX_DELAY_MS", "100")
            .env("RELATA_MODEL_REQUEST_TIMEOUT_MS", "10000")
            .env(
                "RELATA_RETRY_DELAYS_MS",
                self.harness.queues.retry_delays_env(),
            )
            .env("RELATA_LOG", "info");
        for (k, v) in &self.extra {
            cmd.env(k, v);
        }
        cmd
    }

    pub fn relata(&self, args: &[&str]) -> Output {
        self.command(args).output().expect("run relata")
    }

    /// An environment pointed at the real model server `scripts/real-model.sh` started
    /// (the fake stays up, so a test can check it was not asked), and a stride of `docs`
    /// Wikipedia summaries (title, text) through that script's corpus: different topics,
    /// nobody here wrote them.
    pub async fn real_model(max_tokens: &str, docs: usize) -> (Env, Vec<(String, String)>) {
        let var = |name: &str| {
            std::env::var(name).unwrap_or_else(|_| panic!("{name} (scripts/real-model.sh)"))
        };
        let summaries = var("RELATA_REAL_MODEL_SUMMARIES");
        let data: serde_json::Map<String, serde_json::Value> =
            serde_json::from_str(&std::fs::read_to_string(&summaries).unwrap()).unwrap();
        let picked = data
            .iter()
            .step_by(data.len() / docs)
            .take(docs)
            .map(|(title, v)| (title.clone(), v["extract"].as_str().unwrap().to_owned()))
            .collect();

        let mut env = Env::new(FakeOptions::default(), vec![]).await;
        env.set("RELATA_MODEL_URL", &var("RELATA_MODEL_URL"));
        env.set("RELATA_MODEL_NAME", &var("RELATA_MODEL_NAME"));
        env.set("RELATA_MODEL_DIALECT", "json_object_schema");
        env.set("RELATA_MODEL_EXTRACT_PROMPT", "extract-p10");
        env.set("RELATA_MODEL_ANSWER_PROMPT", "answer-p2");
        env.set("RELATA_MODEL_MAX_TOKENS", max_tokens);
        env.set("RELATA_MODEL_REQUEST_TIMEOUT_MS", "180000");
        (env, picked)
    }

    /// `relata ingest` of (title, text) documents as JSONL, titled, from source
    /// `wikipedia`; the ingest must succeed.
    pub fn ingest_titled(&self, docs: &[(String, String)]) {
        let jsonl = self.dir.join("real.jsonl");
        let lines: Vec<String> = docs
            .iter()
            .map(|(title, text)| {
                serde_json::json!({"id": title, "title": title, "text": text}).to_string()
            })
            .collect();
        std::fs::write(&jsonl, lines.join("\n")).unwrap();
        let out = self.relata(&[
            "ingest",
            "--jsonl",
            jsonl.to_str().unwrap(),
            "--source",
            "wikipedia",
            "--title-field",
            "title",
        ]);
        assert!(
            out.status.success(),
            "{}",
            String::from_utf8_lossy(&out.stderr)
        );
    }

    /// A worker process serving metrics on a free port.
    pub fn spawn_worker(&self, task: Task) -> Worker {
        self.spawn_worker_with(task, 2)
    }

    pub fn spawn_worker_with(&self, task: Task, concurrency: u16) -> Worker {
        let port = free_port();
        let log = self.dir.join(format!("worker-{task}-{port}.log"));
        let child = self
            .command(&[
                "worker",
                task.as_str(),
                "--concurrency",
                &concurrency.to_string(),
            ])
            .env("RELATA_METRICS_ADDR", format!("127.0.0.1:{port}"))
            .stdout(Stdio::null())
            .stderr(std::fs::File::create(&log).unwrap())
            .spawn()
            .expect("spawn worker");
        Worker {
            child: Some(child),
            port,
            log,
        }
    }

    /// The last lines of every worker log in this environment's directory, for a
    /// failure message.
    pub fn worker_logs(&self) -> String {
        let mut out = String::new();
        for entry in std::fs::read_dir(&self.dir).into_iter().flatten().flatten() {
            let name = entry.file_name().to_string_lossy().into_owned();
            if name.starts_with("worker-") {
                let text = std::fs::read_to_string(entry.path()).unwrap_or_default();
                let tail: Vec<&str> = text
                    .lines()
                    .filter(|l| !l.contains(" INFO "))
                    .rev()
                    .take(15)
                    .collect();
                out.push_str(&format!("--- {name}\n"));
                for l in tail.into_iter().rev() {
                    out.push_str(l);
                    out.push('\n');
                }
            }
        }
        out
    }

    pub fn write_doc(&self, name: &str, text: &str) -> PathBuf {
        let corpus = self.dir.join("corpus");
        std::fs::create_dir_all(&corpus).unwrap();
        let path = corpus.join(name);
        std::fs::write(&path, text).unwrap();
        corpus
    }

    pub async fn store(&self) -> Store {
        Store::connect(&self.database_url).await.expect("store")
    }

    /// Wait until the ledger holds `n` terminal jobs of `task` and none queued.
    pub async fn wait_for_jobs(
        &self,
        task: Task,
        n: i64,
        within: Duration,
    ) -> BTreeMap<String, i64> {
        let store = self.store().await;
        let deadline = Instant::now() + within;
        loop {
            let status = store.status().await.expect("status");
            let mut by_state = BTreeMap::new();
            for j in status.jobs.iter().filter(|j| j.task == task.as_str()) {
                *by_state.entry(j.state.clone()).or_insert(0) += j.count;
            }
            let queued = by_state.get("queued").copied().unwrap_or(0);
            let terminal: i64 = by_state
                .iter()
                .filter(|(s, _)| *s != "queued")
                .map(|(_, c)| c)
                .sum();
            if queued == 0 && terminal >= n {
                return by_state;
            }
            assert!(
                Instant::now() < deadline,
                "timed out waiting for {n} {task} jobs: {by_state:?}\n{}",
                self.worker_logs()
            );
            tokio::time::sleep(Duration::from_millis(200)).await;
        }
    }

    /// Every current row, promoted or not (`export --include-pending`): what the
    /// pipeline stored.
    pub fn export(&self) -> Vec<serde_json::Value> {
        self.export_with(&["--include-pending"])
    }

    pub fn export_with(&self, args: &[&str]) -> Vec<serde_json::Value> {
        let mut all = vec!["export"];
        all.extend_from_slice(args);
        let out = self.relata(&all);
        assert!(
            out.status.success(),
            "export failed: {}",
            String::from_utf8_lossy(&out.stderr)
        );
        String::from_utf8(out.stdout)
            .unwrap()
            .lines()
            .map(|l| serde_json::from_str(l).expect("export line is JSON"))
            .collect()
    }

    /// Model requests whose body contains `needle`.
    /// The bodies of every chat request the fake received, as text.
    pub fn chat_bodies(&self) -> Vec<String> {
        self.fake
            .chat_requests()
            .iter()
            .map(|r| String::from_utf8_lossy(&r.body).into_owned())
            .collect()
    }

    pub fn requests_mentioning(&self, needle: &str) -> usize {
        self.fake
            .chat_requests()
            .iter()
            .filter(|r| String::from_utf8_lossy(&r.body).contains(needle))
            .count()
    }

    pub async fn broker(&self) -> Broker {
        self.harness.queues.broker().await.expect("broker")
    }

    /// A second database, empty (not migrated), removed with its guard.
    pub async fn bare_database(&self) -> TestDatabase {
        TestDatabase::create(&Services::from_env(), "e2e_bare")
            .await
            .expect("bare database")
    }
}

pub fn free_port() -> u16 {
    std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port()
}

/// A worker process. Killed on drop if still running.
pub struct Worker {
    child: Option<Child>,
    pub port: u16,
    pub log: PathBuf,
}

impl Worker {
    pub async fn metrics(&self) -> String {
        let url = format!("http://127.0.0.1:{}/metrics", self.port);
        for _ in 0..50 {
            if let Ok(body) = http_get(&url).await {
                return body;
            }
            tokio::time::sleep(Duration::from_millis(100)).await;
        }
        panic!("no /metrics on {url}; log:\n{}", self.log_text());
    }

    /// Status code and body of `GET path` on the worker's HTTP port.
    pub async fn get(&self, path: &str) -> (u16, String) {
        let url = format!("http://127.0.0.1:{}{path}", self.port);
        relata_testkit::http::get(&url)
            .await
            .unwrap_or_else(|e| panic!("GET {url}: {e}"))
    }

    pub fn log_text(&self) -> String {
        std::fs::read_to_string(&self.log).unwrap_or_default()
    }

    /// SIGTERM and wait; returns the exit code.
    pub fn terminate(mut self) -> Option<i32> {
        let mut child = self.child.take().unwrap();
        let _ = Command::new("kill")
            .args(["-TERM", &child.id().to_string()])
            .status();
        let deadline = Instant::now() + Duration::from_secs(30);
        loop {
            if let Some(status) = child.try_wait().unwrap() {
                return status.code();
            }
            if Instant::now() > deadline {
                let _ = child.kill();
                panic!("worker did not stop within 30 s of SIGTERM");
            }
            std::thread::sleep(Duration::from_millis(50));
        }
    }

    /// Wait for the process to exit on its own; returns the exit code.
    pub fn wait_exit(mut self, within: Duration) -> Option<i32> {
        let mut child = self.child.take().unwrap();
        let deadline = Instant::now() + within;
        loop {
            if let Some(status) = child.try_wait().unwrap() {
                return status.code();
            }
            if Instant::now() > deadline {
                let _ = child.kill();
                panic!(
                    "worker did not exit within {within:?}; log:\n{}",
                    self.log_text()
                );
            }
            std::thread::sleep(Duration::from_millis(50));
        }
    }

    /// SIGKILL: no chance to finish anything.
    pub fn kill9(mut self) {
        let mut child = self.child.take().unwrap();
        let _ = Command::new("kill")
            .args(["-KILL", &child.id().to_string()])
            .status();
        let _ = child.wait();
    }
}

impl Drop for Worker {
    fn drop(&mut self) {
        if let Some(mut c) = self.child.take() {
            let _ = c.kill();
            let _ = c.wait();
        }
    }
}

/// A minimal HTTP GET over a plain socket (the tests need nothing more): 200 bodies only.
async fn http_get(url: &str) -> std::io::Result<String> {
    match relata_testkit::http::get(url).await? {
        (200, body) => Ok(body),
        (status, _) => Err(std::io::Error::other(format!("HTTP {status}"))),
    }
}

/// The value of one sample in a Prometheus text exposition, 0 when absent.
pub fn sample(metrics: &str, name: &str, labels: &[(&str, &str)]) -> f64 {
    metrics
        .lines()
        .filter(|l| !l.starts_with('#'))
        .filter(|l| l.starts_with(&format!("{name}{{")) || l.starts_with(&format!("{name} ")))
        .filter(|l| {
            labels
                .iter()
                .all(|(k, v)| l.contains(&format!("{k}=\"{v}\"")))
        })
        .filter_map(|l| l.rsplit(' ').next()?.parse::<f64>().ok())
        .sum()
}

pub fn route(needle: &str, content: &str) -> Route {
    Route {
        needle: needle.to_owned(),
        behaviour: Behaviour::completion(content),
    }
}

pub fn corpus_path(p: &Path) -> &str {
    p.to_str().unwrap()
}

/// Two documents about one person, so that their claims become candidate pairs.
pub const CURIE_A: &str = "Marie Curie was a physicist and chemist.\n\nShe won the Nobel Prize in Physics in 1903, with Pierre Curie.\n";
pub const CURIE_B: &str = "Marie Curie was born in Warsaw in 1867.\n\nShe never won any Nobel Prize in Physics, according to this text.\n";
