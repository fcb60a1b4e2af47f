//! A posted HTML form (`application/x-www-form-urlencoded`).

use crate::http::request::query_pairs;

pub struct Form {
    pairs: Vec<(String, String)>,
}

impl Form {
    pub fn parse(body: &[u8]) -> Form {
        let text = String::from_utf8_lossy(body);
        let pairs = query_pairs(&text).map(|(k, v)| (k.into_owned(), v.into_owned())).collect();
        Form { pairs }
    }

    /// Every field as posted, in order.
    pub fn pairs(&self) -> &[(String, String)] {
        &self.pairs
    }

    /// The first value of a field.
    pub fn get(&self, name: &str) -> Option<&str> {
        self.pairs.iter().find(|(k, _)| k == name).map(|(_, v)| v.as_str())
    }

    /// The trimmed value of a field, empty when absent.
    pub fn text(&self, name: &str) -> String {
        self.get(name).unwrap_or("").trim().to_owned()
    }

    /// Every value of a field (checkboxes of one name).
    pub fn all(&self, name: &str) -> Vec<String> {
        self.pairs.iter().filter(|(k, _)| k == name).map(|(_, v)| v.clone()).collect()
    }
}
