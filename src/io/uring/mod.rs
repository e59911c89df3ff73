//! The completion-based I/O backend (`--io uring`): one io_uring per runner thread, under the
//! thread's tokio runtime.
//!
//! A connection on the ring is a [`RingStream`]: a byte stream like a TCP socket, so the driver,
//! the sessions and TLS run over it unchanged. What differs is underneath:
//! - **Receiving**: one multishot receive per connection, armed once, fills buffers the kernel
//!   picks from the thread's provided-buffer ring; reading copies from them and gives them back.
//!   No receive syscall per read, no readiness bookkeeping per connection.
//! - **Sending**: a write copies into the connection's staged bytes and queues one send; the
//!   [`pump`](Uring::pump) task submits every connection's queued operations together, after the
//!   runtime has run all the tasks that were ready: one `io_uring_enter` for a whole turn.
//! - **Completions**: completion work is deferred to this thread's own `io_uring_enter`
//!   (`DEFER_TASKRUN`); the kernel signals an eventfd in tokio's epoll set when some waits, and the
//!   pump runs it, reaps every completion and wakes the connections concerned.
//! - **Sockets**: connected through the ring, kept in its registered file table (a plain
//!   descriptor only when the table is full), closed through the ring.
//! - **Deadlines**: the thread's precise timer waits on one ring timeout ([`Uring::arm_alarm`]).
//!
//! All `unsafe` (pointers the kernel holds across calls) is in [`sys`], which owns that memory.
//!
//! One file past ~600 lines: [`Uring`] is one state machine whose connection table, pump,
//! completions and alarm share its fields, and [`RingStream`] is only its face for the driver;
//! split, each part would reach into the others' state.

pub(crate) mod probe;
mod sys;

pub(crate) use sys::set_receive_low_water;

use std::cell::{Cell, RefCell};
use std::collections::VecDeque;
use std::future::poll_fn;
use std::io::{self, IoSlice};
use std::net::SocketAddr;
use std::path::Path;
use std::pin::Pin;
use std::rc::Rc;
use std::task::{Context, Poll, Waker};

use rustix::net::{AddressFamily, SocketAddrAny, SocketAddrUnix, SocketFlags, SocketType};
use slab::Slab;
use tokio::io::{AsyncRead, AsyncWrite, ReadBuf};

use sys::{Event, Kind, Ring, Sizes, Target};

/// Bytes a connection stages for sending before a write waits for its send to complete.
const STAGE_LIMIT: usize = 256 * 1024;
/// Capacity a connection's send buffers keep once empty; more is given back.
const KEEP_CAPACITY: usize = 4 * 1024;
/// Bytes in each provided receive buffer.
const BUFFER_SIZE: u32 = 64 * 1024;
/// How long a SQPOLL thread spins for work before it sleeps (ms).
const SQPOLL_IDLE_MS: u32 = 50;

/// A thread's ring and the state of its connections.
pub(crate) struct Uring {
    ring: RefCell<Ring>,
    conns: RefCell<Slab<ConnIo>>,
    /// Operations were queued since the pump last submitted.
    submit_wanted: Cell<bool>,
    /// The pump task, while it waits.
    pump: RefCell<Option<Waker>>,
    /// Completions being handled (kept: no allocation per turn).
    events: RefCell<Vec<Event>>,
    /// The thread's alarm: the one timeout its precise timer waits on.
    alarm: RefCell<Alarm>,
    /// Connections whose receive stopped for want of buffers, to arm again as buffers come
    /// back (arming at once would fail again at once while every buffer is lent).
    starved: RefCell<VecDeque<u32>>,
}

/// The ring's alarm (see [`Uring::arm_alarm`]).
#[derive(Default)]
struct Alarm {
    /// The timeout in flight, if any.
    op: Option<u32>,
    /// It fired and the waiter has not seen it yet.
    fired: bool,
    waiter: Option<Waker>,
}

/// What a connection on the ring has going.
struct ConnIo {
    target: Target,
    /// Received bytes not yet read, and how much of the first buffer was read.
    received: VecDeque<sys::Buffer>,
    read_offset: u32,
    /// The operations in flight on it, by key: to cancel them when its stream goes.
    recv_op: Option<u32>,
    send_op: Option<u32>,
    connect_op: Option<u32>,
    /// Its receive stopped for want of buffers: it waits in [`Uring::starved`].
    starved: bool,
    /// The server closed its side.
    eof: bool,
    /// The connection failed (a negated errno).
    error: Option<i32>,
    /// Written bytes waiting for the send in flight to complete.
    staged: Vec<u8>,
    /// The last completed send's buffer, reused for the next.
    spare: Vec<u8>,
    /// The connect's result, once it came.
    connected: Option<i32>,
    /// The task driving it (reads and writes come from the same task), while it waits.
    waiter: Option<Waker>,
    /// Operations in flight on it.
    ops: u32,
    /// Its stream is gone: the entry goes once its operations are over.
    released: bool,
}

impl ConnIo {
    fn new(target: Target) -> Self {
        ConnIo {
            target,
            received: VecDeque::new(),
            read_offset: 0,
            recv_op: None,
            send_op: None,
            connect_op: None,
            starved: false,
            eof: false,
            error: None,
            staged: Vec::new(),
            spare: Vec::new(),
            connected: None,
            waiter: None,
            ops: 0,
            released: false,
        }
    }

    fn wake(&mut self) {
        if let Some(waker) = self.waiter.take() {
            waker.wake();
        }
    }
}

/// Keeps `cx`'s waker in `slot` (cloning only when it changed).
fn remember(slot: &mut Option<Waker>, cx: &Context<'_>) {
    match slot {
        Some(waker) if waker.will_wake(cx.waker()) => {}
        _ => *slot = Some(cx.waker().clone()),
    }
}

/// Where a connection goes.
pub(crate) enum Peer<'a> {
    /// A TCP address.
    Tcp(SocketAddr),
    /// A unix socket path.
    Unix(&'a Path),
}

impl Uring {
    /// A ring for a thread of `connections` connections (`sqpoll`: with a kernel thread polling
    /// its submission queue). Must be called inside the thread's runtime.
    pub(crate) fn new(connections: usize, sqpoll: bool) -> io::Result<Rc<Self>> {
        // The submission queue only holds one turn's operations (a full one is submitted and
        // reused); the completion queue, four times larger, stays within the kernel's 65,536.
        let entries = connections.clamp(256, 1024).next_power_of_two() as u32;
        // Enough for a turn of responses on most connections; a lent buffer touches at least a
        // page, so more buffers than needed would show in the RSS per connection at -c 16000.
        let buffers = (connections * 2).clamp(64, 128).next_power_of_two() as u16;
        let files = u32::try_from(connections * 2 + 64)
            .unwrap_or(u32::MAX)
            .min(fd_limit());
        let ring = Ring::new(Sizes {
            entries,
            buffers,
            buffer_size: BUFFER_SIZE,
            files,
            sqpoll_idle_ms: sqpoll.then_some(SQPOLL_IDLE_MS),
        })?;
        Ok(Rc::new(Uring {
            ring: RefCell::new(ring),
            conns: RefCell::new(Slab::new()),
            submit_wanted: Cell::new(false),
            pump: RefCell::new(None),
            events: RefCell::new(Vec::new()),
            alarm: RefCell::default(),
            starved: RefCell::default(),
        }))
    }

    /// Submits what connections queue and hands them what completes, for as long as the thread
    /// runs; returns only if the ring fails.
    pub(crate) async fn pump(self: Rc<Self>) -> io::Result<()> {
        loop {
            self.submit_wanted.set(false);
            self.ring.borrow_mut().submit()?;
            let mut events = self.events.take();
            while self.ring.borrow_mut().reap(&mut events) {
                for event in events.drain(..) {
                    self.on_event(event)?;
                }
            }
            *self.events.borrow_mut() = events;
            self.feed_starved()?;
            poll_fn(|cx| self.poll_work(cx)).await?;
        }
    }

    /// Ready when operations wait to be submitted or completions to be reaped.
    fn poll_work(&self, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        if self.submit_wanted.get() {
            return Poll::Ready(Ok(()));
        }
        remember(&mut self.pump.borrow_mut(), cx);
        self.ring.borrow().poll_completions(cx)
    }

    /// Asks the pump to submit at the end of this turn of the runtime.
    fn want_submit(&self) {
        if !self.submit_wanted.replace(true) {
            if let Some(waker) = self.pump.borrow_mut().take() {
                waker.wake();
            }
        }
    }

    /// Sets the thread's alarm to go off at `deadline`, replacing any earlier setting: a ring
    /// timeout, submitted with the turn's other operations (no syscall of its own), as precise
    /// as a timerfd.
    pub(crate) fn arm_alarm(&self, deadline: std::time::Instant) -> io::Result<()> {
        let mut ring = self.ring.borrow_mut();
        let mut alarm = self.alarm.borrow_mut();
        if let Some(old) = alarm.op.take() {
            ring.remove_timeout(old)?;
        }
        alarm.op = Some(ring.timeout(deadline)?);
        alarm.fired = false;
        self.want_submit();
        Ok(())
    }

    /// Completes when the alarm goes off.
    pub(crate) async fn alarm(&self) {
        poll_fn(|cx| {
            let mut alarm = self.alarm.borrow_mut();
            if std::mem::take(&mut alarm.fired) {
                return Poll::Ready(());
            }
            remember(&mut alarm.waiter, cx);
            Poll::Pending
        })
        .await;
    }

    fn on_event(&self, event: Event) -> io::Result<()> {
        if event.kind == Kind::Timeout {
            let mut alarm = self.alarm.borrow_mut();
            // A timeout replaced since (its removal's -ECANCELED) is not the alarm.
            if alarm.op == Some(event.op) {
                alarm.op = None;
                alarm.fired = true;
                if let Some(waker) = alarm.waiter.take() {
                    waker.wake();
                }
            }
            return Ok(());
        }
        let mut conns = self.conns.borrow_mut();
        let Some(conn) = conns.get_mut(event.conn as usize) else {
            return Ok(());
        };
        if event.last {
            conn.ops -= 1;
            for op in [&mut conn.recv_op, &mut conn.send_op, &mut conn.connect_op] {
                if *op == Some(event.op) {
                    *op = None;
                }
            }
        }
        if conn.released {
            if let Some(buffer) = event.buffer {
                self.ring.borrow_mut().give_back(buffer);
            }
            if conn.ops == 0 {
                conns.remove(event.conn as usize);
            }
            return Ok(());
        }
        match event.kind {
            Kind::Connect => {
                conn.connected = Some(event.result);
                conn.wake();
            }
            Kind::Recv => {
                match (event.buffer, event.result) {
                    (Some(buffer), count) if count > 0 => conn.received.push_back(buffer),
                    (buffer, 0) => {
                        if let Some(buffer) = buffer {
                            self.ring.borrow_mut().give_back(buffer);
                        }
                        conn.eof = true;
                    }
                    // Out of provided buffers: armed again once some come back.
                    (_, error) if error == -libc::ENOBUFS => {
                        conn.starved = true;
                        self.starved.borrow_mut().push_back(event.conn);
                        return Ok(());
                    }
                    (_, error) => conn.error = Some(error),
                }
                conn.wake();
            }
            Kind::Send => {
                let (bytes, from) = event.sent.expect("a send's completion brings its bytes");
                if event.result < 0 {
                    conn.error.get_or_insert(event.result);
                    conn.wake();
                } else if from + (event.result as usize) < bytes.len() {
                    // A partial send: the rest goes at once, before anything staged since.
                    let target = conn.target;
                    conn.send_op = Some(self.ring.borrow_mut().send(
                        event.conn,
                        target,
                        bytes,
                        from + event.result as usize,
                    )?);
                    conn.ops += 1;
                    self.want_submit();
                } else {
                    let mut bytes = bytes;
                    bytes.clear();
                    if bytes.capacity() > KEEP_CAPACITY {
                        bytes = Vec::new();
                    }
                    if conn.staged.is_empty() {
                        // Idle: one buffer kept, not two (the staged one may be a spare too).
                        conn.staged = bytes;
                    } else {
                        conn.spare = bytes;
                        self.start_send(event.conn, conn)?;
                    }
                    conn.wake();
                }
            }
            Kind::Housekeeping | Kind::Timeout => {}
        }
        Ok(())
    }

    /// Arms the receives that stopped for want of buffers again, while buffers are free.
    fn feed_starved(&self) -> io::Result<()> {
        let mut starved = self.starved.borrow_mut();
        let mut conns = self.conns.borrow_mut();
        // One receive per free buffer: each armed receive takes one as soon as bytes wait, and
        // arming more would only see them fail again for want of buffers.
        let mut free = self.ring.borrow().free_buffers();
        while free > 0 {
            let Some(key) = starved.pop_front() else {
                break;
            };
            // A key whose connection went (or was reused by a new one) is no longer starved.
            let Some(conn) = conns.get_mut(key as usize).filter(|conn| conn.starved) else {
                continue;
            };
            conn.starved = false;
            if conn.recv_op.is_none() && !conn.eof && conn.error.is_none() {
                self.start_recv(key, conn)?;
                free -= 1;
            }
        }
        Ok(())
    }

    /// Buffers came back: starved receives may go on (the pump arms them).
    fn buffers_returned(&self) {
        if !self.starved.borrow().is_empty() {
            self.want_submit();
        }
    }

    /// Sends what `conn` has staged.
    fn start_send(&self, key: u32, conn: &mut ConnIo) -> io::Result<()> {
        let bytes = std::mem::replace(&mut conn.staged, std::mem::take(&mut conn.spare));
        conn.send_op = Some(self.ring.borrow_mut().send(key, conn.target, bytes, 0)?);
        conn.ops += 1;
        self.want_submit();
        Ok(())
    }

    /// Arms `conn`'s multishot receive.
    fn start_recv(&self, key: u32, conn: &mut ConnIo) -> io::Result<()> {
        conn.recv_op = Some(self.ring.borrow_mut().recv(key, conn.target)?);
        conn.ops += 1;
        self.want_submit();
        Ok(())
    }

    /// Opens a connection to `peer` through the ring (TCP with `TCP_NODELAY`, as the epoll
    /// backend's).
    pub(crate) async fn connect(self: &Rc<Self>, peer: &Peer<'_>) -> io::Result<RingStream> {
        let (family, address) = match peer {
            Peer::Tcp(addr) => (
                if addr.is_ipv4() {
                    AddressFamily::INET
                } else {
                    AddressFamily::INET6
                },
                SocketAddrAny::from(*addr),
            ),
            Peer::Unix(path) => (
                AddressFamily::UNIX,
                SocketAddrAny::from(SocketAddrUnix::new(*path)?),
            ),
        };
        let socket = rustix::net::socket_with(
            family,
            SocketType::STREAM,
            SocketFlags::NONBLOCK | SocketFlags::CLOEXEC,
            None,
        )?;
        if matches!(peer, Peer::Tcp(_)) {
            // Best effort, as on epoll: a socket that refuses NODELAY still carries requests.
            let _ = rustix::net::sockopt::set_tcp_nodelay(&socket, true);
        }
        let target = self.ring.borrow_mut().adopt(socket)?;
        let key = self.conns.borrow_mut().insert(ConnIo::new(target)) as u32;
        // From here on, dropping the stream (a connect timeout) cancels and closes.
        let stream = RingStream {
            uring: self.clone(),
            key,
        };
        let op = self
            .ring
            .borrow_mut()
            .connect(key, target, Box::new(address))?;
        {
            let mut conns = self.conns.borrow_mut();
            conns[key as usize].ops += 1;
            conns[key as usize].connect_op = Some(op);
        }
        self.want_submit();
        let result = poll_fn(|cx| {
            let mut conns = self.conns.borrow_mut();
            let conn = &mut conns[key as usize];
            match conn.connected {
                Some(result) => Poll::Ready(result),
                None => {
                    remember(&mut conn.waiter, cx);
                    Poll::Pending
                }
            }
        })
        .await;
        if result < 0 {
            return Err(io::Error::from_raw_os_error(-result));
        }
        let mut conns = self.conns.borrow_mut();
        self.start_recv(key, &mut conns[key as usize])?;
        drop(conns);
        Ok(stream)
    }

    fn poll_read(
        &self,
        key: u32,
        cx: &mut Context<'_>,
        buf: &mut ReadBuf<'_>,
    ) -> Poll<io::Result<()>> {
        let mut conns = self.conns.borrow_mut();
        let conn = &mut conns[key as usize];
        if conn.received.is_empty() {
            if let Some(error) = conn.error {
                return Poll::Ready(Err(io::Error::from_raw_os_error(-error)));
            }
            if conn.eof {
                return Poll::Ready(Ok(()));
            }
            if conn.recv_op.is_none() && !conn.starved {
                self.start_recv(key, conn)?;
            }
            remember(&mut conn.waiter, cx);
            return Poll::Pending;
        }
        let mut ring = self.ring.borrow_mut();
        while buf.remaining() > 0 {
            let Some(front) = conn.received.front() else {
                break;
            };
            let bytes = &ring.bytes(front)[conn.read_offset as usize..];
            let take = bytes.len().min(buf.remaining());
            buf.put_slice(&bytes[..take]);
            conn.read_offset += take as u32;
            if conn.read_offset as usize == front.len() {
                let buffer = conn
                    .received
                    .pop_front()
                    .expect("the front buffer is there");
                ring.give_back(buffer);
                conn.read_offset = 0;
            }
        }
        drop(ring);
        self.buffers_returned();
        Poll::Ready(Ok(()))
    }

    fn poll_write(
        &self,
        key: u32,
        cx: &mut Context<'_>,
        bufs: &[IoSlice<'_>],
    ) -> Poll<io::Result<usize>> {
        let mut conns = self.conns.borrow_mut();
        let conn = &mut conns[key as usize];
        if let Some(error) = conn.error {
            return Poll::Ready(Err(io::Error::from_raw_os_error(-error)));
        }
        let room = STAGE_LIMIT.saturating_sub(conn.staged.len());
        if room == 0 {
            remember(&mut conn.waiter, cx);
            return Poll::Pending;
        }
        let mut taken = 0;
        for buf in bufs {
            let take = buf.len().min(room - taken);
            conn.staged.extend_from_slice(&buf[..take]);
            taken += take;
            if taken == room {
                break;
            }
        }
        if conn.send_op.is_none() && taken > 0 {
            self.start_send(key, conn)?;
        }
        Poll::Ready(Ok(taken))
    }

    /// The stream is gone: its buffers go back, its operations are cancelled and its socket
    /// closed; the entry goes once the kernel is done with it.
    fn release(&self, key: u32) {
        let mut conns = self.conns.borrow_mut();
        let conn = &mut conns[key as usize];
        conn.released = true;
        // Its place in the starved queue is skipped (see `feed_starved`).
        conn.starved = false;
        let mut ring = self.ring.borrow_mut();
        for buffer in conn.received.drain(..) {
            ring.give_back(buffer);
        }
        // A failure to queue these leaves them to the ring's teardown.
        for op in [conn.recv_op, conn.send_op, conn.connect_op]
            .into_iter()
            .flatten()
        {
            let _ = ring.cancel(op);
        }
        let _ = ring.close(conn.target);
        drop(ring);
        self.buffers_returned();
        if conn.ops == 0 {
            conns.remove(key as usize);
        }
        self.want_submit();
    }
}

/// The soft limit on open descriptors: registered file tables may not be larger.
fn fd_limit() -> u32 {
    rlimit::getrlimit(rlimit::Resource::NOFILE).map_or(u32::MAX, |(soft, _)| {
        u32::try_from(soft).unwrap_or(u32::MAX)
    })
}

/// A connection on a thread's ring: a byte stream to the driver and to TLS.
pub(crate) struct RingStream {
    uring: Rc<Uring>,
    key: u32,
}

impl Drop for RingStream {
    fn drop(&mut self) {
        self.uring.release(self.key);
    }
}

impl AsyncRead for RingStream {
    fn poll_read(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &mut ReadBuf<'_>,
    ) -> Poll<io::Result<()>> {
        self.uring.poll_read(self.key, cx, buf)
    }
}

impl AsyncWrite for RingStream {
    fn poll_write(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &[u8],
    ) -> Poll<io::Result<usize>> {
        self.uring.poll_write(self.key, cx, &[IoSlice::new(buf)])
    }

    fn poll_write_vectored(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        bufs: &[IoSlice<'_>],
    ) -> Poll<io::Result<usize>> {
        self.uring.poll_write(self.key, cx, bufs)
    }

    fn is_write_vectored(&self) -> bool {
        true
    }

    /// Written bytes are already the ring's to send.
    fn poll_flush(self: Pin<&mut Self>, _: &mut Context<'_>) -> Poll<io::Result<()>> {
        Poll::Ready(Ok(()))
    }

    fn poll_shutdown(self: Pin<&mut Self>, _: &mut Context<'_>) -> Poll<io::Result<()>> {
        Poll::Ready(Ok(()))
    }
}
