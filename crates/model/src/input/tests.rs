use super::*;
use std::io::Write;
use std::process::{Command, Stdio};

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

/// A child's output, as a path this process can open (`/dev/stdin` as a shell gives it).
#[cfg(target_os = "linux")]
struct Piped {
    child: std::process::Child,
    fd: std::process::ChildStdout,
}

#[cfg(target_os = "linux")]
impl Piped {
    fn spawn(command: &mut Command) -> Piped {
        let mut child = command.stdout(Stdio::piped()).spawn().unwrap();
        let fd = child.stdout.take().unwrap();
        Piped { child, fd }
    }
    fn path(&self) -> std::path::PathBuf {
        let fd = std::os::fd::AsRawFd::as_raw_fd(&self.fd);
        format!("/proc/self/fd/{fd}").into()
    }
}

#[cfg(target_os = "linux")]
impl Drop for Piped {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

#[cfg(target_os = "linux")]
#[test]
fn devices_and_pipes_end_at_the_limit() {
    let err = read_text_file(Path::new("/dev/zero"), 1 << 20)
        .map(|text| text.len())
        .unwrap_err();
    assert!(err.to_string().contains("NUL"), "{err}");
    // A source of text that never ends: `yes` into a pipe.
    let yes = Piped::spawn(&mut Command::new("yes"));
    let err = read_text_file(&yes.path(), 1 << 20)
        .map(|text| text.len())
        .unwrap_err();
    assert_eq!(err.kind(), std::io::ErrorKind::FileTooLarge);
}

/// `text` gzip-compressed at `level`.
fn gzip(text: &[u8], level: u32) -> Vec<u8> {
    let mut gz = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::new(level));
    gz.write_all(text).unwrap();
    gz.finish().unwrap()
}

#[cfg(target_os = "linux")]
#[test]
fn a_pipe_reads_exactly_as_the_file_of_its_bytes() {
    let dir = tempfile::tempdir().unwrap();
    let text = b"# a comment first\nkind: List\nitems: []\n".to_vec();
    let plain = dir.path().join("plain.yaml");
    std::fs::write(&plain, &text).unwrap();
    let compressed = dir.path().join("plain.yaml.gz");
    std::fs::write(&compressed, gzip(&text, 6)).unwrap();
    for (path, gzipped) in [(&plain, false), (&compressed, true)] {
        // The file, and the same bytes through a pipe: nothing of the first bytes is lost.
        let file = Input::open(path).unwrap();
        assert_eq!(file.is_gzip(), gzipped);
        assert!(file.regular_file().is_some());
        assert_eq!(file.read_text(1 << 20).unwrap(), text);
        let cat = Piped::spawn(Command::new("cat").arg(path));
        let piped = Input::open(&cat.path()).unwrap();
        assert_eq!(piped.is_gzip(), gzipped, "{}", path.display());
        assert!(piped.regular_file().is_none());
        assert_eq!(
            piped.read_text(1 << 20).unwrap(),
            text,
            "{}",
            path.display()
        );
    }
    // Shorter than the bytes looked at first: one byte, none.
    for short in [&b"x"[..], b""] {
        std::fs::write(&plain, short).unwrap();
        let input = Input::open(&plain).unwrap();
        assert!(!input.is_gzip());
        assert_eq!(input.read_text(10).unwrap(), short);
    }
}

#[cfg(target_os = "linux")]
#[test]
fn a_fifo_is_read_once_as_its_writer_writes() {
    let dir = tempfile::tempdir().unwrap();
    let fifo = dir.path().join("fifo");
    let made = Command::new("mkfifo").arg(&fifo).status().unwrap();
    assert!(made.success());
    let text = b"# comment\nkind: List\nitems: []\n";
    let compressed = gzip(text, 9);
    let writer = {
        let fifo = fifo.clone();
        let compressed = compressed.clone();
        std::thread::spawn(move || {
            // Written once, in pieces, slowly: a second open would wait for ever.
            let mut f = std::fs::OpenOptions::new().write(true).open(&fifo).unwrap();
            for piece in compressed.chunks(7) {
                f.write_all(piece).unwrap();
                f.flush().unwrap();
                std::thread::sleep(Duration::from_millis(5));
            }
        })
    };
    let input = Input::open(&fifo).unwrap();
    assert!(input.is_gzip());
    assert_eq!(input.read_text(1 << 20).unwrap(), text);
    writer.join().unwrap();
}

#[test]
fn gzip_that_inflates_past_the_ratio_is_refused_early() {
    let dir = tempfile::tempdir().unwrap();
    // 64 MiB of one letter compress to about 64 kB.
    let bomb = dir.path().join("letters.gz");
    std::fs::write(&bomb, gzip(&vec![b'a'; 64 << 20], 9)).unwrap();
    let err = Input::open(&bomb)
        .unwrap()
        .read_text(SNAPSHOT_LIMIT)
        .map(|text| text.len())
        .unwrap_err();
    assert_eq!(err.kind(), std::io::ErrorKind::InvalidData);
    assert!(err.to_string().contains("256 times its size"), "{err}");
    // Spaces: refused as soon as either shows.
    let spaces = dir.path().join("spaces.gz");
    std::fs::write(&spaces, gzip(&vec![b' '; 64 << 20], 9)).unwrap();
    let err = Input::open(&spaces)
        .unwrap()
        .read_text(SNAPSHOT_LIMIT)
        .map(|text| text.len())
        .unwrap_err();
    assert!(err.to_string().contains("is it the right file?"), "{err}");
    // Of unknown size (a pipe): judged by what has arrived.
    let stream = gzip(&vec![b'a'; 16 << 20], 9);
    let err = read_text(
        Inflate::new(std::io::Cursor::new(stream), None),
        None,
        SNAPSHOT_LIMIT,
        None,
    )
    .map(|text| text.len())
    .unwrap_err();
    assert!(err.to_string().contains("256 times"), "{err}");
    // Real text is far within: the examples, as the decision log compresses them.
    for example in [
        "examples/cluster-hotspot.yaml",
        "examples/usage/cluster.json",
    ] {
        let path = Path::new(env!("CARGO_MANIFEST_DIR"))
            .join("../..")
            .join(example);
        let text = std::fs::read(&path).unwrap();
        let gz = dir.path().join("example.gz");
        std::fs::write(&gz, gzip(&text, 9)).unwrap();
        let back = Input::open(&gz).unwrap().read_text(SNAPSHOT_LIMIT).unwrap();
        assert!(back == text, "{example}");
    }
}

#[test]
fn text_that_starts_with_a_mebibyte_of_blank_is_refused() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("blank");
    let mut text = vec![b'\n'; BLANK_LIMIT + 1];
    text.extend_from_slice(b"kind: List\n");
    std::fs::write(&path, &text).unwrap();
    let err = read_text_file(&path, SNAPSHOT_LIMIT)
        .map(|text| text.len())
        .unwrap_err();
    assert!(err.to_string().contains("blank"), "{err}");
    // Blank after the text, or less of it before, is text.
    text.drain(..2);
    std::fs::write(&path, &text).unwrap();
    assert!(read_text_file(&path, SNAPSHOT_LIMIT).unwrap() == text);
    let mut after = b"kind: List\n".to_vec();
    after.resize(2 * BLANK_LIMIT, b' ');
    std::fs::write(&path, &after).unwrap();
    assert!(read_text_file(&path, SNAPSHOT_LIMIT).unwrap() == after);
}

#[test]
fn memory_that_cannot_be_had_is_an_error_not_an_abort() {
    // More than any machine has: the buffer for a file said to be this large.
    let err = read_text(std::io::empty(), Some(1 << 62), u64::MAX, None)
        .map(|text| text.len())
        .unwrap_err();
    assert_eq!(err.kind(), std::io::ErrorKind::OutOfMemory);
    assert!(
        err.to_string()
            .starts_with("not enough memory to read the file"),
        "{err}"
    );
}

#[test]
fn the_memory_limit_of_the_cgroup_bounds_what_is_read_whole() {
    let root = tempfile::tempdir().unwrap();
    let own = root.path().join("kubepods/pod-1");
    std::fs::create_dir_all(&own).unwrap();
    std::fs::write(own.join("memory.max"), "1048576\n").unwrap();
    std::fs::write(own.join("memory.current"), "524288\n").unwrap();
    let cgroup = "0::/kubepods/pod-1\n";
    let bound = memory_bound_in(root.path(), cgroup).unwrap();
    assert_eq!(
        bound,
        MemoryBound {
            max: 1 << 20,
            available: 512 << 10
        }
    );
    // A file of known size past it is refused before it is read; one of unknown size
    // (a pipe) as it grows past it.
    let text = vec![b'a'; 600 << 10];
    for known in [Some(text.len() as u64), None] {
        let err = read_text(&text[..], known, u64::MAX, Some(bound))
            .map(|text| text.len())
            .unwrap_err();
        assert_eq!(err.kind(), std::io::ErrorKind::OutOfMemory);
        let message = err.to_string();
        assert!(
            message.contains("memory.max, is 1 MiB") && message.contains("512 KiB"),
            "{message}"
        );
    }
    assert_eq!(
        read_text(&text[..400 << 10], None, u64::MAX, Some(bound)).unwrap(),
        &text[..400 << 10]
    );
    // In a container the cgroup's folder is the root; no limit is `max`.
    std::fs::write(root.path().join("memory.max"), "2097152\n").unwrap();
    let bound = memory_bound_in(root.path(), "0::/\n").unwrap();
    assert_eq!(bound.max, 2 << 20);
    std::fs::write(own.join("memory.max"), "max\n").unwrap();
    assert_eq!(memory_bound_in(root.path(), cgroup), None);
    assert_eq!(memory_bound_in(root.path(), "4:memory:/x\n"), None);
}

#[cfg(target_os = "linux")]
#[test]
fn only_regular_files_are_read_where_one_is_asked_for() {
    let dir = tempfile::tempdir().unwrap();
    let fifo = dir.path().join("fifo");
    assert!(Command::new("mkfifo")
        .arg(&fifo)
        .status()
        .unwrap()
        .success());
    // No writer: opening it would wait for one.
    for path in [
        Path::new("/dev/zero"),
        Path::new("/dev/urandom"),
        dir.path(),
        &fifo,
    ] {
        let err = read_regular_file(path, TLS_LIMIT)
            .map(|text| text.len())
            .unwrap_err();
        assert!(
            err.to_string().contains("not a regular file"),
            "{}: {err}",
            path.display()
        );
    }
    let pem = dir.path().join("key.pem");
    std::fs::write(&pem, "-----BEGIN PRIVATE KEY-----\n").unwrap();
    assert!(read_regular_utf8_file(&pem, TLS_LIMIT).is_ok());
    std::fs::write(&pem, vec![b'a'; TLS_LIMIT as usize + 1]).unwrap();
    let err = read_regular_file(&pem, TLS_LIMIT)
        .map(|text| text.len())
        .unwrap_err();
    assert_eq!(err.kind(), std::io::ErrorKind::FileTooLarge);
}
