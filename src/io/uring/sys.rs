//! The library's one module with `unsafe`: io_uring's submission queue and its provided-buffer
//! ring take raw pointers to memory the kernel reads or writes after the call returns. Besides
//! the ring, one socket option that neither rustix nor socket2 offers is set here
//! ([`set_receive_low_water`]).
//!
//! Soundness rests on one rule, kept inside this module: every pointer given to the kernel points
//! into memory this module owns until the operation's last completion comes back. A send's
//! buffer and a connect's address move into the operation's entry in `ops` and come back with its
//! completion; received bytes land in the buffer ring's memory, which lives as long as the ring.
//! When the ring goes away with operations still in flight, they are cancelled and awaited; if
//! the kernel does not finish them in time, their memory is leaked rather than freed under it.
//!
//! One file past ~600 lines on purpose: it is the crate's one `unsafe` boundary, kept whole so
//! that every pointer handed to the kernel is read beside the code that takes it back.
#![allow(unsafe_code)]

use std::io;
use std::mem::{self, ManuallyDrop};
use std::os::fd::{AsRawFd, BorrowedFd, OwnedFd, RawFd};
use std::ptr::NonNull;
use std::sync::atomic::{AtomicU16, Ordering};
use std::time::{Duration, Instant};

use std::task::{Context, Poll};

use io_uring::types::{CancelBuilder, Fd, Fixed, SubmitArgs, TimeoutFlags, Timespec};
use io_uring::{cqueue, opcode, squeue, IoUring};
use rustix::net::SocketAddrAny;
use slab::Slab;
use tokio::io::unix::AsyncFd;
use tokio::io::Interest;

/// The ring's descriptor, for the runtime to poll (owned by the ring).
struct RingFd(RawFd);

impl AsRawFd for RingFd {
    fn as_raw_fd(&self) -> RawFd {
        self.0
    }
}

/// The buffer group of the ring's provided buffers (one group per ring).
const GROUP: u16 = 0;
/// Completions taken per [`Ring::reap`].
const REAP_BATCH: usize = 256;
/// How long a ring being torn down waits for the kernel to finish its operations.
const TEARDOWN_WAIT: Duration = Duration::from_secs(2);

/// How many of each thing a ring is made for.
#[derive(Debug, Clone, Copy)]
pub(super) struct Sizes {
    /// Submission queue entries (a power of two); the completion queue has four times as many.
    pub(super) entries: u32,
    /// Provided receive buffers (a power of two, at most 32768).
    pub(super) buffers: u16,
    /// Bytes in each receive buffer.
    pub(super) buffer_size: u32,
    /// Registered (fixed) file slots.
    pub(super) files: u32,
    /// A kernel thread polls the submission queue (`--io-sqpoll`), idling after this many ms.
    pub(super) sqpoll_idle_ms: Option<u32>,
}

/// The socket an operation works on: a registered (fixed) file slot, or a plain descriptor when
/// the table is full.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Target {
    /// A slot of the registered file table.
    Fixed(u32),
    /// A plain descriptor, owned by the ring until its close.
    Fd(RawFd),
}

/// What an operation is, as its completion reports it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Kind {
    /// A connect.
    Connect,
    /// A multishot receive into provided buffers.
    Recv,
    /// A send.
    Send,
    /// A timeout (the thread's alarm): `-ETIME` when it fired.
    Timeout,
    /// A cancellation or close: nothing to tell the connection.
    Housekeeping,
}

/// Received bytes in one of the ring's provided buffers, held until given back
/// ([`Ring::give_back`]).
#[derive(Debug)]
pub(super) struct Buffer {
    id: u16,
    len: u32,
}

impl Buffer {
    /// How many bytes it holds.
    pub(super) fn len(&self) -> usize {
        self.len as usize
    }
}

/// One completion, for the connection `conn`.
#[derive(Debug)]
pub(super) struct Event {
    /// The operation's key (what [`Ring::timeout`] returned, for a timeout).
    pub(super) op: u32,
    /// The connection's key.
    pub(super) conn: u32,
    /// What the operation was.
    pub(super) kind: Kind,
    /// The kernel's result: a count, or a negated errno.
    pub(super) result: i32,
    /// The operation is over (a multishot receive goes on while this is false).
    pub(super) last: bool,
    /// The received bytes, for a receive that got some.
    pub(super) buffer: Option<Buffer>,
    /// A send's buffer, back from the kernel, and how far it had been sent before this send.
    pub(super) sent: Option<(Vec<u8>, usize)>,
}

/// What an operation's entry keeps alive for the kernel.
enum Held {
    Nothing,
    /// A send's bytes and where this send began in them.
    Send(Vec<u8>, usize),
    /// A connect's address (only kept: the kernel reads it).
    Address(
        #[expect(dead_code, reason = "kept alive for the kernel, never read here")]
        Box<SocketAddrAny>,
    ),
    /// A close of a registered slot: the slot is free again once it completes.
    Slot(u32),
    /// A timeout's expiry (the kernel reads it when the timeout is submitted).
    Expiry(Box<Timespec>),
}

struct Op {
    conn: u32,
    kind: Kind,
    held: Held,
}

/// The provided-buffer ring: `count` buffers of `size` bytes that the kernel picks from for
/// multishot receives, and the ring of entries through which they are handed to it.
struct BufRing {
    /// The entries (page-aligned, as the kernel requires), `count` of them. Only ever written
    /// through raw pointers: the kernel reads them (and the tail inside the first) concurrently.
    entries: NonNull<Entry>,
    layout: std::alloc::Layout,
    /// The buffers, `count` × `size` bytes of an anonymous mapping: its pages are touched (and
    /// count in the RSS) only once the kernel receives into them. Only ever reached through raw
    /// pointers, and read only where the kernel has handed a buffer over (a completion), as it
    /// writes the others.
    data: NonNull<u8>,
    data_len: usize,
    count: u16,
    size: u32,
    /// The next entry to fill; published to the kernel through the tail field.
    tail: u16,
    /// Buffers holding received bytes, not yet given back.
    lent: u16,
}

/// One entry of a buffer ring, `struct io_uring_buf`; the first entry's `resv` is the ring's tail.
#[repr(C)]
struct Entry {
    addr: u64,
    len: u32,
    bid: u16,
    resv: u16,
}

impl BufRing {
    fn new(count: u16, size: u32) -> io::Result<Self> {
        assert!(count.is_power_of_two(), "buffer rings hold a power of two");
        let invalid = |_| io::Error::from(io::ErrorKind::InvalidInput);
        let layout =
            std::alloc::Layout::from_size_align(usize::from(count) * mem::size_of::<Entry>(), 4096)
                .map_err(invalid)?;
        let data_len = usize::from(count) * size as usize;
        // SAFETY: a fresh private anonymous mapping, owned by this ring until `drop` unmaps it.
        let data = unsafe {
            rustix::mm::mmap_anonymous(
                std::ptr::null_mut(),
                data_len,
                rustix::mm::ProtFlags::READ | rustix::mm::ProtFlags::WRITE,
                rustix::mm::MapFlags::PRIVATE,
            )
        }?;
        // SAFETY: the layout has a non-zero size; zeroed entries are valid (the tail is 0).
        let entries = unsafe { std::alloc::alloc_zeroed(layout) };
        let (Some(entries), Some(data)) = (NonNull::new(entries), NonNull::new(data.cast::<u8>()))
        else {
            return Err(io::Error::from(io::ErrorKind::OutOfMemory));
        };
        let mut ring = BufRing {
            entries: entries.cast(),
            layout,
            data,
            data_len,
            count,
            size,
            tail: 0,
            lent: 0,
        };
        for id in 0..count {
            ring.push(id);
        }
        ring.publish();
        Ok(ring)
    }

    /// Puts buffer `id` in the next entry (not yet visible to the kernel: see `publish`).
    fn push(&mut self, id: u16) {
        let index = usize::from(self.tail & (self.count - 1));
        // SAFETY: index < count and id < count: both pointers stay inside their allocations.
        // The kernel reads only entries between its head and the published tail, which this one
        // is not yet; `resv` (the first entry's is the tail) is left alone.
        unsafe {
            let addr = self.data.as_ptr().add(usize::from(id) * self.size as usize) as u64;
            let entry = self.entries.as_ptr().add(index);
            (&raw mut (*entry).addr).write(addr);
            (&raw mut (*entry).len).write(self.size);
            (&raw mut (*entry).bid).write(id);
        }
        self.tail = self.tail.wrapping_add(1);
    }

    /// Makes the entries pushed so far visible to the kernel.
    fn publish(&self) {
        // SAFETY: the tail is the `resv` field of the first entry, inside the allocation and
        // 2-aligned; the kernel reads it concurrently, hence the atomic release store.
        unsafe {
            let tail = &raw mut (*self.entries.as_ptr()).resv;
            AtomicU16::from_ptr(tail).store(self.tail, Ordering::Release);
        }
    }

    /// The bytes the kernel received into `buffer`.
    fn bytes(&self, buffer: &Buffer) -> &[u8] {
        let start = usize::from(buffer.id) * self.size as usize;
        // SAFETY: a `Buffer` comes from a completion and is given back only by value
        // (`Ring::give_back`): until then the kernel does not write into it, and its bytes
        // (`len` ≤ `size`, within the allocation) were written by the kernel before the
        // completion was posted.
        unsafe { std::slice::from_raw_parts(self.data.as_ptr().add(start), buffer.len as usize) }
    }
}

impl Drop for BufRing {
    fn drop(&mut self) {
        // SAFETY: allocated in `new` with these layouts; the ring that used them is gone (or
        // they were leaked with it: see `Ring::drop`).
        unsafe {
            std::alloc::dealloc(self.entries.as_ptr().cast(), self.layout);
            let _ = rustix::mm::munmap(self.data.as_ptr().cast(), self.data_len);
        }
    }
}

/// One io_uring, its provided buffers and its registered file table.
pub(super) struct Ring {
    /// The ring's descriptor in the runtime's epoll set, readable while completions wait
    /// (declared before the ring: it leaves the set before the descriptor closes).
    readiness: AsyncFd<RingFd>,
    uring: IoUring,
    /// The eventfd the kernel signals when completion work waits (not with SQPOLL).
    _eventfd: Option<OwnedFd>,
    /// Dropped after the kernel is done with them (or leaked: see `Drop`).
    buffers: ManuallyDrop<BufRing>,
    ops: Slab<Op>,
    free_slots: Vec<u32>,
    completions: Vec<cqueue::Entry>,
    /// Timeout values the kernel is done with, for the next timeouts (boxed: each is handed to
    /// the kernel by address, which must not move while the vector grows).
    #[allow(clippy::vec_box)]
    spare_expiries: Vec<Box<Timespec>>,
}

impl Ring {
    /// Sets up a ring of `sizes` with its buffers and file table registered.
    pub(super) fn new(sizes: Sizes) -> io::Result<Self> {
        let mut builder = IoUring::builder();
        builder.setup_cqsize(sizes.entries * 4);
        match sizes.sqpoll_idle_ms {
            // The kernel thread submits, and completes what it submitted: no work for this one.
            Some(idle) => {
                builder.setup_sqpoll(idle);
            }
            // Completion work waits until this thread asks for completions, in one batch per
            // turn, instead of interrupting it (an IPI and a task-work run per completion
            // without these flags: 8-9 µs of CPU per HTTP/1.1 request instead of 6 here).
            None => {
                builder
                    .setup_single_issuer()
                    .setup_defer_taskrun()
                    .setup_taskrun_flag();
            }
        }
        let uring = builder.build(sizes.entries)?;
        let buffers = BufRing::new(sizes.buffers, sizes.buffer_size)?;
        // SAFETY: the entries stay allocated and in place until the ring is gone (`Drop`).
        unsafe {
            uring.submitter().register_buf_ring_with_flags(
                buffers.entries.as_ptr() as u64,
                buffers.count,
                GROUP,
                0,
            )?;
        }
        uring.submitter().register_files_sparse(sizes.files)?;
        // What the runtime polls: with deferred completion work the ring's own descriptor does
        // not turn readable until that work has run, so the kernel signals an eventfd when work
        // arrives; with SQPOLL, the ring's descriptor.
        let eventfd = match sizes.sqpoll_idle_ms {
            Some(_) => None,
            None => {
                let eventfd = rustix::event::eventfd(
                    0,
                    rustix::event::EventfdFlags::NONBLOCK | rustix::event::EventfdFlags::CLOEXEC,
                )?;
                uring.submitter().register_eventfd(eventfd.as_raw_fd())?;
                Some(eventfd)
            }
        };
        let watched = eventfd
            .as_ref()
            .map_or(uring.as_raw_fd(), AsRawFd::as_raw_fd);
        // SAFETY: the descriptor stays open while registered: `readiness` is dropped before
        // `uring` and `eventfd`, which own them (field order).
        let readiness =
            unsafe { AsyncFd::register_with_interest(RingFd(watched), Interest::READABLE) }
                .map_err(io::Error::from)?;
        Ok(Ring {
            readiness,
            uring,
            _eventfd: eventfd,
            buffers: ManuallyDrop::new(buffers),
            ops: Slab::new(),
            free_slots: (0..sizes.files).rev().collect(),
            completions: Vec::new(),
            spare_expiries: Vec::new(),
        })
    }

    /// Ready once completions may have arrived since the last call returned ready. Call
    /// [`Ring::reap`] after it: the readiness is cleared first, so a completion posted from then
    /// on makes it ready again.
    pub(super) fn poll_completions(&self, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        match self.readiness.poll_read_ready(cx) {
            Poll::Ready(Ok(mut guard)) => {
                guard.clear_ready();
                Poll::Ready(Ok(()))
            }
            Poll::Ready(Err(error)) => Poll::Ready(Err(error)),
            Poll::Pending => Poll::Pending,
        }
    }

    /// Takes `socket` into the registered file table (closing the plain descriptor), or keeps
    /// the descriptor when the table is full.
    pub(super) fn adopt(&mut self, socket: OwnedFd) -> io::Result<Target> {
        let Some(slot) = self.free_slots.pop() else {
            return Ok(Target::Fd(std::os::fd::IntoRawFd::into_raw_fd(socket)));
        };
        match self
            .uring
            .submitter()
            .register_files_update(slot, &[socket.as_raw_fd()])
        {
            Ok(_) => Ok(Target::Fixed(slot)),
            Err(error) => {
                self.free_slots.push(slot);
                Err(error)
            }
        }
    }

    /// Connects `target` to `address`; returns the operation's key.
    pub(super) fn connect(
        &mut self,
        conn: u32,
        target: Target,
        address: Box<SocketAddrAny>,
    ) -> io::Result<u32> {
        let (ptr, len) = (address.as_ptr().cast(), address.addr_len());
        let entry = match target {
            Target::Fixed(slot) => opcode::Connect::new(Fixed(slot), ptr, len).build(),
            Target::Fd(fd) => opcode::Connect::new(Fd(fd), ptr, len).build(),
        };
        self.push(conn, Kind::Connect, Held::Address(address), entry)
    }

    /// Receives on `target` into provided buffers until cancelled, the peer closes, or the
    /// buffers run out.
    pub(super) fn recv(&mut self, conn: u32, target: Target) -> io::Result<u32> {
        let entry = match target {
            Target::Fixed(slot) => opcode::RecvMulti::new(Fixed(slot), GROUP).build(),
            Target::Fd(fd) => opcode::RecvMulti::new(Fd(fd), GROUP).build(),
        };
        self.push(conn, Kind::Recv, Held::Nothing, entry)
    }

    /// Sends `bytes[from..]` on `target`; the bytes come back with the completion. Returns the
    /// operation's key.
    pub(super) fn send(
        &mut self,
        conn: u32,
        target: Target,
        bytes: Vec<u8>,
        from: usize,
    ) -> io::Result<u32> {
        let rest = &bytes[from..];
        let (ptr, len) = (rest.as_ptr(), rest.len() as u32);
        let entry = match target {
            Target::Fixed(slot) => opcode::Send::new(Fixed(slot), ptr, len),
            Target::Fd(fd) => opcode::Send::new(Fd(fd), ptr, len),
        }
        .flags(libc::MSG_NOSIGNAL)
        .build();
        self.push(conn, Kind::Send, Held::Send(bytes, from), entry)
    }

    /// Completes with `-ETIME` at `deadline` (CLOCK_MONOTONIC, the clock of `Instant`) unless
    /// removed first; returns its key.
    pub(super) fn timeout(&mut self, deadline: Instant) -> io::Result<u32> {
        let now = rustix::time::clock_gettime(rustix::time::ClockId::Monotonic);
        let left = deadline.saturating_duration_since(Instant::now());
        let nanos = now.tv_nsec as u64 + u64::from(left.subsec_nanos());
        let value = Timespec::new()
            .sec(now.tv_sec as u64 + left.as_secs() + nanos / 1_000_000_000)
            .nsec((nanos % 1_000_000_000) as u32);
        // A paced run re-arms once per send: the boxes of completed timeouts are reused.
        let expiry = match self.spare_expiries.pop() {
            Some(mut spare) => {
                *spare = value;
                spare
            }
            None => Box::new(value),
        };
        let entry = opcode::Timeout::new(&raw const *expiry)
            .flags(TimeoutFlags::ABS)
            .build();
        self.push(u32::MAX, Kind::Timeout, Held::Expiry(expiry), entry)
    }

    /// Removes the timeout `key` (it completes with `-ECANCELED`, if it had not fired).
    pub(super) fn remove_timeout(&mut self, key: u32) -> io::Result<()> {
        let entry = opcode::TimeoutRemove::new(u64::from(key)).build();
        self.push(u32::MAX, Kind::Housekeeping, Held::Nothing, entry)
            .map(drop)
    }

    /// Cancels the operation `key` (found by its key: a hash lookup, where cancelling by
    /// descriptor scans every armed operation of the ring).
    pub(super) fn cancel(&mut self, key: u32) -> io::Result<()> {
        let entry = opcode::AsyncCancel::new(u64::from(key)).build();
        self.push(u32::MAX, Kind::Housekeeping, Held::Nothing, entry)
            .map(drop)
    }

    /// Closes `target` (operations still in flight on it keep the socket until they end).
    pub(super) fn close(&mut self, target: Target) -> io::Result<()> {
        let (entry, held) = match target {
            Target::Fixed(slot) => (opcode::Close::new(Fixed(slot)).build(), Held::Slot(slot)),
            Target::Fd(fd) => (opcode::Close::new(Fd(fd)).build(), Held::Nothing),
        };
        self.push(u32::MAX, Kind::Housekeeping, held, entry)
            .map(drop)
    }

    /// Queues `entry`, submitting first if the queue is full; returns the operation's key.
    fn push(&mut self, conn: u32, kind: Kind, held: Held, entry: squeue::Entry) -> io::Result<u32> {
        let key = self.ops.insert(Op { conn, kind, held });
        let entry = entry.user_data(key as u64);
        loop {
            // SAFETY: what `entry` points to is owned by `ops[key]` (a send's bytes, a connect's
            // address, both on the heap, so the slab moving them leaves the pointers valid) or is
            // the buffer ring, until the operation's last completion (`reap`).
            if unsafe { self.uring.submission().push(&entry) }.is_ok() {
                return Ok(key as u32);
            }
            if let Err(error) = self.submit() {
                self.ops.remove(key);
                return Err(error);
            }
        }
    }

    /// Hands what is queued to the kernel (with SQPOLL, wakes its thread only if it sleeps).
    pub(super) fn submit(&mut self) -> io::Result<()> {
        if self.uring.submission().is_empty() && !self.uring.submission().taskrun() {
            return Ok(());
        }
        match self.uring.submit() {
            Ok(_) => Ok(()),
            // The completion queue is full (its backlog too): the caller reaps, then submits again.
            Err(error) if error.raw_os_error() == Some(libc::EBUSY) => Ok(()),
            Err(error) if error.kind() == io::ErrorKind::Interrupted => Ok(()),
            Err(error) => Err(error),
        }
    }

    /// Moves the completions that have arrived into `events`; returns whether there were any.
    pub(super) fn reap(&mut self, events: &mut Vec<Event>) -> bool {
        self.completions.clear();
        // In batches: the vectors stay small (a turn of -c 16000 reaps thousands at once).
        self.completions
            .extend(self.uring.completion().take(REAP_BATCH));
        for index in 0..self.completions.len() {
            let cqe = self.completions[index].clone();
            let key = cqe.user_data() as usize;
            let last = !cqueue::more(cqe.flags());
            let buffer = cqueue::buffer_select(cqe.flags()).map(|id| Buffer {
                id,
                len: u32::try_from(cqe.result()).unwrap_or(0),
            });
            self.buffers.lent += u16::from(buffer.is_some());
            let op = if last {
                self.ops.remove(key)
            } else {
                let op = &self.ops[key];
                Op {
                    conn: op.conn,
                    kind: op.kind,
                    held: Held::Nothing,
                }
            };
            let sent = match op.held {
                Held::Send(bytes, from) => Some((bytes, from)),
                Held::Slot(slot) => {
                    self.free_slots.push(slot);
                    None
                }
                Held::Expiry(expiry) => {
                    self.spare_expiries.push(expiry);
                    None
                }
                Held::Nothing | Held::Address(_) => None,
            };
            events.push(Event {
                op: key as u32,
                conn: op.conn,
                kind: op.kind,
                result: cqe.result(),
                last,
                buffer,
                sent,
            });
        }
        !self.completions.is_empty()
    }

    /// The bytes `buffer` holds.
    pub(super) fn bytes(&self, buffer: &Buffer) -> &[u8] {
        self.buffers.bytes(buffer)
    }

    /// Gives `buffer` back to the kernel to receive into again.
    pub(super) fn give_back(&mut self, buffer: Buffer) {
        self.buffers.push(buffer.id);
        self.buffers.publish();
        self.buffers.lent -= 1;
    }

    /// How many buffers the kernel has left to receive into.
    pub(super) fn free_buffers(&self) -> usize {
        usize::from(self.buffers.count - self.buffers.lent)
    }
}

impl Drop for Ring {
    fn drop(&mut self) {
        let _ = self.uring.submit();
        if !self.ops.is_empty() {
            let _ = self
                .uring
                .submitter()
                .register_sync_cancel(None, CancelBuilder::any());
        }
        let until = Instant::now() + TEARDOWN_WAIT;
        let wait = Timespec::new().nsec(10_000_000);
        while !self.ops.is_empty() && Instant::now() < until {
            let args = SubmitArgs::new().timespec(&wait);
            let _ = self.uring.submitter().submit_with_args(1, &args);
            let mut events = Vec::new();
            self.reap(&mut events);
        }
        if self.ops.is_empty() {
            // SAFETY: dropped once, here; the kernel has finished every operation.
            unsafe { ManuallyDrop::drop(&mut self.buffers) };
        } else {
            // Leaked with the operations' own memory: the kernel may still write into them.
            mem::forget(mem::take(&mut self.ops));
        }
    }
}

/// Sets `socket`'s receive low-water mark (`SO_RCVLOWAT`): on TCP, readiness (and so the wake-up
/// of a reader waiting in epoll) then waits until `bytes` are queued, the peer closes, or the
/// receive window is nearly used up; a read still returns what is there. 1 is the default.
pub(crate) fn set_receive_low_water(socket: BorrowedFd<'_>, bytes: usize) -> io::Result<()> {
    let value = libc::c_int::try_from(bytes).unwrap_or(libc::c_int::MAX);
    // SAFETY: the pointer and length describe `value`, which lives until the call returns; the
    // kernel copies it and keeps nothing.
    let result = unsafe {
        libc::setsockopt(
            socket.as_raw_fd(),
            libc::SOL_SOCKET,
            libc::SO_RCVLOWAT,
            (&raw const value).cast(),
            mem::size_of::<libc::c_int>() as libc::socklen_t,
        )
    };
    if result == 0 {
        Ok(())
    } else {
        Err(io::Error::last_os_error())
    }
}
