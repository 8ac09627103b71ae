//! A plugin's args contract: how the framework turns a `pluginConfig[].args` mapping into a
//! plugin, the same way for every plugin. Decode (serde supplies the defaults of missing
//! fields; `apiVersion`/`kind` are dropped), apply the defaults that depend on other fields
//! ([`PluginArgs::set_defaults`], upstream's `SetDefaults_*Args`), validate
//! ([`PluginArgs::validate`], upstream's `Validate*Args`), then build the plugin from the
//! validated args ([`FromArgs::from_args`]). A plugin writes only the last three; the path
//! of every error is relative to the args (`thresholds.cpu`), and the pipeline prefixes it
//! with the profile's `pluginConfig[i].args`.

use serde::de::DeserializeOwned;

/// An error in one plugin's args, before the file and profile are known.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{path}: {message}")]
pub struct ArgsError {
    /// Path inside `args`, such as `thresholds.cpu`; empty for the args as a whole.
    pub path: String,
    /// What is wrong and what is allowed.
    pub message: String,
}

impl ArgsError {
    /// An error at `path` within the args.
    pub fn new(path: impl Into<String>, message: impl Into<String>) -> Self {
        ArgsError {
            path: path.into(),
            message: message.into(),
        }
    }
}

/// A plugin's args type (upstream's `*Args`).
pub trait PluginArgs: DeserializeOwned {
    /// Defaults that serde's field defaults cannot express (one field's default depends on
    /// another). Nothing by default.
    fn set_defaults(&mut self) {}
    /// Checks the decoded, defaulted args; an error names the field within the args.
    fn validate(&self) -> Result<(), ArgsError> {
        Ok(())
    }
}

/// A plugin built from its validated args.
pub trait FromArgs: Sized {
    /// The plugin's args type.
    type Args: PluginArgs;

    /// Builds the plugin from args already decoded, defaulted and validated; an error here
    /// is for what only building finds (a selector that does not compile, say).
    fn from_args(args: Self::Args) -> Result<Self, ArgsError>;

    /// The whole contract from the policy's JSON: decode, default, validate, build.
    fn from_json(args: &serde_json::Value) -> Result<Self, ArgsError> {
        Self::from_args(args_from_json(args)?)
    }
}

/// Decodes, defaults and validates a plugin's args given as the policy's JSON.
pub fn args_from_json<A: PluginArgs>(args: &serde_json::Value) -> Result<A, ArgsError> {
    let mut args: A = decode_args(args)?;
    args.set_defaults();
    args.validate()?;
    Ok(args)
}

/// Decodes a plugin's args from the policy, with the path of any field that fails.
/// Missing args decode as `{}`, so a plugin whose args all have defaults needs none.
pub fn decode_args<T: DeserializeOwned>(args: &serde_json::Value) -> Result<T, ArgsError> {
    let mut value = match args {
        serde_json::Value::Null => serde_json::Value::Object(Default::default()),
        serde_json::Value::Object(_) => args.clone(),
        // serde would read a list into the args' fields by position.
        other => {
            return Err(ArgsError::new(
                "",
                format!(
                    "expected a mapping of the plugin's arguments (name: value), found {}",
                    crate::policy::json_type(other)
                ),
            ))
        }
    };
    // Upstream's args types carry TypeMeta (`apiVersion`, `kind: LowNodeUtilizationArgs`).
    if let Some(map) = value.as_object_mut() {
        map.remove("apiVersion");
        map.remove("kind");
    }
    serde_path_to_error::deserialize(value).map_err(|e| {
        let path = e.path().to_string();
        let path = if path == "." { String::new() } else { path };
        ArgsError::new(path, e.into_inner().to_string())
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[derive(Debug, serde::Deserialize)]
    #[serde(rename_all = "camelCase", deny_unknown_fields)]
    struct Args {
        #[serde(default)]
        exclude_owner_kinds: Vec<String>,
        #[serde(default)]
        limit: u32,
    }

    impl PluginArgs for Args {
        fn set_defaults(&mut self) {
            if self.exclude_owner_kinds.is_empty() {
                self.limit = self.limit.max(1);
            }
        }
        fn validate(&self) -> Result<(), ArgsError> {
            if self.limit > 10 {
                return Err(ArgsError::new("limit", "at most 10"));
            }
            Ok(())
        }
    }

    #[test]
    fn plugin_args_given_as_a_list_are_refused() {
        // serde reads a list into a struct's fields by position.
        let args = serde_json::json!([["ReplicaSet"], 3]);
        let e = args_from_json::<Args>(&args).unwrap_err().to_string();
        assert!(
            e.contains("expected a mapping") && e.contains("a list"),
            "{e}"
        );
        assert!(args_from_json::<Args>(&serde_json::json!(5)).is_err());
    }

    #[test]
    fn args_are_decoded_then_defaulted_then_validated() {
        // Missing args and TypeMeta decode as the defaults, then set_defaults applies.
        let a: Args = args_from_json(&serde_json::Value::Null).unwrap();
        assert_eq!(a.limit, 1);
        let a: Args =
            args_from_json(&serde_json::json!({"kind": "XArgs", "apiVersion": "v", "limit": 4}))
                .unwrap();
        assert_eq!(a.limit, 4);
        let e = args_from_json::<Args>(&serde_json::json!({"limit": 11})).unwrap_err();
        assert_eq!(
            (e.path.as_str(), e.message.as_str()),
            ("limit", "at most 10")
        );
        let e = args_from_json::<Args>(&serde_json::json!({"limits": 1})).unwrap_err();
        assert!(e.message.contains("unknown field"), "{e}");
    }
}
