//! Each recipient mailbox's Sieve script (and its vacation settings, as a script of their own)
//! run on a message after the spam filter. A script decides the folder (`fileinto`), flags
//! (imap4flags), discards, rejects, redirects, and answers (vacation); the run is bounded by
//! the runtime's limits (`filters`) and happens off the async runtime. A script that fails at
//! run time changes nothing: the message goes where the filter put it, and the fault is logged.
//! Vacation answers (RFC 3834, RFC 5230) only mail that passes our own checks too: not spam,
//! not from a list or bulk sender, not automatic, not from a null sender or the mailbox itself.

use std::sync::Arc;

use ::sieve::{Envelope, Event, Input, Recipient, Runtime};

use crate::ids::now_ms;
use crate::store::{Store, Vacation};

/// The header a redirect adds: a message that already carries it for the mailbox is not
/// redirected again, which ends loops between mailboxes redirecting to each other.
pub(super) const REDIRECTED: &str = "X-Edgemail-Redirected";

/// What one mailbox's script decided.
#[derive(Debug, Default)]
pub(super) struct Sieved {
    /// `fileinto`: the folder name, and whether `:create` may make it.
    pub target: Option<(String, bool)>,
    /// A keep (explicit or implicit) happened.
    pub keep: bool,
    pub flags: Vec<String>,
    /// `reject`'s reason.
    pub reject: Option<String>,
    /// Answers to send (vacation): (recipient, bytes). They leave with the null sender.
    pub sends: Vec<(String, Vec<u8>)>,
    /// Addresses to redirect the message to; each leaves as a forward does (SRS, ARC).
    pub redirects: Vec<String>,
}

impl Sieved {
    /// Kept as the filter filed it.
    fn kept() -> Sieved {
        Sieved { keep: true, ..Sieved::default() }
    }

    /// Nothing stores it: a discard, a reject, or a redirect without `:copy`.
    pub fn dropped(&self) -> bool {
        self.target.is_none() && !self.keep
    }
}

/// What a run knows of the message and its mailbox.
pub(super) struct Facts {
    pub mailbox: String,
    pub sender: String,
    pub raw: Arc<Vec<u8>>,
    pub spam: bool,
    pub script: Option<String>,
    pub vacation: Option<Vacation>,
    /// The recipient addresses in the message's header that lead to this mailbox (itself, its
    /// aliases, their `+tag` forms): vacation treats each as the mailbox's own (RFC 5230
    /// `:addresses`).
    pub ours: Vec<String>,
}

/// Runs the mailbox's vacation settings, then its script; `None` when it has neither.
pub(super) async fn run(store: &Store, runtime: Arc<Runtime>, facts: Facts) -> Sieved {
    let store = store.clone();
    let mailbox = facts.mailbox.clone();
    let done = tokio::task::spawn_blocking(move || {
        let now = now_ms();
        let answerable = answerable(&facts);
        let mut out = Sieved::kept();
        if let Some(v) = &facts.vacation
            && v.enabled
            && v.start_at.is_none_or(|s| s <= now)
            && v.end_at.is_none_or(|e| now < e)
        {
            let text = crate::filters::vacation_script(&v.subject, &v.text, v.days);
            if let Ok(sieved) = one(&store, &runtime, &facts, &text, answerable, now) {
                out.sends.extend(sieved.sends);
            }
        }
        if let Some(script) = &facts.script {
            match one(&store, &runtime, &facts, script, answerable, now) {
                Ok(mut sieved) => {
                    let mut sends = std::mem::take(&mut out.sends);
                    sends.append(&mut sieved.sends);
                    sieved.sends = sends;
                    out = sieved;
                }
                Err(e) => {
                    tracing::warn!(mailbox = %facts.mailbox, error = %e,
                        "Sieve script failed at delivery; message kept");
                }
            }
        }
        out
    })
    .await;
    done.unwrap_or_else(|e| {
        tracing::error!(%mailbox, error = %e, "Sieve run panicked; message kept");
        Sieved::kept()
    })
}

/// Whether a vacation answer may go to this message's sender at all (RFC 3834 2, 5230 4.5):
/// the checks sieve-rs leaves to us.
fn answerable(f: &Facts) -> bool {
    let sender = f.sender.to_ascii_lowercase();
    if f.spam || sender.is_empty() || sender == f.mailbox || sender.starts_with("bounces+") {
        return false;
    }
    let head = header_of(&f.raw);
    let precedence = field(head, "precedence").map(|v| v.trim().to_ascii_lowercase());
    if matches!(precedence.as_deref(), Some("bulk" | "list" | "junk")) {
        return false;
    }
    if let Some(auto) = field(head, "auto-submitted")
        && !auto.trim().eq_ignore_ascii_case("no")
    {
        return false;
    }
    field(head, "list-id").is_none() && field(head, "list-unsubscribe").is_none()
}

fn header_of(raw: &[u8]) -> &[u8] {
    memchr::memmem::find(raw, b"\r\n\r\n").map_or(raw, |at| &raw[..at + 2])
}

/// The first value of a header field (unfolded), if present.
fn field(head: &[u8], name: &str) -> Option<String> {
    let text = String::from_utf8_lossy(head);
    let mut found: Option<String> = None;
    for line in text.split("\r\n") {
        if let Some(value) = &mut found {
            if line.starts_with([' ', '\t']) {
                value.push_str(line);
                continue;
            }
            break;
        }
        if let Some((n, v)) = line.split_once(':')
            && n.trim().eq_ignore_ascii_case(name)
        {
            found = Some(v.to_owned());
        }
    }
    found
}

/// Whether the message was already redirected by this mailbox.
fn redirected_by(raw: &[u8], mailbox: &str) -> bool {
    let head = String::from_utf8_lossy(header_of(raw)).to_ascii_lowercase();
    let marker = format!("{}: {mailbox}", REDIRECTED.to_ascii_lowercase());
    head.split("\r\n").any(|l| l.trim_end() == marker)
}

/// One script's run over the message.
fn one(
    store: &Store,
    runtime: &Runtime,
    f: &Facts,
    text: &str,
    answerable: bool,
    now: u64,
) -> Result<Sieved, String> {
    let script = crate::filters::compiled(text)?;
    let mut ctx = runtime.filter(&f.raw);
    ctx.set_envelope(Envelope::From, f.sender.as_str());
    ctx.set_envelope(Envelope::To, f.mailbox.as_str());
    ctx.set_user_address(f.mailbox.as_str());
    // The runtime reads the mailbox's other addresses from here (`vacation_use_orig_rcpt`).
    for address in &f.ours {
        ctx.set_envelope(Envelope::Orcpt, address.as_str());
    }
    let mut out = Sieved::default();
    let mut created: Vec<Vec<u8>> = Vec::new();
    let mut input = Input::script("active", script);
    while let Some(step) = ctx.run(input) {
        let event = step.map_err(|e| e.to_string())?;
        input = Input::True;
        match event {
            Event::IncludeScript { .. } | Event::ListContains { .. } | Event::Function { .. } => {
                input = Input::False;
            }
            Event::MailboxExists { mailboxes, .. } => {
                let names: Vec<String> = mailboxes
                    .into_iter()
                    .map(|m| match m {
                        ::sieve::Mailbox::Name(n) | ::sieve::Mailbox::Id(n) => n,
                    })
                    .collect();
                let mailbox = f.mailbox.clone();
                let all = store
                    .read_blocking(move |r| -> crate::store::Result<bool> {
                        for n in &names {
                            if r.folder_named(&mailbox, n)?.is_none() {
                                return Ok(false);
                            }
                        }
                        Ok(true)
                    })
                    .unwrap_or(false);
                input = all.into();
            }
            Event::DuplicateId { id, expiry, .. } => {
                if id.starts_with("_v") && !answerable {
                    // Counted as answered already: no vacation reply goes out.
                    continue;
                }
                let (mailbox, until) = (f.mailbox.clone(), now + expiry.saturating_mul(1000));
                let seen = store
                    .write_blocking(move |w| w.sieve_seen(&mailbox, &id, now, until))
                    .unwrap_or(true);
                input = seen.into();
            }
            Event::Keep { flags, .. } => {
                out.keep = true;
                out.flags.extend(flags);
            }
            Event::FileInto { folder, flags, create, message_id, .. } => {
                if message_id == 0 && out.target.is_none() {
                    out.target = Some((folder, create));
                    out.flags.extend(flags);
                }
            }
            Event::Discard => {}
            Event::Reject { reason, .. } => out.reject = Some(reason),
            Event::CreatedMessage { message, .. } => created.push(message),
            Event::SendMessage { recipient, message_id, .. } => {
                let Recipient::Address(to) = recipient else { continue };
                if message_id == 0 {
                    if redirected_by(&f.raw, &f.mailbox) {
                        tracing::info!(mailbox = %f.mailbox, "redirect skipped: already redirected here");
                        continue;
                    }
                    if f.spam {
                        // As with forwards: what our filter calls spam is not passed on.
                        tracing::info!(mailbox = %f.mailbox, "redirect skipped: spam");
                        continue;
                    }
                    out.redirects.push(to);
                } else if let Some(message) = created.get(message_id - 1) {
                    out.sends.push((to, message.clone()));
                }
            }
            Event::SetEnvelope { .. } | Event::Notify { .. } => {}
        }
    }
    Ok(out)
}

/// What the scripts of a message's mailboxes decided for all of them.
#[derive(Default)]
pub(super) struct Decided {
    /// Every copy was rejected: the reply that refuses the message.
    pub refused: Option<String>,
    /// Flags to set on stored copies: (copy id, mailbox, folder, flags).
    pub flags: Vec<(String, String, crate::store::Folder, Vec<String>)>,
    /// Answers to queue with the null sender: (mailbox, recipient, bytes).
    pub sends: Vec<(String, String, Vec<u8>)>,
    /// Redirects: (mailbox, recipient); sent as forwards of the mailbox.
    pub redirects: Vec<(String, String)>,
}

impl super::Receiver {
    /// Runs each copy's mailbox script; drops the copies it discards or rejects and moves the
    /// ones it files elsewhere (`copies` and `filed` stay in step).
    pub(super) async fn sieve_copies(
        &self,
        envelope: &super::Envelope,
        verdict: &super::auth::Verdict,
        full: &[u8],
        copies: &mut Vec<(String, String)>,
        filed: &mut Vec<super::filter::Filed>,
    ) -> crate::error::Result<Decided> {
        let mut decided = Decided::default();
        let mailboxes: Vec<String> = copies.iter().map(|(_, m)| m.clone()).collect();
        let settings = self
            .store
            .read(move |r| -> crate::store::Result<Vec<_>> {
                let mut out = Vec::with_capacity(mailboxes.len());
                for m in &mailboxes {
                    out.push((r.active_sieve(m)?.map(|s| s.script), r.vacation(m)?));
                }
                Ok(out)
            })
            .await?;
        if settings.iter().all(|(s, v)| s.is_none() && v.is_none()) {
            return Ok(decided);
        }
        let raw = Arc::new(full.to_vec());
        let ours = self.our_addresses(super::sieve_out::header_recipients(full), copies).await;
        let mut outcomes = Vec::with_capacity(copies.len());
        let each = copies.iter().zip(filed.iter()).zip(settings).zip(ours);
        for ((((_, mailbox), f), (script, vacation)), ours) in each {
            if script.is_none() && vacation.is_none() {
                outcomes.push(Sieved::kept());
                continue;
            }
            let facts = Facts {
                mailbox: mailbox.clone(),
                sender: envelope.from.clone(),
                raw: raw.clone(),
                spam: f.spam.as_ref().is_some_and(|s| s.verdict == "spam"),
                script,
                vacation,
                ours,
            };
            outcomes.push(run(&self.store, self.sieve.clone(), facts).await);
        }
        if outcomes.iter().all(|o| o.reject.is_some()) {
            let reason = outcomes.iter().find_map(|o| o.reject.clone()).unwrap_or_default();
            decided.refused = Some(format!("550 5.7.1 {}\r\n", one_line(&reason)));
            return Ok(decided);
        }
        let (mut kept_copies, mut kept_filed) = (Vec::new(), Vec::new());
        let now = now_ms();
        for ((copy, mut f), o) in copies.drain(..).zip(filed.drain(..)).zip(outcomes) {
            let mailbox = copy.1.clone();
            let dropped = o.dropped();
            decided.sends.extend(o.sends.into_iter().map(|(to, m)| (mailbox.clone(), to, m)));
            decided.redirects.extend(o.redirects.into_iter().map(|to| (mailbox.clone(), to)));
            if let Some(reason) = &o.reject {
                // A notice goes only to a sender that authenticated (SPF for its own domain,
                // or an aligned DKIM/SPF pass): never a bounce to a forged one (backscatter).
                let sender_domain = crate::address::domain_key(&envelope.from);
                let proven = verdict.aligned()
                    || verdict
                        .spf_pass
                        .as_deref()
                        .is_some_and(|d| d.eq_ignore_ascii_case(&sender_domain));
                if proven && !envelope.from.is_empty() {
                    let notice = rejection(&mailbox, &envelope.from, reason);
                    decided.sends.push((mailbox.clone(), envelope.from.clone(), notice));
                }
                tracing::info!(%mailbox, from = %envelope.from, notified = proven,
                    "message rejected by the mailbox's Sieve script; dropped");
                continue;
            }
            if dropped {
                tracing::info!(%mailbox, from = %envelope.from, "message discarded by the mailbox's Sieve script");
                continue;
            }
            if let Some((name, create)) = o.target {
                f.folder = self.folder_for(&mailbox, &name, create, now).await;
            }
            if !o.flags.is_empty() {
                decided.flags.push((copy.0.clone(), mailbox, f.folder, o.flags));
            }
            kept_copies.push(copy);
            kept_filed.push(f);
        }
        *copies = kept_copies;
        *filed = kept_filed;
        Ok(decided)
    }

    /// The folder `fileinto` names; made when `create` allows, else the inbox when missing.
    async fn folder_for(
        &self,
        mailbox: &str,
        name: &str,
        create: bool,
        now: u64,
    ) -> crate::store::Folder {
        let (m, n) = (mailbox.to_owned(), name.to_owned());
        if let Ok(Some(folder)) = self.store.read(move |r| r.folder_named(&m, &n)).await {
            return folder;
        }
        if create {
            let (m, n) = (mailbox.to_owned(), name.to_owned());
            match self.store.write(move |w| w.create_folder(&m, &n, true, now)).await {
                Ok(entry) => return entry.folder,
                Err(e) => {
                    tracing::warn!(%mailbox, error = %e, "Sieve :create could not make the folder")
                }
            }
        }
        crate::store::Folder::Inbox
    }
}

/// The notice telling an authenticated sender that one recipient's filter rejected the message.
fn rejection(mailbox: &str, sender: &str, reason: &str) -> Vec<u8> {
    format!(
        "From: <{mailbox}>\r\nTo: <{sender}>\r\nSubject: Message rejected\r\n\
         Auto-Submitted: auto-replied\r\nMIME-Version: 1.0\r\n\
         Content-Type: text/plain; charset=utf-8\r\n\r\n\
         Your message to {mailbox} was rejected by the recipient's filter:\r\n{}\r\n",
        one_line(reason)
    )
    .into_bytes()
}

fn one_line(text: &str) -> String {
    let line: String =
        text.chars().map(|c| if c.is_control() { ' ' } else { c }).take(300).collect();
    if line.trim().is_empty() {
        "message rejected by the recipient's filter".to_owned()
    } else {
        line
    }
}
