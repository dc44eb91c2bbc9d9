//! JSON Lines from a file or stdin, read one bounded line at a time.

use std::collections::HashMap;
use std::fmt;
use std::fs;
use std::io::{self, BufRead, BufReader};
use std::path::Path;

use serde_json::{Map, Value};

use super::error::{CorpusError, bounded, unstorable};
use super::{DEFAULT_MAX_TEXT_BYTES, Location, SourceDocument};

/// Default bound on one JSONL line. Above the text bound because JSON escaping can make a
/// text several times longer (`\u00e9`), and a record carries other fields besides.
pub const DEFAULT_MAX_LINE_BYTES: usize = 8 * DEFAULT_MAX_TEXT_BYTES;

/// Which fields of each JSON object hold the document, and the size bounds.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct JsonlOptions {
    /// Top-level field with the external id: a string, or an integer (stored as its decimal
    /// string).
    pub id_field: String,
    /// Top-level field with the text: a non-empty string.
    pub text_field: String,
    /// Optional top-level field with the title: a string; absent, `null` or empty means no
    /// title.
    pub title_field: Option<String>,
    /// A text longer than this (in UTF-8 bytes) is an error naming the line.
    pub max_text_bytes: usize,
    /// A line longer than this is skipped (without being held in memory) with an error.
    pub max_line_bytes: usize,
}

impl JsonlOptions {
    /// The given id and text fields, no title field, default bounds.
    pub fn new(id_field: impl Into<String>, text_field: impl Into<String>) -> Self {
        JsonlOptions {
            id_field: id_field.into(),
            text_field: text_field.into(),
            ..JsonlOptions::default()
        }
    }

    /// Also read the title from `field`.
    pub fn with_title_field(mut self, field: impl Into<String>) -> Self {
        self.title_field = Some(field.into());
        self
    }
}

impl Default for JsonlOptions {
    /// Fields `id` and `text`, no title field, default bounds.
    fn default() -> Self {
        JsonlOptions {
            id_field: "id".to_owned(),
            text_field: "text".to_owned(),
            title_field: None,
            max_text_bytes: DEFAULT_MAX_TEXT_BYTES,
            max_line_bytes: DEFAULT_MAX_LINE_BYTES,
        }
    }
}

/// Streams documents from JSON Lines: one JSON object per line.
///
/// - Lines are numbered from 1, counting blank lines; every error names its line.
/// - Blank (whitespace-only) lines are skipped; `\r\n` endings and a byte-order mark at the
///   start of the stream are accepted.
/// - Each bad line yields one error and reading continues with the next line, except
///   when reading itself fails ([`CorpusError::ReadLine`]), after which the reader ends.
/// - An external id seen before in the same input is an error on the later line; nothing
///   is silently overwritten. Only ids of yielded documents count as seen.
/// - Fields other than the configured ones are ignored: corpora carry extra metadata.
pub struct JsonlReader<R> {
    reader: R,
    options: JsonlOptions,
    line: u64,
    pub(super) buf: Vec<u8>,
    /// External id → the line that yielded it.
    seen: HashMap<String, u64>,
    done: bool,
}

impl<R> fmt::Debug for JsonlReader<R> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("JsonlReader")
            .field("options", &self.options)
            .field("line", &self.line)
            .field("seen", &self.seen.len())
            .field("done", &self.done)
            .finish_non_exhaustive()
    }
}

impl JsonlReader<BufReader<fs::File>> {
    /// Opens a JSONL file.
    pub fn open(path: impl AsRef<Path>, options: JsonlOptions) -> Result<Self, CorpusError> {
        let path = path.as_ref();
        let file = fs::File::open(path).map_err(|io| CorpusError::Open {
            path: path.to_owned(),
            io,
        })?;
        Ok(JsonlReader::new(BufReader::new(file), options))
    }
}

impl JsonlReader<BufReader<io::Stdin>> {
    /// Reads JSONL from standard input.
    pub fn stdin(options: JsonlOptions) -> Self {
        JsonlReader::new(BufReader::new(io::stdin()), options)
    }
}

impl<R: BufRead> JsonlReader<R> {
    /// Reads JSONL from any buffered reader.
    pub fn new(reader: R, options: JsonlOptions) -> Self {
        JsonlReader {
            reader,
            options,
            line: 0,
            buf: Vec::new(),
            seen: HashMap::new(),
            done: false,
        }
    }

    /// The number of the last line read (0 before the first).
    pub fn line(&self) -> u64 {
        self.line
    }

    /// Reads the next line into `self.buf` (without its `\n`), holding at most
    /// `max_line_bytes` of it. `Ok(None)` at end of input; `Ok(Some(true))` if the line
    /// was longer than the bound (the rest was consumed and dropped).
    fn read_line(&mut self) -> io::Result<Option<bool>> {
        self.buf.clear();
        let max = self.options.max_line_bytes;
        let mut any = false;
        let mut too_long = false;
        loop {
            let available = match self.reader.fill_buf() {
                Ok(b) => b,
                Err(e) if e.kind() == io::ErrorKind::Interrupted => continue,
                Err(e) => return Err(e),
            };
            if available.is_empty() {
                return Ok(any.then_some(too_long));
            }
            any = true;
            let (part, consumed, end) = match available.iter().position(|&b| b == b'\n') {
                Some(i) => (&available[..i], i + 1, true),
                None => (available, available.len(), false),
            };
            if !too_long {
                if self.buf.len() + part.len() > max {
                    too_long = true;
                    self.buf.clear();
                } else {
                    self.buf.extend_from_slice(part);
                }
            }
            self.reader.consume(consumed);
            if end {
                return Ok(Some(too_long));
            }
        }
    }

    fn parse_line(&mut self) -> Option<Result<SourceDocument, CorpusError>> {
        let line = self.line;
        let mut bytes = self.buf.as_slice();
        if let Some(rest) = bytes.strip_suffix(b"\r") {
            bytes = rest;
        }
        const BOM: &[u8] = "\u{feff}".as_bytes();
        if line == 1 && bytes.starts_with(BOM) {
            bytes = &bytes[BOM.len()..];
        }
        let text = match std::str::from_utf8(bytes) {
            Ok(t) => t,
            Err(e) => {
                return Some(Err(CorpusError::NonUtf8Line {
                    line,
                    valid_up_to: e.valid_up_to(),
                }));
            }
        };
        if text.trim().is_empty() {
            return None;
        }
        let value: Value = match serde_json::from_str(text) {
            Ok(v) => v,
            Err(e) => return Some(Err(invalid_json(line, &e))),
        };
        let Value::Object(object) = value else {
            return Some(Err(CorpusError::NotAnObject {
                line,
                found: json_type(&value),
            }));
        };
        // `Value` keeps the last of repeated keys without a word; a second, key-only pass
        // over the line (values skipped) refuses them.
        if let Err(e) = serde_json::from_str::<UniqueKeys>(text) {
            let key = e.to_string();
            let key = key
                .strip_prefix(DUPLICATE_KEY)
                .and_then(|k| k.rsplit_once(" at line ").map(|(k, _)| k))
                .unwrap_or(&key);
            return Some(Err(CorpusError::DuplicateKey {
                line,
                key: bounded(key),
            }));
        }
        Some(self.document(line, object))
    }

    fn document(
        &mut self,
        line: u64,
        mut object: Map<String, Value>,
    ) -> Result<SourceDocument, CorpusError> {
        let opts = &self.options;
        let wrong_type =
            |field: &str, expected: &'static str, found: &Value| CorpusError::WrongType {
                line,
                field: field.to_owned(),
                expected,
                found: json_type(found),
            };
        let missing = |field: &str| CorpusError::MissingField {
            line,
            field: field.to_owned(),
        };
        let empty = |field: &str| CorpusError::EmptyField {
            line,
            field: field.to_owned(),
        };

        const ID_TYPES: &str = "a string or an integer";
        let external_id = match object.get(&opts.id_field) {
            None => return Err(missing(&opts.id_field)),
            Some(Value::String(s)) if s.trim().is_empty() => return Err(empty(&opts.id_field)),
            Some(Value::String(s)) => s.clone(),
            Some(Value::Number(n)) => match (n.as_u64(), n.as_i64()) {
                (Some(u), _) => u.to_string(),
                (None, Some(i)) => i.to_string(),
                (None, None) => {
                    return Err(wrong_type(
                        &opts.id_field,
                        ID_TYPES,
                        &Value::Number(n.clone()),
                    ));
                }
            },
            Some(other) => return Err(wrong_type(&opts.id_field, ID_TYPES, other)),
        };

        match object.get(&opts.text_field) {
            None => return Err(missing(&opts.text_field)),
            Some(Value::String(s)) if s.trim().is_empty() => return Err(empty(&opts.text_field)),
            Some(Value::String(s)) if s.len() > opts.max_text_bytes => {
                return Err(CorpusError::TextTooLarge {
                    location: Location::Line(line),
                    bytes: s.len() as u64,
                    max: opts.max_text_bytes,
                });
            }
            Some(Value::String(_)) => {}
            Some(other) => return Err(wrong_type(&opts.text_field, "a string", other)),
        }

        let title = match &opts.title_field {
            None => None,
            Some(field) => match object.get(field) {
                None | Some(Value::Null) => None,
                Some(Value::String(s)) if s.trim().is_empty() => None,
                Some(Value::String(s)) => Some(s.trim().to_owned()),
                Some(other) => return Err(wrong_type(field, "a string", other)),
            },
        };

        if let Some(&first_line) = self.seen.get(&external_id) {
            return Err(CorpusError::DuplicateId {
                line,
                id: bounded(&external_id),
                first_line,
            });
        }

        // Checked above to be a string; moved out rather than cloned (texts are the big part).
        let text = match object.remove(&self.options.text_field) {
            Some(Value::String(s)) => s,
            _ => return Err(missing(&self.options.text_field)),
        };
        let doc = SourceDocument {
            external_id,
            title,
            text,
        };
        if let Some(e) = unstorable(&Location::Line(line), &doc) {
            return Err(e);
        }
        self.seen.insert(doc.external_id.clone(), line);
        Ok(doc)
    }
}

impl<R: BufRead> Iterator for JsonlReader<R> {
    type Item = Result<SourceDocument, CorpusError>;

    fn next(&mut self) -> Option<Self::Item> {
        while !self.done {
            let read = self.read_line();
            if !matches!(read, Ok(None)) {
                self.line += 1;
            }
            match read {
                Ok(None) => self.done = true,
                Ok(Some(true)) => {
                    return Some(Err(CorpusError::LineTooLong {
                        line: self.line,
                        max: self.options.max_line_bytes,
                    }));
                }
                Ok(Some(false)) => {
                    if let Some(item) = self.parse_line() {
                        return Some(item);
                    }
                }
                Err(io) => {
                    self.done = true;
                    return Some(Err(CorpusError::ReadLine {
                        line: self.line,
                        io,
                    }));
                }
            }
        }
        None
    }
}

/// serde_json's message without its own " at line 1 column N" suffix (the line is always 1
/// here; the column is reported separately), bounded.
fn invalid_json(line: u64, e: &serde_json::Error) -> CorpusError {
    let full = e.to_string();
    let message = match full.rfind(" at line ") {
        Some(i) => &full[..i],
        None => full.as_str(),
    };
    CorpusError::InvalidJson {
        line,
        column: e.column(),
        message: bounded(message),
    }
}

fn json_type(value: &Value) -> &'static str {
    match value {
        Value::Null => "null",
        Value::Bool(_) => "a boolean",
        Value::Number(n) if n.is_f64() => "a non-integer number",
        Value::Number(_) => "a number",
        Value::String(_) => "a string",
        Value::Array(_) => "an array",
        Value::Object(_) => "an object",
    }
}

const DUPLICATE_KEY: &str = "duplicate key ";

/// Deserialises an object's keys only, failing on the first key seen twice.
struct UniqueKeys;

impl<'de> serde::Deserialize<'de> for UniqueKeys {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        struct Visitor;
        impl<'de> serde::de::Visitor<'de> for Visitor {
            type Value = UniqueKeys;
            fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                f.write_str("a JSON object")
            }
            fn visit_map<A: serde::de::MapAccess<'de>>(
                self,
                mut map: A,
            ) -> Result<UniqueKeys, A::Error> {
                let mut keys = std::collections::HashSet::new();
                while let Some(k) = map.next_key::<std::borrow::Cow<'de, str>>()? {
                    map.next_value::<serde::de::IgnoredAny>()?;
                    if !keys.insert(k.clone()) {
                        return Err(serde::de::Error::custom(format_args!("{DUPLICATE_KEY}{k}")));
                    }
                }
                Ok(UniqueKeys)
            }
        }
        d.deserialize_map(Visitor)
    }
}
