//! The semaphore bounds requests in flight towards the endpoint.

use std::time::Duration;

use relata_testkit::{Behaviour, FakeOptions};

use crate::support::{EMPTY_EXTRACTION, Harness};

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn concurrent_calls_never_exceed_the_bound_at_the_server() {
    let h = Harness::with(
        FakeOptions {
            default: Behaviour::completion(EMPTY_EXTRACTION).delayed(Duration::from_millis(150)),
            ..Default::default()
        },
        vec![],
        |c| c.max_concurrency = 2,
    )
    .await;
    let calls: Vec<_> = (0..6)
        .map(|i| {
            let client = h.client.clone();
            tokio::spawn(async move { client.extract(&format!("document {i}"), None).await })
        })
        .collect();
    for call in calls {
        assert!(call.await.unwrap().result.is_ok());
    }
    assert_eq!(h.chat_count(), 6);
    assert_eq!(
        h.server.max_in_flight(),
        2,
        "the bound is reached and never exceeded"
    );
}
