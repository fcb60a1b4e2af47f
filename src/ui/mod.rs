//! The web dashboard: server-rendered HTML pages under `/ui/`, plain forms that post and
//! redirect, no script. Pages read and act through the API's own handlers (`call`), so the
//! dashboard can do nothing the API would refuse. Sessions live in memory (`session`).

pub mod call;
pub mod csrf;
pub mod fields;
pub mod form;
pub mod layout;
pub mod session;

mod aliases;
mod chart;
mod compose;
mod contacts;
mod domain;
mod filters;
mod import;
mod login;
mod mail;
mod mailboxes;
mod multipart;
mod outbox;
mod overview;
mod replies;
mod senders;
mod sequence_builder;
mod sequence_form;
mod sequence_page;
mod sequences;
mod suppressions;
mod webhooks;

use hyper::Method;

use crate::handler;
use crate::http::{Access, Ctx, Reply, Route};
use form::Form;
use session::User;

/// The dashboard's routes. They are not part of the REST API's document: they answer HTML.
pub fn routes() -> Vec<Route> {
    let r = |method, path, handler| Route { method, path, access: Access::Page, handler };
    let (get, post) = (Method::GET, Method::POST);
    vec![
        r(get.clone(), "/", handler!(login::root)),
        r(get.clone(), "/favicon.ico", handler!(layout::favicon)),
        r(get.clone(), "/ui/favicon.svg", handler!(layout::favicon)),
        r(get.clone(), "/ui/style.css", handler!(layout::style)),
        r(get.clone(), "/ui/login", handler!(login::form)),
        r(post.clone(), "/ui/login", handler!(login::login)),
        r(post.clone(), "/ui/logout", handler!(login::logout)),
        r(get.clone(), "/ui/overview", handler!(overview::page)),
        r(get.clone(), "/ui/domain", handler!(domain::page)),
        r(get.clone(), "/ui/senders", handler!(senders::page_of)),
        r(get.clone(), "/ui/mailboxes", handler!(mailboxes::list)),
        r(get.clone(), "/ui/aliases", handler!(aliases::list)),
        r(post.clone(), "/ui/aliases", handler!(aliases::create)),
        r(post.clone(), "/ui/aliases/{address}/delete", handler!(aliases::delete)),
        r(post.clone(), "/ui/mailboxes", handler!(mailboxes::create)),
        r(get.clone(), "/ui/mailboxes/{address}", handler!(mailboxes::show)),
        r(post.clone(), "/ui/mailboxes/{address}/delete", handler!(mailboxes::delete)),
        r(post.clone(), "/ui/mailboxes/{address}/passwords", handler!(mailboxes::add_password)),
        r(
            post.clone(),
            "/ui/mailboxes/{address}/passwords/{id}/delete",
            handler!(mailboxes::delete_password),
        ),
        r(get.clone(), "/ui/mailboxes/{address}/filters", handler!(filters::page_of)),
        r(
            post.clone(),
            "/ui/mailboxes/{address}/filters/vacation",
            handler!(filters::save_vacation),
        ),
        r(post.clone(), "/ui/mailboxes/{address}/filters/scripts", handler!(filters::save_script)),
        r(
            post.clone(),
            "/ui/mailboxes/{address}/filters/scripts/{name}/activate",
            handler!(filters::activate),
        ),
        r(
            post.clone(),
            "/ui/mailboxes/{address}/filters/scripts/{name}/delete",
            handler!(filters::delete),
        ),
        r(get.clone(), "/ui/mail", handler!(mail::list)),
        r(get.clone(), "/ui/mail/{id}", handler!(mail::show)),
        r(get.clone(), "/ui/mail/{id}/body", handler!(mail::body)),
        r(get.clone(), "/ui/compose", handler!(compose::form)),
        r(post.clone(), "/ui/compose", handler!(compose::send)),
        r(get.clone(), "/ui/contacts", handler!(contacts::list)),
        r(post.clone(), "/ui/contacts", handler!(contacts::upsert)),
        r(post.clone(), "/ui/contacts/{id}/delete", handler!(contacts::delete)),
        r(get.clone(), "/ui/sequences", handler!(sequences::list)),
        r(post.clone(), "/ui/sequences/{id}/status", handler!(sequences::status)),
        r(get.clone(), "/ui/sequences/new", handler!(sequence_builder::new)),
        r(post.clone(), "/ui/sequences", handler!(sequence_builder::create)),
        r(get.clone(), "/ui/sequences/{id}", handler!(sequence_page::show)),
        r(get.clone(), "/ui/sequences/{id}/edit", handler!(sequence_builder::edit)),
        r(post.clone(), "/ui/sequences/{id}", handler!(sequence_builder::update)),
        r(
            post.clone(),
            "/ui/sequences/{id}/enrollments/{enrollmentId}/label",
            handler!(sequence_page::label),
        ),
        r(get.clone(), "/ui/replies", handler!(replies::list)),
        r(get.clone(), "/ui/replies/{id}", handler!(replies::show)),
        r(post.clone(), "/ui/replies/{id}", handler!(replies::answer)),
        r(get.clone(), "/ui/contacts/import", handler!(import::form)),
        r(post.clone(), "/ui/contacts/import", handler!(import::upload)),
        r(get.clone(), "/ui/suppressions", handler!(suppressions::list)),
        r(post.clone(), "/ui/suppressions", handler!(suppressions::add)),
        r(post.clone(), "/ui/suppressions/delete", handler!(suppressions::delete)),
        r(get.clone(), "/ui/webhooks", handler!(webhooks::list)),
        r(post.clone(), "/ui/webhooks", handler!(webhooks::create)),
        r(get.clone(), "/ui/webhooks/{id}", handler!(webhooks::show)),
        r(post.clone(), "/ui/webhooks/{id}/test", handler!(webhooks::test)),
        r(post.clone(), "/ui/webhooks/{id}/delete", handler!(webhooks::delete)),
        r(get, "/ui/outbox", handler!(outbox::waiting)),
    ]
}

/// Ends the handler with `reply` when a gate refuses.
macro_rules! gate {
    ($e:expr) => {
        match $e {
            Ok(value) => value,
            Err(reply) => return Ok(reply),
        }
    };
}
pub(crate) use gate;

/// The value of an API call for a page, or the page explaining its error.
macro_rules! or_page {
    ($e:expr, $user:expr, $current:expr) => {
        match $e {
            Ok(value) => value,
            Err(error) => return Ok($crate::ui::layout::error_page($user, $current, &error)),
        }
    };
}
pub(crate) use or_page;

/// The logged-in visitor, or the way to the login page.
fn visitor(ctx: &Ctx) -> Result<User, Reply> {
    session::user(ctx).ok_or_else(|| layout::redirect("/ui/login"))
}

/// A form posted by a logged-in visitor with the session's CSRF token.
fn posted(ctx: &Ctx) -> Result<(User, Form), Reply> {
    let form = Form::parse(&ctx.body);
    let user = visitor(ctx)?;
    if !csrf::valid(&form, &user.csrf) {
        return Err(layout::forbidden());
    }
    Ok((user, form))
}

/// Runs an API call for a form and leaves its outcome as the next page's notice.
async fn act(
    user: &User,
    outcome: crate::error::Result<serde_json::Value>,
    success: impl FnOnce(&serde_json::Value) -> session::Notice,
) {
    let notice = match outcome {
        Ok(value) => success(&value),
        Err(e) => call::failure(&e),
    };
    session::notify(&user.id, notice);
}

/// `act` for a form the page shows again when the API refuses it: what was typed comes back,
/// and the API's message goes beside the field it names.
async fn act_form(
    user: &User,
    (action, form): (&str, &Form),
    outcome: crate::error::Result<serde_json::Value>,
    success: impl FnOnce(&serde_json::Value) -> session::Notice,
) {
    let notice = match outcome {
        Ok(value) => success(&value),
        Err(e) => {
            let mut notice = call::failure(&e);
            notice.echo = Some(fields::Echo::new(action, form, &notice.text));
            notice
        }
    };
    session::notify(&user.id, notice);
}
