//! `/api/tools/*`: free public tools. No key; every call takes a token from the client's
//! per-IP bucket before its body is read (see `ratelimit`).

use serde::Deserialize;

use crate::error::{Error, Result};
use crate::http::request::parse_json;
use crate::http::{Ctx, Reply};
use crate::tools::subject_lines::{TONES, generate};

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct SubjectLinesRequest {
    offer: String,
    #[serde(default)]
    industry: Option<String>,
    #[serde(default)]
    tone: Option<String>,
}

/// The validated `(offer, industry, tone)`.
pub fn parse_subject_lines(body: &[u8]) -> Result<(String, Option<String>, &'static str)> {
    let input: SubjectLinesRequest = parse_json(body)?;
    let offer = super::input::name("offer", &input.offer, 200)?;
    let industry = match input.industry.as_deref().map(str::trim) {
        None | Some("") => None,
        Some(i) => Some(super::input::name("industry", i, 100)?),
    };
    let tone = match input.tone.as_deref().map(str::trim) {
        None | Some("") => "professional",
        Some(t) => {
            TONES.iter().copied().find(|known| known.eq_ignore_ascii_case(t)).ok_or_else(|| {
                Error::invalid(
                    format!("`tone` must be one of {}; got {t:?}", TONES.join(", ")),
                    "leave `tone` out for professional",
                )
            })?
        }
    };
    Ok((offer, industry, tone))
}

pub async fn subject_lines(ctx: Ctx) -> Result<Reply> {
    let (offer, industry, tone) = parse_subject_lines(&ctx.body)?;
    let lines = generate(&offer, industry.as_deref(), tone);
    Reply::ok(&serde_json::json!({ "subjectLines": lines }))
}

/// Addresses per validate-emails request.
pub const MAX_VALIDATE: usize = 100;
/// All DNS checks of one request share this deadline, so 100 addresses answer promptly even when
/// some domains' nameservers are slow; a domain without an answer by then is reported unknown.
const VALIDATE_DEADLINE: std::time::Duration = std::time::Duration::from_millis(2500);

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct ValidateRequest {
    emails: Vec<String>,
}

pub fn parse_validate(body: &[u8]) -> Result<Vec<String>> {
    let input: ValidateRequest = parse_json(body)?;
    if input.emails.is_empty() || input.emails.len() > MAX_VALIDATE {
        return Err(Error::invalid(
            format!("`emails` must hold 1 to {MAX_VALIDATE} addresses; got {}", input.emails.len()),
            "split larger lists over several requests",
        ));
    }
    Ok(input.emails)
}

#[derive(serde::Serialize)]
#[serde(rename_all = "camelCase")]
struct Checks {
    syntax: bool,
    mx: Option<bool>,
    disposable: bool,
    role_account: bool,
    free_provider: bool,
}

#[derive(serde::Serialize)]
struct Verdict {
    email: String,
    status: &'static str,
    reason: Option<String>,
    checks: Checks,
}

pub async fn validate_emails(ctx: Ctx) -> Result<Reply> {
    use crate::dns::MailVerdict;
    use crate::tools::classify::{is_free_provider, is_role_account};
    use crate::tools::disposable::is_disposable;

    let emails = parse_validate(&ctx.body)?;
    let parsed: Vec<_> = emails.iter().map(|e| crate::address::parse(e)).collect();
    let domains = parsed.iter().filter_map(|p| p.as_ref().ok()).map(|a| a.domain.as_str());
    let verdicts = crate::screening::mail_verdicts(&ctx.app.dns, domains, VALIDATE_DEADLINE).await;
    let mut results = Vec::with_capacity(emails.len());
    for (email, parsed) in emails.iter().zip(&parsed) {
        let verdict = match parsed {
            Err(why) => Verdict {
                email: email.clone(),
                status: "invalid",
                reason: Some(format!("invalid syntax: {why}")),
                checks: Checks {
                    syntax: false,
                    mx: None,
                    disposable: false,
                    role_account: false,
                    free_provider: false,
                },
            },
            Ok(address) => {
                let mx = match verdicts.get(&address.domain) {
                    Some(MailVerdict::Accepts) => Some(true),
                    Some(MailVerdict::Refuses(_)) => Some(false),
                    Some(MailVerdict::Unknown) | None => None,
                };
                let checks = Checks {
                    syntax: true,
                    mx,
                    disposable: is_disposable(&address.domain),
                    role_account: is_role_account(address.local),
                    free_provider: is_free_provider(&address.domain),
                };
                let (status, reason) = if let Some(MailVerdict::Refuses(why)) =
                    verdicts.get(&address.domain)
                {
                    ("invalid", Some(format!("{} cannot receive mail: {why}", address.domain)))
                } else if checks.disposable {
                    ("risky", Some(format!("{} is a disposable email provider", address.domain)))
                } else if checks.role_account {
                    (
                        "risky",
                        Some("a role account: mail reaches a function, not a person".to_owned()),
                    )
                } else if checks.mx.is_none() {
                    (
                        "risky",
                        Some(format!(
                            "the mail servers of {} could not be checked in time",
                            address.domain
                        )),
                    )
                } else {
                    ("valid", None)
                };
                Verdict { email: email.clone(), status, reason, checks }
            }
        };
        results.push(verdict);
    }
    let count = |s: &str| results.iter().filter(|r| r.status == s).count();
    let summary = serde_json::json!({
        "total": results.len(),
        "valid": count("valid"),
        "risky": count("risky"),
        "invalid": count("invalid"),
    });
    Reply::ok(&serde_json::json!({ "results": results, "summary": summary }))
}
