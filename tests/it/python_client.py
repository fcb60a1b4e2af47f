"""Drives a running edgemail through the Python client that openapi-python-client generated from
schema/openapi.yaml (see tests/it/python_client.rs): every resource, and every answer must parse
into the generated model the document names for its status.

    python python_client.py PACKAGE_DIR BASE_URL DOMAIN KEY ORG_KEY
"""

import importlib
import pkgutil
import sys
import time

package_dir, base_url, domain, key, org_key = sys.argv[1:6]
sys.path.insert(0, package_dir)
pkg = importlib.import_module("edgemail_client")
models = importlib.import_module("edgemail_client.models")

client = pkg.AuthenticatedClient(base_url=base_url, token=key, raise_on_unexpected_status=True)
org = pkg.AuthenticatedClient(base_url=base_url, token=org_key, raise_on_unexpected_status=True)
anonymous = pkg.Client(base_url=base_url, raise_on_unexpected_status=True)
# Bodies that are not JSON (YAML, a message, an attachment) are left to the caller by the
# generator, which counts them as unexpected: these clients let them through.
raw_client = pkg.AuthenticatedClient(base_url=base_url, token=key)
raw_anonymous = pkg.Client(base_url=base_url)
checked = []


def call(module, status, model, *, via=None, **kwargs):
    """One operation; its status and the parsed answer's type are checked."""
    op = importlib.import_module(f"edgemail_client.api.{module}")
    resp = op.sync_detailed(client=via or client, **kwargs)
    assert resp.status_code == status, f"{module}: {resp.status_code} {resp.content[:300]!r}"
    parsed = resp.parsed
    if model is not None and model.startswith("list["):
        want = getattr(models, model[5:-1])
        assert isinstance(parsed, list), f"{module}: {parsed!r}"
        assert all(isinstance(p, want) for p in parsed), f"{module}: {parsed!r}, not {model}"
    elif model is not None:
        want = getattr(models, model)
        assert isinstance(parsed, want), f"{module}: {type(parsed).__name__}, not {model}"
    checked.append(module)
    return resp


def body(model, value):
    return getattr(models, model).from_dict(value)


# Meta: no key needed.
call("meta.get_health", 200, "Health", via=anonymous)
call("meta.get_readiness", 200, "Health", via=anonymous)
call("meta.get_open_api_json", 200, "GetOpenApiJsonResponse200", via=anonymous)
assert b"openapi:" in call("meta.get_open_api_yaml", 200, None, via=raw_anonymous).content

# Mailboxes and app passwords.
ada = call("mailboxes.create_mailbox", 201, "Mailbox",
           body=body("CreateMailbox", {"address": "ada", "displayName": "Ada"})).parsed
assert ada.address == f"ada@{domain}", ada.address
call("mailboxes.create_mailbox", 201, "Mailbox", body=body("CreateMailbox", {"address": "bob"}))
refused = call("mailboxes.create_mailbox", 409, "Error", body=body("CreateMailbox", {"address": "bob"}))
assert refused.parsed.code.value == "conflict", refused.parsed.code
boxes = call("mailboxes.list_mailboxes", 200, "list[Mailbox]").parsed
assert len(boxes) == 2, boxes
call("mailboxes.update_mailbox", 200, "Mailbox", address="ada",
     body=body("UpdateMailbox", {"displayName": "Ada L.", "dailyLimit": 500}))
shown = call("mailboxes.get_mailbox", 200, "Mailbox", address="ada").parsed
assert shown.quota.used_bytes == 0, shown.quota
password = call("mailboxes.create_app_password", 201, "NewAppPassword", address="ada",
                body=body("CreateAppPassword", {"name": "laptop"})).parsed
assert len(password.password) >= 16
listed = call("mailboxes.list_app_passwords", 200, "list[AppPassword]", address="ada").parsed
assert [p.id for p in listed] == [password.id], listed
call("mailboxes.delete_app_password", 200, "Deleted", address="ada", id=password.id)
made = call("mailboxes.create_folder", 201, "MailboxFolder", address="ada",
            body=body("FolderName", {"name": "Projects/2026"})).parsed
assert made.name == "Projects/2026" and made.total == 0, made
call("mailboxes.rename_folder", 200, "MailboxFolder", address="ada", name="Projects/2026",
     body=body("FolderName", {"name": "Projects/2027"}))
mbox = (b"From old@example.org Mon Jan  5 10:00:00 2015\nFrom: old@example.org\n"
        b"Subject: moved\nMessage-ID: <moved-1@example.org>\n\nfrom the old host\n\n")
types = importlib.import_module("edgemail_client.types")
imported = call("mailboxes.import_mbox", 200, "ImportReport", address="ada", folder="Imported",
                body=types.File(payload=__import__("io").BytesIO(mbox))).parsed
assert (imported.imported, imported.skipped, imported.failed) == (1, 0, []), imported
folders = call("mailboxes.list_folders", 200, "list[MailboxFolder]", address="ada").parsed
assert [f.name for f in folders][-2:] == ["Projects", "Projects/2027"], folders
call("mailboxes.delete_folder", 200, "FolderDeleted", address="ada", name="Projects")

# Aliases.
alias = call("aliases.create_alias", 201, "Alias",
             body=body("CreateAlias", {"address": "team", "targets": [f"ada@{domain}", f"bob@{domain}"]})).parsed
assert alias.address == f"team@{domain}", alias
call("aliases.create_alias", 409, "Error", body=body("CreateAlias", {"address": "ada", "targets": [f"bob@{domain}"]}))
call("aliases.list_aliases", 200, "list[Alias]")
call("aliases.get_alias", 200, "Alias", address="team")
call("aliases.update_alias", 200, "Alias", address="team", body=body("UpdateAlias", {"targets": [f"ada@{domain}"]}))
call("aliases.delete_alias", 200, "Deleted", address="team")
# Sieve filter and vacation.
call("mailboxes.get_sieve_script", 404, "Error", address="ada")
script = 'require "fileinto";\nif header :contains "subject" "x" { fileinto "Projects"; }\n'
put = call("mailboxes.put_sieve_script", 200, "SieveScript", address="ada",
           body=body("PutSieveScript", {"script": script})).parsed
assert put.script == script, put
bad = call("mailboxes.put_sieve_script", 400, "Error", address="ada",
           body=body("PutSieveScript", {"script": "if true {\\n  fileinto \"x\";\\n}\\n"})).parsed
assert "line" in bad.message, bad.message
assert call("mailboxes.get_sieve_script", 200, "SieveScript", address="ada").parsed.script == script
call("mailboxes.delete_sieve_script", 200, "Deleted", address="ada")
call("mailboxes.get_vacation", 404, "Error", address="ada")
away = call("mailboxes.put_vacation", 200, "Vacation", address="ada",
            body=body("PutVacation", {"enabled": True, "subject": "Away", "text": "Back soon."})).parsed
assert away.days == 7, away
call("mailboxes.get_vacation", 200, "Vacation", address="ada")
call("mailboxes.delete_vacation", 200, "Deleted", address="ada")

# Sender groups.
group = call("sender_groups.create_sender_group", 201, "SenderGroup",
             body=body("CreateSenderGroup", {"name": "team", "mailboxes": ["ada", "bob"]})).parsed
call("sender_groups.list_sender_groups", 200, "list[SenderGroup]")
call("sender_groups.update_sender_group", 200, "SenderGroup", id=group.id,
     body=body("UpdateSenderGroup", {"name": "the team"}))

# Sending (local delivery: bob is on this server), then the stored mail.
sent = call("send.send_email", 200, "SendTransactionalResponse", body=body("SendRequest", {
    "from": f"ada@{domain}", "to": [f"bob@{domain}"], "subject": "Notes", "text": "Attached.",
    "attachments": [{"filename": "notes.txt", "content": "aGVsbG8sIGZpbGU="}],
})).parsed
for _ in range(200):
    inbox = call("emails.list_emails", 200, "list[EmailSummary]", mailbox="bob", folder="inbox").parsed
    if inbox:
        break
    time.sleep(0.05)
assert inbox, "the mail never reached bob's inbox"
received = call("emails.get_email", 200, "Email", id=inbox[0].id).parsed
assert received.subject == "Notes", received.subject
raw = call("emails.get_email_raw", 200, None, via=raw_client, id=received.id)
assert b"Subject: Notes" in raw.content and b"DKIM-Signature" in raw.content
attachment = call("emails.get_email_attachment", 200, None, via=raw_client, id=received.id,
                  index=0)
assert attachment.content == b"hello, file", attachment.content
outbox = call("emails.list_emails", 200, "list[EmailSummary]", mailbox="ada").parsed
call("emails.get_email", 200, "Email", id=sent.message_id)
moved = call("emails.update_email", 200, "Email", id=received.id,
             body=body("EmailPatch", {"folder": "archive", "flags": ["\\Seen"]})).parsed
assert moved.folder == "archive" and moved.flags == ["\\Seen"], moved
junked = call("emails.mark_junk", 200, "Email", id=received.id).parsed
assert junked.folder == "junk" and junked.spam.trained == "spam", junked
kept = call("emails.mark_not_junk", 200, "Email", id=received.id).parsed
assert kept.folder == "inbox" and kept.spam.trained == "ham", kept
call("emails.delete_email", 200, "EmailDeleteResult", id=received.id)

# Contacts.
contact = call("contacts.upsert_contact", 201, "Contact",
               body=body("CreateContact", {"email": "grace@example.org", "name": "Grace"})).parsed
page = call("contacts.list_contacts", 200, "list[Contact]", limit=10).parsed
assert [c.id for c in page] == [contact.id], page
got = call("contacts.get_contact", 200, "Contact", id=contact.id).parsed
assert got.email == contact.email, got
# A CSV body: the generator may leave the operation out (it makes no client for text/csv);
# when it made one, the raw HTTP client sends the file and the answer is parsed into its model.
try:
    importlib.import_module("edgemail_client.api.contacts.import_contacts")
    csv_op = True
except ModuleNotFoundError:
    csv_op = False
imported = raw_client.get_httpx_client().post(
    "/v1/contacts/import", content=b"email;firstName\r\nlin@example.org;Lin\r\n",
    headers={"Content-Type": "text/csv"})
assert imported.status_code == 200, imported.content
result = models.ContactImport.from_dict(imported.json())
assert (result.created, result.updated, result.invalid) == (1, 0, []), result
if csv_op:
    checked.append("contacts.import_contacts")
call("contacts.delete_contact", 200, "Deleted", id=contact.id)

# Sequences.
sequence = call("sequences.create_sequence", 201, "Sequence", body=body("CreateSequence", {
    "name": "welcome", "from": f"ada@{domain}",
    "steps": [{"type": "send_email", "subject": "Hi {{name}}", "html": "<p>Hello</p>"},
              {"type": "delay", "delayMs": 86400000},
              {"type": "send_email", "subject": "", "html": "<p>Again</p>"}],
})).parsed
call("sequences.list_sequences", 200, "list[SequenceListItem]")
got = call("sequences.get_sequence", 200, "SequenceListItem", id=sequence.id).parsed
assert got.id == sequence.id and got.step_count == 3, got
enrolled = call("sequences.enroll_contacts", 200, "EnrollResult", id=sequence.id,
                body=body("EnrollRequest", {"contacts": [
                    {"email": f"bob@{domain}", "mergeFields": {"name": "Bob"}}]})).parsed
call("sequences.list_enrollments", 200, "list[Enrollment]", id=sequence.id)
labelled = call("sequences.label_enrollment", 200, "LabelResult", id=sequence.id,
                enrollment_id=enrolled.enrollment_ids[0],
                body=body("SetLabel", {"label": "interested"})).parsed
assert labelled.label == "interested", labelled
call("sequences.list_replies", 200, "list[ReplyItem]", limit=10)
call("sequences.update_sequence_status", 200, "SequenceStatusResult", id=sequence.id,
     body=body("UpdateSequenceStatus", {"status": "paused"}))
call("sequences.cancel_sequence", 200, "SequenceCancelResult", id=sequence.id)

# Suppressions, bounces, campaign statistics, warmup, domain health (analytics).
call("analytics.add_suppression", 201, "Suppression",
     body=body("AddSuppressionBody", {"email": "gone@example.org", "reason": "asked"}))
call("analytics.list_suppressions", 200, "SuppressionPage")
call("analytics.list_suppressions", 200, "list[SuppressionPage]", via=org)
call("analytics.remove_suppression", 200, "Deleted", email="gone@example.org")
call("analytics.get_bounce_stats", 200, "BounceStats", days=7)
call("analytics.get_bounce_stats", 200, "list[BounceStats]", via=org)
call("analytics.get_campaign_stats", 200, "CampaignStats")
call("analytics.get_domain_health", 200, "DeliverabilityReport")
call("analytics.list_certificates", 200, "list[Certificate]")
call("warmup.enroll_warmup", 200, "WarmupStatus", body=body("EnrollWarmup", {"mailbox": "ada"}))
call("analytics.get_warmup_status", 200, "list[WarmupStatus]")
call("warmup.stop_warmup", 200, "WarmupStatus", address="ada")
forbidden = call("mailboxes.list_mailboxes", 403, "Error", via=org)

# Webhooks.
hook = call("webhooks.create_webhook", 201, "WebhookWithSecret", body=body("CreateWebhook", {
    "url": "http://127.0.0.1:9/hook", "events": ["email.delivered"], "description": "ops"})).parsed
assert hook.secret.startswith("whsec_")
call("webhooks.list_webhooks", 200, "list[Webhook]")
call("webhooks.get_webhook", 200, "Webhook", id=hook.id)
call("webhooks.update_webhook", 200, "Webhook", id=hook.id,
     body=body("UpdateWebhook", {"enabled": False}))
call("webhooks.test_webhook", 202, "TestWebhookResponse202", id=hook.id)
call("webhooks.list_webhook_deliveries", 200, "list[WebhookDelivery]", id=hook.id)
call("webhooks.rotate_webhook_secret", 200, "RotateWebhookSecretResponse200", id=hook.id)
call("webhooks.delete_webhook", 200, "Deleted", id=hook.id)

# The public tools.
call("tools.validate_emails", 200, "ValidateEmailsResponse", via=anonymous,
     body=body("ValidateEmailsRequest", {"emails": ["bob@" + domain, "not an address"]}))
call("tools.generate_subject_lines", 200, "GenerateSubjectLinesResponse", via=anonymous,
     body=body("GenerateSubjectLinesRequest", {"offer": "a mail server of your own", "tone": "friendly"}))
call("tools.check_deliverability", 200, "DeliverabilityReport", via=anonymous,
     body=body("CheckDeliverabilityRequest", {"domain": domain}))

# Mail client settings (XML, so read raw) and what reports say about the domain.
auto = call("clients.thunderbird_autoconfig", 200, None, via=raw_anonymous,
            emailaddress=f"ada@{domain}")
assert b"<clientConfig" in auto.content, auto.content
call("clients.thunderbird_autoconfig_well_known", 404, "Error", via=anonymous,
     emailaddress="ann@elsewhere.example")
# Outlook's Autodiscover takes an XML body: sent raw (the generator makes no client for
# text/xml bodies), its answer read as XML.
request = (f'<?xml version="1.0" encoding="utf-8"?><Autodiscover xmlns="http://schemas.microsoft.com'
           f'/exchange/autodiscover/outlook/requestschema/2006"><Request><EMailAddress>ada@{domain}'
           '</EMailAddress><AcceptableResponseSchema>http://schemas.microsoft.com/exchange/'
           'autodiscover/outlook/responseschema/2006a</AcceptableResponseSchema></Request>'
           '</Autodiscover>')
outlook = raw_anonymous.get_httpx_client().post(
    "/autodiscover/autodiscover.xml", content=request.encode(), headers={"Content-Type": "text/xml"})
assert outlook.status_code == 200, outlook.content
# No IMAP or submission listener runs here, so the account names no protocol.
assert b"responseschema/2006a" in outlook.content and b"<Account>" in outlook.content, outlook.content
try:
    importlib.import_module("edgemail_client.api.clients.autodiscover")
    checked.append("clients.autodiscover")
except ModuleNotFoundError:
    pass
# The Host header is this server's address, not mta-sts.<domain>: no policy.
call("clients.mta_sts_policy", 404, "Error", via=anonymous)
# No IMAP or submission listener runs here: no profile to give.
call("mailboxes.mailbox_mobileconfig", 404, "Error", address="ada")
call("analytics.dmarc_reports", 200, "DmarcReports", days=7)
call("analytics.tls_reports", 200, "TlsReports")

# Clean-up paths.
call("sender_groups.delete_sender_group", 200, "Deleted", id=group.id)
call("mailboxes.delete_mailbox", 200, "Deleted", address="bob")

# Every operation the generator made was called, but the tracking links (their signed tokens come
# from a sent campaign; tests/it/send.rs follows them) and the Prometheus text.
generated = {
    f"{group.name}.{op.name}"
    for group in pkgutil.iter_modules(importlib.import_module("edgemail_client.api").__path__)
    for op in pkgutil.iter_modules(
        importlib.import_module(f"edgemail_client.api.{group.name}").__path__)
}
left = sorted(generated - set(checked) - {"meta.get_metrics"})
assert all(name.startswith("tracking.") for name in left), f"never called: {left}"
print(f"ok: {len(checked)} calls, {len(set(checked))} operations")
