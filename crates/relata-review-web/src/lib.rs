//! relata's review page: reviewers sign in and approve or reject candidates in a browser.
//!
//! The page is an axum [`Router`] over a [`ReviewBackend`] (the promotion store for
//! `relata serve`), server-rendered with maud, with one small hand-written script for
//! keyboard shortcuts and no build step. It is built to be as safe as anything that writes
//! to the system of record:
//!
//! * **Who may decide.** Only configured reviewers holding their current sign-in token
//!   (`relata review token --by NAME`; the store keeps its sha256) can sign in. Signing in
//!   sets a random session cookie (HttpOnly, SameSite=Strict, Secure when configured or
//!   when a proxy says the request came over TLS). Every page but `/login` and the static
//!   files refuses a request without a live session: pages redirect to `/login`, forms
//!   answer 403.
//! * **Forged requests.** Each session has its own CSRF token; every state-changing form
//!   (decide, sign out) must carry it, or it is refused with 403 and nothing is written.
//! * **Who decided.** The reviewer recorded on a decision is the signed-in name, never a
//!   form field.
//! * **Guessing.** Failed sign-ins are limited to 10 per 15 minutes per client address
//!   (`ConnectInfo<SocketAddr>`), counted before the token is looked up so a concurrent
//!   burst gets no more; past that even a right token is answered 429 until the window
//!   moves. Refusals are logged in bounded form (an address's first, the one at the
//!   limit, the first blocked one).
//! * **Leaked tokens.** A session lasts while the token that opened it is its reviewer's
//!   current one: `relata review token --by NAME` (a new token) ends the old one's
//!   sessions at their next request.
//! * **Untrusted text.** Document text and model output are escaped by maud; the
//!   Content-Security-Policy allows scripts and styles only from this server's own files,
//!   so markup smuggled into a document neither renders nor runs.
//!
//! Routes: `GET /review` (pending candidates, oldest first; `kind`, `source`, `page`),
//! `GET /review/candidate/{id}`, `POST /review/decide`, `GET /review/history`,
//! `GET|POST /login`, `POST /logout`, `GET /static/app.css`, `GET /static/app.js`.

#![cfg_attr(not(test), warn(clippy::too_many_lines))]

pub mod auth;
mod backend;
mod pages;
mod store;

use std::net::SocketAddr;
use std::sync::Arc;

use axum::Router;
use axum::body::Bytes;
use axum::extract::{ConnectInfo, Path, RawQuery, State};
use axum::http::{HeaderMap, HeaderValue, StatusCode, header};
use axum::response::{Html, IntoResponse, Redirect, Response};
use axum::routing::{get, post};
use maud::Markup;

pub use backend::{
    BackendError, BackendResult, Candidate, CandidateBody, CandidateId, CandidatePage, ChainStatus,
    ClaimView, DecideOutcome, Decision, EntityView, HistoryEntry, ReviewBackend, ReviewFilter,
    RowKind, WarningView,
};
pub use pages::QueueView;
pub use store::{MAX_QUEUE_DEPTH, StoreBackend};

use auth::{Flash, Session, Sessions, SignInLimiter};

/// The session cookie's name.
pub const SESSION_COOKIE: &str = "relata_review";

/// Candidates per queue page.
pub const PER_PAGE: u64 = 20;
/// Decisions per history page.
pub const HISTORY_PER_PAGE: u64 = 50;
/// Longest note accepted with a decision, in characters.
pub const MAX_NOTE_CHARS: usize = 2000;
/// Longest name or token accepted by the sign-in form.
const MAX_SIGN_IN_FIELD: usize = 200;

const CSP: &str = "default-src 'self'; script-src 'self'; style-src 'self'; img-src 'self'; \
                   object-src 'none'; base-uri 'none'; form-action 'self'; frame-ancestors 'none'";

/// How the page is served.
#[derive(Debug, Clone, Default)]
pub struct ReviewWebConfig {
    /// Mark the session cookie `Secure` on every response (the page is reached over TLS,
    /// directly or through a proxy). Without it the cookie is still marked `Secure` when
    /// a request says `X-Forwarded-Proto: https`.
    pub secure_cookies: bool,
}

#[derive(Debug)]
struct App<B> {
    backend: B,
    sessions: Sessions,
    limiter: SignInLimiter,
    config: ReviewWebConfig,
}

type Shared<B> = State<Arc<App<B>>>;

/// The review page's routes, ready to be merged into a server's router.
pub fn router<B: ReviewBackend>(backend: B, config: ReviewWebConfig) -> Router {
    let app = Arc::new(App {
        backend,
        sessions: Sessions::default(),
        limiter: SignInLimiter::default(),
        config,
    });
    Router::new()
        .route("/review", get(queue::<B>))
        .route("/review/candidate/{id}", get(candidate::<B>))
        .route("/review/decide", post(decide::<B>))
        .route("/review/history", get(history::<B>))
        .route("/login", get(login_page::<B>).post(login::<B>))
        .route("/logout", post(logout::<B>))
        .route("/static/app.css", get(app_css))
        .route("/static/app.js", get(app_js))
        .layer(axum::middleware::map_response(security_headers))
        .with_state(app)
}

async fn security_headers(mut res: Response) -> Response {
    let h = res.headers_mut();
    h.insert(
        header::CONTENT_SECURITY_POLICY,
        HeaderValue::from_static(CSP),
    );
    h.insert(
        header::X_CONTENT_TYPE_OPTIONS,
        HeaderValue::from_static("nosniff"),
    );
    h.insert(header::X_FRAME_OPTIONS, HeaderValue::from_static("DENY"));
    h.insert(
        header::REFERRER_POLICY,
        HeaderValue::from_static("no-referrer"),
    );
    h.entry(header::CACHE_CONTROL)
        .or_insert(HeaderValue::from_static("no-store"));
    res
}

async fn app_css() -> Response {
    (
        [
            (header::CONTENT_TYPE, "text/css; charset=utf-8"),
            (header::CACHE_CONTROL, "public, max-age=300"),
        ],
        include_str!("../static/app.css"),
    )
        .into_response()
}

async fn app_js() -> Response {
    (
        [
            (header::CONTENT_TYPE, "text/javascript; charset=utf-8"),
            (header::CACHE_CONTROL, "public, max-age=300"),
        ],
        include_str!("../static/app.js"),
    )
        .into_response()
}

fn page(status: StatusCode, markup: Markup) -> Response {
    (status, Html(markup.into_string())).into_response()
}

/// The session id in the request's cookie and its session, if it names a live one whose
/// token is still its reviewer's current token (a reissued token ends it here, and the
/// entry is dropped); an error page when the store cannot say.
async fn session<B: ReviewBackend>(
    app: &App<B>,
    headers: &HeaderMap,
) -> Result<Option<(String, Session)>, Response> {
    let Some(id) = headers
        .get_all(header::COOKIE)
        .iter()
        .filter_map(|v| v.to_str().ok())
        .flat_map(|v| v.split(';'))
        .filter_map(|pair| pair.trim().split_once('='))
        .find(|(k, _)| *k == SESSION_COOKIE)
        .map(|(_, v)| v.to_owned())
    else {
        return Ok(None);
    };
    let Some(s) = app.sessions.get(&id) else {
        return Ok(None);
    };
    match app
        .backend
        .token_current(&s.reviewer, &s.token_sha256)
        .await
    {
        Ok(true) => Ok(Some((id, s))),
        Ok(false) => {
            tracing::info!(reviewer = %s.reviewer, "review page: session ended: its sign-in token was reissued or revoked");
            app.sessions.remove(&id);
            Ok(None)
        }
        Err(e) => Err(backend_failure(None, None, &e)),
    }
}

fn form_pairs(body: &[u8]) -> Vec<(String, String)> {
    form_urlencoded::parse(body).into_owned().collect()
}

fn field<'a>(pairs: &'a [(String, String)], name: &str) -> Option<&'a str> {
    pairs
        .iter()
        .find(|(k, _)| k == name)
        .map(|(_, v)| v.as_str())
}

fn backend_failure(reviewer: Option<&str>, csrf: Option<&str>, e: &BackendError) -> Response {
    tracing::error!(error = %e, retryable = e.retryable, "review page: the store refused a request");
    if e.shown {
        // Nothing failed on the server's side: the store refused to record anything
        // until a person has looked, and says what to run.
        return page(
            StatusCode::CONFLICT,
            pages::error(reviewer, csrf, "Nothing was recorded", &e.message),
        );
    }
    let (status, text) = if e.retryable {
        (
            StatusCode::SERVICE_UNAVAILABLE,
            "The store is not reachable right now; nothing was changed. Try again in a moment.",
        )
    } else {
        (
            StatusCode::INTERNAL_SERVER_ERROR,
            "The store refused the request; nothing was changed. The server log says why.",
        )
    };
    page(
        status,
        pages::error(reviewer, csrf, "Store unavailable", text),
    )
}

fn to_login() -> Response {
    Redirect::to("/login").into_response()
}

fn forbidden(text: &str) -> Response {
    page(
        StatusCode::FORBIDDEN,
        pages::error(None, None, "Refused", text),
    )
}

fn parse_view(query: Option<&str>) -> QueueView {
    let pairs = form_pairs(query.unwrap_or("").as_bytes());
    view_from(&pairs)
}

fn view_from(pairs: &[(String, String)]) -> QueueView {
    QueueView {
        kind: field(pairs, "kind").and_then(|k| k.parse().ok()),
        source: field(pairs, "source")
            .map(str::trim)
            .filter(|s| !s.is_empty() && s.chars().count() <= MAX_SIGN_IN_FIELD)
            .map(str::to_owned),
        page: field(pairs, "page")
            .and_then(|p| p.parse::<u64>().ok())
            .filter(|p| (1..=1_000_000).contains(p))
            .unwrap_or(1),
    }
}

async fn queue<B: ReviewBackend>(
    State(app): Shared<B>,
    headers: HeaderMap,
    RawQuery(query): RawQuery,
) -> Response {
    let (sid, s) = match session(&app, &headers).await {
        Ok(Some(found)) => found,
        Ok(None) => return to_login(),
        Err(failed) => return failed,
    };
    let view = parse_view(query.as_deref());
    let filter = ReviewFilter {
        kind: view.kind,
        source: view.source.clone(),
        offset: (view.page - 1) * PER_PAGE,
        limit: PER_PAGE,
    };
    let listed = match app.backend.list(&filter).await {
        Ok(p) => p,
        Err(e) => return backend_failure(Some(&s.reviewer), Some(&s.csrf), &e),
    };
    let flash = app.sessions.take_flash(&sid);
    page(
        StatusCode::OK,
        pages::queue(&pages::QueuePage {
            reviewer: &s.reviewer,
            csrf: &s.csrf,
            flash: &flash,
            view: &view,
            candidates: &listed.candidates,
            more: listed.more,
        }),
    )
}

async fn candidate<B: ReviewBackend>(
    State(app): Shared<B>,
    headers: HeaderMap,
    Path(id): Path<String>,
) -> Response {
    let (sid, s) = match session(&app, &headers).await {
        Ok(Some(found)) => found,
        Ok(None) => return to_login(),
        Err(failed) => return failed,
    };
    let not_found = |text: &str| {
        page(
            StatusCode::NOT_FOUND,
            pages::error(Some(&s.reviewer), Some(&s.csrf), "Not found", text),
        )
    };
    let Ok(id) = id.parse::<CandidateId>() else {
        return not_found("That is not a candidate id (entity:N, claim:N or relation:N).");
    };
    match app.backend.show(id).await {
        Ok(Some(c)) => {
            let flash = app.sessions.take_flash(&sid);
            page(
                StatusCode::OK,
                pages::candidate(&s.reviewer, &s.csrf, &flash, &c),
            )
        }
        Ok(None) => not_found(&format!("There is no candidate {id}.")),
        Err(e) => backend_failure(Some(&s.reviewer), Some(&s.csrf), &e),
    }
}

/// What a decision form asked for.
#[derive(Debug, PartialEq, Eq)]
struct DecideRequest {
    decision: Decision,
    ids: Vec<CandidateId>,
    note: Option<String>,
}

/// Read the decision form: `act` is `approve|reject <id>` for one card (with its own
/// `note <id>`) or `approve|reject selected` for the checked `ids` (with `note`).
fn read_decide_form(pairs: &[(String, String)]) -> Result<DecideRequest, String> {
    let act = field(pairs, "act").ok_or("The form did not say what to do.")?;
    let (decision, target) = act
        .split_once(' ')
        .ok_or("The form's action is malformed.")?;
    let decision = match decision {
        "approve" => Decision::Approve,
        "reject" => Decision::Reject,
        _ => return Err("The form's action is malformed.".to_owned()),
    };
    let (ids, note) = if target == "selected" {
        let mut ids = Vec::new();
        for (_, v) in pairs.iter().filter(|(k, _)| k == "ids") {
            let id = v.parse::<CandidateId>().map_err(|e| e.to_string())?;
            if !ids.contains(&id) {
                ids.push(id);
            }
        }
        (ids, field(pairs, "note"))
    } else {
        let id = target.parse::<CandidateId>().map_err(|e| e.to_string())?;
        (vec![id], field(pairs, &format!("note {id}")))
    };
    if ids.is_empty() {
        return Err("Nothing was selected.".to_owned());
    }
    if ids.len() as u64 > PER_PAGE {
        return Err(format!(
            "At most {PER_PAGE} candidates can be decided at once."
        ));
    }
    let note = note.map(str::trim).filter(|n| !n.is_empty());
    if note.is_some_and(|n| n.chars().count() > MAX_NOTE_CHARS) {
        return Err(format!("A note is at most {MAX_NOTE_CHARS} characters."));
    }
    if decision == Decision::Reject && note.is_none() {
        return Err("A note is required to reject: say why.".to_owned());
    }
    Ok(DecideRequest {
        decision,
        ids,
        note: note.map(str::to_owned),
    })
}

async fn decide<B: ReviewBackend>(
    State(app): Shared<B>,
    headers: HeaderMap,
    body: Bytes,
) -> Response {
    let (sid, s) = match session(&app, &headers).await {
        Ok(Some(found)) => found,
        Ok(None) => return forbidden("You are not signed in; nothing was changed."),
        Err(failed) => return failed,
    };
    let pairs = form_pairs(&body);
    if !field(&pairs, "csrf")
        .is_some_and(|t| auth::constant_time_eq(t.as_bytes(), s.csrf.as_bytes()))
    {
        tracing::warn!(reviewer = %s.reviewer, "review page: a decision without this session's CSRF token was refused");
        return forbidden(
            "The form's security token does not match your session; nothing was changed. Reload the page and try again.",
        );
    }
    // Back to the candidate's own page when decided there, else to the same queue view.
    let back = match field(&pairs, "back").and_then(|b| b.parse::<CandidateId>().ok()) {
        Some(id) => format!("/review/candidate/{id}"),
        None => view_from(&pairs).href(view_from(&pairs).page),
    };
    let req = match read_decide_form(&pairs) {
        Ok(r) => r,
        Err(text) => {
            app.sessions.push_flash(&sid, Flash { ok: false, text });
            return Redirect::to(&back).into_response();
        }
    };
    let outcomes = match app
        .backend
        .decide(&req.ids, req.decision, &s.reviewer, req.note.as_deref())
        .await
    {
        Ok(o) => o,
        Err(e) => return backend_failure(Some(&s.reviewer), Some(&s.csrf), &e),
    };
    let done = match req.decision {
        Decision::Approve => "Approved",
        Decision::Reject => "Rejected",
    };
    for (id, outcome) in req.ids.iter().zip(outcomes) {
        let flash = match outcome {
            DecideOutcome::Recorded { evidence_seq } => {
                tracing::info!(reviewer = %s.reviewer, candidate = %id, decision = req.decision.as_str(), evidence_seq, "review page: decision recorded");
                Flash {
                    ok: true,
                    text: format!("{done} {id} (evidence record {evidence_seq})."),
                }
            }
            DecideOutcome::Refused { reason } => Flash {
                ok: false,
                text: format!("{id} was not decided: {reason}"),
            },
        };
        app.sessions.push_flash(&sid, flash);
    }
    Redirect::to(&back).into_response()
}

async fn history<B: ReviewBackend>(
    State(app): Shared<B>,
    headers: HeaderMap,
    RawQuery(query): RawQuery,
) -> Response {
    let s = match session(&app, &headers).await {
        Ok(Some((_, s))) => s,
        Ok(None) => return to_login(),
        Err(failed) => return failed,
    };
    let page_no = parse_view(query.as_deref()).page;
    let entries = app
        .backend
        .history((page_no - 1) * HISTORY_PER_PAGE, HISTORY_PER_PAGE + 1)
        .await;
    let chain = app.backend.verify().await;
    let (mut entries, chain) = match (entries, chain) {
        (Ok(e), Ok(c)) => (e, c),
        (Err(e), _) | (_, Err(e)) => {
            return backend_failure(Some(&s.reviewer), Some(&s.csrf), &e);
        }
    };
    let more = entries.len() as u64 > HISTORY_PER_PAGE;
    entries.truncate(HISTORY_PER_PAGE as usize);
    page(
        StatusCode::OK,
        pages::history(&pages::HistoryPage {
            reviewer: &s.reviewer,
            csrf: &s.csrf,
            entries: &entries,
            chain: &chain,
            page: page_no,
            more,
        }),
    )
}

async fn login_page<B: ReviewBackend>(State(app): Shared<B>, headers: HeaderMap) -> Response {
    if matches!(session(&app, &headers).await, Ok(Some(_))) {
        return Redirect::to("/review").into_response();
    }
    page(StatusCode::OK, pages::login(None))
}

fn cookie(app_config: &ReviewWebConfig, headers: &HeaderMap, value: &str, max_age: u64) -> String {
    let tls = app_config.secure_cookies
        || headers
            .get("x-forwarded-proto")
            .and_then(|v| v.to_str().ok())
            .is_some_and(|v| v.eq_ignore_ascii_case("https"));
    format!(
        "{SESSION_COOKIE}={value}; Path=/; HttpOnly; SameSite=Strict; Max-Age={max_age}{}",
        if tls { "; Secure" } else { "" }
    )
}

async fn login<B: ReviewBackend>(
    State(app): Shared<B>,
    ConnectInfo(addr): ConnectInfo<SocketAddr>,
    headers: HeaderMap,
    body: Bytes,
) -> Response {
    let ip = addr.ip();
    // Counted before the lookup, so concurrent guesses cannot outrun the limit.
    let attempt = match app.limiter.begin(ip) {
        Ok(a) => a,
        Err(blocked) => {
            if blocked.first {
                tracing::warn!(client = %ip, "review page: sign-ins from this address refused for {} minute(s): too many failed attempts", blocked.wait.as_secs().div_ceil(60));
            }
            let minutes = blocked.wait.as_secs().div_ceil(60).max(1);
            let mut res = page(
                StatusCode::TOO_MANY_REQUESTS,
                pages::login(Some(&format!(
                    "Too many failed sign-ins from your address. Try again in {minutes} minute(s)."
                ))),
            );
            if let Ok(v) = HeaderValue::from_str(&blocked.wait.as_secs().max(1).to_string()) {
                res.headers_mut().insert(header::RETRY_AFTER, v);
            }
            return res;
        }
    };
    let pairs = form_pairs(&body);
    let name = field(&pairs, "name").map(str::trim).unwrap_or("");
    let secret = field(&pairs, "secret").map(str::trim).unwrap_or("");
    let well_formed = !name.is_empty()
        && !secret.is_empty()
        && name.chars().count() <= MAX_SIGN_IN_FIELD
        && secret.chars().count() <= MAX_SIGN_IN_FIELD;
    let accepted = if well_formed {
        match app.backend.sign_in(name, secret).await {
            Ok(ok) => ok,
            Err(e) => return backend_failure(None, None, &e),
        }
    } else {
        false
    };
    if !accepted {
        // Bounded: the first failure of an address and the one that reaches the limit,
        // not one line per guess.
        if attempt.counted == 1 || attempt.counted == auth::SIGN_IN_ATTEMPTS {
            tracing::warn!(client = %ip, failed = attempt.counted, limit = auth::SIGN_IN_ATTEMPTS, "review page: sign-in refused");
        }
        return page(
            StatusCode::UNAUTHORIZED,
            pages::login(Some(
                "That name and token do not match a reviewer's current token.",
            )),
        );
    }
    app.limiter.succeeded(attempt);
    tracing::info!(reviewer = %name, client = %ip, "review page: signed in");
    let sid = app
        .sessions
        .create(name, &relata_store::review_token_sha256(secret));
    let mut res = Redirect::to("/review").into_response();
    if let Ok(v) = HeaderValue::from_str(&cookie(
        &app.config,
        &headers,
        &sid,
        auth::SESSION_TTL.as_secs(),
    )) {
        res.headers_mut().insert(header::SET_COOKIE, v);
    }
    res
}

async fn logout<B: ReviewBackend>(
    State(app): Shared<B>,
    headers: HeaderMap,
    body: Bytes,
) -> Response {
    let (sid, s) = match session(&app, &headers).await {
        Ok(Some(found)) => found,
        Ok(None) => return to_login(),
        Err(failed) => return failed,
    };
    let pairs = form_pairs(&body);
    if !field(&pairs, "csrf")
        .is_some_and(|t| auth::constant_time_eq(t.as_bytes(), s.csrf.as_bytes()))
    {
        return forbidden("The form's security token does not match your session.");
    }
    app.sessions.remove(&sid);
    let mut res = Redirect::to("/login").into_response();
    if let Ok(v) = HeaderValue::from_str(&cookie(&app.config, &headers, "", 0)) {
        res.headers_mut().insert(header::SET_COOKIE, v);
    }
    res
}

#[cfg(test)]
mod tests {
    use super::*;

    fn pairs(s: &str) -> Vec<(String, String)> {
        form_pairs(s.as_bytes())
    }

    #[test]
    fn one_card_or_a_selection() {
        let one = read_decide_form(&pairs("act=approve+claim%3A3&note+claim%3A3=fine")).unwrap();
        assert_eq!(one.ids, vec!["claim:3".parse().unwrap()]);
        assert_eq!(one.note.as_deref(), Some("fine"));
        let sel = read_decide_form(&pairs(
            "ids=claim%3A1&ids=relation%3A2&ids=claim%3A1&act=reject+selected&note=dup",
        ))
        .unwrap();
        assert_eq!(sel.decision, Decision::Reject);
        assert_eq!(sel.ids.len(), 2);
    }

    #[test]
    fn a_rejection_needs_a_note_and_a_selection_needs_ids() {
        let e = read_decide_form(&pairs("act=reject+claim%3A3&note+claim%3A3=++")).unwrap_err();
        assert!(e.contains("note is required"), "{e}");
        assert!(
            read_decide_form(&pairs("act=approve+selected"))
                .unwrap_err()
                .contains("Nothing")
        );
        assert!(read_decide_form(&pairs("act=delete+claim%3A3")).is_err());
        assert!(read_decide_form(&pairs("ids=claim%3Ax&act=approve+selected")).is_err());
        let long = "n".repeat(MAX_NOTE_CHARS + 1);
        assert!(
            read_decide_form(&pairs(&format!(
                "act=reject+claim%3A3&note+claim%3A3={long}"
            )))
            .is_err()
        );
    }

    #[test]
    fn the_return_address_is_rebuilt_not_echoed() {
        let v = view_from(&pairs("kind=claim&source=wiki%20en&page=2"));
        assert_eq!(v.href(v.page), "/review?kind=claim&source=wiki+en&page=2");
        let v = view_from(&pairs("kind=https://evil&page=-1"));
        assert_eq!(v.href(v.page), "/review");
    }
}
