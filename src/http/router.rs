//! Method-aware routing on matchit: one matchit tree per method, so a path that exists under
//! another method answers 405 with `Allow`, and a path that exists nowhere answers 404.

use std::future::Future;
use std::pin::Pin;

use hyper::Method;

use super::reply::Reply;
use super::request::Ctx;
use crate::error::{Error, Result};

pub type Handler = fn(Ctx) -> Pin<Box<dyn Future<Output = Result<Reply>> + Send>>;

/// Who may call a route.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Access {
    /// No key (public tools, health, the API description).
    Public,
    /// A domain-scoped key; an org-wide key gets 403.
    Domain,
    /// Any key: analytics.
    Analytics,
    /// No key, any body type, the request headers given: links followed from messages
    /// (tracking, unsubscribe forms) and the documents mail clients and MTAs fetch (autoconfig,
    /// Autodiscover, MTA-STS policies: they read the Host header).
    Link,
    /// No key, rate limited per client IP: the public tools.
    Tool,
    /// The metrics: open, or with `metrics.token` set, that token as a bearer token.
    Metrics,
    /// A dashboard page: no key, HTML forms; the page checks its own session cookie and CSRF
    /// token, so it receives the request headers.
    Page,
}

pub struct Route {
    pub method: Method,
    pub path: &'static str,
    pub access: Access,
    pub handler: Handler,
}

/// Wraps an `async fn(Ctx) -> Result<Reply>` as a `Handler`.
#[macro_export]
macro_rules! handler {
    ($f:path) => {
        |ctx| Box::pin($f(ctx))
    };
}

pub struct Router {
    trees: Vec<(Method, matchit::Router<usize>)>,
    routes: Vec<Route>,
}

/// A matched route and its decoded path parameters.
pub struct Matched<'r> {
    pub route: &'r Route,
    pub params: Vec<(&'static str, String)>,
}

impl Router {
    /// Builds the router; a malformed or duplicated path is a programming error, reported here.
    pub fn new(routes: Vec<Route>) -> std::result::Result<Router, String> {
        let mut trees: Vec<(Method, matchit::Router<usize>)> = Vec::new();
        for (i, route) in routes.iter().enumerate() {
            let tree = match trees.iter_mut().position(|(m, _)| *m == route.method) {
                Some(pos) => &mut trees[pos].1,
                None => {
                    trees.push((route.method.clone(), matchit::Router::new()));
                    let last = trees.len() - 1;
                    &mut trees[last].1
                }
            };
            tree.insert(route.path, i)
                .map_err(|e| format!("route {} {}: {e}", route.method, route.path))?;
        }
        Ok(Router { trees, routes })
    }

    pub fn routes(&self) -> &[Route] {
        &self.routes
    }

    /// The template of the link route `path` falls under (it starts with the route's fixed part),
    /// also when no route matches it: a mistyped method or a mangled link (a trailing slash or
    /// segment) still carries a token, which must not reach the log.
    pub fn link_template(&self, path: &str) -> Option<&'static str> {
        self.routes
            .iter()
            .filter(|r| r.access == Access::Link)
            .find(|r| path.starts_with(r.path.split('{').next().unwrap_or(r.path)))
            .map(|r| r.path)
    }

    pub fn find(&self, method: &Method, path: &str) -> Result<Matched<'_>> {
        // HEAD is answered like GET; hyper leaves the body out.
        let lookup = if method == Method::HEAD { &Method::GET } else { method };
        if let Some((_, tree)) = self.trees.iter().find(|(m, _)| m == lookup)
            && let Ok(found) = tree.at(path)
        {
            let route = &self.routes[*found.value];
            let params = found
                .params
                .iter()
                .map(|(k, v)| (static_name(route.path, k), super::request::percent_decode(v)))
                .collect();
            return Ok(Matched { route, params });
        }
        let exists =
            |m: &Method| self.trees.iter().any(|(tm, tree)| tm == m && tree.at(path).is_ok());
        let mut allow: Vec<&'static str> = Vec::new();
        for (m, name) in CANONICAL {
            if exists(&m) || (m == Method::HEAD && exists(&Method::GET)) {
                allow.push(name);
            }
        }
        if allow.is_empty() {
            return Err(Error::NotFound(format!("no route for {path}")));
        }
        Err(Error::MethodNotAllowed(allow))
    }
}

/// The parameter name as a `'static` slice of the route's own path.
fn static_name(path: &'static str, name: &str) -> &'static str {
    let needle = format!("{{{name}}}");
    path.find(&needle).map_or("", |at| &path[at + 1..at + 1 + name.len()])
}

/// The methods routes use, in the order `Allow` lists them.
const CANONICAL: [(Method, &str); 6] = [
    (Method::GET, "GET"),
    (Method::HEAD, "HEAD"),
    (Method::POST, "POST"),
    (Method::PUT, "PUT"),
    (Method::PATCH, "PATCH"),
    (Method::DELETE, "DELETE"),
];

#[cfg(test)]
mod tests {
    use super::*;

    async fn nothing(_: Ctx) -> Result<Reply> {
        Err(Error::internal("not called"))
    }

    fn router() -> Router {
        let route = |method, path| Route {
            method,
            path,
            access: Access::Public,
            handler: handler!(nothing),
        };
        Router::new(vec![
            route(Method::GET, "/v1/things"),
            route(Method::POST, "/v1/things"),
            route(Method::DELETE, "/v1/things/{id}"),
        ])
        .expect("valid routes") // ok: test
    }

    #[test]
    fn matches_and_decodes_parameters() {
        let r = router();
        let Ok(m) = r.find(&Method::DELETE, "/v1/things/a%40b.com") else {
            panic!("expected a match");
        };
        assert_eq!(m.params, vec![("id", "a@b.com".to_owned())]);
    }

    #[test]
    fn link_paths_are_known_by_their_template_whatever_follows() {
        let link = Route {
            method: Method::GET,
            path: "/t/o/{token}",
            access: Access::Link,
            handler: handler!(nothing),
        };
        let r = Router::new(vec![link]).expect("valid routes"); // ok: test
        for path in ["/t/o/abc", "/t/o/abc/", "/t/o/abc/more"] {
            assert_eq!(r.link_template(path), Some("/t/o/{token}"), "{path}");
        }
        assert_eq!(r.link_template("/t/x/abc"), None);
        assert_eq!(router().link_template("/v1/things"), None, "not a link route");
    }

    #[test]
    fn wrong_method_lists_allowed_ones() {
        let r = router();
        match r.find(&Method::PATCH, "/v1/things") {
            Err(Error::MethodNotAllowed(allow)) => assert_eq!(allow, ["GET", "HEAD", "POST"]),
            _ => panic!("expected 405"),
        }
        assert!(matches!(r.find(&Method::GET, "/nope"), Err(Error::NotFound(_))));
    }
}
