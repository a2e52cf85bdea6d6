//! An ALTO client for any server: HTTP/1.1 over hyper's client connection (one connection per
//! request for the CLI; [`Connection`] keeps one open for the benchmark), `https` with rustls,
//! basic authentication, and a server-sent event reader for update streams.
//!
//! hyper 1 (already under axum) rather than reqwest: the client needs one connection at a time,
//! no redirects, cookies, proxies or pooling, and hyper's `client::conn` does exactly that
//! without another stack in the build.

use super::tls;
use anyhow::{Context as _, bail};
use axum::http::header::{ACCEPT, AUTHORIZATION, CONTENT_TYPE, HOST};
use axum::http::{Method, Request, StatusCode};
use base64::Engine as _;
use bytes::Bytes;
use http_body_util::{BodyExt as _, Full};
use hyper::body::Incoming;
use hyper_util::rt::TokioIo;
use pathwise_oracle::alto;
use serde_json::Value;
use std::path::Path;
use tokio::io::{AsyncRead, AsyncWrite};
use tokio::net::TcpStream;

/// An `http` or `https` URL, split.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct HttpUrl {
    /// Whether it is `https`.
    pub tls: bool,
    /// Host as written (an IPv6 address in brackets).
    pub host: String,
    /// Port (default 80 or 443).
    pub port: u16,
    /// Path and query, starting with `/`.
    pub path: String,
}

impl HttpUrl {
    /// Parse `http://host[:port][/path]` or `https://…`.
    pub fn parse(url: &str) -> anyhow::Result<HttpUrl> {
        let (tls, rest) = if let Some(r) = url.strip_prefix("http://") {
            (false, r)
        } else if let Some(r) = url.strip_prefix("https://") {
            (true, r)
        } else {
            bail!("{url}: not an http:// or https:// URL");
        };
        let (authority, path) = match rest.find('/') {
            Some(i) => (&rest[..i], &rest[i..]),
            None => (rest, "/"),
        };
        let authority = authority.rsplit('@').next().unwrap_or(authority);
        let (host, port) = if let Some(end) = authority.strip_prefix('[').and_then(|a| a.find(']'))
        {
            let host = &authority[..end + 2];
            let port = authority[end + 2..].strip_prefix(':');
            (host, port)
        } else {
            match authority.rsplit_once(':') {
                Some((h, p)) => (h, Some(p)),
                None => (authority, None),
            }
        };
        if host.is_empty() {
            bail!("{url}: no host");
        }
        let port = match port {
            Some(p) => p.parse().with_context(|| format!("{url}: bad port"))?,
            None if tls => 443,
            None => 80,
        };
        Ok(HttpUrl {
            tls,
            host: host.to_owned(),
            port,
            path: path.to_owned(),
        })
    }

    /// Resolve a URI reference from an IRD against this URL (RFC 3986 §5, for the forms IRDs
    /// use: absolute URLs, absolute paths, relative paths).
    pub fn join(&self, reference: &str) -> anyhow::Result<HttpUrl> {
        if reference.starts_with("http://") || reference.starts_with("https://") {
            return HttpUrl::parse(reference);
        }
        let path = if reference.starts_with('/') {
            reference.to_owned()
        } else {
            let dir = &self.path[..self.path.rfind('/').map_or(0, |i| i + 1)];
            format!("{dir}{reference}")
        };
        Ok(HttpUrl {
            path,
            ..self.clone()
        })
    }

    fn authority(&self) -> String {
        let default = if self.tls { 443 } else { 80 };
        if self.port == default {
            self.host.clone()
        } else {
            format!("{}:{}", self.host, self.port)
        }
    }
}

impl std::fmt::Display for HttpUrl {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let scheme = if self.tls { "https" } else { "http" };
        write!(f, "{scheme}://{}{}", self.authority(), self.path)
    }
}

trait Io: AsyncRead + AsyncWrite + Unpin + Send {}
impl<T: AsyncRead + AsyncWrite + Unpin + Send> Io for T {}

/// How to reach servers: TLS roots and credentials.
#[derive(Clone)]
pub struct Client {
    tls: Option<tokio_rustls::TlsConnector>,
    authorization: Option<String>,
}

impl std::fmt::Debug for Client {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Client")
            .field("tls", &self.tls.is_some())
            .field("authorization", &self.authorization.as_ref().map(|_| "…"))
            .finish()
    }
}

impl Client {
    /// A client trusting `cacert` (else the web PKI roots) for https, sending basic credentials
    /// `user` (`name:password`) if given.
    pub fn new(cacert: Option<&Path>, user: Option<&str>) -> anyhow::Result<Client> {
        Ok(Client {
            tls: Some(tls::connector(cacert)?),
            authorization: user.map(|u| {
                format!(
                    "Basic {}",
                    base64::engine::general_purpose::STANDARD.encode(u)
                )
            }),
        })
    }

    /// Open a connection to `url`'s server.
    pub async fn connect(&self, url: &HttpUrl) -> anyhow::Result<Connection> {
        let host = url.host.trim_start_matches('[').trim_end_matches(']');
        let tcp = TcpStream::connect((host, url.port))
            .await
            .with_context(|| format!("connecting to {}", url.authority()))?;
        let _ = tcp.set_nodelay(true);
        let io: Box<dyn Io> = if url.tls {
            let Some(connector) = &self.tls else {
                bail!("no TLS configuration");
            };
            Box::new(
                connector
                    .connect(tls::server_name(&url.host)?, tcp)
                    .await
                    .with_context(|| format!("TLS with {}", url.authority()))?,
            )
        } else {
            Box::new(tcp)
        };
        let (sender, conn) = hyper::client::conn::http1::handshake(TokioIo::new(io))
            .await
            .context("HTTP handshake")?;
        let driver = tokio::spawn(async move {
            let _ = conn.await;
        });
        Ok(Connection {
            sender,
            authority: url.authority(),
            authorization: self.authorization.clone(),
            _driver: DriverGuard(driver),
        })
    }

    /// GET a JSON resource; its media type and body.
    pub async fn get(&self, url: &HttpUrl, media: &str) -> anyhow::Result<(String, Value)> {
        let mut c = self.connect(url).await?;
        let r = c
            .request(Method::GET, &url.path, None, media, Bytes::new())
            .await?;
        json_body(url, r).await
    }

    /// POST a JSON body of media type `input`; the response's media type and body.
    pub async fn post(
        &self,
        url: &HttpUrl,
        input: &str,
        media: &str,
        body: &Value,
    ) -> anyhow::Result<(String, Value)> {
        let mut c = self.connect(url).await?;
        let r = c
            .request(
                Method::POST,
                &url.path,
                Some(input),
                media,
                Bytes::from(body.to_string()),
            )
            .await?;
        json_body(url, r).await
    }

    /// Open an update stream (RFC 8895) at `url` with `body`, and call `on_event(event, data)`
    /// for each event until it returns false or the server closes the stream.
    pub async fn watch(
        &self,
        url: &HttpUrl,
        body: &Value,
        mut on_event: impl FnMut(&str, &str) -> bool,
    ) -> anyhow::Result<()> {
        let mut c = self.connect(url).await?;
        let r = c
            .request(
                Method::POST,
                &url.path,
                Some(alto::UPDATE_STREAM_PARAMS),
                &format!("{},{}", alto::EVENT_STREAM, alto::ERROR_MEDIA_TYPE),
                Bytes::from(body.to_string()),
            )
            .await?;
        if r.status() != StatusCode::OK || media_type(&r) != alto::EVENT_STREAM {
            json_body(url, r).await?;
            bail!("{url}: not an event stream");
        }
        let mut body = r.into_body();
        let mut reader = SseReader::default();
        while let Some(frame) = body.frame().await {
            let frame = frame.context("reading the stream")?;
            let Some(data) = frame.data_ref() else {
                continue;
            };
            for (event, data) in reader.push(data) {
                if !on_event(&event, &data) {
                    return Ok(());
                }
            }
        }
        Ok(())
    }
}

/// Aborts the connection's driver task when the connection goes.
#[derive(Debug)]
struct DriverGuard(tokio::task::JoinHandle<()>);

impl Drop for DriverGuard {
    fn drop(&mut self) {
        self.0.abort();
    }
}

/// One HTTP/1.1 connection, requests one after the other (keep-alive).
#[derive(Debug)]
pub struct Connection {
    sender: hyper::client::conn::http1::SendRequest<Full<Bytes>>,
    authority: String,
    authorization: Option<String>,
    _driver: DriverGuard,
}

impl Connection {
    /// Send one request and wait for the response head.
    pub async fn request(
        &mut self,
        method: Method,
        path: &str,
        content_type: Option<&str>,
        accept: &str,
        body: Bytes,
    ) -> anyhow::Result<hyper::Response<Incoming>> {
        let mut b = Request::builder()
            .method(method)
            .uri(path)
            .header(HOST, &self.authority)
            .header(ACCEPT, format!("{accept},{}", alto::ERROR_MEDIA_TYPE));
        if let Some(ct) = content_type {
            b = b.header(CONTENT_TYPE, ct);
        }
        if let Some(a) = &self.authorization {
            b = b.header(AUTHORIZATION, a);
        }
        self.sender.ready().await.context("connection closed")?;
        Ok(self.sender.send_request(b.body(Full::new(body))?).await?)
    }
}

fn media_type<B>(r: &hyper::Response<B>) -> String {
    r.headers()
        .get(CONTENT_TYPE)
        .and_then(|v| v.to_str().ok())
        .and_then(|v| v.split(';').next())
        .unwrap_or("")
        .trim()
        .to_ascii_lowercase()
}

/// A response's media type and JSON body; an error (with the ALTO error's fields) unless 2xx.
pub async fn json_body(
    url: &HttpUrl,
    r: hyper::Response<Incoming>,
) -> anyhow::Result<(String, Value)> {
    let status = r.status();
    let media = media_type(&r);
    let bytes = r.into_body().collect().await?.to_bytes();
    if !status.is_success() {
        if media == alto::ERROR_MEDIA_TYPE
            && let Ok(v) = serde_json::from_slice::<Value>(&bytes)
        {
            let m = &v["meta"];
            let mut msg = format!(
                "{url}: HTTP {status}: {}",
                m["code"].as_str().unwrap_or("?")
            );
            for k in ["field", "value", "syntax-error"] {
                if let Some(s) = m[k].as_str() {
                    msg.push_str(&format!(" {k}={s:?}"));
                }
            }
            bail!(msg);
        }
        bail!(
            "{url}: HTTP {status}: {}",
            String::from_utf8_lossy(&bytes).trim()
        );
    }
    let v = serde_json::from_slice(&bytes).with_context(|| format!("{url}: not JSON"))?;
    Ok((media, v))
}

/// Splits a server-sent event stream (the WHATWG "event stream" format) into (event, data).
#[derive(Debug, Default)]
pub struct SseReader {
    buf: Vec<u8>,
    event: String,
    data: String,
}

impl SseReader {
    /// Feed bytes; the events they complete.
    pub fn push(&mut self, bytes: &[u8]) -> Vec<(String, String)> {
        self.buf.extend_from_slice(bytes);
        let mut out = Vec::new();
        while let Some(i) = self.buf.iter().position(|&b| b == b'\n') {
            let line: Vec<u8> = self.buf.drain(..=i).collect();
            let line = String::from_utf8_lossy(&line);
            let line = line.trim_end_matches(['\n', '\r']);
            if line.is_empty() {
                if !self.data.is_empty() || !self.event.is_empty() {
                    let data = self
                        .data
                        .strip_suffix('\n')
                        .unwrap_or(&self.data)
                        .to_owned();
                    out.push((std::mem::take(&mut self.event), data));
                    self.data.clear();
                }
                continue;
            }
            if line.starts_with(':') {
                continue;
            }
            let (field, value) = line.split_once(':').unwrap_or((line, ""));
            let value = value.strip_prefix(' ').unwrap_or(value);
            match field {
                "event" => self.event = value.to_owned(),
                "data" => {
                    self.data.push_str(value);
                    self.data.push('\n');
                }
                _ => {}
            }
        }
        out
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn urls_parse_and_join_as_rfc_3986_section_5_says() {
        let u = HttpUrl::parse("http://alto.example.com/directory").unwrap();
        assert_eq!(
            (u.tls, u.host.as_str(), u.port, u.path.as_str()),
            (false, "alto.example.com", 80, "/directory")
        );
        let u = HttpUrl::parse("https://[::1]:8443/alto").unwrap();
        assert_eq!((u.tls, u.host.as_str(), u.port), (true, "[::1]", 8443));
        assert_eq!(
            u.join("/alto/networkmap").unwrap().to_string(),
            "https://[::1]:8443/alto/networkmap"
        );
        assert_eq!(u.join("costmap").unwrap().path, "/costmap");
        let d = HttpUrl::parse("http://h:1/a/b").unwrap();
        assert_eq!(d.join("c/d").unwrap().path, "/a/c/d");
        assert_eq!(d.join("http://x/y").unwrap().host, "x");
        assert!(HttpUrl::parse("ftp://x").is_err());
        assert!(HttpUrl::parse("http://:80/").is_err());
        assert!(HttpUrl::parse("http://h:x/").is_err());
    }

    #[test]
    fn the_sse_reader_splits_events_across_chunks_and_skips_comments() {
        let mut r = SseReader::default();
        assert!(
            r.push(b": keep-alive\n\nevent: application/merge-patch+json,1\nda")
                .is_empty()
        );
        let ev = r.push(b"ta: {\"a\":1}\r\n\nevent: x\ndata: 1\ndata: 2\n\n");
        assert_eq!(
            ev,
            [
                (
                    "application/merge-patch+json,1".to_string(),
                    "{\"a\":1}".to_string()
                ),
                ("x".to_string(), "1\n2".to_string())
            ]
        );
    }
}
