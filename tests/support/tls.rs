//! TLS for the test doubles: a certificate authority made at test time (its PEM file in a
//! temporary folder, to hand to agentls as `SSL_CERT_FILE` or `[network] ca_file`) and a server
//! certificate it signs for 127.0.0.1 and localhost, served by a `tokio-rustls` acceptor.

use std::path::{Path, PathBuf};
use std::sync::Arc;

use rcgen::{BasicConstraints, CertificateParams, DnType, IsCa, Issuer, KeyPair, KeyUsagePurpose};
use tokio_rustls::TlsAcceptor;
use tokio_rustls::rustls::{
    self,
    pki_types::{CertificateDer, PrivateKeyDer},
};

/// A CA and a server certificate it signed.
pub struct TestCa {
    dir: tempfile::TempDir,
    ca_file: PathBuf,
    certificate: CertificateDer<'static>,
    key: PrivateKeyDer<'static>,
}

impl TestCa {
    /// A new CA named `name` (it shows in error messages and mitmproxy's logs).
    pub fn new(name: &str) -> Self {
        let mut ca_params = CertificateParams::new(Vec::<String>::new()).expect("CA params");
        ca_params.is_ca = IsCa::Ca(BasicConstraints::Unconstrained);
        ca_params.distinguished_name.push(DnType::CommonName, name);
        ca_params.key_usages =
            vec![KeyUsagePurpose::KeyCertSign, KeyUsagePurpose::CrlSign, KeyUsagePurpose::DigitalSignature];
        let ca_key = KeyPair::generate().expect("CA key");
        let ca_cert = ca_params.self_signed(&ca_key).expect("CA certificate");
        let issuer = Issuer::new(ca_params, ca_key);

        let mut server_params =
            CertificateParams::new(vec!["127.0.0.1".to_string(), "localhost".to_string()])
                .expect("server params");
        server_params.distinguished_name.push(DnType::CommonName, "localhost");
        server_params.use_authority_key_identifier_extension = true;
        let server_key = KeyPair::generate().expect("server key");
        let server_cert = server_params.signed_by(&server_key, &issuer).expect("server certificate");

        let dir = tempfile::tempdir().expect("tempdir");
        let ca_file = dir.path().join("ca.pem");
        std::fs::write(&ca_file, ca_cert.pem()).expect("write CA");
        std::fs::write(dir.path().join("server.pem"), server_cert.pem()).expect("write server cert");
        std::fs::write(dir.path().join("server-key.pem"), server_key.serialize_pem()).expect("write key");

        Self {
            dir,
            ca_file,
            certificate: server_cert.der().clone(),
            key: PrivateKeyDer::try_from(server_key.serialize_der()).expect("key der"),
        }
    }

    /// The CA's certificate (PEM).
    pub fn ca_file(&self) -> &Path {
        &self.ca_file
    }

    /// The folder holding the CA, the server certificate (`server.pem`) and its key.
    pub fn dir(&self) -> &Path {
        self.dir.path()
    }

    /// An acceptor offering HTTP/1.1 only (ALPN), what the mock provider speaks.
    pub fn acceptor(&self) -> TlsAcceptor {
        self.acceptor_for(&[b"http/1.1"])
    }

    /// An acceptor offering `protocols` by ALPN, in order of preference (the network benchmark's
    /// provider offers `h2` and `http/1.1`, as the real APIs do).
    pub fn acceptor_for(&self, protocols: &[&[u8]]) -> TlsAcceptor {
        let provider = Arc::new(rustls::crypto::ring::default_provider());
        let mut config = rustls::ServerConfig::builder_with_provider(provider)
            .with_safe_default_protocol_versions()
            .expect("TLS versions")
            .with_no_client_auth()
            .with_single_cert(vec![self.certificate.clone()], self.key.clone_key())
            .expect("server TLS config");
        config.alpn_protocols = protocols.iter().map(|p| p.to_vec()).collect();
        TlsAcceptor::from(Arc::new(config))
    }
}
