//! The HTTP client of aws-config's credential providers (STS for a web identity, SSO, the
//! container and instance endpoints): the SDK's own rustls client, made at its first
//! request. The SDK's default is made when the config loads and reads the system's trusted
//! roots then, which every run paid (~10 ms, half of a short `parabyte ls`) though only
//! those providers ever send through it; parabyte's own requests go through `HttpClient`.

use std::sync::OnceLock;

use aws_smithy_http_client::proxy::ProxyConfig;
use aws_smithy_http_client::tls::{rustls_provider::CryptoMode, Provider};
use aws_smithy_http_client::{Builder, ConnectorBuilder};
use aws_smithy_runtime_api::client::http::{
    HttpClient, HttpConnectorSettings, SharedHttpClient, SharedHttpConnector,
};
use aws_smithy_runtime_api::client::runtime_components::RuntimeComponents;

/// The SDK's HTTPS client, made when a credential provider first sends.
#[derive(Debug, Default)]
pub(super) struct OnFirstRequest {
    client: OnceLock<SharedHttpClient>,
}

impl OnFirstRequest {
    fn made(&self) -> &SharedHttpClient {
        self.client.get_or_init(sdk_client)
    }
}

impl HttpClient for OnFirstRequest {
    fn http_connector(
        &self,
        settings: &HttpConnectorSettings,
        components: &RuntimeComponents,
    ) -> SharedHttpConnector {
        // Asked per request. The trait's `validate_base_client_config`, which the SDK's
        // client uses to read the roots as the config loads, is left doing nothing.
        self.made().http_connector(settings, components)
    }
}

/// What aws-config would make: rustls over aws-lc, the proxies of the environment.
fn sdk_client() -> SharedHttpClient {
    Builder::new().build_with_connector_fn(|settings, components| {
        let mut connector =
            ConnectorBuilder::default().tls_provider(Provider::Rustls(CryptoMode::AwsLc));
        connector.set_connector_settings(settings.cloned());
        if let Some(components) = components {
            connector.set_sleep_impl(components.sleep_impl());
        }
        connector.set_proxy_config(Some(ProxyConfig::from_env()));
        connector.build()
    })
}
