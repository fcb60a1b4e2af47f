//! `POST /v1/contacts/import`: a CSV file of leads into the contact book (extensions.md,
//! "Outreach"). The header row names the columns: `email` (required, matched without regard to
//! case), `name` (optional), every other column a field. The delimiter is sniffed from the header
//! row (`,`, `;` as Excel writes it in locales with a decimal comma, or a tab); a UTF-8 BOM is
//! skipped. Rows are numbered as a spreadsheet shows them: the header is row 1. Rows that cannot
//! be a contact are reported, not fatal; a file that cannot be read at all is a 400.
//!
//! The rows are sorted by address and written in chunks, one store job each, so 50,000 rows
//! cost a few commits and one range read per chunk rather than a commit and lookups per row.

use std::collections::BTreeMap;

use serde::Serialize;

use super::contacts::{MAX_FIELD_VALUE, MAX_NAME, bad_field_name, contact_email};
use crate::error::{Error, Result};
use crate::http::{Ctx, Reply};
use crate::store::{ContactUpsert, MAX_CONTACT_FIELDS};

/// The most data rows one import takes.
pub const MAX_ROWS: usize = 50_000;
/// The most bytes an import body may have (the route's own limit in `http::server`).
pub const MAX_BODY: usize = 16 * 1024 * 1024;
/// Rows per store job: large enough that commits are few, small enough that one job does not
/// hold the writer for long.
const CHUNK: usize = 5_000;

/// A row refused, as the answer lists it.
#[derive(Debug, Serialize, PartialEq, Eq)]
pub struct Invalid {
    pub row: usize,
    pub email: String,
    pub reason: &'static str,
}

/// A file read: the rows to write, and the rows refused.
#[derive(Debug, Default)]
pub struct Parsed {
    pub rows: Vec<(usize, ContactUpsert)>,
    pub invalid: Vec<Invalid>,
}

/// The delimiter the header row uses most, outside quotes; `,` when it has none.
fn sniff(header: &[u8]) -> u8 {
    let mut counts = [0usize; 3];
    let mut quoted = false;
    for &b in header {
        match b {
            b'"' => quoted = !quoted,
            b'\n' | b'\r' if !quoted => break,
            b',' if !quoted => counts[0] += 1,
            b';' if !quoted => counts[1] += 1,
            b'\t' if !quoted => counts[2] += 1,
            _ => {}
        }
    }
    let best = (0..3).max_by_key(|&i| (counts[i], std::cmp::Reverse(i))).unwrap_or(0);
    if counts[best] == 0 { b',' } else { [b',', b';', b'\t'][best] }
}

fn bad_csv(message: String) -> Error {
    Error::invalid(message, "send a CSV file with a header row that has an `email` column")
}

/// The columns: where `email` and `name` are, and the field name of every other column.
struct Columns {
    email: usize,
    name: Option<usize>,
    fields: Vec<(usize, String)>,
}

fn columns(header: &csv::ByteRecord) -> Result<Columns> {
    let mut email = None;
    let mut name = None;
    let mut fields: Vec<(usize, String)> = Vec::new();
    for (i, raw) in header.iter().enumerate() {
        let title = std::str::from_utf8(raw)
            .map_err(|_| bad_csv(format!("column {} of the header row is not UTF-8", i + 1)))?
            .trim();
        if title.eq_ignore_ascii_case("email") {
            if email.replace(i).is_some() {
                return Err(bad_csv("the header row has two `email` columns".into()));
            }
        } else if title.eq_ignore_ascii_case("name") {
            if name.replace(i).is_some() {
                return Err(bad_csv("the header row has two `name` columns".into()));
            }
        } else if let Some(why) = bad_field_name(title) {
            let shown: String = title.chars().take(64).collect();
            return Err(Error::invalid(
                format!("column {} of the header row ({shown:?}) cannot be a field: {why}", i + 1),
                "rename the column, e.g. `First Name` to `firstName`",
            ));
        } else if fields.iter().any(|(_, f)| f == title) {
            return Err(bad_csv(format!("the header row has two {title:?} columns")));
        } else {
            fields.push((i, title.to_owned()));
        }
    }
    if fields.len() > MAX_CONTACT_FIELDS {
        return Err(bad_csv(format!(
            "the header row has {} field columns; a contact takes at most {MAX_CONTACT_FIELDS}",
            fields.len()
        )));
    }
    let email = email.ok_or_else(|| bad_csv("the header row has no `email` column".into()))?;
    Ok(Columns { email, name, fields })
}

/// One data row as a contact, or why it cannot be one.
fn contact(
    cols: &Columns,
    record: &csv::ByteRecord,
) -> std::result::Result<ContactUpsert, &'static str> {
    if record.len() > cols.fields.len() + 1 + usize::from(cols.name.is_some()) {
        return Err("too_many_cells");
    }
    let cell = |i: usize| -> std::result::Result<&str, &'static str> {
        std::str::from_utf8(record.get(i).unwrap_or_default()).map_err(|_| "not_utf8")
    };
    let email = contact_email(cell(cols.email)?).map_err(|_| "invalid_email")?;
    let name = match cols.name {
        Some(i) => {
            let name = cell(i)?.trim();
            if name.chars().count() > MAX_NAME {
                return Err("name_too_long");
            }
            if name.chars().any(char::is_control) {
                return Err("invalid_name");
            }
            // An empty cell leaves the stored name alone.
            (!name.is_empty()).then(|| name.to_owned())
        }
        None => None,
    };
    let mut fields = BTreeMap::new();
    for (i, key) in &cols.fields {
        let value = cell(*i)?.trim();
        if value.chars().count() > MAX_FIELD_VALUE {
            return Err("field_too_long");
        }
        fields.insert(key.clone(), value.to_owned());
    }
    Ok(ContactUpsert { email, name, fields })
}

/// Line breaks inside the cells of `record` (quoted cells may hold them).
fn newlines(record: &csv::ByteRecord) -> u64 {
    record.iter().map(|c| c.iter().filter(|&&b| b == b'\n').count() as u64).sum()
}

/// Reads a CSV body into contacts and refused rows; a body that has no usable header, or more
/// than `MAX_ROWS` rows, is refused whole.
pub fn parse_csv(body: &[u8]) -> Result<Parsed> {
    let body = body.strip_prefix(b"\xEF\xBB\xBF").unwrap_or(body);
    let mut reader = csv::ReaderBuilder::new()
        .delimiter(sniff(body))
        .flexible(true)
        .has_headers(true)
        .from_reader(body);
    let header = reader
        .byte_headers()
        .map_err(|e| bad_csv(format!("the header row cannot be read: {e}")))?
        .clone();
    if header.is_empty() {
        return Err(bad_csv("the body is empty".into()));
    }
    let cols = columns(&header)?;
    let mut out = Parsed::default();
    let mut record = csv::ByteRecord::new();
    let mut index = 0usize;
    // Spreadsheet row numbers: the reader skips blank lines, which a spreadsheet shows as rows,
    // and a quoted cell may span lines; so rows are counted from where each record starts.
    let mut row = 1usize;
    let mut end_line = 1 + newlines(&header);
    loop {
        match reader.read_byte_record(&mut record) {
            Ok(false) => break,
            Ok(true) => {}
            Err(e) => return Err(bad_csv(format!("row {} cannot be read: {e}", index + 2))),
        }
        index += 1;
        if index > MAX_ROWS {
            return Err(Error::invalid(
                format!("the file has more than {MAX_ROWS} rows"),
                "split it into files of at most 50,000 rows",
            ));
        }
        // The header is row 1, so the first data row is row 2, as a spreadsheet numbers it.
        let start = record.position().map_or(end_line + 1, csv::Position::line);
        row += 1 + usize::try_from(start.saturating_sub(end_line + 1)).unwrap_or(0);
        end_line = start + newlines(&record);
        if record.iter().all(|c| c.trim_ascii().is_empty()) {
            continue;
        }
        match contact(&cols, &record) {
            Ok(c) => out.rows.push((row, c)),
            Err(reason) => {
                let email = String::from_utf8_lossy(record.get(cols.email).unwrap_or_default());
                let email = email.trim().chars().take(320).collect();
                out.invalid.push(Invalid { row, email, reason });
            }
        }
    }
    Ok(out)
}

pub async fn import(ctx: Ctx) -> Result<Reply> {
    let domain = ctx.domain()?.to_owned();
    let body = ctx.body.clone();
    let mut parsed = tokio::task::spawn_blocking(move || parse_csv(&body))
        .await
        .map_err(|e| Error::Internal(format!("the CSV reader stopped: {e}")))??;
    // Sorted by address (stably, so a later row of the same address is applied later): each
    // chunk then covers one stretch of the email index.
    parsed.rows.sort_by_cached_key(|(_, c)| c.email.to_ascii_lowercase());
    let (mut created, mut updated) = (0, 0);
    let mut invalid = parsed.invalid;
    let mut rows = parsed.rows;
    while !rows.is_empty() {
        let rest = rows.split_off(CHUNK.min(rows.len()));
        let chunk = std::mem::replace(&mut rows, rest);
        let d = domain.clone();
        let done = ctx.app.store.write(move |w| w.import_contacts(&d, &chunk)).await?;
        created += done.created;
        updated += done.updated;
        invalid.extend(done.invalid.into_iter().map(|(row, email, reason)| Invalid {
            row,
            email,
            reason,
        }));
    }
    invalid.sort_by_key(|i| i.row);
    Reply::ok(&serde_json::json!({ "created": created, "updated": updated, "invalid": invalid }))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn parse(text: &str) -> Parsed {
        parse_csv(text.as_bytes()).expect("parses") // ok: test
    }

    #[test]
    fn bom_semicolons_quotes_and_newlines() {
        let text = "\u{feff}Email;Name;company;note\r\n\
                    ada@x.test;Ada;\"Lovelace; Babbage\";\"says \"\"hi\"\"\nthen leaves\"\r\n\
                    bad-address;Bob;B;\r\n";
        let p = parse(text);
        assert_eq!(p.rows.len(), 1);
        let (row, c) = &p.rows[0];
        assert_eq!(*row, 2);
        assert_eq!(c.email, "ada@x.test");
        assert_eq!(c.name.as_deref(), Some("Ada"));
        assert_eq!(c.fields["company"], "Lovelace; Babbage");
        assert_eq!(c.fields["note"], "says \"hi\"\nthen leaves");
        assert_eq!(
            p.invalid,
            [Invalid { row: 3, email: "bad-address".into(), reason: "invalid_email" }]
        );
    }

    #[test]
    fn sniffing() {
        assert_eq!(sniff(b"email,name"), b',');
        assert_eq!(sniff(b"email;name;\"a,b\""), b';');
        assert_eq!(sniff(b"email\tname"), b'\t');
        assert_eq!(sniff(b"email"), b',');
        assert_eq!(sniff(b"\"x;y\",email\nsemi;colons;here"), b',');
    }

    #[test]
    fn headers_refused() {
        for text in ["name,company\nx,y\n", "email,First Name\na@x.test,A\n", "email,EMAIL\n", ""] {
            assert!(parse_csv(text.as_bytes()).is_err(), "{text:?}");
        }
        let wide: Vec<String> = (0..51).map(|i| format!("f{i}")).collect();
        assert!(parse_csv(format!("email,{}\n", wide.join(",")).as_bytes()).is_err());
    }

    #[test]
    fn row_limits() {
        let mut text = String::from("email\n");
        for i in 0..MAX_ROWS {
            text.push_str(&format!("u{i}@x.test\n"));
        }
        assert_eq!(parse(&text).rows.len(), MAX_ROWS);
        text.push_str("one@more.test\n");
        assert!(parse_csv(text.as_bytes()).is_err());
        let p = parse("email,a\nx@y.test,1,2\n\n,\nz@y.test\n");
        assert_eq!(
            p.invalid,
            [Invalid { row: 2, email: "x@y.test".into(), reason: "too_many_cells" }]
        );
        // A short row is a row whose missing cells are empty.
        assert_eq!(p.rows.len(), 1);
        assert_eq!(p.rows[0].0, 5);
    }
}
