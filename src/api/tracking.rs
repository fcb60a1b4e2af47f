//! Links followed from campaign messages: the open pixel, click redirects and unsubscribing.
//! They carry signed tokens (see `tracking`); a token that does not verify is a 404, so the
//! redirect never sends anyone to a URL we did not sign (no open redirect).

use bytes::Bytes;
use hyper::StatusCode;
use hyper::header::{CACHE_CONTROL, HeaderValue, LOCATION};

use crate::error::{Error, Result};
use crate::http::{Ctx, Reply};
use crate::ids::now_ms;
use crate::tracking::{Kind, PIXEL, html_escape};

fn fields(ctx: &Ctx, kind: Kind, count: usize) -> Result<Vec<String>> {
    ctx.app
        .tokens
        .open(kind, ctx.param("token"))
        .filter(|f| f.len() == count)
        .ok_or_else(|| Error::not_found("link"))
}

fn no_store(mut reply: Reply) -> Reply {
    reply.headers.push((CACHE_CONTROL, HeaderValue::from_static("no-store, private")));
    reply
}

pub async fn open(ctx: Ctx) -> Result<Reply> {
    let f = fields(&ctx, Kind::Open, 1)?;
    let id = f[0].clone();
    // A message deleted since it was sent still gets its pixel; the count is simply lost.
    let _ = ctx.app.store.write(move |w| w.record_engagement(&id, None, now_ms())).await;
    Ok(no_store(Reply::raw("image/gif", Bytes::from_static(PIXEL))))
}

pub async fn click(ctx: Ctx) -> Result<Reply> {
    let f = fields(&ctx, Kind::Click, 2)?;
    let location = HeaderValue::from_str(&f[1]).map_err(|_| Error::not_found("link"))?;
    let (id, url) = (f[0].clone(), f[1].clone());
    let _ = ctx.app.store.write(move |w| w.record_engagement(&id, Some(&url), now_ms())).await;
    let mut reply =
        no_store(Reply::raw("text/plain; charset=utf-8", Bytes::from_static(b"Redirecting\n")));
    reply.status = StatusCode::FOUND;
    reply.headers.push((LOCATION, location));
    Ok(reply)
}

/// The confirmation page: a GET never unsubscribes, so link scanners cannot do it by accident.
pub async fn unsubscribe_page(ctx: Ctx) -> Result<Reply> {
    let f = fields(&ctx, Kind::Unsubscribe, 2)?;
    let action = format!("/t/u/{}", ctx.param("token"));
    let page = format!(
        "<!doctype html><html><head><meta charset=\"utf-8\"><meta name=\"viewport\" \
         content=\"width=device-width\"><title>Unsubscribe</title></head><body \
         style=\"font-family:sans-serif;max-width:32em;margin:3em auto\"><h1>Unsubscribe</h1>\
         <p>Stop emails to <b>{}</b>?</p><form method=\"post\" action=\"{}\"><input type=\"hidden\" \
         name=\"List-Unsubscribe\" value=\"One-Click\"><button type=\"submit\">Unsubscribe</button>\
         </form></body></html>",
        html_escape(&f[1]),
        html_escape(&action)
    );
    Ok(no_store(Reply::raw("text/html; charset=utf-8", Bytes::from(page))))
}

/// RFC 8058 one-click (and the confirmation form): unsubscribes at once.
pub async fn unsubscribe(ctx: Ctx) -> Result<Reply> {
    let f = fields(&ctx, Kind::Unsubscribe, 2)?;
    let (id, recipient) = (f[0].clone(), f[1].clone());
    let source =
        if ctx.body.starts_with(b"List-Unsubscribe=One-Click") { "one-click" } else { "link" };
    ctx.app.store.write(move |w| w.record_unsubscribe(&id, &recipient, source, now_ms())).await?;
    let page = format!(
        "<!doctype html><html><head><meta charset=\"utf-8\"><title>Unsubscribed</title></head><body \
         style=\"font-family:sans-serif;max-width:32em;margin:3em auto\"><h1>Unsubscribed</h1>\
         <p><b>{}</b> will get no more of these emails.</p></body></html>",
        html_escape(&f[1])
    );
    Ok(no_store(Reply::raw("text/html; charset=utf-8", Bytes::from(page))))
}
