//! Rows for `COPY … FROM STDIN (FORMAT binary)`.
//!
//! Promotion appends thousands of evidence records (and review-queue rows) a transaction. In
//! `COPY`'s text format every value was printed by relata and parsed again by the server
//! — each record's three hashes as hex, its times through the date parser — and that
//! printing and parsing was most of what relata's side of promotion cost and an eighth of
//! the server's (BENCHMARKS.md §1b, series 28). The binary format sends each value as
//! the server keeps it: integers as big-endian words, hashes as their bytes, times as
//! microseconds since 2000, text as its UTF-8 bytes. Nothing is escaped: every value
//! carries its length, so no text can break out of its field.
//!
//! Each method writes one value of one column type, and the statement's column list names
//! the columns in the same order. The server reads each value with its column's binary
//! input, which refuses a value of the wrong size where a fixed-size type belongs (text
//! where a `bigint` or a time belongs fails the `COPY` and its transaction) but cannot
//! tell every mix-up of text and `bytea`: the store's tests read back what was written.

use chrono::{DateTime, Utc};

use crate::error::{Result, StoreError};

/// The file header: signature, flags (no OIDs) and an empty header extension.
const HEADER: &[u8] = b"PGCOPY\n\xff\r\n\0\0\0\0\0\0\0\0\0";

/// The trailer: a row of -1 fields.
const TRAILER: [u8; 2] = (-1i16).to_be_bytes();

/// `timestamptz` counts microseconds from 2000-01-01 00:00:00 UTC, this many after the
/// Unix epoch.
const POSTGRES_EPOCH_MICROS: i64 = 946_684_800_000_000;

/// `pg_type` oids of the array element types relata copies.
const TEXT_OID: u32 = 25;
const INT8_OID: u32 = 20;

/// An element of a one-dimensional array column.
pub(crate) trait ArrayElement {
    /// The element type's oid: the server refuses an array of another element type.
    const OID: u32;
    fn len(&self) -> usize;
    fn write(&self, buf: &mut Vec<u8>);
}

impl ArrayElement for String {
    const OID: u32 = TEXT_OID;
    fn len(&self) -> usize {
        str::len(self)
    }
    fn write(&self, buf: &mut Vec<u8>) {
        buf.extend_from_slice(self.as_bytes());
    }
}

impl ArrayElement for i64 {
    const OID: u32 = INT8_OID;
    fn len(&self) -> usize {
        8
    }
    fn write(&self, buf: &mut Vec<u8>) {
        buf.extend_from_slice(&self.to_be_bytes());
    }
}

/// A batch of rows being written; [`CopyBinary::copy_into`] sends it.
///
/// Writing a value cannot fail; a row of the wrong width or a value too long for the
/// format (over 2 GiB) is reported by [`CopyBinary::end_row`].
pub(crate) struct CopyBinary {
    buf: Vec<u8>,
    /// Values in every row: the statement's column count.
    columns: i16,
    /// Values written of the row in progress.
    fields: i16,
    /// A value of the row in progress did not fit the format's 32-bit length.
    too_long: bool,
    rows: u64,
}

impl CopyBinary {
    /// Rows of `columns` values each, with room for about `bytes`.
    pub(crate) fn new(columns: i16, bytes: usize) -> Self {
        let mut buf = Vec::with_capacity(bytes + HEADER.len() + TRAILER.len());
        buf.extend_from_slice(HEADER);
        CopyBinary {
            buf,
            columns,
            fields: 0,
            too_long: false,
            rows: 0,
        }
    }

    /// Start the next value with its length (-1 for null), and the row with its width
    /// if this is its first value.
    fn field(&mut self, len: Option<usize>) -> &mut Self {
        if self.fields == 0 {
            self.buf.extend_from_slice(&self.columns.to_be_bytes());
        }
        self.fields = self.fields.saturating_add(1);
        let len = match len.map(i32::try_from) {
            None => -1,
            Some(Ok(len)) => len,
            Some(Err(_)) => {
                self.too_long = true;
                0
            }
        };
        self.buf.extend_from_slice(&len.to_be_bytes());
        self
    }

    pub(crate) fn text(&mut self, text: &str) -> &mut Self {
        self.bytea(text.as_bytes())
    }

    pub(crate) fn opt_text(&mut self, text: Option<&str>) -> &mut Self {
        match text {
            Some(text) => self.text(text),
            None => self.null(),
        }
    }

    /// A `bigint`.
    pub(crate) fn int(&mut self, value: i64) -> &mut Self {
        self.field(Some(8));
        self.buf.extend_from_slice(&value.to_be_bytes());
        self
    }

    pub(crate) fn opt_int(&mut self, value: Option<i64>) -> &mut Self {
        match value {
            Some(value) => self.int(value),
            None => self.null(),
        }
    }

    pub(crate) fn null(&mut self) -> &mut Self {
        self.field(None)
    }

    /// `bytea` (or the UTF-8 of `text`): the bytes themselves.
    pub(crate) fn bytea(&mut self, bytes: &[u8]) -> &mut Self {
        self.field(Some(bytes.len()));
        self.buf.extend_from_slice(bytes);
        self
    }

    /// A one-dimensional array (`text[]` or `bigint[]`) without nulls; an empty one has
    /// no dimensions, as PostgreSQL writes `'{}'`.
    pub(crate) fn array<T: ArrayElement>(&mut self, items: &[T]) -> &mut Self {
        let dims: i32 = if items.is_empty() { 0 } else { 1 };
        let len = 12 + 8 * dims as usize + items.iter().map(|e| 4 + e.len()).sum::<usize>();
        self.field(Some(len));
        self.buf.extend_from_slice(&dims.to_be_bytes());
        self.buf.extend_from_slice(&0i32.to_be_bytes()); // no nulls
        self.buf.extend_from_slice(&T::OID.to_be_bytes());
        if dims == 1 {
            // Fewer elements than the array's bytes; a length over i32 is reported above.
            let count = i32::try_from(items.len()).unwrap_or(i32::MAX);
            self.buf.extend_from_slice(&count.to_be_bytes());
            self.buf.extend_from_slice(&1i32.to_be_bytes()); // the lower bound
        }
        for e in items {
            let len = i32::try_from(e.len()).unwrap_or(i32::MAX);
            self.buf.extend_from_slice(&len.to_be_bytes());
            e.write(&mut self.buf);
        }
        self
    }

    /// A `timestamptz` to the microsecond PostgreSQL keeps (a finer time is truncated, as
    /// its text form was).
    pub(crate) fn timestamptz(&mut self, at: DateTime<Utc>) -> &mut Self {
        self.int(at.timestamp_micros() - POSTGRES_EPOCH_MICROS)
    }

    pub(crate) fn end_row(&mut self) -> Result<()> {
        let (fields, too_long) = (self.fields, self.too_long);
        self.fields = 0;
        self.too_long = false;
        if fields != self.columns {
            return Err(StoreError::Invariant(format!(
                "a copied row has {fields} values for {} columns",
                self.columns
            )));
        }
        if too_long {
            return Err(StoreError::Invariant(
                "a copied value is longer than 2 GiB".into(),
            ));
        }
        self.rows += 1;
        Ok(())
    }

    /// Send the rows with `statement` (a `COPY table (columns) FROM STDIN (FORMAT
    /// binary)`) on `conn`, inside whatever transaction it is in; a failure leaves that
    /// transaction aborted.
    pub(crate) async fn copy_into(
        mut self,
        conn: &mut sqlx::PgConnection,
        statement: &str,
    ) -> Result<u64> {
        if self.fields != 0 {
            return Err(StoreError::Invariant(
                "a copied row was left unfinished".into(),
            ));
        }
        if self.rows == 0 {
            return Ok(0);
        }
        self.buf.extend_from_slice(&TRAILER);
        let mut copy = conn.copy_in_raw(statement).await?;
        copy.send(self.buf).await?;
        Ok(copy.finish().await?)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn values_are_laid_out_as_postgresql_reads_them() {
        let mut rows = CopyBinary::new(7, 64);
        let at = DateTime::parse_from_rfc3339("2000-01-01T00:00:01.000002Z")
            .unwrap()
            .with_timezone(&Utc);
        rows.text("é\t")
            .null()
            .int(-2)
            .bytea(&[0xab])
            .timestamptz(at)
            .array(&["x".to_owned()])
            .array::<i64>(&[]);
        rows.end_row().unwrap();
        let body = &rows.buf[HEADER.len()..];
        let expected: Vec<u8> = [
            &[0, 7][..],
            &[0, 0, 0, 3, 0xc3, 0xa9, b'\t'],
            &[0xff, 0xff, 0xff, 0xff],
            &[0, 0, 0, 8, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xfe],
            &[0, 0, 0, 1, 0xab],
            // 1,000,002 µs after 2000-01-01.
            &[0, 0, 0, 8, 0, 0, 0, 0, 0, 0x0f, 0x42, 0x42],
            // ndim 1, no nulls, text, 1 element from 1, "x".
            &[0, 0, 0, 25, 0, 0, 0, 1, 0, 0, 0, 0, 0, 0, 0, 25],
            &[0, 0, 0, 1, 0, 0, 0, 1, 0, 0, 0, 1, b'x'],
            // ndim 0, no nulls, bigint.
            &[0, 0, 0, 12, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 20],
        ]
        .concat();
        assert_eq!(body, expected.as_slice());
        assert_eq!(rows.rows, 1);
    }

    #[test]
    fn a_row_with_too_few_or_too_many_values_is_refused() {
        let mut short = CopyBinary::new(2, 16);
        short.int(1);
        assert!(short.end_row().is_err());
        let mut long = CopyBinary::new(1, 16);
        long.int(1).int(2);
        assert!(long.end_row().is_err());
    }
}
