//! The CI-scale structure-aware mutation fuzz: more than 200,000 inputs
//! from a fixed seed, in well under a minute.
//!
//! Random bytes almost never get past the 4-byte schema check, so every
//! input here starts from a valid one: sync messages of every `SUM` tag
//! (00, 01, 04, 05 with `Ok` and a non-empty diff, `NotFound` and
//! `Unauthorized`, 06, 07, 08), every handshake kind (challenge, response,
//! rejection), every keyhive message kind in `SUK\0`, standalone
//! `Signed<LooseCommit>` and `Signed<Fragment>`, and
//! `FrameCodec` streams of several messages for each length prefix, fed in
//! random chunks. The mutations are bit flips, byte sets, inserts and
//! deletes, truncation, range duplication, splices and crossovers of two
//! inputs, and count or length fields (u8/u16/u32 counts, bijou64 blob
//! sizes and lengths, `TotalSize`, frame prefixes) set to extremes.
//!
//! What must hold (the oracles are `bijou_test_support::checks`, shared
//! with the regression replay and the cargo-fuzz targets):
//!
//! - no panic;
//! - every accepted input re-encodes to exactly the same bytes;
//! - a mutant of a signed payload's fields, signed again with the real key,
//!   that decodes must verify (`verify_strict`) and re-seal to exactly the
//!   same bytes: the decoder accepts only the encoding the encoder writes;
//! - a valid stream gives back exactly the frames fed, for every split; a
//!   mutated one gives the same frames and the same ending for every split,
//!   and a framing error is terminal.
//!
//! Each test prints its counts (`-- --nocapture` shows them) and asserts
//! that the mutants get deep: enough are accepted or rejected beyond the
//! envelope, so the assertions above cannot pass vacuously.

use std::collections::BTreeMap;
use std::time::Instant;

use bijou_framing::prefix::{Bijou64, Leb128, LengthPrefix, U32Be};
use bijou_framing::DEFAULT_MAX_FRAME_LENGTH;
use bijou_proto::message::{
    Challenge, Fragment, HandshakeMessage, LooseCommit, Message, Response, SyncMessage, SyncResult,
};
use bijou_test_support::checks::{self, Depth};
use bijou_test_support::fuzz::{
    corpus, keys, mutate_some, resigned_mutant, set_prefix, stream, Kind, Rng, SignedKind, Specimen,
};
use bijou_test_support::messages::fix_total_size;
use bytes::Bytes;

/// The seed of the whole run.
const SEED: u64 = 0xB17E_F4A3_2026_0005;

/// Mutants of sync messages (every tag).
const SUM_MUTANTS: usize = 70_000;
/// Mutants of handshake messages (every kind).
const SUH_MUTANTS: usize = 24_000;
/// Mutants of keyhive messages (every kind, in `SUK\0`).
const SUK_MUTANTS: usize = 21_000;
/// Mutants of standalone signed commits and fragments (anywhere, signature
/// included).
const SIGNED_MUTANTS: usize = 24_000;
/// Mutants of signed fields, signed again with the real key.
const RESIGNED_MUTANTS: usize = 30_000;
/// Stream inputs (one stream fed with one split pattern) per prefix.
const STREAM_INPUTS: usize = 20_000;

const TOTAL: usize =
    SUM_MUTANTS + SUH_MUTANTS + SUK_MUTANTS + SIGNED_MUTANTS + RESIGNED_MUTANTS + 3 * STREAM_INPUTS;
const _: () = assert!(TOTAL >= 200_000, "the CI scale is at least 200,000 inputs");

/// The seed: [`SEED`], or `BIJOU_FUZZ_SEED` (decimal or `0x` hex) for a
/// longer hunt with other inputs.
fn seed() -> u64 {
    std::env::var("BIJOU_FUZZ_SEED").map_or(SEED, |s| {
        let s = s.trim();
        s.strip_prefix("0x")
            .map_or_else(|| s.parse(), |hex| u64::from_str_radix(hex, 16))
            .expect("BIJOU_FUZZ_SEED: a decimal or 0x-hex u64")
    })
}

/// `n` times `BIJOU_FUZZ_SCALE` (default 1).
fn scaled(n: usize) -> usize {
    let scale = std::env::var("BIJOU_FUZZ_SCALE").map_or(1, |s| {
        s.trim()
            .parse::<usize>()
            .expect("BIJOU_FUZZ_SCALE: a positive integer")
    });
    n * scale.max(1)
}

/// Per-kind counts.
#[derive(Debug, Default)]
struct Stats {
    by_kind: BTreeMap<Kind, [usize; 3]>,
}

impl Stats {
    fn add(&mut self, kind: Kind, depth: Depth) {
        let slot = self.by_kind.entry(kind).or_default();
        match depth {
            Depth::Accepted => slot[0] += 1,
            Depth::Deep => slot[1] += 1,
            Depth::Shallow => slot[2] += 1,
        }
    }

    fn totals(&self) -> [usize; 3] {
        self.by_kind.values().fold([0; 3], |mut t, c| {
            for i in 0..3 {
                t[i] += c[i];
            }
            t
        })
    }

    /// Prints the counts; asserts that every kind got mutants, that at
    /// least `min_deep` of all were accepted or rejected beyond the
    /// envelope, and that more than `min_accepted` were accepted.
    fn report(&self, what: &str, kinds: &[Kind], start: Instant, min_deep: f64, min_accepted: f64) {
        let [accepted, deep, shallow] = self.totals();
        let n = accepted + deep + shallow;
        let pct = |x: usize, of: usize| 100.0 * x as f64 / of.max(1) as f64;
        eprintln!(
            "{what} (seed {:#x}): {n} inputs in {:.1?}: accepted {accepted} ({:.1}%), rejected beyond the \
             envelope {deep} ({:.1}%), in the envelope {shallow} ({:.1}%); deep {:.1}%",
            seed(),
            start.elapsed(),
            pct(accepted, n),
            pct(deep, n),
            pct(shallow, n),
            pct(accepted + deep, n),
        );
        for (kind, [a, d, s]) in &self.by_kind {
            let k = a + d + s;
            eprintln!(
                "    {kind:?}: {k} inputs, accepted {:.1}%, deep {:.1}%",
                pct(*a, k),
                pct(a + d, k)
            );
        }
        for kind in kinds {
            assert!(self.by_kind.contains_key(kind), "no mutants of {kind:?}");
        }
        let deep_fraction = (accepted + deep) as f64 / n as f64;
        assert!(
            deep_fraction >= min_deep,
            "{what}: only {:.1}% of the mutants got past the envelope",
            100.0 * deep_fraction
        );
        let accepted_fraction = accepted as f64 / n as f64;
        assert!(
            accepted_fraction > min_accepted,
            "{what}: only {accepted} of {n} mutants were accepted"
        );
    }
}

/// `count` mutants of `corpus` (round robin over the specimens, so every
/// kind gets its share), each checked by `check`. Three quarters of the
/// sync mutants get their `TotalSize` repaired, so they pass the envelope.
fn run_mutants(
    rng: &mut Rng,
    corpus: &[Specimen],
    count: usize,
    check: impl Fn(&Specimen, &[u8]) -> Depth,
) -> Stats {
    let mut stats = Stats::default();
    for i in 0..count {
        let base = &corpus[i % corpus.len()];
        let other = rng.pick(corpus);
        let mut bytes = base.wire.clone();
        mutate_some(rng, &mut bytes, &other.wire, &base.fields);
        if rng.chance(3, 4) {
            fix_total_size(&mut bytes);
        }
        stats.add(base.kind, check(base, &bytes));
    }
    stats
}

#[test]
fn sum_mutants_of_every_tag() {
    let start = Instant::now();
    let keys = keys();
    let mut rng = Rng::new(seed() ^ 0x5E);
    let corpus = corpus(&Kind::SUM, 24, &mut rng, &keys);
    for s in &corpus {
        assert_eq!(checks::check_sum(&s.wire, true), Depth::Accepted);
    }
    let stats = run_mutants(&mut rng, &corpus, scaled(SUM_MUTANTS), |_, bytes| {
        checks::check_sum(bytes, true)
    });
    stats.report("SUM", &Kind::SUM, start, 0.60, 0.02);
}

#[test]
fn suh_mutants_of_every_kind() {
    let start = Instant::now();
    let keys = keys();
    let mut rng = Rng::new(seed() ^ 0x54);
    let corpus = corpus(&Kind::SUH, 24, &mut rng, &keys);
    for s in &corpus {
        assert_eq!(checks::check_suh(&s.wire, true), Depth::Accepted);
    }
    let stats = run_mutants(&mut rng, &corpus, scaled(SUH_MUTANTS), |_, bytes| {
        checks::check_suh(bytes, true)
    });
    stats.report("SUH", &Kind::SUH, start, 0.50, 0.02);
}

#[test]
fn suk_mutants_of_every_keyhive_kind() {
    let start = Instant::now();
    let keys = keys();
    let mut rng = Rng::new(seed() ^ 0x4B);
    let corpus = corpus(&Kind::SUK, 12, &mut rng, &keys);
    for s in &corpus {
        assert_eq!(
            checks::check_suk(&s.wire, true),
            Depth::Accepted,
            "{:?}",
            s.kind
        );
    }
    let stats = run_mutants(&mut rng, &corpus, scaled(SUK_MUTANTS), |_, bytes| {
        checks::check_suk(bytes, true)
    });
    stats.report("SUK", &Kind::SUK, start, 0.60, 0.02);
}

#[test]
fn standalone_signed_item_mutants() {
    let start = Instant::now();
    let keys = keys();
    let mut rng = Rng::new(seed() ^ 0x51);
    let corpus = corpus(&Kind::SIGNED, 32, &mut rng, &keys);
    let check = |s: &Specimen, bytes: &[u8]| match s.kind {
        Kind::SignedCommit => checks::check_signed_commit(bytes, true),
        _ => checks::check_signed_fragment(bytes, true),
    };
    for s in &corpus {
        assert_eq!(check(s, &s.wire), Depth::Accepted);
    }
    let stats = run_mutants(&mut rng, &corpus, scaled(SIGNED_MUTANTS), check);
    stats.report("signed items", &Kind::SIGNED, start, 0.50, 0.02);
}

/// The signed payloads (commit and fragment bytes in wire order) of a
/// decoded message.
fn signed_items(msg: &Message) -> Vec<Bytes> {
    match msg {
        Message::Sync(SyncMessage::LooseCommit(m)) => vec![m.item.signed().to_bytes()],
        Message::Sync(SyncMessage::Fragment(m)) => vec![m.item.signed().to_bytes()],
        Message::Sync(SyncMessage::BatchSyncResponse(r)) => match &r.result {
            SyncResult::Ok(diff) => diff
                .commits()
                .iter()
                .map(|i| i.signed().to_bytes())
                .chain(diff.fragments().iter().map(|i| i.signed().to_bytes()))
                .collect(),
            _ => Vec::new(),
        },
        Message::Handshake(HandshakeMessage::Challenge(s)) => vec![s.to_bytes()],
        Message::Handshake(HandshakeMessage::Response(s)) => vec![s.to_bytes()],
        _ => Vec::new(),
    }
}

/// Mutants of the fields of signed payloads, signed again with the key
/// that signed the original: standalone commits and fragments, challenges
/// and responses, and the commits and fragments inside sync messages (tags
/// 00, 01 and 05). One that decodes must verify and re-seal to exactly its
/// bytes (the oracle `check_signed` with the key).
#[test]
fn resigned_mutants_verify_and_reseal_identically() {
    let start = Instant::now();
    let keys = keys();
    let mut rng = Rng::new(seed() ^ 0x55);
    let kinds = [
        Kind::SignedCommit,
        Kind::SignedFragment,
        Kind::Challenge,
        Kind::Response,
        Kind::LooseCommit,
        Kind::Fragment,
        Kind::ResponseOk,
    ];
    let corpus = corpus(&kinds, 24, &mut rng, &keys);
    let mut stats = Stats::default();
    let mut accepted_by_type: BTreeMap<&str, (usize, usize)> = BTreeMap::new();
    let count = scaled(RESIGNED_MUTANTS);
    for i in 0..count {
        let base = &corpus[i % corpus.len()];
        let other = rng.pick(&corpus);
        let index = rng.below(base.signed.len());
        let region = base.signed[index];
        let (bytes, new_len) = resigned_mutant(&mut rng, base, &region, other, &keys);
        let key = &keys[region.key];
        let payload = &bytes[region.at..region.at + new_len];
        let depth = match base.kind {
            Kind::SignedCommit => checks::check_signed::<LooseCommit>(&bytes, Some(key), false),
            Kind::SignedFragment => checks::check_signed::<Fragment>(&bytes, Some(key), false),
            _ => {
                let (result, depth) = checks::check_message(&bytes, false);
                let aligned = result
                    .as_ref()
                    .is_ok_and(|msg| signed_items(msg)[index] == payload);
                if aligned {
                    // The message decoded with the mutated payload where it
                    // was put (not, say, a shorter payload and the rest read
                    // as signature, blob and heads): on its own the payload
                    // decodes too, verifies and re-seals to the same bytes.
                    let alone = match region.kind {
                        SignedKind::Commit => {
                            checks::check_signed::<LooseCommit>(payload, Some(key), false)
                        }
                        SignedKind::Fragment => {
                            checks::check_signed::<Fragment>(payload, Some(key), false)
                        }
                        SignedKind::Challenge => {
                            checks::check_signed::<Challenge>(payload, Some(key), false)
                        }
                        SignedKind::Response => {
                            checks::check_signed::<Response>(payload, Some(key), false)
                        }
                    };
                    assert_eq!(alone, Depth::Accepted);
                } else if result.is_err() && matches!(base.kind, Kind::Challenge | Kind::Response) {
                    // The message is the signed payload: refused both ways.
                    let alone = checks::check_signed_handshake(&bytes, Some(key));
                    assert_ne!(alone, Depth::Accepted, "{}", hex(&bytes));
                }
                if aligned || result.is_err() {
                    depth
                } else {
                    // Accepted, but not with this payload: not a re-signed
                    // acceptance (its signature is other bytes).
                    Depth::Deep
                }
            }
        };
        stats.add(base.kind, depth);
        let slot = accepted_by_type
            .entry(match region.kind {
                SignedKind::Commit => "commit",
                SignedKind::Fragment => "fragment",
                SignedKind::Challenge => "challenge",
                SignedKind::Response => "response",
            })
            .or_default();
        slot.0 += 1;
        slot.1 += usize::from(depth == Depth::Accepted);
    }
    let [accepted, _, _] = stats.totals();
    eprintln!(
        "re-signed: {count} mutants, {accepted} accepted, verified and re-sealed \
         identically ({:.1}%); by payload (mutants, accepted): {accepted_by_type:?}",
        100.0 * accepted as f64 / count as f64
    );
    stats.report("re-signed", &kinds, start, 0.50, 0.01);
    for (payload, (n, a)) in &accepted_by_type {
        assert!(
            *a * 100 > *n,
            "only {a} of {n} re-signed {payload} mutants were accepted"
        );
    }
}

fn hex(bytes: &[u8]) -> String {
    bytes.iter().map(|b| format!("{b:02x}")).collect()
}

// ---- streams --------------------------------------------------------------

/// Stream counts.
#[derive(Debug, Default)]
struct StreamStats {
    valid: usize,
    mutated: usize,
    /// Mutated streams that delivered at least one frame.
    mutated_with_frames: usize,
    frames: usize,
    messages: usize,
    errors: BTreeMap<String, usize>,
}

/// `STREAM_INPUTS` streams of one to six messages (sync, handshake, and
/// now and then an empty or a junk frame) behind prefix `P`:
///
/// - a few valid ones cut at every point, and fed byte by byte;
/// - a quarter valid, each fed with three split patterns, with the default
///   maximum or a maximum of exactly the largest frame: they must give
///   back exactly the frames fed;
/// - the rest mutated: a message mutated and framed again (the stream
///   stays well framed, so it must give back exactly the mutated frames),
///   the stream's bytes mutated, a prefix set to an extreme, or several of
///   these; with the default maximum or a small one.
fn run_streams<P: LengthPrefix>(seed: u64) {
    let start = Instant::now();
    let keys = keys();
    let mut rng = Rng::new(seed);
    let mut kinds = Kind::SUM.to_vec();
    kinds.extend(Kind::SUH);
    let corpus = corpus(&kinds, 8, &mut rng, &keys);
    let mut stats = StreamStats::default();
    let mut inputs = 0;
    // A few valid streams cut at every point, and fed byte by byte.
    for _ in 0..4 {
        let n = rng.range(2, 4);
        let payloads: Vec<Vec<u8>> = (0..n).map(|_| rng.pick(&corpus).wire.clone()).collect();
        let valid = stream::<P>(&payloads);
        let len = valid.bytes.len();
        for sizes in (0..=len).map(|cut| vec![cut, len]).chain([vec![1; len]]) {
            checks::check_stream::<P>(
                &valid.bytes,
                &sizes,
                DEFAULT_MAX_FRAME_LENGTH,
                Some(&valid.frames),
            );
            stats.valid += 1;
            inputs += 1;
        }
    }
    let mut previous = stream::<P>(&[corpus[0].wire.clone()]).bytes;
    let count = scaled(STREAM_INPUTS);
    while inputs < count {
        let n = rng.range(1, 6);
        let mut picks: Vec<&Specimen> = Vec::with_capacity(n);
        let mut payloads: Vec<Vec<u8>> = (0..n)
            .map(|_| match rng.below(24) {
                0 => Vec::new(),
                1 => {
                    let len = rng.range(1, 40);
                    rng.bytes(len)
                }
                _ => {
                    let s = rng.pick(&corpus);
                    picks.push(s);
                    s.wire.clone()
                }
            })
            .collect();
        let largest = payloads.iter().map(Vec::len).max().unwrap_or(0);

        if rng.chance(1, 4) {
            let valid = stream::<P>(&payloads);
            let max = if rng.chance(1, 2) {
                DEFAULT_MAX_FRAME_LENGTH
            } else {
                largest
            };
            for _ in 0..3 {
                let sizes = checks::split_sizes(rng.next_u64(), valid.bytes.len());
                let report =
                    checks::check_stream::<P>(&valid.bytes, &sizes, max, Some(&valid.frames));
                stats.frames += report.frames.len();
                stats.messages += report.messages;
                stats.valid += 1;
                inputs += 1;
            }
            previous = valid.bytes;
            continue;
        }

        let mode = rng.below(4);
        // A message mutated inside its frame, the prefix fitted to it.
        let mut framed_ok = true;
        if (mode == 0 || mode == 3) && !picks.is_empty() {
            let i = rng.below(payloads.len());
            let other = rng.pick(&corpus);
            let fields = picks
                .iter()
                .find(|s| s.wire == payloads[i])
                .map_or(&[][..], |s| &s.fields[..]);
            mutate_some(&mut rng, &mut payloads[i], &other.wire, fields);
            if rng.chance(1, 2) {
                fix_total_size(&mut payloads[i]);
            }
        }
        let mut s = stream::<P>(&payloads);
        let max = if rng.chance(1, 4) {
            *rng.pick(&[0, 1, 14, 85, 141, 158, 256, largest])
        } else {
            DEFAULT_MAX_FRAME_LENGTH
        };
        if s.frames.iter().any(|f| f.len() > max) {
            framed_ok = false;
        }
        // The stream's bytes mutated.
        if mode == 1 || mode == 3 {
            mutate_some(&mut rng, &mut s.bytes, &previous, &[]);
            framed_ok = false;
        }
        // A prefix set to an extreme.
        if mode == 2 || (mode == 3 && rng.chance(1, 2)) {
            let i = rng.below(s.prefixes.len());
            let payload_len = s.frames[i].len();
            set_prefix::<P>(&mut rng, &mut s.bytes, s.prefixes[i], payload_len, max);
            framed_ok = false;
        }
        let sizes = checks::split_sizes(rng.next_u64(), s.bytes.len());
        let expect = framed_ok.then_some(&s.frames[..]);
        let report = checks::check_stream::<P>(&s.bytes, &sizes, max, expect);
        stats.mutated += 1;
        stats.mutated_with_frames += usize::from(!report.frames.is_empty());
        stats.frames += report.frames.len();
        stats.messages += report.messages;
        if let Some(e) = report.error {
            // The error's kind, without its numbers.
            let kind: String = e.chars().take_while(|c| !c.is_ascii_digit()).collect();
            *stats.errors.entry(kind).or_default() += 1;
        }
        inputs += 1;
        previous = s.bytes;
    }
    let ended_by_error: usize = stats.errors.values().sum();
    eprintln!(
        "streams ({}): {inputs} inputs in {:.1?}: {} valid feeds, {} mutated streams \
         ({} delivered frames, {} ended in a framing error); {} frames, {} messages accepted; \
         errors: {:?}",
        P::NAME,
        start.elapsed(),
        stats.valid,
        stats.mutated,
        stats.mutated_with_frames,
        ended_by_error,
        stats.frames,
        stats.messages,
        stats.errors,
    );
    let mutated = stats.mutated.max(1) as f64;
    assert!(
        stats.mutated_with_frames as f64 / mutated > 0.5,
        "mutated streams rarely delivered a frame"
    );
    assert!(
        ended_by_error as f64 / mutated > 0.1,
        "mutated streams rarely hit a framing error"
    );
}

#[test]
fn frame_streams_bijou64() {
    run_streams::<Bijou64>(seed() ^ 0xB1);
}

#[test]
fn frame_streams_leb128() {
    run_streams::<Leb128>(seed() ^ 0x1E);
}

#[test]
fn frame_streams_u32be() {
    run_streams::<U32Be>(seed() ^ 0x32);
}
