//! Every table and its key layout, in one place. Values are JSON documents of the types in the
//! sibling modules (email documents in a compact tagged form, `email_doc`); adding an optional
//! field needs no migration (`#[serde(default)]`).

use super::kv::{Relation, TableDefinition};

/// `schema_version` -> the layout version this file was last written with.
pub const META: TableDefinition<&str, u64> = TableDefinition::new("meta");
/// domain name -> `Domain`
pub const DOMAINS: TableDefinition<&str, &[u8]> = TableDefinition::new("domains");
/// key id -> `ApiKey`
pub const KEYS: TableDefinition<&str, &[u8]> = TableDefinition::new("api_keys");
/// SHA-256 of the secret -> key id. Only keys that are not revoked are present.
pub const KEY_HASHES: TableDefinition<&[u8], &str> = TableDefinition::new("api_key_hashes");
/// (domain, local part) -> `Mailbox`
pub const MAILBOXES: TableDefinition<(&str, &str), &[u8]> = TableDefinition::new("mailboxes");
/// (domain, local part) -> `Alias`: addresses that pass mail on; local part `*` is the catch-all.
pub const ALIASES: TableDefinition<(&str, &str), &[u8]> = TableDefinition::new("aliases");
/// (domain, group id) -> `SenderGroup`
pub const GROUPS: TableDefinition<(&str, &str), &[u8]> = TableDefinition::new("sender_groups");
/// (domain, contact id) -> `Contact`
pub const CONTACTS: TableDefinition<(&str, &str), &[u8]> = TableDefinition::new("contacts");
/// (domain, lower-cased email) -> contact id: the upsert key.
pub const CONTACT_EMAILS: TableDefinition<(&str, &str), &str> =
    TableDefinition::new("contact_emails");
/// (domain, received copy's email id) -> `ReplyRecord`: answers to sequence and campaign mail,
/// oldest first (ids are time-ordered), so the reply inbox reads it backwards, newest first.
pub const REPLIES: TableDefinition<(&str, &str), &[u8]> = TableDefinition::new("replies");
/// email id -> `Email`, in the stored form of `email_doc` (a single received copy's raw message
/// follows it).
pub const EMAILS: TableDefinition<&str, &[u8]> = TableDefinition::new("emails");
/// (mailbox address, folder code, createdAt, email id) -> summary: a folder listing is one range read.
pub const EMAIL_INDEX: TableDefinition<(&str, u8, u64, &str), &[u8]> =
    TableDefinition::new("email_index");
/// (due time, email id) -> its destination (`Email::destination`): outbound messages waiting for
/// a delivery attempt. "What is due" is one range read from the start. The destination lets a
/// node sharing the store claim free entries a destination at a time (`Wtx::claim_free`); an
/// entry written before it was kept has "" (stored as nothing, as `()` was).
pub const QUEUE: TableDefinition<(u64, &str), &str> = TableDefinition::new("queue");
/// (domain, lower-cased address) -> `Suppression`: addresses we must not send to.
pub const SUPPRESSIONS: TableDefinition<(&str, &str), &[u8]> = TableDefinition::new("suppressions");
/// (domain, unsubscribedAt, lower-cased address) -> (): suppressions in time order, for paging.
pub const SUPPRESSIONS_BY_TIME: TableDefinition<(&str, u64, &str), ()> =
    TableDefinition::new("suppressions_by_time");
/// email id -> `Tracking`: opens, clicks and unsubscribes of a sent message.
pub const TRACKING: TableDefinition<&str, &[u8]> = TableDefinition::new("tracking");
/// batch id -> `Batch`: a campaign send and its counters.
pub const BATCHES: TableDefinition<&str, &[u8]> = TableDefinition::new("batches");
/// name -> secret bytes generated on first start (the tracking-token key).
pub const SECRETS: TableDefinition<&str, &[u8]> = TableDefinition::new("secrets");
/// RFC 5322 Message-ID we sent -> email id: links bounces and replies to the message.
pub const MESSAGE_IDS: TableDefinition<&str, &str> = TableDefinition::new("message_ids");
/// email id -> the raw message as received (with our Received and Authentication-Results).
/// Written by releases before `RAW_BLOBS`; still read for the copies stored then (those without
/// an entry in `RAW_OF`), never written.
pub const RAW: TableDefinition<&str, &[u8]> = TableDefinition::new("raw_messages");
/// (blob id, chunk number) -> a piece of the raw message as received, stored once for all the
/// copies it was delivered as. In pieces because redb rounds an allocation up to a power of two
/// pages: a 17 MiB value would take 32 MiB of the file and of the cache.
pub const RAW_BLOBS: TableDefinition<(&str, u32), &[u8]> = TableDefinition::new("raw_blobs");
/// (blob id, email id) -> (): the copies sharing a blob; the blob goes with its last entry.
pub const RAW_REFS: TableDefinition<(&str, &str), ()> = TableDefinition::new("raw_refs");
/// email id -> `RawRef`: the blob of a received copy, and whether its bodies live only there.
/// A copy whose raw message is in its own document has no entry.
pub const RAW_OF: TableDefinition<&str, &[u8]> = TableDefinition::new("raw_of");
/// (domain, batch id) -> (): a domain's campaign batches, for campaign stats.
pub const BATCHES_BY_DOMAIN: TableDefinition<(&str, &str), ()> =
    TableDefinition::new("batches_by_domain");
/// sequence id -> `Sequence` (with its enrollment and message counters).
pub const SEQUENCES: TableDefinition<&str, &[u8]> = TableDefinition::new("sequences");
/// (domain, sequence id) -> (): a domain's sequences in creation order (ids sort by time).
pub const SEQUENCES_BY_DOMAIN: TableDefinition<(&str, &str), ()> =
    TableDefinition::new("sequences_by_domain");
/// enrollment id -> `Enrollment`
pub const ENROLLMENTS: TableDefinition<&str, &[u8]> = TableDefinition::new("enrollments");
/// (sequence id, lower-cased email) -> enrollment id, for active enrollments only: the
/// "already enrolled" check and the set a pause, resume or cancel walks.
pub const ENROLLMENTS_ACTIVE: TableDefinition<(&str, &str), &str> =
    TableDefinition::new("enrollments_active");
/// (sequence id, enrollment id) -> (): a sequence's enrollments in enrollment order, for listing.
pub const ENROLLMENTS_BY_SEQUENCE: TableDefinition<(&str, &str), ()> =
    TableDefinition::new("enrollments_by_sequence");
/// (due time, enrollment id) -> (): enrollments whose next step waits for that time.
pub const ENROLLMENTS_DUE: TableDefinition<(u64, &str), ()> =
    TableDefinition::new("enrollments_due");
/// (domain, lower-cased address) -> `replied` or `bounced`: contacts that answered or bounced in
/// a sequence of the domain, which enroll skips as `contacted`.
pub const CONTACTED: TableDefinition<(&str, &str), &str> = TableDefinition::new("contacted");
/// (domain, UTC day number since the epoch) -> `DayCounts`: delivery and engagement counters, so a
/// window of days is one range read.
pub const DAILY_STATS: TableDefinition<(&str, u32), &[u8]> = TableDefinition::new("daily_stats");
/// (domain, UTC day, node) -> `DayCounts` (JSON, two's-complement counts) that node's writes
/// added: on a shared store each node counts here, and a day is `DAILY_STATS` plus its shards.
pub const DAILY_STATS_SHARDS: TableDefinition<(&str, u32, &str), &[u8]> =
    TableDefinition::new("daily_stats_shards");
/// (domain, local part) -> `Warmup`: a mailbox's warmup settings and counters.
pub const WARMUP: TableDefinition<(&str, &str), &[u8]> = TableDefinition::new("warmup");
/// webhook id -> `Webhook`: an endpoint events are posted to.
pub const WEBHOOKS: TableDefinition<&str, &[u8]> = TableDefinition::new("webhooks");
/// (domain, webhook id) -> (): a domain's endpoints in creation order.
pub const WEBHOOKS_BY_DOMAIN: TableDefinition<(&str, &str), ()> =
    TableDefinition::new("webhooks_by_domain");
/// event id -> the JSON body posted for it (`{type, timestamp, data}`), kept while a delivery
/// of it is pending: the outbox. Written in the transaction of the change it reports.
pub const WEBHOOK_EVENTS: TableDefinition<&str, &[u8]> = TableDefinition::new("webhook_events");
/// (event id, delivery id) -> (): the pending deliveries of an event; its body goes with the last.
pub const WEBHOOK_EVENT_REFS: TableDefinition<(&str, &str), ()> =
    TableDefinition::new("webhook_event_refs");
/// delivery id -> `WebhookDelivery`: one event to one endpoint, and how its attempts went.
pub const WEBHOOK_DELIVERIES: TableDefinition<&str, &[u8]> =
    TableDefinition::new("webhook_deliveries");
/// (webhook id, delivery id) -> (): an endpoint's delivery log in creation order.
pub const WEBHOOK_DELIVERIES_BY_ENDPOINT: TableDefinition<(&str, &str), ()> =
    TableDefinition::new("webhook_deliveries_by_endpoint");
/// (next attempt time, delivery id) -> webhook id: pending deliveries; "what is due" is one range
/// read, which also tells the dispatcher whose they are before it loads any.
pub const WEBHOOK_DUE: TableDefinition<(u64, &str), &str> = TableDefinition::new("webhook_due");
/// (mailbox address, password id) -> `AppPassword`: a mailbox's app passwords for mail clients,
/// each with the PHC string of its argon2 hash (never the password).
pub const APP_PASSWORDS: TableDefinition<(&str, &str), &[u8]> =
    TableDefinition::new("app_passwords");
/// (blob id, attachment index, chunk number) -> a piece of an attachment of mail we send, stored
/// once for all the messages of one send request (a campaign's copies share it).
pub const SENT_PARTS: TableDefinition<(&str, u32, u32), &[u8]> = TableDefinition::new("sent_parts");
/// email id -> blob id: the attachments of a message we send.
pub const SENT_PARTS_OF: TableDefinition<&str, &str> = TableDefinition::new("sent_parts_of");
/// (blob id, email id) -> (): the messages sharing a blob; the blob goes with its last entry.
pub const SENT_PARTS_REFS: TableDefinition<(&str, &str), ()> =
    TableDefinition::new("sent_parts_refs");
/// body id -> `SentBody`: the text and HTML of a campaign, stored once for all its messages.
pub const SENT_BODIES: TableDefinition<&str, &[u8]> = TableDefinition::new("sent_bodies");
/// email id -> body id: a message stored without its text and HTML.
pub const SENT_BODY_OF: TableDefinition<&str, &str> = TableDefinition::new("sent_body_of");
/// (body id, email id) -> (): the messages sharing a body; the body goes with its last entry.
pub const SENT_BODY_REFS: TableDefinition<(&str, &str), ()> =
    TableDefinition::new("sent_body_refs");
/// (API key id, Idempotency-Key) -> `Idempotent`: a POST's key, the hash of its body and, once it
/// finished, its answer.
pub const IDEMPOTENCY: TableDefinition<(&str, &str), &[u8]> = TableDefinition::new("idempotency");
/// (created at, API key id, Idempotency-Key) -> (): the keys in age order, for expiry.
pub const IDEMPOTENCY_BY_TIME: TableDefinition<(u64, &str, &str), ()> =
    TableDefinition::new("idempotency_by_time");
/// (mailbox address, UTC day number) -> how many campaign, sequence and warmup sends of the
/// mailbox are given to that day (sent, or waiting in the queue for a slot of that day).
pub const MAILBOX_DAY_SENDS: TableDefinition<(&str, u32), u32> =
    TableDefinition::new("mailbox_day_sends");
/// mailbox address -> the earliest time its next paced send may go (its last slot + `minGapMs`).
pub const MAILBOX_NEXT_SLOT: TableDefinition<&str, u64> = TableDefinition::new("mailbox_next_slot");
/// mailbox address -> the bytes of mail it holds (the sizes of its emails, every folder), kept
/// by every insert and removal (`quota`).
pub const MAILBOX_USAGE: TableDefinition<&str, u64> = TableDefinition::new("mailbox_usage");
/// (mailbox address, node) -> what that node's writes changed the mailbox's bytes by, as a
/// two's-complement u64 (a node may remove mail another counted): on a shared store each node
/// counts here, and the usage is `MAILBOX_USAGE` plus the shards (`quota`).
pub const MAILBOX_USAGE_SHARDS: TableDefinition<(&str, &str), u64> =
    TableDefinition::new("mailbox_usage_shards");
/// email id -> the slot a paced message waits for: when it comes due it is sent, already counted.
pub const PACED: TableDefinition<&str, u64> = TableDefinition::new("paced");
/// (mailbox address, contact address), both lower-cased -> the latest sequence message the
/// mailbox sent the contact: matches a reply that carries no threading headers.
pub const SEQUENCE_MAIL: TableDefinition<(&str, &str), &str> =
    TableDefinition::new("sequence_mail");
/// mailbox address -> `Registry` (`folders`): the folders its user made (name and code), its
/// IMAP subscriptions, and the last UIDVALIDITY a made folder got. One small document per
/// mailbox: a mailbox has at most 240 folders of its own, and every command that names one reads
/// the list whole.
pub const FOLDERS: TableDefinition<&str, &[u8]> = TableDefinition::new("folders");
/// (mailbox address, folder code) -> `ImapFolder`: a folder's UIDVALIDITY and next UID, made on
/// first IMAP use.
pub const IMAP_FOLDERS: TableDefinition<(&str, u8), &[u8]> = TableDefinition::new("imap_folders");
/// (mailbox address, folder code, UID) -> email id: a folder's messages in UID order.
pub const IMAP_UIDS: TableDefinition<(&str, u8, u32), &str> = TableDefinition::new("imap_uids");
/// email id -> `ImapMeta`: the message's UID in its folder and its IMAP flags.
pub const IMAP_MESSAGES: TableDefinition<&str, &[u8]> = TableDefinition::new("imap_messages");
/// (mailbox address, folder code, change number) -> UID: the latest flag change of each message
/// of a folder, so a session learns whose flags changed since the change it last saw (one entry
/// per message: a newer change replaces the older).
pub const IMAP_FLAG_LOG: TableDefinition<(&str, u8, u64), u32> =
    TableDefinition::new("imap_flag_log");
/// (mailbox address, folder code, change number) -> UID: the messages that left a folder
/// (expunged, moved out), under the folder change that removed them, so a QRESYNC client
/// learns what vanished since the change it last saw by reading that range alone. Pruned to
/// the last `VANISHED_KEPT` changes of the folder (`imap`).
pub const IMAP_VANISHED: TableDefinition<(&str, u8, u64), u32> =
    TableDefinition::new("imap_vanished");

/// Node name -> the time (Unix ms) its heartbeat lasts until (stores shared by several nodes).
pub const NODES: TableDefinition<&str, u64> = TableDefinition::new("cluster_nodes");
/// Queued email id -> the node working on it (good while that node's heartbeat is).
pub const CLAIMS: TableDefinition<&str, &str> = TableDefinition::new("cluster_claims");
/// (node, due, id) -> nothing: the queue entries `(due, id)` a node claimed, its spool, so that
/// the node's scheduler reads its own entries without walking every other node's at the head of
/// `QUEUE`. Written with the claim; an entry whose queue entry went meanwhile (the message was
/// deleted or cancelled) is dropped by the node when it reads it.
pub const SPOOL: TableDefinition<(&str, u64, &str), ()> = TableDefinition::new("cluster_spool");
/// Lease name (`leader`) -> JSON `{node, until}`.
pub const LEASES: TableDefinition<&str, &[u8]> = TableDefinition::new("cluster_leases");

/// (scope, token hash) -> the junk classifier's counts of one token, `spam << 32 | ham`: how many
/// trained spam and ham messages held it. The scope is "" for the global model, else the
/// lower-cased mailbox address, so loading one scope is one range read. A token whose counts
/// both fall to 0 has no entry.
pub const JUNK_TOKENS: TableDefinition<(&str, u64), u64> = TableDefinition::new("junk_tokens");
/// scope -> `JunkTotals` (JSON): messages trained as spam and as ham, and a generation that
/// every training bumps, so a node notices another node's training with one read.
pub const JUNK_TOTALS: TableDefinition<&str, &[u8]> = TableDefinition::new("junk_totals");
/// (client network, envelope sender, recipient) -> `first_seen << 1 | passed` (ms): greylisting's
/// triplets (RFC 6647). The network is the client's /24 (IPv4) or /64 (IPv6), since senders
/// retry from other addresses of their pool.
pub const GREYLIST: TableDefinition<(&str, &str, &str), u64> = TableDefinition::new("greylist");
/// (mailbox, correspondent address lower-cased) -> JSON `SenderHistory`: how often the mailbox
/// wrote to the address and how its user judged mail from it (`senders.rs`).
pub const SENDER_HISTORY: TableDefinition<(&str, &str), &[u8]> =
    TableDefinition::new("sender_history");
/// (mailbox address, script name) -> `SieveScript` (JSON): a mailbox's named Sieve scripts, the
/// source as uploaded (ManageSieve keeps several; the API and delivery use the active one).
pub const SIEVE_SCRIPTS: TableDefinition<(&str, &str), &[u8]> =
    TableDefinition::new("sieve_scripts");
/// Mailbox address -> `Vacation` (JSON): the mailbox's vacation auto-reply settings.
pub const VACATIONS: TableDefinition<&str, &[u8]> = TableDefinition::new("vacations");
/// (mailbox address, duplicate id) -> the time (Unix ms) it stops counting: Sieve's duplicate
/// tracking, which is how vacation answers one sender once per `days`.
pub const SIEVE_SEEN: TableDefinition<(&str, &str), u64> = TableDefinition::new("sieve_seen");
/// `account:<directory URL>` -> the ACME account's credentials (JSON, with its key);
/// `cert:<group>` -> `StoredCertificate` (JSON): certificates obtained over ACME.
pub const ACME: TableDefinition<&str, &[u8]> = TableDefinition::new("acme");
/// (domain, receivedAt, report id) -> `DmarcReport` (JSON): DMARC aggregate reports received
/// for a hosted domain (`aggregates.rs`).
pub const DMARC_REPORTS: TableDefinition<(&str, u64, &str), &[u8]> =
    TableDefinition::new("dmarc_reports");
/// (hosted domain, period start in seconds, policy domain + "\n" + row digest) -> a counted row
/// of what that domain received; the key ending in a bare "\n" is the group's head
/// (`dmarc_seen`).
pub const DMARC_SEEN: TableDefinition<(&str, u64, &str), &[u8]> =
    TableDefinition::new("dmarc_seen");
/// (domain, kind "\n" reporting org "\n" its report id [ "\n" policy domain]) -> when
/// (Unix ms) the first copy arrived: the same report sent again (a retry, or to two addresses
/// of the domain) is counted once (`aggregates.rs`).
pub const REPORTS_SEEN: TableDefinition<(&str, &str), u64> = TableDefinition::new("reports_seen");
/// (domain, receivedAt, report id) -> `TlsReport` (JSON): TLS-RPT reports received for a domain.
pub const TLS_REPORTS: TableDefinition<(&str, u64, &str), &[u8]> =
    TableDefinition::new("tls_reports");

/// (mailbox address, source key) -> what an import already copied there: an email id under a
/// message's key (`m:` Message-ID and date, `u:` source folder, UIDVALIDITY and UID), or a JSON
/// mark of a source folder (`f:`, the last UID copied), so a second run copies only what is new.
pub const IMPORTS: TableDefinition<(&str, &str), &[u8]> = TableDefinition::new("imports");

/// On PostgreSQL, the tables of the hot paths each have a relation of their own (a partition of
/// `edgemail_kv`, `kv::postgres::layout`); every other table shares the default one. Each group
/// here is written by every send, delivery or hit, or claimed under row locks.
pub const RELATIONS: &[Relation] = &[
    // Inserted and removed at every send; claimed with `SKIP LOCKED`.
    Relation { name: "edgemail_queue", tables: &[QUEUE.name(), CLAIMS.name(), SPOOL.name()] },
    Relation {
        name: "edgemail_idempotency",
        tables: &[IDEMPOTENCY.name(), IDEMPOTENCY_BY_TIME.name()],
    },
    // The webhook outbox: events waiting for their endpoints, and their delivery attempts.
    Relation {
        name: "edgemail_outbox",
        tables: &[
            WEBHOOK_EVENTS.name(),
            WEBHOOK_EVENT_REFS.name(),
            WEBHOOK_DELIVERIES.name(),
            WEBHOOK_DELIVERIES_BY_ENDPOINT.name(),
            WEBHOOK_DUE.name(),
        ],
    },
    // Opens, clicks and unsubscribes, counted per message.
    Relation { name: "edgemail_tracking", tables: &[TRACKING.name()] },
    // Bumped by every send or delivery, each node its own shard.
    Relation {
        name: "edgemail_counters",
        tables: &[
            DAILY_STATS_SHARDS.name(),
            MAILBOX_USAGE_SHARDS.name(),
            MAILBOX_DAY_SENDS.name(),
            MAILBOX_NEXT_SLOT.name(),
        ],
    },
];
