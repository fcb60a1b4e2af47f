//! The request bodies of `/v1/sequences`, checked field by field: a refusal names the field
//! (`steps[2].variants[1].html`, `sendingWindow.timezone`) so a client can fix its request.

use serde::Deserialize;

use super::outreach_input::{TrackingInput, tracking};
use super::step_input::{StepInput, steps};
use crate::error::{Error, Result};
use crate::http::request::{parse_json, parse_json_nullable};
use crate::sequences::window;
use crate::store::{SendingWindow, Step, TrackingOptions};

pub const MAX_ENROLL: usize = 100;

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
    pub tracking: Option<TrackingOptions>,
}

/// A validated PATCH: each part given, `window: Some(None)` removing the window.
#[derive(Debug, Default, Clone)]
pub struct SequenceUpdate {
    pub status: Option<&'static str>,
    pub sender: Option<SenderChoice>,
    pub window: Option<Option<SendingWindow>>,
    /// `Some(None)`: `continue`.
    pub out_of_office: Option<Option<String>>,
    pub name: Option<String>,
    /// The whole new list of steps, checked as on create.
    pub steps: Option<Vec<Step>>,
    /// `Some(None)`: every part on.
    pub tracking: Option<Option<TrackingOptions>>,
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
    #[serde(default)]
    tracking: Option<TrackingInput>,
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

pub fn parse_create(body: &[u8], domain: &str) -> Result<NewSequence> {
    let input: CreateSequence = parse_json(body)?;
    let name = super::input::name("name", &input.name, 200)?;
    let sender = sender(input.from, input.sender_group_id, domain)?
        .ok_or_else(|| Error::invalid("`from` or `senderGroupId` is required", SENDER_HINT))?;
    let window = input.sending_window.map(window).transpose()?;
    let out_of_office = super::outreach_input::out_of_office(input.out_of_office)?;
    let tracking = input.tracking.and_then(tracking);
    Ok(NewSequence { name, sender, steps: steps(input.steps)?, window, out_of_office, tracking })
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
    #[serde(default)]
    name: Option<String>,
    #[serde(default)]
    steps: Option<Vec<StepInput>>,
    #[serde(default)]
    tracking: Option<TrackingInput>,
}

impl SequenceUpdate {
    /// Whether anything beside the status changes (so the sequence document is rewritten).
    pub fn edits(&self) -> bool {
        self.sender.is_some()
            || self.window.is_some()
            || self.out_of_office.is_some()
            || self.name.is_some()
            || self.steps.is_some()
            || self.tracking.is_some()
    }
}

/// A PATCH: a new status, name, steps, sender, out-of-office rule or sending window (null
/// removes it); at least one.
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
    let name = input.name.map(|n| super::input::name("name", &n, 200)).transpose()?;
    let steps = input.steps.map(steps).transpose()?;
    let tracking = input.tracking.map(tracking);
    let update = SequenceUpdate { status, sender, window, out_of_office, name, steps, tracking };
    if status.is_none() && !update.edits() {
        return Err(Error::invalid(
            "give at least one of `status`, `name`, `steps`, `from`, `senderGroupId`, \
             `sendingWindow` and `outOfOffice`",
            "to pause a sequence send {\"status\": \"paused\"}",
        ));
    }
    Ok(update)
}
