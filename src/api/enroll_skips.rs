//! Why enroll skipped each contact it skipped (`skippedDetails`, extensions.md "Outreach"):
//! `missing_field` (a step uses a field without a fallback that the contact lacks),
//! `invalid_address`, `suppressed`, `disposable`, `no_mx` (screening, as for a send),
//! `duplicate` (the address came earlier in the request), and from the store
//! `already_enrolled` and `contacted`.

use serde::Serialize;

use crate::error::Blocked;
use crate::sequences::merge::required;
use crate::store::{EnrollInput, Sequence, Step};

/// A skipped address and why.
pub type Skip = (String, &'static str);

/// The fields the sequence's steps use without a fallback, in every subject, body and variant.
fn required_fields(sequence: &Sequence) -> Vec<String> {
    let mut out: Vec<String> = Vec::new();
    for step in &sequence.steps {
        let Step::SendEmail { subject, html, text, variants } = step else { continue };
        let own = [subject, html].into_iter().chain(text);
        let texts = own
            .chain(variants.iter().flat_map(|v| [&v.subject, &v.html].into_iter().chain(&v.text)));
        for text in texts {
            for name in required(text) {
                if !out.contains(&name) {
                    out.push(name);
                }
            }
        }
    }
    out
}

/// The contacts that have every required field (present and not blank), and the others as
/// `missing_field` skips.
pub fn missing_fields(
    sequence: &Sequence,
    contacts: Vec<EnrollInput>,
) -> (Vec<EnrollInput>, Vec<Skip>) {
    let needed = required_fields(sequence);
    let mut skipped = Vec::new();
    let kept = contacts
        .into_iter()
        .filter(|c| {
            let missing =
                needed.iter().any(|n| c.merge_fields.get(n).is_none_or(|v| v.trim().is_empty()));
            if missing {
                skipped.push((c.email.clone(), "missing_field"));
            }
            !missing
        })
        .collect();
    (kept, skipped)
}

/// A screening refusal as an enroll skip reason.
pub fn blocked(b: &Blocked) -> Skip {
    let reason = match b.reason {
        "unsubscribed" | "suppressed" => "suppressed",
        "disposable_address" => "disposable",
        other => other,
    };
    (b.email.clone(), reason)
}

/// Addresses given again later in the request (screening keeps the first).
pub fn repeated(contacts: &[EnrollInput]) -> Vec<Skip> {
    let mut seen = std::collections::HashSet::new();
    contacts
        .iter()
        .filter(|c| !seen.insert(c.email.trim().to_ascii_lowercase()))
        .map(|c| (c.email.clone(), "duplicate"))
        .collect()
}

#[derive(Serialize)]
pub struct Detail<'a> {
    email: &'a str,
    reason: &'a str,
}

pub fn details(skipped: &[Skip]) -> Vec<Detail<'_>> {
    skipped.iter().map(|(email, reason)| Detail { email, reason }).collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn contact(email: &str, fields: &[(&str, &str)]) -> EnrollInput {
        EnrollInput {
            email: email.into(),
            merge_fields: fields.iter().map(|(k, v)| (k.to_string(), v.to_string())).collect(),
            timezone: None,
        }
    }

    #[test]
    fn missing_and_repeated() {
        let sequence: Sequence = serde_json::from_value(serde_json::json!({
            "id": "s", "domain": "x.test", "name": "n", "from": "a@x.test", "fromHeader": "a@x.test",
            "status": "active", "createdAt": 0,
            "stats": {"total": 0, "active": 0, "completed": 0, "replied": 0, "bounced": 0, "cancelled": 0},
            "steps": [{"type": "send_email", "subject": "Hi {{firstName}}", "html": "{{co|your team}}"}]
        }))
        .expect("sequence"); // ok: test
        let given = vec![
            contact("a@x.test", &[("firstName", "Ada")]),
            contact("b@x.test", &[("firstName", " ")]),
            contact("c@x.test", &[]),
        ];
        let (kept, skipped) = missing_fields(&sequence, given);
        assert_eq!(kept.len(), 1);
        assert_eq!(
            skipped,
            [("b@x.test".into(), "missing_field"), ("c@x.test".into(), "missing_field")]
        );
        let again = [contact("a@x.test", &[]), contact(" A@x.test", &[])];
        assert_eq!(repeated(&again), [(" A@x.test".into(), "duplicate")]);
    }
}
