//! The page in headless Chromium, driven over WebDriver by chromedriver: sign in, approve
//! with the keyboard, reject with a note, see both in the history and the chain verified,
//! and check that markup in a document neither renders nor runs, all over the real
//! promotion store on the real PostgreSQL. Screenshots of the queue,
//! one candidate and the history are written under the test's output directory
//! (`target/tmp/review-web/`).
//!
//! Needs Debian's `chromium` and `chromium-driver` (`chromedriver` on `PATH`;
//! `RELATA_CHROMIUM` names another browser binary). Ignored by default; `scripts/test`
//! runs it in its browser pass.

use std::net::SocketAddr;
use std::path::PathBuf;
use std::process::Stdio;
use std::time::Duration;

use fantoccini::{Client, ClientBuilder, Locator};
use relata_review_web::{ReviewBackend, ReviewWebConfig, auth, router};
use serde_json::json;

use crate::store::{backend, claim_in, db, hold_claims};

/// A chromedriver child process on a free port, killed when dropped.
struct Driver {
    _child: tokio::process::Child,
    url: String,
}

async fn driver() -> Driver {
    let port = {
        let l = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        l.local_addr().unwrap().port()
    };
    let child = tokio::process::Command::new("chromedriver")
        .arg(format!("--port={port}"))
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .kill_on_drop(true)
        .spawn()
        .expect("chromedriver on PATH (Debian package chromium-driver)");
    let url = format!("http://127.0.0.1:{port}");
    for _ in 0..100 {
        if tokio::net::TcpStream::connect(("127.0.0.1", port))
            .await
            .is_ok()
        {
            return Driver { _child: child, url };
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    panic!("chromedriver did not listen on port {port} within 10 s");
}

async fn browser(driver: &Driver) -> Client {
    let mut chrome = json!({
        "args": ["--headless=new", "--no-sandbox", "--disable-gpu", "--disable-dev-shm-usage",
                 "--window-size=1280,1100", "--hide-scrollbars"]
    });
    let binary =
        std::env::var("RELATA_CHROMIUM").unwrap_or_else(|_| "/usr/bin/chromium".to_owned());
    if std::path::Path::new(&binary).exists() {
        chrome["binary"] = json!(binary);
    }
    let mut caps = serde_json::Map::new();
    caps.insert("goog:chromeOptions".to_owned(), chrome);
    ClientBuilder::new(hyper_util::client::legacy::connect::HttpConnector::new())
        .capabilities(caps)
        .connect(&driver.url)
        .await
        .expect("a WebDriver session in headless Chromium")
}

/// Serve the page on a free local port, as `relata serve` does (with connect info).
async fn serve<B: ReviewBackend>(backend: B) -> String {
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    let app = router(backend, ReviewWebConfig::default());
    tokio::spawn(async move {
        axum::serve(
            listener,
            app.into_make_service_with_connect_info::<SocketAddr>(),
        )
        .await
        .unwrap();
    });
    format!("http://{addr}")
}

fn shots() -> PathBuf {
    let dir = PathBuf::from(env!("CARGO_TARGET_TMPDIR")).join("review-web");
    std::fs::create_dir_all(&dir).unwrap();
    dir
}

async fn text(c: &Client, css: &str) -> String {
    c.find(Locator::Css(css))
        .await
        .unwrap()
        .text()
        .await
        .unwrap()
}

#[tokio::test]
#[ignore = "needs chromium and chromedriver; run by scripts/test's browser pass"]
async fn browser_review_sign_in_approve_reject_and_history() {
    let db = db().await;
    let s = &db.store;
    let para = "Ada Lovelace was an English mathematician. In 1843 she published the first algorithm intended for a machine, Charles Babbage's Analytical Engine.";
    let first = claim_in(
        s,
        "ada-lovelace",
        "Ada Lovelace",
        para,
        "Ada Lovelace",
        "Ada Lovelace was an English mathematician.",
    )
    .await;
    let second = claim_in(s, "grace-hopper", "Grace Hopper", "Grace Hopper was an American computer scientist. She led the team that built the first compiler for a computer language.", "Grace Hopper", "Grace Hopper was an American computer scientist.").await;
    let hostile = r#"Eve Mallory wrote a page. It says <script>window.pwned = 1</script> and "><img src=x onerror="window.pwned = 2"> out loud."#;
    let third = claim_in(
        s,
        "eve",
        r#"<img src=x onerror="window.pwned = 3">"#,
        hostile,
        "Eve Mallory",
        "Eve Mallory wrote a page.",
    )
    .await;
    hold_claims(s).await;
    let token = auth::new_token();
    s.issue_review_token("Ada Lovelace", &token).await.unwrap();
    let base = serve(backend(s)).await;
    let d = driver().await;
    let c = browser(&d).await;
    let out = shots();
    let card = |id: i64| format!("#c-claim-{id}");

    // Unauthenticated: sent to sign in.
    c.goto(&format!("{base}/review")).await.unwrap();
    assert_eq!(c.current_url().await.unwrap().path(), "/login");
    c.find(Locator::Css("input[name=name]"))
        .await
        .unwrap()
        .send_keys("Ada Lovelace")
        .await
        .unwrap();
    c.find(Locator::Css("input[name=secret]"))
        .await
        .unwrap()
        .send_keys(&token)
        .await
        .unwrap();
    c.find(Locator::Css("section.login button[type=submit]"))
        .await
        .unwrap()
        .click()
        .await
        .unwrap();
    c.wait()
        .for_element(Locator::Css("article.candidate"))
        .await
        .unwrap();
    assert_eq!(c.current_url().await.unwrap().path(), "/review");
    assert!(text(&c, "header.top .who").await.contains("Ada Lovelace"));
    assert_eq!(
        c.find_all(Locator::Css("article.candidate"))
            .await
            .unwrap()
            .len(),
        3
    );
    assert_eq!(
        text(&c, &format!("{} mark.quote", card(first))).await,
        "Ada Lovelace was an English mathematician."
    );
    // The hostile document shows as text, and nothing in it ran.
    assert!(
        text(&c, &format!("{} blockquote.chunk", card(third)))
            .await
            .contains("<script>window.pwned = 1</script>")
    );
    assert!(
        text(&c, &format!("{} span.doc", card(third)))
            .await
            .contains("onerror")
    );
    assert_eq!(
        c.execute("return typeof window.pwned;", vec![])
            .await
            .unwrap(),
        json!("undefined")
    );
    assert_eq!(
        c.find_all(Locator::Css("article img")).await.unwrap().len(),
        0
    );
    std::fs::write(out.join("queue.png"), c.screenshot().await.unwrap()).unwrap();

    // The keyboard: app.js focuses the oldest card; `a` approves it.
    c.wait()
        .for_element(Locator::Css("article.candidate.focused"))
        .await
        .unwrap();
    c.active_element()
        .await
        .unwrap()
        .send_keys("a")
        .await
        .unwrap();
    c.wait()
        .for_element(Locator::Css("p.flash.ok"))
        .await
        .unwrap();
    assert!(
        text(&c, "p.flash.ok")
            .await
            .contains(&format!("Approved claim:{first}"))
    );
    assert_eq!(
        c.find_all(Locator::Css("article.candidate"))
            .await
            .unwrap()
            .len(),
        2
    );

    // One candidate on its own page: reject it with a note.
    c.goto(&format!("{base}/review/candidate/claim:{second}"))
        .await
        .unwrap();
    c.wait()
        .for_element(Locator::Css("article.candidate"))
        .await
        .unwrap();
    std::fs::write(out.join("candidate.png"), c.screenshot().await.unwrap()).unwrap();
    // Without a note the rejection is refused with the reason.
    c.find(Locator::Css("button.reject"))
        .await
        .unwrap()
        .click()
        .await
        .unwrap();
    c.wait()
        .for_element(Locator::Css("p.flash.refused"))
        .await
        .unwrap();
    assert!(
        text(&c, "p.flash.refused")
            .await
            .contains("A note is required to reject")
    );
    c.find(Locator::Css("input.note"))
        .await
        .unwrap()
        .send_keys("a job title, not a claim about her work")
        .await
        .unwrap();
    c.find(Locator::Css("button.reject"))
        .await
        .unwrap()
        .click()
        .await
        .unwrap();
    c.wait()
        .for_element(Locator::Css("p.flash.ok"))
        .await
        .unwrap();
    assert!(
        text(&c, "p.flash.ok")
            .await
            .contains(&format!("Rejected claim:{second}"))
    );

    // The history: both decisions, by the signed-in reviewer, and the chain verified by
    // the store.
    c.find(Locator::LinkText("History"))
        .await
        .unwrap()
        .click()
        .await
        .unwrap();
    c.wait()
        .for_element(Locator::Css("table.history"))
        .await
        .unwrap();
    let chain = text(&c, "p.chain").await;
    let records = s.evidence_verify().await.unwrap().records;
    assert!(
        chain.starts_with(&format!("Evidence chain verified: {records} records")),
        "{chain}"
    );
    let rows = text(&c, "table.history tbody").await;
    assert!(
        rows.contains(&format!("claim:{first}")) && rows.contains("approve"),
        "{rows}"
    );
    assert!(
        rows.contains(&format!("claim:{second}"))
            && rows.contains("reject")
            && rows.contains("a job title, not a claim about her work"),
        "{rows}"
    );
    assert_eq!(rows.matches("Ada Lovelace").count(), 2, "{rows}");
    std::fs::write(out.join("history.png"), c.screenshot().await.unwrap()).unwrap();

    c.close().await.unwrap();
}
