//! One error type for every bad input a corpus can contain.
//!
//! Each error names where it happened ([`Location`]: a file or a 1-based line) and what was
//! wrong, in one line of text that is safe to print: content from the input is echoed only
//! in bounded form ([`MAX_ECHO_CHARS`]), so a 10 MB line can never end up in a log.
//! [`CorpusError::kind`] gives a closed, low-cardinality name for counting.

use std::fmt;
use std::io;
use std::path::PathBuf;

/// Most characters of input content (an id, a parser message) echoed in an error.
pub const MAX_ECHO_CHARS: usize = 80;

/// Where a bad input is: a file (directory corpus, or the JSONL file itself) or a line of
/// a JSONL stream (1-based).
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Location {
    File(PathBuf),
    Line(u64),
    /// A document named by its external id (bounded), where the reader's position is no
    /// longer known.
    Id(String),
}

impl fmt::Display for Location {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Location::File(path) => write!(f, "{}", path.display()),
            Location::Line(line) => write!(f, "line {line}"),
            Location::Id(id) => write!(f, "document {id:?}"),
        }
    }
}

/// A bad input, or a failure to read one.
///
/// The `Display` text is self-contained (it includes the underlying IO error's message), so
/// the IO error is not also exposed through `source()`: printing the chain would repeat it.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum CorpusError {
    /// The corpus itself (the root directory or the JSONL file) cannot be opened. Returned
    /// by the constructors, never yielded as an item.
    #[error("{}: cannot open: {io}", path.display())]
    Open { path: PathBuf, io: io::Error },
    /// The corpus root is not a directory. Returned by the constructor.
    #[error("{}: not a directory", path.display())]
    NotADirectory { path: PathBuf },
    /// A subdirectory cannot be listed; its contents are skipped.
    #[error("{}: cannot list directory: {io}", path.display())]
    ReadDir { path: PathBuf, io: io::Error },
    /// A file cannot be read.
    #[error("{}: cannot read: {io}", path.display())]
    ReadFile { path: PathBuf, io: io::Error },
    /// A file's path relative to the root is not valid UTF-8, so it cannot be an external id.
    #[error("{}: file name is not valid UTF-8", path.display())]
    NonUtf8Path { path: PathBuf },
    /// A file's content is not valid UTF-8.
    #[error("{}: not valid UTF-8 (first invalid byte at offset {valid_up_to})", path.display())]
    NonUtf8File { path: PathBuf, valid_up_to: usize },
    /// A file is empty or holds only whitespace.
    #[error("{}: empty text", path.display())]
    EmptyFile { path: PathBuf },
    /// Reading the JSONL stream failed. The reader stops after this error: a broken stream
    /// has no next line to continue with.
    #[error("line {line}: cannot read: {io}")]
    ReadLine { line: u64, io: io::Error },
    /// A JSONL line longer than the line bound; it was skipped without being held in memory.
    #[error("line {line}: longer than {max} bytes")]
    LineTooLong { line: u64, max: usize },
    /// A JSONL line that is not valid UTF-8.
    #[error(
        "line {line}: not valid UTF-8 (first invalid byte at offset {valid_up_to} of the line)"
    )]
    NonUtf8Line { line: u64, valid_up_to: usize },
    /// A JSONL line that is not exactly one JSON value.
    #[error("line {line}: invalid JSON at column {column}: {message}")]
    InvalidJson {
        line: u64,
        column: usize,
        message: String,
    },
    /// A JSONL line holding a JSON value other than an object.
    #[error("line {line}: expected a JSON object, found {found}")]
    NotAnObject { line: u64, found: &'static str },
    /// A required field (id or text) is absent.
    #[error("line {line}: missing field {field:?}")]
    MissingField { line: u64, field: String },
    /// A field holds the wrong JSON type.
    #[error("line {line}: field {field:?} must be {expected}, found {found}")]
    WrongType {
        line: u64,
        field: String,
        expected: &'static str,
        found: &'static str,
    },
    /// The id or text field is empty or only whitespace.
    #[error("line {line}: field {field:?} is empty")]
    EmptyField { line: u64, field: String },
    /// A document's text is over the configured bound. It is rejected, never truncated.
    #[error("{location}: text of {bytes} bytes is over the limit of {max} bytes")]
    TextTooLarge {
        location: Location,
        bytes: u64,
        max: usize,
    },
    /// A field the store cannot hold: PostgreSQL text refuses NUL (U+0000). Decided here,
    /// before any SQL, so the item is named and skipped and the rest of the corpus goes on.
    #[error(
        "{location}: the {field} holds a NUL character (U+0000) at byte {at}, which the store cannot hold"
    )]
    Unstorable {
        location: Location,
        field: &'static str,
        at: usize,
    },
    /// A symbolic link whose target is outside the corpus directory: following it would
    /// ingest files the corpus does not hold (and name them by a path inside it).
    #[error("{}: a symbolic link to a file outside the corpus directory; not followed", path.display())]
    OutsideRoot { path: PathBuf },
    /// A JSONL object naming the same key twice: which value was meant is ambiguous, and
    /// a parser that silently keeps one is how a document changes without anyone asking.
    #[error("line {line}: the key {key:?} appears more than once")]
    DuplicateKey {
        line: u64,
        /// Bounded to [`MAX_ECHO_CHARS`].
        key: String,
    },
    /// The store refused the document for a reason that is not availability (a data
    /// exception). Defence in depth behind [`CorpusError::Unstorable`]: the item is named
    /// by its id and skipped.
    #[error("document {id:?}: the store refused it: {detail}")]
    StoreRefused {
        /// Bounded to [`MAX_ECHO_CHARS`].
        id: String,
        detail: String,
    },
    /// An external id already yielded earlier in the same input.
    #[error("line {line}: duplicate id {id:?}, first seen on line {first_line}")]
    DuplicateId {
        line: u64,
        /// Bounded to [`MAX_ECHO_CHARS`].
        id: String,
        first_line: u64,
    },
}

impl CorpusError {
    /// Where the bad input is.
    pub fn location(&self) -> Location {
        use CorpusError::*;
        match self {
            Open { path, .. }
            | NotADirectory { path }
            | ReadDir { path, .. }
            | ReadFile { path, .. }
            | NonUtf8Path { path }
            | NonUtf8File { path, .. }
            | OutsideRoot { path }
            | EmptyFile { path } => Location::File(path.clone()),
            ReadLine { line, .. }
            | LineTooLong { line, .. }
            | NonUtf8Line { line, .. }
            | InvalidJson { line, .. }
            | NotAnObject { line, .. }
            | MissingField { line, .. }
            | WrongType { line, .. }
            | EmptyField { line, .. }
            | DuplicateKey { line, .. }
            | DuplicateId { line, .. } => Location::Line(*line),
            TextTooLarge { location, .. } | Unstorable { location, .. } => location.clone(),
            StoreRefused { id, .. } => Location::Id(id.clone()),
        }
    }

    /// A closed name for this kind of error, for counting (a summary line, a metric label).
    pub fn kind(&self) -> CorpusErrorKind {
        use CorpusError as E;
        use CorpusErrorKind as K;
        match self {
            E::Open { .. } => K::Open,
            E::NotADirectory { .. } => K::NotADirectory,
            E::ReadDir { .. } => K::ReadDir,
            E::ReadFile { .. } => K::ReadFile,
            E::NonUtf8Path { .. } => K::NonUtf8Path,
            E::NonUtf8File { .. } => K::NonUtf8File,
            E::EmptyFile { .. } => K::EmptyFile,
            E::ReadLine { .. } => K::ReadLine,
            E::LineTooLong { .. } => K::LineTooLong,
            E::NonUtf8Line { .. } => K::NonUtf8Line,
            E::InvalidJson { .. } => K::InvalidJson,
            E::NotAnObject { .. } => K::NotAnObject,
            E::MissingField { .. } => K::MissingField,
            E::WrongType { .. } => K::WrongType,
            E::EmptyField { .. } => K::EmptyField,
            E::TextTooLarge { .. } => K::TextTooLarge,
            E::DuplicateId { .. } => K::DuplicateId,
            E::Unstorable { .. } => K::Unstorable,
            E::OutsideRoot { .. } => K::OutsideRoot,
            E::DuplicateKey { .. } => K::DuplicateKey,
            E::StoreRefused { .. } => K::StoreRefused,
        }
    }

    /// Whether the reader stops after this error (the corpus cannot be opened, or the
    /// stream broke). Every other error concerns one document; reading continues.
    pub fn is_fatal(&self) -> bool {
        matches!(
            self,
            CorpusError::Open { .. }
                | CorpusError::NotADirectory { .. }
                | CorpusError::ReadLine { .. }
        )
    }
}

macro_rules! kinds {
    ($( $(#[$m:meta])* $variant:ident = $s:literal ),+ $(,)?) => {
        /// The closed set of [`CorpusError`] kinds; `as_str` is snake_case and stable.
        #[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
        #[non_exhaustive]
        pub enum CorpusErrorKind {
            $( $(#[$m])* $variant ),+
        }

        impl CorpusErrorKind {
            /// Every kind, in declaration order.
            pub const ALL: &'static [CorpusErrorKind] = &[ $( CorpusErrorKind::$variant ),+ ];

            /// The stable label.
            pub const fn as_str(self) -> &'static str {
                match self { $( CorpusErrorKind::$variant => $s ),+ }
            }
        }
    };
}

kinds! {
    Open = "open",
    NotADirectory = "not_a_directory",
    ReadDir = "read_dir",
    ReadFile = "read_file",
    NonUtf8Path = "non_utf8_path",
    NonUtf8File = "non_utf8_file",
    EmptyFile = "empty_file",
    ReadLine = "read_line",
    LineTooLong = "line_too_long",
    NonUtf8Line = "non_utf8_line",
    InvalidJson = "invalid_json",
    NotAnObject = "not_an_object",
    MissingField = "missing_field",
    WrongType = "wrong_type",
    EmptyField = "empty_field",
    TextTooLarge = "text_too_large",
    DuplicateId = "duplicate_id",
    Unstorable = "unstorable",
    OutsideRoot = "outside_root",
    DuplicateKey = "duplicate_key",
    StoreRefused = "store_refused",
}

impl fmt::Display for CorpusErrorKind {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

impl CorpusError {
    /// The store refused document `id` although the reader accepted it; the id is
    /// bounded like every other echo of the input.
    pub fn store_refused(id: &str, detail: String) -> CorpusError {
        CorpusError::StoreRefused {
            id: bounded(id),
            detail,
        }
    }
}

/// `s` cut to at most [`MAX_ECHO_CHARS`] characters, with `…` marking a cut.
pub(crate) fn bounded(s: &str) -> String {
    relata_core::text::ellipsize(s, MAX_ECHO_CHARS).into_owned()
}

/// The first field of `doc` the store cannot hold, as the error naming it.
pub(crate) fn unstorable(location: &Location, doc: &super::SourceDocument) -> Option<CorpusError> {
    let fields = [
        ("id", Some(doc.external_id.as_str())),
        ("title", doc.title.as_deref()),
        ("text", Some(doc.text.as_str())),
    ];
    fields.into_iter().find_map(|(field, value)| {
        let at = value?.find('\0')?;
        Some(CorpusError::Unstorable {
            location: location.clone(),
            field,
            at,
        })
    })
}
