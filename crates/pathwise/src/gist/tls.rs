//! TLS for GIST's messaging associations (RFC 5971 §5.7.3: TLS over TCP, its own MA profile):
//! rustls client and server configurations built from `[gist.tls]` (see
//! [`super::config`]).
//!
//! Peers are GIST nodes known by address, not by DNS name, so with `verify_peer` a certificate
//! is checked for a chain to `ca`, validity dates and key usage, but not for a name: any node
//! holding a certificate of the configured CA is a valid peer (RFC 5971 §8.2 leaves the
//! authorisation of peers to local policy). Both ends present their certificates; the server
//! requires the client's when `verify_peer` is on. Without `verify_peer`, TLS still encrypts
//! but accepts any certificate.

use super::config::TlsSection;
use crate::config::NodeConfig;
use rustls::client::danger::{HandshakeSignatureValid, ServerCertVerified, ServerCertVerifier};
use rustls::crypto::{CryptoProvider, WebPkiSupportedAlgorithms};
use rustls::pki_types::pem::PemObject;
use rustls::pki_types::{CertificateDer, PrivateKeyDer, ServerName, UnixTime};
use rustls::server::WebPkiClientVerifier;
use rustls::{
    CertificateError, ClientConfig, DigitallySignedStruct, Error, RootCertStore, ServerConfig,
    SignatureScheme,
};
use std::sync::Arc;
use toml::Spanned;

/// The TLS configurations of a node.
#[derive(Debug, Clone)]
pub struct TlsContext {
    /// For associations this node opens.
    pub client: Arc<ClientConfig>,
    /// For associations peers open.
    pub server: Arc<ServerConfig>,
    /// Whether peers' certificates are checked against the CA.
    pub verify_peer: bool,
}

fn provider() -> Arc<CryptoProvider> {
    Arc::new(rustls::crypto::ring::default_provider())
}

fn read_certs(
    node: &NodeConfig,
    path: &Spanned<String>,
    field: &str,
) -> anyhow::Result<Vec<CertificateDer<'static>>> {
    let err = |m: String| node.error_at(path.span(), field, m);
    let bytes = std::fs::read(path.get_ref())
        .map_err(|e| err(format!("cannot read {:?}: {e}", path.get_ref())))?;
    let certs = CertificateDer::pem_slice_iter(&bytes)
        .collect::<Result<Vec<_>, _>>()
        .map_err(|e| err(format!("{:?}: bad PEM: {e}", path.get_ref())))?;
    if certs.is_empty() {
        return Err(err(format!("{:?} holds no PEM CERTIFICATE", path.get_ref())).into());
    }
    Ok(certs)
}

impl TlsContext {
    /// Read the certificate, key and CA files; errors name the field's line.
    pub fn load(node: &NodeConfig, t: &TlsSection) -> anyhow::Result<TlsContext> {
        let chain = read_certs(node, &t.certificate, "gist.tls.certificate")?;
        let key_err = |m: String| node.error_at(t.key.span(), "gist.tls.key", m);
        let key_bytes = std::fs::read(t.key.get_ref())
            .map_err(|e| key_err(format!("cannot read {:?}: {e}", t.key.get_ref())))?;
        let key = PrivateKeyDer::from_pem_slice(&key_bytes)
            .map_err(|e| key_err(format!("{:?}: no PEM private key: {e}", t.key.get_ref())))?;
        let mut roots = RootCertStore::empty();
        if let Some(ca) = &t.ca {
            for c in read_certs(node, ca, "gist.tls.ca")? {
                roots.add(c).map_err(|e| {
                    node.error_at(ca.span(), "gist.tls.ca", format!("unusable CA: {e}"))
                })?;
            }
        }
        let roots = Arc::new(roots);
        let p = provider();
        let server_verifier: Arc<dyn ServerCertVerifier> = if t.verify_peer {
            Arc::new(CaOnly {
                inner: rustls::client::WebPkiServerVerifier::builder_with_provider(
                    roots.clone(),
                    p.clone(),
                )
                .build()?,
            })
        } else {
            Arc::new(AnyCertificate {
                algs: p.signature_verification_algorithms,
            })
        };
        let client = ClientConfig::builder_with_provider(p.clone())
            .with_safe_default_protocol_versions()?
            .dangerous()
            .with_custom_certificate_verifier(server_verifier)
            .with_client_auth_cert(chain.clone(), key.clone_key())
            .map_err(|e| key_err(format!("key does not fit the certificate: {e}")))?;
        let builder =
            ServerConfig::builder_with_provider(p.clone()).with_safe_default_protocol_versions()?;
        let builder = if t.verify_peer {
            builder.with_client_cert_verifier(
                WebPkiClientVerifier::builder_with_provider(roots, p).build()?,
            )
        } else {
            builder.with_no_client_auth()
        };
        let server = builder
            .with_single_cert(chain, key)
            .map_err(|e| key_err(format!("key does not fit the certificate: {e}")))?;
        Ok(TlsContext {
            client: Arc::new(client),
            server: Arc::new(server),
            verify_peer: t.verify_peer,
        })
    }
}

/// A server certificate must chain to the CA; its names are not checked (peers are addresses).
#[derive(Debug)]
struct CaOnly {
    inner: Arc<rustls::client::WebPkiServerVerifier>,
}

impl ServerCertVerifier for CaOnly {
    fn verify_server_cert(
        &self,
        end_entity: &CertificateDer<'_>,
        intermediates: &[CertificateDer<'_>],
        server_name: &ServerName<'_>,
        ocsp: &[u8],
        now: UnixTime,
    ) -> Result<ServerCertVerified, Error> {
        match self
            .inner
            .verify_server_cert(end_entity, intermediates, server_name, ocsp, now)
        {
            Err(Error::InvalidCertificate(
                CertificateError::NotValidForName | CertificateError::NotValidForNameContext { .. },
            )) => Ok(ServerCertVerified::assertion()),
            r => r,
        }
    }

    fn verify_tls12_signature(
        &self,
        message: &[u8],
        cert: &CertificateDer<'_>,
        dss: &DigitallySignedStruct,
    ) -> Result<HandshakeSignatureValid, Error> {
        self.inner.verify_tls12_signature(message, cert, dss)
    }

    fn verify_tls13_signature(
        &self,
        message: &[u8],
        cert: &CertificateDer<'_>,
        dss: &DigitallySignedStruct,
    ) -> Result<HandshakeSignatureValid, Error> {
        self.inner.verify_tls13_signature(message, cert, dss)
    }

    fn supported_verify_schemes(&self) -> Vec<SignatureScheme> {
        self.inner.supported_verify_schemes()
    }
}

/// `verify_peer = false`: any certificate (the handshake signatures are still checked).
#[derive(Debug)]
struct AnyCertificate {
    algs: WebPkiSupportedAlgorithms,
}

impl ServerCertVerifier for AnyCertificate {
    fn verify_server_cert(
        &self,
        _end_entity: &CertificateDer<'_>,
        _intermediates: &[CertificateDer<'_>],
        _server_name: &ServerName<'_>,
        _ocsp: &[u8],
        _now: UnixTime,
    ) -> Result<ServerCertVerified, Error> {
        Ok(ServerCertVerified::assertion())
    }

    fn verify_tls12_signature(
        &self,
        message: &[u8],
        cert: &CertificateDer<'_>,
        dss: &DigitallySignedStruct,
    ) -> Result<HandshakeSignatureValid, Error> {
        rustls::crypto::verify_tls12_signature(message, cert, dss, &self.algs)
    }

    fn verify_tls13_signature(
        &self,
        message: &[u8],
        cert: &CertificateDer<'_>,
        dss: &DigitallySignedStruct,
    ) -> Result<HandshakeSignatureValid, Error> {
        rustls::crypto::verify_tls13_signature(message, cert, dss, &self.algs)
    }

    fn supported_verify_schemes(&self) -> Vec<SignatureScheme> {
        self.algs.supported_schemes()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn config(dir: &std::path::Path, cert: &str, key: &str, ca: &str) -> NodeConfig {
        let text = format!(
            "[daemon]\nsocket = \"/tmp/x.sock\"\n\n[gist]\ninterfaces = [\"e0\"]\n\
             transports = [\"udp\", \"tls\"]\n\n[gist.tls]\ncertificate = {:?}\nkey = {:?}\n\
             ca = {:?}\n",
            dir.join(cert),
            dir.join(key),
            dir.join(ca)
        );
        NodeConfig::parse("node.toml", &text).unwrap()
    }

    fn load(c: &NodeConfig) -> anyhow::Result<TlsContext> {
        let g = c.gist.as_ref().unwrap();
        TlsContext::load(c, g.tls.as_ref().unwrap().get_ref())
    }

    fn scratch(name: &str) -> std::path::PathBuf {
        let d = std::env::temp_dir().join(format!("pw-gist-tls-{name}-{}", std::process::id()));
        std::fs::create_dir_all(&d).unwrap();
        d
    }

    #[test]
    fn missing_files_and_bad_pem_name_the_field_and_line() {
        let d = scratch("bad");
        std::fs::write(d.join("junk.pem"), "not a certificate\n").unwrap();
        std::fs::write(
            d.join("broken.pem"),
            "-----BEGIN CERTIFICATE-----\n!!!!\n-----END CERTIFICATE-----\n",
        )
        .unwrap();
        for (cert, key, ca, line, field) in [
            ("missing.pem", "k", "ca", 9, "gist.tls.certificate"),
            ("junk.pem", "k", "ca", 9, "gist.tls.certificate"),
            ("broken.pem", "k", "ca", 9, "gist.tls.certificate"),
        ] {
            let c = config(&d, cert, key, ca);
            let e = load(&c).unwrap_err();
            let e = e
                .downcast_ref::<crate::config::ConfigError>()
                .unwrap_or_else(|| panic!("{cert}: not a config error: {e}"));
            assert_eq!((e.line, e.field.as_str()), (line, field), "{cert}: {e}");
        }
        let _ = std::fs::remove_dir_all(&d);
    }

    #[test]
    fn loads_certificates_made_by_openssl() {
        if crate::netns::unavailable(&["openssl"]).is_some() {
            println!("openssl is not installed: skipped");
            return;
        }
        let d = scratch("good");
        crate::gist::chain::make_certs(&d, &[false; 5]).unwrap();
        let c = config(&d, "h1.pem", "h1.key", "ca.pem");
        let ctx = load(&c).unwrap();
        assert!(ctx.verify_peer);
        // A key that is not the certificate's, and a CA file that is missing.
        let c = config(&d, "h1.pem", "r1.key", "ca.pem");
        let e = load(&c).unwrap_err().to_string();
        assert!(e.contains("gist.tls.key"), "{e}");
        let c = config(&d, "h1.pem", "h1.key", "nope.pem");
        let e = load(&c).unwrap_err().to_string();
        assert!(e.contains("gist.tls.ca"), "{e}");
        let _ = std::fs::remove_dir_all(&d);
    }
}
