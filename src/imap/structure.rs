//! BODYSTRUCTURE of a stored message, read by mail-parser from its raw bytes.

use imap_types::body::{
    BasicFields, Body, BodyStructure, Disposition, MultiPartExtensionData, SinglePartExtensionData,
    SpecificFields,
};
use imap_types::core::{IString, NString, Vec1};
use mail_parser::{Message, MessagePart, MimeHeaders, PartType};

use super::envelope::{envelope, nstring, raw_field};
use super::section::buffer;

fn istring(s: &str) -> IString<'static> {
    IString::try_from(s.to_owned())
        .unwrap_or_else(|_| IString::try_from(String::from("?")).unwrap_or_else(|_| unreachable!())) // ok: a constant
}

/// The BODYSTRUCTURE of the message (of part 0, its root).
pub fn body_structure(message: &Message<'_>) -> BodyStructure<'static> {
    part_structure(message, 0, 0)
}

/// Parts deeper than this are shown as empty text. The parser's input is already bounded to
/// `mime::MAX_DEPTH` containers; this bound holds the recursion here on its own, counting attached
/// messages and multiparts alike (an attached message does not start the count again).
const MAX_DEPTH: usize = crate::mime::MAX_DEPTH + 1;

fn part_structure(message: &Message<'_>, id: u32, depth: usize) -> BodyStructure<'static> {
    let part = message.part(id);
    let Some(part) = part.filter(|_| depth < MAX_DEPTH) else {
        return single(
            message,
            None,
            SpecificFields::Text { subtype: istring("plain"), number_of_lines: 0 },
        );
    };
    let (ctype, subtype) = match part.content_type() {
        Some(ct) => (ct.ctype().to_ascii_lowercase(), ct.subtype().map(str::to_ascii_lowercase)),
        None => ("text".to_owned(), Some("plain".to_owned())),
    };
    let subtype = subtype.unwrap_or_else(|| "plain".to_owned());
    match &part.body {
        PartType::Multipart(children) if !children.is_empty() => {
            let bodies: Vec<_> =
                children.iter().map(|c| part_structure(message, *c, depth + 1)).collect();
            let mut bodies = bodies.into_iter();
            let first = bodies.next().unwrap_or_else(|| unreachable!()); // ok: not empty
            let mut all = Vec1::from(first);
            for b in bodies {
                all = push(all, b);
            }
            BodyStructure::Multi {
                bodies: all,
                subtype: istring(&subtype),
                extension_data: Some(MultiPartExtensionData {
                    parameter_list: parameters(part),
                    tail: disposition(part),
                }),
            }
        }
        PartType::Message(inner) => {
            let specific = SpecificFields::Message {
                envelope: Box::new(envelope(inner)),
                body_structure: Box::new(part_structure(inner, 0, depth + 1)),
                number_of_lines: lines(message, part),
            };
            single(message, Some(part), specific)
        }
        PartType::Text(_) | PartType::Html(_) if ctype == "text" => {
            let specific = SpecificFields::Text {
                subtype: istring(&subtype),
                number_of_lines: lines(message, part),
            };
            single(message, Some(part), specific)
        }
        _ => {
            let specific =
                SpecificFields::Basic { r#type: istring(&ctype), subtype: istring(&subtype) };
            single(message, Some(part), specific)
        }
    }
}

/// The non-extensible form (FETCH BODY): the same structure without extension data, at every
/// level, messages inside messages included.
pub fn basic(structure: BodyStructure<'static>) -> BodyStructure<'static> {
    match structure {
        BodyStructure::Single { body, .. } => {
            let specific = match body.specific {
                SpecificFields::Message { envelope, body_structure, number_of_lines } => {
                    SpecificFields::Message {
                        envelope,
                        body_structure: Box::new(basic(*body_structure)),
                        number_of_lines,
                    }
                }
                other => other,
            };
            BodyStructure::Single {
                body: Body { basic: body.basic, specific },
                extension_data: None,
            }
        }
        BodyStructure::Multi { bodies, subtype, .. } => {
            let bodies = bodies.into_inner().into_iter().map(basic).collect::<Vec<_>>();
            let bodies = Vec1::try_from(bodies).unwrap_or_else(|_| unreachable!()); // ok: was not empty
            BodyStructure::Multi { bodies, subtype, extension_data: None }
        }
    }
}

fn push(
    all: Vec1<BodyStructure<'static>>,
    next: BodyStructure<'static>,
) -> Vec1<BodyStructure<'static>> {
    let mut v = all.into_inner();
    v.push(next);
    Vec1::try_from(v).unwrap_or_else(|_| unreachable!()) // ok: not empty
}

fn single(
    message: &Message<'_>,
    part: Option<&MessagePart<'_>>,
    specific: SpecificFields<'static>,
) -> BodyStructure<'static> {
    let size = part.map_or(0, |p| p.offset_end.saturating_sub(p.offset_body));
    let cte = part
        .and_then(|p| p.content_transfer_encoding())
        .map_or_else(|| "7BIT".to_owned(), str::to_ascii_uppercase);
    let mut parameter_list = part.map(parameters).unwrap_or_default();
    if parameter_list.is_empty() && matches!(specific, SpecificFields::Text { .. }) {
        parameter_list.push((istring("charset"), istring("us-ascii")));
    }
    BodyStructure::Single {
        body: Body {
            basic: BasicFields {
                parameter_list,
                // As the message has them: a Content-ID with its angle brackets (RFC 2045),
                // a description not decoded.
                id: nstring(part.and_then(|p| raw_field(message, &p.headers, "Content-ID"))),
                description: nstring(
                    part.and_then(|p| raw_field(message, &p.headers, "Content-Description")),
                ),
                content_transfer_encoding: istring(&cte),
                size,
            },
            specific,
        },
        extension_data: Some(SinglePartExtensionData {
            md5: NString(None),
            tail: part.and_then(disposition),
        }),
    }
}

fn parameters(part: &MessagePart<'_>) -> Vec<(IString<'static>, IString<'static>)> {
    let attributes = part.content_type().and_then(|ct| ct.attributes()).unwrap_or_default();
    attributes.iter().map(|a| (istring(&a.name), istring(&a.value))).collect()
}

fn disposition(part: &MessagePart<'_>) -> Option<Disposition<'static>> {
    let d = part.content_disposition()?;
    let params = d.attributes().unwrap_or_default();
    let params = params.iter().map(|a| (istring(&a.name), istring(&a.value))).collect();
    Some(Disposition { disposition: Some((istring(d.ctype()), params)), tail: None })
}

/// Lines of a part's body as it is encoded in the message (a last line without its line end
/// counts: the CRLF before a boundary belongs to the boundary).
fn lines(message: &Message<'_>, part: &MessagePart<'_>) -> u32 {
    let raw = buffer(message);
    let (from, to) = (part.offset_body as usize, part.offset_end as usize);
    let body = raw.get(from..to.min(raw.len())).unwrap_or_default();
    let ends = body.iter().filter(|c| **c == b'\n').count();
    let open = body.last().is_some_and(|c| *c != b'\n');
    (ends + usize::from(open)) as u32
}

#[cfg(test)]
mod tests {
    use super::*;
    use imap_types::body::BodyStructure;
    use imap_types::envelope::Address;
    use mail_parser::MessageParser;

    fn text(n: &NString<'_>) -> Option<String> {
        n.0.as_ref().map(|s| String::from_utf8_lossy(s.as_ref()).into_owned())
    }

    fn parts(s: &BodyStructure<'static>) -> Vec<BodyStructure<'static>> {
        match s {
            BodyStructure::Multi { bodies, .. } => bodies.as_ref().to_vec(),
            BodyStructure::Single { .. } => Vec::new(),
        }
    }

    #[test]
    fn nested_text_parts_count_their_lines_and_content_ids_keep_their_brackets() {
        let m =
            MessageParser::default().parse(crate::imap::section::tests::NESTED).expect("parsed"); // ok: test
        let top = body_structure(&m);
        let outer = parts(&top);
        assert_eq!(outer.len(), 3, "{top:?}");
        let BodyStructure::Single { body, .. } = &outer[1] else { panic!("{top:?}") };
        assert_eq!(text(&body.basic.id).as_deref(), Some("<abc@x.test>"));
        let SpecificFields::Message { body_structure: inner, number_of_lines, .. } = &body.specific
        else {
            panic!("{top:?}")
        };
        assert_eq!(*number_of_lines, 14);
        let alternatives = parts(inner);
        let BodyStructure::Single { body, .. } = &alternatives[0] else { panic!("{inner:?}") };
        assert!(
            matches!(body.specific, SpecificFields::Text { number_of_lines: 2, .. }),
            "{body:?}"
        );
        let BodyStructure::Single { body, .. } = &outer[2] else { panic!("{top:?}") };
        let SpecificFields::Message { body_structure: single, .. } = &body.specific else {
            panic!("{top:?}")
        };
        let BodyStructure::Single { body, .. } = single.as_ref() else { panic!("{single:?}") };
        assert!(
            matches!(body.specific, SpecificFields::Text { number_of_lines: 2, .. }),
            "{body:?}"
        );
    }

    fn rendered(addresses: &[Address<'static>]) -> String {
        let one = |n: &NString<'_>| text(n).map_or("NIL".to_owned(), |s| format!("{s:?}"));
        addresses
            .iter()
            .map(|a| {
                format!("({} {} {} {})", one(&a.name), one(&a.adl), one(&a.mailbox), one(&a.host))
            })
            .collect()
    }

    #[test]
    fn envelopes_keep_groups_and_the_fields_as_written() {
        let raw = b"From: =?utf-8?q?Ann_B=C3=A9?= <ann@x.test>\r\n\
            To: team: \"Bob \\\"B\\\"\" <bob@y.test>, carl@z.test (Carl);, dan@w.test\r\n\
            Cc: undisclosed-recipients:;\r\n\
            Bcc: <@relay.test,@b.test:eve@v.test>\r\n\
            Subject: =?utf-8?q?caf=C3=A9?=\r\n folded\r\n\r\nbody\r\n";
        let m = MessageParser::default().parse(raw.as_slice()).expect("parsed"); // ok: test
        let e = envelope(&m);
        assert_eq!(text(&e.subject).as_deref(), Some("=?utf-8?q?caf=C3=A9?= folded"));
        assert_eq!(rendered(&e.from), r#"("=?utf-8?q?Ann_B=C3=A9?=" NIL "ann" "x.test")"#);
        assert_eq!(rendered(&e.sender), rendered(&e.from));
        assert_eq!(
            rendered(&e.to),
            concat!(
                r#"(NIL NIL "team" NIL)("Bob \"B\"" NIL "bob" "y.test")"#,
                r#"("Carl" NIL "carl" "z.test")(NIL NIL NIL NIL)(NIL NIL "dan" "w.test")"#
            )
        );
        assert_eq!(rendered(&e.cc), r#"(NIL NIL "undisclosed-recipients" NIL)(NIL NIL NIL NIL)"#);
        assert_eq!(rendered(&e.bcc), r#"(NIL "@relay.test,@b.test" "eve" "v.test")"#);
    }
}
