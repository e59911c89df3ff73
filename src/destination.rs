//! Where the bytes of a file the tool writes go. Replacing a file by renaming a new one over it is
//! what keeps a regular file whole, but the same rename over a device node, a FIFO, a socket or a
//! symlink replaces the node or the link itself: a root user's `--hdr-log /dev/null` became a
//! regular file, and `--json /dev/stdout` replaced the link and printed nothing. So a path is
//! first followed through its symlinks and then written the way its kind needs.

use std::fs::{self, File, OpenOptions};
use std::io::{self, Write};
use std::os::fd::{AsFd, OwnedFd};
use std::os::unix::fs::{FileTypeExt, MetadataExt};
use std::os::unix::net::UnixStream;
use std::path::{Path, PathBuf};
use std::sync::{Mutex, MutexGuard, PoisonError};

use tempfile::NamedTempFile;

/// How many symlinks a path may go through before it is refused, as Linux refuses (ELOOP).
const MAX_LINKS: usize = 40;

/// Where a path's bytes go.
#[derive(Debug, PartialEq, Eq)]
pub(crate) enum Destination {
    /// `-`, or the very file (pipe, terminal, ...) standard output already is: written through
    /// the process's standard output, after what it holds.
    Stdout,
    /// A character device, FIFO or socket: opened (connected, for a socket) and written, never
    /// renamed over. A FIFO's open waits for its reader.
    Node(PathBuf),
    /// A regular file, or none yet: the file at the end of the path's symlinks, replaced whole by
    /// one rename beside it.
    File(PathBuf),
}

impl Destination {
    /// Where the bytes for `path` go; an error for a directory, a loop of symlinks, or a path
    /// that cannot be looked at.
    pub(crate) fn of(path: &Path) -> io::Result<Destination> {
        if path == Path::new("-") {
            return Ok(Destination::Stdout);
        }
        match fs::metadata(path) {
            Ok(metadata) if is_standard_output(&metadata) => Ok(Destination::Stdout),
            Ok(metadata) if metadata.is_dir() => Err(io::Error::new(
                io::ErrorKind::IsADirectory,
                "it is a directory",
            )),
            Ok(metadata) if metadata.is_file() => Ok(regular(path, &metadata)),
            Ok(_) => Ok(Destination::Node(path.to_owned())),
            // Nothing there yet (or a parent that is no directory: creating the file will say so).
            Err(error)
                if matches!(
                    error.kind(),
                    io::ErrorKind::NotFound | io::ErrorKind::NotADirectory
                ) =>
            {
                end_of_links(path).map(Destination::File)
            }
            Err(error) => Err(error),
        }
    }

    /// Whether the file is replaced whole, so writing it again (after each cell of a sweep)
    /// leaves one complete copy; a node or standard output would receive every copy.
    pub(crate) fn is_replaced(&self) -> bool {
        matches!(self, Destination::File(_))
    }

    /// Writes `bytes` to the destination.
    pub(crate) fn write(&self, bytes: &[u8]) -> io::Result<()> {
        match self {
            Destination::Stdout => {
                let mut stdout = io::stdout().lock();
                stdout.write_all(bytes)?;
                stdout.flush()
            }
            Destination::Node(path) => open_through(path)?.write_all(bytes),
            Destination::File(path) => replace(path, bytes),
        }
    }
}

/// A regular file at `path`: the rename goes to the file the symlinks lead to. A file that path
/// cannot name again (a deleted file reached through `/proc/PID/fd/N`) is written in place.
fn regular(path: &Path, metadata: &fs::Metadata) -> Destination {
    let same_file = |target: &Path| {
        fs::metadata(target)
            .is_ok_and(|found| (found.dev(), found.ino()) == (metadata.dev(), metadata.ino()))
    };
    match fs::canonicalize(path) {
        Ok(target) if same_file(&target) => Destination::File(target),
        _ => Destination::Node(path.to_owned()),
    }
}

/// Whether `metadata` is that of the file standard output is open on: renaming over it would
/// leave the process writing to a file nobody can open any more, and opening it anew would
/// start at its beginning, over what the shell's redirection had already received.
fn is_standard_output(metadata: &fs::Metadata) -> bool {
    rustix::fs::fstat(io::stdout().as_fd())
        .is_ok_and(|stat| (stat.st_dev, stat.st_ino) == (metadata.dev(), metadata.ino()))
}

/// The path a chain of symlinks ending nowhere leads to (`path` itself when it is no symlink):
/// a link to a file not yet made creates that file and keeps the link.
fn end_of_links(path: &Path) -> io::Result<PathBuf> {
    let mut current = path.to_owned();
    for _ in 0..MAX_LINKS {
        match fs::symlink_metadata(&current) {
            Ok(metadata) if metadata.file_type().is_symlink() => {
                // A relative target is relative to the link's directory; `join` keeps an
                // absolute one as it is.
                let target = fs::read_link(&current)?;
                current = directory_of(&current).join(target);
            }
            _ => return Ok(current),
        }
    }
    Err(io::Error::other("too many levels of symbolic links"))
}

/// The directory a path's file lives in (`.` for a bare name).
pub(crate) fn directory_of(path: &Path) -> &Path {
    match path.parent() {
        Some(parent) if !parent.as_os_str().is_empty() => parent,
        _ => Path::new("."),
    }
}

/// Opens the node at `path` for writing: a socket is connected to, anything else opened (a
/// regular file reached here is truncated, a device or FIFO is not a file to truncate).
pub(crate) fn open_through(path: &Path) -> io::Result<File> {
    let kind = fs::metadata(path)?.file_type();
    if kind.is_socket() {
        return Ok(File::from(OwnedFd::from(UnixStream::connect(path)?)));
    }
    OpenOptions::new()
        .write(true)
        .truncate(kind.is_file())
        .open(path)
}

/// Replaces the regular file `path` with `bytes` in one rename: readers see the old file or the
/// new one, whole.
fn replace(path: &Path, bytes: &[u8]) -> io::Result<()> {
    let temporary = Temporary::beside(path)?;
    temporary.as_file().write_all(bytes)?;
    temporary.persist(path)
}

/// A temporary file beside the path it is to become, with the permissions a new file gets (0666
/// less the umask) rather than tempfile's private 0600. Until it is renamed into place it is
/// removed when dropped, and by a quit forced by a second signal.
pub(crate) struct Temporary {
    file: Option<NamedTempFile>,
}

impl Temporary {
    /// An empty temporary file in the directory of `path`, named after it (`.NAME.XXXXXX.tmp`).
    pub(crate) fn beside(path: &Path) -> io::Result<Temporary> {
        use std::os::unix::fs::PermissionsExt;
        let name = path
            .file_name()
            .map_or_else(String::new, |name| name.to_string_lossy().into_owned());
        let mut unfinished = unfinished_files();
        let file = tempfile::Builder::new()
            .prefix(&format!(".{name}."))
            .suffix(".tmp")
            .permissions(fs::Permissions::from_mode(0o666))
            .tempfile_in(directory_of(path))?;
        unfinished.push(file.path().to_owned());
        Ok(Temporary { file: Some(file) })
    }

    /// The open file, to write into (a handle that stays valid after the rename).
    pub(crate) fn as_file(&self) -> &File {
        self.file.as_ref().expect("held until persisted").as_file()
    }

    /// Renames the file to `path`.
    pub(crate) fn persist(mut self, path: &Path) -> io::Result<()> {
        let file = self.file.take().expect("held until persisted");
        let mut unfinished = unfinished_files();
        forget(&mut unfinished, file.path());
        // On failure the file comes back in the error, whose drop removes it.
        file.persist(path).map(drop).map_err(|error| error.error)
    }
}

impl Drop for Temporary {
    fn drop(&mut self) {
        if let Some(file) = self.file.take() {
            let mut unfinished = unfinished_files();
            forget(&mut unfinished, file.path());
            drop(file);
        }
    }
}

/// Our temporary files not yet renamed into place: a forced quit removes them, as the tool leaves
/// nothing of its own behind (`process::exit` runs no destructor that would).
static UNFINISHED: Mutex<Vec<PathBuf>> = Mutex::new(Vec::new());

/// The list of temporary files a forced quit removes. Hold it while creating a file and adding
/// its path, and while renaming one and taking its path out: a quit, which holds it from the
/// removals to the exit, then finds each file either listed or no longer temporary.
fn unfinished_files() -> MutexGuard<'static, Vec<PathBuf>> {
    UNFINISHED.lock().unwrap_or_else(PoisonError::into_inner)
}

/// Removes every temporary file not yet in place, for a quit forced by a second signal; the
/// list stays locked while the guard is held, so hold it until the process exits.
pub(crate) fn remove_unfinished() -> MutexGuard<'static, Vec<PathBuf>> {
    let unfinished = unfinished_files();
    for path in unfinished.iter() {
        // Nothing more can be done about a file that cannot be removed while quitting.
        let _ = fs::remove_file(path);
    }
    unfinished
}

/// Takes `path` out of the list of unfinished files.
fn forget(unfinished: &mut Vec<PathBuf>, path: &Path) {
    unfinished.retain(|listed| listed != path);
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn temporary_files_are_listed_for_a_forced_quit_until_placed_or_dropped() {
        let dir = tempfile::tempdir().unwrap();
        let listed = |path: &Path| unfinished_files().iter().any(|p| p == path);
        let placed = Temporary::beside(&dir.path().join("a.json")).unwrap();
        let placed_path = placed.file.as_ref().unwrap().path().to_owned();
        let dropped = Temporary::beside(&dir.path().join("b.json")).unwrap();
        let dropped_path = dropped.file.as_ref().unwrap().path().to_owned();
        assert!(listed(&placed_path) && listed(&dropped_path));
        placed.persist(&dir.path().join("a.json")).unwrap();
        drop(dropped);
        assert!(!listed(&placed_path) && !listed(&dropped_path));
        let names: Vec<_> = fs::read_dir(dir.path())
            .unwrap()
            .map(|entry| entry.unwrap().file_name())
            .collect();
        assert_eq!(names, ["a.json"]);
    }

    #[test]
    fn paths_are_sorted_by_what_they_name() {
        let dir = tempfile::tempdir().unwrap();
        let file = dir.path().join("file");
        fs::write(&file, "x").unwrap();
        std::os::unix::fs::symlink(&file, dir.path().join("link")).unwrap();
        std::os::unix::fs::symlink("missing", dir.path().join("dangling")).unwrap();
        std::os::unix::fs::symlink("loop", dir.path().join("loop")).unwrap();
        let real = fs::canonicalize(dir.path()).unwrap();
        assert_eq!(
            Destination::of(Path::new("-")).unwrap(),
            Destination::Stdout
        );
        assert_eq!(
            Destination::of(&dir.path().join("link")).unwrap(),
            Destination::File(real.join("file"))
        );
        assert_eq!(
            Destination::of(&dir.path().join("dangling")).unwrap(),
            Destination::File(dir.path().join("missing"))
        );
        assert_eq!(
            Destination::of(&dir.path().join("new")).unwrap(),
            Destination::File(dir.path().join("new"))
        );
        assert_eq!(
            Destination::of(Path::new("/dev/null")).unwrap(),
            Destination::Node(PathBuf::from("/dev/null"))
        );
        assert_eq!(
            Destination::of(dir.path()).unwrap_err().kind(),
            io::ErrorKind::IsADirectory
        );
        assert!(Destination::of(&dir.path().join("loop")).is_err());
    }

    #[test]
    fn a_socket_is_connected_to_and_written() {
        use std::io::Read;
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("socket");
        let listener = std::os::unix::net::UnixListener::bind(&path).unwrap();
        let destination = Destination::of(&path).unwrap();
        assert_eq!(destination, Destination::Node(path.clone()));
        assert!(!destination.is_replaced());
        destination.write(b"report").unwrap();
        let mut received = String::new();
        listener
            .accept()
            .unwrap()
            .0
            .read_to_string(&mut received)
            .unwrap();
        assert_eq!(received, "report");
        assert!(fs::symlink_metadata(&path).unwrap().file_type().is_socket());
    }
}
