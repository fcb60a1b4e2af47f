//! The page shell every dashboard page shares (skip link, navigation, notices, the logout
//! form), the security headers of every answer, and the static assets served from the binary.

use bytes::Bytes;
use hyper::StatusCode;
use hyper::header::{CACHE_CONTROL, HeaderName, HeaderValue, LOCATION, SET_COOKIE};
use maud::{DOCTYPE, Markup, html};

use super::session::{Notice, User};
use crate::error::Result;
use crate::http::{Ctx, Reply};

/// Pages: nothing from another origin, no script at all, frames only from here.
const PAGE_CSP: &str = "default-src 'none'; style-src 'self'; img-src 'self' data:; \
     frame-src 'self'; form-action 'self'; frame-ancestors 'none'; base-uri 'none'";

/// The navigation: path and label of every page.
pub const NAV: [(&str, &str); 11] = [
    ("/ui/overview", "Overview"),
    ("/ui/domain", "Domain"),
    ("/ui/mailboxes", "Mailboxes"),
    ("/ui/mail", "Mail"),
    ("/ui/compose", "Compose"),
    ("/ui/contacts", "Contacts"),
    ("/ui/sequences", "Sequences"),
    ("/ui/replies", "Replies"),
    ("/ui/suppressions", "Suppressions"),
    ("/ui/webhooks", "Webhooks"),
    ("/ui/outbox", "Outbox"),
];

/// A page of a logged-in user: `current` is its navigation entry.
pub fn page(user: &User, current: &str, title: &str, body: Markup) -> Reply {
    let notice = super::session::take_notice(&user.id);
    let markup = html! {
        (DOCTYPE)
        html lang="en" {
            (head(title))
            body {
                a.skip href="#main" { "Skip to content" }
                header {
                    p.brand { "edgemail" span.domain { (user.domain) } }
                    nav aria-label="Dashboard" {
                        ul {
                            @for (href, label) in NAV {
                                li {
                                    @if href == current {
                                        a href=(href) aria-current="page" { (label) }
                                    } @else {
                                        a href=(href) { (label) }
                                    }
                                }
                            }
                        }
                    }
                    form.logout method="post" action="/ui/logout" {
                        (csrf_field(&user.csrf))
                        button type="submit" { "Log out" }
                    }
                }
                main #main tabindex="-1" {
                    h1 { (title) }
                    @if let Some(n) = notice.filter(|n| !n.echo.as_ref().is_some_and(|e| e.beside_field)) {
                        (notice_box(&n))
                    }
                    (body)
                }
            }
        }
    };
    html_reply(StatusCode::OK, markup)
}

fn head(title: &str) -> Markup {
    html! {
        head {
            meta charset="utf-8";
            meta name="viewport" content="width=device-width, initial-scale=1";
            title { (title) " · edgemail" }
            link rel="icon" href="/ui/favicon.svg" type="image/svg+xml";
            link rel="stylesheet" href="/ui/style.css";
        }
    }
}

fn notice_box(n: &Notice) -> Markup {
    html! {
        div class=(if n.ok { "notice ok" } else { "notice error" }) role=(if n.ok { "status" } else { "alert" }) {
            p { (n.text) }
            @if let Some(secret) = &n.secret {
                p { "Shown once; copy it now: " code.secret { (secret) } }
            }
        }
    }
}

/// The hidden field every form carries.
pub fn csrf_field(token: &str) -> Markup {
    html! { input type="hidden" name="csrf" value=(token); }
}

/// A page outside a session (the login page): the same shell without navigation.
pub fn bare(title: &str, body: Markup) -> Markup {
    html! {
        (DOCTYPE)
        html lang="en" {
            (head(title))
            body {
                a.skip href="#main" { "Skip to content" }
                main #main tabindex="-1" { h1 { (title) } (body) }
            }
        }
    }
}

/// An HTML answer with the dashboard's security headers.
pub fn html_reply(status: StatusCode, markup: Markup) -> Reply {
    let mut reply = Reply::raw("text/html; charset=utf-8", Bytes::from(markup.into_string()));
    reply.status = status;
    secure(&mut reply, PAGE_CSP);
    reply
}

/// Headers every dashboard answer carries; `csp` differs for message bodies.
pub fn secure(reply: &mut Reply, csp: &'static str) {
    let h = &mut reply.headers;
    h.push((HeaderName::from_static("content-security-policy"), HeaderValue::from_static(csp)));
    h.push((
        HeaderName::from_static("x-content-type-options"),
        HeaderValue::from_static("nosniff"),
    ));
    h.push((HeaderName::from_static("referrer-policy"), HeaderValue::from_static("no-referrer")));
    h.push((CACHE_CONTROL, HeaderValue::from_static("no-store")));
}

/// `303 See Other` to `to`: the answer to every posted form.
pub fn redirect(to: &str) -> Reply {
    let mut reply = Reply::raw("text/plain; charset=utf-8", Bytes::new());
    reply.status = StatusCode::SEE_OTHER;
    if let Ok(location) = HeaderValue::from_str(to) {
        reply.headers.push((LOCATION, location));
    }
    secure(&mut reply, PAGE_CSP);
    reply
}

/// Adds a `Set-Cookie` line.
pub fn with_cookie(mut reply: Reply, cookie: Option<HeaderValue>) -> Reply {
    if let Some(value) = cookie {
        reply.headers.push((SET_COOKIE, value));
    }
    reply
}

/// The answer to a form without a valid CSRF token.
pub fn forbidden() -> Reply {
    let markup = bare(
        "Request refused",
        html! {
            p { "This form was not sent from this dashboard (its security token is missing or stale)." }
            p { a href="/ui/overview" { "Back to the dashboard" } }
        },
    );
    html_reply(StatusCode::FORBIDDEN, markup)
}

const STYLE: &str = include_str!("style.css");
const FAVICON: &str = include_str!("favicon.svg");

pub async fn style(_ctx: Ctx) -> Result<Reply> {
    let mut reply = Reply::raw("text/css; charset=utf-8", Bytes::from_static(STYLE.as_bytes()));
    reply.headers.push((CACHE_CONTROL, HeaderValue::from_static("max-age=3600")));
    Ok(reply)
}

pub async fn favicon(_ctx: Ctx) -> Result<Reply> {
    let mut reply = Reply::raw("image/svg+xml", Bytes::from_static(FAVICON.as_bytes()));
    reply.headers.push((CACHE_CONTROL, HeaderValue::from_static("max-age=86400")));
    Ok(reply)
}

/// A page saying why what was asked for could not be shown (the API's error message and hint).
pub fn error_page(user: &User, current: &str, error: &crate::error::Error) -> Reply {
    let status = crate::http::error::error_reply(error, "").status;
    let notice = super::call::failure(error);
    let mut reply = page(user, current, "Not available", html! { (notice_box(&notice)) });
    reply.status = status;
    reply
}
