//! Webhook endpoints: where a domain's events are posted, which types each takes, and the secret
//! it signs with. What is posted and how it went is `outbox`'s.

use serde::{Deserialize, Serialize};

use super::error::{Error, Result};
use super::events::EventType;
use super::tables::*;
use super::{Rtx, Tables, Wtx, encode, get_json, scan_index};

#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Webhook {
    pub id: String,
    pub domain: String,
    pub url: String,
    /// Event type names, as subscribed.
    pub events: Vec<String>,
    pub description: Option<String>,
    pub enabled: bool,
    /// `whsec_` and the base64 of the signing key.
    pub secret: String,
    pub created_at: u64,
}

impl Webhook {
    pub fn subscribes(&self, kind: EventType) -> bool {
        self.events.iter().any(|e| e == kind.name())
    }
}

/// A change to an endpoint; `None` leaves a field as it is. `description: Some(None)` clears it.
#[derive(Debug, Default, Clone)]
pub struct WebhookPatch {
    pub url: Option<String>,
    pub events: Option<Vec<String>>,
    pub enabled: Option<bool>,
    pub description: Option<Option<String>>,
}

fn owned(tx: &impl Tables, domain: &str, id: &str) -> Result<Webhook> {
    get_json::<_, Webhook>(tx, WEBHOOKS, id)?
        .filter(|w| w.domain == domain)
        .ok_or_else(|| Error::not_found("webhook"))
}

impl Wtx<'_> {
    pub fn create_webhook(&mut self, hook: &Webhook) -> Result<()> {
        self.put_webhook(hook)?;
        self.tx
            .open_table(WEBHOOKS_BY_DOMAIN)?
            .insert((hook.domain.as_str(), hook.id.as_str()), ())?;
        Ok(())
    }

    fn put_webhook(&mut self, hook: &Webhook) -> Result<()> {
        self.tx.open_table(WEBHOOKS)?.insert(hook.id.as_str(), encode(hook)?.as_slice())?;
        Ok(())
    }

    pub fn update_webhook(
        &mut self,
        domain: &str,
        id: &str,
        patch: WebhookPatch,
    ) -> Result<Webhook> {
        let mut hook = owned(self, domain, id)?;
        if let Some(url) = patch.url {
            hook.url = url;
        }
        if let Some(events) = patch.events {
            hook.events = events;
        }
        if let Some(enabled) = patch.enabled {
            hook.enabled = enabled;
        }
        if let Some(description) = patch.description {
            hook.description = description;
        }
        self.put_webhook(&hook)?;
        Ok(hook)
    }

    pub fn rotate_webhook_secret(
        &mut self,
        domain: &str,
        id: &str,
        secret: String,
    ) -> Result<Webhook> {
        let mut hook = owned(self, domain, id)?;
        hook.secret = secret;
        self.put_webhook(&hook)?;
        Ok(hook)
    }

    /// Takes the endpoint out of both tables; its deliveries are the caller's to remove.
    pub(super) fn take_webhook(&mut self, domain: &str, id: &str) -> Result<Webhook> {
        let hook = owned(self, domain, id)?;
        self.tx.open_table(WEBHOOKS)?.remove(id)?;
        self.tx.open_table(WEBHOOKS_BY_DOMAIN)?.remove((domain, id))?;
        Ok(hook)
    }

    /// The enabled endpoints of `domain` that take `kind`.
    pub(super) fn subscribers(&self, domain: &str, kind: EventType) -> Result<Vec<Webhook>> {
        let hooks: Vec<Webhook> = scan_index(self, WEBHOOKS_BY_DOMAIN, WEBHOOKS, domain)?;
        Ok(hooks.into_iter().filter(|h| h.enabled && h.subscribes(kind)).collect())
    }

    pub(super) fn owned_webhook(&self, domain: &str, id: &str) -> Result<Webhook> {
        owned(self, domain, id)
    }
}

impl Rtx {
    /// The domain's endpoints, oldest first.
    pub fn webhooks(&self, domain: &str) -> Result<Vec<Webhook>> {
        scan_index(self, WEBHOOKS_BY_DOMAIN, WEBHOOKS, domain)
    }

    pub fn webhook(&self, domain: &str, id: &str) -> Result<Option<Webhook>> {
        match owned(self, domain, id) {
            Ok(hook) => Ok(Some(hook)),
            Err(Error::NotFound(_)) => Ok(None),
            Err(e) => Err(e),
        }
    }
}
