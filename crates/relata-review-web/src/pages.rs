//! The HTML, server-rendered with maud. Every value from a document or from model output
//! goes in as a maud expression, which escapes it; nothing here builds markup from strings
//! and no page carries inline script or style (the Content-Security-Policy forbids both).

use maud::{DOCTYPE, Markup, html};

use crate::auth::Flash;
use crate::backend::{
    Candidate, CandidateBody, ChainStatus, ClaimView, EntityView, HistoryEntry, RowKind,
    WarningView,
};

/// Where a decision form returns to: the queue's filter and page.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct QueueView {
    pub kind: Option<RowKind>,
    pub source: Option<String>,
    pub page: u64,
}

impl QueueView {
    /// The queue's URL for this view (values percent-encoded).
    pub fn href(&self, page: u64) -> String {
        let mut q = form_urlencoded::Serializer::new(String::new());
        if let Some(k) = self.kind {
            q.append_pair("kind", k.as_str());
        }
        if let Some(s) = &self.source {
            q.append_pair("source", s);
        }
        if page > 1 {
            q.append_pair("page", &page.to_string());
        }
        let q = q.finish();
        if q.is_empty() {
            "/review".to_owned()
        } else {
            format!("/review?{q}")
        }
    }
}

fn layout(title: &str, reviewer: Option<&str>, csrf: Option<&str>, body: Markup) -> Markup {
    html! {
        (DOCTYPE)
        html lang="en" {
            head {
                meta charset="utf-8";
                meta name="viewport" content="width=device-width, initial-scale=1";
                title { (title) " · relata review" }
                link rel="stylesheet" href="/static/app.css";
                script src="/static/app.js" defer {}
            }
            body {
                header.top {
                    span.brand { "relata review" }
                    @if let Some(name) = reviewer {
                        nav {
                            a href="/review" { "Queue" }
                            a href="/review/history" { "History" }
                        }
                        span.who { "Signed in as " strong { (name) } }
                        @if let Some(csrf) = csrf {
                            form.logout method="post" action="/logout" {
                                input type="hidden" name="csrf" value=(csrf);
                                button type="submit" { "Sign out" }
                            }
                        }
                    }
                }
                main { (body) }
            }
        }
    }
}

fn flashes(flash: &[Flash]) -> Markup {
    html! {
        @for f in flash {
            p class=(if f.ok { "flash ok" } else { "flash refused" }) role="status" { (f.text) }
        }
    }
}

/// The sign-in page; `error` says why the last attempt failed.
pub fn login(error: Option<&str>) -> Markup {
    layout(
        "Sign in",
        None,
        None,
        html! {
            section.login {
                h1 { "Sign in to review" }
                @if let Some(e) = error {
                    p.flash.refused role="alert" { (e) }
                }
                form method="post" action="/login" {
                    label { "Reviewer name" input type="text" name="name" autocomplete="username" required maxlength="200"; }
                    label { "Sign-in token" input type="password" name="secret" autocomplete="current-password" required maxlength="200"; }
                    button type="submit" { "Sign in" }
                }
                p.hint { "A token is issued with " code { "relata review token --by NAME" } "." }
            }
        },
    )
}

/// What a stored warning means, in words.
fn warning_words(w: &WarningView) -> String {
    let what = match w.warning.as_str() {
        "figure_not_in_quote" => {
            "A figure in the statement (a number, date or percentage) is not in its quote"
        }
        "demoted" => "A check that would have rejected this row is set to warn",
        other => other,
    };
    if w.detail.is_empty() {
        what.to_owned()
    } else {
        format!("{what}: {}", w.detail)
    }
}

/// A chunk's text with the quote marked. Offsets that do not fall on character boundaries
/// inside the text (which the store's trigger rules out) show the text unmarked, with a
/// note, rather than guessing.
fn chunk_with_quote(c: &ClaimView) -> Markup {
    let parts = c.quote_in_chunk.as_ref().and_then(|r| {
        c.chunk_text
            .get(..r.start)
            .zip(c.chunk_text.get(r.start..r.end))
            .zip(c.chunk_text.get(r.end..))
    });
    html! {
        @match parts {
            Some(((before, quote), after)) => {
                blockquote.chunk { (before) mark.quote { (quote) } (after) }
            }
            None => {
                p.stale { "The stored offsets do not fall inside this chunk; the quote is shown on its own." }
                blockquote.chunk { mark.quote { (c.quote) } }
            }
        }
    }
}

fn claim(c: &ClaimView) -> Markup {
    html! {
        div.claim {
            p.statement { (c.statement) }
            p.meta {
                "Subject " strong { (c.subject) } " · "
                span.doc { (c.document_title.as_deref().unwrap_or("(untitled)")) }
                " · " span.source { (c.source) " / " (c.external_id) }
                " · claim " (c.claim_id)
            }
            (chunk_with_quote(c))
        }
    }
}

fn entity(e: &EntityView) -> Markup {
    html! {
        div.claim {
            p.statement { (e.name) " " span.etype { "(" (e.entity_type) ")" } }
            p.meta {
                span.doc { (e.document_title.as_deref().unwrap_or("(untitled)")) }
                " · " span.source { (e.source) " / " (e.external_id) }
                " · entity " (e.entity_id)
            }
            blockquote.chunk { (e.chunk_text) }
        }
    }
}

fn candidate_card(c: &Candidate, selectable: bool) -> Markup {
    let id = c.id.to_string();
    html! {
        article.candidate tabindex="-1" data-id=(id) id=(format!("c-{}-{}", c.id.kind.as_str(), c.id.id)) {
            header {
                @if selectable {
                    label.select { input type="checkbox" name="ids" value=(id); " select" }
                }
                a.cid href=(format!("/review/candidate/{id}")) { (id) }
                span.prov { "proposed by " (c.model) " · prompt " (c.prompt_version) " · " (c.proposed_at.format("%Y-%m-%d %H:%M UTC")) }
            }
            @match &c.body {
                CandidateBody::Entity(e) => { (entity(e)) }
                CandidateBody::Claim(cl) => { (claim(cl)) }
                CandidateBody::Relation { relation, a, b } => {
                    p.relation { "The model says claim " (a.claim_id) " " strong { (relation) } " claim " (b.claim_id) "." }
                    div.pair { (claim(a)) (claim(b)) }
                }
                CandidateBody::Join { a, b, quote, quote_from_a } => {
                    p.relation { "The model says entity " (a.entity_id) " and entity " (b.entity_id) " are " strong { "one thing" } ". Its evidence, from the document of entity " (if *quote_from_a { a.entity_id } else { b.entity_id }) ":" }
                    blockquote.evidence { (quote) }
                    div.pair { (entity(a)) (entity(b)) }
                }
            }
            @if c.stale {
                p.stale { "Stale: its document changed since it was proposed. It can be rejected, not approved." }
            }
            @if !c.reasons.is_empty() {
                div.reasons {
                    "Why it needs a person: "
                    @for (i, r) in c.reasons.iter().enumerate() {
                        @if i > 0 { "; " }
                        (r)
                    }
                }
            }
            @if !c.warnings.is_empty() {
                ul.warnings {
                    @for w in &c.warnings { li { (warning_words(w)) } }
                }
            }
            @if selectable {
                div.actions {
                    button.approve type="submit" name="act" value=(format!("approve {id}")) { "Approve" }
                    input.note type="text" name=(format!("note {id}")) placeholder="Note (required to reject)" maxlength="2000";
                    button.reject type="submit" name="act" value=(format!("reject {id}")) { "Reject" }
                }
            }
        }
    }
}

fn hidden_view(view: &QueueView) -> Markup {
    html! {
        @if let Some(k) = view.kind { input type="hidden" name="kind" value=(k.as_str()); }
        @if let Some(s) = &view.source { input type="hidden" name="source" value=(s); }
        input type="hidden" name="page" value=(view.page);
    }
}

/// The queue of pending candidates.
pub struct QueuePage<'a> {
    pub reviewer: &'a str,
    pub csrf: &'a str,
    pub flash: &'a [Flash],
    pub view: &'a QueueView,
    pub candidates: &'a [Candidate],
    pub more: bool,
}

pub fn queue(p: &QueuePage<'_>) -> Markup {
    layout(
        "Queue",
        Some(p.reviewer),
        Some(p.csrf),
        html! {
            h1 { "Pending candidates" }
            (flashes(p.flash))
            form.filter method="get" action="/review" {
                label { "Kind "
                    select name="kind" {
                        option value="" selected[p.view.kind.is_none()] { "all" }
                        @for k in RowKind::ALL {
                            option value=(k.as_str()) selected[p.view.kind == Some(*k)] { (k.as_str()) }
                        }
                    }
                }
                label { "Source " input type="text" name="source" value=(p.view.source.as_deref().unwrap_or("")) maxlength="200"; }
                button type="submit" { "Filter" }
            }
            p.keys { "Keys: " kbd { "j" } "/" kbd { "k" } " next/previous · " kbd { "x" } " select · " kbd { "a" } " approve · " kbd { "r" } " reject (note first)" }
            @if p.candidates.is_empty() {
                p.empty { "Nothing is waiting for review." }
            } @else {
                form id="decide" method="post" action="/review/decide" {
                    // Enter in a text field submits a form with its first submit button;
                    // a disabled first button makes that do nothing, so Enter in the
                    // selection's note never approves the selection.
                    button.guard type="submit" disabled hidden {}
                    input type="hidden" name="csrf" value=(p.csrf);
                    (hidden_view(p.view))
                    div.bulk {
                        "Selected: "
                        button.approve type="submit" name="act" value="approve selected" { "Approve selected" }
                        input.note type="text" name="note" placeholder="Note for the selection (required to reject)" maxlength="2000";
                        button.reject type="submit" name="act" value="reject selected" { "Reject selected" }
                    }
                    @for c in p.candidates { (candidate_card(c, true)) }
                }
            }
            nav.pages {
                @if p.view.page > 1 { a rel="prev" href=(p.view.href(p.view.page - 1)) { "← newer" } }
                span { "page " (p.view.page) }
                @if p.more { a rel="next" href=(p.view.href(p.view.page + 1)) { "older →" } }
            }
        },
    )
}

/// One candidate on its own page.
pub fn candidate(reviewer: &str, csrf: &str, flash: &[Flash], c: &Candidate) -> Markup {
    layout(
        &c.id.to_string(),
        Some(reviewer),
        Some(csrf),
        html! {
            p { a href="/review" { "← queue" } }
            (flashes(flash))
            @if c.pending {
                form id="decide" method="post" action="/review/decide" {
                    input type="hidden" name="csrf" value=(csrf);
                    button.guard type="submit" disabled hidden {}
                    input type="hidden" name="back" value=(c.id.to_string());
                    (candidate_card(c, true))
                }
            } @else {
                p.flash.refused { "This candidate is not pending." }
                (candidate_card(c, false))
            }
        },
    )
}

/// The decisions recorded and whether the evidence chain verifies.
pub struct HistoryPage<'a> {
    pub reviewer: &'a str,
    pub csrf: &'a str,
    pub entries: &'a [HistoryEntry],
    pub chain: &'a ChainStatus,
    pub page: u64,
    pub more: bool,
}

pub fn history(p: &HistoryPage<'_>) -> Markup {
    layout(
        "History",
        Some(p.reviewer),
        Some(p.csrf),
        html! {
            h1 { "Decisions" }
            @match p.chain {
                ChainStatus::Intact { records } => {
                    p.chain.ok role="status" { "Evidence chain verified: " (records) " records, every hash and link checked." }
                }
                ChainStatus::Broken { seq, reason } => {
                    p.chain.broken role="alert" {
                        "Evidence chain does NOT verify"
                        @if let Some(seq) = seq { " at record " (seq) }
                        ": " (reason)
                    }
                }
            }
            @if p.entries.is_empty() {
                p.empty { "No decisions recorded yet." }
            } @else {
                table.history {
                    thead { tr { th { "#" } th { "When" } th { "Candidate" } th { "Decision" } th { "By" } th { "Note" } } }
                    tbody {
                        @for e in p.entries {
                            tr class=(format!("d-{}", e.decision)) {
                                td { (e.seq) }
                                td { (e.at.format("%Y-%m-%d %H:%M:%S UTC")) }
                                td { a href=(format!("/review/candidate/{}", e.candidate)) { (e.candidate) } }
                                td.decision { (e.decision) }
                                td { (e.reviewer) }
                                td { (e.note.as_deref().unwrap_or("")) }
                            }
                        }
                    }
                }
            }
            nav.pages {
                @if p.page > 1 { a rel="prev" href=(format!("/review/history?page={}", p.page - 1)) { "← newer" } }
                span { "page " (p.page) }
                @if p.more { a rel="next" href=(format!("/review/history?page={}", p.page + 1)) { "older →" } }
            }
        },
    )
}

/// A plain error page (not found, the store unavailable).
pub fn error(reviewer: Option<&str>, csrf: Option<&str>, title: &str, text: &str) -> Markup {
    layout(
        title,
        reviewer,
        csrf,
        html! {
            h1 { (title) }
            p { (text) }
            p { a href="/review" { "Back to the queue" } }
        },
    )
}
