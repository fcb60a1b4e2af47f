//! The `steps` of a sequence as create and PATCH take them, checked field by field: a refusal
//! names the field (`steps[2].variants[1].html`, `steps[1].delayDays`).
//!
//! A delay is given in exactly one unit (`delayMs`, `delayHours` or `delayDays`) and is kept as
//! given: answers show that unit and, beside it, `delayMs` (the wait it makes). So a step read
//! back may be sent again as it is, `delayMs` beside another unit being accepted when it says
//! the same wait.

use serde::Deserialize;

use crate::error::{Error, Result};
use crate::store::{Step, Variant};

pub const MAX_STEPS: usize = 50;
pub const MAX_VARIANTS: usize = 10;
/// The longest delay: a year and a day, in each unit.
pub const MAX_DELAY_MS: u64 = 366 * DAY_MS;
const HOUR_MS: u64 = 3_600_000;
const DAY_MS: u64 = 24 * HOUR_MS;

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct StepInput {
    #[serde(rename = "type")]
    kind: String,
    #[serde(default)]
    subject: Option<String>,
    #[serde(default)]
    html: Option<String>,
    #[serde(default)]
    text: Option<String>,
    #[serde(default, rename = "delayMs")]
    delay_ms: Option<u64>,
    #[serde(default, rename = "delayHours")]
    delay_hours: Option<u64>,
    #[serde(default, rename = "delayDays")]
    delay_days: Option<u64>,
    #[serde(default)]
    variants: Option<Vec<VariantInput>>,
}

#[derive(Debug, Clone, PartialEq, Deserialize)]
#[serde(deny_unknown_fields)]
struct VariantInput {
    subject: String,
    #[serde(default)]
    html: Option<String>,
    #[serde(default)]
    text: Option<String>,
}

/// The steps of a create or a PATCH: 1 to `MAX_STEPS`, the first a `send_email` with a subject.
pub fn steps(input: Vec<StepInput>) -> Result<Vec<Step>> {
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
            if s.delay_ms.is_some() || s.delay_hours.is_some() || s.delay_days.is_some() {
                return Err(Error::invalid(
                    format!("`{}` takes no delay", field("")),
                    "put the wait in a separate delay step",
                ));
            }
            match s.variants {
                Some(variants) => with_variants(&field(""), s.subject, s.html, s.text, variants),
                None => {
                    let Some(subject) = s.subject else {
                        return Err(Error::invalid(
                            format!("`{}` is required", field("subject")),
                            "a send_email step has a subject and an html or text body",
                        ));
                    };
                    let (html, text) = message(&field(""), &subject, s.html, s.text)?;
                    Ok(Step::SendEmail { subject, html, text, variants: Vec::new() })
                }
            }
        }
        "delay" => {
            if s.subject.is_some() || s.html.is_some() || s.text.is_some() || s.variants.is_some() {
                return Err(Error::invalid(
                    format!("a delay step (`steps[{i}]`) has only `type` and its wait"),
                    "put the message in a send_email step",
                ));
            }
            delay(i, s.delay_ms, s.delay_hours, s.delay_days)
        }
        other => Err(Error::invalid(
            format!("`{}` must be send_email or delay; got {other:?}", field("type")),
            "each step is {\"type\": \"send_email\", ...} or {\"type\": \"delay\", ...}",
        )),
    }
}

/// A delay in exactly one unit, within a year and a day; `delayMs` may stand beside
/// `delayHours` or `delayDays` when it is the same wait (a step read back, sent again).
fn delay(i: usize, ms: Option<u64>, hours: Option<u64>, days: Option<u64>) -> Result<Step> {
    let unit = |name: &str, value: u64, per: u64| -> Result<u64> {
        let max = MAX_DELAY_MS / per;
        if !(1..=max).contains(&value) {
            return Err(Error::invalid(
                format!("`steps[{i}].{name}` must be an integer from 1 to {max}"),
                "a delay lasts from a millisecond to 366 days",
            ));
        }
        Ok(value * per)
    };
    let given = match (hours, days) {
        (Some(_), Some(_)) => return Err(one_unit(i)),
        (Some(h), None) => Some(unit("delayHours", h, HOUR_MS)?),
        (None, Some(d)) => Some(unit("delayDays", d, DAY_MS)?),
        (None, None) => None,
    };
    let delay_ms = match (ms, given) {
        (None, None) => return Err(one_unit(i)),
        (Some(ms), None) => unit("delayMs", ms, 1)?,
        (None, Some(wait)) => wait,
        (Some(ms), Some(wait)) if ms == wait => wait,
        (Some(_), Some(_)) => return Err(one_unit(i)),
    };
    Ok(Step::Delay { delay_ms, delay_hours: hours, delay_days: days })
}

fn one_unit(i: usize) -> Error {
    Error::invalid(
        format!(
            "`steps[{i}]` must give its wait as exactly one of `delayMs`, `delayHours` and `delayDays`"
        ),
        "for three days give {\"type\": \"delay\", \"delayDays\": 3}",
    )
}

/// A step with A/B variants. The spec's own fields are accepted beside `variants`: as one of
/// the variants when they repeat it (a step read back and sent again), else as the first.
fn with_variants(
    prefix: &str,
    subject: Option<String>,
    html: Option<String>,
    text: Option<String>,
    mut variants: Vec<VariantInput>,
) -> Result<Step> {
    match (subject, html.is_some() || text.is_some()) {
        (None, false) => {}
        (Some(subject), true) => {
            let own = VariantInput { subject, html, text };
            if !variants.contains(&own) {
                variants.insert(0, own);
            }
        }
        (given, _) => {
            let (given, missing) = match given {
                Some(_) => ("subject", "html"),
                None => ("html", "subject"),
            };
            return Err(Error::invalid(
                format!("`{prefix}{given}` needs `{prefix}{missing}` beside `{prefix}variants`"),
                "give both (they become the first variant) or neither",
            ));
        }
    }
    let field = format!("{prefix}variants");
    if !(2..=MAX_VARIANTS).contains(&variants.len()) {
        return Err(Error::invalid(
            format!("`{field}` must hold 2 to {MAX_VARIANTS} variants; got {}", variants.len()),
            "for a single message give `subject` and `html` instead",
        ));
    }
    let mut checked = Vec::with_capacity(variants.len());
    for (j, v) in variants.into_iter().enumerate() {
        let (html, text) = message(&format!("{field}[{j}]."), &v.subject, v.html, v.text)?;
        checked.push(Variant { subject: v.subject, html, text });
    }
    let first = &checked[0];
    let (subject, html, text) = (first.subject.clone(), first.html.clone(), first.text.clone());
    Ok(Step::SendEmail { subject, html, text, variants: checked })
}

/// A subject and a body under `prefix` (`steps[1].` or `steps[1].variants[0].`): `html`, `text`
/// or both, none of them blank. Answers the html (empty when only text was given) and the text.
fn message(
    prefix: &str,
    subject: &str,
    html: Option<String>,
    text: Option<String>,
) -> Result<(String, Option<String>)> {
    if subject.contains(['\r', '\n']) || subject.chars().count() > 998 {
        return Err(Error::invalid(
            format!("`{prefix}subject` must be one line of at most 998 characters"),
            "remove line breaks from the subject",
        ));
    }
    for (name, body) in [("html", &html), ("text", &text)] {
        if body.as_ref().is_some_and(|b| b.trim().is_empty()) {
            return Err(Error::invalid(
                format!("`{prefix}{name}` must not be empty"),
                "leave out the part you do not send",
            ));
        }
    }
    if html.is_none() && text.is_none() {
        return Err(Error::invalid(
            format!("`{prefix}html` or `{prefix}text` is required"),
            "give the message body as HTML, as plain text, or both",
        ));
    }
    Ok((html.unwrap_or_default(), text))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn one(value: serde_json::Value) -> Result<Step> {
        let input: StepInput = serde_json::from_value(value).map_err(|e| {
            Error::invalid(format!("test input: {e}"), "fix the test") // ok: test
        })?;
        parse_step(1, input)
    }

    #[test]
    fn delays_take_one_unit_within_bounds() {
        let days = one(serde_json::json!({"type": "delay", "delayDays": 2}));
        assert_eq!(
            days.ok(),
            Some(Step::Delay { delay_ms: 2 * DAY_MS, delay_hours: None, delay_days: Some(2) })
        );
        let hours = one(serde_json::json!({"type": "delay", "delayHours": 5}));
        assert!(matches!(hours, Ok(Step::Delay { delay_ms, .. }) if delay_ms == 5 * HOUR_MS));
        // Read back and sent again: delayMs beside the unit, the same wait.
        let again = one(serde_json::json!({"type": "delay", "delayDays": 2, "delayMs": 172800000}));
        assert!(again.is_ok());
        for bad in [
            serde_json::json!({"type": "delay"}),
            serde_json::json!({"type": "delay", "delayDays": 1, "delayHours": 24}),
            serde_json::json!({"type": "delay", "delayDays": 1, "delayMs": 1}),
            serde_json::json!({"type": "delay", "delayDays": 0}),
            serde_json::json!({"type": "delay", "delayDays": 367}),
            serde_json::json!({"type": "delay", "delayHours": 8785}),
            serde_json::json!({"type": "delay", "delayMs": MAX_DELAY_MS + 1}),
            serde_json::json!({"type": "delay", "delayDays": u64::MAX}),
        ] {
            assert!(one(bad.clone()).is_err(), "{bad}");
        }
    }

    #[test]
    fn a_message_has_html_or_text_or_both() {
        let text = one(serde_json::json!({"type": "send_email", "subject": "s", "text": "Hi"}));
        assert!(
            matches!(text, Ok(Step::SendEmail { ref html, text: Some(_), .. }) if html.is_empty())
        );
        let both = one(serde_json::json!({"type": "send_email", "subject": "s", "text": "Hi",
                                          "html": "<p>Hi</p>"}));
        assert!(matches!(both, Ok(Step::SendEmail { text: Some(_), .. })));
        for bad in [
            serde_json::json!({"type": "send_email", "subject": "s"}),
            serde_json::json!({"type": "send_email", "subject": "s", "text": " "}),
            serde_json::json!({"type": "send_email", "subject": "s", "text": "x", "delayDays": 1}),
            serde_json::json!({"type": "delay", "delayDays": 1, "text": "x"}),
        ] {
            assert!(one(bad.clone()).is_err(), "{bad}");
        }
    }
}
