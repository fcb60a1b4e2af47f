//! The reference `benches/ratios.sh` holds the API's read path against: hyper 1 on the same tokio
//! runtime shape as `edgemail serve` (multi-threaded, one worker per core), answering every
//! request with one fixed JSON body: a ten-mailbox listing as `benches/load.sh` gets it, with the
//! same fields and so the same size (2,034 bytes). No routing, no store, no
//! auth: what is left is the cost of HTTP itself on this machine.
//!   cargo run --release --example bare-hyper -- 127.0.0.1:0
//! Prints `listening <addr>` once it accepts connections.

use std::convert::Infallible;

use bytes::Bytes;
use http_body_util::Full;
use hyper::server::conn::http1;
use hyper::{Request, Response, body::Incoming, header, service::service_fn};
use hyper_util::rt::TokioIo;

async fn answer(body: Bytes, _req: Request<Incoming>) -> Result<Response<Full<Bytes>>, Infallible> {
    let mut response = Response::new(Full::new(body));
    response
        .headers_mut()
        .insert(header::CONTENT_TYPE, header::HeaderValue::from_static("application/json"));
    Ok(response)
}

fn listing() -> Bytes {
    let items: Vec<String> = (1..=10)
        .map(|i| {
            format!(
                r#"{{"address":"user{i}@load.test","localPart":"user{i}","domain":"load.test","displayName":"User {i}","createdAt":1764000000000,"dailyLimit":null,"minGapMs":null,"quotaBytes":null,"forwardTo":[],"keepCopy":true}}"#
            )
        })
        .collect();
    Bytes::from(format!("[{}]", items.join(",")))
}

#[tokio::main]
async fn main() -> std::io::Result<()> {
    let addr = std::env::args().nth(1).unwrap_or_else(|| "127.0.0.1:0".to_owned());
    let listener = tokio::net::TcpListener::bind(&addr).await?;
    println!("listening {}", listener.local_addr()?);
    let body = listing();
    loop {
        let (stream, _) = listener.accept().await?;
        stream.set_nodelay(true)?;
        let body = body.clone();
        tokio::spawn(async move {
            let service = service_fn(move |req| answer(body.clone(), req));
            // A client that goes away mid-request is not the reference's concern.
            let _ = http1::Builder::new().serve_connection(TokioIo::new(stream), service).await;
        });
    }
}
