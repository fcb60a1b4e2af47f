//! `/` and the login and logout forms. A domain key logs in; org-wide keys cannot (the
//! dashboard is one domain's).

use hyper::StatusCode;
use maud::html;

use super::layout::{bare, csrf_field, html_reply, redirect, with_cookie};
use super::{csrf, form::Form, gate, session};
use crate::error::Result;
use crate::http::{Ctx, Reply};

pub async fn root(ctx: Ctx) -> Result<Reply> {
    Ok(match session::user(&ctx) {
        Some(_) => redirect("/ui/overview"),
        None => redirect("/ui/login"),
    })
}

pub async fn form(ctx: Ctx) -> Result<Reply> {
    if session::user(&ctx).is_some() {
        return Ok(redirect("/ui/overview"));
    }
    Ok(login_page(&ctx, StatusCode::OK, None))
}

/// The login form with a fresh double-submit token (and its cookie).
fn login_page(ctx: &Ctx, status: StatusCode, error: Option<&str>) -> Reply {
    let token = csrf::token();
    let markup = bare(
        "Log in",
        html! {
            @if let Some(e) = error { div.notice.error role="alert" { p { (e) } } }
            form.card method="post" action="/ui/login" {
                (csrf_field(&token))
                label for="key" { "API key of your domain" }
                input #key type="password" name="key" autocomplete="current-password" required;
                button type="submit" { "Log in" }
            }
            p.muted { "Create a key with " code { "edgemail key create --name dashboard --domain example.com" } "." }
        },
    );
    let cookie = session::set_cookie(ctx, csrf::LOGIN_COOKIE, &token, 3600);
    with_cookie(html_reply(status, markup), cookie)
}

pub async fn login(ctx: Ctx) -> Result<Reply> {
    let form = Form::parse(&ctx.body);
    if !csrf::valid_login(&ctx, &form) {
        return Ok(super::layout::forbidden());
    }
    let key = form.text("key");
    let digest = crate::auth::hash(&key);
    let usable = ctx.app.keys.by_digest(&digest).is_some_and(|p| p.domain.is_some());
    if !usable {
        let why = "That key is not a valid key of a domain (org-wide keys cannot log in).";
        return Ok(login_page(&ctx, StatusCode::UNAUTHORIZED, Some(why)));
    }
    let id = session::start(digest, &ctx.app.config.ui);
    let cookie = session::set_cookie(&ctx, session::COOKIE_NAME, &id, session::COOKIE_MAX_AGE_S);
    let reply = with_cookie(redirect("/ui/overview"), cookie);
    // The login token has done its work.
    Ok(with_cookie(reply, session::set_cookie(&ctx, csrf::LOGIN_COOKIE, "", 0)))
}

pub async fn logout(ctx: Ctx) -> Result<Reply> {
    let (user, _) = gate!(super::posted(&ctx));
    session::end(&user.id);
    let gone = session::set_cookie(&ctx, session::COOKIE_NAME, "", 0);
    Ok(with_cookie(redirect("/ui/login"), gone))
}
