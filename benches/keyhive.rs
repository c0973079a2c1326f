//! Push and fetch round trips against a Subduction node with keyhive,
//! against the same node under open auth: what enforcing keyhive costs a
//! client. The node is `bijou_test_support::keyhive_node` (in process,
//! loopback WebSocket; `subduction_cli` 0.21's keyhive storage policy and
//! `subduction_keyhive`'s protocol).
//!
//! Four interleaved rounds on each node, the first of each a warm-up: a
//! fresh key and document (registered, public Edit, on the keyhive node),
//! 200 pushes each waiting for the HeadsUpdate that names it, then one
//! fetch of all 200 (checked byte for byte). Prints the p50 and p99 push
//! round trip over the 3 x 200 pushes and the median fetch, with their
//! ratios keyhive / open:
//!
//! ```text
//!   cargo bench -p bijou-frame-benches --bench keyhive
//! ```

use std::time::{Duration, Instant};

use bijou_frame::proto::keyhive::{Access, DocumentKey, Grantee};
use bijou_frame::signing::ed25519_dalek::SigningKey;
use bijou_test_support::keyhive_node::{
    commit, connect, fetch, keyhive_node, open_node, push, register, same_items, Node, REPLY,
};

/// Pushes a run makes (then it fetches them all).
const COMMITS: u32 = 200;
/// Runs on each node, the first a warm-up.
const ROUNDS: usize = 4;

fn percentile(sorted: &[Duration], p: f64) -> Duration {
    let i = ((sorted.len() as f64 - 1.0) * p).round() as usize;
    sorted[i.min(sorted.len() - 1)]
}

/// [`COMMITS`] pushes and a fetch of them all on one node; returns the
/// push round trips and the fetch time.
async fn run(node: &Node, keyhive: bool) -> (Vec<Duration>, Duration) {
    let me = SigningKey::from_bytes(&rand::random());
    let mut conn = connect(node, &me).await;
    let doc = DocumentKey::from_seed(rand::random());
    let tree = doc.tree_id();
    if keyhive {
        let delegation = doc
            .root_delegation(Grantee::Public, Access::Edit)
            .expect("delegation");
        register(&mut conn, &me, delegation, REPLY)
            .await
            .expect("registered");
    }
    let mut rtts = Vec::with_capacity(COMMITS as usize);
    let mut pushed = Vec::with_capacity(COMMITS as usize);
    let mut parent = None;
    for n in 0..COMMITS {
        let (head, item) = commit(&me, tree, n, parent);
        rtts.push(
            push(&mut conn, tree, u64::from(n), head, item.clone(), REPLY)
                .await
                .expect("acknowledged"),
        );
        pushed.push(item);
        parent = Some(head);
    }
    let start = Instant::now();
    let fetched = fetch(&mut conn, tree).await.expect("fetch");
    let fetch_time = start.elapsed();
    same_items(&fetched, &pushed);
    (rtts, fetch_time)
}

#[tokio::main(flavor = "multi_thread", worker_threads = 2)]
async fn main() {
    let keyhive = keyhive_node().await;
    let open = open_node().await;
    let (mut kh, mut op) = (Vec::new(), Vec::new());
    let (mut kh_fetch, mut op_fetch) = (Vec::new(), Vec::new());
    for round in 0..ROUNDS {
        let (r, f) = run(&keyhive, true).await;
        if round > 0 {
            kh.extend(r);
            kh_fetch.push(f);
        }
        let (r, f) = run(&open, false).await;
        if round > 0 {
            op.extend(r);
            op_fetch.push(f);
        }
    }
    for v in [&mut kh, &mut op, &mut kh_fetch, &mut op_fetch] {
        v.sort_unstable();
    }
    let (k50, k99, o50, o99) = (
        percentile(&kh, 0.5),
        percentile(&kh, 0.99),
        percentile(&op, 0.5),
        percentile(&op, 0.99),
    );
    let rounds = ROUNDS - 1;
    println!(
        "push round trip, {rounds} x {COMMITS} commits: keyhive p50 {k50:?} p99 {k99:?}; open p50 {o50:?} p99 {o99:?}; ratio p50 {:.2} p99 {:.2}",
        k50.as_secs_f64() / o50.as_secs_f64(),
        k99.as_secs_f64() / o99.as_secs_f64()
    );
    let (kf, of) = (percentile(&kh_fetch, 0.5), percentile(&op_fetch, 0.5));
    println!(
        "fetch of {COMMITS} commits (median of {rounds}): keyhive {kf:?}, open {of:?}; ratio {:.2}",
        kf.as_secs_f64() / of.as_secs_f64()
    );
}
