//! Two sessions back to back, no runtime: the one pair every test that
//! needs two peers on bijou-proto's [`Session`] starts from.
//!
//! ```text
//!   Pair { client, server, now }
//!     client: Session::client(key 1, Audience::Known(key 2))    server: Session::server(key 2)
//!     turn():  each side polls until Wait; Transmit bytes go to the other side's inbox,
//!              Sign requests to its signer (now, after n turns, or never), Events to its list;
//!              a side reads its inbox while Wait says read
//!     run():   turns until nothing moves
//! ```
//!
//! The sessions run the handshake themselves: [`Pair::connected`] is a
//! pair whose handshake completed (both sides saw
//! [`Event::Established`]). A test plays a server by reading
//! [`Peer::take_received`] and answering with `session.send`; it cuts,
//! delays or rewrites traffic through [`Peer::outbox`] before
//! [`Pair::deliver`].

use std::collections::VecDeque;
use std::time::Duration;

use bijou_proto::handshake::{HandshakeConfig, Responder};
use bijou_proto::message::Audience;
use bijou_proto::session::{
    Close, Completed, Event, Output, Received, Session, SessionConfig, SignRequest,
};
use bijou_proto::time::{Now, Timestamp};
use bijou_signing::ed25519_dalek::SigningKey;
use bijou_signing::Identity;
use bytes::Bytes;

/// The pair's wall clock at its creation (unix seconds); its monotonic
/// clock starts at zero.
pub const T0: u64 = 1_800_000_000;

/// How a side answers its session's sign requests.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Signer {
    /// At once, with the side's key (`Session::sign_with`).
    Now,
    /// With the side's key, this many turns after the request (a remote
    /// or hardware signer).
    After(u32),
    /// Never: the requests stay open.
    Never,
}

/// One side: its session, key, signer, and what it saw.
#[derive(Debug)]
pub struct Peer {
    /// The session.
    pub session: Session,
    /// Its key.
    pub key: SigningKey,
    /// How it signs.
    pub signer: Signer,
    /// Sign requests not yet answered, with the turns left.
    asked: VecDeque<(SignRequest, u32)>,
    /// Requests answered so far.
    pub signed: usize,
    /// Messages from the other side, not yet handed in.
    pub inbox: VecDeque<Bytes>,
    /// Messages this side sent, not yet delivered (`Pair::deliver`
    /// moves them to the other side's inbox).
    pub outbox: Vec<Bytes>,
    /// Every event, in order (take them with the `take_*` methods).
    pub events: Vec<Event>,
}

impl Peer {
    fn new(session: Session, key: SigningKey) -> Self {
        Self {
            session,
            key,
            signer: Signer::Now,
            asked: VecDeque::new(),
            signed: 0,
            inbox: VecDeque::new(),
            outbox: Vec::new(),
            events: Vec::new(),
        }
    }

    /// Polls until the session waits: sends go to the outbox, sign
    /// requests to the signer, events to the list; reads the inbox while
    /// the session takes a message. Whether anything happened.
    pub fn drain(&mut self, now: Now) -> bool {
        let mut moved = false;
        for _ in 0..1_000_000 {
            match self.session.poll(now) {
                Output::Transmit(bytes) => self.outbox.push(bytes),
                Output::Sign(request) => self.ask(request),
                Output::Event(event) => self.events.push(event),
                Output::Continue => {}
                Output::Wait { read, .. } => {
                    if !read {
                        return moved;
                    }
                    let Some(bytes) = self.inbox.pop_front() else {
                        return moved;
                    };
                    if let Err(busy) = self.session.handle_message(bytes, now) {
                        panic!("Wait said read, yet the session refused: {busy}");
                    }
                }
            }
            moved = true;
        }
        panic!("a session that never waits");
    }

    fn ask(&mut self, request: SignRequest) {
        match self.signer {
            Signer::Now => self.sign(&request),
            Signer::After(turns) => self.asked.push_back((request, turns)),
            Signer::Never => self.asked.push_back((request, u32::MAX)),
        }
    }

    fn sign(&mut self, request: &SignRequest) {
        if let Err(refused) = self.session.sign_with(request, &self.key) {
            panic!("our own key's signature was refused: {refused}");
        }
        self.signed += 1;
    }

    /// One turn of the signer: answers what is due. Whether it did.
    fn tick(&mut self) -> bool {
        let mut due = Vec::new();
        let mut waiting = false;
        self.asked.retain_mut(|(request, turns)| match *turns {
            0 => {
                due.push(request.clone());
                false
            }
            u32::MAX => true,
            _ => {
                *turns -= 1;
                waiting = true;
                true
            }
        });
        for request in &due {
            self.sign(request);
        }
        waiting || !due.is_empty()
    }

    /// Sign requests still open.
    #[must_use]
    pub fn open_requests(&self) -> Vec<&SignRequest> {
        self.asked.iter().map(|(request, _)| request).collect()
    }

    /// Takes the messages delivered so far.
    pub fn take_received(&mut self) -> Vec<Received> {
        self.take(
            |event| matches!(event, Event::Received(_)),
            |event| match event {
                Event::Received(received) => Some(received),
                _ => None,
            },
        )
    }

    /// Takes the operations ended so far.
    pub fn take_completed(&mut self) -> Vec<Completed> {
        self.take(
            |event| matches!(event, Event::Completed(_)),
            |event| match event {
                Event::Completed(completed) => Some(completed),
                _ => None,
            },
        )
    }

    /// How the session closed, if it did.
    #[must_use]
    pub fn closed(&self) -> Option<&Close> {
        self.events.iter().find_map(|event| match event {
            Event::Closed(close) => Some(close),
            _ => None,
        })
    }

    /// Whether the session reported [`Event::Established`].
    #[must_use]
    pub fn established(&self) -> bool {
        self.events
            .iter()
            .any(|event| matches!(event, Event::Established(_)))
    }

    fn take<T>(&mut self, wanted: fn(&Event) -> bool, into: fn(Event) -> Option<T>) -> Vec<T> {
        let (taken, kept): (Vec<Event>, Vec<Event>) = std::mem::take(&mut self.events)
            .into_iter()
            .partition(wanted);
        self.events = kept;
        taken.into_iter().filter_map(into).collect()
    }
}

/// A client and a server session on one virtual clock.
#[derive(Debug)]
pub struct Pair {
    /// The side that opened (key `[1; 32]`).
    pub client: Peer,
    /// The side that accepted (key `[2; 32]`).
    pub server: Peer,
    /// The time both read.
    pub now: Now,
}

/// The pair's time `secs` seconds after its creation.
#[must_use]
pub fn at(secs: u64) -> Now {
    Now::new(T0 + secs, Timestamp::from_secs(secs))
}

impl Pair {
    /// A client (key `[1; 32]`) and a server (key `[2; 32]`) with
    /// `client` and `server` as their settings at [`at(0)`](at), the
    /// handshake not yet run: [`Pair::run`] runs it.
    #[must_use]
    pub fn new(client: SessionConfig, server: SessionConfig) -> Self {
        let responder = Responder::new(HandshakeConfig::default());
        Self::with_responder(client, server, responder)
    }

    /// As [`Pair::new`], the server checking challenges with `responder`.
    #[must_use]
    pub fn with_responder(
        client: SessionConfig,
        server: SessionConfig,
        responder: Responder,
    ) -> Self {
        let keys = (
            SigningKey::from_bytes(&[1; 32]),
            SigningKey::from_bytes(&[2; 32]),
        );
        Self::between(keys, (client, server), responder, at(0))
    }

    /// The general form: `keys` and `configs` (client's, server's), the
    /// server checking challenges with `responder`, both made at `now`
    /// (the client addresses the server's key).
    #[must_use]
    pub fn between(
        keys: (SigningKey, SigningKey),
        configs: (SessionConfig, SessionConfig),
        responder: Responder,
        now: Now,
    ) -> Self {
        let (client_key, server_key) = keys;
        let audience = Audience::Known(server_key.peer_id());
        let client = Session::client(client_key.verifying_key(), audience, now, configs.0);
        let server = Session::server(server_key.verifying_key(), responder, now, configs.1);
        Self {
            client: Peer::new(client, client_key),
            server: Peer::new(server, server_key),
            now,
        }
    }

    /// A pair of sessions made elsewhere at [`at(0)`](at), with keys
    /// `[1; 32]` (client) and `[2; 32]` (server).
    #[must_use]
    pub fn from_sessions(client: Session, server: Session) -> Self {
        Self {
            client: Peer::new(client, SigningKey::from_bytes(&[1; 32])),
            server: Peer::new(server, SigningKey::from_bytes(&[2; 32])),
            now: at(0),
        }
    }

    /// A pair with the default settings (seeds `[1; 32]`, `[2; 32]`)
    /// whose handshake completed.
    #[must_use]
    pub fn connected() -> Self {
        Self::connected_with(SessionConfig::new([1; 32]), SessionConfig::new([2; 32]))
    }

    /// A pair with these settings whose handshake completed.
    #[must_use]
    pub fn connected_with(client: SessionConfig, server: SessionConfig) -> Self {
        Self::new(client, server).established()
    }

    /// Runs the handshake to its end; each side's
    /// [`Event::Established`] taken.
    ///
    /// # Panics
    ///
    /// If the handshake does not complete.
    #[must_use]
    pub fn established(mut self) -> Self {
        self.run();
        assert!(
            self.client.established() && self.server.established(),
            "the handshake did not complete: client {:?}, server {:?}",
            self.client.events,
            self.server.events
        );
        for peer in [&mut self.client, &mut self.server] {
            peer.events
                .retain(|event| !matches!(event, Event::Established(_)));
        }
        self
    }

    /// The two sessions (client's, server's), for a test that drives
    /// them itself.
    #[must_use]
    pub fn into_sessions(self) -> (Session, Session) {
        (self.client.session, self.server.session)
    }

    /// Moves each side's outbox to the other's inbox.
    pub fn deliver(&mut self) -> bool {
        let moved = !self.client.outbox.is_empty() || !self.server.outbox.is_empty();
        self.server.inbox.extend(self.client.outbox.drain(..));
        self.client.inbox.extend(self.server.outbox.drain(..));
        moved
    }

    /// One turn: each side's signer answers what is due, each side
    /// polls until it waits, what was sent is delivered. Whether
    /// anything moved.
    pub fn turn(&mut self) -> bool {
        let now = self.now;
        let mut moved = self.client.tick() | self.server.tick();
        moved |= self.client.drain(now);
        moved |= self.server.drain(now);
        moved | self.deliver()
    }

    /// Turns until nothing moves.
    ///
    /// # Panics
    ///
    /// After 100,000 turns (a livelock).
    pub fn run(&mut self) {
        for _ in 0..100_000 {
            if !self.turn() {
                return;
            }
        }
        panic!("the pair never settles");
    }

    /// Moves the clock on by `by`, then runs.
    pub fn advance(&mut self, by: Duration) {
        self.now = Now::new(
            self.now.unix_secs + by.as_secs(),
            self.now.monotonic.saturating_add(by),
        );
        self.run();
    }
}
