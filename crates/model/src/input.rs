//! Reading input files, bounded: a file past its limit, one that is not text (a NUL byte,
//! which neither JSON nor YAML allows: `/dev/zero`, a binary file), one that starts with
//! more blank than any real input (whitespace only), or a gzip stream that inflates far past
//! what text compresses to, is an error as soon as it shows, not a read that lasts until
//! memory runs out. Memory is taken fallibly: what does not fit is an error naming the
//! memory limit (the cgroup's `memory.max`, when one is set), not an abort.
//!
//! A path is opened once: the first bytes that tell gzip from text are read from the opened
//! file and given back to what reads the rest, so a pipe (`--snapshot /dev/stdin`, a process
//! substitution `<(kubectl get ...)`, a FIFO) reads exactly as a file of the same bytes.

use std::fs::File;
use std::io::Read;
use std::path::Path;
use std::time::Duration;

/// The most a snapshot file may hold: 8 GiB (150,000 pods as `kubectl get -o json` prints
/// them take about 1.5 GB).
pub const SNAPSHOT_LIMIT: u64 = 8 << 30;

/// The most a policy file may hold: 256 MiB.
pub const POLICY_LIMIT: u64 = 256 << 20;

/// The most a metrics file (`--node-metrics`, `--pod-metrics`) may hold: 1 GiB.
pub const METRICS_LIMIT: u64 = 1 << 30;

/// The most a TLS file (a certificate chain, a private key, a CA bundle) or a token may
/// hold: 1 MiB (a chain of ten certificates takes about 20 kB).
pub const TLS_LIMIT: u64 = 1 << 20;

/// How many times its compressed size a gzip-compressed input may inflate to. Snapshots
/// compress 7 to 20 times (the shipped examples, generated lists of 15,000 pods, the decision
/// log's own), a list of 20,000 pods the same but for their names 126 times at most; junk
/// (whitespace, zeros) compresses about 1,000 times.
pub(crate) const GZIP_RATIO: u64 = 256;

/// The most blank (spaces, tabs, line breaks) text may start with: 1 MiB.
const BLANK_LIMIT: usize = 1 << 20;

/// How long a pipe may give nothing before a word is said about it.
const WAIT_NOTICE: Duration = Duration::from_secs(5);

/// The piece read at a time.
const PIECE: usize = 1 << 16;

/// The whole file at `path`, at most `limit` bytes of text (any file: a pipe, a device);
/// not inflated when it is gzip-compressed.
pub fn read_text_file(path: &Path, limit: u64) -> std::io::Result<Vec<u8>> {
    let file = File::open(path)?;
    let meta = file.metadata()?;
    let known = meta.is_file().then_some(meta.len());
    read_text(file, known, limit, memory_bound())
}

/// [`read_text_file`], as UTF-8.
pub fn read_utf8_file(path: &Path, limit: u64) -> std::io::Result<String> {
    utf8(read_text_file(path, limit)?)
}

/// The whole regular file at `path`, at most `limit` bytes of text; anything else (a device
/// such as `/dev/zero`, a FIFO, a directory) is refused before it is read.
pub fn read_regular_file(path: &Path, limit: u64) -> std::io::Result<Vec<u8>> {
    // Looked at before it is opened: opening a FIFO waits for its writer.
    if !std::fs::metadata(path)?.is_file() {
        return Err(not_regular());
    }
    let file = File::open(path)?;
    let meta = file.metadata()?;
    if !meta.is_file() {
        return Err(not_regular());
    }
    read_text(file, Some(meta.len()), limit, memory_bound())
}

/// [`read_regular_file`], as UTF-8.
pub fn read_regular_utf8_file(path: &Path, limit: u64) -> std::io::Result<String> {
    utf8(read_regular_file(path, limit)?)
}

/// An input opened once, its first bytes read (they tell gzip from text) and kept to be
/// given back to the reader of the rest.
pub struct Input {
    file: File,
    /// The size of a regular file; None for a pipe, a FIFO, a device.
    size: Option<u64>,
    /// The bytes read from `file` so far; they come first.
    head: Vec<u8>,
    /// Says a word when a pipe is slow; quiet once the input is read.
    _notice: Option<Notice>,
}

impl Input {
    /// Opens `path` and reads its first bytes. A FIFO is waited for (its writer may take
    /// time); after [`WAIT_NOTICE`] without its whole text a warning says what is awaited.
    pub fn open(path: &Path) -> std::io::Result<Input> {
        // A FIFO is opened only once it has a writer: the notice is started before.
        let notice = match std::fs::metadata(path) {
            Ok(meta) if !meta.is_file() => Notice::start(path),
            _ => None,
        };
        let mut file = File::open(path)?;
        let meta = file.metadata()?;
        let size = meta.is_file().then_some(meta.len());
        let mut head = Vec::with_capacity(2);
        (&mut file).take(2).read_to_end(&mut head)?;
        Ok(Input {
            file,
            size,
            head,
            _notice: notice,
        })
    }

    /// Whether the input is gzip-compressed (starts with gzip's magic bytes).
    pub fn is_gzip(&self) -> bool {
        self.head == [0x1f, 0x8b]
    }

    /// The file and its size, when it is a regular file (it can be read at any offset; what
    /// was read of it so far does not matter then).
    pub fn regular_file(&self) -> Option<(&File, u64)> {
        self.size.map(|size| (&self.file, size))
    }

    /// The whole text, inflated when gzip-compressed, at most `limit` bytes of it; a gzip
    /// stream inflates to at most [`GZIP_RATIO`] times its compressed size.
    pub fn read_text(self, limit: u64) -> std::io::Result<Vec<u8>> {
        let memory = memory_bound();
        if self.is_gzip() {
            let compressed = std::io::Cursor::new(self.head).chain(self.file);
            let inflate = Inflate::new(compressed, self.size);
            return read_text(inflate, None, limit, memory);
        }
        let whole = std::io::Cursor::new(self.head).chain(self.file);
        read_text(whole, self.size, limit, memory)
    }
}

/// Says, once, that a pipe has been waited for [`WAIT_NOTICE`]; quiet when dropped before.
struct Notice {
    _done: std::sync::mpsc::Sender<()>,
}

impl Notice {
    fn start(path: &Path) -> Option<Notice> {
        let (done, wait) = std::sync::mpsc::channel::<()>();
        let file = path.display().to_string();
        std::thread::Builder::new()
            .name("input-notice".into())
            .spawn(move || {
                if let Err(std::sync::mpsc::RecvTimeoutError::Timeout) =
                    wait.recv_timeout(WAIT_NOTICE)
                {
                    tracing::warn!(
                        file,
                        seconds = WAIT_NOTICE.as_secs(),
                        "waiting for the writer of this pipe or FIFO: its whole text has not \
                         arrived yet; is the command that writes it running?"
                    );
                }
            })
            .ok()?;
        Some(Notice { _done: done })
    }
}

/// A gzip stream inflated, refused once it inflates past [`GZIP_RATIO`] times what it was
/// compressed to.
struct Inflate<R: Read> {
    decoder: flate2::read::MultiGzDecoder<Counted<R>>,
    /// The compressed size, when known (a regular file).
    size: Option<u64>,
    inflated: u64,
}

impl<R: Read> Inflate<R> {
    fn new(compressed: R, size: Option<u64>) -> Self {
        Inflate {
            decoder: flate2::read::MultiGzDecoder::new(Counted {
                inner: compressed,
                count: 0,
            }),
            size,
            inflated: 0,
        }
    }
}

impl<R: Read> Read for Inflate<R> {
    fn read(&mut self, buf: &mut [u8]) -> std::io::Result<usize> {
        let n = self.decoder.read(buf)?;
        self.inflated += n as u64;
        // The compressed bytes read so far (or the whole file's): a pipe is judged as it
        // arrives.
        let compressed = self.size.unwrap_or(0).max(self.decoder.get_ref().count);
        if self.inflated > compressed.saturating_mul(GZIP_RATIO) {
            return Err(std::io::Error::new(
                std::io::ErrorKind::InvalidData,
                format!(
                    "the gzip-compressed file inflates to more than {GZIP_RATIO} times its \
                     size ({} from {}), far more than JSON or YAML compresses; it is not a \
                     compressed snapshot: is it the right file?",
                    size_text(self.inflated),
                    size_text(compressed)
                ),
            ));
        }
        Ok(n)
    }
}

/// A reader that counts what it gives.
struct Counted<R> {
    inner: R,
    count: u64,
}

impl<R: Read> Read for Counted<R> {
    fn read(&mut self, buf: &mut [u8]) -> std::io::Result<usize> {
        let n = self.inner.read(buf)?;
        self.count += n as u64;
        Ok(n)
    }
}

/// The memory this process may use, as its cgroup (v2) bounds it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
struct MemoryBound {
    /// `memory.max`.
    max: u64,
    /// `memory.max` less `memory.current`, when read.
    available: u64,
}

/// This process's [`MemoryBound`]; None when no limit is set (or none can be read).
fn memory_bound() -> Option<MemoryBound> {
    let cgroup = small_file(Path::new("/proc/self/cgroup"))?;
    memory_bound_in(Path::new("/sys/fs/cgroup"), &cgroup)
}

/// The [`MemoryBound`] of the cgroup `/proc/self/cgroup` names (`cgroup`), under the cgroup
/// file system mounted at `root`.
fn memory_bound_in(root: &Path, cgroup: &str) -> Option<MemoryBound> {
    // The v2 hierarchy's line: `0::/path`.
    let own = cgroup.lines().find_map(|l| l.strip_prefix("0::"))?;
    let dir = root.join(own.trim().trim_start_matches('/'));
    // In a container the cgroup's own folder is the root.
    let dir = if dir.join("memory.max").is_file() {
        dir
    } else {
        root.to_path_buf()
    };
    let max: u64 = small_file(&dir.join("memory.max"))?.trim().parse().ok()?;
    let current: u64 = small_file(&dir.join("memory.current"))
        .and_then(|t| t.trim().parse().ok())
        .unwrap_or(0);
    Some(MemoryBound {
        max,
        available: max.saturating_sub(current),
    })
}

/// A small file of the kernel's, read bounded; None when it cannot be read.
fn small_file(path: &Path) -> Option<String> {
    let file = File::open(path).ok()?;
    utf8(read_text(file, None, 64 << 10, None).ok()?).ok()
}

/// What `reader` gives, at most `limit` bytes of text; `known` is its size when known
/// (then too large is known before reading, and the buffer is taken once).
fn read_text(
    mut reader: impl Read,
    known: Option<u64>,
    limit: u64,
    memory: Option<MemoryBound>,
) -> std::io::Result<Vec<u8>> {
    if let Some(size) = known {
        if size > limit {
            return Err(too_large(limit));
        }
    }
    let mut bytes = Vec::new();
    if let Some(size) = known {
        reserve(&mut bytes, size, memory)?;
    }
    let mut piece = Vec::new();
    piece
        .try_reserve_exact(PIECE)
        .map_err(|_| out_of_memory(PIECE as u64))?;
    piece.resize(PIECE, 0);
    let mut blank = true;
    loop {
        let n = match reader.read(&mut piece) {
            Ok(0) => break,
            Ok(n) => n,
            Err(e) if e.kind() == std::io::ErrorKind::Interrupted => continue,
            Err(e) => return Err(e),
        };
        let got = &piece[..n];
        if got.contains(&0) {
            return Err(not_text());
        }
        let total = (bytes.len() + n) as u64;
        if total > limit {
            return Err(too_large(limit));
        }
        if blank {
            // Blank so far: how much of it there is before the first other byte.
            let first = got.iter().position(|b| !b.is_ascii_whitespace());
            blank = first.is_none();
            if bytes.len() + first.unwrap_or(n) > BLANK_LIMIT {
                return Err(blank_text());
            }
        }
        if bytes.capacity() - bytes.len() < n {
            // Twice as much, as a vector grows, but never past the limit or the memory left.
            let mut want = total.max(bytes.capacity() as u64 * 2).min(limit);
            if let Some(m) = memory {
                want = want.min(m.available).max(total);
            }
            reserve(&mut bytes, want, memory)?;
        }
        bytes.extend_from_slice(got);
    }
    Ok(bytes)
}

/// Room in `bytes` for `total` bytes in all, taken fallibly, and within `memory`.
fn reserve(bytes: &mut Vec<u8>, total: u64, memory: Option<MemoryBound>) -> std::io::Result<()> {
    if let Some(m) = memory {
        if total > m.available {
            return Err(past_memory_limit(total, m));
        }
    }
    let more = usize::try_from(total)
        .ok()
        .and_then(|t| t.checked_sub(bytes.len()))
        .ok_or_else(|| out_of_memory(total))?;
    bytes
        .try_reserve_exact(more)
        .map_err(|_| out_of_memory(total))
}

fn utf8(bytes: Vec<u8>) -> std::io::Result<String> {
    String::from_utf8(bytes).map_err(|e| {
        std::io::Error::new(
            std::io::ErrorKind::InvalidData,
            format!("not UTF-8 text: {}", e.utf8_error()),
        )
    })
}

/// A size for people: `512 KiB`, `3 MiB`, `2 GiB`.
fn size_text(bytes: u64) -> String {
    match bytes {
        b if b >= 1 << 30 => format!("{} GiB", b >> 30),
        b if b >= 1 << 20 => format!("{} MiB", b >> 20),
        b if b >= 1 << 10 => format!("{} KiB", b >> 10),
        b => format!("{b} bytes"),
    }
}

fn too_large(limit: u64) -> std::io::Error {
    std::io::Error::new(
        std::io::ErrorKind::FileTooLarge,
        format!(
            "the file holds more than {}, the most this input may be; is it the right file?",
            size_text(limit)
        ),
    )
}

fn not_text() -> std::io::Error {
    std::io::Error::new(
        std::io::ErrorKind::InvalidData,
        "the file holds a NUL byte, so it is not JSON or YAML text; is it the right file?",
    )
}

fn blank_text() -> std::io::Error {
    std::io::Error::new(
        std::io::ErrorKind::InvalidData,
        format!(
            "the file's first {} are blank (spaces and line breaks only), so it holds no JSON \
             or YAML; is it the right file?",
            size_text(BLANK_LIMIT as u64)
        ),
    )
}

fn not_regular() -> std::io::Error {
    std::io::Error::new(
        std::io::ErrorKind::InvalidInput,
        "not a regular file (a device, a FIFO or a directory); give the path of a file",
    )
}

fn out_of_memory(total: u64) -> std::io::Error {
    std::io::Error::new(
        std::io::ErrorKind::OutOfMemory,
        format!(
            "not enough memory to read the file ({} of it could not be held); give the \
             process more memory or a smaller file",
            size_text(total)
        ),
    )
}

fn past_memory_limit(total: u64, m: MemoryBound) -> std::io::Error {
    std::io::Error::new(
        std::io::ErrorKind::OutOfMemory,
        format!(
            "not enough memory to read the file: {} of it would not fit in the {} this \
             process may still use (its memory limit, cgroup memory.max, is {}); raise the \
             memory limit (a pod's resources.limits.memory) or give a smaller file",
            size_text(total),
            size_text(m.available),
            size_text(m.max)
        ),
    )
}

#[cfg(test)]
mod tests;
