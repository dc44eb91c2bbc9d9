//! ARCHITECTURE.md names files and types; this test holds it to the tree, so that the map
//! cannot quietly point at what was moved or renamed.
//!
//! Every backticked token outside a fenced block is read as one of:
//!
//! - a **path**, when it has no whitespace, does not start with `/` (an HTTP route such as
//!   `/metrics`) and contains a `/` or ends in `.rs`, `.sql`, `.md` or `.toml`: it must
//!   exist relative to the repository root or, under a `### \`crates/NAME\`` heading,
//!   relative to that crate or its `src/`;
//! - a **type**, when it is an UpperCamelCase identifier (at least one lower-case letter),
//!   optionally behind a module path (`relata_core::Handle`) or followed by one member
//!   (`StatusClass::of`, `StoreError::ChainBroken`): a `struct`, `enum`, `trait` or `type`
//!   of that name must be declared somewhere under `crates/`, and the member must appear
//!   there as a word;
//! - anything else (commands, SQL, metric names, settings), which is not checked.
//!
//! The failure lists every missing name with its line.

#![allow(clippy::unwrap_used)] // test code: a failed unwrap is a failed test

use std::collections::BTreeSet;
use std::fs;
use std::path::{Path, PathBuf};

/// A backticked token and the line it starts on.
struct Token {
    line: usize,
    text: String,
    /// The crate whose code-map heading the token is under (`crates/relata-core`), if any.
    crate_dir: Option<String>,
}

fn repo_root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .parent()
        .unwrap()
        .to_path_buf()
}

/// The backticked tokens of a markdown text, outside fenced code blocks.
fn tokens(markdown: &str) -> Vec<Token> {
    let mut out = Vec::new();
    let mut in_fence = false;
    let mut crate_dir: Option<String> = None;
    let mut open: Option<(usize, String)> = None;
    for (index, line) in markdown.lines().enumerate() {
        let number = index + 1;
        if line.trim_start().starts_with("```") {
            in_fence = !in_fence;
            continue;
        }
        if in_fence {
            continue;
        }
        if line.starts_with('#') {
            crate_dir = heading_crate(line);
        }
        let mut rest = line;
        loop {
            match (&mut open, rest.find('`')) {
                (None, Some(at)) => {
                    open = Some((number, String::new()));
                    rest = &rest[at + 1..];
                }
                (Some((start, text)), Some(at)) => {
                    text.push_str(&rest[..at]);
                    out.push(Token {
                        line: *start,
                        text: text.trim().to_string(),
                        crate_dir: crate_dir.clone(),
                    });
                    open = None;
                    rest = &rest[at + 1..];
                }
                (Some((_, text)), None) => {
                    // A code span may continue on the next line.
                    text.push_str(rest);
                    text.push(' ');
                    break;
                }
                (None, None) => break,
            }
        }
    }
    assert!(
        open.is_none(),
        "ARCHITECTURE.md:{}: a backtick is never closed",
        open.unwrap().0
    );
    out
}

/// `### \`crates/relata-core\`` → `crates/relata-core`; any other heading → none.
fn heading_crate(line: &str) -> Option<String> {
    let start = line.find("`crates/")? + 1;
    let end = start + line[start..].find('`')?;
    Some(line[start..end].trim_end_matches('/').to_string())
}

fn is_path(token: &str) -> bool {
    !token.is_empty()
        && !token.contains(char::is_whitespace)
        && !token.starts_with('/')
        && (token.contains('/')
            || [".rs", ".sql", ".md", ".toml"]
                .iter()
                .any(|ext| token.ends_with(ext)))
}

fn is_identifier(segment: &str) -> bool {
    let mut chars = segment.chars();
    matches!(chars.next(), Some(c) if c.is_ascii_alphabetic() || c == '_')
        && chars.all(|c| c.is_ascii_alphanumeric() || c == '_')
}

fn is_upper_camel(segment: &str) -> bool {
    is_identifier(segment)
        && segment.starts_with(|c: char| c.is_ascii_uppercase())
        && !segment.contains('_')
        && segment.chars().any(|c| c.is_ascii_lowercase())
}

/// `Type`, `module::Type` or `Type::member` → the type and the member, if any.
fn as_type(token: &str) -> Option<(&str, Option<&str>)> {
    let segments: Vec<&str> = token.split("::").collect();
    if !segments.iter().all(|s| is_identifier(s)) {
        return None;
    }
    let at = segments.iter().position(|s| is_upper_camel(s))?;
    let modules_are_lower = segments[..at]
        .iter()
        .all(|s| s.starts_with(|c: char| c.is_ascii_lowercase() || c == '_'));
    match segments.len() - at {
        1 if modules_are_lower => Some((segments[at], None)),
        2 if modules_are_lower => Some((segments[at], Some(segments[at + 1]))),
        _ => None,
    }
}

fn rust_files(dir: &Path, out: &mut Vec<PathBuf>) {
    for entry in fs::read_dir(dir).unwrap() {
        let path = entry.unwrap().path();
        if path.is_dir() {
            rust_files(&path, out);
        } else if path.extension().is_some_and(|e| e == "rs") {
            out.push(path);
        }
    }
}

/// Every identifier in `source` that follows `struct`, `enum`, `trait` or `type`.
fn declared_types(source: &str, into: &mut BTreeSet<String>) {
    let words: Vec<&str> = source
        .split(|c: char| !(c.is_ascii_alphanumeric() || c == '_'))
        .filter(|w| !w.is_empty())
        .collect();
    for pair in words.windows(2) {
        if matches!(pair[0], "struct" | "enum" | "trait" | "type") {
            into.insert(pair[1].to_string());
        }
    }
}

fn words(source: &str, into: &mut BTreeSet<String>) {
    into.extend(
        source
            .split(|c: char| !(c.is_ascii_alphanumeric() || c == '_'))
            .filter(|w| !w.is_empty())
            .map(str::to_string),
    );
}

/// What ARCHITECTURE.md names that does not exist, one sentence each.
fn missing(root: &Path, markdown: &str) -> Vec<String> {
    let mut files = Vec::new();
    rust_files(&root.join("crates"), &mut files);
    let mut types = BTreeSet::new();
    let mut all_words = BTreeSet::new();
    for file in &files {
        let source = fs::read_to_string(file).unwrap();
        declared_types(&source, &mut types);
        words(&source, &mut all_words);
    }

    let mut problems = Vec::new();
    for token in tokens(markdown) {
        let text = token.text.as_str();
        if is_path(text) {
            let relative = text.trim_end_matches('/');
            let mut candidates = vec![root.join(relative)];
            if let Some(crate_dir) = &token.crate_dir {
                candidates.push(root.join(crate_dir).join(relative));
                candidates.push(root.join(crate_dir).join("src").join(relative));
            }
            if !candidates.iter().any(|c| c.exists()) {
                let place = match &token.crate_dir {
                    Some(c) => format!("the repository root, {c} or {c}/src"),
                    None => "the repository root".to_string(),
                };
                problems.push(format!(
                    "ARCHITECTURE.md:{}: `{text}` names a path that does not exist under {place}",
                    token.line
                ));
            }
        } else if let Some((ty, member)) = as_type(text) {
            if !types.contains(ty) {
                problems.push(format!(
                    "ARCHITECTURE.md:{}: `{text}` names a type, but no struct, enum, trait or \
                     type `{ty}` is declared under crates/",
                    token.line
                ));
            } else if let Some(member) = member
                && !all_words.contains(member)
            {
                problems.push(format!(
                    "ARCHITECTURE.md:{}: `{text}`: `{member}` appears nowhere under crates/",
                    token.line
                ));
            }
        }
    }
    problems
}

#[test]
fn every_file_and_type_architecture_md_names_exists() {
    let root = repo_root();
    let markdown = fs::read_to_string(root.join("ARCHITECTURE.md")).unwrap();
    let problems = missing(&root, &markdown);
    assert!(
        problems.is_empty(),
        "ARCHITECTURE.md names {} thing(s) that do not exist; rename them there or restore \
         them in the code:\n{}",
        problems.len(),
        problems.join("\n")
    );
}

#[test]
fn tokens_are_classified_as_paths_types_or_neither() {
    assert!(is_path("crates/relata-core/src/job.rs"));
    assert!(is_path("job.rs"));
    assert!(is_path("migrations/"));
    assert!(!is_path("/metrics"));
    assert!(!is_path("POST /v1/answers"));
    assert!(!is_path("relata.extract"));
    assert_eq!(as_type("Judgement"), Some(("Judgement", None)));
    assert_eq!(as_type("relata_core::Handle"), Some(("Handle", None)));
    assert_eq!(
        as_type("StatusClass::of"),
        Some(("StatusClass", Some("of")))
    );
    assert_eq!(as_type("S1"), None);
    assert_eq!(as_type("MIGRATOR"), None);
    assert_eq!(as_type("check_migrated"), None);
    assert_eq!(as_type("closed_enum!"), None);
    assert_eq!(as_type("Router<()>"), None);
}

#[test]
fn a_name_that_does_not_exist_is_reported_with_its_line() {
    let root = repo_root();
    let markdown = "# A\n\n### `crates/relata-core`\nSee `src/job.rs`, `JobInput` and\n\
                    `src/no_such_file.rs`, `NoSuchTypeAnywhere`.\n\n```\n`ignored/in/fence`\n```\n";
    let problems = missing(&root, markdown);
    assert_eq!(problems.len(), 2, "{problems:?}");
    assert!(problems[0].starts_with("ARCHITECTURE.md:5: `src/no_such_file.rs`"));
    assert!(problems[1].contains("`NoSuchTypeAnywhere`"));
}
