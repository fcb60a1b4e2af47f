//! Request parts of the outreach features beyond the spec's sequences (extensions.md,
//! "Outreach"), checked field by field like `sequence_input`.

use crate::error::{Error, Result};

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
