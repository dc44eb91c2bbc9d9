//! Rows for `COPY … FROM STDIN` in PostgreSQL's text format.
//!
//! Promotion appends thousands of evidence records and promotions a transaction. As
//! `INSERT … SELECT FROM unnest(…)` every column travelled as an array parameter that the
//! server unpacked row by row (and two per-row arrays as literals it parsed again); `COPY`
//! hands it rows directly. The text format is used rather than the binary one because
//! each value's text is already what PostgreSQL's own input functions read, so there is
//! one rule to get right — the escaping below — instead of a binary layout per type.

use std::fmt::Display;
use std::fmt::Write as _;

use chrono::{DateTime, Utc};

use crate::error::Result;

/// A batch of rows being written; [`CopyText::copy_into`] sends it.
pub(crate) struct CopyText {
    buf: String,
    /// Whether the next value starts a row (no tab before it).
    row_start: bool,
    rows: u64,
}

impl CopyText {
    pub(crate) fn with_capacity(bytes: usize) -> Self {
        CopyText {
            buf: String::with_capacity(bytes),
            row_start: true,
            rows: 0,
        }
    }

    fn next_field(&mut self) {
        if !self.row_start {
            self.buf.push('\t');
        }
        self.row_start = false;
    }

    /// Escape what the text format reads specially: the backslash, and the row and column
    /// separators. Anything else (quotes, other control characters, any Unicode) is taken
    /// as it is.
    fn escaped(&mut self, text: &str) {
        for ch in text.chars() {
            match ch {
                '\\' => self.buf.push_str("\\\\"),
                '\n' => self.buf.push_str("\\n"),
                '\r' => self.buf.push_str("\\r"),
                '\t' => self.buf.push_str("\\t"),
                ch => self.buf.push(ch),
            }
        }
    }

    pub(crate) fn text(&mut self, text: &str) -> &mut Self {
        self.next_field();
        self.escaped(text);
        self
    }

    pub(crate) fn opt_text(&mut self, text: Option<&str>) -> &mut Self {
        match text {
            Some(text) => self.text(text),
            None => self.null(),
        }
    }

    pub(crate) fn int(&mut self, value: i64) -> &mut Self {
        self.next_field();
        let _ = write!(self.buf, "{value}");
        self
    }

    pub(crate) fn opt_int(&mut self, value: Option<i64>) -> &mut Self {
        match value {
            Some(value) => self.int(value),
            None => self.null(),
        }
    }

    pub(crate) fn null(&mut self) -> &mut Self {
        self.next_field();
        self.buf.push_str("\\N");
        self
    }

    /// `bytea` in its hex input form (`\x…`), the backslash escaped for `COPY`.
    pub(crate) fn bytea(&mut self, bytes: &[u8]) -> &mut Self {
        self.next_field();
        self.buf.push_str("\\\\x");
        self.buf.push_str(&hex::encode(bytes));
        self
    }

    /// A one-dimensional array (`text[]` or `bigint[]`): every element quoted, so none
    /// reads as NULL and no text can break out of it.
    pub(crate) fn array<T: Display>(&mut self, items: &[T]) -> &mut Self {
        self.next_field();
        let mut literal = String::from("{");
        for (i, item) in items.iter().enumerate() {
            if i > 0 {
                literal.push(',');
            }
            literal.push('"');
            for ch in item.to_string().chars() {
                if ch == '"' || ch == '\\' {
                    literal.push('\\');
                }
                literal.push(ch);
            }
            literal.push('"');
        }
        literal.push('}');
        self.escaped(&literal);
        self
    }

    /// A `timestamptz` to the microsecond PostgreSQL keeps, in UTC.
    pub(crate) fn timestamptz(&mut self, at: DateTime<Utc>) -> &mut Self {
        self.next_field();
        let _ = write!(self.buf, "{}", at.format("%Y-%m-%d %H:%M:%S%.6f+00"));
        self
    }

    pub(crate) fn end_row(&mut self) {
        self.buf.push('\n');
        self.row_start = true;
        self.rows += 1;
    }

    /// Send the rows with `statement` (a `COPY table (columns) FROM STDIN`) on `conn`,
    /// inside whatever transaction it is in; a failure leaves that transaction aborted.
    pub(crate) async fn copy_into(
        self,
        conn: &mut sqlx::PgConnection,
        statement: &str,
    ) -> Result<u64> {
        debug_assert!(self.row_start, "a row was left unfinished");
        if self.rows == 0 {
            return Ok(0);
        }
        let mut copy = conn.copy_in_raw(statement).await?;
        copy.send(self.buf.as_bytes()).await?;
        Ok(copy.finish().await?)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn separators_and_backslashes_are_escaped_and_nothing_else() {
        let mut rows = CopyText::with_capacity(64);
        rows.text("a\tb\nc\rd\\e\"f{g}h,é")
            .null()
            .array(&["x\"y", "z\\w", "t\tu"])
            .bytea(&[0xab, 0x01])
            .int(-7);
        rows.end_row();
        assert_eq!(
            rows.buf,
            "a\\tb\\nc\\rd\\\\e\"f{g}h,é\t\\N\t{\"x\\\\\"y\",\"z\\\\\\\\w\",\"t\\tu\"}\t\\\\xab01\t-7\n"
        );
        assert_eq!(rows.rows, 1);
    }
}
