//! The request bodies of `/v1/sequences`, checked field by field: a refusal names the field
//! (`steps[2].variants[1].html`, `sendingWindow.timezone`) so a client can fix its request.

use serde::Deserialize;

use crate::error::{Error, Result};
use crate::http::request::{parse_json, parse_json_nullable};
use crate::sequences::window;
use crate::store::{SendingWindow, Step, Variant};

pub const MAX_STEPS: usize = 50;
pub const MAX_ENROLL: usize = 100;
pub const MAX_VARIANTS: usize = 10;
const MAX_DELAY_MS: u64 = 366 * 86_400_000;

/// Who a sequence sends as.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum SenderChoice {
    /// One mailbox, a full address on the key's domain.
    Mailbox(String),
    /// A sender group's id: its mailboxes take turns, one per enrollment.
    Group(String),
}

/// A validated create request.
#[derive(Debug)]
pub struct NewSequence {
    pub name: String,
    pub sender: SenderChoice,
    pub steps: Vec<Step>,
    pub window: Option<SendingWindow>,
    pub out_of_office: Option<String>,
}

/// A validated PATCH: each part given, `window: Some(None)` removing the window.
#[derive(Debug, Default)]
pub struct SequenceUpdate {
    pub status: Option<&'static str>,
    pub sender: Option<SenderChoice>,
    pub window: Option<Option<SendingWindow>>,
    /// `Some(None)`: `continue`.
    pub out_of_office: Option<Option<String>>,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
struct CreateSequence {
    name: String,
    #[serde(default)]
    from: Option<String>,
    #[serde(default)]
    sender_group_id: Option<String>,
    #[serde(default)]
    sending_window: Option<WindowInput>,
    steps: Vec<StepInput>,
    #[serde(default)]
    out_of_office: Option<String>,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct WindowInput {
    days: Vec<String>,
    start: String,
    end: String,
    #[serde(default)]
    timezone: Option<String>,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct StepInput {
    #[serde(rename = "type")]
    kind: String,
    #[serde(default)]
    subject: Option<String>,
    #[serde(default)]
    html: Option<String>,
    #[serde(default, rename = "delayMs")]
    delay_ms: Option<u64>,
    #[serde(default)]
    variants: Option<Vec<VariantInput>>,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct VariantInput {
    subject: String,
    html: String,
}

pub fn parse_create(body: &[u8], domain: &str) -> Result<NewSequence> {
    let input: CreateSequence = parse_json(body)?;
    let name = super::input::name("name", &input.name, 200)?;
    let sender = sender(input.from, input.sender_group_id, domain)?
        .ok_or_else(|| Error::invalid("`from` or `senderGroupId` is required", SENDER_HINT))?;
    let window = input.sending_window.map(window).transpose()?;
    let out_of_office = super::outreach_input::out_of_office(input.out_of_office)?;
    Ok(NewSequence { name, sender, steps: steps(input.steps)?, window, out_of_office })
}

const SENDER_HINT: &str =
    "give `from` (one mailbox) or `senderGroupId` (its mailboxes take turns), not both";

/// Exactly one of `from` and `senderGroupId`, or neither (`None`).
fn sender(
    from: Option<String>,
    group: Option<String>,
    domain: &str,
) -> Result<Option<SenderChoice>> {
    match (from, group) {
        (Some(_), Some(_)) => Err(Error::invalid(
            "`from` and `senderGroupId` exclude each other; got both",
            SENDER_HINT,
        )),
        (Some(from), None) => Ok(Some(SenderChoice::Mailbox(super::input::sender(&from, domain)?))),
        (None, Some(group)) => {
            let group = group.trim();
            if group.is_empty() || group.len() > 64 || group.contains(char::is_control) {
                return Err(Error::invalid(
                    "`senderGroupId` must be the id of a sender group",
                    "GET /v1/sender-groups lists them",
                ));
            }
            Ok(Some(SenderChoice::Group(group.to_owned())))
        }
        (None, None) => Ok(None),
    }
}

fn window(input: WindowInput) -> Result<SendingWindow> {
    if input.days.is_empty() || input.days.len() > 7 {
        return Err(Error::invalid(
            "`sendingWindow.days` must hold 1 to 7 day names",
            "for weekdays give [\"mon\", \"tue\", \"wed\", \"thu\", \"fri\"]",
        ));
    }
    let mut days: Vec<String> = Vec::with_capacity(input.days.len());
    for (i, day) in input.days.iter().enumerate() {
        let day = day.trim().to_ascii_lowercase();
        if !window::DAYS.contains(&day.as_str()) {
            return Err(Error::invalid(
                format!("`sendingWindow.days[{i}]` must be a day name; got {:?}", input.days[i]),
                "day names are mon, tue, wed, thu, fri, sat, sun",
            ));
        }
        if !days.contains(&day) {
            days.push(day);
        }
    }
    let time = |field: &str, value: &str| {
        window::minutes(value).ok_or_else(|| {
            Error::invalid(
                format!("`sendingWindow.{field}` must be a time HH:MM from 00:00 to 24:00"),
                "for nine in the morning give \"09:00\"",
            )
        })
    };
    if time("start", &input.start)? >= time("end", &input.end)? {
        return Err(Error::invalid(
            "`sendingWindow.end` must be later than `sendingWindow.start`",
            "a window is within one local day, such as 09:00 to 17:00",
        ));
    }
    let timezone = input.timezone.unwrap_or_else(|| "UTC".into());
    let Some(zone) = window::zone(&timezone) else {
        return Err(Error::invalid(
            format!("`sendingWindow.timezone` is not a known IANA time zone: {timezone:?}"),
            "give a name such as Europe/Berlin or America/New_York",
        ));
    };
    // Stored as named in the database, so an alias the client wrote is kept as understood.
    let timezone = zone.iana_name().map_or(timezone, str::to_owned);
    Ok(SendingWindow { days, start: input.start, end: input.end, timezone })
}

fn steps(input: Vec<StepInput>) -> Result<Vec<Step>> {
    if input.is_empty() || input.len() > MAX_STEPS {
        return Err(Error::invalid(
            format!("`steps` must hold 1 to {MAX_STEPS} steps; got {}", input.len()),
            "start with a send_email step",
        ));
    }
    let steps =
        input.into_iter().enumerate().map(|(i, s)| parse_step(i, s)).collect::<Result<Vec<_>>>()?;
    match &steps[0] {
        Step::SendEmail { subject, variants, .. } if variants.is_empty() => {
            if subject.trim().is_empty() {
                return Err(Error::invalid("`steps[0].subject` must not be empty", FIRST_SUBJECT));
            }
        }
        Step::SendEmail { variants, .. } => {
            if let Some(i) = variants.iter().position(|v| v.subject.trim().is_empty()) {
                return Err(Error::invalid(
                    format!("`steps[0].variants[{i}].subject` must not be empty"),
                    FIRST_SUBJECT,
                ));
            }
        }
        Step::Delay { .. } => {
            return Err(Error::invalid(
                "the first step must be a send_email step",
                "move the delay after the first send_email step",
            ));
        }
    }
    Ok(steps)
}

const FIRST_SUBJECT: &str = "the first message needs a subject; later ones may leave it empty to \
                             reply as \"Re: <first subject>\"";

fn parse_step(i: usize, s: StepInput) -> Result<Step> {
    let field = |f: &str| format!("steps[{i}].{f}");
    match s.kind.as_str() {
        "send_email" => {
            if s.delay_ms.is_some() {
                return Err(Error::invalid(
                    format!("`{}` is not a field of a send_email step", field("delayMs")),
                    "put the wait in a separate delay step",
                ));
            }
            if let Some(mut variants) = s.variants {
                // The spec's own fields are always accepted beside `variants`: as one of the
                // variants when they repeat it (a step read back and sent again), else as the
                // first variant.
                match (s.subject, s.html) {
                    (None, None) => {}
                    (Some(subject), Some(html)) => {
                        if !variants.iter().any(|v| v.subject == subject && v.html == html) {
                            variants.insert(0, VariantInput { subject, html });
                        }
                    }
                    (subject, _) => {
                        let (given, missing) = match subject {
                            Some(_) => ("subject", "html"),
                            None => ("html", "subject"),
                        };
                        return Err(Error::invalid(
                            format!(
                                "`{}` needs `{}` beside `{}`",
                                field(given),
                                field(missing),
                                field("variants")
                            ),
                            "give both (they become the first variant) or neither",
                        ));
                    }
                }
                return variant_step(&field("variants"), variants);
            }
            let (Some(subject), Some(html)) = (s.subject, s.html) else {
                return Err(Error::invalid(
                    format!("`{}` and `{}` are required", field("subject"), field("html")),
                    "a send_email step has a subject and an html body (or `variants`)",
                ));
            };
            message(&field(""), &subject, &html)?;
            Ok(Step::SendEmail { subject, html, variants: Vec::new() })
        }
        "delay" => {
            if s.subject.is_some() || s.html.is_some() || s.variants.is_some() {
                return Err(Error::invalid(
                    format!("a delay step (`steps[{i}]`) has only `type` and `delayMs`"),
                    "put the message in a send_email step",
                ));
            }
            match s.delay_ms {
                Some(ms) if (1..=MAX_DELAY_MS).contains(&ms) => Ok(Step::Delay { delay_ms: ms }),
                _ => Err(Error::invalid(
                    format!(
                        "`{}` must be an integer from 1 to {MAX_DELAY_MS} (milliseconds)",
                        field("delayMs")
                    ),
                    "for three days use 259200000",
                )),
            }
        }
        other => Err(Error::invalid(
            format!("`{}` must be send_email or delay; got {other:?}", field("type")),
            "each step is {\"type\": \"send_email\", ...} or {\"type\": \"delay\", ...}",
        )),
    }
}

fn variant_step(field: &str, variants: Vec<VariantInput>) -> Result<Step> {
    if !(2..=MAX_VARIANTS).contains(&variants.len()) {
        return Err(Error::invalid(
            format!("`{field}` must hold 2 to {MAX_VARIANTS} variants; got {}", variants.len()),
            "for a single message give `subject` and `html` instead",
        ));
    }
    for (j, v) in variants.iter().enumerate() {
        message(&format!("{field}[{j}]."), &v.subject, &v.html)?;
    }
    let variants: Vec<Variant> =
        variants.into_iter().map(|v| Variant { subject: v.subject, html: v.html }).collect();
    let (subject, html) = (variants[0].subject.clone(), variants[0].html.clone());
    Ok(Step::SendEmail { subject, html, variants })
}

/// A subject and body under `prefix` (`steps[1].` or `steps[1].variants[0].`).
fn message(prefix: &str, subject: &str, html: &str) -> Result<()> {
    if subject.contains(['\r', '\n']) || subject.chars().count() > 998 {
        return Err(Error::invalid(
            format!("`{prefix}subject` must be one line of at most 998 characters"),
            "remove line breaks from the subject",
        ));
    }
    if html.trim().is_empty() {
        return Err(Error::invalid(
            format!("`{prefix}html` must not be empty"),
            "give the message body as HTML",
        ));
    }
    Ok(())
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
struct UpdateSequence {
    #[serde(default)]
    status: Option<String>,
    #[serde(default)]
    from: Option<String>,
    #[serde(default)]
    sender_group_id: Option<String>,
    #[serde(default, deserialize_with = "super::input::nullable")]
    sending_window: Option<Option<WindowInput>>,
    #[serde(default)]
    out_of_office: Option<String>,
}

/// A PATCH: a new status, sender or sending window (null removes it); at least one.
pub fn parse_update(body: &[u8], domain: &str) -> Result<SequenceUpdate> {
    let input: UpdateSequence = parse_json_nullable(body, &["sendingWindow"])?;
    let status = match input.status.as_deref() {
        None => None,
        Some("paused") => Some("paused"),
        Some("active") => Some("active"),
        Some(other) => {
            return Err(Error::invalid(
                format!("`status` must be paused or active; got {other:?}"),
                "to end a sequence, DELETE it",
            ));
        }
    };
    let sender = sender(input.from, input.sender_group_id, domain)?;
    let window = input.sending_window.map(|w| w.map(window).transpose()).transpose()?;
    let out_of_office = match input.out_of_office {
        Some(v) => Some(super::outreach_input::out_of_office(Some(v))?),
        None => None,
    };
    if status.is_none() && sender.is_none() && window.is_none() && out_of_office.is_none() {
        return Err(Error::invalid(
            "give at least one of `status`, `from`, `senderGroupId`, `sendingWindow` and \
             `outOfOffice`",
            "to pause a sequence send {\"status\": \"paused\"}",
        ));
    }
    Ok(SequenceUpdate { status, sender, window, out_of_office })
}
