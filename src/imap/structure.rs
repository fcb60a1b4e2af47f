//! ENVELOPE and BODYSTRUCTURE of a stored message, read by mail-parser from its raw bytes.

use imap_types::body::{
    BasicFields, Body, BodyStructure, Disposition, MultiPartExtensionData, SinglePartExtensionData,
    SpecificFields,
};
use imap_types::core::{IString, NString, Vec1};
use imap_types::envelope::{Address, Envelope};
use mail_parser::{Message, MessagePart, MimeHeaders, PartType};

/// A string for a response, or NIL when it cannot be one.
pub fn nstring(s: Option<&str>) -> NString<'static> {
    NString(s.and_then(|s| IString::try_from(s.to_owned()).ok()))
}

fn istring(s: &str) -> IString<'static> {
    IString::try_from(s.to_owned())
        .unwrap_or_else(|_| IString::try_from(String::from("?")).unwrap_or_else(|_| unreachable!())) // ok: a constant
}

/// The raw value of header `name`, unfolded and trimmed.
fn header(message: &Message<'_>, name: &str) -> Option<String> {
    let raw = message.header_raw(name)?;
    Some(raw.replace("\r\n", "").replace('\n', "").trim().to_owned())
}

pub fn envelope(message: &Message<'_>) -> Envelope<'static> {
    let from = addresses(message.from());
    let sender = match addresses(message.sender()) {
        s if s.is_empty() => from.clone(),
        s => s,
    };
    let reply_to = match addresses(message.reply_to()) {
        r if r.is_empty() => from.clone(),
        r => r,
    };
    Envelope {
        date: nstring(header(message, "Date").as_deref()),
        subject: nstring(header(message, "Subject").as_deref()),
        from,
        sender,
        reply_to,
        to: addresses(message.to()),
        cc: addresses(message.cc()),
        bcc: addresses(message.bcc()),
        in_reply_to: nstring(header(message, "In-Reply-To").as_deref()),
        message_id: nstring(header(message, "Message-ID").as_deref()),
    }
}

fn addresses(list: Option<&mail_parser::Address<'_>>) -> Vec<Address<'static>> {
    let Some(list) = list else { return Vec::new() };
    list.iter()
        .filter_map(|a| {
            let address = a.address()?;
            let (mailbox, host) = address.rsplit_once('@').unwrap_or((address, ""));
            Some(Address {
                name: nstring(a.name()),
                adl: NString(None),
                mailbox: nstring(Some(mailbox)),
                host: nstring((!host.is_empty()).then_some(host)),
            })
        })
        .collect()
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
    let _ = message;
    BodyStructure::Single {
        body: Body {
            basic: BasicFields {
                parameter_list,
                id: nstring(part.and_then(|p| p.content_id())),
                description: nstring(part.and_then(|p| p.content_description())),
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
    let raw = message.raw_message();
    let (from, to) = (part.offset_body as usize, part.offset_end as usize);
    let body = raw.get(from..to.min(raw.len())).unwrap_or_default();
    let ends = body.iter().filter(|c| **c == b'\n').count();
    let open = body.last().is_some_and(|c| *c != b'\n');
    (ends + usize::from(open)) as u32
}
