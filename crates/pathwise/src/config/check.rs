//! What `--check` shares between the daemon, the oracle and the booster gateway: finding the
//! line and the field of a value in a TOML file, and reporting a check.
//!
//! A check reports every error it can find. TOML syntax errors are all reported (the parser
//! recovers); a value of the wrong type or an unknown key stops the deserialization of the
//! section it is in, so each section reports its first such error; checks after parsing are
//! independent of each other (per interface, per LSP, per policy) and all report.

use super::ConfigError;
use std::ops::Range;
use toml::Spanned;
use toml::de::{DeTable, DeValue};

/// A TOML document kept to locate fields in it.
#[derive(Debug)]
pub struct Document<'a> {
    text: &'a str,
    root: Option<DeTable<'a>>,
}

impl<'a> Document<'a> {
    /// Parse `text`; in a document with syntax errors, what the parser recovered.
    pub fn parse(text: &'a str) -> Document<'a> {
        Document {
            text,
            root: Some(DeTable::parse_recoverable(text).0.into_inner()),
        }
    }

    /// The 1-based line of `offset`.
    pub fn line_of(&self, offset: usize) -> usize {
        super::line_of(self.text, offset)
    }

    /// The span of the field at the dotted `path` (`policy[1].chain`): its key where it has one.
    pub fn span_of(&self, path: &str) -> Option<Range<usize>> {
        let mut table = self.root.as_ref()?;
        let mut found = None;
        let mut parts = path.split('.').peekable();
        while let Some(part) = parts.next() {
            let (name, index) = match part.split_once('[') {
                Some((n, i)) => (n, i.trim_end_matches(']').parse::<usize>().ok()),
                None => (part, None),
            };
            let (key, value) = table.iter().find(|(k, _)| k.get_ref() == name)?;
            let mut value = value;
            found = Some(key.span());
            if let Some(i) = index {
                let DeValue::Array(items) = value.get_ref() else {
                    return found;
                };
                let Some(item) = items.get(i) else {
                    return found;
                };
                value = item;
                if !value.span().is_empty() {
                    found = Some(value.span());
                }
            }
            if parts.peek().is_none() {
                break;
            }
            match value.get_ref() {
                DeValue::Table(t) => table = t,
                _ => return found,
            }
        }
        found
    }

    /// The keys of the table at `path` (`policy[0]`), with their spans.
    pub fn keys_of(&self, path: &str) -> Vec<(String, Range<usize>)> {
        let mut table = self.root.as_ref();
        for part in path.split('.').filter(|p| !p.is_empty()) {
            let (name, index) = match part.split_once('[') {
                Some((n, i)) => (n, i.trim_end_matches(']').parse::<usize>().ok()),
                None => (part, None),
            };
            let value = table.and_then(|t| t.iter().find(|(k, _)| k.get_ref() == name));
            let mut value = value.map(|(_, v)| v);
            if let Some(i) = index {
                value = match value.map(Spanned::get_ref) {
                    Some(DeValue::Array(items)) => items.get(i),
                    _ => None,
                };
            }
            table = match value.map(Spanned::get_ref) {
                Some(DeValue::Table(t)) => Some(t),
                _ => None,
            };
        }
        table.map_or_else(Vec::new, |t| {
            t.iter()
                .map(|(k, _)| (k.get_ref().to_string(), k.span()))
                .collect()
        })
    }

    /// The 1-based line of the field at `path`; 0 when it is not in the file (a default).
    pub fn line_of_field(&self, path: &str) -> usize {
        self.span_of(path).map_or(0, |s| self.line_of(s.start))
    }

    /// The dotted path of the key or value at `offset`, if any.
    pub fn field_at(&self, offset: usize) -> Option<String> {
        let mut best = None;
        walk_table(self.root.as_ref()?, "", offset, &mut best);
        best.map(|(_, path)| path)
    }
}

/// Find the narrowest key or value span holding `offset`. Tables of a document need not be
/// contiguous (`[a]`, then `[b]`, then `[a.c]`), so every table is searched.
fn walk_table(t: &DeTable<'_>, prefix: &str, offset: usize, best: &mut Option<(usize, String)>) {
    for (k, v) in t {
        let path = if prefix.is_empty() {
            k.get_ref().to_string()
        } else {
            format!("{prefix}.{}", k.get_ref())
        };
        consider(&k.span(), &path, offset, best);
        walk_value(v, &path, offset, best);
    }
}

fn walk_value(
    v: &Spanned<DeValue<'_>>,
    path: &str,
    offset: usize,
    best: &mut Option<(usize, String)>,
) {
    match v.get_ref() {
        DeValue::Table(t) => {
            consider(&v.span(), path, offset, best);
            walk_table(t, path, offset, best);
        }
        DeValue::Array(items) => {
            consider(&v.span(), path, offset, best);
            for (i, item) in items.iter().enumerate() {
                walk_value(item, &format!("{path}[{i}]"), offset, best);
            }
        }
        _ => consider(&v.span(), path, offset, best),
    }
}

fn consider(span: &Range<usize>, path: &str, offset: usize, best: &mut Option<(usize, String)>) {
    let holds = span.contains(&offset) || (span.is_empty() && span.start == offset);
    if holds && best.as_ref().is_none_or(|(len, _)| span.len() <= *len) {
        *best = Some((span.len(), path.to_string()));
    }
}

/// A TOML parse or deserialization error of `file`, with its line and the field it is in
/// (`-` when it is in none, e.g. a syntax error between tables).
pub fn toml_error(file: &str, text: &str, e: &toml::de::Error) -> ConfigError {
    let span = e.span();
    let field = span
        .as_ref()
        .and_then(|s| Document::parse(text).field_at(s.start))
        .unwrap_or_else(|| "-".into());
    ConfigError {
        file: file.into(),
        line: span.map_or(0, |s| super::line_of(text, s.start)),
        field,
        message: e.message().trim_end().to_string(),
    }
}

/// The outcome of `--check`.
#[derive(Debug, Default)]
pub struct CheckReport {
    /// The file checked.
    pub file: String,
    /// Every error found.
    pub errors: Vec<ConfigError>,
    /// Checks that could not run here, each with the reason.
    pub skipped: Vec<String>,
    /// What the file configures, in a few words (when it is valid).
    pub summary: String,
}

impl CheckReport {
    /// Print the report — errors and skipped checks on standard error, one line each, sorted
    /// by line; the one-line summary on standard output — and fail when there are errors.
    pub fn finish(mut self) -> anyhow::Result<()> {
        self.errors.sort_by_key(|e| e.line);
        for e in &self.errors {
            eprintln!("{e}");
        }
        for s in &self.skipped {
            eprintln!("{}: not checked: {s}", self.file);
        }
        match self.errors.len() {
            0 => {
                println!("{}: OK: {}", self.file, self.summary);
                Ok(())
            }
            1 => anyhow::bail!("{}: 1 error", self.file),
            n => anyhow::bail!("{}: {n} errors", self.file),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const TEXT: &str = "top = 1\n[rsvp]\nrefresh = \"5s\"\n[[rsvp.interface]]\nname = \"a\"\n\
                        [[rsvp.interface]]\nname = \"b\"\nhello = { interval = \"1s\" }\n\
                        [gist]\ninterfaces = [\"x\", \"y\"]\n";

    #[test]
    fn fields_are_found_by_path_and_by_offset() {
        let d = Document::parse(TEXT);
        assert_eq!(d.line_of_field("top"), 1);
        assert_eq!(d.line_of_field("rsvp.refresh"), 3);
        assert_eq!(d.line_of_field("rsvp.interface[1].name"), 7);
        assert_eq!(d.line_of_field("rsvp.interface[1].hello.interval"), 8);
        assert_eq!(d.line_of_field("gist.interfaces"), 10);
        assert_eq!(d.line_of_field("gist.nothing"), 0);
        let keys: Vec<String> = d
            .keys_of("rsvp.interface[1]")
            .into_iter()
            .map(|k| k.0)
            .collect();
        assert_eq!(keys, ["hello", "name"]);
        assert!(d.keys_of("rsvp.interface[2]").is_empty());
        let at = |s: &str| d.field_at(TEXT.find(s).unwrap()).unwrap();
        assert_eq!(at("\"5s\""), "rsvp.refresh");
        assert_eq!(at("\"b\""), "rsvp.interface[1].name");
        assert_eq!(at("\"1s\""), "rsvp.interface[1].hello.interval");
        assert_eq!(at("\"y\""), "gist.interfaces[1]");
    }
}
