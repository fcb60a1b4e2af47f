//! Request parts of the outreach features beyond the spec's sequences (extensions.md,
//! "Outreach"), checked field by field like `sequence_input`.

use serde::Deserialize;

use crate::error::{Error, Result};
use crate::store::TrackingOptions;

/// `tracking: {opens, clicks, unsubscribeFooter}` as given: a part left out stays on.
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
pub struct TrackingInput {
    #[serde(default)]
    opens: Option<bool>,
    #[serde(default)]
    clicks: Option<bool>,
    #[serde(default)]
    unsubscribe_footer: Option<bool>,
}

/// The switches given, each part on unless set to false; `None` when all are on (what a
/// sequence or message without `tracking` stores).
pub fn tracking(input: TrackingInput) -> Option<TrackingOptions> {
    let t = TrackingOptions {
        opens: input.opens.unwrap_or(true),
        clicks: input.clicks.unwrap_or(true),
        unsubscribe_footer: input.unsubscribe_footer.unwrap_or(true),
    };
    (t != TrackingOptions::default()).then_some(t)
}

/// `outOfOffice`: `pause` (an out-of-office answer with a return date pauses its enrollment
/// until the day after) or `continue` (the default: automatic answers change nothing).
pub fn out_of_office(value: Option<String>) -> Result<Option<String>> {
    match value.as_deref() {
        None | Some("continue") => Ok(None),
        Some("pause") => Ok(Some("pause".into())),
        Some(other) => Err(Error::invalid(
            format!("`outOfOffice` must be pause or continue; got {other:?}"),
            "give \"pause\" to hold an enrollment until its contact is back",
        )),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn out_of_office_values() {
        assert_eq!(out_of_office(None).ok(), Some(None));
        assert_eq!(out_of_office(Some("continue".into())).ok(), Some(None));
        assert_eq!(out_of_office(Some("pause".into())).ok(), Some(Some("pause".into())));
        assert!(out_of_office(Some("stop".into())).is_err());
    }
}
