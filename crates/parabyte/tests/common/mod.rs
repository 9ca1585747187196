//! Shared set-up for the library tests.

use parabyte::{Keys, StoreConfig};
use parabyte_testkit::TestServer;

/// A store config that reaches `server` with its test keys, nothing from the environment.
pub fn store_config(server: &TestServer) -> StoreConfig {
    StoreConfig {
        endpoint_url: Some(server.endpoint()),
        region: Some(server.region().to_owned()),
        credentials: Some(Keys {
            access_key_id: server.access_key().to_owned(),
            secret_access_key: server.secret_key().to_owned(),
            session_token: None,
        }),
        ..StoreConfig::from_env()
    }
}
