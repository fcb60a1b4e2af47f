//! `POST /v1/mailboxes/{address}/import`: an mbox upload (`application/mbox`, up to 100 MB)
//! imported into the mailbox, into `?folder=` (made when missing) or, without it, into the
//! folder each message's `X-Edgemail-Folder` header names (INBOX otherwise). The same importer
//! as `edgemail import`: stored mail, quota per message, a second upload copies only what is new.

use serde::Serialize;

use super::mailboxes::mailbox_address;
use crate::error::{Error, Result};
use crate::http::{Ctx, Reply};
use crate::mailmove::import::Failure;

/// The largest upload the route takes.
pub const MAX_UPLOAD: usize = 100 * 1000 * 1000;

#[derive(Serialize)]
struct Answer<'a> {
    imported: u64,
    skipped: u64,
    failed: &'a [Failure],
}

pub async fn import(ctx: Ctx) -> Result<Reply> {
    let address = mailbox_address(&ctx).await?;
    let folder = ctx.query_value("folder").map(|f| crate::store::check_name(&f)).transpose()?;
    let (store, quota) = (ctx.app.store.clone(), ctx.app.config.mailbox.quota_bytes);
    let body = ctx.body.clone();
    let report = tokio::task::spawn_blocking(move || {
        let mut importer = crate::mailmove::Importer::new(&store, &address, quota)?;
        crate::mailmove::local::import_mbox(&mut importer, &body[..], folder.as_deref())?;
        importer.finish()
    })
    .await
    .map_err(Error::internal)??;
    Reply::ok(&Answer {
        imported: report.imported,
        skipped: report.skipped,
        failed: &report.failed,
    })
}

/// Reads an upload as the route does, without storing it (the fuzz targets' entry): the count
/// of messages, or the refusal of what is not an mbox.
pub fn parse_mbox(body: &[u8]) -> Result<usize> {
    let mut reader = crate::mailmove::mbox::MboxReader::new(body, crate::mailmove::MAX_MESSAGE);
    let mut n = 0;
    while let Some(mut message) =
        reader.next_message().map_err(|e| Error::invalid(e.to_string(), "send an mbox file"))?
    {
        crate::mailmove::mbox::take_bookkeeping(&mut message.raw);
        n += 1;
    }
    Ok(n)
}
