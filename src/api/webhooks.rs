//! `/v1/webhooks`: endpoints that receive a domain's events, their secrets, test events and
//! delivery logs. The secret is shown when it is made (create, rotate) and never again.

use hyper::StatusCode;
use serde::Deserialize;
use serde_json::{Value, json};

use super::input::name;
use crate::error::{Error, Result};
use crate::http::request::{int_param, parse_json};
use crate::http::{Ctx, Reply};
use crate::store::{EventType, Webhook, WebhookDelivery, WebhookPatch};
use crate::webhooks::{sign, target};

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct Create {
    url: String,
    #[serde(default)]
    events: Option<Vec<String>>,
    #[serde(default)]
    description: Option<String>,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct Update {
    #[serde(default)]
    url: Option<String>,
    #[serde(default)]
    events: Option<Vec<String>>,
    #[serde(default)]
    enabled: Option<bool>,
    #[serde(default)]
    description: Option<String>,
}

/// A valid create body.
pub struct NewWebhook {
    pub url: String,
    pub events: Vec<String>,
    pub description: Option<String>,
}

pub fn parse_create(body: &[u8]) -> Result<NewWebhook> {
    let input: Create = parse_json(body)?;
    Ok(NewWebhook {
        url: url(&input.url)?,
        events: match &input.events {
            Some(list) => events(list)?,
            None => EventType::ALL.iter().map(|t| t.name().to_owned()).collect(),
        },
        description: description(input.description.as_deref())?,
    })
}

pub fn parse_update(body: &[u8]) -> Result<WebhookPatch> {
    let input: Update = parse_json(body)?;
    Ok(WebhookPatch {
        url: input.url.as_deref().map(url).transpose()?,
        events: input.events.as_deref().map(events).transpose()?,
        enabled: input.enabled,
        description: input.description.as_deref().map(|d| description(Some(d))).transpose()?,
    })
}

fn url(value: &str) -> Result<String> {
    let value = value.trim();
    target::parse(value).map_err(|why| {
        Error::invalid(
            format!("invalid `url`: {why}"),
            "give an absolute http:// or https:// URL, such as https://example.com/hooks",
        )
    })?;
    Ok(value.to_owned())
}

/// Known event type names, each once, in the order given.
fn events(list: &[String]) -> Result<Vec<String>> {
    if list.is_empty() {
        return Err(Error::invalid(
            "`events` is empty",
            "list at least one event type, or leave `events` out for all of them",
        ));
    }
    let mut out: Vec<String> = Vec::with_capacity(list.len());
    for (i, item) in list.iter().enumerate() {
        let Some(kind) = EventType::parse(item.trim()) else {
            let known: Vec<&str> = EventType::ALL.iter().map(|t| t.name()).collect();
            return Err(Error::invalid(
                format!("invalid field `events[{i}]`: unknown event type {item:?}"),
                format!("event types are {}", known.join(", ")),
            ));
        };
        if !out.iter().any(|e| e == kind.name()) {
            out.push(kind.name().to_owned());
        }
    }
    Ok(out)
}

/// An empty description is none.
fn description(value: Option<&str>) -> Result<Option<String>> {
    match value.map(str::trim) {
        None | Some("") => Ok(None),
        Some(text) => name("description", text, 500).map(Some),
    }
}

/// The endpoint as the API shows it: without its secret unless `with_secret`.
fn view(hook: &Webhook, with_secret: bool) -> Value {
    let mut v = json!({
        "id": hook.id,
        "url": hook.url,
        "events": hook.events,
        "description": hook.description,
        "enabled": hook.enabled,
        "createdAt": hook.created_at,
    });
    if with_secret {
        v["secret"] = json!(hook.secret);
    }
    v
}

fn delivery_view(d: &WebhookDelivery) -> Value {
    json!({
        "id": d.id,
        "eventId": d.event_id,
        "type": d.kind,
        "status": d.status,
        "attempts": d.attempts,
        "lastStatusCode": d.last_status_code,
        "lastError": d.last_error,
        "nextAttemptAt": d.next_attempt_at,
        "createdAt": d.created_at,
    })
}

/// Refuses a URL that leads to this machine or the private network, unless configured.
async fn guard(ctx: &Ctx, url: &str) -> Result<()> {
    if ctx.app.config.webhooks.allow_private {
        return Ok(());
    }
    let t =
        target::parse(url).map_err(|why| Error::invalid(format!("invalid `url`: {why}"), ""))?;
    target::addresses(&ctx.app.dns, &t, false).await.map(|_| ()).map_err(|why| {
        Error::invalid(
            format!("invalid `url`: {why}"),
            "webhooks go to public addresses only (see webhooks.allow_private)",
        )
    })
}

pub async fn create(ctx: Ctx) -> Result<Reply> {
    let domain = ctx.domain()?.to_owned();
    let input = parse_create(&ctx.body)?;
    guard(&ctx, &input.url).await?;
    let hook = Webhook {
        id: crate::ids::new_id("wh"),
        domain,
        url: input.url,
        events: input.events,
        description: input.description,
        enabled: true,
        secret: sign::new_secret(),
        created_at: crate::ids::now_ms(),
    };
    let stored = hook.clone();
    ctx.app.store.write(move |w| w.create_webhook(&stored)).await?;
    Reply::created(&view(&hook, true))
}

pub async fn list(ctx: Ctx) -> Result<Reply> {
    let domain = ctx.domain()?.to_owned();
    let hooks = ctx.app.store.read(move |r| r.webhooks(&domain)).await?;
    Reply::ok(&hooks.iter().map(|h| view(h, false)).collect::<Vec<_>>())
}

pub async fn get(ctx: Ctx) -> Result<Reply> {
    let domain = ctx.domain()?.to_owned();
    let id = ctx.param("id").to_owned();
    let hook = ctx.app.store.read(move |r| r.webhook(&domain, &id)).await?;
    Reply::ok(&view(&hook.ok_or_else(|| Error::not_found("webhook"))?, false))
}

pub async fn update(ctx: Ctx) -> Result<Reply> {
    let domain = ctx.domain()?.to_owned();
    let patch = parse_update(&ctx.body)?;
    if let Some(url) = &patch.url {
        guard(&ctx, url).await?;
    }
    let id = ctx.param("id").to_owned();
    let hook = ctx.app.store.write(move |w| w.update_webhook(&domain, &id, patch)).await?;
    Reply::ok(&view(&hook, false))
}

pub async fn delete(ctx: Ctx) -> Result<Reply> {
    let domain = ctx.domain()?.to_owned();
    let id = ctx.param("id").to_owned();
    ctx.app.store.write(move |w| w.delete_webhook(&domain, &id)).await?;
    Reply::ok(&json!({ "deleted": true }))
}

pub async fn rotate_secret(ctx: Ctx) -> Result<Reply> {
    let domain = ctx.domain()?.to_owned();
    let id = ctx.param("id").to_owned();
    let secret = sign::new_secret();
    let hook = ctx.app.store.write(move |w| w.rotate_webhook_secret(&domain, &id, secret)).await?;
    Reply::ok(&json!({ "secret": hook.secret }))
}

pub async fn test(ctx: Ctx) -> Result<Reply> {
    let domain = ctx.domain()?.to_owned();
    let id = ctx.param("id").to_owned();
    let event = ctx.app.store.write(move |w| w.queue_test_event(&domain, &id)).await?;
    Reply::json(StatusCode::ACCEPTED, &json!({ "eventId": event }))
}

pub async fn deliveries(ctx: Ctx) -> Result<Reply> {
    let domain = ctx.domain()?.to_owned();
    let limit = int_param(ctx.query_value("limit"), "limit", 1, 500, 50)? as usize;
    let id = ctx.param("id").to_owned();
    let found = ctx
        .app
        .store
        .read(move |r| -> crate::store::Result<_> {
            if r.webhook(&domain, &id)?.is_none() {
                return Ok(None);
            }
            r.webhook_deliveries(&id, limit).map(Some)
        })
        .await?;
    let list = found.ok_or_else(|| Error::not_found("webhook"))?;
    Reply::ok(&list.iter().map(delivery_view).collect::<Vec<_>>())
}
