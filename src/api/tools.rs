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
