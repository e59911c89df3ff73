//! `--tls-resume`: a runner thread's TLS settings, with a session cache of the thread's own
//! ([`thread_plan`]). Here rather than in `tls`, because it takes and makes the plan's `TlsPlan`.

use std::collections::VecDeque;
use std::sync::{Arc, Mutex, MutexGuard, PoisonError};

use rustls::pki_types::ServerName;
use rustls::ClientConfig;

use crate::plan::TlsPlan;

/// Server names a thread's session cache keeps TLS 1.2 sessions and key-exchange hints for.
const SESSION_CACHE: usize = 256;

/// A runner thread's TLS settings: the plan's, but with `--tls-resume` a session cache of the
/// thread's own for its `connections` (they resume from it, with no lock shared between
/// threads) and, with `--tls-early-data`, early data enabled.
pub(crate) fn thread_plan(plan: &TlsPlan, connections: usize) -> TlsPlan {
    if !plan.resume {
        return plan.clone();
    }
    let mut config = ClientConfig::clone(&plan.config);
    config.resumption = rustls::client::Resumption::store(Arc::new(ThreadSessions::new(
        MIN_TICKETS.max(2 * connections),
    )));
    config.enable_early_data = plan.early_data;
    TlsPlan {
        config: Arc::new(config),
        ..plan.clone()
    }
}

/// The fewest TLS 1.3 tickets a thread's cache keeps (rustls's own cache keeps 8 per server).
const MIN_TICKETS: usize = 8;

/// A thread's session cache: rustls's in-memory cache, but with room for as many TLS 1.3 tickets
/// as the thread has connections, twice over. A ticket is used once (RFC 8446 §C.4) and each
/// connection takes one as it opens; with rustls's 8 per server, a thread of 20 connections
/// found none now and then and fell back to a full handshake (55 of 2000 connections against
/// nghttpx, where 1 connection at a time made a single full handshake in 2000).
#[derive(Debug)]
struct ThreadSessions {
    others: rustls::client::ClientSessionMemoryCache,
    tickets: Mutex<VecDeque<Ticket>>,
    capacity: usize,
}

type Ticket = (ServerName<'static>, rustls::client::Tls13ClientSessionValue);

impl ThreadSessions {
    fn new(capacity: usize) -> Self {
        ThreadSessions {
            others: rustls::client::ClientSessionMemoryCache::new(SESSION_CACHE),
            tickets: Mutex::new(VecDeque::with_capacity(capacity)),
            capacity,
        }
    }

    fn tickets(&self) -> MutexGuard<'_, VecDeque<Ticket>> {
        // Only this thread's connections use it: a poisoned lock means a panic on this thread,
        // which already ends the run; the tickets themselves are still whole.
        self.tickets.lock().unwrap_or_else(PoisonError::into_inner)
    }
}

impl rustls::client::ClientSessionStore for ThreadSessions {
    fn set_kx_hint(&self, server_name: ServerName<'static>, group: rustls::NamedGroup) {
        self.others.set_kx_hint(server_name, group);
    }

    fn kx_hint(&self, server_name: &ServerName<'_>) -> Option<rustls::NamedGroup> {
        self.others.kx_hint(server_name)
    }

    fn set_tls12_session(
        &self,
        server_name: ServerName<'static>,
        value: rustls::client::Tls12ClientSessionValue,
    ) {
        self.others.set_tls12_session(server_name, value);
    }

    fn tls12_session(
        &self,
        server_name: &ServerName<'_>,
    ) -> Option<rustls::client::Tls12ClientSessionValue> {
        self.others.tls12_session(server_name)
    }

    fn remove_tls12_session(&self, server_name: &ServerName<'static>) {
        self.others.remove_tls12_session(server_name);
    }

    fn insert_tls13_ticket(
        &self,
        server_name: ServerName<'static>,
        value: rustls::client::Tls13ClientSessionValue,
    ) {
        let mut tickets = self.tickets();
        if tickets.len() == self.capacity {
            tickets.pop_front();
        }
        tickets.push_back((server_name, value));
    }

    fn take_tls13_ticket(
        &self,
        server_name: &ServerName<'static>,
    ) -> Option<rustls::client::Tls13ClientSessionValue> {
        let mut tickets = self.tickets();
        // The newest first: the oldest are the nearest to their lifetime's end.
        let at = tickets.iter().rposition(|(name, _)| name == server_name)?;
        tickets.remove(at).map(|(_, value)| value)
    }
}
