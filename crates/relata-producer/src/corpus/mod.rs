//! Corpus readers: iterators of `Result<SourceDocument, CorpusError>`, one document at a
//! time.
//!
//! A bad input is an `Err` item naming its file or line; the iterator goes on with the
//! next input, so the caller counts errors and finishes the batch. Only
//! [`CorpusError::is_fatal`] errors end a reader.

mod dir;
mod error;
mod jsonl;

use std::io::{self, BufRead, BufReader};
use std::path::Path;

pub use dir::{DirOptions, DirReader};
pub use error::{CorpusError, CorpusErrorKind, Location, MAX_ECHO_CHARS};
pub use jsonl::{DEFAULT_MAX_LINE_BYTES, JsonlOptions, JsonlReader};

/// Default bound on one document's text: 1 MiB of UTF-8. A larger document is an error
/// naming it, never silently truncated — truncation would store a document that is not the
/// source. Raise the bound in the options if a corpus really has such documents.
pub const DEFAULT_MAX_TEXT_BYTES: usize = 1024 * 1024;

/// One document as read from a corpus, before it is stored.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct SourceDocument {
    /// Unique within one corpus input: a relative path or the id field.
    pub external_id: String,
    pub title: Option<String>,
    /// Exactly as read (a leading byte-order mark removed); never empty or only whitespace.
    /// Chunk and quote offsets are byte offsets into this string.
    pub text: String,
}

impl SourceDocument {
    /// The sha256 of the text, lowercase hex: the producer's "unchanged" test.
    pub fn sha256_hex(&self) -> String {
        crate::sha256_hex(&self.text)
    }
}

/// Any of the corpus readers, behind one type for the `ingest` command.
#[derive(Debug)]
pub enum CorpusReader {
    Dir(DirReader),
    Jsonl(JsonlReader<Box<dyn BufRead + Send>>),
}

impl CorpusReader {
    /// A directory of `.txt` / `.md` files (see [`DirReader`]).
    pub fn dir(root: impl AsRef<Path>, options: DirOptions) -> Result<Self, CorpusError> {
        DirReader::with_options(root, options).map(CorpusReader::Dir)
    }

    /// A JSONL file (see [`JsonlReader`]).
    pub fn jsonl_file(path: impl AsRef<Path>, options: JsonlOptions) -> Result<Self, CorpusError> {
        let path = path.as_ref();
        let file = std::fs::File::open(path).map_err(|io| CorpusError::Open {
            path: path.to_owned(),
            io,
        })?;
        let reader: Box<dyn BufRead + Send> = Box::new(BufReader::new(file));
        Ok(CorpusReader::Jsonl(JsonlReader::new(reader, options)))
    }

    /// JSONL on standard input.
    pub fn stdin(options: JsonlOptions) -> Self {
        let reader: Box<dyn BufRead + Send> = Box::new(BufReader::new(io::stdin()));
        CorpusReader::Jsonl(JsonlReader::new(reader, options))
    }

    /// Inputs skipped without an error so far (directory: files with other extensions).
    pub fn skipped(&self) -> u64 {
        match self {
            CorpusReader::Dir(d) => d.skipped(),
            CorpusReader::Jsonl(_) => 0,
        }
    }
}

impl Iterator for CorpusReader {
    type Item = Result<SourceDocument, CorpusError>;

    fn next(&mut self) -> Option<Self::Item> {
        match self {
            CorpusReader::Dir(d) => d.next(),
            CorpusReader::Jsonl(j) => j.next(),
        }
    }
}

#[cfg(test)]
mod tests;
