//! HTTPS for the ALTO server and client (RFC 7285 §8.3.5: implementations MUST support the
//! "https" URI scheme and TLS): rustls through tokio-rustls, certificates and keys from PEM
//! files. The server's handshakes run in tasks of their own, so a slow or silent client does
//! not hold up the others; a failed handshake is counted and dropped.

use super::counters::{AltoCounters, Refusal};
use anyhow::Context as _;
use rustls::pki_types::pem::PemObject as _;
use rustls::pki_types::{CertificateDer, PrivateKeyDer, ServerName};
use std::net::SocketAddr;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Duration;
use tokio::net::{TcpListener, TcpStream};
use tokio::sync::mpsc;
use tokio_rustls::server::TlsStream;
use tokio_rustls::{TlsAcceptor, TlsConnector};

/// Most time a client gets to finish its TLS handshake.
const HANDSHAKE_TIMEOUT: Duration = Duration::from_secs(10);

/// The server's certificate chain and private key, PEM files.
#[derive(Clone, Debug)]
pub struct TlsFiles {
    /// The certificate chain (leaf first).
    pub cert: PathBuf,
    /// The private key (PKCS#8, PKCS#1 or SEC1).
    pub key: PathBuf,
}

fn provider() -> Arc<rustls::crypto::CryptoProvider> {
    Arc::new(rustls::crypto::ring::default_provider())
}

fn certs(path: &Path) -> anyhow::Result<Vec<CertificateDer<'static>>> {
    let certs: Vec<_> = CertificateDer::pem_file_iter(path)
        .with_context(|| format!("{}", path.display()))?
        .collect::<Result<_, _>>()
        .with_context(|| format!("{}: bad certificate", path.display()))?;
    if certs.is_empty() {
        anyhow::bail!("{}: no certificate in the file", path.display());
    }
    Ok(certs)
}

/// A TLS acceptor for `files` (HTTP/1.1 by ALPN).
pub fn acceptor(files: &TlsFiles) -> anyhow::Result<TlsAcceptor> {
    let chain = certs(&files.cert)?;
    let key = PrivateKeyDer::from_pem_file(&files.key)
        .with_context(|| format!("{}: no usable private key", files.key.display()))?;
    let mut config = rustls::ServerConfig::builder_with_provider(provider())
        .with_safe_default_protocol_versions()?
        .with_no_client_auth()
        .with_single_cert(chain, key)
        .context("alto: the certificate does not match the key")?;
    config.alpn_protocols = vec![b"http/1.1".to_vec()];
    Ok(TlsAcceptor::from(Arc::new(config)))
}

/// A TLS connector trusting `cacert` (PEM) or else the bundled web PKI roots.
pub fn connector(cacert: Option<&Path>) -> anyhow::Result<TlsConnector> {
    let mut roots = rustls::RootCertStore::empty();
    match cacert {
        Some(p) => {
            for c in certs(p)? {
                roots
                    .add(c)
                    .with_context(|| format!("{}: unusable CA certificate", p.display()))?;
            }
        }
        None => roots.extend(webpki_roots::TLS_SERVER_ROOTS.iter().cloned()),
    }
    let mut config = rustls::ClientConfig::builder_with_provider(provider())
        .with_safe_default_protocol_versions()?
        .with_root_certificates(roots)
        .with_no_client_auth();
    config.alpn_protocols = vec![b"http/1.1".to_vec()];
    Ok(TlsConnector::from(Arc::new(config)))
}

/// The server name to verify for `host` (a DNS name or an IP address).
pub fn server_name(host: &str) -> anyhow::Result<ServerName<'static>> {
    let host = host.trim_start_matches('[').trim_end_matches(']');
    ServerName::try_from(host.to_owned()).with_context(|| format!("bad TLS server name {host}"))
}

/// A listener yielding connections whose TLS handshake is done.
#[derive(Debug)]
pub struct TlsListener {
    ready: mpsc::Receiver<(TlsStream<TcpStream>, SocketAddr)>,
    _accept: tokio::task::JoinHandle<()>,
}

impl TlsListener {
    /// Accept on `tcp` and shake hands in the background.
    pub fn new(tcp: TcpListener, acceptor: TlsAcceptor, counters: Arc<AltoCounters>) -> Self {
        let (tx, ready) = mpsc::channel(64);
        let accept = tokio::spawn(async move {
            loop {
                let (stream, peer) = match tcp.accept().await {
                    Ok(c) => c,
                    Err(e) => {
                        tracing::debug!(error = %e, "alto: accept");
                        counters.refused(Refusal::BadConnection);
                        tokio::time::sleep(Duration::from_millis(50)).await;
                        continue;
                    }
                };
                let _ = stream.set_nodelay(true);
                let (acceptor, tx, counters) = (acceptor.clone(), tx.clone(), counters.clone());
                tokio::spawn(async move {
                    match tokio::time::timeout(HANDSHAKE_TIMEOUT, acceptor.accept(stream)).await {
                        Ok(Ok(tls)) => {
                            let _ = tx.send((tls, peer)).await;
                        }
                        Ok(Err(e)) => {
                            tracing::debug!(%peer, error = %e, "alto: TLS handshake failed");
                            counters.refused(Refusal::BadConnection);
                        }
                        Err(_) => counters.refused(Refusal::BadConnection),
                    }
                });
            }
        });
        TlsListener {
            ready,
            _accept: accept,
        }
    }
}

impl Drop for TlsListener {
    fn drop(&mut self) {
        self._accept.abort();
    }
}

impl axum::serve::Listener for TlsListener {
    type Io = TlsStream<TcpStream>;
    type Addr = SocketAddr;

    async fn accept(&mut self) -> (Self::Io, Self::Addr) {
        match self.ready.recv().await {
            Some(c) => c,
            // The accept task only ends when the listener is dropped.
            None => std::future::pending().await,
        }
    }

    fn local_addr(&self) -> std::io::Result<Self::Addr> {
        Err(std::io::Error::other("a TLS listener"))
    }
}
