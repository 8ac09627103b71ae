use super::*;
use serde_json::json;

#[test]
fn args_default_to_namespaces() {
    let a = DominantResourceFairnessArgs::new(&serde_json::Value::Null).unwrap();
    assert_eq!(a.tenant_label, None);
    let a = DominantResourceFairnessArgs::new(&json!({})).unwrap();
    assert_eq!(a.tenant_label, None);
}

#[test]
fn tenant_label_is_validated() {
    let a = DominantResourceFairnessArgs::new(&json!({"tenantLabel": "example.com/team"})).unwrap();
    assert_eq!(a.tenant_label.as_deref(), Some("example.com/team"));
    for bad in ["", "-team", "a/b/c", "/team", "team!"] {
        let e = DominantResourceFairnessArgs::new(&json!({ "tenantLabel": bad })).unwrap_err();
        assert_eq!(e.path, "tenantLabel", "{bad:?}");
    }
    let e = DominantResourceFairnessArgs::new(&json!({"tenantLabel": 5})).unwrap_err();
    assert_eq!(e.path, "tenantLabel");
    let e = DominantResourceFairnessArgs::new(&json!({"tenantLabels": "x"})).unwrap_err();
    assert!(e.message.contains("unknown field"), "{e}");
}
