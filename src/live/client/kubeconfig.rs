//! Finding and reading kubeconfig files as kubectl (client-go) does, with errors that never
//! quote a kubeconfig: they name the file, the line and column, and the kind of problem, but
//! no text of the file, no token, password or key, and of an exec credential plugin only its
//! command and how it ended.
//!
//! The loading rules: `--kubeconfig FILE` (a file that must exist); else `KUBECONFIG`, a
//! list split on `:` whose empty entries and missing files are skipped (an empty
//! `KUBECONFIG` is no `KUBECONFIG`), merged with the first file's settings winning; else
//! `~/.kube/config` when it exists; else the in-cluster service account.

use kube::config::Kubeconfig;
use std::path::{Path, PathBuf};

/// Why no client configuration could be made; no message quotes a kubeconfig's text.
#[derive(Debug, thiserror::Error)]
pub enum KubeconfigError {
    #[error("{file}: line {line}, column {column}: {problem}; fix the kubeconfig (`kubectl config view --kubeconfig {file}` reads it as kubectl does)")]
    Syntax {
        file: String,
        line: u64,
        column: u64,
        problem: String,
    },
    #[error("{file}: {problem}")]
    Invalid { file: String, problem: String },
    #[error(
        "{file}: cannot be read ({reason}); give --kubeconfig (or KUBECONFIG) a file that exists and can be read"
    )]
    Unreadable {
        file: String,
        reason: std::io::Error,
    },
    #[error("KUBECONFIG names no file that exists ({list}); set it to the kubeconfig's path, or unset it to use ~/.kube/config or the in-cluster service account")]
    NoneExists { list: String },
    #[error("no kubeconfig (--kubeconfig not given, KUBECONFIG not set, no ~/.kube/config) and not in a cluster ({0}); give --kubeconfig FILE")]
    Nothing(String),
    #[error("{files}: {problem}")]
    Config { files: String, problem: String },
    #[error("{files}: the user's exec credential plugin {command:?} {problem}; run it by hand to see why")]
    Exec {
        files: String,
        command: String,
        problem: String,
    },
}

/// Where the client's settings come from.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Source {
    /// Kubeconfig files, merged in this order.
    Files(Vec<PathBuf>),
    /// The pod's service account.
    InCluster,
}

impl Source {
    /// The files named in errors (`a:b`), or "the in-cluster configuration".
    pub fn describe(&self) -> String {
        match self {
            Source::Files(files) => files
                .iter()
                .map(|f| f.display().to_string())
                .collect::<Vec<_>>()
                .join(":"),
            Source::InCluster => "the in-cluster configuration".into(),
        }
    }
}

/// The kubeconfig files to read, by client-go's loading rules: `explicit` (`--kubeconfig`;
/// a list there is merged too, and each file must exist), else `kubeconfig_env`
/// (`KUBECONFIG`), else `home`'s `.kube/config`, else in-cluster.
pub fn find(
    explicit: Option<&Path>,
    kubeconfig_env: Option<&std::ffi::OsStr>,
    home: Option<&Path>,
) -> Result<Source, KubeconfigError> {
    let split = |list: &std::ffi::OsStr| -> Vec<PathBuf> {
        std::env::split_paths(list)
            .filter(|p| !p.as_os_str().is_empty())
            .collect()
    };
    if let Some(path) = explicit {
        // A single file may hold a ':' in its name.
        if path.is_file() {
            return Ok(Source::Files(vec![path.to_path_buf()]));
        }
        let files = split(path.as_os_str());
        if files.is_empty() {
            return Err(KubeconfigError::Unreadable {
                file: path.display().to_string(),
                reason: std::io::Error::new(std::io::ErrorKind::NotFound, "an empty path"),
            });
        }
        return Ok(Source::Files(files));
    }
    if let Some(list) = kubeconfig_env {
        let named = split(list);
        if !named.is_empty() {
            let (found, missing): (Vec<PathBuf>, Vec<PathBuf>) =
                named.iter().cloned().partition(|p| p.exists());
            for m in &missing {
                tracing::debug!(file = %m.display(), "a file KUBECONFIG names does not exist; skipped");
            }
            if found.is_empty() {
                return Err(KubeconfigError::NoneExists {
                    list: Source::Files(named).describe(),
                });
            }
            return Ok(Source::Files(found));
        }
    }
    if let Some(config) = home.map(|h| h.join(".kube").join("config")) {
        if config.exists() {
            return Ok(Source::Files(vec![config]));
        }
    }
    Ok(Source::InCluster)
}

/// Reads `files` and merges them as kubectl does (the first file to set a value wins).
pub fn read(files: &[PathBuf]) -> Result<Kubeconfig, KubeconfigError> {
    let mut merged = Kubeconfig::default();
    for file in files {
        merged = merged
            .merge(read_file(file)?)
            .map_err(|e| KubeconfigError::Config {
                files: Source::Files(files.to_vec()).describe(),
                problem: config_problem(&e),
            })?;
    }
    Ok(merged)
}

/// One kubeconfig file, its relative paths made absolute (as kube and kubectl read them).
fn read_file(file: &Path) -> Result<Kubeconfig, KubeconfigError> {
    let name = file.display().to_string();
    let bytes = std::fs::read(file).map_err(|reason| KubeconfigError::Unreadable {
        file: name.clone(),
        reason,
    })?;
    let text = decode_text(&bytes).ok_or_else(|| KubeconfigError::Invalid {
        file: name.clone(),
        problem: "not UTF-8 (or UTF-16) text; a kubeconfig is YAML".into(),
    })?;
    // Parsed here for the error's position; the library's own message quotes the file.
    if let Err(e) = serde_saphyr::from_multiple::<Kubeconfig>(&text) {
        return Err(syntax_error(&name, &e));
    }
    // The library's reader makes the paths in the file absolute; it reads what was just
    // parsed, so it fails only if the file changed meanwhile.
    Kubeconfig::read_from(file).map_err(|e| KubeconfigError::Invalid {
        file: name,
        problem: config_problem(&e),
    })
}

/// The file's text, from UTF-8 (with or without a byte order mark) or UTF-16 with one.
fn decode_text(bytes: &[u8]) -> Option<String> {
    let utf16 = |b: &[u8], f: fn([u8; 2]) -> u16| -> Option<String> {
        if b.len() % 2 != 0 {
            return None;
        }
        let units: Vec<u16> = b.chunks_exact(2).map(|c| f([c[0], c[1]])).collect();
        String::from_utf16(&units).ok()
    };
    match bytes {
        [0xFF, 0xFE, rest @ ..] => utf16(rest, u16::from_le_bytes),
        [0xFE, 0xFF, rest @ ..] => utf16(rest, u16::from_be_bytes),
        [0xEF, 0xBB, 0xBF, rest @ ..] => String::from_utf8(rest.to_vec()).ok(),
        _ => String::from_utf8(bytes.to_vec()).ok(),
    }
}

/// A YAML error as `FILE: line L, column C: what is wrong`, without the file's text.
fn syntax_error(file: &str, e: &serde_saphyr::Error) -> KubeconfigError {
    let mut e = e.without_snippet();
    #[allow(deprecated)]
    while let serde_saphyr::Error::AliasError { error, .. } = e {
        e = error.without_snippet();
    }
    let problem = yaml_problem(e);
    match e.location().filter(|l| l.line() > 0) {
        Some(at) => KubeconfigError::Syntax {
            file: file.into(),
            line: at.line(),
            column: at.column(),
            problem,
        },
        None => KubeconfigError::Invalid {
            file: file.into(),
            problem,
        },
    }
}

/// The kind of a YAML error, in words that quote nothing of the text (serde's own messages
/// quote the value found, which may be a token).
fn yaml_problem(e: &serde_saphyr::Error) -> String {
    use serde_saphyr::Error as E;
    match e {
        E::DuplicateMappingKey { .. } => "a key given twice in one mapping".into(),
        E::SerdeInvalidType { expected, .. } => {
            format!("a value of the wrong type (expected {expected})")
        }
        E::Unexpected { expected, .. } => {
            format!("a value of the wrong type (expected {expected})")
        }
        // Free-form, and may quote the value: said by its kind only.
        E::Message { .. } => "a value that is not valid here".into(),
        E::SerdeInvalidValue { expected, .. } => {
            format!("a value that is not valid here (expected {expected})")
        }
        E::SerdeInvalidLength { expected, .. } => {
            format!("a list of the wrong length (expected {expected})")
        }
        E::SerdeMissingField { field, .. } => format!("the field {field:?} is missing"),
        E::SerdeUnknownField { .. } | E::SerdeUnknownVariant { .. } => {
            "a field or value a kubeconfig does not have".into()
        }
        E::Eof { .. } => "the text ends inside a value".into(),
        E::Budget { .. } => "too large or too deeply nested for a kubeconfig".into(),
        E::InvalidUtf8Input => "not UTF-8 text".into(),
        E::UnknownAnchor { .. } => "an alias (*name) of an anchor that is not defined".into(),
        _ => "not valid YAML here (check the indentation, and that every quote and bracket is closed)"
            .into(),
    }
}

/// A kubeconfig's settings that cannot be used, said without their values.
pub fn config_problem(e: &kube::config::KubeconfigError) -> String {
    use kube::config::{KubeconfigError as K, LoadDataError as D};
    let data = |what: &str, e: &D| match e {
        D::DecodeBase64(_) => format!("{what} is not valid base64"),
        D::ReadFile(io, path) => format!("{what}: cannot read {} ({io})", path.display()),
        D::NoBase64DataOrFile => format!("{what} has neither data nor a file"),
    };
    match e {
        K::Parse(_) => "not a valid kubeconfig".into(),
        K::ReadConfig(io, path) => format!("cannot read {} ({io})", path.display()),
        K::LoadCertificateAuthority(d) => data("the cluster's certificate authority", d),
        K::LoadClientCertificate(d) => data("the user's client certificate", d),
        K::LoadClientKey(d) => data("the user's client key", d),
        K::ParseCertificates(_) => "a certificate that is not valid PEM".into(),
        K::ParseClusterUrl(_) => "the cluster's server is not a valid URL".into(),
        K::ParseProxyUrl(_) => "the cluster's proxy-url is not a valid URL".into(),
        K::LoadContext(name) => {
            format!("no context {name:?} (`kubectl config get-contexts` lists them)")
        }
        K::LoadClusterOfContext(name) => {
            format!("no cluster {name:?}, which the context names")
        }
        K::CurrentContextNotSet => {
            "no current-context; set one (`kubectl config use-context NAME`) or give --context"
                .into()
        }
        // The others name no value of the file.
        other => other.to_string(),
    }
}

/// An exec credential plugin's (or auth provider's) failure, said by how it ended, never by
/// its arguments, environment or output.
pub fn auth_problem(e: &kube::client::AuthError) -> (bool, String) {
    use kube::client::AuthError as A;
    let exec = |s: &str| (true, s.to_string());
    #[allow(unreachable_patterns)]
    match e {
        A::AuthExecStart(io) => (true, format!("could not be started ({})", io.kind())),
        A::AuthExecRun { out, .. } => (true, format!("failed ({})", out.status)),
        A::AuthExecParse(_) => exec("printed something that is not an ExecCredential (JSON)"),
        A::ExecPluginFailed => exec("printed an ExecCredential without a status"),
        A::MalformedTokenExpirationDate(_) => {
            exec("printed an expirationTimestamp that is not an RFC 3339 time")
        }
        A::MissingCommand => (false, "the user's exec has no command".into()),
        A::ExecMissingClusterInfo => (
            false,
            "the user's exec asks for provideClusterInfo but the cluster is not known".into(),
        ),
        A::InvalidBasicAuth(_) => (
            false,
            "the user's username or password holds characters an HTTP header cannot".into(),
        ),
        A::InvalidBearerToken(_) => (
            false,
            "the user's token holds characters an HTTP header cannot".into(),
        ),
        A::ReadTokenFile(io, path) => (
            false,
            format!("the user's tokenFile {} cannot be read ({io})", path.display()),
        ),
        A::NoValidNativeRootCA(io) => (
            false,
            format!("no valid root certificate authority on this system ({io})"),
        ),
        A::UnrefreshableTokenResponse => (
            false,
            "the user's credentials could not be refreshed".into(),
        ),
        A::AuthExec(_) | A::ParseTokenKey(_) | A::AuthExecSerialize(_) => (
            false,
            "the user's auth-provider is not supported or failed; use a token, a client certificate or an exec credential plugin".into(),
        ),
        _ => (false, "the user's credentials cannot be used".into()),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn kubectl_loading_rules() {
        let dir = tempfile::tempdir().unwrap();
        let (a, b) = (dir.path().join("a"), dir.path().join("b"));
        std::fs::write(&a, "").unwrap();
        std::fs::write(&b, "").unwrap();
        let missing = dir.path().join("missing");
        let list = |ps: &[&Path]| std::env::join_paths(ps).unwrap();
        let files = |v: &[&Path]| Source::Files(v.iter().map(|p| p.to_path_buf()).collect());
        // Missing files and empty entries in KUBECONFIG are skipped.
        let env = list(&[&missing, Path::new(""), &a, &b]);
        assert_eq!(find(None, Some(&env), None).unwrap(), files(&[&a, &b]));
        // None of them exists: said so.
        let env = list(&[&missing, Path::new("")]);
        let e = find(None, Some(&env), None).unwrap_err().to_string();
        assert!(e.contains("KUBECONFIG names no file that exists"), "{e}");
        assert!(e.contains("missing"), "{e}");
        // An empty KUBECONFIG is no KUBECONFIG: ~/.kube/config, else in-cluster.
        let home = dir.path();
        std::fs::create_dir(home.join(".kube")).unwrap();
        assert_eq!(
            find(None, Some("".as_ref()), Some(home)).unwrap(),
            Source::InCluster
        );
        std::fs::write(home.join(".kube/config"), "").unwrap();
        let config = home.join(".kube/config");
        assert_eq!(
            find(None, Some("".as_ref()), Some(home)).unwrap(),
            files(&[&config])
        );
        assert_eq!(find(None, None, Some(home)).unwrap(), files(&[&config]));
        // --kubeconfig wins over KUBECONFIG.
        let env = list(&[&b]);
        assert_eq!(find(Some(&a), Some(&env), None).unwrap(), files(&[&a]));
    }

    #[test]
    fn a_broken_kubeconfig_is_named_by_file_and_line_not_quoted() {
        let dir = tempfile::tempdir().unwrap();
        let file = dir.path().join("kc");
        for (text, line, says) in [
            (
                "users:\n- name: u\n  user:\n    token: SECRET-A\n    token: SECRET-B\n",
                5,
                "a key given twice",
            ),
            (
                "users:\n- name: u\n  user:\n    token: SECRET-A\n   password: SECRET-B\n",
                5,
                "not valid YAML",
            ),
            ("users:\n- name: u\n  user: SECRET-A\n", 3, "wrong type"),
        ] {
            std::fs::write(&file, text).unwrap();
            let e = read(std::slice::from_ref(&file)).unwrap_err();
            let shown = format!("{e} {e:?}");
            assert!(!shown.contains("SECRET"), "{shown}");
            assert!(shown.contains(&file.display().to_string()), "{shown}");
            assert!(shown.contains(&format!("line {line},")), "{text}: {shown}");
            assert!(shown.contains(says), "{text}: {shown}");
        }
    }
}
