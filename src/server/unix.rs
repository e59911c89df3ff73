//! The socket file of `serve --unix PATH`: a stale one is replaced, ours is removed at exit.

use std::io;
use std::os::unix::fs::FileTypeExt;
use std::path::{Path, PathBuf};

use tokio::net::UnixListener;

/// The socket file a listener is bound to; dropping it removes the file.
#[derive(Debug)]
pub(crate) struct SocketFile(PathBuf);

impl Drop for SocketFile {
    fn drop(&mut self) {
        let _ = std::fs::remove_file(&self.0);
    }
}

/// Listens on the unix socket `path`, removing a socket file already there (one a killed server
/// left behind; a live server's goes too, as with most servers). Anything else at `path` is
/// left alone and is an error. Must be called within a tokio runtime.
pub(crate) fn listen_unix(path: &Path) -> io::Result<(UnixListener, SocketFile)> {
    match std::fs::symlink_metadata(path) {
        Ok(metadata) if metadata.file_type().is_socket() => std::fs::remove_file(path)?,
        Ok(_) => {
            return Err(io::Error::new(
                io::ErrorKind::AlreadyExists,
                "a file that is not a socket is there; not replacing it",
            ))
        }
        Err(error) if error.kind() == io::ErrorKind::NotFound => {}
        Err(error) => return Err(error),
    }
    let listener = UnixListener::bind(path)?;
    Ok((listener, SocketFile(path.to_owned())))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn stale_sockets_are_replaced_other_files_kept_and_ours_removed() {
        let runtime = tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
            .unwrap();
        let _guard = runtime.enter();
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("target.sock");
        // A socket file nobody listens on any more.
        drop(std::os::unix::net::UnixListener::bind(&path).unwrap());
        assert!(path.exists());
        let (listener, file) = listen_unix(&path).unwrap();
        std::os::unix::net::UnixStream::connect(&path).unwrap();
        drop(listener);
        drop(file);
        assert!(!path.exists());

        std::fs::write(&path, "data").unwrap();
        let error = listen_unix(&path).unwrap_err();
        assert!(error.to_string().contains("not a socket"), "{error}");
        assert_eq!(std::fs::read(&path).unwrap(), b"data");
    }
}
