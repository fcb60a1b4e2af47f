//! Getting a report document out of an attachment: plain, gzip or a zip archive, with the
//! decompressed size capped WHILE reading. A 10 MB gzip of zeros inflates to 10 GB; reading
//! stops at the cap plus one byte, so neither memory nor time grows with what a bomb claims.

use std::io::Read;

/// The largest report document we accept once decompressed. Google's and Microsoft's daily
/// reports for busy domains stay well under a megabyte.
pub const MAX_DOCUMENT: usize = 8 * 1024 * 1024;
/// Entries a zip archive may list; a report archive holds one.
const MAX_ZIP_ENTRIES: usize = 16;

/// Why an attachment yields no document.
#[derive(Debug, PartialEq, Eq)]
pub enum Refused {
    /// Larger than `MAX_DOCUMENT` once decompressed (or as sent).
    TooLarge,
    /// A broken archive or stream, or an archive without a file.
    Corrupt(String),
}

impl std::fmt::Display for Refused {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Refused::TooLarge => write!(f, "over {MAX_DOCUMENT} bytes decompressed"),
            Refused::Corrupt(why) => write!(f, "unreadable archive: {why}"),
        }
    }
}

/// The document inside `data`, recognized by its first bytes: gzip (`1f 8b`), zip (`PK`) or
/// as it is.
pub fn document(data: &[u8], cap: usize) -> Result<Vec<u8>, Refused> {
    if data.starts_with(&[0x1f, 0x8b]) {
        // Several gzip members are one stream (RFC 1952 2.2); the cap holds over all of them.
        return capped(flate2::read::MultiGzDecoder::new(data), cap);
    }
    if data.starts_with(b"PK\x03\x04") {
        return unzip(data, cap);
    }
    if data.len() > cap {
        return Err(Refused::TooLarge);
    }
    Ok(data.to_vec())
}

/// Reads at most `cap` bytes from `reader`; one more means too large.
fn capped(reader: impl Read, cap: usize) -> Result<Vec<u8>, Refused> {
    let mut out = Vec::new();
    let limit = u64::try_from(cap).unwrap_or(u64::MAX).saturating_add(1);
    reader.take(limit).read_to_end(&mut out).map_err(|e| Refused::Corrupt(e.to_string()))?;
    if out.len() > cap {
        return Err(Refused::TooLarge);
    }
    Ok(out)
}

/// The first file of a zip archive, its declared size checked first and the cap applied
/// while inflating (a declared size may lie).
fn unzip(data: &[u8], cap: usize) -> Result<Vec<u8>, Refused> {
    let corrupt = |e: zip::result::ZipError| Refused::Corrupt(e.to_string());
    let mut archive = zip::ZipArchive::new(std::io::Cursor::new(data)).map_err(corrupt)?;
    if archive.len() > MAX_ZIP_ENTRIES {
        return Err(Refused::Corrupt(format!("{} entries", archive.len())));
    }
    for i in 0..archive.len() {
        let file = archive.by_index(i).map_err(corrupt)?;
        if file.is_dir() {
            continue;
        }
        if file.size() > u64::try_from(cap).unwrap_or(u64::MAX) {
            return Err(Refused::TooLarge);
        }
        return capped(file, cap);
    }
    Err(Refused::Corrupt("no file in the archive".into()))
}

#[cfg(test)]
mod tests {
    use std::io::Write;

    use super::*;

    fn gzip(data: &[u8]) -> Vec<u8> {
        let mut e = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::best());
        e.write_all(data).expect("gzip"); // ok: test
        e.finish().expect("gzip") // ok: test
    }

    fn zip_of(name: &str, data: &[u8]) -> Vec<u8> {
        let mut w = zip::ZipWriter::new(std::io::Cursor::new(Vec::new()));
        let options = zip::write::SimpleFileOptions::default()
            .compression_method(zip::CompressionMethod::Deflated);
        w.start_file(name, options).expect("zip"); // ok: test
        w.write_all(data).expect("zip"); // ok: test
        w.finish().expect("zip").into_inner() // ok: test
    }

    #[test]
    fn plain_gzip_and_zip_give_the_document() {
        let doc = b"<feedback></feedback>".to_vec();
        assert_eq!(document(&doc, 100), Ok(doc.clone()));
        assert_eq!(document(&gzip(&doc), 100), Ok(doc.clone()));
        assert_eq!(document(&zip_of("r.xml", &doc), 100), Ok(doc.clone()));
    }

    #[test]
    fn bombs_stop_at_the_cap() {
        let zeros = vec![0u8; 4 * 1024 * 1024];
        assert_eq!(document(&gzip(&zeros), 1024 * 1024), Err(Refused::TooLarge));
        assert_eq!(document(&zip_of("r.xml", &zeros), 1024 * 1024), Err(Refused::TooLarge));
        assert_eq!(document(&zeros, 1024), Err(Refused::TooLarge));
        assert!(matches!(document(b"PK\x03\x04broken", 1024), Err(Refused::Corrupt(_))));
        assert!(matches!(document(&[0x1f, 0x8b, 8, 0, 1, 2], 1024), Err(Refused::Corrupt(_))));
    }
}
