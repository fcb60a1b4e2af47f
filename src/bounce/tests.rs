//! Replies as providers document or send them (Google's "SMTP errors and codes", Microsoft's
//! Exchange Online NDR reference, Yahoo's sender error codes, and Postfix and Exim as they answer
//! by default), with the class each must get. The texts are shortened where long.

use super::BounceClass::{self, *};
use super::classify;

fn check(cases: &[(&str, BounceClass)]) {
    for (reply, want) in cases {
        assert_eq!(classify(reply), *want, "{reply}");
    }
}

#[test]
fn gmail() {
    check(&[
        (
            "550-5.1.1 The email account that you tried to reach does not exist. Please try\r\n\
             550-5.1.1 double-checking the recipient's email address for typos or\r\n\
             550 5.1.1 unnecessary spaces. https://support.google.com/mail/?p=NoSuchUser",
            InvalidRecipient,
        ),
        ("550 5.2.1 The email account that you tried to reach is disabled.", InvalidRecipient),
        ("552 5.2.2 The email account that you tried to reach is over quota.", MailboxFull),
        (
            "450 4.2.1 The user you are trying to contact is receiving mail at a rate that \
             prevents additional messages from being delivered.",
            Policy,
        ),
        (
            "550 5.7.1 Our system has detected an unusual rate of unsolicited mail originating \
             from your IP address.",
            Policy,
        ),
        (
            "550 5.7.26 This mail has been blocked because the sender is unauthenticated. \
             Gmail requires all senders to authenticate with either SPF or DKIM.",
            Policy,
        ),
        ("421 4.7.28 Gmail has detected an unusual rate of mail from your IP.", Policy),
        ("530 5.7.0 Must issue a STARTTLS command first.", Tls),
        ("552 5.3.4 Your message exceeded Google's message size limits.", Other),
        ("555 5.5.2 Syntax error.", Protocol),
    ]);
}

#[test]
fn microsoft() {
    check(&[
        ("550 5.5.0 Requested action not taken: mailbox unavailable", InvalidRecipient),
        (
            "550 5.4.1 Recipient address rejected: Access denied. \
             AS(201806281) [DM6NAM12FT012.eop-nam12.prod.protection.outlook.com]",
            InvalidRecipient,
        ),
        (
            "550 5.1.10 RESOLVER.ADR.RecipientNotFound; Recipient not found by SMTP address \
             lookup",
            InvalidRecipient,
        ),
        (
            "550 5.7.1 Unfortunately, messages from [192.0.2.1] weren't sent. Please contact \
             your Internet service provider since part of their network is on our block list \
             (S3150).",
            Policy,
        ),
        (
            "550 5.7.708 Service unavailable. Access denied, traffic not accepted from this IP.",
            Policy,
        ),
        ("451 4.7.500 Server busy. Please try again later from [192.0.2.1]. (S77714)", Policy),
        ("554 5.2.2 mailbox full; STOREDRV.Deliver.Exception:QuotaExceededException", MailboxFull),
        ("452 4.5.3 Too many recipients", Protocol),
        ("550 5.7.509 Access denied, sending domain does not pass DMARC verification", Policy),
    ]);
}

#[test]
fn yahoo() {
    check(&[
        (
            "554 delivery error: dd This user doesn't have a yahoo.com account \
             (someone@yahoo.com) [0] - mta1234.mail.bf1.yahoo.com",
            InvalidRecipient,
        ),
        ("552 1 Requested mail action aborted, mailbox not found", InvalidRecipient),
        (
            "421 4.7.0 [TSS04] Messages from 192.0.2.1 temporarily deferred due to unexpected \
             volume or user complaints",
            Policy,
        ),
        (
            "553 5.7.2 [TSS09] All messages from 192.0.2.1 will be permanently deferred; \
             Retrying will NOT succeed.",
            Policy,
        ),
        ("554 5.7.9 Message not accepted for policy reasons.", Policy),
    ]);
}

#[test]
fn postfix() {
    check(&[
        (
            "550 5.1.1 <nobody@example.com>: Recipient address rejected: User unknown in \
             virtual mailbox table",
            InvalidRecipient,
        ),
        (
            "550 5.1.1 <nobody@example.com>: Recipient address rejected: User unknown in local \
             recipient table",
            InvalidRecipient,
        ),
        ("452 4.2.2 Mailbox full", MailboxFull),
        (
            "554 5.7.1 Service unavailable; Client host [192.0.2.1] blocked using \
             zen.spamhaus.org",
            Policy,
        ),
        ("450 4.7.1 <someone@example.com>: Recipient address rejected: Greylisted", Policy),
        ("450 4.1.2 <someone@nowhere.example>: Recipient address rejected: Domain not found", Dns),
        ("554 5.7.1 <someone@example.com>: Relay access denied", Policy),
        ("504 5.5.2 <localhost>: Helo command rejected: need fully-qualified hostname", Protocol),
        ("552 5.3.4 Message size exceeds fixed limit", Other),
        ("556 5.1.10 Recipient address has null MX", Dns),
    ]);
}

#[test]
fn exim() {
    check(&[
        ("550 Unrouteable address", InvalidRecipient),
        ("550 No Such User Here", InvalidRecipient),
        ("550 Administrative prohibition", Policy),
        ("550 rejected because 192.0.2.1 is in a black list at zen.spamhaus.org", Policy),
        ("452 Mailbox full", MailboxFull),
        ("421 Too many concurrent SMTP connections; please try again later.", Policy),
        ("554 SMTP synchronization error", Protocol),
        ("550 Sender verify failed", Policy),
    ]);
}

#[test]
fn our_own_outcomes_and_bare_codes() {
    check(&[
        ("451 4.4.1 no mail exchanger could be reached", Other),
        ("550 5.1.2 the recipient domain does not accept mail", Dns),
        ("550 5.4.4 no usable mail exchanger", Dns),
        ("451 4.7.5 the TLS handshake with the mail exchanger failed", Tls),
        ("550", Other),
        ("552 Requested mail action aborted: exceeded storage allocation", MailboxFull),
        ("500 what?", Protocol),
        ("", Other),
        ("554 5.6.0 Content conversion not permitted", Other),
    ]);
}

#[test]
fn only_invalid_recipients_suppress() {
    for class in BounceClass::ALL {
        assert_eq!(class.suppresses(), class == InvalidRecipient, "{}", class.as_str());
    }
}

/// Throttling answers as the providers document them: each pauses its provider group and is
/// classed `policy`, which never suppresses.
const THROTTLES: &[&str] = &[
    "421-4.7.28 [192.0.2.1] Our system has detected an unusual rate of unsolicited mail \
     originating from your IP address. To protect our users from spam, mail sent from your IP \
     address has been temporarily rate limited. Please visit \
     https://support.google.com/mail/?p=UnsolicitedRateLimitError to review our Bulk Email \
     Senders Guidelines.",
    "421-4.7.0 Try again later, closing connection. (EHLO)",
    "451 4.7.500 Server busy. Please try again later from [192.0.2.1]. (S77714) \
     [DM6NAM12FT012.eop-nam12.prod.protection.outlook.com]",
    "421 4.3.2 The maximum number of concurrent server connections has exceeded a limit, \
     closing transmission channel",
    "451 4.7.650 The mail server [192.0.2.1] has been temporarily rate limited due to IP \
     reputation.",
    "421 4.7.0 [TSS04] Messages from 192.0.2.1 temporarily deferred due to unexpected volume or \
     user complaints - 4.16.55.1; see https://postmaster.yahooinc.com/error-codes",
    "450 4.2.1 The user you are trying to contact is receiving mail at a rate that prevents \
     additional messages from being delivered.",
    "421 Too many concurrent SMTP connections; please try again later.",
    "450 4.7.1 Client host rejected: too many connections from your host",
    "451 Ratelimit exceeded",
    "452 4.2.2 throttled: try later",
    "421 4.4.2 mx.example.net Error: timeout exceeded",
];

#[test]
fn throttling_answers_are_policy_and_pause() {
    for reply in THROTTLES {
        assert!(super::is_throttle(reply), "pauses: {reply}");
        assert_eq!(classify(reply), Policy, "{reply}");
        assert!(!classify(reply).suppresses(), "{reply}");
    }
}

#[test]
fn other_temporary_answers_do_not_pause() {
    for (reply, class) in [
        ("452 4.5.3 Too many recipients", Protocol),
        ("452 4.2.2 The email account that you tried to reach is over quota.", MailboxFull),
        ("451 4.3.0 generate failed, separate issue", Other),
        ("451 4.4.1 no mail exchanger could be reached", Other),
        ("450 4.7.1 <someone@example.com>: Recipient address rejected: Greylisted", Policy),
        ("550 5.7.1 rate limited (a 5xx is a bounce, not a pause)", Policy),
        ("250 2.0.0 OK", Other),
    ] {
        assert!(!super::is_throttle(reply), "does not pause: {reply}");
        assert_eq!(classify(reply), class, "{reply}");
    }
}
