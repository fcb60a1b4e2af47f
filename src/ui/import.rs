//! Importing contacts from a CSV file: the file is uploaded (or pasted), handed to
//! `POST /v1/contacts/import` as it is, and the page shows that call's report: how many
//! contacts were created and updated, and each refused row with its number and reason.

use bytes::Bytes;
use maud::{Markup, html};
use serde_json::Value;

use super::call::{Call, field, items};
use super::layout::{csrf_field, forbidden, page};
use super::session::User;
use super::{gate, multipart, visitor};
use crate::api::contacts_import;
use crate::error::Result;
use crate::handler;
use crate::http::{Ctx, Reply};

/// The most refused rows the page lists (the count says how many there were).
const MAX_LISTED: usize = 1000;

fn upload_form(user: &User) -> Markup {
    html! {
        form.card method="post" action="/ui/contacts/import" enctype="multipart/form-data" {
            (csrf_field(&user.csrf))
            p { "The first row names the columns: " code { "email" } " (required), " code { "name" }
                ", and any other column becomes a field of the contact (" code { "firstName" } ", "
                code { "company" } ", ...). Commas, semicolons or tabs; up to 50,000 rows." }
            label for="file" { "CSV file" }
            input #file type="file" name="file" accept=".csv,text/csv";
            label for="csv" { "or paste the rows" }
            textarea #csv name="csv" rows="6" {}
            button type="submit" { "Import" }
        }
    }
}

pub async fn form(ctx: Ctx) -> Result<Reply> {
    let user = gate!(visitor(&ctx));
    Ok(page(&user, "/ui/contacts", "Import contacts", upload_form(&user)))
}

fn report(r: &Value) -> Markup {
    let invalid = items(&r["invalid"]);
    html! {
        section.report aria-labelledby="report" {
            h2 #report { "Report" }
            dl {
                dt { "Created" } dd.created { (field(r, "created")) }
                dt { "Updated" } dd.updated { (field(r, "updated")) }
                dt { "Invalid" } dd.invalid { (invalid.len()) }
            }
            @if !invalid.is_empty() {
                table.invalid-rows {
                    thead { tr { th { "Row" } th { "Email" } th { "Reason" } } }
                    tbody {
                        @for i in invalid.iter().take(MAX_LISTED) {
                            tr { td { (field(i, "row")) } td { (field(i, "email")) } td { (field(i, "reason")) } }
                        }
                    }
                }
                @if invalid.len() > MAX_LISTED { p.muted { "The first " (MAX_LISTED) " are listed." } }
            }
        }
    }
}

/// The CSV of a posted form: the file when one was chosen, else the pasted rows.
fn csv_of(parts: &[multipart::Part<'_>]) -> Bytes {
    let file = multipart::field(parts, "file").filter(|f| !f.is_empty());
    let data = file.or_else(|| multipart::field(parts, "csv")).unwrap_or_default();
    Bytes::copy_from_slice(data)
}

pub async fn upload(ctx: Ctx) -> Result<Reply> {
    let user = gate!(visitor(&ctx));
    let content_type =
        ctx.headers.get(hyper::header::CONTENT_TYPE).and_then(|v| v.to_str().ok()).unwrap_or("");
    let parts = multipart::boundary(content_type).and_then(|b| multipart::parse(&ctx.body, &b));
    let Some(parts) = parts else { return Ok(forbidden()) };
    let token = multipart::field(&parts, "csrf").and_then(|t| std::str::from_utf8(t).ok());
    if !token.is_some_and(|t| !t.is_empty() && super::csrf::same(t, &user.csrf)) {
        return Ok(forbidden());
    }
    let outcome =
        Call::new(&ctx, &user).raw(csv_of(&parts)).run(handler!(contacts_import::import)).await;
    let body = html! {
        @match &outcome {
            Ok(r) => (report(r)),
            Err(e) => div.notice.error role="alert" { p { (super::call::failure(e).text) } },
        }
        h2 { "Import another file" }
        (upload_form(&user))
    };
    Ok(page(&user, "/ui/contacts", "Import contacts", body))
}
