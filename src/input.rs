//! Reading input files whole, bounded: a file past its limit, or one that is not text (a NUL
//! byte, which neither JSON nor YAML allows: `/dev/zero`, a binary file), is an error as soon
//! as it shows, not a read that lasts until memory runs out.

use std::io::Read;
use std::path::Path;

/// The most a snapshot file may hold: 8 GiB (150,000 pods as `kubectl get -o json` prints
/// them take about 1.5 GB).
pub const SNAPSHOT_LIMIT: u64 = 8 << 30;

/// The most a policy file may hold: 256 MiB.
pub const POLICY_LIMIT: u64 = 256 << 20;

/// The most a metrics file (`--node-metrics`, `--pod-metrics`) may hold: 1 GiB.
pub const METRICS_LIMIT: u64 = 1 << 30;

/// The whole file at `path`, at most `limit` bytes of text (any file: a pipe, a device).
pub fn read_text_file(path: &Path, limit: u64) -> std::io::Result<Vec<u8>> {
    let file = std::fs::File::open(path)?;
    // A regular file says its size: too large is known before reading.
    let size = file.metadata()?;
    if size.is_file() && size.len() > limit {
        return Err(too_large(limit));
    }
    let capacity = if size.is_file() {
        size.len() as usize
    } else {
        0
    };
    read_text(file, limit, capacity)
}

/// Whether the file at `path` is gzip-compressed (starts with gzip's magic bytes).
pub fn is_gzip(path: &Path) -> std::io::Result<bool> {
    let mut magic = [0u8; 2];
    match std::fs::File::open(path)?.read_exact(&mut magic) {
        Ok(()) => Ok(magic == [0x1f, 0x8b]),
        Err(e) if e.kind() == std::io::ErrorKind::UnexpectedEof => Ok(false),
        Err(e) => Err(e),
    }
}

/// The text a gzip-compressed file at `path` holds, at most `limit` bytes of it.
pub fn read_gzip_text_file(path: &Path, limit: u64) -> std::io::Result<Vec<u8>> {
    let file = std::fs::File::open(path)?;
    read_text(flate2::read::MultiGzDecoder::new(file), limit, 0)
}

/// What `reader` gives, at most `limit` bytes of text.
fn read_text(mut reader: impl Read, limit: u64, capacity: usize) -> std::io::Result<Vec<u8>> {
    let mut bytes = Vec::with_capacity(capacity);
    let mut piece = vec![0; 1 << 16];
    loop {
        let n = match reader.read(&mut piece) {
            Ok(0) => break,
            Ok(n) => n,
            Err(e) if e.kind() == std::io::ErrorKind::Interrupted => continue,
            Err(e) => return Err(e),
        };
        if piece[..n].contains(&0) {
            return Err(not_text());
        }
        if (bytes.len() + n) as u64 > limit {
            return Err(too_large(limit));
        }
        bytes.extend_from_slice(&piece[..n]);
    }
    Ok(bytes)
}

/// [`read_text_file`], as UTF-8.
pub fn read_utf8_file(path: &Path, limit: u64) -> std::io::Result<String> {
    String::from_utf8(read_text_file(path, limit)?).map_err(|e| {
        std::io::Error::new(
            std::io::ErrorKind::InvalidData,
            format!("not UTF-8 text: {}", e.utf8_error()),
        )
    })
}

fn too_large(limit: u64) -> std::io::Error {
    std::io::Error::new(
        std::io::ErrorKind::FileTooLarge,
        format!(
            "the file holds more than {} MiB, the most this input may be; is it the right file?",
            limit >> 20
        ),
    )
}

fn not_text() -> std::io::Error {
    std::io::Error::new(
        std::io::ErrorKind::InvalidData,
        "the file holds a NUL byte, so it is not JSON or YAML text; is it the right file?",
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_file_past_its_limit_or_not_text_is_an_error() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("f");
        std::fs::write(&path, "a: 1\n").unwrap();
        assert_eq!(read_text_file(&path, 5).unwrap(), b"a: 1\n");
        let err = read_text_file(&path, 4).unwrap_err();
        assert_eq!(err.kind(), std::io::ErrorKind::FileTooLarge);
        std::fs::write(&path, b"a: \0").unwrap();
        let err = read_text_file(&path, 100).unwrap_err();
        assert!(err.to_string().contains("NUL"), "{err}");
        std::fs::write(&path, b"a: \xff").unwrap();
        assert!(read_utf8_file(&path, 100).is_err());
    }

    #[cfg(unix)]
    #[test]
    fn devices_and_pipes_end_at_the_limit() {
        let err = read_text_file(Path::new("/dev/zero"), 1 << 20).unwrap_err();
        assert!(err.to_string().contains("NUL"), "{err}");
        // A source of text that never ends: `yes` into a pipe.
        let mut child = std::process::Command::new("yes")
            .stdout(std::process::Stdio::piped())
            .spawn()
            .unwrap();
        let fd = child.stdout.take().unwrap();
        let path = format!("/proc/self/fd/{}", std::os::fd::AsRawFd::as_raw_fd(&fd));
        let err = read_text_file(Path::new(&path), 1 << 20).unwrap_err();
        assert_eq!(err.kind(), std::io::ErrorKind::FileTooLarge);
        drop(fd);
        let _ = child.kill();
        let _ = child.wait();
    }
}
