use std::net::SocketAddr;

use axum::Router;
use axum::body::Body;
use axum::extract::ConnectInfo;
use axum::http::{Request, StatusCode, header};
use http_body_util::BodyExt;
use relata_review_web::{CandidateId, ReviewWebConfig, router};
use tower::ServiceExt;

use crate::memory::{Memory, claim, join, relation};

const TOKEN: &str = "rlt_0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef";

pub(crate) struct Res {
    pub status: StatusCode,
    pub headers: axum::http::HeaderMap,
    pub body: String,
}

impl Res {
    pub fn location(&self) -> &str {
        self.headers
            .get(header::LOCATION)
            .map(|v| v.to_str().unwrap())
            .unwrap_or("")
    }
}

pub(crate) async fn send(app: &Router, req: Request<Body>) -> Res {
    let res = app.clone().oneshot(req).await.unwrap();
    let status = res.status();
    let headers = res.headers().clone();
    let body =
        String::from_utf8(res.into_body().collect().await.unwrap().to_bytes().to_vec()).unwrap();
    Res {
        status,
        headers,
        body,
    }
}

pub(crate) fn get(path: &str, cookie: Option<&str>) -> Request<Body> {
    let mut b = Request::get(path);
    if let Some(c) = cookie {
        b = b.header(header::COOKIE, c);
    }
    b.body(Body::empty()).unwrap()
}

pub(crate) fn post(
    path: &str,
    cookie: Option<&str>,
    form: &[(&str, &str)],
    from: &str,
) -> Request<Body> {
    let body = form_urlencoded::Serializer::new(String::new())
        .extend_pairs(form)
        .finish();
    let mut b =
        Request::post(path).header(header::CONTENT_TYPE, "application/x-www-form-urlencoded");
    if let Some(c) = cookie {
        b = b.header(header::COOKIE, c);
    }
    let mut req = b.body(Body::from(body)).unwrap();
    let addr: SocketAddr = from.parse().unwrap();
    req.extensions_mut().insert(ConnectInfo(addr));
    req
}

/// Post the sign-in form from the address `from` (the rate limit is per address).
pub(crate) async fn log_in(app: &Router, name: &str, secret: &str, from: &str) -> Res {
    send(
        app,
        post("/login", None, &[("name", name), ("secret", secret)], from),
    )
    .await
}

/// Post the review page's decision form with a signed-in session's cookie.
pub(crate) async fn decide(app: &Router, cookie: &str, form: &[(&str, &str)]) -> Res {
    send(
        app,
        post("/review/decide", Some(cookie), form, "198.51.100.1:1"),
    )
    .await
}

fn setup() -> (Memory, Router) {
    let m = Memory::default()
        .with_token("ada", TOKEN)
        .with_token("grace", "rlt_grace");
    m.add(claim(
        1,
        "Ada Lovelace wrote the first program.",
        "In 1843 Ada Lovelace published the first algorithm. She was a mathematician.",
        "Ada Lovelace published the first algorithm",
    ));
    m.add(claim(
        2,
        "Ada Lovelace was a mathematician.",
        "In 1843 Ada Lovelace published the first algorithm. She was a mathematician.",
        "She was a mathematician",
    ));
    let app = router(m.clone(), ReviewWebConfig::default());
    (m, app)
}

/// Sign in and return the cookie header value and this session's CSRF token.
pub(crate) async fn sign_in(app: &Router, name: &str, token: &str) -> (String, String) {
    let res = log_in(app, name, token, "198.51.100.1:4000").await;
    assert_eq!(res.status, StatusCode::SEE_OTHER, "{}", res.body);
    let set = res
        .headers
        .get(header::SET_COOKIE)
        .unwrap()
        .to_str()
        .unwrap();
    let cookie = set.split(';').next().unwrap().to_owned();
    let page = send(app, get("/review", Some(&cookie))).await;
    assert_eq!(page.status, StatusCode::OK);
    (cookie, csrf_of(&page.body))
}

pub(crate) fn csrf_of(html: &str) -> String {
    let at =
        html.find(r#"name="csrf" value=""#).expect("a csrf field") + r#"name="csrf" value=""#.len();
    html[at..].split('"').next().unwrap().to_owned()
}

#[tokio::test]
async fn without_a_session_pages_send_to_sign_in_and_forms_are_refused() {
    let (m, app) = setup();
    for path in [
        "/review",
        "/review/history",
        "/review/candidate/claim:1",
        "/review?kind=claim",
    ] {
        for cookie in [None, Some("relata_review=forged0123"), Some("other=1")] {
            let res = send(&app, get(path, cookie)).await;
            assert_eq!(res.status, StatusCode::SEE_OTHER, "{path} {cookie:?}");
            assert_eq!(res.location(), "/login");
            assert!(!res.body.contains("Ada"), "nothing of the queue leaks");
        }
    }
    let res = send(
        &app,
        post(
            "/review/decide",
            None,
            &[("act", "approve claim:1"), ("csrf", "x")],
            "198.51.100.1:1",
        ),
    )
    .await;
    assert_eq!(res.status, StatusCode::FORBIDDEN);
    assert!(m.decisions().is_empty());
    // The sign-in page and the static files are open.
    assert_eq!(send(&app, get("/login", None)).await.status, StatusCode::OK);
    let js = send(&app, get("/static/app.js", None)).await;
    assert_eq!(js.status, StatusCode::OK);
    assert!(
        js.headers[header::CONTENT_TYPE]
            .to_str()
            .unwrap()
            .starts_with("text/javascript")
    );
}

#[tokio::test]
async fn a_decision_without_this_sessions_csrf_token_writes_nothing() {
    let (m, app) = setup();
    let (cookie, csrf) = sign_in(&app, "ada", TOKEN).await;
    let (_, other_csrf) = sign_in(&app, "grace", "rlt_grace").await;
    assert_ne!(csrf, other_csrf);
    for bad in [
        None,
        Some(""),
        Some("0000"),
        Some(other_csrf.as_str()),
        Some(&csrf[..csrf.len() - 1]),
    ] {
        let mut form = vec![("act", "approve claim:1")];
        if let Some(t) = bad {
            form.push(("csrf", t));
        }
        let res = decide(&app, &cookie, &form).await;
        assert_eq!(res.status, StatusCode::FORBIDDEN, "{bad:?}");
        assert!(res.body.contains("security token"));
    }
    assert!(m.decisions().is_empty());

    // With the right token it is recorded, under the signed-in name whatever the form says.
    let res = decide(
        &app,
        &cookie,
        &[
            ("csrf", &csrf),
            ("act", "approve claim:1"),
            ("reviewer", "mallory"),
        ],
    )
    .await;
    assert_eq!(res.status, StatusCode::SEE_OTHER);
    let d = m.decisions();
    assert_eq!(d.len(), 1);
    assert_eq!(
        (
            d[0].candidate.as_str(),
            d[0].reviewer.as_str(),
            d[0].decision.as_str()
        ),
        ("claim:1", "ada", "approve")
    );
    let page = send(&app, get(res.location(), Some(&cookie))).await;
    assert!(
        page.body.contains("Approved claim:1 (evidence record 1)."),
        "{}",
        page.body
    );
}

#[tokio::test]
async fn wrong_secrets_are_refused_then_rate_limited_per_address() {
    let (_, app) = setup();
    let from = "203.0.113.9:5000";
    for (i, secret) in ["rlt_nope", "", TOKEN.to_uppercase().as_str(), "rlt_grace"]
        .iter()
        .cycle()
        .take(10)
        .enumerate()
    {
        let res = log_in(&app, "ada", secret, from).await;
        assert_eq!(res.status, StatusCode::UNAUTHORIZED, "attempt {i}");
        assert!(res.headers.get(header::SET_COOKIE).is_none());
        assert!(res.body.contains("do not match"));
    }
    // The eleventh attempt is refused before the token is looked at, even the right one.
    let res = log_in(&app, "ada", TOKEN, from).await;
    assert_eq!(res.status, StatusCode::TOO_MANY_REQUESTS);
    assert!(res.headers.get(header::SET_COOKIE).is_none());
    let retry: u64 = res.headers[header::RETRY_AFTER]
        .to_str()
        .unwrap()
        .parse()
        .unwrap();
    assert!(retry > 14 * 60 && retry <= 15 * 60, "{retry}");
    // Another address is not affected (same port, other host).
    let res = log_in(&app, "ada", TOKEN, "203.0.113.10:5000").await;
    assert_eq!(res.status, StatusCode::SEE_OTHER);
    // A name that is not a reviewer's, with someone else's token, is refused too.
    let res = log_in(&app, "mallory", TOKEN, "203.0.113.11:1").await;
    assert_eq!(res.status, StatusCode::UNAUTHORIZED);
}

#[tokio::test]
async fn the_session_cookie_is_http_only_strict_and_secure_over_tls() {
    let (_, app) = setup();
    let res = log_in(&app, "ada", TOKEN, "198.51.100.1:1").await;
    let set = res.headers[header::SET_COOKIE].to_str().unwrap().to_owned();
    assert!(set.starts_with("relata_review="), "{set}");
    assert!(
        set.contains("; HttpOnly") && set.contains("; SameSite=Strict") && set.contains("; Path=/"),
        "{set}"
    );
    assert!(!set.contains("Secure"), "plain HTTP: {set}");

    let mut req = post(
        "/login",
        None,
        &[("name", "ada"), ("secret", TOKEN)],
        "198.51.100.1:1",
    );
    req.headers_mut()
        .insert("x-forwarded-proto", "https".parse().unwrap());
    let res = send(&app, req).await;
    assert!(
        res.headers[header::SET_COOKIE]
            .to_str()
            .unwrap()
            .ends_with("; Secure")
    );

    let m = Memory::default().with_token("ada", TOKEN);
    let tls = router(
        m,
        ReviewWebConfig {
            secure_cookies: true,
        },
    );
    let res = log_in(&tls, "ada", TOKEN, "198.51.100.1:1").await;
    assert!(
        res.headers[header::SET_COOKIE]
            .to_str()
            .unwrap()
            .ends_with("; Secure")
    );
}

#[tokio::test]
async fn markup_in_documents_and_model_output_renders_inert() {
    let m = Memory::default().with_token("ada", TOKEN);
    let chunk = r#"Before <script>alert("doc")</script> and "><img src=x onerror=alert(1)> then the quoted words here."#;
    m.add(claim(
        7,
        r#"</p><script>alert("model")</script>"><img src=x onerror=alert(2)>"#,
        chunk,
        r#""><img src=x onerror=alert(1)>"#,
    ));
    let app = router(m, ReviewWebConfig::default());
    let (cookie, _) = sign_in(&app, "ada", TOKEN).await;
    for path in ["/review", "/review/candidate/claim:7"] {
        let res = send(&app, get(path, Some(&cookie))).await;
        assert_eq!(res.status, StatusCode::OK);
        let b = &res.body;
        assert!(!b.contains("<script>alert"), "{path}: {b}");
        assert!(!b.contains("<img"), "{path}");
        assert!(
            b.contains("&lt;script&gt;alert(&quot;doc&quot;)&lt;/script&gt;"),
            "{path}: {b}"
        );
        assert!(
            b.contains(
                r#"<mark class="quote">&quot;&gt;&lt;img src=x onerror=alert(1)&gt;</mark>"#
            ),
            "{path}: {b}"
        );
        // The only script is the page's own file.
        assert_eq!(b.matches("<script").count(), 1);
        assert!(b.contains(r#"<script src="/static/app.js" defer></script>"#));
        let csp = res.headers[header::CONTENT_SECURITY_POLICY]
            .to_str()
            .unwrap();
        assert!(
            csp.starts_with("default-src 'self'") && csp.contains("script-src 'self'"),
            "{csp}"
        );
        assert!(!csp.contains("unsafe-inline"));
        assert_eq!(res.headers[header::X_CONTENT_TYPE_OPTIONS], "nosniff");
    }
}

#[tokio::test]
async fn the_queue_shows_what_a_reviewer_needs_and_refusals_say_why() {
    let (m, app) = setup();
    let a = claim(
        10,
        "Babbage designed the Analytical Engine.",
        "Charles Babbage designed the Analytical Engine in 1837.",
        "Charles Babbage designed the Analytical Engine",
    );
    let b = claim(
        11,
        "Babbage never designed an engine.",
        "Some say Babbage never designed an engine at all.",
        "Babbage never designed an engine",
    );
    let mut stale = claim(
        12,
        "A claim from an old revision.",
        "An old revision said this.",
        "An old revision said this.",
    );
    stale.stale = true;
    m.add(relation(5, &a, &b));
    m.add(stale);
    m.add(join(
        3,
        (
            20,
            "Treaty of Paris",
            "The Philippine Revolution ended with the Treaty of Paris.",
        ),
        (
            21,
            "Treaty of Paris",
            "The Treaty of Paris of December 1898 ended the war.",
        ),
        "The Treaty of Paris of December 1898",
    ));
    let (cookie, csrf) = sign_in(&app, "ada", TOKEN).await;
    let rel = send(&app, get("/review/candidate/relation:5", Some(&cookie)))
        .await
        .body;
    let pair = &rel[rel
        .find(r#"<div class="pair">"#)
        .expect("claims side by side")..];
    assert!(
        pair.contains(
            r#"<mark class="quote">Charles Babbage designed the Analytical Engine</mark>"#
        ),
        "{rel}"
    );
    assert!(pair.contains(r#"<mark class="quote">Babbage never designed an engine</mark>"#));
    assert!(
        rel.contains("claim 10 <strong>contradicts</strong> claim 11"),
        "{rel}"
    );
    let j = send(&app, get("/review/candidate/join:3", Some(&cookie)))
        .await
        .body;
    assert!(
        j.contains("entity 20 and entity 21 are <strong>one thing</strong>. Its evidence, from the document of entity 21:"),
        "{j}"
    );
    assert!(j.contains(
        r#"<blockquote class="evidence">The Treaty of Paris of December 1898</blockquote>"#
    ));
    assert!(
        j.contains("The Philippine Revolution ended with the Treaty of Paris."),
        "both sides shown"
    );
    let st = send(&app, get("/review/candidate/claim:12", Some(&cookie)))
        .await
        .body;
    assert!(st.contains("Stale: its document changed since it was proposed"));
    let q = send(&app, get("/review?kind=claim", Some(&cookie)))
        .await
        .body;
    assert!(!q.contains("relation:5"), "filtered by kind");
    assert!(q.contains("Pending candidates"));
    assert!(
        q.contains(r#"<mark class="quote">Ada Lovelace published the first algorithm</mark>"#),
        "{q}"
    );
    assert!(q.contains("smollm2-135m") && q.contains("extract-p2"));
    assert!(q.contains(
        "A figure in the statement (a number, date or percentage) is not in its quote: 1843"
    ));
    assert!(
        q.find("claim:1").unwrap() < q.find("claim:2").unwrap(),
        "oldest first"
    );

    // Rejecting without a note is refused with the reason, and nothing is written.
    let res = decide(
        &app,
        &cookie,
        &[
            ("csrf", &csrf),
            ("act", "reject claim:2"),
            ("note claim:2", "  "),
        ],
    )
    .await;
    assert_eq!(res.status, StatusCode::SEE_OTHER);
    let page = send(&app, get(res.location(), Some(&cookie))).await.body;
    assert!(page.contains("A note is required to reject"), "{page}");
    assert!(m.decisions().is_empty());

    // A selection: one decided now, one already decided (stale) and refused with the reason.
    decide(
        &app,
        &cookie,
        &[("csrf", &csrf), ("act", "approve claim:1")],
    )
    .await;
    let res = decide(
        &app,
        &cookie,
        &[
            ("csrf", &csrf),
            ("ids", "claim:1"),
            ("ids", "claim:2"),
            ("act", "reject selected"),
            ("note", "not what the quote says"),
            ("kind", "claim"),
            ("page", "1"),
        ],
    )
    .await;
    assert_eq!(res.location(), "/review?kind=claim");
    let page = send(&app, get(res.location(), Some(&cookie))).await.body;
    assert!(
        page.contains("claim:1 was not decided: already decided"),
        "{page}"
    );
    assert!(
        page.contains("Rejected claim:2 (evidence record 2)."),
        "{page}"
    );
    assert!(
        !page.contains(r#"value="approve claim:2""#),
        "decided candidates leave the queue"
    );
    let d = m.decisions();
    assert_eq!(d[0].note.as_deref(), Some("not what the quote says"));

    // Filters and paging are passed to the backend.
    let other = send(&app, get("/review?source=elsewhere", Some(&cookie)))
        .await
        .body;
    assert!(other.contains("Nothing is waiting for review."));
    assert!(
        send(&app, get("/review/candidate/claim:99", Some(&cookie)))
            .await
            .status
            == StatusCode::NOT_FOUND
    );
    assert!(
        send(&app, get("/review/candidate/entity:1", Some(&cookie)))
            .await
            .status
            == StatusCode::NOT_FOUND
    );
}

#[tokio::test]
async fn history_shows_decisions_and_whether_the_chain_verifies() {
    let (m, app) = setup();
    let (cookie, csrf) = sign_in(&app, "ada", TOKEN).await;
    decide(
        &app,
        &cookie,
        &[
            ("csrf", &csrf),
            ("act", "reject claim:1"),
            ("note claim:1", "quote <b>says</b> otherwise"),
        ],
    )
    .await;
    let h = send(&app, get("/review/history", Some(&cookie))).await.body;
    assert!(h.contains("Evidence chain verified: 1 records"), "{h}");
    assert!(h.contains("quote &lt;b&gt;says&lt;/b&gt; otherwise"));
    assert!(h.contains(r#"<td class="decision">reject</td>"#));
    m.break_chain(1, "hash mismatch");
    let h = send(&app, get("/review/history", Some(&cookie))).await.body;
    assert!(
        h.contains("Evidence chain does NOT verify at record 1: hash mismatch"),
        "{h}"
    );
    // The decided candidate's own page says it is no longer pending and offers no buttons.
    let c = send(
        &app,
        get(
            &format!(
                "/review/candidate/{}",
                CandidateId {
                    kind: relata_review_web::RowKind::Claim,
                    id: 1
                }
            ),
            Some(&cookie),
        ),
    )
    .await
    .body;
    assert!(c.contains("This candidate is not pending."));
    assert!(!c.contains(r#"value="approve claim:1""#));
}

#[tokio::test]
async fn signing_out_needs_the_csrf_token_and_ends_the_session() {
    let (_, app) = setup();
    let (cookie, csrf) = sign_in(&app, "ada", TOKEN).await;
    let res = send(
        &app,
        post(
            "/logout",
            Some(&cookie),
            &[("csrf", "wrong")],
            "198.51.100.1:1",
        ),
    )
    .await;
    assert_eq!(res.status, StatusCode::FORBIDDEN);
    assert_eq!(
        send(&app, get("/review", Some(&cookie))).await.status,
        StatusCode::OK
    );
    let res = send(
        &app,
        post(
            "/logout",
            Some(&cookie),
            &[("csrf", &csrf)],
            "198.51.100.1:1",
        ),
    )
    .await;
    assert_eq!(res.location(), "/login");
    assert!(
        res.headers[header::SET_COOKIE]
            .to_str()
            .unwrap()
            .contains("Max-Age=0")
    );
    assert_eq!(
        send(&app, get("/review", Some(&cookie))).await.status,
        StatusCode::SEE_OTHER
    );
}
