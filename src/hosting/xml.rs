//! Writing the XML documents we serve: every value from outside (a domain, an address, a host
//! name from the configuration) is escaped by quick-xml before it is placed in the text.

use std::fmt::Write;

/// `<name>value</name>`, the value escaped.
pub(super) fn element(out: &mut String, indent: usize, name: &str, value: &str) {
    let _ = writeln!(
        out,
        "{:indent$}<{name}>{}</{name}>",
        "",
        quick_xml::escape::escape(value),
        indent = indent
    );
}

/// A value escaped for element text or an attribute in double quotes.
pub(super) fn escaped(value: &str) -> String {
    quick_xml::escape::escape(value).into_owned()
}

/// Reads the text of the first element whose local name is `wanted` from a small document,
/// refusing a DTD (so no entity can be declared, let alone expanded), more than `max_events`
/// events, or nesting deeper than 16.
pub(super) fn first_text(
    doc: &[u8],
    wanted: &str,
    max_events: usize,
) -> Result<Option<String>, String> {
    use quick_xml::events::Event;
    let mut reader = quick_xml::Reader::from_reader(doc);
    let (mut depth, mut inside, mut text) = (0usize, false, String::new());
    for _ in 0..max_events {
        match reader.read_event().map_err(|e| format!("not XML: {e}"))? {
            Event::DocType(_) => return Err("a document type declaration is not accepted".into()),
            Event::Start(e) => {
                depth += 1;
                if depth > 16 {
                    return Err("elements nested too deep".into());
                }
                inside = e.local_name().as_ref() == wanted;
            }
            Event::Text(t) if inside => {
                let raw = t.xml10_content();
                text.push_str(&quick_xml::escape::unescape(&raw).map_err(|e| e.to_string())?);
            }
            Event::GeneralRef(r) if inside => {
                // Only the five predefined entities and character references exist without a DTD.
                let name: &str = r.as_ref();
                let reference = format!("&{name};");
                let value = quick_xml::escape::unescape(&reference)
                    .map_err(|_| format!("unknown entity {reference}"))?;
                text.push_str(&value);
            }
            Event::End(_) if inside => return Ok(Some(text.trim().to_owned())),
            Event::End(_) => depth = depth.saturating_sub(1),
            Event::Eof => return Ok(None),
            _ => {}
        }
    }
    Err("document too long".into())
}
