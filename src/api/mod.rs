//! The REST API: one module per resource, and the single route table the router and the OpenAPI
//! test both read.

pub mod aliases;
pub mod analytics;
pub mod autoconfig;
pub mod bounces;
pub mod certificates;
pub mod contacts;
pub mod contacts_import;
pub mod downloads;
pub mod emails;
pub mod enroll_contacts;
pub mod enroll_input;
pub mod enroll_skips;
pub mod folders;
pub mod health;
pub mod imports;
pub mod input;
pub mod mailboxes;
pub mod meta;
pub mod outreach_input;
pub mod paging;
pub mod passwords;
pub mod replies;
pub mod reports;
pub mod send;
pub mod send_fields;
pub mod sender_groups;
pub mod sequence_input;
pub mod sequence_view;
pub mod sequences;
pub mod sieve;
pub mod step_input;
pub mod suppressions;
pub mod tools;
pub mod tracking;
pub mod warmup;
pub mod webhooks;

use hyper::Method;

use crate::handler;
use crate::http::{Access, Route};

/// Every route the server answers. `schema/openapi.yaml` documents each of them (a test checks).
pub fn routes() -> Vec<Route> {
    use Access::{Analytics, Domain, Link, Metrics, Public, Tool};
    let r = |method, path, access, handler| Route { method, path, access, handler };
    vec![
        r(Method::GET, "/healthz", Public, handler!(meta::health)),
        r(Method::GET, "/readyz", Public, handler!(meta::ready)),
        r(Method::GET, "/metrics", Metrics, handler!(meta::metrics)),
        r(Method::GET, "/openapi.json", Public, handler!(meta::openapi_json)),
        r(Method::GET, "/api/openapi.yaml", Public, handler!(meta::openapi_yaml)),
        r(Method::GET, "/v1/mailboxes", Domain, handler!(mailboxes::list)),
        r(Method::POST, "/v1/mailboxes", Domain, handler!(mailboxes::create)),
        r(Method::GET, "/v1/mailboxes/{address}", Domain, handler!(mailboxes::get)),
        r(Method::PATCH, "/v1/mailboxes/{address}", Domain, handler!(mailboxes::update)),
        r(Method::DELETE, "/v1/mailboxes/{address}", Domain, handler!(mailboxes::delete)),
        r(Method::GET, "/v1/mailboxes/{address}/passwords", Domain, handler!(passwords::list)),
        r(Method::POST, "/v1/mailboxes/{address}/passwords", Domain, handler!(passwords::create)),
        r(
            Method::DELETE,
            "/v1/mailboxes/{address}/passwords/{id}",
            Domain,
            handler!(passwords::delete),
        ),
        r(Method::GET, "/v1/mailboxes/{address}/folders", Domain, handler!(folders::list)),
        r(Method::POST, "/v1/mailboxes/{address}/folders", Domain, handler!(folders::create)),
        r(
            Method::PATCH,
            "/v1/mailboxes/{address}/folders/{name}",
            Domain,
            handler!(folders::rename),
        ),
        r(
            Method::DELETE,
            "/v1/mailboxes/{address}/folders/{name}",
            Domain,
            handler!(folders::delete),
        ),
        r(Method::POST, "/v1/mailboxes/{address}/import", Domain, handler!(imports::import)),
        r(Method::GET, "/v1/aliases", Domain, handler!(aliases::list)),
        r(Method::POST, "/v1/aliases", Domain, handler!(aliases::create)),
        r(Method::GET, "/v1/aliases/{address}", Domain, handler!(aliases::get)),
        r(Method::PATCH, "/v1/aliases/{address}", Domain, handler!(aliases::update)),
        r(Method::DELETE, "/v1/aliases/{address}", Domain, handler!(aliases::delete)),
        r(Method::GET, "/v1/mailboxes/{address}/sieve", Domain, handler!(sieve::get)),
        r(Method::PUT, "/v1/mailboxes/{address}/sieve", Domain, handler!(sieve::put)),
        r(Method::DELETE, "/v1/mailboxes/{address}/sieve", Domain, handler!(sieve::delete)),
        r(Method::GET, "/v1/mailboxes/{address}/vacation", Domain, handler!(sieve::get_vacation)),
        r(Method::PUT, "/v1/mailboxes/{address}/vacation", Domain, handler!(sieve::put_vacation)),
        r(
            Method::DELETE,
            "/v1/mailboxes/{address}/vacation",
            Domain,
            handler!(sieve::delete_vacation),
        ),
        r(Method::GET, "/v1/sender-groups", Domain, handler!(sender_groups::list)),
        r(Method::POST, "/v1/sender-groups", Domain, handler!(sender_groups::create)),
        r(Method::PATCH, "/v1/sender-groups/{id}", Domain, handler!(sender_groups::update)),
        r(Method::DELETE, "/v1/sender-groups/{id}", Domain, handler!(sender_groups::delete)),
        r(Method::GET, "/v1/emails", Domain, handler!(emails::list)),
        r(Method::GET, "/v1/emails/{id}", Domain, handler!(emails::get)),
        r(Method::PATCH, "/v1/emails/{id}", Domain, handler!(emails::update)),
        r(Method::DELETE, "/v1/emails/{id}", Domain, handler!(emails::delete)),
        r(Method::POST, "/v1/emails/{id}/junk", Domain, handler!(emails::junk)),
        r(Method::POST, "/v1/emails/{id}/not-junk", Domain, handler!(emails::not_junk)),
        r(Method::GET, "/v1/emails/{id}/raw", Domain, handler!(downloads::raw)),
        r(
            Method::GET,
            "/v1/emails/{id}/attachments/{index}",
            Domain,
            handler!(downloads::attachment),
        ),
        r(Method::GET, "/v1/contacts", Domain, handler!(contacts::list)),
        r(Method::POST, "/v1/contacts", Domain, handler!(contacts::upsert)),
        r(Method::POST, "/v1/contacts/import", Domain, handler!(contacts_import::import)),
        r(Method::GET, "/v1/contacts/{id}", Domain, handler!(contacts::get)),
        r(Method::DELETE, "/v1/contacts/{id}", Domain, handler!(contacts::delete)),
        r(Method::POST, "/v1/send", Domain, handler!(send::send)),
        r(Method::GET, "/v1/sequences", Domain, handler!(sequences::list)),
        r(Method::POST, "/v1/sequences", Domain, handler!(sequences::create)),
        r(Method::GET, "/v1/sequences/{id}", Domain, handler!(sequences::get)),
        r(Method::PATCH, "/v1/sequences/{id}", Domain, handler!(sequences::update)),
        r(Method::DELETE, "/v1/sequences/{id}", Domain, handler!(sequences::delete)),
        r(Method::POST, "/v1/sequences/{id}/enroll", Domain, handler!(sequences::enroll)),
        r(Method::GET, "/v1/sequences/{id}/enrollments", Domain, handler!(sequences::enrollments)),
        r(
            Method::PATCH,
            "/v1/sequences/{id}/enrollments/{enrollmentId}",
            Domain,
            handler!(replies::label),
        ),
        r(Method::GET, "/v1/replies", Domain, handler!(replies::list)),
        r(Method::GET, "/v1/suppressions", Analytics, handler!(analytics::suppressions)),
        r(Method::POST, "/v1/suppressions", Domain, handler!(suppressions::create)),
        r(Method::DELETE, "/v1/suppressions/{email}", Domain, handler!(suppressions::delete)),
        r(Method::GET, "/v1/campaign-stats", Analytics, handler!(analytics::campaign_stats)),
        r(Method::GET, "/v1/bounces", Analytics, handler!(bounces::stats)),
        r(Method::GET, "/v1/domain-health", Analytics, handler!(health::domain_health)),
        r(Method::GET, "/v1/certificates", Analytics, handler!(certificates::list)),
        r(Method::GET, "/v1/dmarc-reports", Domain, handler!(reports::dmarc)),
        r(Method::GET, "/v1/tls-reports", Domain, handler!(reports::tls)),
        r(Method::GET, "/v1/warmup", Analytics, handler!(warmup::list)),
        r(Method::POST, "/v1/warmup", Domain, handler!(warmup::enroll)),
        r(Method::DELETE, "/v1/warmup/{address}", Domain, handler!(warmup::disable)),
        r(Method::GET, "/v1/webhooks", Domain, handler!(webhooks::list)),
        r(Method::POST, "/v1/webhooks", Domain, handler!(webhooks::create)),
        r(Method::GET, "/v1/webhooks/{id}", Domain, handler!(webhooks::get)),
        r(Method::PATCH, "/v1/webhooks/{id}", Domain, handler!(webhooks::update)),
        r(Method::DELETE, "/v1/webhooks/{id}", Domain, handler!(webhooks::delete)),
        r(
            Method::POST,
            "/v1/webhooks/{id}/rotate-secret",
            Domain,
            handler!(webhooks::rotate_secret),
        ),
        r(Method::POST, "/v1/webhooks/{id}/test", Domain, handler!(webhooks::test)),
        r(Method::GET, "/v1/webhooks/{id}/deliveries", Domain, handler!(webhooks::deliveries)),
        r(Method::POST, "/api/tools/generate-subject-lines", Tool, handler!(tools::subject_lines)),
        r(Method::POST, "/api/tools/validate-emails", Tool, handler!(tools::validate_emails)),
        r(
            Method::POST,
            "/api/tools/check-deliverability",
            Tool,
            handler!(health::check_deliverability),
        ),
        r(Method::GET, "/mail/config-v1.1.xml", Link, handler!(autoconfig::thunderbird)),
        r(
            Method::GET,
            "/.well-known/autoconfig/mail/config-v1.1.xml",
            Link,
            handler!(autoconfig::thunderbird),
        ),
        r(Method::POST, "/autodiscover/autodiscover.xml", Link, handler!(autoconfig::autodiscover)),
        r(Method::GET, "/.well-known/mta-sts.txt", Link, handler!(autoconfig::mta_sts)),
        r(
            Method::GET,
            "/v1/mailboxes/{address}/mobileconfig",
            Domain,
            handler!(autoconfig::mobileconfig),
        ),
        r(Method::GET, "/t/o/{token}", Link, handler!(tracking::open)),
        r(Method::GET, "/t/c/{token}", Link, handler!(tracking::click)),
        r(Method::GET, "/t/u/{token}", Link, handler!(tracking::unsubscribe_page)),
        r(Method::POST, "/t/u/{token}", Link, handler!(tracking::unsubscribe)),
    ]
}

/// Feeds arbitrary bytes to the parsing and validation of every request body type; the fuzz
/// target calls this. It must never panic.
pub fn parse_every_body(data: &[u8]) {
    let _ = mailboxes::parse_create(data, "example.com");
    let _ = mailboxes::parse_update(data);
    let _ = passwords::parse_create(data);
    let _ = aliases::parse_create(data, "example.com");
    let _ = aliases::parse_update(data);
    let _ = folders::parse_name(data);
    let _ = sieve::parse_sieve(data);
    let _ = sieve::parse_vacation(data, 0);
    let _ = emails::parse_patch(data);
    let _ = sender_groups::parse_create(data, "example.com");
    let _ = sender_groups::parse_update(data, "example.com");
    let _ = contacts::parse_upsert(data);
    let _ = contacts_import::parse_csv(data);
    let _ = replies::parse_label(data);
    let _ = suppressions::parse_create(data);
    let _ = send::parse(data, "example.com", 0);
    let _ = sequence_input::parse_create(data, "example.com");
    let _ = sequence_input::parse_update(data, "example.com");
    let _ = enroll_input::parse_enroll(data);
    let _ = tools::parse_subject_lines(data);
    let _ = tools::parse_validate(data);
    let _ = health::parse_check(data);
    let _ = warmup::parse_enroll(data, "example.com");
    let _ = webhooks::parse_create(data);
    let _ = webhooks::parse_update(data);
    let _ = imports::parse_mbox(data);
}
